#!/usr/bin/env python3
"""Real-client check of the `openstack coe federation` plugin (clients/osc-plugin).

Installs python-openstackclient, python-magnumclient 5.0.0 and the plugin
(`pip install ./clients/osc-plugin`, from a copy, so the source tree stays
clean) into a virtualenv, starts `fleetyard serve` (no-auth, then JWT), and
runs every `coe federation` command through the real `openstack` executable,
checking its output. Then the plugin's retries: a server whose fake driver
refuses creates (`[fake_driver] fail_operations = create`) leaves a cluster
CREATE_FAILED; the same service restarted without the failure (the same
database) takes `coe cluster retry --wait` to CREATE_COMPLETE, and `coe
nodegroup retry` runs a refused node group create again. Every check prints `ok - ...` or `FAIL - ...`; the last
line is `federation-cli-check: N passed, N failed`, and the exit status is 1
when anything failed.

    python3 tools/federation_cli_check.py --bin target/debug/fleetyard

The virtualenv is .tox/federation-cli unless --venv says otherwise; it is
created, or reused when its requirements have not changed (the plugin itself
is reinstalled on every run). --no-install uses the virtualenv as it is.
The harness (server start/stop, clean client environment, bookkeeping) is
tools/cli_check.py's; this script needs only Python's standard library.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import pty
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import (  # noqa: E402  (the shared harness)
    CMD_TIMEOUT,
    CheckFailed,
    Clients,
    Report,
    Result,
    Server,
    expect_ok,
    indent,
    noauth,
    successor,
    tail,
    token_auth,
)

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIR = ROOT / "clients" / "osc-plugin"
DEFAULT_VENV = ROOT / ".tox" / "federation-cli"
# Changing this list re-creates the virtualenv's packages.
REQUIREMENTS = ["python-openstackclient", "python-magnumclient==5.0.0"]
PIP_TIMEOUT = 900  # seconds, for an install from PyPI

WAIT = ["--wait", "--wait-timeout", "60"]  # below CMD_TIMEOUT, so a stuck wait fails as a wait
CLUSTER_TIMEOUT = 60  # seconds, for the fake driver to create a cluster
JWT_AUDIENCE = "fleetyard"
# The conductor polls converging federations every second instead of every 10 (the default):
# only the check's run time changes.
FAST = {"FLEETYARD__CONDUCTOR__SYNC_INTERVAL": "1"}


# --------------------------------------------------------------------------
# The virtualenv


def run_logged(argv: list[str], timeout: int) -> subprocess.CompletedProcess:
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise CheckFailed("command failed (exit %d): %s\nstdout:\n%s\nstderr:\n%s" % (
            p.returncode, " ".join(argv), indent(tail(p.stdout)), indent(tail(p.stderr))))
    return p


def copy_plugin(workdir: Path) -> Path:
    """A copy of clients/osc-plugin: an in-tree build would leave build/ and *.egg-info there."""
    src = workdir / "osc-plugin-src"
    shutil.copytree(PLUGIN_DIR, src, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__"))
    return src


def prepare_venv(venv: Path, src: Path) -> Path:
    """Create or reuse `venv`, then (re)install the plugin from `src`."""
    py = venv / "bin" / "python"
    stamp = venv / ".requirements"
    wanted = " ".join(REQUIREMENTS)
    fresh = not (py.exists() and (venv / "bin" / "openstack").exists()
                 and stamp.exists() and stamp.read_text() == wanted)
    if not py.exists():
        run_logged([sys.executable, "-m", "venv", "--clear", str(venv)], 300)
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if fresh:
        if stamp.exists():
            stamp.unlink()
        # Everything in one resolution: the plugin's own dependencies must agree with magnumclient 5.0.0.
        run_logged(pip + REQUIREMENTS + [str(src)], PIP_TIMEOUT)
        stamp.write_text(wanted)
    else:
        # setuptools>=61 and wheel in the venv spare the build a download; else pip's isolated build.
        isolated = subprocess.run([str(py), "-c", "import sys, setuptools, wheel; "
                                   "sys.exit(int(setuptools.__version__.split('.')[0]) < 61)"],
                                  capture_output=True).returncode != 0
        run_logged(pip + ["--force-reinstall", "--no-deps"]
                   + ([] if isolated else ["--no-build-isolation"]) + [str(src)], PIP_TIMEOUT)
    return venv / "bin"


# --------------------------------------------------------------------------
# Helpers


def expect_fail_with(r: Result, sentence: str) -> Result:
    """Non-zero exit, the API's sentence on stderr, and no traceback."""
    if r.rc == 0 or sentence not in r.err:
        raise CheckFailed("expected a non-zero exit code and %r on stderr\n%s" % (sentence, r.describe()))
    if "Traceback" in r.err:
        raise CheckFailed("the error came with a traceback\n" + r.describe())
    return r


