#!/usr/bin/env python3
"""Real-client check of `openstack coe cluster|quotas|service|stats` commands.

Starts `fleetyard serve` (the embedded default: SQLite, no-auth, the fake
driver with one-second operations and a one-second status sync) and drives it
with the REAL `openstack` CLI and python-magnumclient 5.0.0 from the
`.tox/clients` virtualenv: two cluster templates, `coe cluster create` (the
printed uuid, CREATE_COMPLETE), `list` (with `--limit 1`), `show`, `update
--node-count`, `resize`, `upgrade` to the second template, `config --dir`
(the kubeconfig's server is the cluster's api_address), `coe quotas
create|list|show|update|delete`, `coe stats list`, `coe service list` (the
conductor is up), an unknown cluster (exit 1, "(HTTP 404)") and `coe cluster
delete`. Every check prints `ok - ...` or `FAIL - ...`; the last line is
`cluster-cli-check: N passed, N failed`, and the exit status is 1 when
anything failed.

Run it through `./tox.sh cli`, or by hand:

    .tox/clients/bin/python tools/cluster_cli_check.py --bin target/debug/fleetyard

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
    expect_http_error,
    expect_ok,
    names_of,
    noauth,
    run_phase,
    successor,
)

WAIT_TIMEOUT = 60  # seconds, for a cluster to reach a status

FAST = {
    "FLEETYARD__FAKE_DRIVER__CREATE_SECONDS": "1",
    "FLEETYARD__FAKE_DRIVER__UPDATE_SECONDS": "1",
    "FLEETYARD__FAKE_DRIVER__DELETE_SECONDS": "1",
    "FLEETYARD__CONDUCTOR__SYNC_INTERVAL": "1",
}

# The no-auth identity's project (the [noauth] default): what the CLI's clusters belong to.
PROJECT = "admin"


def table_rows(r: Result) -> list[list[str]]:
    """The cells of the prettytable that `quotas` and `stats` print (they have no `-f`)."""
    rows = []
    for line in r.out.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            rows.append([cell.strip() for cell in line[1:-1].split("|")])
    if not rows:
        raise CheckFailed("no table printed\n" + r.describe())
    return rows


def table_dict(r: Result) -> dict[str, str]:
    """A `Property | Value` table (magnumclient's print_dict) as a dict."""
    rows = table_rows(r)
    if rows[0] != ["Property", "Value"]:
        raise CheckFailed("expected a Property/Value table\n" + r.describe())
    return {row[0]: row[1] for row in rows[1:] if len(row) == 2}


def table_list(r: Result) -> list[dict[str, str]]:
    """A table with a header row (magnumclient's print_list) as a list of dicts."""
    rows = table_rows(r)
    header = rows[0]
    return [dict(zip(header, row)) for row in rows[1:]]


def expect_table(r: Result, want: dict[str, str]) -> dict[str, str]:
    got = table_dict(r)
    bad = {k: got.get(k, "<missing>") for k, v in want.items() if got.get(k, "<missing>") != v}
    if bad:
        raise CheckFailed("unexpected values %r (wanted %r)\n%s"
                          % (bad, {k: want[k] for k in bad}, r.describe()))
    return got


def kubeconfig_server(path: Path) -> str:
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition(": ")
        if sep and key == "server":
            return value.strip()
    raise CheckFailed("%s has no server line:\n%s" % (path, path.read_text()))


def cluster_checks(rep: Report, cli: Clients, srv: Server, work: Path) -> None:
    auth = noauth(srv)

    def coe(*args: str) -> Result:
        return cli.coe(auth, *args)

    state: dict[str, str] = {}

    def wait_for(name: str, status: str) -> dict:
        deadline = time.monotonic() + WAIT_TIMEOUT
        body: dict = {}
        while time.monotonic() < deadline:
            body = expect_ok(coe("cluster", "show", name, "-f", "json")).json()
            if body.get("status") == status:
                return body
            if str(body.get("status", "")).endswith("_FAILED"):
                break
            time.sleep(0.5)
        raise CheckFailed("cluster %s did not reach %s within %ds (last: %s, %s)"
                          % (name, status, WAIT_TIMEOUT, body.get("status"), body.get("status_reason")))

    def wait_gone(name: str) -> None:
        deadline = time.monotonic() + WAIT_TIMEOUT
        names: list[str] = []
        while time.monotonic() < deadline:
            names = names_of(expect_ok(coe("cluster", "list", "-f", "json")))
            if name not in names:
                return
            time.sleep(0.5)
        raise CheckFailed("%s is still listed %ds after the delete (list: %r)" % (name, WAIT_TIMEOUT, names))

    def expect_values(body: dict, want: dict) -> None:
        bad = {k: body.get(k, "<missing>") for k, v in want.items() if body.get(k, "<missing>") != v}
        if bad:
            raise CheckFailed("unexpected fields %r (wanted %r) in %r" % (bad, {k: want[k] for k in bad}, body))

    # ---------------------------------------------------------------- templates

    def templates() -> None:
        for name, tag in (("k8s-tpl", "v1.30.1"), ("k8s-tpl-2", "v1.31.0")):
            r = expect_ok(coe("cluster", "template", "create", name, "--coe", "kubernetes",
                              "--image", "fedora-coreos-40", "--external-network", "public",
                              "--labels", "kube_tag=%s" % tag, "-f", "json"))
            body = expect_fields(r, {"name": name, "coe": "kubernetes", "tls_disabled": False})
            if as_dict(body.get("labels")).get("kube_tag") != tag:
                raise CheckFailed("labels lack kube_tag=%s\n%s" % (tag, r.describe()))
            if not body.get("uuid") or body.get("uuid") == "-":
                raise CheckFailed("no uuid in the output\n" + r.describe())
            state[name] = body["uuid"]

    rep.check("template create k8s-tpl and k8s-tpl-2 (-f json shows name, coe, labels, uuid)", templates)

    # ---------------------------------------------------------------- create

    def create() -> None:
        r = expect_ok(coe("cluster", "create", "k1", "--cluster-template", "k8s-tpl",
                          "--node-count", "2", "--master-count", "1"))
        words = r.out.split()
        # "Request to create cluster <uuid> accepted"
        if words[:4] != ["Request", "to", "create", "cluster"] or "accepted" not in words or len(words) < 6:
            raise CheckFailed("expected 'Request to create cluster <uuid> accepted'\n" + r.describe())
        state["uuid"] = words[4]
        body = wait_for("k1", "CREATE_COMPLETE")
        if body.get("uuid") != state["uuid"]:
            raise CheckFailed("create printed uuid %s, show has %s" % (state["uuid"], body.get("uuid")))

    rep.check("cluster create k1 --cluster-template k8s-tpl --node-count 2 --master-count 1 prints the uuid; "
              "the cluster reaches CREATE_COMPLETE", create)

    def second() -> None:
        r = expect_ok(coe("cluster", "create", "k2", "--cluster-template", "k8s-tpl", "--node-count", "1"))
        if "accepted" not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        wait_for("k2", "CREATE_COMPLETE")

    rep.check("a second cluster k2 (--node-count 1) reaches CREATE_COMPLETE", second)

    def listed() -> None:
        r = expect_ok(coe("cluster", "list", "-f", "json"))
        rows = {row.get("name"): row for row in r.json() if isinstance(row, dict)}
        if set(rows) != {"k1", "k2"}:
            raise CheckFailed("expected k1 and k2 listed, got %r\n%s" % (sorted(rows), r.describe()))
        expect_values(rows["k1"], {"uuid": state.get("uuid"), "node_count": 2, "master_count": 1,
                                   "status": "CREATE_COMPLETE"})
        r = expect_ok(coe("cluster", "list", "--limit", "1", "-f", "json"))
        if len(names_of(r)) != 1:
            raise CheckFailed("--limit 1 listed %r\n%s" % (names_of(r), r.describe()))
        for direction, want in (("asc", "k1"), ("desc", "k2")):
            r = expect_ok(coe("cluster", "list", "--limit", "1", "--sort-key", "name",
                              "--sort-dir", direction, "-f", "json"))
            if names_of(r) != [want]:
                raise CheckFailed("--limit 1 --sort-key name --sort-dir %s listed %r (wanted [%r])\n%s"
                                  % (direction, names_of(r), want, r.describe()))

    rep.check("cluster list shows k1 (uuid, node_count, master_count, status); --limit 1 with and without "
              "--sort-key/--sort-dir shows one", listed)

    def show() -> None:
        body = expect_ok(coe("cluster", "show", "k1", "-f", "json")).json()
        expect_values(body, {"name": "k1", "uuid": state.get("uuid"), "status": "CREATE_COMPLETE",
                             "node_count": 2, "master_count": 1,
                             "cluster_template_id": state.get("k8s-tpl")})
        api = body.get("api_address")
        if not isinstance(api, str) or not api.startswith(("http://", "https://")):
            raise CheckFailed("api_address is %r" % (api,))
        state["api_address"] = api
        if not isinstance(body.get("master_addresses"), list) or len(body["master_addresses"]) != 1:
            raise CheckFailed("expected one master address: %r" % (body.get("master_addresses"),))
        if not isinstance(body.get("node_addresses"), list) or len(body["node_addresses"]) != 2:
            raise CheckFailed("expected two node addresses: %r" % (body.get("node_addresses"),))
        by_uuid = expect_ok(coe("cluster", "show", state.get("uuid", "?"), "-f", "json")).json()
        expect_values(by_uuid, {"name": "k1", "api_address": api})

    rep.check("cluster show k1 (by name and by uuid): status, node_count, master_count, cluster_template_id, "
              "api_address, master_addresses, node_addresses", show)

    # ---------------------------------------------------------------- changes

    def update() -> None:
        r = expect_ok(coe("cluster", "update", "k1", "--node-count", "3"))
        if "Request to update cluster k1 has been accepted." not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        body = wait_for("k1", "UPDATE_COMPLETE")
        expect_values(body, {"node_count": 3})
        if len(body.get("node_addresses") or []) != 3:
            raise CheckFailed("expected three node addresses: %r" % (body.get("node_addresses"),))

    rep.check("cluster update k1 --node-count 3 reaches UPDATE_COMPLETE with node_count 3", update)

    def resize() -> None:
        r = expect_ok(coe("cluster", "resize", "k1", "4"))
        if "Request to resize cluster k1 has been accepted." not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        body = wait_for("k1", "UPDATE_COMPLETE")
        expect_values(body, {"node_count": 4})
        if len(body.get("node_addresses") or []) != 4:
            raise CheckFailed("expected four node addresses: %r" % (body.get("node_addresses"),))

    rep.check("cluster resize k1 4 reaches UPDATE_COMPLETE with node_count 4", resize)

    def upgrade() -> None:
        r = expect_ok(coe("cluster", "upgrade", "k1", "k8s-tpl-2"))
        if "Request to upgrade cluster k1 has been accepted." not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        body = wait_for("k1", "UPDATE_COMPLETE")
        expect_values(body, {"cluster_template_id": state.get("k8s-tpl-2"), "node_count": 4})

    rep.check("cluster upgrade k1 k8s-tpl-2 reaches UPDATE_COMPLETE with cluster_template_id k8s-tpl-2's uuid",
              upgrade)

    def config() -> None:
        d = work / "config"
        d.mkdir()
        r = expect_ok(coe("cluster", "config", "k1", "--dir", str(d)))
        kubeconfig = d / "config"
        if not kubeconfig.exists():
            raise CheckFailed("no %s written\n%s" % (kubeconfig, r.describe()))
        if "export KUBECONFIG=%s" % kubeconfig not in r.out:
            raise CheckFailed("expected 'export KUBECONFIG=%s' printed\n%s" % (kubeconfig, r.describe()))
        server = kubeconfig_server(kubeconfig)
        if server != state.get("api_address"):
            raise CheckFailed("kubeconfig server is %r, the cluster's api_address %r"
                              % (server, state.get("api_address")))

    rep.check("cluster config k1 --dir D writes D/config whose server is the cluster's api_address", config)

    # ---------------------------------------------------------------- quotas

    def quotas_create() -> None:
        for project, limit in (("p1", "5"), (PROJECT, "10")):
            r = expect_ok(coe("quotas", "create", "--project-id", project, "--resource", "Cluster",
                              "--hard-limit", limit))
            if "failed" in r.out:  # the CLI prints the error and exits 0
                raise CheckFailed("the create failed\n" + r.describe())
            expect_table(r, {"project_id": project, "resource": "Cluster", "hard_limit": limit})
        r = coe("quotas", "create", "--project-id", "p1", "--resource", "Cluster", "--hard-limit", "6")
        if r.rc != 0 or "Create quota for project_id p1 resource Cluster failed:" not in r.out \
                or "(HTTP 409)" not in r.out:
            raise CheckFailed("expected the duplicate create to print a 409 failure (exit 0)\n" + r.describe())

    rep.check("quotas create --project-id p1 --resource Cluster --hard-limit 5 prints the quota "
              "(and one for %s); a duplicate is reported as a 409" % PROJECT, quotas_create)

    def quotas_list() -> None:
        # Like Magnum: without --all-tenants only the caller's own project's quotas.
        r = expect_ok(coe("quotas", "list"))
        rows = table_list(r)
        if rows != [{"project_id": PROJECT, "resource": "Cluster", "hard_limit": "10"}]:
            raise CheckFailed("expected only %s/Cluster/10 listed\n%s" % (PROJECT, r.describe()))
        r = expect_ok(coe("quotas", "list", "--all-tenants"))
        rows = table_list(r)
        for want in ({"project_id": "p1", "resource": "Cluster", "hard_limit": "5"},
                     {"project_id": PROJECT, "resource": "Cluster", "hard_limit": "10"}):
            if want not in rows:
                raise CheckFailed("%r is not listed with --all-tenants\n%s" % (want, r.describe()))
        r = expect_ok(coe("quotas", "list", "--all-tenants", "--limit", "1"))
        if len(table_list(r)) != 1:
            raise CheckFailed("--all-tenants --limit 1 did not list one quota\n" + r.describe())

    rep.check("quotas list shows the own project's quota; --all-tenants (and --limit 1) also p1 Cluster 5",
              quotas_list)

    def quotas_show() -> None:
        r = expect_ok(coe("quotas", "show", "--project-id", "p1", "--resource", "Cluster"))
        expect_table(r, {"project_id": "p1", "resource": "Cluster", "hard_limit": "5"})

    rep.check("quotas show --project-id p1 --resource Cluster", quotas_show)

    def quotas_update() -> None:
        r = expect_ok(coe("quotas", "update", "--project-id", "p1", "--resource", "Cluster",
                          "--hard-limit", "7"))
        if "failed" in r.out:
            raise CheckFailed("the update failed\n" + r.describe())
        expect_table(r, {"project_id": "p1", "resource": "Cluster", "hard_limit": "7"})
        r = expect_ok(coe("quotas", "show", "--project-id", "p1", "--resource", "Cluster"))
        expect_table(r, {"hard_limit": "7"})

    rep.check("quotas update ... --hard-limit 7 (a plain JSON object PATCH); show then has 7", quotas_update)

    def quotas_delete() -> None:
        for project in ("p1", PROJECT):
            r = expect_ok(coe("quotas", "delete", "--project-id", project, "--resource", "Cluster"))
            want = ("Request to delete quota for project id %s and resource Cluster has been accepted."
                    % project)
            if want not in r.out:
                raise CheckFailed("no acceptance printed (the CLI prints errors and exits 0)\n" + r.describe())
        rows = table_list(expect_ok(coe("quotas", "list", "--all-tenants")))
        if rows:
            raise CheckFailed("quotas are still listed: %r" % (rows,))
        # Like Magnum: a project without a quota row is shown with the default limit.
        r = expect_ok(coe("quotas", "show", "--project-id", "p1", "--resource", "Cluster"))
        expect_table(r, {"project_id": "p1", "hard_limit": "20"})
        r = coe("quotas", "delete", "--project-id", "p1", "--resource", "Cluster")
        if r.rc != 0 or "Quota delete failed for project id p1 and resource Cluster" not in r.out \
                or "(HTTP 404)" not in r.out:
            raise CheckFailed("expected a second delete to print a 404 failure (exit 0)\n" + r.describe())

    rep.check("quotas delete: the list is empty, show falls back to the default limit 20, "
              "a second delete is reported as a 404", quotas_delete)

    # ---------------------------------------------------------------- stats, services

    def stats() -> None:
        # k1: 4 nodes + 1 master, k2: 1 node + 1 master
        r = expect_ok(coe("stats", "list", PROJECT))
        expect_table(r, {"clusters": "2", "nodes": "7"})
        r = expect_ok(coe("stats", "list", "nobody"))
        expect_table(r, {"clusters": "0", "nodes": "0"})

    rep.check("stats list %s shows clusters 2 and nodes 7 (masters included); another project 0/0" % PROJECT,
              stats)

    def services() -> None:
        r = expect_ok(coe("service", "list", "-f", "json"))
        rows = r.json()
        if not isinstance(rows, list):
            raise CheckFailed("expected a JSON list\n" + r.describe())
        conductors = [row for row in rows if isinstance(row, dict) and row.get("binary") == "magnum-conductor"]
        if len(conductors) != 1:
            raise CheckFailed("expected one magnum-conductor row\n" + r.describe())
        row = conductors[0]
        if row.get("state") != "up" or row.get("disabled") is not False or not row.get("host"):
            raise CheckFailed("unexpected conductor row %r\n%s" % (row, r.describe()))

    rep.check("service list shows one magnum-conductor row, state up, not disabled", services)

    # ---------------------------------------------------------------- errors, delete

    def missing() -> None:
        r = expect_http_error(coe("cluster", "show", "no-such-cluster"), 404)
        if r.rc != 1:
            raise CheckFailed("expected exit code 1\n" + r.describe())
        if "no-such-cluster" not in r.err:
            raise CheckFailed("the error does not name the cluster\n" + r.describe())

    rep.check("cluster show of a missing cluster exits 1 with '(HTTP 404)'", missing)

    def delete() -> None:
        r = expect_ok(coe("cluster", "delete", "k1", "k2"))
        for name in ("k1", "k2"):
            if "Request to delete cluster %s has been accepted." % name not in r.out:
                raise CheckFailed("no acceptance printed for %s\n%s" % (name, r.describe()))
        wait_gone("k1")
        wait_gone("k2")
        expect_http_error(coe("cluster", "show", "k1"), 404)
        expect_table(expect_ok(coe("stats", "list", PROJECT)), {"clusters": "0", "nodes": "0"})

    rep.check("cluster delete k1 k2: both leave the list, show is a 404, stats are 0", delete)


def recovery_checks(rep: Report, cli: Clients, binary: str, root: Path) -> None:
    """UPDATE_FAILED, then the same upgrade again: two servers, one after the other, on one
    database; the first one's infrastructure refuses upgrades, the second one's is repaired."""
    workdir = root / "recovery"
    workdir.mkdir()
    broken = Server(binary, workdir, "recovery-broken",
                    {**FAST, "FLEETYARD__FAKE_DRIVER__FAIL_OPERATIONS": "upgrade"})
    state: dict[str, str] = {}

    def shown(srv: Server, name: str) -> dict:
        return expect_ok(cli.coe(noauth(srv), "cluster", "show", name, "-f", "json")).json()

    def wait_status(srv: Server, name: str, status: str) -> dict:
        deadline = time.monotonic() + WAIT_TIMEOUT
        body: dict = {}
        while time.monotonic() < deadline:
            body = shown(srv, name)
            if body.get("status") == status:
                return body
            if not str(body.get("status", "")).endswith("_IN_PROGRESS"):
                break  # over, in another state
            time.sleep(0.5)
        raise CheckFailed("cluster %s did not reach %s within %ds (last: %s, %s)"
                          % (name, status, WAIT_TIMEOUT, body.get("status"), body.get("status_reason")))

    def upgrade(srv: Server) -> None:
        r = expect_ok(cli.coe(noauth(srv), "cluster", "upgrade", "ku", "up-tpl-2"))
        if "Request to upgrade cluster ku has been accepted." not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())

    def refused() -> None:
        coe = lambda *a: cli.coe(noauth(broken), *a)  # noqa: E731
        for name, tag in (("up-tpl", "v1.30.1"), ("up-tpl-2", "v1.31.0")):
            body = expect_ok(coe("cluster", "template", "create", name, "--coe", "kubernetes",
                                 "--image", "fedora-coreos-40", "--external-network", "public",
                                 "--labels", "kube_tag=%s" % tag, "-f", "json")).json()
            state[name] = body["uuid"]
        expect_ok(coe("cluster", "create", "ku", "--cluster-template", "up-tpl", "--node-count", "1"))
        wait_status(broken, "ku", "CREATE_COMPLETE")
        upgrade(broken)
        body = wait_status(broken, "ku", "UPDATE_FAILED")
        reason = str(body.get("status_reason"))
        if "simulated a failure of 'upgrade'" not in reason:
            raise CheckFailed("status_reason does not give the driver's reason: %r" % reason)
        if body.get("cluster_template_id") != state["up-tpl"]:
            raise CheckFailed("the failed upgrade left cluster_template_id %r (wanted the old %r)"
                              % (body.get("cluster_template_id"), state["up-tpl"]))
        state["failed"] = "yes"

    rep.server = broken
    try:
        failed_before = rep.failed
        rep.check("server starts (recovery, [fake_driver] fail_operations = upgrade)", broken.start)
        if rep.failed != failed_before:
            return
        rep.check("cluster upgrade ku up-tpl-2 on an infrastructure that refuses upgrades: UPDATE_FAILED, "
                  "the driver's reason in status_reason, the old cluster_template_id", refused)
    finally:
        broken.stop()
        rep.server = None
    if not state.get("failed"):
        return

    repaired = successor(broken, "recovery-repaired", FAST)
    rep.server = repaired
    try:
        rep.check("the same service restarted without the failure (same database) answers "
                  "GET /healthcheck", repaired.start)

        def again() -> None:
            body = shown(repaired, "ku")
            if body.get("status") != "UPDATE_FAILED":
                raise CheckFailed("ku is %s after the restart (wanted UPDATE_FAILED)" % body.get("status"))
            upgrade(repaired)
            body = wait_status(repaired, "ku", "UPDATE_COMPLETE")
            if body.get("cluster_template_id") != state["up-tpl-2"] or body.get("status_reason"):
                raise CheckFailed("after the upgrade: cluster_template_id %r, status_reason %r (wanted %r, none)"
                                  % (body.get("cluster_template_id"), body.get("status_reason"),
                                     state["up-tpl-2"]))

        rep.check("the same `coe cluster upgrade ku up-tpl-2` again recovers ku from UPDATE_FAILED: "
                  "UPDATE_COMPLETE on up-tpl-2, no status_reason", again)
    finally:
        repaired.stop()
        rep.server = None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print("cluster-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("cluster-cli-check: 0 passed, 1 failed")
        return 1
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "openstack").exists():
        print("cluster-cli-check: no `openstack` beside %s; run me with the clients venv's python "
              "(./tox.sh cli builds it)" % sys.executable, file=sys.stderr)
        print("cluster-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-cluster-cli-check-"))
    rep = Report()
    try:
        clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
        clients_cwd.mkdir()
        cli = Clients(venv_bin, clients_cwd)
        work = root / "work"
        work.mkdir()
        run_phase(rep, binary, root, "clusters", FAST, lambda srv: cluster_checks(rep, cli, srv, work))
        recovery_checks(rep, cli, binary, root)
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("cluster-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
