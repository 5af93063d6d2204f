#!/usr/bin/env python3
"""The real OpenStack dashboard against Fleetyard: Horizon + magnum-ui in headless Chromium.

Bootstraps Keystone (.tox/keystone, as tools/keystone_check.py does: SQLite, fernet tokens,
gunicorn), creates projects A and B with a reader, a member and an admin each, starts
`fleetyard serve` with `auth_strategy = keystone` behind a logging proxy, a read-only stand-in
for Nova, Glance and Neutron (tools/horizon_standin.py: Horizon's create forms read flavors,
keypairs, availability zones, images and networks), registers all of them in Keystone's catalog,
and serves Horizon 26 with magnum-ui 19 (.tox/horizon) under gunicorn (one worker, sessions in
local memory, no memcached). Then Debian's headless Chromium, driven by selenium, works the
Container Infra panels:

* as project A's member: create a cluster template with the wizard, show and update it; create
  a cluster, wait for CREATE_COMPLETE, show it, resize it to 3 nodes, Show Certificate (the CA
  file downloaded is the cluster's), Rotate Cluster Credentials, Get Cluster Config (the
  downloaded kubeconfig's CA is the cluster's, its client certificate verifies against it and
  its key matches); delete the cluster and the template;
* as project A's reader: the template wizard's submit is refused with Horizon's error toast
  and nothing is created;
* as an admin: the clusters panel lists the cluster, and Admin > Container Infra > Quotas
  creates a quota for project B.

Every step prints `ok - ...` or `FAIL - ...`; the last line is
`horizon-check: N passed, N failed`, and the exit status is 1 when anything failed. A failed
step leaves a screenshot and the page's HTML under --out; when anything failed --out also gets
the logs of Keystone, Fleetyard, Horizon, the requests Fleetyard answered (one JSON line each)
and the browser's console. The whole run is bounded by --timeout; every process it starts is
killed at exit.

Run it through `./tox.sh horizon`, or by hand:

    .tox/horizon/bin/python tools/horizon_check.py --bin target/debug/fleetyard \\
        --keystone-venv .tox/keystone --out target/horizon-check
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import NO_PROXY_OPENER, CheckFailed, Report, Server, free_port, indent, tail  # noqa: E402
from horizon_standin import StandIn  # noqa: E402
from keystone_check import (  # noqa: E402  (Keystone as the keystone env runs it)
    ADMIN_PASSWORD,
    PASSWORD,
    REGION,
    Keystone,
    admin_connection,
    create_identities,
    fleetyard_config,
    http,
    issue_token,
)

HORIZON_START_TIMEOUT = 120  # seconds for /auth/login/ to answer 200
STATIC_TIMEOUT = 300  # seconds for collectstatic / compress
WAIT = 30  # seconds for an element, a toast or a page
STATUS_TIMEOUT = 90  # seconds for a cluster to reach a status
DOWNLOAD_TIMEOUT = 30  # seconds for a download to appear
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TEMPLATE = "ui-tpl"
CLUSTER = "ui-cluster"

# Horizon reads everything specific to this run from the environment (HZ_*), so the file is
# the same for every run and the offline-compressed static files stay valid.
LOCAL_SETTINGS = """\
# Written by tools/horizon_check.py (Fleetyard's `./tox.sh horizon`): one gunicorn worker,
# sessions in local memory, no memcached; the run's URLs come from the environment.
import os

DEBUG = False
SECRET_KEY = "fleetyard-horizon-check-only"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
OPENSTACK_KEYSTONE_URL = os.environ.get("HZ_KEYSTONE_URL", "http://127.0.0.1:5000/v3")
OPENSTACK_KEYSTONE_DEFAULT_ROLE = "member"
OPENSTACK_KEYSTONE_DEFAULT_DOMAIN = "Default"
SESSION_ENGINE = "django.contrib.sessions.backends.cache"
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
STATIC_ROOT = os.environ.get("HZ_STATIC_ROOT", "/tmp/horizon-static")
COMPRESS_ENABLED = True
COMPRESS_OFFLINE = True
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {
        "magnumclient": {"handlers": ["stderr"], "level": "DEBUG", "propagate": False},
        "magnum_ui": {"handlers": ["stderr"], "level": "DEBUG", "propagate": False},
        "horizon": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "openstack_dashboard": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "django.request": {"handlers": ["stderr"], "level": "ERROR", "propagate": False},
    },
}
"""

WSGI_MODULE = """\
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openstack_dashboard.settings")

from django.contrib.staticfiles.handlers import StaticFilesHandler  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

# Serves /static/ too, so no web server is needed in front of gunicorn.
application = StaticFilesHandler(get_wsgi_application())
"""


class HorizonError(Exception):
    """The browser shows Horizon's error page ("Something went wrong!")."""


class OutOfTime(BaseException):
    """The whole check ran past --timeout: not a step's failure (Report.check lets it through)."""


