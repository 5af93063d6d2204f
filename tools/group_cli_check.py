#!/usr/bin/env python3
"""Real-client check of `openstack coe cluster group create | list | show | set | delete`, its
`member add | accept | list | remove` and `binding create | list | delete` (clients/osc-plugin).

Installs python-openstackclient, python-magnumclient 5.0.0 and the plugin into a
virtualenv (the federation check's, tools/federation_cli_check.py), starts
`fleetyard serve` with JWT authentication (SQLite), and acts as three projects with
tokens of their own: `pa` owns a group and the clusters `shared` and `private`, `pb`
gets a binding, `pc` has none and owns the cluster `foreign`, which it must consent to
before it joins pa's group. Through the real `openstack` executable it checks every
group command's table and json output, the API's sentences for what is refused, and
what a binding changes: at microversion 1.20 pb's `openstack coe cluster list` shows
pa's `shared` cluster (and not `private`), pc's does not, and neither does pb's once
the binding is deleted. Every check prints `ok - ...` or `FAIL - ...`; the last line
is `group-cli-check: N passed, N failed`, and the exit status is 1 when anything failed.

    python3 tools/group_cli_check.py --bin target/debug/fleetyard

--venv and --no-install as in the federation check; the harness is
tools/cli_check.py's. Needs only Python's standard library.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import CheckFailed, Clients, Report, Result, Server, expect_ok, token_auth  # noqa: E402
from federation_cli_check import (  # noqa: E402  (the plugin's virtualenv and helpers)
    DEFAULT_VENV,
    FAST,
    JWT_AUDIENCE,
    Coe,
    FedReport,
    copy_plugin,
    expect_equal,
    expect_fail_with,
    fed_body,
    hs256_jwt,
    prepare_venv,
    run_phase,
)

GROUP_COMMANDS = [
    "coe cluster group %s" % c for c in ("create", "list", "show", "set", "delete")
] + [
    "coe cluster group member %s" % c for c in ("add", "accept", "list", "remove")
] + [
    "coe cluster group binding %s" % c for c in ("create", "list", "delete")
]
SHOW_FIELDS = ["uuid", "name", "description", "selector", "project_id", "user_id", "created_at",
               "updated_at"]


def names(r: Result) -> list[str]:
    body = r.json()
    if not isinstance(body, list):
        raise CheckFailed("expected a JSON list\n" + r.describe())
    return sorted(row.get("name") or row.get("Name") for row in body)


def checks(rep: Report, cli: Clients, srv: Server, secret: str) -> None:
    def project(name: str) -> Coe:
        now = int(time.time())
        claims = {"sub": "user-" + name, "project_id": name, "roles": ["member", "reader"],
                  "aud": JWT_AUDIENCE, "iat": now, "exp": now + 3600}
        return Coe(cli, token_auth(srv, hs256_jwt(claims, secret)))

    pa, pb, pc = project("pa"), project("pb"), project("pc")
    st: dict[str, Any] = {}

    def need(*keys: str) -> None:
        missing = [k for k in keys if not st.get(k)]
        if missing:
            raise CheckFailed("skipped: an earlier check did not give %s" % ", ".join(missing))

    def at(coe: Coe, version: str, *args: str) -> Result:
        return cli.run([cli.openstack, "--os-container-infra-api-version", version, *coe.auth,
                        "coe", *args])

    def cluster_names(coe: Coe, version: str) -> list[str]:
        r = expect_ok(at(coe, version, "cluster", "list", "-f", "json"))
        return names(r)

    def setup() -> None:
        st.update(pa.template_and_clusters("group-tpl", ["shared", "private"]))
        st.update(pc.template_and_clusters("other-tpl", ["foreign"]))

    rep.check("set-up: project pa creates the clusters shared and private, pc the cluster foreign "
              "(magnumclient's own commands, CREATE_COMPLETE)", setup)

    def registered() -> None:
        r = expect_ok(cli.run([cli.openstack, "command", "list", "--group", "container_infra",
                               "-f", "json"]))
        found = {c for group in r.json() for c in (group.get("Commands") or [])}
        missing = [c for c in GROUP_COMMANDS if c not in found]
        if missing:
            raise CheckFailed("missing from the container_infra group: %s\n%s"
                              % (", ".join(missing), r.describe()))

    rep.check("`openstack command list --group container_infra` has every coe cluster group "
              "command", registered)

    def created() -> None:
        need("shared")
        r = expect_ok(pa("cluster", "group", "create", "fleet", "--description", "The fleet",
                         "--cluster", "shared", "-f", "json"))
        body = fed_body(r)
        for k, v in {"name": "fleet", "description": "The fleet", "selector": None,
                     "project_id": "pa", "user_id": "user-pa"}.items():
            expect_equal(r, k, body.get(k), v)
        expect_equal(r, "fields", sorted(body), sorted(SHOW_FIELDS))
        st["group"] = body["uuid"]
        expect_fail_with(pa("cluster", "group", "create", "fleet"),
                         "A cluster group named fleet already exists in this project.")

    rep.check("cluster group create fleet --description --cluster shared: the group (json), and "
              "a second fleet is refused with the API's sentence", created)

    def listed_and_shown() -> None:
        need("group")
        r = expect_ok(pa("cluster", "group", "list", "-f", "json"))
        expect_equal(r, "rows", r.json(), [{"uuid": st["group"], "name": "fleet",
                                            "selector": None, "description": "The fleet"}])
        r = expect_ok(pa("cluster", "group", "show", st["group"]))
        if "| name" not in r.out or "fleet" not in r.out:
            raise CheckFailed("no name row in the table\n" + r.describe())
        expect_equal(r, "pb's list", pb("cluster", "group", "list", "-f", "json").json(), [])
        expect_fail_with(pb("cluster", "group", "show", "fleet"),
                         "ClusterGroup fleet could not be found.")

    rep.check("cluster group list (json) and show by uuid (table) for pa; another project "
              "neither lists nor shows it", listed_and_shown)

    def changed() -> None:
        need("group")
        r = expect_ok(pa("cluster", "group", "set", "fleet", "--description", "Shared fleet",
                         "--selector", "env=prod", "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "description", body.get("description"), "Shared fleet")
        expect_equal(r, "selector", body.get("selector"), "env=prod")
        r = expect_ok(pa("cluster", "group", "set", "fleet", "--unset-selector", "-f", "json"))
        expect_equal(r, "selector after --unset-selector", fed_body(r).get("selector"), None)
        r = expect_ok(pa("cluster", "group", "show", "fleet", "-f", "json"))
        expect_equal(r, "shown description", fed_body(r).get("description"), "Shared fleet")
        r = pa("cluster", "group", "set", "fleet")
        if r.rc == 0 or "Nothing to change" not in r.err:
            raise CheckFailed("set without options: expected a refusal\n" + r.describe())
        expect_fail_with(pa("cluster", "group", "set", "fleet", "--selector", "env in (a"),
                         "selector")

    rep.check("cluster group set --description --selector, then --unset-selector; nothing to "
              "change and a bad selector exit non-zero", changed)

    def consent() -> None:
        need("group", "foreign")
        r = expect_ok(pa("cluster", "group", "member", "add", "fleet", st["foreign"], "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "state", body.get("state"), "Proposed")
        expect_equal(r, "cluster_project_id", body.get("cluster_project_id"), "pc")
        r = expect_ok(pc("cluster", "group", "member", "accept", st["group"], "foreign", "-f",
                         "json"))
        expect_equal(r, "state after accept", fed_body(r).get("state"), "Accepted")
        r = expect_ok(pa("cluster", "group", "member", "list", "fleet", "-f", "json"))
        rows = {row["cluster_id"]: row["state"] for row in r.json()}
        expect_equal(r, "members", rows, {st["shared"]: "Accepted", st["foreign"]: "Accepted"})
        r = expect_ok(pc("cluster", "group", "member", "remove", st["group"], "foreign"))
        if "has been removed" not in r.out:
            raise CheckFailed("no removal line\n" + r.describe())
        r = expect_ok(pa("cluster", "group", "member", "list", "fleet", "-f", "json"))
        expect_equal(r, "members after pc withdrew", [row["cluster_id"] for row in r.json()],
                     [st["shared"]])

    rep.check("member add of pc's cluster is Proposed, pc's member accept makes it Accepted, "
              "pc's member remove withdraws it", consent)

    def bound() -> None:
        need("group", "shared")
        expect_equal(Result([], 0, "", ""), "pb before a binding", cluster_names(pb, "1.20"), [])
        r = expect_ok(pa("cluster", "group", "binding", "create", "fleet", "--project", "pb",
                         "--access", "read", "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "project_id", body.get("project_id"), "pb")
        expect_equal(r, "access", body.get("access"), "read")
        st["binding"] = body["uuid"]
        r = expect_ok(pa("cluster", "group", "binding", "list", "fleet", "-f", "json"))
        expect_equal(r, "bindings", [(b["uuid"], b["project_id"], b["access"]) for b in r.json()],
                     [(st["binding"], "pb", "read")])
        expect_fail_with(pa("cluster", "group", "binding", "create", "fleet", "--project", "pb",
                            "--access", "admin"), "invalid choice")

    rep.check("binding create fleet --project pb --access read, binding list shows it",
              bound)

    def shared() -> None:
        need("binding")
        r = at(pb, "1.20", "cluster", "list", "-f", "json")
        expect_equal(expect_ok(r), "pb's clusters at 1.20", names(r), ["shared"])
        r = expect_ok(at(pb, "1.20", "cluster", "show", st["shared"], "-f", "json"))
        expect_equal(r, "project of the shown cluster", fed_body(r).get("project_id"), "pa")
        expect_fail_with(at(pb, "1.20", "cluster", "show", st["private"]),
                         "Cluster %s could not be found" % st["private"])
        r = at(pc, "1.20", "cluster", "list", "-f", "json")
        expect_equal(expect_ok(r), "pc's clusters at 1.20", names(r), ["foreign"])
        expect_fail_with(at(pc, "1.20", "cluster", "show", st["shared"]),
                         "Cluster %s could not be found" % st["shared"])
        r = at(pb, "1.19", "cluster", "list", "-f", "json")
        expect_equal(expect_ok(r), "pb's clusters at 1.19", names(r), [])

    rep.check("at 1.20 the bound project pb lists and shows pa's shared cluster (not private); "
              "the unbound pc does not; below 1.20 nothing is shared", shared)

    def unbound() -> None:
        need("binding")
        r = expect_ok(pa("cluster", "group", "binding", "delete", "fleet", st["binding"]))
        if "has been deleted" not in r.out:
            raise CheckFailed("no deletion line\n" + r.describe())
        expect_equal(r, "pb's clusters after the binding went", cluster_names(pb, "1.20"), [])
        r = expect_ok(pa("cluster", "group", "member", "remove", "fleet", "shared"))
        r = expect_ok(pa("cluster", "group", "member", "list", "fleet", "-f", "json"))
        expect_equal(r, "members", r.json(), [])

    rep.check("binding delete: pb no longer lists shared; member remove of pa's own cluster",
              unbound)

    def deleted() -> None:
        need("group")
        r = expect_ok(pa("cluster", "group", "delete", "fleet"))
        if "Cluster group fleet has been deleted." not in r.out:
            raise CheckFailed("no deletion line\n" + r.describe())
        expect_fail_with(pa("cluster", "group", "show", "fleet"),
                         "ClusterGroup fleet could not be found.")
        expect_fail_with(pa("cluster", "group", "delete", "fleet"),
                         "ClusterGroup fleet could not be found.")
        r = expect_ok(at(pa, "1.20", "cluster", "list", "-f", "json"))
        expect_equal(r, "pa's clusters are untouched", names(r), ["private", "shared"])

    rep.check("cluster group delete fleet: gone (the API's 404 sentence on show and a second "
              "delete), pa's clusters untouched", deleted)


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
        print("group-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("group-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-group-cli-check-"))
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
            secret = secrets.token_hex(32)
            key_file = root / "secret"
            key_file.write_text(secret)
            key_file.chmod(0o600)
            env = {
                "FLEETYARD__DEFAULT__AUTH_STRATEGY": "jwt",
                "FLEETYARD__JWT__ALGORITHMS": "HS256",
                "FLEETYARD__JWT__KEY_FILE": str(key_file),
                "FLEETYARD__JWT__AUDIENCE": JWT_AUDIENCE,
                **FAST,
            }
            run_phase(rep, binary, root, "jwt", env, lambda srv: checks(rep, cli, srv, secret))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("group-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