def fed_body(r: Result) -> dict:
    body = r.json()
    if not isinstance(body, dict):
        raise CheckFailed("expected a JSON object\n" + r.describe())
    return body


def expect_equal(r: Result, what: str, got: Any, want: Any) -> None:
    if got != want:
        raise CheckFailed("%s: got %r, expected %r\n%s" % (what, got, want, r.describe()))


def row_named(r: Result, name: str) -> dict | None:
    body = r.json()
    if not isinstance(body, list):
        raise CheckFailed("expected a JSON list\n" + r.describe())
    rows = [row for row in body if isinstance(row, dict) and row.get("name") == name]
    return rows[0] if rows else None


def run_on_terminal(cli: Clients, argv: list[str]) -> Result:
    """Run with stderr on a pseudo-terminal (stdout stays a pipe); returns what both got."""
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO once the child has closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        p = subprocess.Popen(argv, cwd=cli.cwd, env=cli.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        try:
            out, _ = p.communicate(timeout=CMD_TIMEOUT)
            rc: Any = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            rc = "timeout after %ds" % CMD_TIMEOUT
        reader.join(timeout=5)
    finally:
        os.close(master)
    err = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return Result(argv, rc, out, err)


def hs256_jwt(claims: dict, secret: str) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new(secret.encode(), ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (head, body, b64(sig))


class Coe:
    """`openstack <auth> coe ...` and the set-up both phases need."""

    def __init__(self, cli: Clients, auth: list[str]):
        self.cli, self.auth = cli, auth

    def __call__(self, *args: str) -> Result:
        return self.cli.coe(self.auth, *args)

    def argv(self, *args: str) -> list[str]:
        return [self.cli.openstack, *self.auth, "coe", *args]

    def template_and_clusters(self, template: str, clusters: list[str],
                              labels: dict[str, str] | None = None) -> dict[str, str]:
        """python-magnumclient's own commands: a template, clusters, then wait for CREATE_COMPLETE."""
        expect_ok(self("cluster", "template", "create", template, "--coe", "kubernetes",
                       "--image", "fedora-coreos-40", "--external-network", "public"))
        for name in clusters:
            extra = ["--labels", labels[name]] if labels and name in labels else []
            expect_ok(self("cluster", "create", name, "--cluster-template", template,
                           "--node-count", "1", "--master-count", "1", *extra))
        uuids: dict[str, str] = {}
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        for name in clusters:
            while True:
                r = expect_ok(self("cluster", "show", name, "-f", "json"))
                body = fed_body(r)
                status = body.get("status")
                if status == "CREATE_COMPLETE":
                    uuids[name] = body["uuid"]
                    break
                if status and status.endswith("_FAILED") or time.monotonic() > deadline:
                    raise CheckFailed("cluster %s is %s (expected CREATE_COMPLETE)\n%s"
                                      % (name, status, r.describe()))
                time.sleep(0.5)
        return uuids


class FedReport(Report):
    """cli_check's bookkeeping; a check skipped for want of an earlier one gets no server log."""

    def _fail(self, description: str, details: str) -> None:
        if details.startswith("skipped:"):
            self.failed += 1
            print("FAIL - %s: %s" % (description, details), flush=True)
            return
        super()._fail(description, details)


# --------------------------------------------------------------------------
# Checks


def noauth_checks(rep: Report, cli: Clients, srv: Server) -> None:
    coe = Coe(cli, noauth(srv))
    st: dict[str, Any] = {}

    def need(*keys: str) -> None:
        missing = [k for k in keys if not st.get(k)]
        if missing:
            raise CheckFailed("skipped: an earlier check did not give %s" % ", ".join(missing))

    def setup() -> None:
        # failhost: the fake driver fails every federation operation whose host it is.
        st["clusters"] = coe.template_and_clusters(
            "fed-tpl", ["host1", "member1", "member2", "member3", "failhost"],
            labels={"failhost": "fake_fail=federation"})

    rep.check("set-up with magnumclient: coe cluster template create, coe cluster create x5 "
              "(CREATE_COMPLETE)", setup)

    def plugin_registered() -> None:
        r = expect_ok(cli.run([cli.openstack, "command", "list", "--group", "container_infra", "-f", "json"]))
        names = {c for group in r.json() for c in (group.get("Commands") or [])}
        want = {"coe federation %s" % v for v in
                ("create", "delete", "list", "show", "update", "join", "unjoin", "retry")}
        want |= {"coe cluster retry", "coe nodegroup retry"}
        want |= {"coe cluster list", "coe cluster create", "coe cluster template list"}
        if not want <= names:
            raise CheckFailed("missing from the container_infra group: %s\n%s"
                              % (sorted(want - names), r.describe()))

    rep.check("`openstack command list --group container_infra` has the 8 federation commands and "
              "coe cluster|nodegroup retry beside magnumclient's", plugin_registered)

    def create() -> None:
        need("clusters")
        c = st["clusters"]
        r = expect_ok(coe("federation", "create", "fed1", "--hostcluster", "host1",
                          "--member", "member1", "--property", "dns=cluster.local", *WAIT, "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "status", body.get("status"), "CREATE_COMPLETE")
        expect_equal(r, "name", body.get("name"), "fed1")
        expect_equal(r, "hostcluster", body.get("hostcluster"), c["host1"])
        expect_equal(r, "members", body.get("members"), [c["member1"]])
        expect_equal(r, "properties", body.get("properties"), {"dns-zone": "cluster.local"})
        if not body.get("uuid"):
            raise CheckFailed("no uuid\n" + r.describe())
        st["fed1"] = body["uuid"]

    rep.check("federation create fed1 --hostcluster host1 --member member1 --property dns=... --wait "
              "reaches CREATE_COMPLETE (dns sent as dns-zone, names resolved to uuids)", create)

    def listed() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        row = row_named(r, "fed1")
        expect_equal(r, "fed1's row", row, {"uuid": st["fed1"], "name": "fed1", "members": 1,
                                            "status": "CREATE_COMPLETE"})
        r = expect_ok(coe("federation", "list"))
        header = [line for line in r.out.splitlines() if "uuid" in line]
        cells = [c.strip() for c in header[0].strip("|").split("|")] if header else []
        expect_equal(r, "table header", cells, ["uuid", "name", "members", "status"])

    rep.check("federation list: columns uuid, name, members (a count), status", listed)

    def show_table() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "show", "fed1"))
        rows = {}
        for line in r.out.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and line.startswith("|"):
                rows[cells[0]] = cells[1]
        c = st["clusters"]
        want = {"uuid": st["fed1"], "name": "fed1", "hostcluster": c["host1"],
                "members": "['%s']" % c["member1"], "properties": "dns-zone=cluster.local",
                "status": "CREATE_COMPLETE"}
        bad = {k: rows.get(k) for k, v in want.items() if rows.get(k) != v}
        if bad or "status_reason" not in rows:
            raise CheckFailed("property table rows differ: %r (wanted %r)\n%s"
                              % (bad, {k: want[k] for k in bad}, r.describe()))

    rep.check("federation show fed1 prints the spec's property table "
              "(hostcluster, members, properties, status, status_reason)", show_table)

    def show_uuid_formats() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "show", st["fed1"], "-f", "yaml"))
        if "name: fed1" not in r.out or "dns-zone: cluster.local" not in r.out:
            raise CheckFailed("yaml output lacks name/properties\n" + r.describe())
        r = expect_ok(coe("federation", "show", st["fed1"], "-f", "value", "-c", "name", "-c", "status"))
        expect_equal(r, "-f value", r.out.split(), ["fed1", "CREATE_COMPLETE"])

    rep.check("federation show <uuid> with -f yaml and -f value", show_uuid_formats)

    def join() -> None:
        need("fed1")
        c = st["clusters"]
        r = expect_ok(coe("federation", "join", "fed1", "member2", *WAIT, "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "members", sorted(body.get("members") or []), sorted([c["member1"], c["member2"]]))
        expect_equal(r, "status", body.get("status"), "UPDATE_COMPLETE")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        expect_equal(r, "members in the list", (row_named(r, "fed1") or {}).get("members"), 2)

    rep.check("federation join fed1 member2 --wait: members 1 -> 2, UPDATE_COMPLETE", join)

    def unjoin() -> None:
        need("fed1")
        c = st["clusters"]
        r = expect_ok(coe("federation", "unjoin", "fed1", "member1", *WAIT, "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "members", body.get("members"), [c["member2"]])
        expect_equal(r, "status", body.get("status"), "UPDATE_COMPLETE")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        expect_equal(r, "members in the list", (row_named(r, "fed1") or {}).get("members"), 1)

    rep.check("federation unjoin fed1 member1 --wait: members 2 -> 1", unjoin)

    def join_several_by_uuid() -> None:
        need("fed1")
        c = st["clusters"]
        r = expect_ok(coe("federation", "join", st["fed1"], c["member1"], "member3", *WAIT, "-f", "json"))
        expect_equal(r, "members", sorted(fed_body(r).get("members") or []),
                     sorted([c["member1"], c["member2"], c["member3"]]))
        r = expect_ok(coe("federation", "unjoin", "fed1", "member1", c["member3"], *WAIT, "-f", "json"))
        expect_equal(r, "members", fed_body(r).get("members"), [c["member2"]])

    rep.check("federation join/unjoin of two clusters at once (uuid and name)", join_several_by_uuid)

    def join_unknown() -> None:
        need("fed1")
        expect_fail_with(coe("federation", "join", "fed1", "no-such-cluster"),
                         "Cluster no-such-cluster could not be found.")
        r = expect_ok(coe("federation", "show", "fed1", "-f", "json"))
        expect_equal(r, "members", fed_body(r).get("members"), [st["clusters"]["member2"]])

    rep.check("federation join of an unknown cluster exits non-zero with the API's sentence, "
              "members unchanged", join_unknown)

    def join_twice() -> None:
        need("fed1")
        m2 = st["clusters"]["member2"]
        expect_fail_with(coe("federation", "join", "fed1", "member2"),
                         "Cluster member2 (%s) is already a member of the federation fed1." % m2)

    rep.check("federation join of a member again exits non-zero with the API's 409 sentence, "
              "naming the cluster as typed", join_twice)

    def unjoin_non_member() -> None:
        need("fed1")
        m1 = st["clusters"]["member1"]
        expect_fail_with(coe("federation", "unjoin", "fed1", "member1"),
                         "Cluster member1 (%s) is not a member of the federation fed1." % m1)
        r = expect_ok(coe("federation", "show", "fed1", "-f", "json"))
        expect_equal(r, "members", fed_body(r).get("members"), [st["clusters"]["member2"]])

    rep.check("federation unjoin of a cluster that is not a member exits non-zero with the API's 404 "
              "sentence, naming the cluster as typed", unjoin_non_member)

    def update() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "update", "fed1", "--property", "owner=ops",
                          "--property", "dns=example.org.", *WAIT, "-f", "json"))
        expect_equal(r, "properties", fed_body(r).get("properties"),
                     {"dns-zone": "example.org.", "owner": "ops"})
        r = expect_ok(coe("federation", "show", "fed1"))
        if "dns-zone=example.org., owner=ops" not in r.out:
            raise CheckFailed("show does not print 'dns-zone=example.org., owner=ops'\n" + r.describe())

    rep.check("federation update fed1 --property owner=ops --property dns=...: show prints them", update)

    def remove_property() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "update", "fed1", "--remove-property", "owner", *WAIT, "-f", "json"))
        expect_equal(r, "properties", fed_body(r).get("properties"), {"dns-zone": "example.org."})
        r = expect_ok(coe("federation", "show", "fed1", "-f", "json"))
        expect_equal(r, "properties on show", fed_body(r).get("properties"), {"dns-zone": "example.org."})

    rep.check("federation update fed1 --remove-property owner", remove_property)

    def terminal_progress() -> None:
        need("clusters")
        r = run_on_terminal(cli, coe.argv("federation", "create", "fed2", "--hostcluster", "host1",
                                          "--property", "dns-zone=fed2.example.", *WAIT,
                                          "-f", "value", "-c", "status"))
        expect_ok(r)
        expect_equal(r, "stdout", r.out.strip(), "CREATE_COMPLETE")
        lines = [line for line in r.err.splitlines() if line.startswith("fed2: ")]
        if not lines or "CREATE_COMPLETE" not in lines[-1]:
            raise CheckFailed("expected status lines 'fed2: <status> (Ns)' ending with CREATE_COMPLETE "
                              "on the terminal\n" + r.describe())
        st["fed2"] = True

    rep.check("create --wait on a terminal shows the status transitions on stderr", terminal_progress)

    def quiet_off_terminal() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "join", "fed1", "member1", *WAIT, "-f", "value", "-c", "status"))
        if r.err.strip():
            raise CheckFailed("stderr should be empty when it is not a terminal\n" + r.describe())
        expect_equal(r, "stdout", r.out.strip(), "UPDATE_COMPLETE")

    rep.check("--wait prints nothing on stderr when it is not a terminal", quiet_off_terminal)

    def create_without_wait() -> None:
        need("clusters")
        r = expect_ok(coe("federation", "create", "fed3", "--hostcluster", st["clusters"]["host1"],
                          "--property", "dns-zone=fed3.example.", "-f", "json"))
        body = fed_body(r)
        if body.get("status") not in ("CREATE_IN_PROGRESS", "CREATE_COMPLETE"):
            raise CheckFailed("status should be CREATE_IN_PROGRESS (or already CREATE_COMPLETE)\n"
                              + r.describe())
        st["fed3"] = body.get("uuid")

    rep.check("federation create without --wait returns at once with the new federation", create_without_wait)

    def create_errors() -> None:
        need("clusters")
        expect_fail_with(coe("federation", "create", "fed4", "--hostcluster", "host1"),
                         "No DNS zone specified. Please specify a `dns-zone` property "
                         "(with `openstack coe federation create|update`: `--property dns=<zone>`).")
        expect_fail_with(coe("federation", "create", "fed4", "--hostcluster", "no-such-host",
                             "--property", "dns=x."), "Cluster no-such-host could not be found.")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        if row_named(r, "fed4") is not None:
            raise CheckFailed("fed4 was created anyway\n" + r.describe())

    rep.check("federation create without dns-zone, or with an unknown host cluster, "
              "exits non-zero with the API's sentence", create_errors)

    def create_failed() -> None:
        need("clusters")
        r = coe("federation", "create", "fedfail", "--hostcluster", "failhost", "--property", "dns=f.",
                *WAIT, "-f", "json")
        shown = fed_body(expect_ok(coe("federation", "show", "fedfail", "-f", "json")))
        reason = shown.get("status_reason")
        expect_equal(r, "status on show", shown.get("status"), "CREATE_FAILED")
        if not reason:
            raise CheckFailed("CREATE_FAILED without a status_reason\n" + r.describe())
        expect_fail_with(r, reason)
        if "CREATE_FAILED" not in r.err or r.out.strip():
            raise CheckFailed("expected CREATE_FAILED on stderr and nothing on stdout\n" + r.describe())
        st["fedfail"] = True

    rep.check("federation create --wait that ends in CREATE_FAILED exits non-zero with the status_reason "
              "(host cluster labelled fake_fail=federation)", create_failed)

    def retry_failed_again() -> None:
        need("fedfail")
        r = coe("federation", "retry", "fedfail", *WAIT, "-f", "json")
        shown = fed_body(expect_ok(coe("federation", "show", "fedfail", "-f", "json")))
        expect_equal(r, "status on show", shown.get("status"), "CREATE_FAILED")
        expect_fail_with(r, shown.get("status_reason") or "<a status_reason>")
        if "CREATE_FAILED" not in r.err:
            raise CheckFailed("expected CREATE_FAILED on stderr\n" + r.describe())

    rep.check("federation retry fedfail --wait: the create runs again (1.17) and, its host still "
              "refusing, ends in CREATE_FAILED again (exit non-zero with the status_reason)",
              retry_failed_again)

    def delete_failed() -> None:
        need("fedfail")
        r = coe("federation", "delete", "fedfail", *WAIT)
        shown = fed_body(expect_ok(coe("federation", "show", "fedfail", "-f", "json")))
        expect_equal(r, "status on show", shown.get("status"), "DELETE_FAILED")
        expect_fail_with(r, shown.get("status_reason") or "<a status_reason>")
        if "DELETE_FAILED" not in r.err:
            raise CheckFailed("expected DELETE_FAILED on stderr\n" + r.describe())

    rep.check("federation delete --wait that ends in DELETE_FAILED exits non-zero with the status_reason",
              delete_failed)

    def retry_refused() -> None:
        need("fedfail")
        expect_fail_with(coe("federation", "retry", "fedfail"),
                         'Retrying a federation when status is "DELETE_FAILED" is not supported; only a '
                         "federation whose create failed (CREATE_FAILED) is retried: delete the federation "
                         "again.")

    rep.check("federation retry of a DELETE_FAILED federation exits non-zero with the API's sentence "
              "naming the way forward", retry_refused)

    def show_missing() -> None:
        expect_fail_with(coe("federation", "show", "no-such-federation"),
                         "Federation no-such-federation could not be found.")

    rep.check("federation show of an unknown federation exits non-zero with the API's sentence",
              show_missing)

    def microversion() -> None:
        r = expect_ok(cli.run([cli.openstack, "--os-container-infra-api-version", "1.10", *noauth(srv),
                               "coe", "federation", "list", "-f", "json"]))
        if row_named(r, "fed1") is None:
            raise CheckFailed("fed1 not listed\n" + r.describe())

    rep.check("--os-container-infra-api-version 1.10 coe federation list", microversion)

    def delete() -> None:
        need("fed1")
        r = expect_ok(coe("federation", "delete", "fed1", *WAIT))
        expect_fail_with(coe("federation", "show", "fed1"), "Federation fed1 could not be found.")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        if row_named(r, "fed1") is not None:
            raise CheckFailed("fed1 still listed\n" + r.describe())

    rep.check("federation delete fed1 --wait: then it is gone (show: the API's 404 sentence)", delete)

    def delete_several() -> None:
        need("fed2", "fed3")
        r = coe("federation", "delete", "fed2", "fed3", "no-such-federation", *WAIT)
        expect_fail_with(r, "Federation no-such-federation could not be found.")
        r = expect_ok(coe("federation", "list", "-f", "json"))
        left = [row.get("name") for row in r.json()]
        if "fed2" in left or "fed3" in left:
            raise CheckFailed("fed2 and fed3 should be gone, listed: %r\n%s" % (left, r.describe()))

    rep.check("federation delete fed2 fed3 no-such-federation --wait deletes the two, "
              "reports the third, exits non-zero", delete_several)

    def magnum_commands() -> None:
        r = expect_ok(coe("cluster", "list", "-f", "json"))
        names = sorted(row.get("name") for row in r.json())
        expect_equal(r, "clusters", names, ["failhost", "host1", "member1", "member2", "member3"])
        r = expect_ok(coe("cluster", "template", "list", "-f", "json"))
        if "fed-tpl" not in [row.get("name") for row in r.json()]:
            raise CheckFailed("fed-tpl not listed\n" + r.describe())
        r = expect_ok(coe("cluster", "show", "host1", "-f", "json"))
        expect_equal(r, "cluster show", fed_body(r).get("name"), "host1")

    rep.check("magnumclient's coe cluster list / cluster show / cluster template list still work "
              "in the same venv", magnum_commands)