def kill_group(proc: subprocess.Popen | None) -> None:
    """SIGKILLs the process group this script created for `proc` and reaps it."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# --------------------------------------------------------------------------
# A logging proxy in front of Fleetyard (the catalog's container-infra endpoint)


class LoggingProxy:
    """Passes every request to Fleetyard unchanged (Host included, so its links name the proxy)
    and records method, path, microversion, request body, status and answer."""

    def __init__(self, upstream_port: int, log_path: Path):
        proxy = self
        self.upstream_port = upstream_port
        self.log_path = log_path
        self.entries: list[dict[str, Any]] = []
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive", "content-length",
                                                "transfer-encoding")}
                conn = HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
                except OSError as e:  # Fleetyard is gone: say so rather than drop the connection
                    data = json.dumps({"error": "the logging proxy could not reach Fleetyard: %s" % e}).encode()
                    status, reason, resp_headers = 502, "Bad Gateway", [("Content-Type", "application/json")]
                finally:
                    conn.close()
                proxy.record({
                    "method": self.command, "path": self.path,
                    "microversion": self.headers.get("OpenStack-API-Version"),
                    "token": "yes" if self.headers.get("X-Auth-Token") else "no",
                    "request": (body or b"").decode(errors="replace"),
                    "status": status, "answer": data.decode(errors="replace"),
                })
                self.send_response(status, reason)
                for k, v in resp_headers:
                    if k.lower() not in ("connection", "keep-alive", "content-length",
                                         "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.entries.append(entry)
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def requests(self, method: str, path_prefix: str) -> list[dict[str, Any]]:
        with self.lock:
            return [e for e in self.entries if e["method"] == method and e["path"].startswith(path_prefix)]

    @property
    def endpoint(self) -> str:
        return "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for serve_forever, forever if it never ran
            self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------------
# Horizon


class Horizon:
    """Horizon 26 + magnum-ui 19 from the venv this script runs in, under gunicorn."""

    def __init__(self, workdir: Path, keystone_url: str):
        import openstack_dashboard  # the venv's Horizon (imports nothing of Django's settings)
        import magnum_ui

        self.venv_bin = Path(sys.executable).parent
        self.dashboard = Path(openstack_dashboard.__file__).resolve().parent
        self.magnum_ui = Path(magnum_ui.__file__).resolve().parent
        self.static_root = Path(sys.prefix) / "horizon-static"
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log_path = self.dir / "horizon.log"
        self.proc: subprocess.Popen | None = None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.env.pop("PYTHONPATH", None)
        self.env.update({"HZ_KEYSTONE_URL": keystone_url, "HZ_STATIC_ROOT": str(self.static_root),
                         "DJANGO_SETTINGS_MODULE": "openstack_dashboard.settings"})
        self.timings: dict[str, float] = {}

    @property
    def base(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def configure(self) -> None:
        """local_settings.py and magnum-ui's enabled files (the documented way), then the static
        files, collected and compressed once per venv and settings."""
        local = self.dashboard / "local"
        (local / "local_settings.py").write_text(LOCAL_SETTINGS)
        enabled = local / "enabled"
        enabled.mkdir(exist_ok=True)
        for src in sorted((self.magnum_ui / "enabled").glob("_[12]37*.py")):
            shutil.copyfile(src, enabled / src.name)
        stamp = self.static_root / ".fleetyard-stamp"
        want = hashlib.sha256((LOCAL_SETTINGS + str(self.dashboard)).encode()).hexdigest()
        if stamp.exists() and stamp.read_text() == want:
            return
        started = time.monotonic()
        shutil.rmtree(self.static_root, ignore_errors=True)
        admin = str(self.venv_bin / "django-admin")
        for argv in ([admin, "collectstatic", "--noinput"], [admin, "compress", "--force"]):
            p = subprocess.run(argv, cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=STATIC_TIMEOUT)
            if p.returncode != 0:
                raise CheckFailed("%s exited %d\n%s" % (" ".join(argv[1:]), p.returncode,
                                                        indent(tail(p.stdout + p.stderr))))
        stamp.write_text(want)
        self.timings["static files"] = time.monotonic() - started

    def start(self) -> None:
        started = time.monotonic()
        (self.dir / "fleetyard_horizon_wsgi.py").write_text(WSGI_MODULE)
        self._log = open(self.log_path, "ab")
        argv = [str(self.venv_bin / "gunicorn"), "--bind", "127.0.0.1:%d" % self.port,
                "--workers", "1", "--threads", "8", "--no-control-socket", "--timeout", "120",
                "--chdir", str(self.dir), "--pythonpath", str(self.dir),
                "fleetyard_horizon_wsgi:application"]
        self.proc = subprocess.Popen(argv, cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log, start_new_session=True)
        deadline = time.monotonic() + HORIZON_START_TIMEOUT
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CheckFailed("gunicorn exited with code %d\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                with NO_PROXY_OPENER.open(self.base + "/auth/login/", timeout=10) as r:
                    if r.status == 200:
                        self.timings["start"] = time.monotonic() - started
                        return
                    last = "HTTP %d" % r.status
            except urllib.error.HTTPError as e:
                last = "HTTP %d" % e.code
            except OSError as e:
                last = str(e)
            time.sleep(0.5)
        raise CheckFailed("GET %s/auth/login/ did not answer 200 within %ds (last: %s)\n%s"
                          % (self.base, HORIZON_START_TIMEOUT, last, self.log_tail()))

    def stop(self) -> None:
        kill_group(self.proc)
        self.proc = None
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def log_tail(self) -> str:
        try:
            return "horizon log tail:\n" + indent(tail(self.log_path.read_text(errors="replace")))
        except OSError:
            return "(no horizon log)"


# --------------------------------------------------------------------------
# The browser


class Browser:
    """Headless Chromium through chromedriver, in a process group of its own."""

    def __init__(self, base: str, out: Path, label: str, downloads: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.base = base
        self.out = out
        self.label = label
        self.downloads = downloads
        self.downloads.mkdir(parents=True, exist_ok=True)
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--window-size=1400,1000", "--no-proxy-server", "--disable-gpu",
                    "--disable-extensions", "--no-first-run"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.service = Service(executable_path=CHROMEDRIVER, popen_kw={"start_new_session": True},
                               log_output=str(out / ("chromedriver-%s.log" % label)))
        self.driver = webdriver.Chrome(service=self.service, options=opts)
        self.driver.set_page_load_timeout(60)
        self.driver.set_script_timeout(WAIT)
        self.driver.execute_cdp_cmd("Page.setDownloadBehavior",
                                    {"behavior": "allow", "downloadPath": str(self.downloads)})
        self.console: list[str] = []

    def quit(self) -> None:
        try:
            self.save_console()
        except Exception:  # the browser may be gone already
            pass
        proc = getattr(self.service, "process", None)
        try:
            self.driver.quit()
        except Exception:
            pass
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # chromedriver's group: Chromium with it
            except (ProcessLookupError, PermissionError):
                pass

    def save_console(self) -> None:
        for entry in self.driver.get_log("browser"):
            self.console.append("%s %s" % (entry.get("level"), entry.get("message")))

    # ---- waiting ----

    def wait(self, what: str, predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            try:
                value = predicate()
                if value:
                    return value
            except HorizonError:
                raise
            except Exception as e:  # stale elements while Angular re-renders
                last_error = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            time.sleep(0.2)
        raise CheckFailed("timed out after %ds waiting for %s%s (page: %s)"
                          % (timeout, what, " (%s)" % last_error if last_error else "", self.driver.current_url))

    def settle(self) -> None:
        """Waits until Angular has no outstanding requests (where the page runs Angular)."""
        script = """
            var done = arguments[arguments.length - 1];
            try {
              var el = document.querySelector('[ng-app]') || document.body;
              var inj = window.angular && angular.element(el).injector();
              if (!inj) { done(true); return; }
              inj.get('$browser').notifyWhenNoOutstandingRequests(function () { done(true); });
            } catch (e) { done(true); }
        """
        try:
            self.driver.execute_async_script(script)
        except Exception:
            pass

    def go(self, path: str) -> None:
        self.driver.get(self.base + path)
        self.settle()

    def text(self) -> str:
        return self.driver.find_element("tag name", "body").text

    def shot(self, name: str) -> Path:
        path = self.out / ("%s-%s.png" % (self.label, re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")))
        try:
            self.driver.save_screenshot(str(path))
            path.with_suffix(".html").write_text(self.driver.page_source)
        except Exception:
            pass
        return path

    # ---- finding ----

    def find(self, css: str) -> list:
        return [e for e in self.driver.find_elements("css selector", css) if e.is_displayed()]

    def xpath(self, xp: str) -> list:
        return [e for e in self.driver.find_elements("xpath", xp) if e.is_displayed()]

    def click_button(self, label: str) -> None:
        xp = "//button[contains(normalize-space(.), %s)] | //a[contains(normalize-space(.), %s)]" % (
            xq(label), xq(label))
        self.wait("a button %r" % label, lambda: self.xpath(xp))[0].click()

    def toasts(self) -> list[str]:
        texts = []
        for e in self.driver.find_elements("css selector", "[ng-repeat='toast in toast.get()'] .alert"):
            t = " ".join(e.text.split())
            if t and t not in texts:
                texts.append(t)
        return texts

    def wait_toast(self, contains: str, timeout: float = WAIT) -> str:
        def found() -> str | None:
            for t in self.toasts():
                if contains in t:
                    return t
            return None
        try:
            return self.wait("a toast containing %r" % contains, found, timeout)
        except CheckFailed as e:
            raise CheckFailed("%s; toasts shown: %s" % (e, self.toasts() or "none"))

    def dismiss_toasts(self) -> None:
        for e in self.find("[ng-repeat='toast in toast.get()'] .alert a.close, "
                           "[ng-repeat='toast in toast.get()'] .alert button.close"):
            try:
                e.click()
            except Exception:
                pass

    def rows(self) -> list:
        return self.find("table tbody tr[ng-repeat-start], table tbody tr[ng-repeat]")

    def row(self, contains: str, timeout: float = WAIT):
        return self.wait("a table row with %r" % contains,
                         lambda: next((r for r in self.rows() if contains in r.text), None), timeout)

    def row_action(self, contains: str, action: str) -> None:
        row = self.row(contains)
        xp = ".//*[self::a or self::button][normalize-space(.)=%s]" % xq(action)
        direct = [e for e in row.find_elements("xpath", xp) if e.is_displayed()]
        if not direct:
            toggles = [e for e in row.find_elements("css selector", "button.dropdown-toggle") if e.is_displayed()]
            if not toggles:
                raise CheckFailed("no action menu in the row %r" % row.text)
            toggles[0].click()
            direct = self.wait("the row action %r" % action,
                               lambda: [e for e in row.find_elements("xpath", xp) if e.is_displayed()])
        direct[0].click()

    # ---- wizards and dialogs ----

    def modal(self):
        return self.wait("a dialog", lambda: (self.find(".modal-dialog") or [None])[-1])

    def tab(self, title: str) -> None:
        xp = "//div[@id='wizard-side-nav']//li[.//span[normalize-space(.)=%s]]/a" % xq(title)
        self.wait("the wizard tab %r" % title, lambda: self.xpath(xp))[0].click()

    def field(self, name: str):
        return self.wait("the field %r" % name, lambda: (self.find(".modal-dialog [name='%s']" % name) or [None])[0])

    def fill(self, name: str, value: str) -> None:
        e = self.field(name)
        e.clear()
        e.send_keys(value)

    def choose(self, name: str, contains: str) -> None:
        from selenium.webdriver.support.ui import Select

        def option():
            sel = Select(self.field(name))
            for o in sel.options:
                if contains in o.text:
                    return sel, o.text
            return None
        sel, text = self.wait("an option %r in %r" % (contains, name), option)
        sel.select_by_visible_text(text)

    def submit(self) -> None:
        css = ".modal-dialog button[ng-click^='ctrl.submit'], .modal-dialog button.btn-primary[type='submit']"

        def enabled():
            buttons = [b for b in self.find(css) if b.is_enabled()]
            return buttons[0] if buttons else None
        try:
            button = self.wait("an enabled Submit button", enabled)
        except CheckFailed as e:
            invalid = [x.get_attribute("name") or x.get_attribute("id")
                       for x in self.driver.find_elements("css selector", ".modal-dialog .ng-invalid")]
            raise CheckFailed("%s; invalid fields: %s" % (e, [i for i in invalid if i]))
        button.click()

    def confirm(self) -> None:
        css = ".modal-dialog .modal-footer button.btn-danger, .modal-dialog .modal-footer button.btn-primary"
        self.wait("the dialog's confirm button", lambda: self.find(css))[-1].click()

    def no_modal(self) -> None:
        self.wait("the dialog to close", lambda: not self.find(".modal-dialog"))

    # ---- whole interactions ----

    def login(self, user: str, password: str) -> None:
        self.go("/auth/login/")
        self.wait("the login form", lambda: self.find("#id_username"))
        self.driver.find_element("id", "id_username").send_keys(user)
        self.driver.find_element("id", "id_password").send_keys(password)
        self.driver.find_element("id", "loginBtn").click()
        self.wait("the login to leave /auth/login", lambda: "/auth/login" not in self.driver.current_url)
        if "/auth/" in self.driver.current_url:
            raise CheckFailed("login as %s ended at %s: %s" % (user, self.driver.current_url, self.text()[:300]))

    def downloaded(self, suffix: str, before: set[str]) -> Path:
        def done() -> Path | None:
            for p in self.downloads.iterdir():
                if p.name.endswith(suffix) and p.name not in before and p.stat().st_size > 0:
                    return p
            if "Something went wrong!" in self.text():  # Horizon's error page: no download coming
                raise HorizonError()
            return None
        try:
            return self.wait("a downloaded *%s in %s" % (suffix, self.downloads), done, DOWNLOAD_TIMEOUT)
        except (CheckFailed, HorizonError) as e:
            what = "Horizon answered with its error page" if isinstance(e, HorizonError) else str(e)
            raise CheckFailed("no *%s downloaded: %s (%s); the page says: %s"
                              % (suffix, what, self.driver.current_url, " ".join(self.text().split())[:400]))


def xq(text: str) -> str:
    """An XPath string literal."""
    if "'" not in text:
        return "'%s'" % text
    return "concat(%s)" % ", \"'\", ".join("'%s'" % p for p in text.split("'"))


# --------------------------------------------------------------------------
# Checks


class Scenario:
    def __init__(self, rep: Report, hz: Horizon, ks: Keystone, proxy: LoggingProxy, out: Path,
                 projects: dict[str, str]):
        self.rep = rep
        self.hz = hz
        self.ks = ks
        self.proxy = proxy
        self.out = out
        self.projects = projects
        self.state: dict[str, str] = {}
        self.browser: Browser | None = None
        self.browsers: list[Browser] = []
        self.shots = 0

    def step(self, description: str, fn: Callable[[], Any]) -> Any:
        failed = self.rep.failed
        value = self.rep.check(description, fn)
        if self.browser is not None:
            self.shots += 1
            shot = self.browser.shot("%02d-%s" % (self.shots, description[:60]))
            if self.rep.failed != failed:
                print("    screenshot: %s" % shot, flush=True)
        return value

    def open(self, label: str) -> Browser:
        if self.browser is not None:
            self.browser.quit()
        self.browser = Browser(self.hz.base, self.out, label, self.out / ("downloads-" + label))
        self.browsers.append(self.browser)
        return self.browser

    def api(self, user: str, project: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        token = issue_token(self.ks, user, project, ADMIN_PASSWORD if user == "admin" else PASSWORD)
        status, _, answer = http(method, self.proxy.endpoint + path, {"X-Auth-Token": token}, body)
        return status, answer

    # ---- the template wizard ----

    def fill_template(self, b: Browser, name: str) -> None:
        b.go("/project/cluster_templates/")
        b.click_button("Create Cluster Template")
        b.modal()
        b.fill("name", name)
        b.choose("coe", "Kubernetes")
        b.tab("Node Spec")
        b.choose("image_id", "fedora-coreos-40")
        b.choose("keypair_id", "default")
        b.choose("flavor_id", "m1.medium")
        b.choose("master_flavor_id", "m1.medium")
        b.tab("Network")
        b.choose("network_driver", "Flannel")
        b.choose("external_network_id", "public")
        b.choose("fixed_network", "private")
        b.choose("fixed_subnet", "private-subnet")
        b.fill("dns_nameserver", "8.8.8.8")
        b.tab("Labels")
        b.fill("labels", "kube_tag=v1.30.1")

    def member(self) -> None:
        b = self.open("member")
        s = self.state
        self.step("login as project A's member (a-member)", lambda: b.login("a-member", PASSWORD))

        def templates_panel() -> None:
            b.go("/project/cluster_templates/")
            b.wait("the Cluster Templates table", lambda: "Displaying" in b.text() or b.rows())
            body = b.text()
            for needed in ("Container Infra", "Clusters", "Cluster Templates"):
                if needed not in body:
                    raise CheckFailed("the page lacks %r: %s" % (needed, body[:300]))

        self.step("Project > Container Infra > Cluster Templates is listed (GET /v1/clustertemplates/detail)",
                  templates_panel)

        def create_template() -> None:
            self.fill_template(b, TEMPLATE)
            b.submit()
            toast = b.wait_toast("was successfully created")
            m = re.search(r"Cluster template (\S+) was successfully created", toast)
            if not m:
                raise CheckFailed("unexpected toast %r" % toast)
            s["template"] = m.group(1)
            b.row(TEMPLATE)
            status, body = self.api("a-member", "proj-a", "GET", "/clustertemplates/" + s["template"])
            want = {"name": TEMPLATE, "coe": "kubernetes", "image_id": "fedora-coreos-40",
                    "keypair_id": "default", "flavor_id": "m1.medium", "network_driver": "flannel",
                    "dns_nameserver": "8.8.8.8", "project_id": self.projects["proj-a"]}
            got = {k: body.get(k) for k in want} if isinstance(body, dict) else body
            if status != 200 or got != want:
                raise CheckFailed("GET the template: %d %s, expected %s" % (status, got, want))
            if (body.get("labels") or {}).get("kube_tag") != "v1.30.1":
                raise CheckFailed("the template's labels: %r" % body.get("labels"))

        self.step("Create Cluster Template (the wizard, four tabs): success toast, listed, stored as entered",
                  create_template)

        def show_template() -> None:
            b.go("/ngdetails/OS::Magnum::ClusterTemplate/" + s["template"])
            b.wait("the template's details", lambda: TEMPLATE in b.text() and "fedora-coreos-40" in b.text())

        self.step("the template's details page", show_template)

        def update_template() -> None:
            b.go("/project/cluster_templates/")
            b.row_action(TEMPLATE, "Update Cluster Template")
            b.modal()
            b.tab("Network")
            b.fill("dns_nameserver", "1.1.1.1")
            b.submit()
            b.wait_toast("was successfully updated")
            status, body = self.api("a-member", "proj-a", "GET", "/clustertemplates/" + s["template"])
            if status != 200 or body.get("dns_nameserver") != "1.1.1.1":
                raise CheckFailed("after the update: %d %s" % (status, body))

        self.step("Update Cluster Template (DNS 1.1.1.1): success toast, stored", update_template)

        def create_cluster() -> None:
            b.dismiss_toasts()
            b.go("/project/clusters/")
            b.click_button("Create Cluster")
            b.modal()
            b.fill("name", CLUSTER)
            b.choose("cluster_template_id", TEMPLATE)
            b.wait("the availability zone", lambda: b.field("availability_zone").get_attribute("value"))
            b.tab("Size")
            b.fill("node_count", "2")
            b.submit()
            toast = b.wait_toast("was successfully created")
            m = re.search(r"Cluster (\S+) was successfully created", toast)
            if not m:
                raise CheckFailed("unexpected toast %r" % toast)
            s["cluster"] = m.group(1)

        self.step("Create Cluster (the wizard) from the template: success toast", create_cluster)

        def wait_status(status: str, node_count: int) -> dict:
            deadline = time.monotonic() + STATUS_TIMEOUT
            body: Any = None
            while time.monotonic() < deadline:
                b.go("/project/clusters/")
                try:
                    row = b.row(CLUSTER, timeout=5)
                    if status in row.text:
                        code, body = self.api("a-member", "proj-a", "GET", "/clusters/" + s["cluster"])
                        if code == 200 and body.get("node_count") == node_count:
                            return body
                except CheckFailed:
                    pass
                time.sleep(2)
            raise CheckFailed("the row never showed %s with %d nodes (API: %s)" % (status, node_count, body))

        def complete() -> None:
            body = wait_status("CREATE_COMPLETE", 2)
            s["api_address"] = body.get("api_address") or ""
            if not s["api_address"]:
                raise CheckFailed("no api_address: %s" % body)

        self.step("the clusters table shows CREATE_COMPLETE (reloaded until then)", complete)

        def show_cluster() -> None:
            b.go("/ngdetails/OS::Magnum::Cluster/" + s["cluster"])
            b.wait("the cluster's details", lambda: CLUSTER in b.text() and "CREATE_COMPLETE" in b.text())
            host = re.sub(r"^https?://", "", s["api_address"]).split(":")[0]
            b.wait("the API address on the page", lambda: host in b.text())

        self.step("the cluster's details page (status, API address)", show_cluster)

        def resize() -> None:
            b.go("/project/clusters/")
            b.row_action(CLUSTER, "Resize Cluster")
            b.modal()
            b.fill("node_count", "3")
            b.submit()
            b.wait_toast("Cluster is being resized.")
            wait_status("UPDATE_COMPLETE", 3)

        self.step("Resize Cluster to 3 nodes: toast, then UPDATE_COMPLETE with node_count 3", resize)

        def ca_of_cluster() -> str:
            status, body = self.api("a-member", "proj-a", "GET", "/certificates/" + s["cluster"])
            if status != 200 or "BEGIN CERTIFICATE" not in str(body.get("pem")):
                raise CheckFailed("GET /v1/certificates/%s: %d %s" % (s["cluster"], status, body))
            return body["pem"]

        def show_certificate() -> None:
            before = {p.name for p in b.downloads.iterdir()}
            b.go("/project/clusters/")
            b.row_action(CLUSTER, "Show Certificate")
            path = b.downloaded("_ca.pem", before)
            if path.read_text().strip() != ca_of_cluster().strip():
                raise CheckFailed("%s is not the cluster's CA" % path.name)

        self.step("Show Certificate downloads the cluster's CA", show_certificate)

        def rotate_credentials() -> None:
            b.dismiss_toasts()
            b.go("/project/clusters/")
            b.row_action(CLUSTER, "Rotate Cluster Credentials")
            b.confirm()
            b.wait_toast("Credentials successfully rotated for cluster")
            if not self.proxy.requests("PATCH", "/v1/credentials/" + s["cluster"]):
                raise CheckFailed("Fleetyard saw no PATCH /v1/credentials/%s" % s["cluster"])

        self.step("Rotate Cluster Credentials: confirmed, success toast", rotate_credentials)

        def cluster_config() -> None:
            before = {p.name for p in b.downloads.iterdir()}
            b.go("/project/clusters/")
            b.row_action(CLUSTER, "Get Cluster Config")
            path = b.downloaded(".kubeconfig", before)
            verify_kubeconfig(path.read_text(), ca_of_cluster(), s["api_address"])
            signed = [e for e in self.proxy.requests("POST", "/v1/certificates") if e["status"] == 201]
            if not signed:
                raise CheckFailed("Fleetyard signed no CSR")

        self.step("Get Cluster Config as the member: the kubeconfig's CA is the cluster's, its client "
                  "certificate (CN=admin, O=system:masters) verifies against it and matches its key",
                  cluster_config)

    def reader(self) -> None:
        b = self.open("reader")
        self.step("login as project A's reader (a-reader)", lambda: b.login("a-reader", PASSWORD))

        def refused() -> None:
            before = len(self.proxy.requests("POST", "/v1/clustertemplates"))
            self.fill_template(b, "reader-tpl")
            b.submit()
            b.wait_toast("Error: Unable to create cluster template.")
            posts = self.proxy.requests("POST", "/v1/clustertemplates")[before:]
            if not posts or posts[-1]["status"] != 403 or "clustertemplate:create" not in posts[-1]["answer"]:
                raise CheckFailed("Fleetyard's answer was not the policy's 403: %s" % posts)
            status, body = self.api("a-member", "proj-a", "GET", "/clustertemplates")
            if status != 200 or any(t.get("name") == "reader-tpl" for t in body.get("clustertemplates", [])):
                raise CheckFailed("a template was created: %s" % body)

        self.step("the reader's Create Cluster Template is refused: toast \"Error: Unable to create cluster "
                  "template.\" (Fleetyard: 403 clustertemplate:create), nothing created", refused)

    def admin(self) -> None:
        b = self.open("admin")
        self.step("login as the cloud admin", lambda: b.login("admin", ADMIN_PASSWORD))

        def quota() -> None:
            b.go("/admin/container_infra/quotas/")
            b.wait("the Quotas table", lambda: "Displaying" in b.text() or b.rows())
            b.click_button("Create Quota")
            b.modal()
            b.choose("project_id", "proj-b")
            b.choose("resource", "Cluster")
            b.fill("hard_limit", "7")
            b.submit()
            b.wait_toast("was successfully created")
            b.no_modal()
            b.go("/admin/container_infra/quotas/")
            b.row(self.projects["proj-b"])
            status, body = self.api("admin", "admin", "GET", "/quotas/%s/Cluster" % self.projects["proj-b"])
            if status != 200 or body.get("hard_limit") != 7:
                raise CheckFailed("GET the quota: %d %s" % (status, body))

        self.step("Admin > Container Infra > Quotas: Create Quota (project B, Cluster, 7): toast, listed, stored",
                  quota)

    def cleanup_as_member(self) -> None:
        b = self.open("member-end")
        s = self.state
        self.step("login as project A's member again", lambda: b.login("a-member", PASSWORD))

        def delete_cluster() -> None:
            b.go("/project/clusters/")
            b.row_action(CLUSTER, "Delete Cluster")
            b.confirm()
            b.wait_toast("Deleted cluster: %s." % CLUSTER)
            deadline = time.monotonic() + STATUS_TIMEOUT
            while time.monotonic() < deadline:
                status, _ = self.api("a-member", "proj-a", "GET", "/clusters/" + s.get("cluster", CLUSTER))
                if status == 404:
                    break
                time.sleep(1)
            else:
                raise CheckFailed("the cluster is still there")
            b.go("/project/clusters/")
            b.wait("the row to go", lambda: not any(CLUSTER in r.text for r in b.rows()))

        self.step("Delete Cluster: toast, the cluster is gone", delete_cluster)

        def delete_template() -> None:
            b.dismiss_toasts()
            b.go("/project/cluster_templates/")
            b.row_action(TEMPLATE, "Delete Cluster Template")
            b.confirm()
            b.wait_toast("Deleted cluster template: %s." % TEMPLATE)
            status, _ = self.api("a-member", "proj-a", "GET", "/clustertemplates/" + s.get("template", TEMPLATE))
            if status != 404:
                raise CheckFailed("the template is still there (%d)" % status)

        self.step("Delete Cluster Template: toast, the template is gone", delete_template)

    def close(self) -> None:
        if self.browser is not None:
            self.browser.quit()
            self.browser = None


def verify_kubeconfig(text: str, ca_pem: str, api_address: str) -> None:
    """The kubeconfig names the cluster's API, carries its CA, and a client certificate the CA
    signed whose public key is the included private key's."""
    import yaml
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    doc = yaml.safe_load(text)
    try:
        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        ca_data = base64.b64decode(cluster["certificate-authority-data"])
        cert_data = base64.b64decode(user["client-certificate-data"])
        key_data = base64.b64decode(user["client-key-data"])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise CheckFailed("not a kubeconfig with certificates (%s):\n%s" % (e, indent(text[:600])))
    if ca_data.decode().strip() != ca_pem.strip():
        raise CheckFailed("the kubeconfig's CA is not the cluster's")
    if cluster.get("server") != api_address:
        raise CheckFailed("the kubeconfig's server is %r, the cluster's api_address %r"
                          % (cluster.get("server"), api_address))
    ca = x509.load_pem_x509_certificate(ca_data)
    cert = x509.load_pem_x509_certificate(cert_data)
    try:
        cert.verify_directly_issued_by(ca)
    except Exception as e:  # InvalidSignature, ValueError, TypeError
        raise CheckFailed("the client certificate does not verify against the cluster's CA: %r" % e)
    key = serialization.load_pem_private_key(key_data, password=None)
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if key.public_key().public_bytes(der, pub) != cert.public_key().public_bytes(der, pub):
        raise CheckFailed("the client key is not the certificate's")
    subject = cert.subject.rfc4514_string()
    if "O=system:masters" not in subject or "CN=admin" not in subject:
        raise CheckFailed("unexpected client certificate subject %s" % subject)


