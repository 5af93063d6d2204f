#!/usr/bin/env python3
"""Skyline (skyline-apiserver + skyline-console 9.0.0) against Fleetyard, in headless Chromium.

Sets up Keystone, projects, Fleetyard (keystone mode, behind the logging proxy) and the
Nova/Glance/Neutron stand-in exactly as tools/horizon_check.py does, then runs Skyline the way
its install guide does: skyline.yaml in OS_CONFIG_DIR (SQLite), the alembic migration,
skyline-apiserver under gunicorn with uvicorn workers on a unix socket, and Debian's nginx
with the configuration `skyline-nginx-generator` writes from Keystone's catalog (the console's
static files, /api/openstack/skyline/ to the apiserver, /api/openstack/regionone/magnum/ to
Fleetyard). Project A's member makes a template and a cluster through the API; then headless
Chromium logs in to the console as that member and drives the Container Infra pages: the
cluster templates list and a template's details, the clusters list (CREATE_COMPLETE) and a
cluster's details; the Create Cluster Template form; the Create Cluster form to
CREATE_COMPLETE and the new cluster's details; the Resize row action; the Delete row actions
on the cluster and on the template. Every effect is checked through Fleetyard's /v1 as well.

Every step prints `ok - ...` or `FAIL - ...`, or `KNOWN SKYLINE PROBLEM - ...` with its evidence
where Skyline's console itself cannot do the step (counted apart; see docs/dashboards.rst); the
last line is `skyline-check: N passed, N failed, N known Skyline problems`. Screenshots and
logs of a failed run go to --out.

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
from horizon_standin import FLAVORS, StandIn  # noqa: E402
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


UI_TEMPLATE = "sky-ui-tpl"
UI_CLUSTER = "sky-ui-cluster"


class SkylineBroken(Exception):
    """A step Skyline's console itself cannot do; the message carries the evidence."""


def js_click(b: Browser, el: Any) -> None:
    b.driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", el)


def form_item(b: Browser, field: str) -> Any:
    """The visible form item of the field `field` (the console renders each in #form-item-col-<field>)."""
    items = b.find("[id='form-item-col-%s']" % field)
    return items[-1] if items else None


def form_input(b: Browser, field: str) -> Any:
    item = form_item(b, field)
    if item is None:
        return None
    inputs = [e for e in item.find_elements("css selector", "input") if e.is_displayed()]
    return inputs[0] if inputs else None


def xq(text: str) -> str:
    return "'%s'" % text if "'" not in text else '"%s"' % text


def type_into(b: Browser, el: Any, value: str) -> None:
    from selenium.webdriver.common.keys import Keys

    el.click()
    el.send_keys(Keys.CONTROL, "a")
    el.send_keys(Keys.BACKSPACE)
    el.send_keys(value)


def click_next(b: Browser) -> None:
    """The step form's Next button ("Next: <step>")."""
    el = b.wait("the Next button", lambda: next(iter(
        b.xpath("//button[starts-with(normalize-space(),'Next')][not(@disabled)]")), None), timeout=20)
    js_click(b, el)


def pick_row(b: Browser, field: str, contains: str) -> None:
    """Selects the row naming `contains` in the select-table of the form's field `field`."""
    def row() -> Any:
        item = form_item(b, field)
        if item is None:
            return None
        return next((r for r in item.find_elements("css selector", "tr.ant-table-row")
                     if r.is_displayed() and contains in r.text), None)

    r = b.wait("a row '%s' in the '%s' table" % (contains, field), row, timeout=30)
    pick = r.find_elements("css selector", "input[type=radio], input[type=checkbox]")
    js_click(b, pick[0] if pick else r)
    b.wait("the '%s' row selected" % contains, lambda: "ant-table-row-selected" in (row().get_attribute("class") or ""),
           timeout=10)


