#!/usr/bin/env python3
"""Real-client check of `openstack coe machine list | show | create | delete | set | replace |
reboot` (clients/osc-plugin).

Installs python-openstackclient, python-magnumclient 5.0.0 and the plugin into
a virtualenv (the federation check's, tools/federation_cli_check.py), starts
`fleetyard serve` (no-auth, SQLite), creates a cluster with magnumclient's own
commands, writes the cluster's machines into the served database (known rows,
so that every column can be checked), and runs the machine commands through
the real `openstack` executable: the table and json output, every filter,
paging and sorting, names and uuids, the API's 400 and 404 sentences, and the
406 below microversion 1.19; then a machine's delete and create (--wait) on a
cluster of its own, and a machine's change in place, its replacement and its reboot with
--wait (microversion 1.20); then a node group's rolling replacement (its flavor, image and
max_batch_size=2 patched through magnumclient's client, as `openstack coe nodegroup update` of
5.0.0 has no option for them) and its machines after it. Every check prints `ok - ...` or `FAIL - ...`;
the last line is `machine-cli-check: N passed, N failed`, and the exit status
is 1 when anything failed.

    python3 tools/machine_cli_check.py --bin target/debug/fleetyard

--venv and --no-install as in the federation check; the harness is
tools/cli_check.py's. Needs only Python's standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import CheckFailed, Clients, Report, Result, Server, expect_ok, noauth  # noqa: E402
from federation_cli_check import (  # noqa: E402  (the plugin's virtualenv and helpers)
    DEFAULT_VENV,
    FAST,
    Coe,
    FedReport,
    copy_plugin,
    expect_equal,
    expect_fail_with,
    fed_body,
    prepare_venv,
    run_phase,
)

LIST_COLUMNS = ["uuid", "name", "nodegroup", "role", "phase", "kubelet_version", "address"]

# The machines written for the cluster: (uuid, name, node group, phase, provider id, spec, status).
MACHINES = [
    ("6a1e0c3b-5d2f-4e8a-9b7c-000000000001", "default-master-1", "default-master", "Running",
     "openstack:///s-m1",
     {"versions": {"kubelet": "v1.30.1", "controlPlane": "v1.30.1"},
      "containerRuntime": {"name": "containerd", "version": "1.7.22"}, "osImage": "fedora-coreos-40",
      "flavor": "m1.medium", "providerConfig": {"not": "shown"},
      "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
     {"nodeRef": "k8s-m1", "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}],
      "versions": {"kubelet": "v1.30.1", "controlPlane": "v1.30.1"}, "lastChange": "InPlace",
      "lastUpdated": "2026-11-27T10:00:00Z"}),
    ("6a1e0c3b-5d2f-4e8a-9b7c-000000000002", "default-worker-1", "default-worker", "Running",
     "openstack:///s-w1",
     {"versions": {"kubelet": "v1.30.1"}, "labels": {"tier": "general"}},
     {"addresses": [{"type": "Hostname", "address": "k8s-w1"},
                    {"type": "InternalIP", "address": "10.0.0.21"}],
      "versions": {"kubelet": "v1.30.1"}}),
    ("6a1e0c3b-5d2f-4e8a-9b7c-000000000003", "default-worker-2", "default-worker", "Failed", None,
     {"versions": {"kubelet": "v1.30.1"}},
     {"errorReason": "CreateError", "errorMessage": "no capacity"}),
]
M1, W1, W2 = (m[0] for m in MACHINES)

# magnumclient's own client (the SessionClient `openstack coe` uses, over a keystoneauth no-auth
# session, at `container-infra latest`) sending a node group's JSON patch.
UPDATE_SNIPPET = r"""
import json, sys
from keystoneauth1 import noauth, session
from magnumclient import client
endpoint, cluster, group, patch = sys.argv[1:5]
mc = client.Client("1", session=session.Session(auth=noauth.NoAuth(endpoint=endpoint)),
                   endpoint_override=endpoint, api_version="latest")
try:
    ng = mc.nodegroups.update(cluster, group, json.loads(patch))
except Exception as e:
    print(e, file=sys.stderr)
    sys.exit(1)