def retry_checks(rep: Report, cli: Clients, binary: str, root: Path) -> None:
    """CREATE_FAILED, then `coe cluster retry` through the plugin: two servers, one after the
    other, on one database; the first one's infrastructure refuses creates and node group work
    (`[fake_driver] fail_operations`), the second one's is repaired."""
    workdir = root / "retry"
    workdir.mkdir()
    broken = Server(binary, workdir, "retry-broken",
                    {**FAST, "FLEETYARD__FAKE_DRIVER__FAIL_OPERATIONS": "create"})
    st: dict[str, Any] = {}

    def status_of(coe: Coe, *what: str) -> dict:
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        while True:
            r = expect_ok(coe(*what, "-f", "json"))
            body = fed_body(r)
            if not str(body.get("status", "")).endswith("_IN_PROGRESS") or time.monotonic() > deadline:
                return body
            time.sleep(0.5)

    def create_failed() -> None:
        coe = Coe(cli, noauth(broken))
        expect_ok(coe("cluster", "template", "create", "rt-tpl", "--coe", "kubernetes",
                      "--image", "fedora-coreos-40", "--external-network", "public"))
        expect_ok(coe("cluster", "create", "kr", "--cluster-template", "rt-tpl", "--node-count", "1"))
        body = status_of(coe, "cluster", "show", "kr")
        if body.get("status") != "CREATE_FAILED" or "simulated a failure of 'create'" not in \
                str(body.get("status_reason")):
            raise CheckFailed("kr is %s (%s), wanted CREATE_FAILED with the driver's reason"
                              % (body.get("status"), body.get("status_reason")))
        st["uuid"] = body["uuid"]
        r = cli.run([cli.openstack, "--os-container-infra-api-version", "1.15", *noauth(broken),
                     "coe", "cluster", "retry", "kr"])
        expect_fail_with(r, "The retry needs microversion 1.16 or later; this request was sent at "
                            "container-infra 1.15")

    rep.server = broken
    try:
        failed_before = rep.failed
        rep.check("server starts (retry, [fake_driver] fail_operations = create)", broken.start)
        if rep.failed != failed_before:
            return
        rep.check("cluster create kr on an infrastructure that refuses creates: CREATE_FAILED with the "
                  "driver's reason; coe cluster retry at microversion 1.15 names the version it needs",
                  create_failed)
    finally:
        broken.stop()
        rep.server = None
    if not st.get("uuid"):
        return

    repaired = successor(broken, "retry-repaired", FAST)
    rep.server = repaired
    try:
        rep.check("the same service restarted without the failure (same database) answers "
                  "GET /healthcheck", repaired.start)
        coe = Coe(cli, noauth(repaired))

        def retried() -> None:
            r = expect_ok(coe("cluster", "retry", "kr", *WAIT))
            expect_equal(r, "output", r.out, "Request to retry cluster kr has been accepted.\n"
                                             "Cluster kr is CREATE_COMPLETE.\n")
            body = fed_body(expect_ok(coe("cluster", "show", "kr", "-f", "json")))
            expect_equal(r, "kr after the retry", (body.get("uuid"), body.get("status"), body.get("status_reason")),
                         (st["uuid"], "CREATE_COMPLETE", None))

        rep.check("coe cluster retry kr --wait (the plugin, 1.16) creates the CREATE_FAILED cluster again "
                  "in place: the same uuid, CREATE_COMPLETE, no status_reason", retried)

        def refused() -> None:
            expect_fail_with(coe("cluster", "retry", "kr"),
                             'Retrying a cluster when status is "CREATE_COMPLETE" is not supported; only a '
                             "cluster whose create failed (CREATE_FAILED) is retried.")

        rep.check("coe cluster retry of a complete cluster exits non-zero with the API's sentence", refused)

        def nodegroup() -> None:
            # A cluster whose infrastructure refuses node group work (by label, for good).
            expect_ok(coe("cluster", "create", "kn", "--cluster-template", "rt-tpl", "--node-count", "1",
                          "--labels", "fake_fail=update"))
            body = status_of(coe, "cluster", "show", "kn")
            if body.get("status") != "CREATE_COMPLETE":
                raise CheckFailed("kn is %s (%s)" % (body.get("status"), body.get("status_reason")))
            expect_ok(coe("nodegroup", "create", "kn", "ng1", "--node-count", "1"))
            body = status_of(coe, "nodegroup", "show", "kn", "ng1")
            if body.get("status") != "CREATE_FAILED":
                raise CheckFailed("ng1 is %s (wanted CREATE_FAILED)" % body.get("status"))
            r = coe("nodegroup", "retry", "kn", "ng1", *WAIT)
            reason = "The fake driver simulated a failure of 'update' (label fake_fail=update)."
            expect_fail_with(r, "Nodegroup ng1 is CREATE_FAILED: " + reason)
            expect_equal(r, "output", r.out, "Request to retry nodegroup ng1 has been accepted.\n")

        rep.check("coe nodegroup retry kn ng1 --wait (1.17): accepted, the create runs again and, the "
                  "cluster still refusing, ends in CREATE_FAILED (exit non-zero with the reason)", nodegroup)
    finally:
        repaired.stop()
        rep.server = None