def row_action(b: Browser, name: str, action: str) -> None:
    """Runs the row action `action` of the list row naming `name` (a button, or under More)."""
    from selenium.webdriver.common.action_chains import ActionChains

    def row() -> Any:
        return next((r for r in b.find("tr.ant-table-row") if name in r.text.split("\n")
                     or re.search(r"(^|\s)%s(\s|$)" % re.escape(name), r.text)), None)

    r = b.wait("a row %s in the list" % name, row, timeout=30)
    direct = [e for e in r.find_elements("xpath", ".//button[normalize-space()=%s]" % xq(action)) if e.is_displayed()]
    if direct:
        js_click(b, direct[0])
        return
    more = [e for e in r.find_elements("xpath", ".//*[self::button or self::a][contains(normalize-space(),'More')]")
            if e.is_displayed()]
    if not more:
        raise CheckFailed("row %s has neither a '%s' button nor a More menu: %r" % (name, action, r.text))
    ActionChains(b.driver).move_to_element(more[0]).perform()
    js_click(b, more[0])
    item = b.wait("'%s' in the row's More menu" % action, lambda: next(iter(b.xpath(
        "//li[contains(@class,'ant-dropdown-menu-item')][normalize-space()=%s]" % xq(action))), None), timeout=15)
    if "disabled" in (item.get_attribute("class") or ""):
        raise CheckFailed("the row action '%s' is disabled for %s" % (action, name))
    inner = item.find_elements("xpath", ".//*[self::button or self::a or self::span][normalize-space()=%s]" % xq(action))
    js_click(b, inner[0] if inner else item)


def modal_ok(b: Browser) -> None:
    """Presses the primary button of the open modal (a form's OK or a confirm's Delete)."""
    button = b.wait("the modal's primary button", lambda: next(iter(reversed(
        b.find(".ant-modal .ant-btn-primary, .ant-modal-confirm .ant-btn-primary"))), None), timeout=20)
    js_click(b, button)
    b.wait("the modal to close", lambda: not b.find(".ant-modal .ant-btn-primary"), timeout=30)


def console_bundle_excerpt(venv: Path, marker: str, length: int = 330) -> str:
    for bundle in Path(venv).glob("lib/python3*/site-packages/skyline_console/static/container-infra.bundle.*.js"):
        text = bundle.read_text(errors="replace")
        at = text.find(marker)
        if at >= 0:
            return "%s: %s" % (bundle.name, text[at:at + length])
    return "(not found in the console's bundle)"


def ui_create_template(b: Browser, base: str) -> None:
    b.driver.get(base + "/container-infra/cluster-template/create")
    name = b.wait("the Create Cluster Template form", lambda: form_input(b, "name"))
    type_into(b, name, UI_TEMPLATE)
    from selenium.webdriver.common.keys import Keys

    coe = b.wait("the COE select", lambda: form_input(b, "coe"))
    coe.click()  # antd opens its select on a real mouse press
    coe.send_keys("Kubernetes")
    b.wait("the Kubernetes option", lambda: b.find(".ant-select-item-option[title='Kubernetes']"), timeout=15)
    coe.send_keys(Keys.ENTER)
    b.wait("Kubernetes chosen", lambda: "Kubernetes" in form_item(b, "coe").text, timeout=10)
    click_next(b)
    b.wait("the Node Spec step's Image table", lambda: form_item(b, "images"))
    time.sleep(3)  # the image list loads
    rows = [r.text for r in form_item(b, "images").find_elements("css selector", "tr.ant-table-row") if r.is_displayed()]
    if rows:
        raise CheckFailed("the Image table now lists %r: extend this check to finish the form" % rows)
    raise SkylineBroken(
        "the Image step (required) offers no image, so the form cannot go past Node Spec.\n"
        "Glance lists one: GET /image/v2/images (the stand-in) -> fedora-coreos-40, os_distro fedora-coreos, "
        "visibility public, owner admin; Magnum's Kubernetes driver wants os_distro fedora-coreos.\n"
        "skyline-console 9.0.0 keeps only images the current project owns whose os_distro is exactly "
        "'fedora' or 'coreos' (for kubernetes):\n  %s\n  %s"
        % (console_bundle_excerpt(Path(sys.prefix), "get imageList()", 300),
           console_bundle_excerpt(Path(sys.prefix), "get acceptedImageOs()", 240)))


