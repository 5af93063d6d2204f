#!/usr/bin/env python3
"""Skyline (skyline-apiserver + skyline-console 9.0.0) against Fleetyard, in headless Chromium.

Sets up Keystone, projects, Fleetyard (keystone mode, behind the logging proxy) and the
Nova/Glance/Neutron stand-in exactly as tools/horizon_check.py does, then runs Skyline the way
its install guide does: skyline.yaml in OS_CONFIG_DIR (SQLite), the alembic migration,
skyline-apiserver under gunicorn with uvicorn workers on a unix socket, and Debian's nginx
with the configuration `skyline-nginx-generator` writes from Keystone's catalog (the console's
static files, /api/openstack/skyline/ to the apiserver, /api/openstack/regionone/magnum/ to
Fleetyard). Project A's member makes a template and a cluster through the API; then headless
Chromium logs in to the console as that member and checks the Container Infra pages: the
cluster templates list and a template's details, the clusters list (CREATE_COMPLETE) and a
cluster's details, all filled from Fleetyard's answers through nginx.

Every step prints `ok - ...` or `FAIL - ...`; the last line is
`skyline-check: N passed, N failed`. Screenshots and logs of a failed run go to --out.

Run it through `./tox.sh skyline`, or by hand:

    .tox/skyline/bin/python tools/skyline_check.py --bin target/debug/fleetyard \\
        --keystone-venv .tox/keystone --horizon-venv .tox/horizon --out target/skyline-check
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import NO_PROXY_OPENER, CheckFailed, Report, Server, free_port, indent, tail  # noqa: E402
from horizon_check import (  # noqa: E402
    Browser,
    LoggingProxy,
    OutOfTime,
    kill_group,
    register_catalog,
)
from horizon_standin import StandIn  # noqa: E402
from keystone_check import (  # noqa: E402
    PASSWORD,
    REGION,
    SERVICE_PASSWORD,
    Keystone,
    create_identities,
    fleetyard_config,
    http,
    issue_token,
)

START_TIMEOUT = 90
STATUS_TIMEOUT = 90
NGINX = "/usr/sbin/nginx"


class Skyline:
    """skyline-apiserver (gunicorn + uvicorn workers, unix socket) behind nginx."""

    def __init__(self, venv: Path, workdir: Path, keystone_url: str):
        self.venv = venv
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.socket = self.dir / "skyline.sock"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.env.pop("PYTHONPATH", None)
        self.env["OS_CONFIG_DIR"] = str(self.dir)
        self.keystone_url = keystone_url
        self.api: subprocess.Popen | None = None
        self.nginx: subprocess.Popen | None = None
        self.logs: list[Path] = []

    @property
    def base(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def configure(self) -> None:
        (self.dir / "log").mkdir(exist_ok=True)
        (self.dir / "policy").mkdir(exist_ok=True)
        conf = {
            "default": {
                "database_url": "sqlite:///%s" % (self.dir / "skyline.db"),
                "debug": True,
                "log_dir": str(self.dir / "log"),
                "log_file": "skyline.log",
                "access_log_file": str(self.dir / "log" / "nginx-access.log"),
                "error_log_file": str(self.dir / "log" / "nginx-error.log"),
                "policy_file_path": str(self.dir / "policy"),
                "secret_key": "fleetyard-skyline-check-only-0123456789abcdef",
                "ssl_enabled": False,
            },
            "openstack": {
                "keystone_url": self.keystone_url + "/",
                "default_region": REGION,
                "interface_type": "public",
                "system_project": "service",
                "system_project_domain": "Default",
                "system_user_domain": "Default",
                "system_user_name": "fleetyard",
                "system_user_password": SERVICE_PASSWORD,
            },
        }
        (self.dir / "skyline.yaml").write_text(json.dumps(conf, indent=2))  # JSON is YAML
        alembic_ini = next(Path(self.venv).glob("lib/python3*/site-packages/skyline_apiserver/db/alembic/alembic.ini"))
        self.run([str(self.venv / "bin" / "alembic"), "-c", str(alembic_ini), "upgrade", "head"])
        conf_path = self.dir / "nginx.conf"
        self.run([str(self.venv / "bin" / "skyline-nginx-generator"), "-o", str(conf_path),
                  "--listen-address", "127.0.0.1:%d" % self.port])
        text = conf_path.read_text()
        text = text.replace("pid /run/nginx.pid;", "pid %s;" % (self.dir / "nginx.pid"))
        text = text.replace("unix:/var/lib/skyline/skyline.sock", "unix:%s" % self.socket)
        text = text.replace("include /etc/nginx/modules-enabled/*.conf;", "")
        if os.geteuid() == 0:  # else nginx's workers run as www-data, who cannot enter the run's directory
            text = "user root;\n" + text
        # Temporary files of a non-root nginx under the run's directory.
        temp = "".join("    %s_temp_path %s;\n" % (kind, self.dir / ("nginx-" + kind))
                       for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        text = text.replace("http {\n", "http {\n" + temp, 1)
        conf_path.write_text(text)
        if "/magnum/" not in text:
            raise CheckFailed("the generated nginx configuration has no magnum location:\n%s"
                              % indent(tail(text, 60)))

    def run(self, argv: list[str]) -> None:
        p = subprocess.run(argv, cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise CheckFailed("%s exited %d\n%s" % (Path(argv[0]).name, p.returncode,
                                                    indent(tail(p.stdout + p.stderr))))

    def start(self) -> None:
        api_log = open(self.dir / "log" / "apiserver.log", "ab")
        self.logs.append(self.dir / "log" / "apiserver.log")
        self.api = subprocess.Popen(
            [str(self.venv / "bin" / "gunicorn"), "--bind", "unix:%s" % self.socket, "--workers", "1",
             "--worker-class", "uvicorn.workers.UvicornWorker", "--timeout", "120",
             "--no-control-socket", "skyline_apiserver.main:app"],
            cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL, stdout=api_log, stderr=api_log,
            start_new_session=True)
        nginx_log = open(self.dir / "log" / "nginx.stderr", "ab")
        self.logs += [self.dir / "log" / "nginx.stderr", self.dir / "log" / "nginx-error.log",
                      self.dir / "log" / "skyline.log"]
        self.nginx = subprocess.Popen(
            [NGINX, "-c", str(self.dir / "nginx.conf"), "-p", str(self.dir), "-g", "daemon off;"],
            cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL, stdout=nginx_log, stderr=nginx_log,
            start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer yet"
        while time.monotonic() < deadline:
            for name, proc in (("gunicorn", self.api), ("nginx", self.nginx)):
                if proc.poll() is not None:
                    raise CheckFailed("%s exited with code %d\n%s" % (name, proc.returncode, self.log_tail()))
            try:
                status, _, body = http("GET", self.base + "/api/openstack/skyline/api/v1/contrib/regions", timeout=5)
                if status == 200:
                    return
                last = "HTTP %d %s" % (status, str(body)[:200])
            except OSError as e:
                last = str(e)
            time.sleep(0.5)
        raise CheckFailed("GET /api/openstack/skyline/api/v1/contrib/regions did not answer 200 within %ds (last: %s)\n%s"
                          % (START_TIMEOUT, last, self.log_tail()))

    def stop(self) -> None:
        kill_group(self.nginx)
        kill_group(self.api)

    def log_tail(self) -> str:
        parts = []
        for path in self.logs:
            try:
                parts.append("%s:\n%s" % (path.name, indent(tail(path.read_text(errors="replace"), 15))))
            except OSError:
                pass
        return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keystone-venv", default=".tox/keystone")
    ap.add_argument("--out", default="target/skyline-check")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("SKYLINE_CHECK_TIMEOUT", "900")))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    ks_venv = Path(os.path.abspath(args.keystone_venv))
    venv = Path(sys.prefix)
    out = Path(os.path.abspath(args.out))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    def out_of_time(signum: int, frame: Any) -> None:
        raise OutOfTime("the whole check ran past --timeout %d s" % args.timeout)

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.timeout)
    for var in ("no_proxy", "NO_PROXY"):
        os.environ[var] = ",".join(filter(None, [os.environ.get(var), "127.0.0.1", "localhost"]))

    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="fleetyard-skyline-check-"))
    rep = Report()
    ks = Keystone(ks_venv, root / "keystone")
    srv: Server | None = None
    proxy: LoggingProxy | None = None
    sky: Skyline | None = None
    standin = StandIn()
    browser: Browser | None = None
    state: dict[str, str] = {}
    try:
        rep.check("keystone-manage db_sync, fernet_setup, credential_setup, bootstrap", ks.bootstrap)
        if rep.failed:
            return 1
        rep.check("Keystone answers GET /v3", ks.start)
        if rep.failed:
            return 1
        projects = rep.check("projects, the service user (Skyline's system user too), readers, members, admins",
                             lambda: create_identities(ks))
        if projects is None:
            return 1
        workdir = root / "fleetyard"
        (workdir / "etc" / "fleetyard").mkdir(parents=True)
        (workdir / "etc" / "fleetyard" / "fleetyard.conf").write_text(fleetyard_config(ks))
        srv = Server(binary, workdir, "keystone", {})
        proxy = LoggingProxy(srv.port, out / "fleetyard-requests.jsonl")
        proxy.start()
        standin.start()
        rep.check("catalog: container-infra (Fleetyard), compute, image, network (the stand-in)",
                  lambda: register_catalog(ks, proxy.endpoint, standin))
        rep.server = srv
        rep.check("fleetyard serve (auth_strategy = keystone)", srv.start)
        sky = Skyline(venv, root / "skyline", ks.url)
        rep.check("skyline.yaml, the alembic migration, skyline-nginx-generator (a magnum location from the "
                  "catalog)", sky.configure)
        if rep.failed:
            return 1
        rep.check("skyline-apiserver (gunicorn, uvicorn worker) behind nginx answers", sky.start)
        if rep.failed:
            return 1

        token = issue_token(ks, "a-member", "proj-a")
        hdr = {"X-Auth-Token": token}

        def api_objects() -> None:
            status, _, body = http("POST", proxy.endpoint + "/clustertemplates", hdr, {
                "name": "sky-tpl", "coe": "kubernetes", "image_id": "fedora-coreos-40",
                "external_network_id": "public", "flavor_id": "m1.medium", "master_flavor_id": "m1.medium",
                "keypair_id": "default", "network_driver": "flannel", "labels": {"kube_tag": "v1.30.1"}})
            if status != 201:
                raise CheckFailed("template: %d %s" % (status, body))
            state["template"] = body["uuid"]
            status, _, body = http("POST", proxy.endpoint + "/clusters", hdr, {
                "name": "sky-cluster", "cluster_template_id": state["template"], "node_count": 2,
                "master_count": 1})
            if status != 202:
                raise CheckFailed("cluster: %d %s" % (status, body))
            state["cluster"] = body["uuid"]
            deadline = time.monotonic() + STATUS_TIMEOUT
            while time.monotonic() < deadline:
                status, _, body = http("GET", proxy.endpoint + "/clusters/" + state["cluster"], hdr)
                if status == 200 and body.get("status") == "CREATE_COMPLETE":
                    return
                time.sleep(1)
            raise CheckFailed("the cluster did not complete: %s" % body)

        rep.check("project A's member creates sky-tpl and sky-cluster through the API (CREATE_COMPLETE)",
                  api_objects)

        first = len(proxy.entries)  # what the console asks for, from here on
        browser = Browser(sky.base, out, "skyline", out / "downloads")
        b = browser

        def step(description: str, fn: Any) -> None:
            failed = rep.failed
            rep.check(description, fn)
            shot = b.shot(description[:50])
            if rep.failed != failed:
                print("    screenshot: %s" % shot, flush=True)

        def login() -> None:
            # Skyline 9.0.0's login form offers the domains GET /api/v1/contrib/domains lists, and
            # that needs a session already (it is commented out of the apiserver's unauthenticated
            # paths), so the form's Domain select stays empty. The console's own login call is
            # made directly, and its session cookies handed to the browser.
            req = urllib.request.Request(
                sky.base + "/api/openstack/skyline/api/v1/login", method="POST",
                data=json.dumps({"region": REGION, "domain": "Default", "username": "a-member",
                                 "password": PASSWORD}).encode(),
                headers={"Content-Type": "application/json"})
            try:
                with NO_PROXY_OPENER.open(req, timeout=30) as r:
                    cookies = r.headers.get_all("Set-Cookie") or []
            except urllib.error.HTTPError as e:
                raise CheckFailed("POST /api/v1/login: %d %s" % (e.code, e.read()[:300]))
            jar = {}
            for header in cookies:
                name, _, rest = header.partition("=")
                jar[name.strip()] = rest.split(";")[0].strip('"')
            if "session" not in jar:
                raise CheckFailed("no session cookie in %s" % cookies)
            b.driver.get(sky.base + "/auth/login")
            jar["lang"] = "en"  # the console's language (its default is Chinese)
            for name, value in jar.items():
                b.driver.add_cookie({"name": name, "value": value, "path": "/"})
            b.driver.get(sky.base + "/base/overview")
            b.wait("the console after login", lambda: "/auth/login" not in b.driver.current_url)

        step("log in to the console as project A's member", login)

        def templates() -> None:
            b.driver.get(sky.base + "/container-infra/cluster-template")
            b.wait("sky-tpl in the cluster templates list", lambda: "sky-tpl" in b.text())
            b.driver.get(sky.base + "/container-infra/cluster-template/detail/" + state.get("template", "x"))
            b.wait("the template's details", lambda: "sky-tpl" in b.text() and "fedora-coreos-40" in b.text())

        step("Container Infra > Cluster Templates lists sky-tpl; its details page", templates)

        def clusters() -> None:
            b.driver.get(sky.base + "/container-infra/clusters")
            b.wait("sky-cluster in the clusters list", lambda: "sky-cluster" in b.text())
            b.wait("its status", lambda: re.search(r"CREATE_COMPLETE|Create Complete", b.text(), re.I))
            b.driver.get(sky.base + "/container-infra/clusters/detail/" + state.get("cluster", "x"))
            b.wait("the cluster's details", lambda: "sky-cluster" in b.text() and "sky-tpl" in b.text())

        step("Container Infra > Clusters lists sky-cluster (CREATE_COMPLETE); its details page", clusters)

        magnum = [e for e in proxy.entries[first:] if e["path"].startswith("/v1/")]
        print("# Fleetyard answered the console through nginx: %s" % ", ".join(sorted({
            "%s %s %d" % (e["method"], re.sub(r"[0-9a-f-]{36}", "{id}", e["path"].split("?")[0]), e["status"])
            for e in magnum})), flush=True)
    except OutOfTime as e:
        rep.fail("the check finishes within --timeout", str(e))
    finally:
        signal.alarm(0)
        if browser is not None:
            browser.quit()
            if rep.failed and browser.console:
                (out / "console.log").write_text("\n".join(browser.console) + "\n")
        if rep.failed:
            if sky is not None:
                print(sky.log_tail(), flush=True)
                for path in sky.logs:
                    if path.exists():
                        shutil.copyfile(path, out / path.name)
            if srv is not None and srv.stderr_path.exists():
                shutil.copyfile(srv.stderr_path, out / "fleetyard.stderr")
        if sky is not None:
            sky.stop()
        if srv is not None:
            srv.stop()
        if proxy is not None:
            proxy.stop()
        standin.stop()
        ks.stop()
        shutil.rmtree(root, ignore_errors=True)
        if rep.failed or args.keep:
            print("# screenshots and logs: %s" % out, flush=True)
        else:
            shutil.rmtree(out, ignore_errors=True)
        print("# whole check %.1f s" % (time.monotonic() - began), flush=True)
        print("skyline-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