print(json.dumps(ng.to_dict()))
"""

# openstacksdk's own resize (`Cluster.resize`, POST …/actions/resize with node_count and
# nodes_to_remove). openstacksdk sends no microversion of its own for this service, so the
# adapter's default one is set, as a clouds.yaml `container_infra_default_microversion` would.
# openstacksdk 4.22 then reads the 202's uuid as `response['uuid']` of a requests.Response,
# which raises TypeError after the request was answered: that line is printed, not hidden.
SDK_RESIZE_SNIPPET = r"""
import json, sys
import openstack
endpoint, cluster, node_count, remove = sys.argv[1:5]
conn = openstack.connect(auth_type="none", auth={"endpoint": endpoint})
cim = conn.container_infrastructure_management
cim.default_microversion = "1.19"
c = cim.find_cluster(cluster, ignore_missing=False)
try:
    print(json.dumps({"uuid": c.resize(cim, node_count=int(node_count),
                                       nodes_to_remove=json.loads(remove))}))
except openstack.exceptions.HttpException as e:
    # openstacksdk's message does not read Magnum's error body: the body is printed with it.
    print(e, e.response.text if e.response is not None else "", file=sys.stderr)
    sys.exit(1)
except TypeError as e:
    print(json.dumps({"answer_unread": str(e)}))
"""


def table_rows(r: Result) -> dict[str, str]:
    """The `Field | Value` rows of a show table."""
    rows = {}
    for line in r.out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and line.startswith("|"):
            rows[cells[0]] = cells[1]
    return rows


def names(r: Result) -> list[str]:
    body = r.json()
    if not isinstance(body, list):
        raise CheckFailed("expected a JSON list\n" + r.describe())
    return [row.get("name") for row in body]


def write_machines(db: Path, cluster: str, project: str, groups: dict[str, str]) -> None:
    """The cluster's machines replaced by MACHINES (the served SQLite database, in WAL mode)."""
    con = sqlite3.connect(str(db), timeout=30)
    try:
        with con:
            con.execute("DELETE FROM machine WHERE cluster_id = ?", (cluster,))
            for uuid, name, group, phase, provider, spec, status in MACHINES:
                role = "master" if group == "default-master" else "worker"
                con.execute(
                    "INSERT INTO machine (uuid, name, role, project_id, cluster_id, nodegroup_id, "
                    "spec, phase, provider_id, status, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
                    (uuid, name, role, project, cluster, groups[group], json.dumps(spec), phase,
                     provider, json.dumps(status)))
    finally:
        con.close()


