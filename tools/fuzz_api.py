#!/usr/bin/env python3
"""schemathesis over Fleetyard's OpenAPI document, against a running `fleetyard serve`.

For each backend (SQLite in a temporary directory, and a fresh PostgreSQL database), starts
`fleetyard serve` on a free 127.0.0.1 port in no-auth mode, then runs the `st` CLI of
schemathesis against `GET /v1/openapi.json` once per identity (admin, then member; the
identity travels in `X-Project-Id`, `X-User-Id` and `X-Roles`), with every phase: examples,
coverage, fuzzing (positive and negative data) and stateful (schemathesis follows the links
the document declares from each create operation to show, update and delete with the new
uuid, and those it infers itself: create -> show -> patch -> delete).

Before the runs it seeds, as the admin, a public cluster template, a cluster built from it (the
fake driver completes it) and a federation hosted on it, and hands schemathesis a config file
(`schemathesis.toml` in the work directory) whose dictionaries make about half the generated
identifiers (`cluster_ident`, `clustertemplate_ident`, `nodegroup_ident`, `machine_ident`,
`federation_ident`, `project_id`, and `cluster_template_id`, `hostcluster_id`, `cluster_uuid`
in bodies) and most `coe` values name real things: without them nearly every generated body or path is refused
with 400/404 before it reaches the code behind it. The member run uses another project, so
for it the admin's objects must be 404.

Checks (each response of each request):
  not_a_server_error           no 5xx
  status_code_conformance      the status is one the document lists for the operation
  response_schema_conformance  the body matches the document's schema for that status
  content_type_conformance     the Content-Type is the one the document lists
Left out, with what `-c all` reports for them on a short run (seed 3, 5 examples):
  ignored_auth (ST401) and negative_data_rejection (ST201): the document marks `X-Auth-Token`
      required, and no-auth mode (what this runs) answers 200 without it by design; the JWT and
      Keystone modes are covered by `./tox.sh cli` and `./tox.sh keystone`.
  positive_data_acceptance (ST202): the document is looser than Magnum's validation (free
      strings where Magnum wants a uuid marker, a known project id, a `kubernetes` coe, an
      existing template), so schema-valid requests get Magnum's 400; tightening every field
      of the document is further work.
  unsupported_method (ST204): TRACE and other unrouted methods on `/` and a few paths get 404
      where schemathesis wants 405.
  missing_required_header, use_after_free, ensure_resource_availability,
  object_level_authorization, response_headers_conformance, allow_header_conformance:
      reported nothing on that short run, but have not been tried at full length, so they
      are not enabled yet.

A hang fails the run: every request has `--request-timeout` (default 10 s) and the whole
schemathesis run a wall-clock limit; the server must still answer /healthcheck afterwards.

The number of requests each run sent is counted from schemathesis's NDJSON report and
printed; with --min-requests N a backend that sent fewer than N fails.

    .tox/schemathesis/bin/python tools/fuzz_api.py --bin target/debug/fleetyard
    FUZZ_API_EXAMPLES=5 ... (a short run, as `./tox.sh test` does)

Every run prints `ok - ...` or `FAIL - ...`; the last line is
`fuzz-api: N passed, N failed`; the exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import base64
import collections
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

START_TIMEOUT = 60  # seconds for `fleetyard serve` to answer /healthcheck
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance"
IDENTITIES = {
    # role -> (project, user)
    "admin": ("fuzz-admin-project", "fuzz-admin"),
    "member": ("fuzz-member-project", "fuzz-member"),
}

NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(text: str, lines: int = 30) -> str:
    return "\n".join((text or "").rstrip().splitlines()[-lines:])


class Server:
    """`fleetyard serve` with its own port, database and log."""

    def __init__(self, binary: str, workdir: Path, database: str):
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.log_path = workdir / "server.log"
        # Only the settings below: no FLEETYARD__* leaking in from the caller's environment.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FLEETYARD__")}
        self.env.update(
            {
                "FLEETYARD__API__HOST": "127.0.0.1",
                "FLEETYARD__API__PORT": str(self.port),
                "FLEETYARD__DATABASE__CONNECTION": database,
                "FLEETYARD__DEFAULT__AUTH_STRATEGY": "noauth",
                "FLEETYARD__DEFAULT__LOG_LEVEL": "warn",
            }
        )
        self.proc: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self) -> None:
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "serve"],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("`fleetyard serve` exited with %s:\n%s" % (self.proc.returncode, self.log()))
            last = self.health()
            if last == "ok":
                return
            time.sleep(0.2)
        raise RuntimeError("/healthcheck did not answer within %ds (last: %s)\n%s" % (START_TIMEOUT, last, self.log()))

    def health(self) -> str:
        try:
            with NO_PROXY_OPENER.open(self.base + "/healthcheck", timeout=5) as r:
                return "ok" if r.status == 200 else "HTTP %d" % r.status
        except urllib.error.HTTPError as e:
            return "HTTP %d" % e.code
        except (urllib.error.URLError, OSError) as e:
            return str(e)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def log(self) -> str:
        try:
            return tail(self.log_path.read_text(errors="replace"))
        except OSError:
            return "(no log)"


def api(server: "Server", method: str, path: str, body: object = None, role: str = "admin") -> tuple[int, object]:
    project, user = IDENTITIES[role]
    req = urllib.request.Request(server.base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    for k, v in {"Content-Type": "application/json", "Accept": "application/json", "X-Project-Id": project,
                 "X-User-Id": user, "X-Roles": role}.items():
        req.add_header(k, v)
    try:
        with NO_PROXY_OPENER.open(req, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def seed(server: "Server") -> dict[str, list[str]]:
    """Objects for the generated requests to find: a public template, a cluster built from it
    (with its default node groups) and a federation hosted on it, as the admin. Returns the
    schemathesis dictionaries: names to lists of values."""
    tpl = {"name": "fuzz-template", "coe": "kubernetes", "image_id": "fedora-coreos-40",
           "external_network_id": "public", "public": True}
    status, body = api(server, "POST", "/v1/clustertemplates", tpl)
    if status != 201:
        raise RuntimeError("seeding: POST /v1/clustertemplates -> %s %s" % (status, body))
    template = body["uuid"]
    status, body = api(server, "POST", "/v1/clusters",
                       {"name": "fuzz-cluster", "cluster_template_id": template, "node_count": 1, "master_count": 1})
    if status != 202:
        raise RuntimeError("seeding: POST /v1/clusters -> %s %s" % (status, body))
    cluster = body["uuid"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body = api(server, "GET", "/v1/clusters/" + cluster)
        if status == 200 and not str(body.get("status", "")).endswith("IN_PROGRESS"):
            break
        time.sleep(0.5)
    values = {"templates": [template, "fuzz-template"], "clusters": [cluster, "fuzz-cluster"],
              "nodegroups": ["default-worker", "default-master"], "coes": ["kubernetes"],
              # The machines of the default node groups, named by MachineName::for_nodegroup.
              "machines": ["default-worker-1", "default-master-1"],
              "projects": [p for p, _ in IDENTITIES.values()], "resources": ["Cluster"]}
    status, body = api(server, "POST", "/v1/federations",
                       {"name": "fuzz-federation", "hostcluster_id": cluster, "properties": {"dns-zone": "example.com."}})
    if status in (200, 201, 202) and isinstance(body, dict) and body.get("uuid"):
        values["federations"] = [body["uuid"], "fuzz-federation"]
    else:
        print("# note: seeding: POST /v1/federations -> %s %s" % (status, body), flush=True)
    return values


def write_config(path: Path, values: dict[str, list[str]]) -> None:
    """A schemathesis.toml that draws identifiers from the seeded objects part of the time
    (generated values the rest), so show, patch, delete and the actions reach real objects."""
    bindings = {
        "path.cluster_ident": ("clusters", 0.5),
        "path.clustertemplate_ident": ("templates", 0.5),
        "path.nodegroup_ident": ("nodegroups", 0.5),
        "path.machine_ident": ("machines", 0.5),
        "path.federation_ident": ("federations", 0.5),
        "path.project_id": ("projects", 0.5),
        "path.resource": ("resources", 0.5),
        "body.coe": ("coes", 0.8),
        "body.cluster_template_id": ("templates", 0.7),
        "body.cluster_template": ("templates", 0.5),
        "body.cluster_uuid": ("clusters", 0.5),
        "body.hostcluster_id": ("clusters", 0.7),
        "body.project_id": ("projects", 0.5),
        "body.resource": ("resources", 0.5),
    }
    lines = []
    for name, vals in values.items():
        lines.append("[dictionaries.%s]" % name)
        lines.append("values = %s" % json.dumps(vals))
    lines.append("[parameters]")
    for key, (name, probability) in bindings.items():
        if name in values:
            lines.append('"%s" = { dictionary = "%s", probability = %s }' % (key, name, probability))
    path.write_text("\n".join(lines) + "\n")


def psql(admin_url: str, sql: str) -> None:
    subprocess.run(["psql", "-v", "ON_ERROR_STOP=1", "-qAt", admin_url, "-c", sql], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)


def pg_database_url(admin_url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(admin_url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def read_report(path: str) -> tuple[int, collections.Counter, list[str]]:
    """(requests sent, (method, status) counts, one line per 5xx) from an NDJSON report."""
    total = 0
    statuses: collections.Counter = collections.Counter()
    server_errors: list[str] = []
    with open(path) as f:
        for line in f:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            for inter in ((finished.get("recorder") or {}).get("interactions") or {}).values():
                total += 1
                req = inter.get("request") or {}
                resp = inter.get("response") or {}
                status = resp.get("status_code")
                statuses[(req.get("method"), status)] += 1
                if isinstance(status, int) and status >= 500:
                    body = resp.get("content") or ""
                    if isinstance(body, dict) and "$base64" in body:
                        body = base64.b64decode(body["$base64"]).decode(errors="replace")
                    server_errors.append("%s %s -> %s %s" % (req.get("method"), req.get("uri"), status, str(body)[:300]))
    return total, statuses, server_errors


class Runner:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.passed = 0
        self.failed = 0
        self.config: Path | None = None

    def result(self, ok: bool, name: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
            print("ok - %s" % name, flush=True)
        else:
            self.failed += 1
            print("FAIL - %s\n%s" % (name, "\n".join("    " + line for line in detail.splitlines())), flush=True)

    def schemathesis(self, server: Server, backend: str, role: str, workdir: Path) -> int:
        """One st run; returns the number of requests it sent."""
        a = self.args
        project, user = IDENTITIES[role]
        report_dir = workdir / ("report-%s" % role)
        examples = a.examples if role == "admin" else max(1, a.examples // a.member_divisor)
        cmd = [
            a.st, *(["--config-file", str(self.config)] if self.config else []), "run", server.base + "/v1/openapi.json",
            "--url", server.base,
            "--header", "X-Project-Id: %s" % project,
            "--header", "X-User-Id: %s" % user,
            "--header", "X-Roles: %s" % role,
            "--checks", CHECKS,
            "--max-examples", str(examples),
            "--request-timeout", str(a.request_timeout),
            "--workers", str(a.workers),
            "--report", "ndjson",
            "--report-dir", str(report_dir),
            "--no-color",
        ]
        if a.seed is not None:
            cmd += ["--seed", str(a.seed)]
        name = "schemathesis on %s as %s (%d examples per operation)" % (backend, role, examples)
        print("# %s" % " ".join(cmd), flush=True)
        started = time.monotonic()
        out_path = workdir / ("schemathesis-%s.out" % role)
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=workdir)
            try:
                rc = proc.wait(timeout=a.run_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
        elapsed = time.monotonic() - started
        output = out_path.read_text(errors="replace")
        reports = sorted(glob.glob(str(report_dir / "*.ndjson")))
        total, statuses, server_errors = read_report(reports[-1]) if reports else (0, collections.Counter(), [])
        summary = ", ".join("%s %s: %d" % (m, s, n) for (m, s), n in sorted(statuses.items(), key=lambda x: -x[1])[:12])
        print("# %s: %d requests in %.0f s (%s)" % (name, total, elapsed, summary), flush=True)
        health = server.health()
        if rc is None:
            self.result(False, name, "schemathesis did not finish within %d s (a hang?)\n%s\nserver log:\n%s"
                        % (a.run_timeout, tail(output, 60), server.log()))
        elif rc != 0 or server_errors:
            self.result(False, name, "schemathesis exit %s\n%s\n%s\nserver log:\n%s"
                        % (rc, "\n".join(server_errors[:20]), tail(output, 200), server.log()))
        else:
            self.result(True, "%s: %d requests" % (name, total))
        self.result(health == "ok", "%s: the server still answers /healthcheck" % backend,
                    "%s\n%s" % (health, server.log()))
        return total

    def backend(self, backend: str, root: Path) -> None:
        a = self.args
        workdir = root / backend
        workdir.mkdir()
        dbname = None
        if backend == "sqlite":
            database = "sqlite://%s" % (workdir / "fleetyard.sqlite")
        else:
            dbname = "fy_fuzz_api_%s" % uuid.uuid4().hex[:12]
            try:
                psql(a.pg_url, "CREATE DATABASE %s" % dbname)
            except (subprocess.SubprocessError, OSError) as e:
                self.result(False, "postgresql: create database %s on %s" % (dbname, a.pg_url), str(e))
                return
            database = pg_database_url(a.pg_url, dbname)
        server = Server(a.bin, workdir, database)
        if backend == "postgresql":
            # With PostgreSQL and no [certificates] key_file, every certificate operation is
            # a deliberate 503 ("an operator must configure it"; the first full run found
            # PATCH /v1/certificates/{cluster} so): configure the service as it is deployed.
            key_file = workdir / "certificates.key"
            key_file.write_text(base64.b64encode(os.urandom(32)).decode())
            key_file.chmod(0o600)
            server.env["FLEETYARD__CERTIFICATES__KEY_FILE"] = str(key_file)
        try:
            try:
                server.start()
            except RuntimeError as e:
                self.result(False, "%s: fleetyard serve starts" % backend, str(e))
                return
            try:
                self.config = workdir / "schemathesis.toml"
                write_config(self.config, seed(server))
            except (RuntimeError, OSError, KeyError, AttributeError) as e:
                self.result(False, "%s: seed a template, a cluster and a federation" % backend, "%s\n%s" % (e, server.log()))
                return
            total = 0
            for role in a.roles:
                total += self.schemathesis(server, backend, role, workdir)
            if a.min_requests:
                self.result(total >= a.min_requests, "%s: %d requests in all (at least %d)" % (backend, total, a.min_requests),
                            "raise FUZZ_API_EXAMPLES")
            else:
                print("# %s: %d requests in all" % (backend, total), flush=True)
        finally:
            server.stop()
            if server.proc is not None and server.proc.returncode not in (0, -signal.SIGTERM, None):
                print("# note: fleetyard serve exited with %s" % server.proc.returncode, flush=True)
            if dbname is not None:
                try:
                    psql(a.pg_url, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % dbname)
                except (subprocess.SubprocessError, OSError) as e:
                    print("# note: could not drop %s: %s" % (dbname, e), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the fleetyard binary")
    ap.add_argument("--st", default=str(Path(sys.executable).parent / "st"), help="schemathesis's st executable")
    ap.add_argument("--backends", default=os.environ.get("FUZZ_API_BACKENDS", "sqlite,postgresql"),
                    help="comma-separated: sqlite, postgresql (env FUZZ_API_BACKENDS)")
    ap.add_argument("--roles", default=os.environ.get("FUZZ_API_ROLES", "admin,member"),
                    help="comma-separated X-Roles to run as, one schemathesis run each (env FUZZ_API_ROLES)")
    ap.add_argument("--examples", type=int, default=int(os.environ.get("FUZZ_API_EXAMPLES", "200")),
                    help="--max-examples per operation for the admin run (env FUZZ_API_EXAMPLES, default 200)")
    ap.add_argument("--member-divisor", type=int, default=4,
                    help="the member run uses examples / this (default 4)")
    ap.add_argument("--min-requests", type=int, default=int(os.environ.get("FUZZ_API_MIN_REQUESTS", "0")),
                    help="fail a backend that sent fewer requests (env FUZZ_API_MIN_REQUESTS)")
    ap.add_argument("--request-timeout", type=float, default=10.0, help="seconds per request (default 10)")
    ap.add_argument("--run-timeout", type=int, default=int(os.environ.get("FUZZ_API_RUN_TIMEOUT", "0")),
                    help="seconds for one schemathesis run before it counts as a hang (env FUZZ_API_RUN_TIMEOUT;"
                         " default 120 or 5 per example, whichever is larger: about 5 times what a run takes)")
    # One worker: with more, Python 3.11 before 3.11.8 fails in ast.parse from two threads
    # ("AST constructor recursion depth mismatch", CPython gh-106905) inside hypothesis.
    ap.add_argument("--workers", type=int, default=int(os.environ.get("FUZZ_API_WORKERS", "1")),
                    help="schemathesis workers (env FUZZ_API_WORKERS, default 1)")
    ap.add_argument("--seed", type=int, default=int(os.environ["FUZZ_API_SEED"]) if os.environ.get("FUZZ_API_SEED") else None,
                    help="schemathesis seed (env FUZZ_API_SEED; random when absent, printed by schemathesis)")
    ap.add_argument("--pg-url", default=os.environ.get("FLEETYARD_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
                    help="PostgreSQL URL to create the fresh database with (env FLEETYARD_TEST_PG_URL)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, reports)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    if args.run_timeout <= 0:
        args.run_timeout = max(120, 5 * args.examples)
    args.roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    for role in args.roles:
        if role not in IDENTITIES:
            ap.error("unknown role %r (admin, member)" % role)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in ("sqlite", "postgresql"):
            ap.error("unknown backend %r (sqlite, postgresql)" % b)
    if not os.access(args.st, os.X_OK):
        ap.error("no schemathesis at %s" % args.st)

    root = Path(tempfile.mkdtemp(prefix="fy-fuzz-api-"))
    runner = Runner(args)
    try:
        for b in backends:
            runner.backend(b, root)
    finally:
        if args.keep or runner.failed:
            print("# work directory (logs, NDJSON reports): %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("fuzz-api: %d passed, %d failed" % (runner.passed, runner.failed), flush=True)
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