def jwt_checks(rep: Report, cli: Clients, srv: Server, secret: str) -> None:
    now = int(time.time())
    claims = {"sub": "u1", "project_id": "p1", "roles": ["member", "reader"], "aud": JWT_AUDIENCE,
              "iat": now, "exp": now + 3600}
    p1 = Coe(cli, token_auth(srv, hs256_jwt(claims, secret)))
    p2 = Coe(cli, token_auth(srv, hs256_jwt({**claims, "sub": "u2", "project_id": "p2"}, secret)))
    bad = Coe(cli, token_auth(srv, hs256_jwt(claims, secrets.token_hex(32))))
    st: dict[str, Any] = {}

    def lifecycle() -> None:
        clusters = p1.template_and_clusters("jwt-tpl", ["jwt-host"])
        r = expect_ok(p1("federation", "create", "jwt-fed", "--hostcluster", "jwt-host",
                         "--property", "dns=jwt.example.", *WAIT, "-f", "json"))
        body = fed_body(r)
        expect_equal(r, "status", body.get("status"), "CREATE_COMPLETE")
        expect_equal(r, "hostcluster", body.get("hostcluster"), clusters["jwt-host"])
        r = expect_ok(p1("federation", "list", "-f", "json"))
        if row_named(r, "jwt-fed") is None:
            raise CheckFailed("jwt-fed not listed for its project\n" + r.describe())
        st["fed"] = True

    rep.check("JWT (--os-auth-type admin_token --os-token): create --wait and list a federation", lifecycle)

    def other_project() -> None:
        if not st.get("fed"):
            raise CheckFailed("skipped: an earlier check did not create jwt-fed")
        r = expect_ok(p2("federation", "list", "-f", "json"))
        if row_named(r, "jwt-fed") is not None:
            raise CheckFailed("project p2 lists p1's federation\n" + r.describe())
        expect_fail_with(p2("federation", "show", "jwt-fed"), "Federation jwt-fed could not be found.")

    rep.check("JWT: another project neither lists nor shows it (the API's 404 sentence)", other_project)

    def refused() -> None:
        r = bad("federation", "list")
        if r.rc == 0 or "Traceback" in r.err or not r.err.strip():
            raise CheckFailed("expected a non-zero exit code and a one-line error\n" + r.describe())

    rep.check("JWT: a token signed with another key exits non-zero with the API's sentence", refused)

    def delete() -> None:
        if not st.get("fed"):
            raise CheckFailed("skipped: an earlier check did not create jwt-fed")
        expect_ok(p1("federation", "delete", "jwt-fed", *WAIT))
        expect_fail_with(p1("federation", "show", "jwt-fed"), "Federation jwt-fed could not be found.")

    rep.check("JWT: delete --wait", delete)