def checks(rep: Report, cli: Clients, srv: Server) -> None:
    coe = Coe(cli, noauth(srv))
    st: dict[str, Any] = {}

    def need(*keys: str) -> None:
        missing = [k for k in keys if not st.get(k)]
        if missing:
            raise CheckFailed("skipped: an earlier check did not give %s" % ", ".join(missing))

    def setup() -> None:
        cluster = coe.template_and_clusters("machine-tpl", ["k8s"])["k8s"]
        shown = fed_body(expect_ok(coe("cluster", "show", "k8s", "-f", "json")))
        groups = {}
        for group in ("default-master", "default-worker"):
            ng = fed_body(expect_ok(coe("nodegroup", "show", "k8s", group, "-f", "json")))
            groups[group] = ng["uuid"]
        write_machines(srv.workdir / "fleetyard.sqlite", cluster, shown["project_id"], groups)
        st["cluster"], st["groups"] = cluster, groups

    rep.check("set-up: coe cluster template create, coe cluster create (CREATE_COMPLETE), "
              "then its machines written", setup)

    def registered() -> None:
        r = expect_ok(cli.run([cli.openstack, "command", "list", "--group", "container_infra", "-f", "json"]))
        found = {c for group in r.json() for c in (group.get("Commands") or [])}
        wanted = {"coe machine %s" % c
                  for c in ("list", "show", "create", "delete", "set", "replace", "reboot")}
        if not wanted <= found:
            raise CheckFailed("coe machine list|show|create|delete|set|replace|reboot missing "
                              "from the container_infra group\n" + r.describe())

    rep.check("`openstack command list --group container_infra` has coe machine list, show, "
              "create, delete, set, replace and reboot", registered)

    def listed() -> None:
        need("cluster")
        r = expect_ok(coe("machine", "list", "k8s", "-f", "json"))
        expect_equal(r, "rows", r.json(), [
            {"uuid": M1, "name": "default-master-1", "nodegroup": "default-master", "role": "master",
             "phase": "Running", "kubelet_version": "v1.30.1", "address": "10.0.0.11"},
            {"uuid": W1, "name": "default-worker-1", "nodegroup": "default-worker", "role": "worker",
             "phase": "Running", "kubelet_version": "v1.30.1", "address": "10.0.0.21"},
            {"uuid": W2, "name": "default-worker-2", "nodegroup": "default-worker", "role": "worker",
             "phase": "Failed", "kubelet_version": "v1.30.1", "address": ""},
        ])
        r = expect_ok(coe("machine", "list", st["cluster"]))
        header = [line for line in r.out.splitlines() if "uuid" in line]
        cells = [c.strip() for c in header[0].strip("|").split("|")] if header else []
        expect_equal(r, "table header", cells, LIST_COLUMNS)

    rep.check("machine list k8s: every machine, columns uuid, name, nodegroup (by name), role, "
              "phase, kubelet_version, address (json and table, cluster by name and uuid)", listed)

    def filtered() -> None:
        need("cluster")
        for args, want in [
            (["--nodegroup", "default-worker"], ["default-worker-1", "default-worker-2"]),
            (["--nodegroup", st["groups"]["default-master"]], ["default-master-1"]),
            (["--role", "master"], ["default-master-1"]),
            (["--phase", "Failed"], ["default-worker-2"]),
            (["--role", "worker", "--phase", "Running"], ["default-worker-1"]),
            (["--phase", "Deleting"], []),
        ]:
            r = expect_ok(coe("machine", "list", "k8s", *args, "-f", "json"))
            expect_equal(r, " ".join(args), names(r), want)

    rep.check("machine list --nodegroup (name or uuid) | --role | --phase filter", filtered)

    def paged() -> None:
        need("cluster")
        r = expect_ok(coe("machine", "list", "k8s", "--limit", "2", "-f", "json"))
        expect_equal(r, "first page", names(r), ["default-master-1", "default-worker-1"])
        r = expect_ok(coe("machine", "list", "k8s", "--marker", M1, "-f", "json"))
        expect_equal(r, "after the marker", names(r), ["default-worker-1", "default-worker-2"])
        r = expect_ok(coe("machine", "list", "k8s", "--sort-key", "name", "--sort-dir", "desc",
                          "-f", "json"))
        expect_equal(r, "by name, descending", names(r),
                     ["default-worker-2", "default-worker-1", "default-master-1"])

    rep.check("machine list --limit | --marker | --sort-key --sort-dir", paged)

    def shown() -> None:
        need("cluster")
        r = expect_ok(coe("machine", "show", "k8s", "default-master-1", "-f", "json"))
        body = fed_body(r)
        want = {"uuid": M1, "name": "default-master-1", "cluster_id": st["cluster"],
                "nodegroup_id": st["groups"]["default-master"], "role": "master", "phase": "Running",
                "provider_id": "openstack:///s-m1", "node_ref": "k8s-m1",
                "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}],
                "kubelet_version": "v1.30.1", "control_plane_version": "v1.30.1",
                "running_kubelet_version": "v1.30.1", "running_control_plane_version": "v1.30.1",
                "container_runtime": "containerd 1.7.22", "os_image": "fedora-coreos-40",
                "flavor": "m1.medium",
                "taints": [{"key": "node-role.kubernetes.io/control-plane", "value": None,
                            "effect": "NoSchedule"}],
                "labels": {}, "error_reason": None, "error_message": None, "last_change": "InPlace",
                "last_updated": "2026-11-27T10:00:00+00:00", "updated_at": None}
        bad = {k: body.get(k) for k, v in want.items() if body.get(k) != v}
        if bad or "providerConfig" in r.out or "provider_config" in r.out:
            raise CheckFailed("rows differ: %r (wanted %r)\n%s" % (bad, want, r.describe()))
        r = expect_ok(coe("machine", "show", st["cluster"], W2))
        rows = table_rows(r)
        for k, v in {"name": "default-worker-2", "phase": "Failed", "error_reason": "CreateError",
                     "error_message": "no capacity"}.items():
            expect_equal(r, k, rows.get(k), v)

    rep.check("machine show by name (json: spec and status flattened, no providerConfig) and by "
              "uuid (table)", shown)

    def refused() -> None:
        need("cluster")
        expect_fail_with(coe("machine", "show", "k8s", "nope"), "Machine nope could not be found.")
        expect_fail_with(coe("machine", "list", "nope"), "Cluster nope could not be found.")
        expect_fail_with(coe("machine", "list", "k8s", "--nodegroup", "nope"),
                         "Nodegroup nope could not be found.")
        expect_fail_with(coe("machine", "list", "k8s", "--sort-key", "spec"),
                         "The sort_key value \"spec\" is an invalid field for sorting")
        expect_fail_with(coe("machine", "list", "k8s", "--marker", "m-1"),
                         "Expected a uuid but received m-1.")

    rep.check("machine show|list of unknown names and bad parameters exit non-zero with the API's "
              "sentences", refused)

    def microversion() -> None:
        need("cluster")
        r = cli.run([cli.openstack, "--os-container-infra-api-version", "1.18", *noauth(srv),
                     "coe", "machine", "list", "k8s"])
        expect_fail_with(r, "Machines need microversion 1.19 or later; this request was sent at "
                            "container-infra 1.18")
        r = expect_ok(cli.run([cli.openstack, "--os-container-infra-api-version", "1.19", *noauth(srv),
                               "coe", "machine", "list", "k8s", "-f", "json"]))
        expect_equal(r, "at 1.19", len(r.json()), 3)

    rep.check("--os-container-infra-api-version 1.18: the 406 names 1.19; 1.19 lists", microversion)

    def deleted() -> None:
        need("cluster")
        expect_ok(coe("cluster", "create", "del", "--cluster-template", "machine-tpl",
                      "--node-count", "2", "--master-count", "1"))
        deadline = time.monotonic() + 60
        while True:
            body = fed_body(expect_ok(coe("cluster", "show", "del", "-f", "json")))
            if body.get("status") == "CREATE_COMPLETE":
                break
            if time.monotonic() > deadline:
                raise CheckFailed("cluster del is %s (expected CREATE_COMPLETE)" % body.get("status"))
            time.sleep(0.5)
        r = expect_ok(coe("machine", "delete", "del", "default-worker-2", "--wait"))
        if "Request to delete machine default-worker-2 has been accepted." not in r.out:
            raise CheckFailed("no acceptance line\n" + r.describe())
        r = expect_ok(coe("machine", "list", "del", "-f", "json"))
        expect_equal(r, "machines left", names(r), ["default-master-1", "default-worker-1"])
        body = fed_body(expect_ok(coe("nodegroup", "show", "del", "default-worker", "-f", "json")))
        if body.get("node_count") != 1:
            raise CheckFailed("default-worker node_count %r, expected 1" % body.get("node_count"))
        expect_fail_with(coe("machine", "delete", "del", "nope"), "Machine nope could not be found.")

    rep.check("machine delete del default-worker-2 --wait: that machine goes, the group has 1 "
              "node, an unknown machine exits non-zero with the API's sentence", deleted)

    def sdk_resized() -> None:
        need("cluster")
        expect_ok(coe("cluster", "create", "sdk", "--cluster-template", "machine-tpl",
                      "--node-count", "3", "--master-count", "1"))
        deadline = time.monotonic() + 60
        while fed_body(expect_ok(coe("cluster", "show", "sdk", "-f", "json"))).get("status") \
                != "CREATE_COMPLETE":
            if time.monotonic() > deadline:
                raise CheckFailed("cluster sdk did not reach CREATE_COMPLETE")
            time.sleep(0.5)
        python = str(Path(cli.openstack).parent / "python")

        def resize(count: int, remove: list[str]) -> Result:
            return cli.run([python, "-c", SDK_RESIZE_SNIPPET, srv.endpoint, "sdk", str(count),
                            json.dumps(remove)])

        expect_fail_with(resize(2, ["nope"]),
                         "nodes_to_remove names nope, which is not a machine of node group "
                         "default-worker")
        r = expect_ok(coe("machine", "list", "sdk", "-f", "json"))
        expect_equal(r, "nothing removed on a refusal", names(r),
                     ["default-master-1", "default-worker-1", "default-worker-2",
                      "default-worker-3"])
        sent = expect_ok(resize(2, ["default-worker-2"]))
        answer = sent.json()
        if not (answer.get("uuid") or "not subscriptable" in answer.get("answer_unread", "")):
            raise CheckFailed("unexpected answer of Cluster.resize\n" + sent.describe())
        deadline = time.monotonic() + 60
        while True:
            r = expect_ok(coe("machine", "list", "sdk", "-f", "json"))
            if names(r) == ["default-master-1", "default-worker-1", "default-worker-3"]:
                break
            if time.monotonic() > deadline:
                raise CheckFailed("default-worker-2 alone should have gone\n" + r.describe())
            time.sleep(0.5)
        body = fed_body(expect_ok(coe("nodegroup", "show", "sdk", "default-worker", "-f", "json")))
        if body.get("node_count") != 2:
            raise CheckFailed("default-worker node_count %r, expected 2" % body.get("node_count"))

    rep.check("openstacksdk Cluster.resize(node_count=2, nodes_to_remove=[default-worker-2]): "
              "exactly that machine goes, the group has 2 nodes; an unknown name is refused "
              "with the API's sentence and removes nothing", sdk_resized)

    def created() -> None:
        need("cluster")
        r = expect_ok(coe("machine", "create", "del", "--nodegroup", "default-worker", "--name",
                          "edge-1", "--kubelet-version", "v1.30.1", "--container-runtime",
                          "containerd=1.7.22", "--wait", "-f", "json"))
        body = fed_body(r)
        for k, v in {"name": "edge-1", "phase": "Running", "kubelet_version": "v1.30.1",
                     "container_runtime": "containerd 1.7.22"}.items():
            expect_equal(r, k, body.get(k), v)
        r = expect_ok(coe("machine", "list", "del", "-f", "json"))
        expect_equal(r, "machines", names(r), ["default-master-1", "default-worker-1", "edge-1"])
        body = fed_body(expect_ok(coe("nodegroup", "show", "del", "default-worker", "-f", "json")))
        if body.get("node_count") != 2:
            raise CheckFailed("default-worker node_count %r, expected 2" % body.get("node_count"))
        r = expect_ok(coe("machine", "create", "del", "--nodegroup", "default-worker", "-f", "json"))
        expect_equal(r, "a generated name", fed_body(r).get("name"), "default-worker-2")
        expect_ok(coe("machine", "show", "del", "default-worker-2"))

    rep.check("machine create del --nodegroup default-worker --name edge-1 --kubelet-version "
              "--container-runtime --wait: Running, the group has 2 nodes; without --name the "
              "group's next name", created)

    def create_refused() -> None:
        need("cluster")
        expect_ok(coe("machine", "show", "k8s", "default-worker-1"))
        expect_fail_with(coe("machine", "create", "k8s", "--nodegroup", "default-worker",
                             "--name", "default-worker-1"),
                         "A machine with name default-worker-1 already exists in the cluster k8s.")
        expect_fail_with(coe("machine", "create", "k8s", "--nodegroup", "default-worker",
                             "--kubelet-version", "v1.99.0"),
                         "Kubelet version v1.99.0 is newer than the control plane version")
        expect_fail_with(coe("machine", "create", "k8s", "--nodegroup", "nope"),
                         "Nodegroup nope could not be found.")
        r = cli.run([cli.openstack, "--os-container-infra-api-version", "1.19", *noauth(srv),
                     "coe", "machine", "create", "k8s", "--nodegroup", "default-worker"])
        expect_fail_with(r, "A machine's create needs microversion 1.20 or later; this request "
                            "was sent at container-infra 1.19")
        r = expect_ok(coe("machine", "list", "k8s", "-f", "json"))
        expect_equal(r, "nothing changed", len(r.json()), 3)

    rep.check("machine create refusals (a name taken, a kubelet newer than the control plane, an "
              "unknown group, microversion 1.19) exit non-zero with the API's sentences and "
              "change nothing", create_refused)


    def changed() -> None:
        expect_ok(coe("cluster", "create", "ops", "--cluster-template", "machine-tpl",
                      "--node-count", "1", "--master-count", "1"))
        deadline = time.monotonic() + 60
        while True:
            body = fed_body(expect_ok(coe("cluster", "show", "ops", "-f", "json")))
            if body.get("status") == "CREATE_COMPLETE" and body.get("coe_version"):
                break
            if time.monotonic() > deadline:
                raise CheckFailed("cluster ops is %s (expected CREATE_COMPLETE)" % body.get("status"))
            time.sleep(0.5)
        major, minor, patch = body["coe_version"].lstrip("v").split(".")[:3]
        patched = "v%s.%s.%d" % (major, minor, int(patch) + 1)
        newer = "v%s.%d.0" % (major, int(minor) + 1)
        w = "default-worker-1"
        r = expect_ok(coe("machine", "set", "ops", w, "--kubelet-version", patched, "--wait",
                          "-f", "json"))
        shown = fed_body(r)
        for k, v in {"phase": "Running", "last_change": "InPlace", "kubelet_version": patched,
                     "running_kubelet_version": patched}.items():
            expect_equal(r, k, shown.get(k), v)
        server = shown.get("provider_id")
        r = expect_ok(coe("machine", "replace", "ops", w, "--wait", "-f", "json"))
        shown = fed_body(r)
        expect_equal(r, "last_change", shown.get("last_change"), "Replace")
        expect_equal(r, "new server", shown.get("provider_id"), "%s/2" % server)
        expect_equal(r, "same name", shown.get("name"), w)
        r = expect_ok(coe("machine", "reboot", "ops", w, "--wait", "-f", "json"))
        shown = fed_body(r)
        expect_equal(r, "phase", shown.get("phase"), "Running")
        expect_equal(r, "same server", shown.get("provider_id"), "%s/2" % server)
        expect_fail_with(coe("machine", "set", "ops", w, "--kubelet-version", newer),
                         "Kubelet version %s is newer than the control plane version" % newer)
        expect_fail_with(coe("machine", "reboot", "ops", "nope"), "Machine nope could not be found.")
        r = cli.run([cli.openstack, "--os-container-infra-api-version", "1.19", *noauth(srv),
                     "coe", "machine", "reboot", "ops", w])
        expect_fail_with(r, "Changing, replacing or rebooting a machine needs microversion 1.20")

    rep.check("machine set --kubelet-version (a patch release: in place), replace and reboot "
              "with --wait; a kubelet newer than the control plane, an unknown machine and 1.19 "
              "exit non-zero with the API's sentences", changed)

    def rolled() -> None:
        expect_ok(coe("cluster", "create", "roll", "--cluster-template", "machine-tpl",
                      "--node-count", "3", "--master-count", "1"))
        wait_group("roll", "default-worker", "CREATE_COMPLETE")

        def workers() -> dict[str, dict[str, Any]]:
            r = expect_ok(coe("machine", "list", "roll", "--nodegroup", "default-worker",
                              "-f", "json"))
            return {m["name"]: fed_body(expect_ok(coe("machine", "show", "roll", m["name"],
                                                      "-f", "json")))
                    for m in r.json()}

        before = workers()
        if len(before) != 3:
            raise CheckFailed("3 workers expected, got %r" % sorted(before))
        # magnumclient 5.0.0's `openstack coe nodegroup update` only takes --min-nodes,
        # --max-nodes, --node-labels and --node-taints: the patch goes through its own client
        # (the SessionClient the CLI uses, at `container-infra latest`).
        r = update_group("roll", "default-worker", [
            {"op": "replace", "path": "/flavor_id", "value": "m1.xlarge"},
            {"op": "replace", "path": "/image_id", "value": "fedora-coreos-41"},
            {"op": "replace", "path": "/max_batch_size", "value": "2"}])
        expect_equal(r, "the answer", fed_body(r).get("status"), "UPDATE_IN_PROGRESS")
        body = wait_group("roll", "default-worker", "UPDATE_COMPLETE")
        expect_equal(r, "group flavor", body.get("flavor_id"), "m1.xlarge")
        expect_equal(r, "group image", body.get("image_id"), "fedora-coreos-41")
        expect_equal(r, "node_count", body.get("node_count"), 3)
        after = workers()
        expect_equal(r, "the same machines", sorted(after), sorted(before))
        for name, m in after.items():
            old = before[name].get("provider_id")
            for k, v in {"flavor": "m1.xlarge", "os_image": "fedora-coreos-41", "phase": "Running",
                         # One replacement: the simulator's second server of that machine.
                         "provider_id": "%s/2" % old}.items():
                expect_equal(r, "%s %s" % (name, k), m.get(k), v)
            if old is None or m.get("provider_id") == old:
                raise CheckFailed("%s kept its server %r" % (name, old))
        expect_fail_with(update_group("roll", "default-worker", [
            {"op": "replace", "path": "/max_batch_size", "value": "0"}]),
            # magnumclient shows the error's first sentence.
            "Invalid input for field/attribute max_batch_size (HTTP 400)")

        # The plugin's `coe nodegroup set`: the same roll from the CLI, all three at once.
        r = expect_ok(coe("nodegroup", "set", "roll", "default-worker", "--flavor", "m1.large",
                          "--max-batch-size", "3", "--wait"))
        expect_equal(r, "output", r.out, "Request to update nodegroup default-worker has been "
                     "accepted.\nNodegroup default-worker is UPDATE_COMPLETE.\n")
        body = wait_group("roll", "default-worker", "UPDATE_COMPLETE")
        expect_equal(r, "group flavor", body.get("flavor_id"), "m1.large")
        again = workers()
        expect_equal(r, "the same machines", sorted(again), sorted(before))
        for name, m in again.items():
            for k, v in {"flavor": "m1.large", "os_image": "fedora-coreos-41", "phase": "Running",
                         "provider_id": "%s/3" % before[name].get("provider_id")}.items():
                expect_equal(r, "%s %s" % (name, k), m.get(k), v)
        expect_fail_with(coe("nodegroup", "set", "roll", "default-worker"),
                         "Nothing to change: give --flavor or --image.")
        expect_fail_with(coe("nodegroup", "set", "roll", "default-worker", "--flavor", "m1.large",
                             "--max-batch-size", "0"),
                         "Invalid input for field/attribute max_batch_size")

    def update_group(cluster: str, group: str, patch: list[dict[str, str]]) -> Result:
        python = str(Path(cli.openstack).parent / "python")
        return cli.run([python, "-c", UPDATE_SNIPPET, srv.endpoint, cluster, group,
                        json.dumps(patch)])

    def wait_group(cluster: str, group: str, status: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            body = fed_body(expect_ok(coe("nodegroup", "show", cluster, group, "-f", "json")))
            if body.get("status") == status:
                return body
            if body.get("status", "").endswith("_FAILED") or time.monotonic() > deadline:
                raise CheckFailed("node group %s/%s is %s (%s), expected %s" % (
                    cluster, group, body.get("status"), body.get("status_reason"), status))
            time.sleep(0.5)

    rep.check("magnumclient nodegroups.update(roll, default-worker, replace /flavor_id m1.xlarge, "
              "/image_id fedora-coreos-41, /max_batch_size 2): UPDATE_COMPLETE, every machine on the "
              "new flavor and image, replaced once (its second server), the count unchanged; "
              "max_batch_size=0 exits non-zero with the API's sentence; then the plugin's `coe "
              "nodegroup set roll default-worker --flavor m1.large --max-batch-size 3 --wait`: every "
              "machine replaced once more (its third server); nothing to change and 0 refused", rolled)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--venv", default=str(DEFAULT_VENV),
                    help="virtualenv for the clients (default: %(default)s)")
    ap.add_argument("--no-install", action="store_true",
                    help="use --venv as it is: no pip (it must have openstack and the plugin)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print("machine-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("machine-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-machine-cli-check-"))
    rep = FedReport()
    try:
        venv = Path(os.path.abspath(args.venv))
        if args.no_install:
            venv_bin = venv / "bin"

            def has_openstack() -> bool:
                if not (venv_bin / "openstack").exists():
                    raise CheckFailed("no %s (run without --no-install to create it)" % (venv_bin / "openstack"))
                return True

            ok = rep.check("virtualenv %s has openstack" % venv, has_openstack)
        else:
            src = copy_plugin(root)
            venv_bin = rep.check("pip install python-openstackclient python-magnumclient==5.0.0 "
                                 "./clients/osc-plugin into %s" % venv, lambda: prepare_venv(venv, src))
            ok = venv_bin is not None
        if ok:
            clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
            clients_cwd.mkdir()
            cli = Clients(venv_bin, clients_cwd)
            run_phase(rep, binary, root, "noauth", FAST, lambda srv: checks(rep, cli, srv))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("machine-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
