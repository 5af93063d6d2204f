#!/usr/bin/env python3
"""Real-client compatibility check for Fleetyard.

Starts `fleetyard serve` (twice: no-auth, then JWT) and drives it with the
REAL clients installed in the `.tox/clients` virtualenv: the `openstack`
CLI with the python-magnumclient 5.0.0 plugin, and openstacksdk.  Every
check prints `ok - ...` or `FAIL - ...`; the last line is
`cli-check: N passed, N failed`, and the exit status is 1 when anything
failed.

Run it through `./tox.sh cli`, or by hand:

    .tox/clients/bin/python tools/cli_check.py --bin target/debug/fleetyard

It needs Python 3.11's standard library plus pyjwt, openstacksdk and
python-openstackclient / python-magnumclient from the virtualenv it runs in.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

CMD_TIMEOUT = 60  # seconds, per client command
START_TIMEOUT = 60  # seconds, for the server to answer /healthcheck
TAIL_LINES = 25

JWT_AUDIENCE = "fleetyard"


class CheckFailed(Exception):
    """A check did not hold; the message carries the details."""


def tail(text: str, lines: int = TAIL_LINES) -> str:
    parts = (text or "").rstrip().splitlines()
    if len(parts) > lines:
        parts = ["[... %d lines cut ...]" % (len(parts) - lines)] + parts[-lines:]
    return "\n".join(parts)


def indent(text: str) -> str:
    return textwrap.indent(text, "    ")


NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# The server under test


class Server:
    """One `fleetyard serve` process with its own port, database and log."""

    # A subclass serving HTTPS sets "https" and an opener that trusts its CA.
    scheme = "http"
    opener = NO_PROXY_OPENER

    def __init__(self, binary: str, workdir: Path, label: str, extra_env: dict[str, str]):
        self.binary = binary
        self.workdir = workdir
        self.label = label
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.stderr_path = workdir / "server.stderr"
        self.stdout_path = workdir / "server.stdout"
        # Only the settings below: no FLEETYARD__* leaking in from the caller's environment.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FLEETYARD__")}
        self.env.update(
            {
                "FLEETYARD__API__PORT": str(self.port),
                "FLEETYARD__API__HOST": "127.0.0.1",
                "FLEETYARD__DATABASE__CONNECTION": "sqlite://%s" % (workdir / "fleetyard.sqlite"),
            }
        )
        self.env.update(extra_env)

    @property
    def base(self) -> str:
        return "%s://127.0.0.1:%d" % (self.scheme, self.port)

    @property
    def endpoint(self) -> str:
        return self.base + "/v1"

    def start(self) -> None:
        self._err = open(self.stderr_path, "wb")
        self._out = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "serve"],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,  # its own process group, so stop() gets any children too
        )
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer yet"
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise CheckFailed("`%s serve` exited with code %d before answering /healthcheck" % (self.binary, rc))
            try:
                with self.opener.open(self.base + "/healthcheck", timeout=2) as r:
                    if r.status == 200:
                        return
                    last = "HTTP %d" % r.status
            except urllib.error.HTTPError as e:
                last = "HTTP %d" % e.code
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            time.sleep(0.2)
        raise CheckFailed("GET %s/healthcheck did not answer 200 within %ds (last: %s)" % (self.base, START_TIMEOUT, last))

    def stop(self) -> None:
        if self.proc is not None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(timeout=10)
        for f in (getattr(self, "_err", None), getattr(self, "_out", None)):
            if f is not None:
                f.close()

    def _signal_group(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)  # the group this script created for the server
        except (ProcessLookupError, PermissionError):
            pass

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        """The end of the server's stderr (or of its stdout, if it logs there)."""
        for path in (self.stderr_path, self.stdout_path):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                label = "" if path == self.stderr_path else "(stderr is empty; stdout:)\n"
                return label + tail(text, lines)
        return "(the server wrote nothing)"


# --------------------------------------------------------------------------
# The clients