def ui_step(b: Browser, rep: Report, proxy: LoggingProxy, known: list[str], description: str, fn: Any) -> None:
    """One console step: ok, FAIL (with the /v1 requests it made and the browser's console), or a
    known Skyline problem (not a failure; printed with its evidence)."""
    first = len(proxy.entries)
    try:
        fn()
    except OutOfTime:
        raise
    except SkylineBroken as e:
        known.append(description)
        shot = b.shot(description[:50])
        print("KNOWN SKYLINE PROBLEM - %s: %s\n    screenshot: %s" % (description, indent(str(e)).lstrip(), shot),
              flush=True)
        return
    except Exception as e:
        details = str(e) if isinstance(e, CheckFailed) else "%s: %s" % (type(e).__name__, e)
        asked = proxy.entries[first:]
        if asked:
            details += "\nwhat the step asked Fleetyard:\n" + indent("\n".join(
                "%s %s -> %d %s%s" % (x["method"], x["path"], x["status"],
                                      ("request %s -> " % x["request"][:300]) if x["request"] else "",
                                      x["answer"][:300]) for x in asked[-12:]))
        try:
            b.save_console()
            errors = [line for line in b.console if line.startswith("SEVERE")]
            if errors:
                details += "\nbrowser console errors:\n" + indent("\n".join(errors[-8:]))
        except Exception:
            pass
        rep.fail(description, details)
        print("    screenshot: %s" % b.shot(description[:50]), flush=True)
        return
    rep.passed += 1
    print("ok - %s" % description, flush=True)


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
    known: list[str] = []
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

        # ---- the console's forms and actions, each effect checked through /v1 as well ----

        def api_get(path: str) -> tuple[int, Any]:
            status, _, body = http("GET", proxy.endpoint + path, hdr)
            return status, body

        def api_wait(what: str, path: str, done: Any, timeout: float = STATUS_TIMEOUT) -> Any:
            deadline = time.monotonic() + timeout
            last: Any = None
            while time.monotonic() < deadline:
                last = api_get(path)
                if done(*last):
                    return last[1]
                time.sleep(1)
            raise CheckFailed("GET /v1%s: %s not reached within %ds (last: %s)" % (path, what, timeout,
                                                                                 str(last)[:400]))

        def cluster_named(name: str) -> dict[str, Any] | None:
            status, body = api_get("/clusters")
            if status != 200:
                raise CheckFailed("GET /v1/clusters: %d %s" % (status, body))
            return next((c for c in body.get("clusters", []) if c.get("name") == name), None)

        ui_step(b, rep, proxy, known, "console: Create Cluster Template form (name, COE, then the Node Spec "
                "step's Image table)", lambda: ui_create_template(b, sky.base))

        def create_cluster() -> None:
            b.driver.get(sky.base + "/container-infra/clusters/create")
            b.wait("the Create Cluster form", lambda: form_input(b, "name"))
            type_into(b, form_input(b, "name"), UI_CLUSTER)
            pick_row(b, "clusterTemplate", "sky-tpl")
            pick_row(b, "keypair", "default")
            click_next(b)
            b.wait("the Node Spec step", lambda: form_item(b, "masterFlavor"))
            pick_row(b, "masterFlavor", "m1.medium")
            pick_row(b, "flavor", "m1.medium")
            type_into(b, form_input(b, "node_count"), "2")
            for _ in range(3):  # Networks, Management, Labels
                if not b.xpath("//button[starts-with(normalize-space(),'Next')]"):
                    break
                click_next(b)
                time.sleep(0.5)
            before = b.shot("create-cluster-before-confirm")
            posts = len(proxy.requests("POST", "/v1/clusters"))
            confirm = b.wait("the Confirm button", lambda: next(iter(
                b.xpath("//button[normalize-space()='Confirm'][not(@disabled)]")), None))
            try:
                from selenium.webdriver.common.action_chains import ActionChains

                b.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", confirm)
                ActionChains(b.driver).move_to_element(confirm).click().perform()  # a real click, as a user's
            except Exception as e:  # something overlays the footer: the button's own click handler then
                print("    Confirm: a pointer click failed (%s); clicking it by script" % str(e).splitlines()[0],
                      flush=True)
                js_click(b, confirm)
            notes: list[str] = []
            seen: list[str] = []
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(proxy.requests("POST", "/v1/clusters")) == posts:
                seen.append(b.driver.current_url.replace(sky.base, ""))
                notes += [n.text for n in b.find(".ant-notification-notice, .ant-message-notice") if n.text not in notes]
                time.sleep(0.3)
            if len(proxy.requests("POST", "/v1/clusters")) == posts:
                b.save_console()
                raise SkylineBroken(
                    "Confirm on the last step (Labels) of a fully filled form sent no POST /v1/clusters within 20 s "
                    "(nothing reached Fleetyard); the console said %r and went to %s.\n"
                    "The form: name %s, template sky-tpl, keypair default, master and worker flavor m1.medium, "
                    "1 master, 2 workers, defaults elsewhere (screenshot before Confirm: %s).\n"
                    "Browser console errors: %s"
                    % (notes, sorted(set(seen)), UI_CLUSTER, before,
                       [line for line in b.console if line.startswith("SEVERE") and "system/users" not in line][-4:]))
            made = b.wait("a cluster named %s in GET /v1/clusters" % UI_CLUSTER, lambda: cluster_named(UI_CLUSTER),
                          timeout=60)
            state["ui-cluster"] = made["uuid"]
            body = api_wait("CREATE_COMPLETE", "/clusters/" + made["uuid"],
                            lambda status, body: status == 200 and body.get("status") == "CREATE_COMPLETE")
            medium = next(f["id"] for f in FLAVORS if f["name"] == "m1.medium")  # the console sends flavor ids
            said = {"cluster_template_id": state.get("template"), "node_count": 2, "master_count": 1,
                    "keypair": "default", "flavor_id": medium, "master_flavor_id": medium}
            differ = {k: (v, body.get(k)) for k, v in said.items() if body.get(k) != v}
            if differ:
                raise CheckFailed("the console's cluster is not what the form said (field: (form, /v1)): %s" % differ)

        ui_step(b, rep, proxy, known, "console: Create Cluster form (sky-tpl, keypair default, m1.medium, 2 "
                "workers) -> CREATE_COMPLETE in /v1", create_cluster)

        def show_cluster() -> None:
            b.driver.get(sky.base + "/container-infra/clusters/detail/" + state["ui-cluster"])
            b.wait("its details (name, template, CREATE_COMPLETE)",
                   lambda: UI_CLUSTER in b.text() and "sky-tpl" in b.text()
                   and re.search(r"CREATE_COMPLETE|Create Complete", b.text(), re.I))

        if "ui-cluster" in state:
            ui_step(b, rep, proxy, known, "console: the new cluster's details page", show_cluster)

        # Resize and delete the console's cluster, or sky-cluster (made through the API) where the
        # console could not make one.
        target = (state["ui-cluster"], UI_CLUSTER) if "ui-cluster" in state else (state.get("cluster", "x"), "sky-cluster")

        def resize() -> None:
            b.driver.get(sky.base + "/container-infra/clusters")
            row_action(b, target[1], "Resize")
            box = b.wait("the Resize Cluster modal's Node Count", lambda: form_input(b, "node_count"))
            type_into(b, box, "3")
            asked = len(proxy.entries)
            button = b.wait("the modal's primary button", lambda: next(iter(reversed(b.find(".ant-modal .ant-btn-primary"))),
                                                                      None))
            js_click(b, button)
            sent = b.wait("POST .../actions/resize at Fleetyard", lambda: [
                e for e in proxy.entries[asked:] if e["method"] == "POST" and e["path"].endswith("/actions/resize")],
                timeout=30)[0]
            if sent["status"] == 406 and not sent["microversion"]:
                time.sleep(1)
                b.save_console()
                raise SkylineBroken(
                    "the console sends the resize without an OpenStack-API-Version header, so at the default "
                    "microversion 1.1; resize needs 1.7, and Magnum too answers 406 with an empty error entry "
                    "(magnum-api-contract.md: below 1.7 both actions => 406).\n"
                    "request: POST %s  body %s  (OpenStack-API-Version: none)\nanswer: %d %s\n"
                    "browser console: %s"
                    % (sent["path"], sent["request"], sent["status"], sent["answer"][:300],
                       [line for line in b.console if "resize" in line or "Uncaught" in line][-4:]))
            b.wait("the modal to close", lambda: not b.find(".ant-modal .ant-btn-primary"), timeout=30)
            body = api_wait("UPDATE_COMPLETE with node_count 3", "/clusters/" + target[0],
                            lambda status, body: status == 200 and body.get("status") == "UPDATE_COMPLETE"
                            and body.get("node_count") == 3)
            b.driver.get(sky.base + "/container-infra/clusters/detail/" + target[0])
            b.wait("UPDATE_COMPLETE on its details page",
                   lambda: re.search(r"UPDATE_COMPLETE|Update Complete", b.text(), re.I))
            print("    /v1 after the resize: status %s, node_count %s" % (body["status"], body["node_count"]),
                  flush=True)

        ui_step(b, rep, proxy, known, "console: Resize Cluster (%s) to 3 nodes -> UPDATE_COMPLETE, node_count 3 in "
                "/v1" % target[1], resize)

        def delete_cluster() -> None:
            b.driver.get(sky.base + "/container-infra/clusters")
            row_action(b, target[1], "Delete")
            modal_ok(b)
            api_wait("404 (deleted)", "/clusters/" + target[0], lambda status, body: status == 404)
            b.driver.get(sky.base + "/container-infra/clusters")
            b.wait("%s gone from the list" % target[1],
                   lambda: "Clusters" in b.text() and not re.search(r"(^|\s)%s(\s|$)" % re.escape(target[1]), b.text()))

        ui_step(b, rep, proxy, known, "console: Delete the cluster %s -> 404 in /v1, gone from the list" % target[1],
                delete_cluster)

        def api_delete_cluster() -> None:
            status, _, body = http("DELETE", proxy.endpoint + "/clusters/" + state["cluster"], hdr)
            if status not in (204, 404):
                raise CheckFailed("DELETE: %d %s" % (status, body))
            api_wait("404 (deleted)", "/clusters/" + state["cluster"], lambda status, body: status == 404)

        if "ui-cluster" in state:
            rep.check("project A's member deletes sky-cluster through the API (so sky-tpl is unused)",
                      api_delete_cluster)

        def delete_template() -> None:
            b.driver.get(sky.base + "/container-infra/cluster-template")
            row_action(b, "sky-tpl", "Delete")
            modal_ok(b)
            api_wait("404 (deleted)", "/clustertemplates/" + state["template"], lambda status, body: status == 404,
                     timeout=30)
            b.driver.get(sky.base + "/container-infra/cluster-template")
            b.wait("sky-tpl gone from the list", lambda: "Cluster Template" in b.text() and "sky-tpl" not in b.text())

        ui_step(b, rep, proxy, known, "console: Delete the template sky-tpl -> 404 in /v1, gone from the list",
                delete_template)

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
        if known:
            print("# known Skyline problems (not counted as failures): %s" % "; ".join(known), flush=True)
        print("skyline-check: %d passed, %d failed, %d known Skyline problems" % (rep.passed, rep.failed, len(known)),
              flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