# --------------------------------------------------------------------------


def run_phase(rep: Report, binary: str, root: Path, label: str, extra_env: dict[str, str], body) -> None:
    workdir = root / label
    workdir.mkdir()
    srv = Server(binary, workdir, label, extra_env)
    rep.server = srv
    try:
        failed_before = rep.failed
        rep.check("server starts (%s) and answers GET /healthcheck with 200" % label, srv.start)
        if rep.failed != failed_before:
            return
        body(srv)
        if srv.proc is not None and srv.proc.poll() is not None:
            rep.fail("server (%s) keeps running through the checks" % label,
                     "it exited with code %s" % srv.proc.returncode)
    finally:
        srv.stop()
        rep.server = None


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
        print("federation-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("federation-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-federation-cli-check-"))
    rep = FedReport()
    try:
        venv = Path(os.path.abspath(args.venv))
        src = copy_plugin(root)
        if args.no_install:
            venv_bin = venv / "bin"

            def has_openstack() -> bool:
                if not (venv_bin / "openstack").exists():
                    raise CheckFailed("no %s (run without --no-install to create it)" % (venv_bin / "openstack"))
                return True

            ok = rep.check("virtualenv %s has openstack" % venv, has_openstack)
        else:
            venv_bin = rep.check("pip install python-openstackclient python-magnumclient==5.0.0 "
                                 "./clients/osc-plugin into %s" % venv, lambda: prepare_venv(venv, src))
            ok = venv_bin is not None
        if ok:
            def unit_tests() -> None:
                p = subprocess.run([str(venv_bin / "python"), "-m", "unittest", "discover", "-s", "tests"],
                                   cwd=src, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   timeout=300)
                if p.returncode != 0:
                    raise CheckFailed("exit code %d\n%s" % (p.returncode, indent(tail(p.stderr + p.stdout))))

            rep.check("the plugin's unit tests (clients/osc-plugin/tests)", unit_tests)

            clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
            clients_cwd.mkdir()
            cli = Clients(venv_bin, clients_cwd)
            run_phase(rep, binary, root, "noauth", FAST, lambda srv: noauth_checks(rep, cli, srv))
            retry_checks(rep, cli, binary, root)

            secret = secrets.token_hex(32)
            key_file = root / "secret"
            key_file.write_text(secret)
            key_file.chmod(0o600)
            jwt_env = {
                "FLEETYARD__DEFAULT__AUTH_STRATEGY": "jwt",
                "FLEETYARD__JWT__ALGORITHMS": "HS256",
                "FLEETYARD__JWT__KEY_FILE": str(key_file),
                "FLEETYARD__JWT__AUDIENCE": JWT_AUDIENCE,
                **FAST,
            }
            run_phase(rep, binary, root, "jwt", jwt_env, lambda srv: jwt_checks(rep, cli, srv, secret))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("federation-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