# --------------------------------------------------------------------------


def register_catalog(ks: Keystone, container_infra: str, standin: StandIn) -> None:
    """container-infra (Fleetyard behind the logging proxy) and the stand-in's three services."""
    conn = admin_connection(ks)
    ident = conn.identity
    services = [("magnum", "container-infra", container_infra),
                ("nova", "compute", standin.base + "/compute/v2.1"),
                ("glance", "image", standin.base + "/image"),
                ("neutron", "network", standin.base + "/network")]
    for name, kind, url in services:
        svc = ident.create_service(name=name, type=kind, description="%s for the horizon check" % kind)
        for interface in ("public", "internal"):
            ident.create_endpoint(service_id=svc.id, interface=interface, url=url, region_id=REGION)
    conn.close()


def keep_logs(out: Path, ks: Keystone, srv: Server | None, hz: Horizon | None, browsers: list[Browser]) -> None:
    for src, name in ((ks.log_path, "keystone.log"),
                      (srv.stderr_path if srv else None, "fleetyard.stderr"),
                      (srv.stdout_path if srv else None, "fleetyard.stdout"),
                      (hz.log_path if hz else None, "horizon.log")):
        if src is not None and Path(src).exists():
            shutil.copyfile(src, out / name)
    for b in browsers:
        if b.console:
            (out / ("console-%s.log" % b.label)).write_text("\n".join(b.console) + "\n")