class Result:
    def __init__(self, argv: list[str], rc: int, out: str, err: str):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err

    def describe(self) -> str:
        return "command: %s\nexit code: %s\nstdout:\n%s\nstderr:\n%s" % (
            shlex.join(self.argv),
            self.rc,
            indent(tail(self.out) or "(empty)"),
            indent(tail(self.err) or "(empty)"),
        )

    def json(self) -> Any:
        # `create` prints "Request to create cluster template X accepted" before the JSON.
        lines = self.out.splitlines()
        start = next((i for i, line in enumerate(lines) if line[:1] in ("{", "[")), 0)
        try:
            return json.loads("\n".join(lines[start:]))
        except ValueError as e:
            raise CheckFailed("output is not JSON (%s)\n%s" % (e, self.describe()))


class Clients:
    """Runs the real `openstack` CLI (and openstacksdk) from a clean place."""

    def __init__(self, venv_bin: Path, cwd: Path):
        self.openstack = str(venv_bin / "openstack")
        self.python = str(venv_bin / "python")
        self.cwd = cwd
        home = cwd / "home"
        home.mkdir(parents=True, exist_ok=True)
        # No OS_* variables, and a HOME without ~/.config/openstack/clouds.yaml.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
        for var in ("no_proxy", "NO_PROXY"):  # the server is on loopback, never behind a proxy
            self.env[var] = ",".join(filter(None, [self.env.get(var), "127.0.0.1", "localhost"]))
        self.env.pop("PYTHONPATH", None)
        # `coe cluster config` reads $SHELL to print `export` (or csh's `setenv`); a login shell
        # always has it, a CI runner may not.
        self.env.setdefault("SHELL", "/bin/sh")
        self.env.setdefault("LANG", "C.UTF-8")

    def run(self, argv: list[str]) -> Result:
        try:
            p = subprocess.run(
                argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CMD_TIMEOUT,
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            return Result(argv, "timeout after %ds" % CMD_TIMEOUT, out, err)  # type: ignore[arg-type]
        return Result(argv, p.returncode, p.stdout, p.stderr)

    def coe(self, auth: list[str], *args: str) -> Result:
        return self.run([self.openstack, *auth, "coe", *args])

    def python_snippet(self, code: str, *args: str) -> Result:
        return self.run([self.python, "-c", code, *args])


def successor(srv: Server, label: str, extra_env: dict[str, str]) -> Server:
    """A server over the database of `srv` (stopped first) with other settings: the same
    service restarted with a repaired configuration. Its log files are its own."""
    nxt = Server(srv.binary, srv.workdir, label, extra_env)
    nxt.stderr_path = srv.workdir / ("%s.stderr" % label)
    nxt.stdout_path = srv.workdir / ("%s.stdout" % label)
    return nxt


def noauth(server: Server) -> list[str]:
    return ["--os-auth-type", "none", "--os-endpoint", server.endpoint]


def token_auth(server: Server, token: str) -> list[str]:
    return ["--os-auth-type", "admin_token", "--os-endpoint", server.endpoint, "--os-token", token]


def expect_ok(r: Result) -> Result:
    if r.rc != 0:
        raise CheckFailed("expected exit code 0\n" + r.describe())
    return r


def expect_http_error(r: Result, status: int) -> Result:
    marker = "(HTTP %d)" % status
    if r.rc == 0 or marker not in r.err:
        raise CheckFailed("expected a non-zero exit code and %r on stderr\n%s" % (marker, r.describe()))
    return r


def expect_reported(r: Result, status: int) -> Result:
    """`delete` catches errors per item: it prints them on stdout and exits 0."""
    marker = "(HTTP %d)" % status
    if marker not in r.out + r.err:
        raise CheckFailed("expected %r in the output\n%s" % (marker, r.describe()))
    return r


def as_dict(value: Any) -> dict:
    """Labels come out of `-f json` as an object; accept a Python/JSON string too."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(parsed, dict):
                return parsed
    raise CheckFailed("expected a mapping, got %r" % (value,))


def expect_fields(r: Result, want: dict[str, Any]) -> dict:
    body = r.json()
    if not isinstance(body, dict):
        raise CheckFailed("expected a JSON object\n" + r.describe())
    bad = {k: body.get(k, "<missing>") for k, v in want.items() if body.get(k, "<missing>") != v}
    if bad:
        raise CheckFailed(
            "unexpected fields: %s (wanted %s)\n%s"
            % (json.dumps(bad), json.dumps({k: want[k] for k in bad}), r.describe())
        )
    return body


def names_of(r: Result) -> list[str]:
    body = r.json()
    if not isinstance(body, list):
        raise CheckFailed("expected a JSON list\n" + r.describe())
    return [row.get("name") for row in body if isinstance(row, dict)]


# --------------------------------------------------------------------------
# Bookkeeping


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.server: Server | None = None

    def check(self, description: str, fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except CheckFailed as e:
            self._fail(description, str(e))
            return None
        except Exception as e:  # a bug in a check must not hide the others
            self._fail(description, "%s: %s" % (type(e).__name__, e))
            return None
        self.passed += 1
        print("ok - %s" % description, flush=True)
        return value

    def _fail(self, description: str, details: str) -> None:
        self.failed += 1
        if self.server is not None and self.server.proc is not None:
            details += "\nserver (%s) log tail:\n%s" % (self.server.label, indent(self.server.log_tail()))
        print("FAIL - %s: %s" % (description, indent(details).lstrip()), flush=True)

    def fail(self, description: str, details: str) -> None:
        self._fail(description, details)


# --------------------------------------------------------------------------
# Checks

SDK_SNIPPET = r"""
import json, sys
import openstack
endpoint, mode, arg = sys.argv[1:4]
token = sys.argv[4] if len(sys.argv) > 4 else None
if token:
    conn = openstack.connect(auth_type="admin_token", auth={"endpoint": endpoint, "token": token})
else:
    conn = openstack.connect(auth_type="none", auth={"endpoint": endpoint})
cim = conn.container_infrastructure_management
if mode == "list":
    print(json.dumps([{"id": t.id, "name": t.name} for t in cim.cluster_templates()]))
else:
    t = cim.get_cluster_template(arg)
    print(json.dumps({"id": t.id, "name": t.name, "coe": t.coe}))
"""

# The CLI's own client (magnumclient SessionClient over a keystoneauth no-auth
# session), walking the `next` links from a first page of one item: this is the
# code path `coe cluster template list --limit N` takes when a page is short.
PAGES_SNIPPET = r"""
import json, sys
from keystoneauth1 import noauth, session
from magnumclient import client
endpoint = sys.argv[1]
mc = client.Client("1", session=session.Session(auth=noauth.NoAuth(endpoint=endpoint)),
                   endpoint_override=endpoint)
ct = mc.cluster_templates
items = ct._list_pagination(ct._path("?limit=1"), "clustertemplates")
print(json.dumps([{"uuid": t.uuid, "name": t.name} for t in items]))
"""


def noauth_checks(rep: Report, cli: Clients, srv: Server) -> None:
    auth = noauth(srv)

    def coe(*args: str) -> Result:
        return cli.coe(auth, *args)

    state: dict[str, str] = {}

    def create() -> None:
        r = expect_ok(coe("cluster", "template", "create", "tpl-a", "--coe", "kubernetes",
                          "--image", "fedora-coreos-40", "--external-network", "public",
                          "--labels", "kube_tag=v1.30.1", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-a", "coe": "kubernetes", "image_id": "fedora-coreos-40",
                                 "external_network_id": "public"})
        labels = as_dict(body.get("labels"))
        if labels.get("kube_tag") != "v1.30.1":
            raise CheckFailed("labels has no kube_tag=v1.30.1: %r\n%s" % (labels, r.describe()))
        if not body.get("uuid") or body.get("uuid") == "-":
            raise CheckFailed("no uuid in the output\n" + r.describe())
        state["uuid"] = body["uuid"]

    rep.check("template create tpl-a (-f json shows name, coe, image_id, labels, uuid)", create)

    def create_public() -> None:
        r = expect_ok(coe("cluster", "template", "create", "tpl-pub", "--coe", "kubernetes",
                          "--image", "fedora-coreos-40", "--external-network", "public",
                          "--public", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-pub", "public": True})
        state["pub_uuid"] = body.get("uuid", "")

    rep.check("template create --public (default no-auth identity is admin)", create_public)

    def listed() -> None:
        r = expect_ok(coe("cluster", "template", "list", "-f", "json"))
        names = names_of(r)
        if "tpl-a" not in names or "tpl-pub" not in names:
            raise CheckFailed("tpl-a and tpl-pub should be listed, got %r\n%s" % (names, r.describe()))
        for row in r.json():
            if not row.get("uuid"):
                raise CheckFailed("a row has no uuid\n" + r.describe())

    rep.check("template list -f json lists both templates", listed)

    def list_limit() -> None:
        r = expect_ok(coe("cluster", "template", "list", "--limit", "1", "-f", "json"))
        names = names_of(r)
        if len(names) != 1:
            raise CheckFailed("expected exactly 1 row, got %r\n%s" % (names, r.describe()))

    rep.check("template list --limit 1 gives one row", list_limit)

    def list_sorted() -> None:
        r = expect_ok(coe("cluster", "template", "list", "--limit", "5", "--sort-key", "name",
                          "--sort-dir", "desc", "-f", "json"))
        names = names_of(r)
        if names != sorted(names, reverse=True) or not {"tpl-a", "tpl-pub"} <= set(names):
            raise CheckFailed("expected both templates sorted by name desc, got %r\n%s" % (names, r.describe()))

    rep.check("template list --limit 5 --sort-key name --sort-dir desc (trailing-slash URL)", list_sorted)

    def follow_next() -> None:
        r = expect_ok(cli.python_snippet(PAGES_SNIPPET, srv.endpoint))
        names = [row.get("name") for row in r.json()]
        if sorted(names) != ["tpl-a", "tpl-pub"]:
            raise CheckFailed("pages of one, following `next`, should give tpl-a and tpl-pub once each, "
                              "got %r\n%s" % (names, r.describe()))

    rep.check("magnumclient follows `next` from GET /v1/clustertemplates/?limit=1 through all pages", follow_next)

    def show_by_name() -> None:
        r = expect_ok(coe("cluster", "template", "show", "tpl-a", "-f", "json"))
        expect_fields(r, {"name": "tpl-a", "uuid": state.get("uuid"), "coe": "kubernetes"})

    rep.check("template show tpl-a (by name)", show_by_name)

    def show_by_uuid() -> None:
        if not state.get("uuid"):
            raise CheckFailed("skipped: create gave no uuid")
        r = expect_ok(coe("cluster", "template", "show", state["uuid"], "-f", "json"))
        expect_fields(r, {"name": "tpl-a", "uuid": state["uuid"]})

    rep.check("template show <uuid>", show_by_uuid)

    def update() -> None:
        r = expect_ok(coe("cluster", "template", "update", "tpl-a", "--name", "tpl-b",
                          "--label", "a=b", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-b", "uuid": state.get("uuid")})
        labels = as_dict(body.get("labels"))
        if labels.get("a") != "b" or labels.get("kube_tag") != "v1.30.1":
            raise CheckFailed("labels should have a=b and kube_tag=v1.30.1: %r\n%s" % (labels, r.describe()))

    rep.check("template update tpl-a --name tpl-b --label a=b", update)

    def update_no_label() -> None:
        r = expect_ok(coe("cluster", "template", "update", "tpl-b", "--no-label", "a", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-b"})
        labels = as_dict(body.get("labels"))
        if "a" in labels or labels.get("kube_tag") != "v1.30.1":
            raise CheckFailed("label a should be gone and kube_tag kept: %r\n%s" % (labels, r.describe()))
        r = expect_ok(coe("cluster", "template", "show", "tpl-b", "-f", "json"))
        labels = as_dict(r.json().get("labels"))
        if "a" in labels:
            raise CheckFailed("label a is back on show: %r\n%s" % (labels, r.describe()))

    rep.check("template update tpl-b --no-label a", update_no_label)

    def show_missing() -> None:
        r = expect_http_error(coe("cluster", "template", "show", "no-such-template"), 404)
        if r.rc != 1:
            raise CheckFailed("expected exit code 1\n" + r.describe())

    rep.check("template show of a missing template exits 1 with (HTTP 404)", show_missing)

    def sdk_list() -> None:
        r = expect_ok(cli.python_snippet(SDK_SNIPPET, srv.endpoint, "list", ""))
        rows = r.json()
        if not any(row.get("name") == "tpl-pub" and row.get("id") == state.get("pub_uuid") for row in rows):
            raise CheckFailed("tpl-pub (%s) not in the SDK list: %r\n%s" % (state.get("pub_uuid"), rows, r.describe()))

    rep.check("openstacksdk cluster_templates() (with GET /v1 discovery) lists tpl-pub", sdk_list)

    def sdk_get() -> None:
        if not state.get("pub_uuid"):
            raise CheckFailed("skipped: create --public gave no uuid")
        r = expect_ok(cli.python_snippet(SDK_SNIPPET, srv.endpoint, "get", state["pub_uuid"]))
        got = r.json()
        if got.get("name") != "tpl-pub" or got.get("id") != state["pub_uuid"] or got.get("coe") != "kubernetes":
            raise CheckFailed("unexpected template from the SDK: %r\n%s" % (got, r.describe()))

    rep.check("openstacksdk get_cluster_template(uuid)", sdk_get)

    def delete() -> None:
        expect_ok(coe("cluster", "template", "delete", "tpl-b"))
        r = expect_ok(coe("cluster", "template", "list", "-f", "json"))
        names = names_of(r)
        if "tpl-b" in names or "tpl-pub" not in names:
            raise CheckFailed("tpl-b should be gone and tpl-pub kept, got %r\n%s" % (names, r.describe()))
        expect_http_error(coe("cluster", "template", "show", "tpl-b"), 404)

    rep.check("template delete tpl-b, then it is no longer listed or shown", delete)

    def delete_missing() -> None:
        expect_reported(coe("cluster", "template", "delete", "tpl-b"), 404)

    rep.check("template delete of a missing template reports (HTTP 404)", delete_missing)


def jwt_checks(rep: Report, cli: Clients, srv: Server, secret: str) -> None:
    import jwt  # pyjwt, from the virtualenv

    now = int(time.time())
    claims = {"sub": "u1", "project_id": "p1", "roles": ["member", "reader"], "aud": JWT_AUDIENCE}
    good = jwt.encode({**claims, "iat": now, "exp": now + 3600}, secret, algorithm="HS256")
    wrong_key = jwt.encode({**claims, "iat": now, "exp": now + 3600}, secrets.token_hex(32), algorithm="HS256")
    expired = jwt.encode({**claims, "iat": now - 7200, "exp": now - 3600}, secret, algorithm="HS256")

    def coe(token: str, *args: str) -> Result:
        return cli.coe(token_auth(srv, token), *args)

    state: dict[str, str] = {}

    def create() -> None:
        r = expect_ok(coe(good, "cluster", "template", "create", "tpl-jwt", "--coe", "kubernetes",
                          "--image", "fedora-coreos-40", "--external-network", "public", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-jwt", "coe": "kubernetes"})
        state["uuid"] = body.get("uuid", "")
        state["project_id"] = body.get("project_id")

    rep.check("JWT: template create with a valid HS256 token", create)

    def project() -> None:
        if state.get("project_id") != "p1":
            raise CheckFailed("project_id of the created template is %r, expected 'p1' (the token's project_id claim)"
                              % (state.get("project_id"),))

    rep.check("JWT: the created template belongs to the token's project (p1)", project)

    def listed() -> None:
        r = expect_ok(coe(good, "cluster", "template", "list", "-f", "json"))
        if "tpl-jwt" not in names_of(r):
            raise CheckFailed("tpl-jwt not listed\n" + r.describe())

    rep.check("JWT: template list", listed)

    def show() -> None:
        r = expect_ok(coe(good, "cluster", "template", "show", "tpl-jwt", "-f", "json"))
        expect_fields(r, {"name": "tpl-jwt", "uuid": state.get("uuid")})

    rep.check("JWT: template show", show)

    def other_project() -> None:
        p2 = jwt.encode({**claims, "sub": "u2", "project_id": "p2", "iat": now, "exp": now + 3600},
                        secret, algorithm="HS256")
        r = expect_ok(coe(p2, "cluster", "template", "list", "-f", "json"))
        if "tpl-jwt" in names_of(r):
            raise CheckFailed("project p2 sees p1's private template\n" + r.describe())
        expect_http_error(coe(p2, "cluster", "template", "show", "tpl-jwt"), 404)

    rep.check("JWT: another project (p2) neither lists nor shows p1's private template", other_project)

    def sdk_token() -> None:
        r = expect_ok(cli.python_snippet(SDK_SNIPPET, srv.endpoint, "list", "", good))
        if not any(row.get("name") == "tpl-jwt" and row.get("id") == state.get("uuid") for row in r.json()):
            raise CheckFailed("tpl-jwt (%s) not in the SDK list\n%s" % (state.get("uuid"), r.describe()))

    rep.check("JWT: openstacksdk with auth_type=admin_token lists the template", sdk_token)

    def wrong() -> None:
        expect_http_error(coe(wrong_key, "cluster", "template", "list"), 401)

    rep.check("JWT: a token signed with another secret is refused with (HTTP 401)", wrong)

    def exp() -> None:
        expect_http_error(coe(expired, "cluster", "template", "list"), 401)

    rep.check("JWT: an expired token is refused with (HTTP 401)", exp)

    def no_token() -> None:
        expect_http_error(cli.coe(noauth(srv), "cluster", "template", "list"), 401)

    rep.check("JWT: --os-auth-type none (X-Auth-Token: notused) is refused with (HTTP 401)", no_token)

    def refused_write() -> None:
        expect_reported(coe(expired, "cluster", "template", "delete", "tpl-jwt"), 401)
        r = expect_ok(coe(good, "cluster", "template", "show", "tpl-jwt", "-f", "json"))
        expect_fields(r, {"name": "tpl-jwt"})

    rep.check("JWT: delete with an expired token is refused and deletes nothing", refused_write)

    def delete() -> None:
        expect_ok(coe(good, "cluster", "template", "delete", "tpl-jwt"))
        r = expect_ok(coe(good, "cluster", "template", "list", "-f", "json"))
        if "tpl-jwt" in names_of(r):
            raise CheckFailed("tpl-jwt still listed after delete\n" + r.describe())

    rep.check("JWT: template delete", delete)


# --------------------------------------------------------------------------


def run_phase(rep: Report, binary: str, root: Path, label: str, extra_env: dict[str, str],
              body: Callable[[Server], None]) -> None:
    workdir = root / label
    workdir.mkdir()
    srv = Server(binary, workdir, label, extra_env)
    rep.server = srv
    try:
        failed_before = rep.failed
        rep.check("server starts (%s) and answers GET /healthcheck with 200" % label, srv.start)
        if rep.failed != failed_before:
            return  # the FAIL line already carries the server's stderr
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
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print("cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("cli-check: 0 passed, 1 failed")
        return 1
    venv_bin = Path(sys.executable).parent  # not resolved: the venv's bin/, not the base interpreter's
    if not (venv_bin / "openstack").exists():
        print("cli-check: no `openstack` beside %s; run me with the clients venv's python "
              "(./tox.sh cli builds it)" % sys.executable, file=sys.stderr)
        print("cli-check: 0 passed, 1 failed")
        return 1

    # A SIGTERM (CI timeout, tox.sh interrupted) still stops the server: SystemExit runs the finally blocks.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-cli-check-"))
    rep = Report()
    try:
        clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
        clients_cwd.mkdir()
        cli = Clients(venv_bin, clients_cwd)

        run_phase(rep, binary, root, "noauth", {}, lambda srv: noauth_checks(rep, cli, srv))

        secret = secrets.token_hex(32)
        key_file = root / "secret"
        key_file.write_text(secret)  # no trailing newline
        key_file.chmod(0o600)
        jwt_env = {
            "FLEETYARD__DEFAULT__AUTH_STRATEGY": "jwt",
            "FLEETYARD__JWT__ALGORITHMS": "HS256",
            "FLEETYARD__JWT__KEY_FILE": str(key_file),
            "FLEETYARD__JWT__AUDIENCE": JWT_AUDIENCE,
        }
        run_phase(rep, binary, root, "jwt", jwt_env, lambda srv: jwt_checks(rep, cli, srv, secret))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
