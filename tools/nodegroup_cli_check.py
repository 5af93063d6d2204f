#!/usr/bin/env python3
"""Real-client check of `openstack coe nodegroup create|list|show|update|delete`.

Starts `fleetyard serve` (the embedded default: SQLite, no-auth, the fake
driver with one-second operations and a one-second status sync) and drives it
with the REAL `openstack` CLI and python-magnumclient 5.0.0 from the
`.tox/clients` virtualenv: a cluster, then a node group created with every
option (labels merged with the cluster's, node labels and taints), listed
(role filter, limit, sort), shown by name and uuid, updated with the CLI's
Python-literal node labels and taints, and deleted (also two at once, the
second queued behind the first); the default groups cannot be deleted. Every check prints `ok - ...` or `FAIL - ...`; the last line is
`nodegroup-cli-check: N passed, N failed`, and the exit status is 1 when
anything failed.

Run it through `./tox.sh cli`, or by hand:

    .tox/clients/bin/python tools/nodegroup_cli_check.py --bin target/debug/fleetyard

The harness (server start/stop, clean client environment, bookkeeping) is
tools/cli_check.py's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import (  # noqa: E402  (the shared harness)
    CheckFailed,
    Clients,
    Report,
    Result,
    Server,
    as_dict,
    expect_fields,
    expect_ok,
    expect_reported,
    names_of,
    noauth,
    run_phase,
)

WAIT_TIMEOUT = 60  # seconds, for a cluster or node group to reach a status

FAST = {
    "FLEETYARD__FAKE_DRIVER__CREATE_SECONDS": "1",
    "FLEETYARD__FAKE_DRIVER__UPDATE_SECONDS": "1",
    "FLEETYARD__FAKE_DRIVER__DELETE_SECONDS": "1",
    "FLEETYARD__CONDUCTOR__SYNC_INTERVAL": "1",
}


def nodegroup_checks(rep: Report, cli: Clients, srv: Server) -> None:
    auth = noauth(srv)

    def coe(*args: str) -> Result:
        return cli.coe(auth, *args)

    state: dict[str, str] = {}

    def wait_for(kind: list[str], status: str) -> dict:
        deadline = time.monotonic() + WAIT_TIMEOUT
        body: dict = {}
        while time.monotonic() < deadline:
            body = expect_ok(coe(*kind, "-f", "json")).json()
            if body.get("status") == status:
                return body
            if str(body.get("status", "")).endswith("_FAILED"):
                break
            time.sleep(0.5)
        raise CheckFailed("%s did not reach %s within %ds (last: %s, %s)"
                          % (" ".join(kind), status, WAIT_TIMEOUT, body.get("status"),
                             body.get("status_reason")))

    def cluster() -> None:
        expect_ok(coe("cluster", "template", "create", "k8s-tpl", "--coe", "kubernetes",
                      "--image", "fedora-coreos-40", "--external-network", "public"))
        expect_ok(coe("cluster", "create", "k8s", "--cluster-template", "k8s-tpl",
                      "--labels", "zone=a,role=general", "--flavor", "m1.small"))
        wait_for(["cluster", "show", "k8s"], "CREATE_COMPLETE")

    rep.check("a cluster reaches CREATE_COMPLETE", cluster)

    def create() -> None:
        r = expect_ok(coe("nodegroup", "create", "k8s", "ng-db", "--node-count", "2",
                          "--min-nodes", "1", "--max-nodes", "4", "--flavor", "m1.large",
                          "--labels", "role=db", "--merge-labels",
                          "--node-labels", "tier=db", "--node-taints", "dedicated=db:NoSchedule"))
        words = r.out.split()
        if "accepted" not in r.out or len(words) < 5:
            raise CheckFailed("expected 'Request to create nodegroup <uuid> accepted'\n" + r.describe())
        state["uuid"] = words[4]
        body = wait_for(["nodegroup", "show", "k8s", "ng-db"], "CREATE_COMPLETE")
        want = {
            "uuid": state["uuid"], "node_count": 2, "min_node_count": 1, "max_node_count": 4,
            "flavor_id": "m1.large", "role": "worker", "is_default": False,
            "node_labels": {"tier": "db"},
        }
        bad = {k: body.get(k) for k, v in want.items() if body.get(k) != v}
        if bad:
            raise CheckFailed("unexpected fields %r (wanted %r)" % (bad, {k: want[k] for k in bad}))
        labels = as_dict(body.get("labels"))
        if labels.get("role") != "db" or labels.get("zone") != "a":
            raise CheckFailed("labels were not merged with the cluster's: %r" % (labels,))
        taints = body.get("node_taints")
        if taints != [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]:
            raise CheckFailed("unexpected node_taints %r" % (taints,))
        if len(body.get("node_addresses") or []) != 2:
            raise CheckFailed("expected two node addresses: %r" % (body,))

    rep.check("nodegroup create with every option prints the uuid; the group reaches CREATE_COMPLETE "
              "with merged labels, node labels and taints", create)

    def listed() -> None:
        names = names_of(expect_ok(coe("nodegroup", "list", "k8s", "-f", "json")))
        if names != ["default-master", "default-worker", "ng-db"]:
            raise CheckFailed("unexpected node groups %r" % (names,))
        names = names_of(expect_ok(coe("nodegroup", "list", "k8s", "--role", "master", "-f", "json")))
        if names != ["default-master"]:
            raise CheckFailed("--role master listed %r" % (names,))
        names = names_of(expect_ok(coe("nodegroup", "list", "k8s", "--limit", "2", "--sort-key", "name",
                                       "--sort-dir", "desc", "-f", "json")))
        if names != ["ng-db", "default-worker"]:
            raise CheckFailed("--limit 2 --sort-key name --sort-dir desc listed %r" % (names,))

    rep.check("nodegroup list, with --role and with --limit/--sort-key/--sort-dir", listed)

    def show_by_uuid() -> None:
        if "uuid" not in state:
            raise CheckFailed("no node group uuid from the create check")
        r = expect_ok(coe("nodegroup", "show", "k8s", state["uuid"], "-f", "json"))
        expect_fields(r, {"name": "ng-db", "uuid": state["uuid"]})

    rep.check("nodegroup show by uuid", show_by_uuid)

    def update() -> None:
        r = expect_ok(coe("nodegroup", "update", "k8s", "ng-db", "--min-nodes", "2", "--max-nodes", "6",
                          "--node-labels", "tier=web", "--node-taints", "k=:NoExecute"))
        if "accepted" not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        body = wait_for(["nodegroup", "show", "k8s", "ng-db"], "UPDATE_COMPLETE")
        want = {"min_node_count": 2, "max_node_count": 6, "node_labels": {"tier": "web"},
                "node_taints": [{"key": "k", "value": "", "effect": "NoExecute"}]}
        bad = {k: body.get(k) for k, v in want.items() if body.get(k) != v}
        if bad:
            raise CheckFailed("unexpected fields %r (wanted %r)" % (bad, {k: want[k] for k in bad}))
        wait_for(["cluster", "show", "k8s"], "UPDATE_COMPLETE")

    rep.check("nodegroup update --min-nodes --max-nodes --node-labels --node-taints (Python-literal "
              "strings on the wire) reaches UPDATE_COMPLETE", update)

    def refused() -> None:
        r = coe("nodegroup", "create", "k8s", "ng-db")
        expect_reported(r, 409)
        if "already exists" not in r.out + r.err:
            raise CheckFailed("expected the duplicate-name sentence\n" + r.describe())
        expect_reported(coe("nodegroup", "delete", "k8s", "default-worker"), 400)
        expect_reported(coe("nodegroup", "show", "k8s", "nope"), 404)

    rep.check("a duplicate name is a 409, deleting a default group a 400, an unknown group a 404", refused)

    def delete() -> None:
        r = expect_ok(coe("nodegroup", "delete", "k8s", "ng-db"))
        if "accepted" not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        deadline = time.monotonic() + WAIT_TIMEOUT
        while time.monotonic() < deadline:
            names = names_of(expect_ok(coe("nodegroup", "list", "k8s", "-f", "json")))
            if names == ["default-master", "default-worker"]:
                return
            time.sleep(0.5)
        raise CheckFailed("ng-db is still listed %ds after the delete" % WAIT_TIMEOUT)

    rep.check("nodegroup delete: the group goes away", delete)

    def delete_several() -> None:
        for name in ("ng-a", "ng-b"):
            expect_ok(coe("nodegroup", "create", "k8s", name, "--node-count", "1"))
            wait_for(["nodegroup", "show", "k8s", name], "CREATE_COMPLETE")
            wait_for(["cluster", "show", "k8s"], "UPDATE_COMPLETE")
        # The second delete reaches the API while the first keeps the cluster
        # UPDATE_IN_PROGRESS: it is queued behind it, not refused.
        r = expect_ok(coe("nodegroup", "delete", "k8s", "ng-a", "ng-b"))
        for name in ("ng-a", "ng-b"):
            if "Request to delete nodegroup %s has been accepted" % name not in r.out:
                raise CheckFailed("the delete of %s was not accepted\n%s" % (name, r.describe()))
        if "HTTP" in r.out + r.err:
            raise CheckFailed("an error was reported\n" + r.describe())
        deadline = time.monotonic() + WAIT_TIMEOUT
        names: list[str] = []
        while time.monotonic() < deadline:
            names = names_of(expect_ok(coe("nodegroup", "list", "k8s", "-f", "json")))
            if names == ["default-master", "default-worker"]:
                wait_for(["cluster", "show", "k8s"], "UPDATE_COMPLETE")
                return
            time.sleep(0.5)
        raise CheckFailed("still listed %ds after the delete: %r" % (WAIT_TIMEOUT, names))

    rep.check("nodegroup delete k8s ng-a ng-b: both deletes are accepted (the second queued behind the "
              "first) and both groups go away", delete_several)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print("nodegroup-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("nodegroup-cli-check: 0 passed, 1 failed")
        return 1
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "openstack").exists():
        print("nodegroup-cli-check: no `openstack` beside %s; run me with the clients venv's python "
              "(./tox.sh cli builds it)" % sys.executable, file=sys.stderr)
        print("nodegroup-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-nodegroup-cli-check-"))
    rep = Report()
    try:
        clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
        clients_cwd.mkdir()
        cli = Clients(venv_bin, clients_cwd)
        run_phase(rep, binary, root, "nodegroups", FAST, lambda srv: nodegroup_checks(rep, cli, srv))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("nodegroup-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