def show_signing(proxy: LoggingProxy) -> None:
    """Prints the CSR signing Get Cluster Config made (the request and Fleetyard's answer)."""
    for e in proxy.requests("POST", "/v1/certificates")[:1]:
        print("# Get Cluster Config's CSR signing: POST %s (%s) -> %d" % (e["path"], e["microversion"], e["status"]))
        print(textwrap.indent("request: " + e["request"][:400] + ("..." if len(e["request"]) > 400 else ""), "#   "))
        print(textwrap.indent("answer:  " + e["answer"][:400] + ("..." if len(e["answer"]) > 400 else ""), "#   "))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keystone-venv", default=".tox/keystone", help="virtualenv with keystone and gunicorn")
    ap.add_argument("--out", default="target/horizon-check",
                    help="directory for screenshots and logs (emptied first; left empty when all passed)")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("HORIZON_CHECK_TIMEOUT", "900")),
                    help="seconds the whole check may take (default 900, HORIZON_CHECK_TIMEOUT)")
    ap.add_argument("--keep", action="store_true", help="keep the screenshots and logs when all passed")
    ap.add_argument("--fleetyard-policy", metavar="FILE",
                    help="an operator's policy file for Fleetyard ([oslo_policy] policy_file), to see how "
                         "it shows in Horizon (a rule that refuses a step makes that step fail)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    ks_venv = Path(os.path.abspath(args.keystone_venv))
    venv_bin = Path(sys.executable).parent
    for need, what in ((binary, "the fleetyard binary"),
                       (str(ks_venv / "bin" / "keystone-manage"), "keystone-manage (keystone venv)"),
                       (str(venv_bin / "gunicorn"), "gunicorn (horizon venv)"),
                       (CHROMIUM, "Debian's chromium"), (CHROMEDRIVER, "Debian's chromium-driver")):
        if not os.access(need, os.X_OK):
            print("horizon-check: %s is missing: %s" % (what, need), file=sys.stderr)
            print("horizon-check: 0 passed, 1 failed")
            return 1

    out = Path(os.path.abspath(args.out))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    def out_of_time(signum: int, frame: Any) -> None:
        raise OutOfTime("the whole check ran past --timeout %d s" % args.timeout)

    # SIGTERM and the overall timeout still stop every process: the finally blocks run.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.timeout)
    for var in ("no_proxy", "NO_PROXY"):
        os.environ[var] = ",".join(filter(None, [os.environ.get(var), "127.0.0.1", "localhost"]))

    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="fleetyard-horizon-check-"))
    rep = Report()
    ks = Keystone(ks_venv, root / "keystone")
    srv: Server | None = None
    hz: Horizon | None = None
    proxy: LoggingProxy | None = None
    standin = StandIn()
    scenario: Scenario | None = None
    try:
        rep.check("keystone-manage db_sync, fernet_setup, credential_setup, bootstrap", ks.bootstrap)
        if rep.failed:
            return 1
        rep.check("Keystone (gunicorn, one worker) answers GET /v3 on 127.0.0.1:%d" % ks.port, ks.start)
        if rep.failed:
            return 1
        projects = rep.check("projects service, proj-a, proj-b; the service user; readers, members, admins",
                             lambda: create_identities(ks))
        if projects is None:
            return 1

        workdir = root / "fleetyard"
        (workdir / "etc" / "fleetyard").mkdir(parents=True)
        (workdir / "etc" / "fleetyard" / "fleetyard.conf").write_text(fleetyard_config(ks))
        extra = {}
        if args.fleetyard_policy:
            extra["FLEETYARD__OSLO_POLICY__POLICY_FILE"] = os.path.abspath(args.fleetyard_policy)
        srv = Server(binary, workdir, "keystone", extra)
        proxy = LoggingProxy(srv.port, out / "fleetyard-requests.jsonl")
        proxy.start()
        standin.start()
        rep.check("catalog: container-infra %s (Fleetyard behind a logging proxy); compute, image, network "
                  "at the stand-in %s" % (proxy.endpoint, standin.base),
                  lambda: register_catalog(ks, proxy.endpoint, standin))
        rep.server = srv
        rep.check("fleetyard serve (auth_strategy = keystone) answers GET /healthcheck", srv.start)
        hz = Horizon(root / "horizon", ks.url)
        rep.check("Horizon 26 + magnum-ui 19: local_settings, enabled panels, static files collected and "
                  "compressed", hz.configure)
        if rep.failed:
            return 1
        rep.check("Horizon (gunicorn, one worker) answers GET /auth/login/", hz.start)
        if rep.failed:
            return 1

        scenario = Scenario(rep, hz, ks, proxy, out, projects)
        try:
            scenario.member()
            scenario.reader()
            scenario.admin()
            scenario.cleanup_as_member()
        finally:
            scenario.close()
        if srv.proc is not None and srv.proc.poll() is not None:
            rep.fail("fleetyard keeps running through the checks", "it exited with code %s" % srv.proc.returncode)
        if standin.unknown:
            print("# the stand-in answered 404/405 to: %s" % ", ".join(sorted(set(standin.unknown))), flush=True)
    except OutOfTime as e:
        rep.fail("the check finishes within --timeout", str(e))
    finally:
        signal.alarm(0)
        if scenario is not None:
            scenario.close()
        if proxy is not None:
            show_signing(proxy)
        if rep.failed:
            keep_logs(out, ks, srv, hz, scenario.browsers if scenario else [])
            if hz is not None:
                print(hz.log_tail(), flush=True)
        if hz is not None:
            hz.stop()
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
        timings = ", ".join("keystone %s %.1f s" % kv for kv in ks.timings.items())
        if hz is not None:
            timings += "".join(", horizon %s %.1f s" % kv for kv in hz.timings.items())
        print("# %s; whole check %.1f s" % (timings or "-", time.monotonic() - began), flush=True)
        print("horizon-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
