#!/usr/bin/env python3
"""Fleetyard against a REAL Keystone (`auth_strategy = keystone`).

Bootstraps Keystone (installed from PyPI into .tox/keystone) on SQLite with fernet tokens in a
temporary directory, serves it with gunicorn on a free 127.0.0.1 port, creates a service
project with Fleetyard's service user (roles `service` and `admin`), two projects A and B
with a reader, a member and an admin each, registers service type `container-infra` in the
catalog with the `openstack service create` / `endpoint create` recipe, and starts
`fleetyard serve` with `auth_strategy = keystone` and a `[keystone_authtoken]` section. Then
the real `openstack` CLI, with password auth from a clouds.yaml and no --os-endpoint, and
openstacksdk through the catalog, drive it: templates, clusters, node groups and federations
(clients/osc-plugin, installed into the clients venv), version discovery through a reverse
proxy serving Fleetyard under a path prefix (the catalog's internal endpoint), cross-project
404s, a reader's 403,
quotas for a project Keystone does not know refused with Magnum's 404, a token revoked in
Keystone refused once `token_cache_time` passes, the real kubectl with a Keystone token
against a second `fleetyard serve` over HTTPS (`[api] enabled_ssl`, a CA made here), and with
Keystone stopped an uncached token answered 503 while a cached one is still served.

Every check prints `ok - ...` or `FAIL - ...`; the last line is
`keystone-check: N passed, N failed`, and the exit status is 1 when anything failed.

Run it through `./tox.sh keystone`, or by hand:

    .tox/clients/bin/python tools/keystone_check.py --bin target/debug/fleetyard \\
        --keystone-venv .tox/keystone
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.request
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_check import (  # noqa: E402  (the shared harness)
    NO_PROXY_OPENER,
    CheckFailed,
    Clients,
    Report,
    Result,
    Server,
    expect_fields,
    expect_http_error,
    expect_ok,
    expect_reported,
    free_port,
    indent,
    names_of,
    tail,
)

KEYSTONE_START_TIMEOUT = 90  # seconds for GET /v3 to answer 200 after gunicorn starts
MANAGE_TIMEOUT = 120  # seconds per keystone-manage call
PLUGIN_DIR = Path(__file__).resolve().parent.parent / "clients" / "osc-plugin"
WAIT = ["--wait", "--wait-timeout", "60"]
REQUESTS_PER_TOKEN = 100  # requests with one token that must cost one Keystone validation
TOKEN_CACHE_TIME = 5  # [keystone_authtoken] token_cache_time of the Fleetyard under test
HTTP_CONNECT_TIMEOUT = 3  # [keystone_authtoken] http_connect_timeout
PASSWORD = "secret-" + secrets.token_hex(8)
ADMIN_PASSWORD = "admin-" + secrets.token_hex(8)
SERVICE_PASSWORD = "fleetyard-" + secrets.token_hex(8)
REGION = "RegionOne"

# Users of projects A and B: (user, project, role). Keystone's default roles imply each other:
# admin brings member, member brings reader.
USERS = [
    ("a-reader", "proj-a", "reader"),
    ("a-member", "proj-a", "member"),
    ("a-admin", "proj-a", "admin"),
    ("b-reader", "proj-b", "reader"),
    ("b-member", "proj-b", "member"),
    ("b-admin", "proj-b", "admin"),
]

# gunicorn's own flags must not reach Keystone's option parser: the application is built with
# an empty command line.
WSGI_MODULE = """\
import sys

sys.argv = sys.argv[:1]

from keystone.server import wsgi  # noqa: E402

application = wsgi.initialize_public_application()
"""


def http(method: str, url: str, headers: dict[str, str] | None = None,
         body: Any = None, timeout: float = 30) -> tuple[int, dict[str, str], Any]:
    """One request without proxies: (status, headers, parsed JSON body or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json")
    # What the CLI sends (node groups need 1.9); Keystone ignores it.
    req.add_header("OpenStack-API-Version", "container-infra latest")
    try:
        with NO_PROXY_OPENER.open(req, timeout=timeout) as r:
            status, hdrs, raw = r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, raw = e.code, dict(e.headers), e.read()
    text = raw.decode(errors="replace")
    try:
        return status, hdrs, json.loads(text) if text else None
    except ValueError:
        return status, hdrs, text


# --------------------------------------------------------------------------
# Keystone


class Keystone:
    """Keystone 30 on SQLite with fernet tokens, served by gunicorn (one worker) on loopback."""

    def __init__(self, venv: Path, workdir: Path):
        self.venv = venv
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.conf = self.dir / "keystone.conf"
        self.proc: subprocess.Popen | None = None
        self.log_path = self.dir / "keystone.log"
        self.access_log = self.dir / "access.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.env.pop("PYTHONPATH", None)
        self.env["OS_KEYSTONE_CONFIG_FILES"] = str(self.conf)
        self.timings: dict[str, float] = {}

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/v3" % self.port

    def write_config(self) -> None:
        keys = {}
        for name in ("fernet-keys", "receipt-keys", "credential-keys"):
            path = self.dir / name
            path.mkdir(mode=0o700, exist_ok=True)
            path.chmod(0o700)
            keys[name] = path
        self.conf.write_text(textwrap.dedent("""\
            [DEFAULT]
            use_stderr = true
            [database]
            connection = sqlite:///%(db)s
            [token]
            provider = fernet
            [fernet_tokens]
            key_repository = %(fernet)s
            [fernet_receipts]
            key_repository = %(receipt)s
            [credential]
            key_repository = %(credential)s
            [cache]
            enabled = true
            backend = dogpile.cache.memory
            """) % {
            "db": self.dir / "keystone.db",
            "fernet": keys["fernet-keys"],
            "receipt": keys["receipt-keys"],
            "credential": keys["credential-keys"],
        })
        (self.dir / "fleetyard_keystone_wsgi.py").write_text(WSGI_MODULE)

    def manage(self, *args: str) -> None:
        argv = [str(self.venv / "bin" / "keystone-manage"), "--config-file", str(self.conf), *args]
        p = subprocess.run(argv, cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=MANAGE_TIMEOUT)
        if p.returncode != 0:
            raise CheckFailed("%s exited %d\nstderr:\n%s" % (" ".join(argv[:4] + ["..."]), p.returncode,
                                                             indent(tail(p.stderr))))

    def bootstrap(self) -> None:
        started = time.monotonic()
        self.write_config()
        self.manage("db_sync")
        user = os.getuid()
        group = os.getgid()
        for what in ("fernet_setup", "credential_setup"):
            self.manage(what, "--keystone-user", str(user), "--keystone-group", str(group))
        self.manage("bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                    "--bootstrap-region-id", REGION,
                    "--bootstrap-admin-url", self.url,
                    "--bootstrap-internal-url", self.url,
                    "--bootstrap-public-url", self.url)
        self.timings["bootstrap"] = time.monotonic() - started

    def start(self) -> None:
        started = time.monotonic()
        self._log = open(self.log_path, "ab")
        argv = [str(self.venv / "bin" / "gunicorn"), "--bind", "127.0.0.1:%d" % self.port,
                "--workers", "1", "--no-control-socket", "--chdir", str(self.dir),
                "--pythonpath", str(self.dir), "--timeout", "120",
                "--access-logfile", str(self.access_log),
                "fleetyard_keystone_wsgi:application"]
        self.proc = subprocess.Popen(argv, cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log, start_new_session=True)
        deadline = time.monotonic() + KEYSTONE_START_TIMEOUT
        last = "no answer yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CheckFailed("gunicorn exited with code %d\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                status, _, _ = http("GET", self.url, timeout=5)
                if status == 200:
                    self.timings["start"] = time.monotonic() - started
                    return
                last = "HTTP %d" % status
            except OSError as e:
                last = str(e)
            time.sleep(0.5)
        raise CheckFailed("GET %s did not answer 200 within %ds (last: %s)\n%s"
                          % (self.url, KEYSTONE_START_TIMEOUT, last, self.log_tail()))

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this script created for gunicorn
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None
        self._log.close()

    def validations(self) -> int:
        """How many token validations (GET /v3/auth/tokens) Keystone has answered so far."""
        time.sleep(0.2)  # gunicorn writes the access log line after the answer
        try:
            text = self.access_log.read_text(errors="replace")
        except OSError:
            return 0
        return sum(1 for line in text.splitlines() if '"GET /v3/auth/tokens' in line)

    def log_tail(self) -> str:
        try:
            return "keystone log tail:\n" + indent(tail(self.log_path.read_text(errors="replace")))
        except OSError:
            return "(no keystone log)"


# --------------------------------------------------------------------------
# A reverse proxy serving Fleetyard under a path prefix


PROXY_PREFIX = "/container-infra"
# Hop-by-hop headers a proxy does not pass on (RFC 9110), and those it sets itself.
HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
               "transfer-encoding", "upgrade", "host", "content-length"}


class PrefixProxy:
    """Serves Fleetyard at http://127.0.0.1:PORT/container-infra/ as a cloud's front end would:
    strips the prefix, passes the request on and says what it did in X-Forwarded-Proto,
    X-Forwarded-Host and X-Forwarded-Prefix. Paths outside the prefix are 404 (and counted)."""

    def __init__(self, upstream_port: int):
        proxy = self
        self.upstream_port = upstream_port
        self.forwarded = 0
        self.outside: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def relay(self) -> None:
                path = self.path
                if not (path == PROXY_PREFIX or path.startswith(PROXY_PREFIX + "/")
                        or path.startswith(PROXY_PREFIX + "?")):
                    proxy.outside.append("%s %s" % (self.command, path))
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = path[len(PROXY_PREFIX):] or "/"
                if path.startswith("?"):
                    path = "/" + path
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                headers.update({"X-Forwarded-Proto": "http", "X-Forwarded-Host": self.headers.get("Host", ""),
                                "X-Forwarded-Prefix": PROXY_PREFIX})
                conn = HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    conn.request(self.command, path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    proxy.forwarded += 1
                    self.send_response(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in HOP_HEADERS:
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return "http://127.0.0.1:%d%s/v1" % (self.server.server_address[1], PROXY_PREFIX)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------------
# Setting up the cloud


def admin_connection(ks: Keystone):
    import openstack  # from the clients venv this script runs in

    return openstack.connect(auth_url=ks.url, username="admin", password=ADMIN_PASSWORD,
                             project_name="admin", user_domain_name="Default",
                             project_domain_name="Default", region_name=REGION,
                             interface="public", identity_api_version="3")


def create_identities(ks: Keystone) -> dict[str, str]:
    """Projects, users and role assignments; returns project name -> id."""
    conn = admin_connection(ks)
    ident = conn.identity
    roles = {r.name: r for r in ident.roles()}
    if "service" not in roles:
        roles["service"] = ident.create_role(name="service")
    projects = {}
    for name in ("service", "proj-a", "proj-b"):
        projects[name] = ident.create_project(name=name, domain_id="default")
    svc = ident.create_user(name="fleetyard", password=SERVICE_PASSWORD, domain_id="default")
    ident.assign_project_role_to_user(projects["service"], svc, roles["service"])
    # Reading any project (quota create checks its project exists) takes admin, as Magnum's
    # install guide gives its service user.
    ident.assign_project_role_to_user(projects["service"], svc, roles["admin"])
    for user, project, role in USERS:
        u = ident.create_user(name=user, password=PASSWORD, domain_id="default")
        ident.assign_project_role_to_user(projects[project], u, roles[role])
    conn.close()
    return {name: p.id for name, p in projects.items()}


def clouds_yaml(ks: Keystone) -> str:
    clouds = {
        "admin": {"username": "admin", "password": ADMIN_PASSWORD, "project_name": "admin"},
    }
    for user, project, _ in USERS:
        clouds[user] = {"username": user, "password": PASSWORD, "project_name": project}
    out = {"clouds": {}}
    for name, auth in clouds.items():
        out["clouds"][name] = {
            "auth": {"auth_url": ks.url, "user_domain_name": "Default",
                     "project_domain_name": "Default", **auth},
            "region_name": REGION,
            "interface": "public",
            "identity_api_version": 3,
        }
    return json.dumps(out, indent=2)  # JSON is YAML


def issue_token(ks: Keystone, user: str, project: str, password: str = PASSWORD) -> str:
    status, headers, body = http("POST", ks.url + "/auth/tokens?nocatalog", body={"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}},
    }})
    token = {k.lower(): v for k, v in headers.items()}.get("x-subject-token")
    if status != 201 or not token:
        raise CheckFailed("Keystone did not issue a token for %s in %s: HTTP %d %s" % (user, project, status, body))
    return token


def fleetyard_config(ks: Keystone) -> str:
    return textwrap.dedent("""\
        [DEFAULT]
        auth_strategy = keystone

        [fake_driver]
        create_seconds = 1
        update_seconds = 1
        delete_seconds = 1

        [conductor]
        sync_interval = 1

        [oslo_middleware]
        # The catalog's internal endpoint is behind PrefixProxy.
        enable_proxy_headers_parsing = true

        [keystone_authtoken]
        www_authenticate_uri = %(url)s
        auth_url = %(url)s
        auth_type = password
        username = fleetyard
        password = %(password)s
        user_domain_name = Default
        project_name = service
        project_domain_name = Default
        service_token_roles = service
        token_cache_time = %(cache)d
        http_connect_timeout = %(timeout)d
        """) % {"url": ks.url, "password": SERVICE_PASSWORD, "cache": TOKEN_CACHE_TIME,
                "timeout": HTTP_CONNECT_TIMEOUT}


# --------------------------------------------------------------------------
# HTTPS

def make_tls_files(directory: Path) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1 and localhost signed by it (ECDSA P-256,
    PEM), made with `cryptography` (an openstacksdk dependency, so in the clients venv)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "keystone-check-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleetyard")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    files = {"ca": directory / "ca.pem", "cert": directory / "tls.crt", "key": directory / "tls.key"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    files["key"].chmod(0o600)
    return files


class TlsServer(Server):
    """`fleetyard serve` over HTTPS (`[api] enabled_ssl`) with the certificate of `files`."""

    scheme = "https"

    def __init__(self, binary: str, workdir: Path, label: str, files: dict[str, Path]):
        super().__init__(binary, workdir, label, {
            "FLEETYARD__API__ENABLED_SSL": "true",
            "FLEETYARD__API__SSL_CERT_FILE": str(files["cert"]),
            "FLEETYARD__API__SSL_KEY_FILE": str(files["key"]),
        })
        context = ssl.create_default_context(cafile=str(files["ca"]))
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                  urllib.request.HTTPSHandler(context=context))


def kubectl_binary() -> str | None:
    """kubectl from FLEETYARD_KUBECTL or the PATH, or None."""
    candidate = os.environ.get("FLEETYARD_KUBECTL") or shutil.which("kubectl")
    if not candidate:
        return None
    try:
        ok = subprocess.run([candidate, "version", "--client"], capture_output=True,
                            timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return candidate if ok else None


# --------------------------------------------------------------------------
# Checks

SDK_SNIPPET = r"""
import json, sys
import openstack
conn = openstack.connect(cloud=sys.argv[1])
cim = conn.container_infrastructure_management
print(json.dumps({
    "endpoint": conn.endpoint_for("container-infra"),
    "templates": [{"id": t.id, "name": t.name} for t in cim.cluster_templates()],
}))
"""


# keystoneauth's version discovery on the internal endpoint (behind the prefix proxy), then
# openstacksdk through it.
SDK_PREFIX_SNIPPET = r"""
import json, sys
import openstack
conn = openstack.connect(cloud=sys.argv[1], interface="internal")
region = conn.config.get_region_name()
data = conn.session.get_endpoint_data(service_type="container-infra", interface="internal",
                                      region_name=region)
# The unversioned document (GET /) as keystoneauth reads it: every version with its link.
everything = conn.session.get_all_version_data(service_type="container-infra",
                                               interface="internal", region_name=region)
def version_data(x):  # {region: {interface: {service type: [VersionData]}}}, or shallower
    if isinstance(x, list):
        return [v for v in x if isinstance(v, dict)]
    return [v for inner in x.values() for v in version_data(inner)] if isinstance(x, dict) else []
cim = conn.container_infrastructure_management
print(json.dumps({
    "catalog": data.catalog_url,
    "url": data.url,
    "api_version": list(data.api_version or ()),
    "versions": [{"url": v["url"], "version": v["version"], "max": v["max_microversion"]}
                 for v in version_data(everything)],
    "templates": [t.name for t in cim.cluster_templates()],
}))
"""


def wait_for_status(srv: Server, token: str, path: str, want: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    body: Any = None
    while time.monotonic() < deadline:
        status, _, body = http("GET", srv.base + path, {"X-Auth-Token": token})
        if status == 200 and isinstance(body, dict) and body.get("status") == want:
            return body
        if isinstance(body, dict) and str(body.get("status", "")).endswith("FAILED"):
            break
        time.sleep(0.5)
    raise CheckFailed("GET %s did not reach %s within %ds (last: %s)" % (path, want, timeout, body))


def wait_gone(srv: Server, token: str, path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, _, _ = http("GET", srv.base + path, {"X-Auth-Token": token})
        if status == 404:
            return
        time.sleep(0.5)
    raise CheckFailed("%s still there %d s after delete" % (path, timeout))


def keystone_checks(rep: Report, cli: Clients, srv: Server, ks: Keystone, projects: dict[str, str],
                    proxy: PrefixProxy) -> None:
    def coe(cloud: str, *args: str) -> Result:
        return cli.coe(["--os-cloud", cloud], *args)

    state: dict[str, str] = {}

    def catalog() -> None:
        r = expect_ok(cli.run([cli.openstack, "--os-cloud", "a-member", "catalog", "show",
                               "container-infra", "-f", "json"]))
        if srv.endpoint not in r.out:
            raise CheckFailed("the catalog does not list %s\n%s" % (srv.endpoint, r.describe()))

    rep.check("a project member sees container-infra at %s in the catalog" % srv.endpoint, catalog)

    def no_token() -> None:
        status, headers, body = http("GET", srv.endpoint + "/clustertemplates")
        challenge = {k.lower(): v for k, v in headers.items()}.get("www-authenticate", "")
        if status != 401 or challenge != 'Keystone uri="%s"' % ks.url:
            raise CheckFailed("expected 401 with WWW-Authenticate: Keystone uri=\"%s\", got %d %r %s"
                              % (ks.url, status, challenge, body))
        if not (isinstance(body, dict) and body.get("errors", [{}])[0].get("status") == 401):
            raise CheckFailed("not Magnum's error body: %r" % (body,))

    rep.check("no token: 401 with WWW-Authenticate: Keystone uri=... and Magnum's error body", no_token)

    def bad_token() -> None:
        status, _, _ = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": "gAAAAA-not-a-token"})
        if status != 401:
            raise CheckFailed("expected 401, got %d" % status)

    rep.check("a token Keystone does not know: 401", bad_token)

    def create() -> None:
        r = expect_ok(coe("a-member", "cluster", "template", "create", "tpl-a", "--coe", "kubernetes",
                          "--image", "fedora-coreos-40", "--external-network", "public", "-f", "json"))
        body = expect_fields(r, {"name": "tpl-a", "project_id": projects["proj-a"]})
        state["tpl"] = body["uuid"]

    rep.check("openstack --os-cloud a-member (password, catalog): template create is owned by project A", create)

    def listed() -> None:
        for cloud in ("a-member", "a-reader"):
            r = expect_ok(coe(cloud, "cluster", "template", "list", "-f", "json"))
            if "tpl-a" not in names_of(r):
                raise CheckFailed("%s does not list tpl-a\n%s" % (cloud, r.describe()))
        r = expect_ok(coe("a-reader", "cluster", "template", "show", "tpl-a", "-f", "json"))
        expect_fields(r, {"uuid": state.get("tpl")})

    rep.check("project A's member and reader list it; the reader shows it", listed)

    def reader_cannot_write() -> None:
        expect_http_error(coe("a-reader", "cluster", "template", "create", "tpl-r", "--coe", "kubernetes",
                              "--image", "fedora-coreos-40", "--external-network", "public"), 403)
        expect_reported(coe("a-reader", "cluster", "template", "delete", "tpl-a"), 403)

    rep.check("project A's reader cannot create or delete a template (HTTP 403)", reader_cannot_write)

    def cross_project() -> None:
        r = expect_ok(coe("b-member", "cluster", "template", "list", "-f", "json"))
        if "tpl-a" in names_of(r):
            raise CheckFailed("b-member lists project A's template\n" + r.describe())
        expect_http_error(coe("b-member", "cluster", "template", "show", state.get("tpl", "tpl-a")), 404)

    rep.check("project B's member neither lists nor shows (by uuid: HTTP 404) project A's template", cross_project)

    def sdk() -> None:
        r = expect_ok(cli.python_snippet(SDK_SNIPPET, "a-reader"))
        body = r.json()
        if not str(body.get("endpoint", "")).startswith(srv.base):
            raise CheckFailed("the SDK found %r, not %s\n%s" % (body.get("endpoint"), srv.endpoint, r.describe()))
        if not any(t.get("id") == state.get("tpl") for t in body.get("templates", [])):
            raise CheckFailed("the SDK does not list tpl-a\n" + r.describe())

    def plugin() -> None:
        src = cli.cwd.parent / "osc-plugin-src"
        shutil.copytree(PLUGIN_DIR, src, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
        expect_ok(cli.run([cli.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--force-reinstall", "--no-deps", str(src)]))
        r = expect_ok(coe("a-reader", "federation", "list", "-f", "json"))
        if not isinstance(r.json(), list):
            raise CheckFailed("federation list is not a JSON list\n" + r.describe())
        state["plugin"] = "yes"

    rep.check("pip install ./clients/osc-plugin into the clients venv; coe federation list (a-reader)", plugin)

    rep.check("openstacksdk (cloud a-reader) finds container-infra in the catalog and lists tpl-a", sdk)

    def behind_prefix() -> None:
        before = proxy.forwarded
        r = expect_ok(cli.python_snippet(SDK_PREFIX_SNIPPET, "a-reader"))
        body = r.json()
        if body.get("catalog") != proxy.endpoint or not str(body.get("url", "")).startswith(proxy.endpoint):
            raise CheckFailed("discovery did not keep the prefix: catalog %r, url %r (want %s)\n%s"
                              % (body.get("catalog"), body.get("url"), proxy.endpoint, r.describe()))
        want = [{"url": proxy.endpoint + "/", "version": "1.0", "max": "1.20"}]
        if body.get("api_version") != [1, 0] or body.get("versions") != want:
            raise CheckFailed("unexpected versions %r / %r (want %r)\n%s"
                              % (body.get("api_version"), body.get("versions"), want, r.describe()))
        if body.get("templates") != ["tpl-a"]:
            raise CheckFailed("the SDK does not list tpl-a through the prefix\n" + r.describe())
        if proxy.forwarded == before or proxy.outside:
            raise CheckFailed("%d requests went through the proxy, %d missed the prefix: %r"
                              % (proxy.forwarded - before, len(proxy.outside), proxy.outside))
        status, _, doc = http("GET", proxy.endpoint.rsplit("/v1", 1)[0] + "/")
        href = (doc or {}).get("versions", [{}])[0].get("links", [{}])[0].get("href") if status == 200 else None
        if href != proxy.endpoint + "/":
            raise CheckFailed("GET / through the proxy: %d, version link %r (want %s/)" % (status, href, proxy.endpoint))

    rep.check("behind a reverse proxy at %s (the catalog's internal endpoint, X-Forwarded-Prefix): "
              "keystoneauth's discovery and openstacksdk keep the prefix" % PROXY_PREFIX, behind_prefix)

    # A token for polling and direct requests (fast: no client start-up).
    a_member = issue_token(ks, "a-member", "proj-a")

    def bearer() -> None:
        status, _, body = http("GET", srv.endpoint + "/clustertemplates/" + state.get("tpl", "x"),
                               {"Authorization": "Bearer " + a_member})
        if status != 200:
            raise CheckFailed("expected 200, got %d %s" % (status, body))

    rep.check("the same Keystone token works as Authorization: Bearer", bearer)

    def quota_project() -> None:
        admin = {"X-Auth-Token": issue_token(ks, "admin", "admin", ADMIN_PASSWORD)}
        r = expect_ok(coe("admin", "quotas", "create", "--project-id", projects["proj-b"],
                          "--resource", "Cluster", "--hard-limit", "5"))
        status, _, body = http("GET", srv.endpoint + "/quotas/%s/Cluster" % projects["proj-b"], admin)
        if status != 200 or body.get("hard_limit") != 5 or "id" not in body:
            raise CheckFailed("project B's quota was not stored: %d %s\n%s" % (status, body, r.describe()))
        unknown = "0123456789abcdef0123456789abcdef"
        # The CLI reports the failure on stdout and exits 0.
        r = expect_reported(coe("admin", "quotas", "create", "--project-id", unknown,
                                "--resource", "Cluster", "--hard-limit", "5"), 404)
        if "The project_id %s could not be found" % unknown not in r.out + r.err:
            raise CheckFailed("expected Magnum's sentence for an unknown project\n" + r.describe())
        status, _, body = http("GET", srv.endpoint + "/quotas/%s/Cluster" % unknown, admin)
        if status != 200 or body.get("hard_limit") == 5 or "id" in body:
            raise CheckFailed("a quota was stored for the unknown project: %d %s" % (status, body))
        expect_ok(coe("admin", "quotas", "delete", "--project-id", projects["proj-b"], "--resource", "Cluster"))

    rep.check("quotas create (Keystone's admin): project B's id is stored; an id Keystone does not "
              "know is 404 \"The project_id X could not be found.\" and nothing is stored", quota_project)

    def cluster() -> None:
        r = expect_ok(coe("a-member", "cluster", "create", "c1", "--cluster-template", "tpl-a",
                          "--node-count", "1", "--master-count", "1"))
        body = wait_for_status(srv, a_member, "/v1/clusters/c1", "CREATE_COMPLETE")
        if body.get("project_id") != projects["proj-a"]:
            raise CheckFailed("c1 is not owned by project A: %r\n%s" % (body.get("project_id"), r.describe()))
        r = expect_ok(coe("a-member", "cluster", "list", "-f", "json"))
        if "c1" not in names_of(r):
            raise CheckFailed("c1 not listed\n" + r.describe())
        expect_fields(expect_ok(coe("a-reader", "cluster", "show", "c1", "-f", "json")), {"name": "c1"})
        expect_http_error(coe("b-member", "cluster", "show", body.get("uuid", "c1")), 404)

    rep.check("cluster create c1 (project A's member) completes; list, show; B's member gets 404", cluster)

    def member_cluster_config() -> None:
        # What magnum-ui's "Get Cluster Config" does too: read the CA, have a CSR for
        # CN=admin, O=system:masters signed (certificate:create_privileged lets the cluster's
        # project members, as in Magnum), write a kubeconfig.
        d = Path(tempfile.mkdtemp(prefix="fleetyard-kubeconfig-"))
        try:
            r = expect_ok(coe("a-member", "cluster", "config", "c1", "--dir", str(d)))
            text = (d / "config").read_text() if (d / "config").exists() else ""
            data = {k.strip(): v.strip() for k, _, v in
                    (line.partition(":") for line in text.splitlines()) if v.strip()}
            if "client-certificate-data" not in data or "certificate-authority-data" not in data:
                raise CheckFailed("no kubeconfig with certificates written\n%s\n%s" % (text, r.describe()))
            status, _, body = http("GET", srv.endpoint + "/certificates/c1", {"X-Auth-Token": a_member})
            ca = base64.b64decode(data["certificate-authority-data"]).decode()
            if status != 200 or body.get("pem", "").strip() != ca.strip():
                raise CheckFailed("the kubeconfig's CA is not the cluster's: %d %s" % (status, body))
            (d / "ca.pem").write_text(ca)
            (d / "cert.pem").write_bytes(base64.b64decode(data["client-certificate-data"]))
            v = subprocess.run(["openssl", "verify", "-CAfile", "ca.pem", "cert.pem"], cwd=d,
                               capture_output=True, text=True, timeout=60)
            if v.returncode != 0:
                raise CheckFailed("the client certificate does not verify against the CA: %s%s"
                                  % (v.stdout, v.stderr))
            subject = subprocess.run(["openssl", "x509", "-in", "cert.pem", "-noout", "-subject"], cwd=d,
                                     capture_output=True, text=True, timeout=60).stdout
            if "system:masters" not in subject:
                raise CheckFailed("unexpected client certificate subject: %s" % subject)
            (d / "reader").mkdir()
            expect_http_error(coe("a-reader", "cluster", "config", "c1", "--dir", str(d / "reader")), 403)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    rep.check("cluster config c1 as project A's member: a kubeconfig whose CA is the cluster's and whose "
              "client certificate (CN=admin, O=system:masters) verifies against it; the reader gets 403",
              member_cluster_config)

    def registry() -> None:
        # The cluster registry (kubectl's API) with Keystone tokens as kubectl sends them:
        # `Authorization: Bearer <token>`. Namespaces are project ids.
        root = srv.endpoint.rsplit("/v1", 1)[0]
        ns = projects["proj-a"]
        base = root + "/apis/clusterregistry.k8s.io/v1alpha1/namespaces/%s/clusters" % ns
        bearer = {"Authorization": "Bearer " + a_member}
        status, _, body = http("GET", base + "/c1", bearer)
        meta = body.get("metadata", {}) if isinstance(body, dict) else {}
        if status != 200 or meta.get("namespace") != ns or body.get("kind") != "Cluster":
            raise CheckFailed("c1 through the registry: %d %s" % (status, body))
        obj = {"apiVersion": "clusterregistry.k8s.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "ks-edge", "labels": {"env": "test"}},
               "spec": {"kubernetesApiEndpoints": {"serverEndpoints": [
                   {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.8.0.1:6443"}]}}}
        status, _, body = http("POST", base, bearer, obj)
        if status != 201:
            raise CheckFailed("registering ks-edge: %d %s" % (status, body))
        status, _, body = http("GET", srv.endpoint + "/clusters/ks-edge", {"X-Auth-Token": a_member})
        if status != 200 or body.get("status") != "CREATE_COMPLETE" or body.get("project_id") != ns:
            raise CheckFailed("ks-edge through /v1: %d %s" % (status, body))
        b_member = issue_token(ks, "b-member", "proj-b")
        # Project B is bound nothing: in A's namespace it sees what a project whose groups
        # reach nothing there sees (an empty list and watch, 404 for a name), which tells
        # nothing of A's clusters.
        b_auth = {"Authorization": "Bearer " + b_member}
        status, _, body = http("GET", base, b_auth)
        if status != 200 or not isinstance(body, dict) or body.get("kind") != "ClusterList" \
                or body.get("items") != []:
            raise CheckFailed("project B's member on %s: expected an empty ClusterList, got %d %s"
                              % (base, status, body))
        status, _, body = http("GET", base + "/c1", b_auth)
        if status != 404 or not isinstance(body, dict) or body.get("reason") != "NotFound":
            raise CheckFailed("project B's member on %s/c1: expected 404 NotFound, got %d %s"
                              % (base, status, body))
        status, _, body = http("GET", base + "?watch=true&timeoutSeconds=1", b_auth)
        if status != 200 or body is not None:
            raise CheckFailed("project B's member watching %s: expected an empty stream, got %d %s"
                              % (base, status, body))
        status, _, body = http("GET", base)
        if status != 401 or not isinstance(body, dict) or body.get("kind") != "Status":
            raise CheckFailed("no token: expected a 401 Status, got %d %s" % (status, body))
        status, _, body = http("DELETE", base + "/ks-edge", bearer)
        if status != 200:
            raise CheckFailed("deleting ks-edge: %d %s" % (status, body))

    rep.check("the cluster registry with Keystone bearer tokens: c1 in project A's namespace, "
              "a registered cluster seen through /v1, nothing of A's for project B (empty list and "
              "watch, 404 for c1), 401 without a token",
              registry)

    def nodegroups() -> None:
        expect_ok(coe("a-member", "nodegroup", "create", "c1", "ng1", "--node-count", "1"))
        wait_for_status(srv, a_member, "/v1/clusters/c1/nodegroups/ng1", "CREATE_COMPLETE")
        r = expect_ok(coe("a-reader", "nodegroup", "list", "c1", "-f", "json"))
        if "ng1" not in names_of(r):
            raise CheckFailed("ng1 not listed\n" + r.describe())
        expect_fields(expect_ok(coe("a-reader", "nodegroup", "show", "c1", "ng1", "-f", "json")), {"name": "ng1"})
        expect_reported(coe("a-reader", "nodegroup", "delete", "c1", "ng1"), 403)
        expect_ok(coe("a-member", "nodegroup", "delete", "c1", "ng1"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, _, _ = http("GET", srv.endpoint + "/clusters/c1/nodegroups/ng1", {"X-Auth-Token": a_member})
            if status == 404:
                return
            time.sleep(0.5)
        raise CheckFailed("ng1 still there 60 s after delete")

    rep.check("nodegroup create/list/show/delete on c1 (the reader may not delete)", nodegroups)

    def federation() -> None:
        if not state.get("plugin"):
            raise CheckFailed("the federation plugin is not installed (see the check above)")
        expect_ok(coe("a-member", "cluster", "create", "m1", "--cluster-template", "tpl-a",
                      "--node-count", "1", "--master-count", "1"))
        try:
            member = wait_for_status(srv, a_member, "/v1/clusters/m1", "CREATE_COMPLETE")
            r = expect_ok(coe("a-member", "federation", "create", "fed1", "--hostcluster", "c1", "--member", "m1",
                              "--property", "dns=cluster.local", *WAIT, "-f", "json"))
            body = expect_fields(r, {"name": "fed1", "status": "CREATE_COMPLETE"})
            if body.get("members") != [member.get("uuid")]:
                raise CheckFailed("members should be [m1's uuid]\n" + r.describe())
            r = expect_ok(coe("a-reader", "federation", "list", "-f", "json"))
            if "fed1" not in names_of(r):
                raise CheckFailed("a-reader does not list fed1\n" + r.describe())
            expect_fields(expect_ok(coe("a-reader", "federation", "show", "fed1", "-f", "json")), {"name": "fed1"})
            # The plugin prints the server's sentence without "(HTTP 404)".
            r = coe("b-member", "federation", "show", body.get("uuid", "fed1"))
            if r.rc == 0 or "could not be found" not in r.err:
                raise CheckFailed("project B's member should get the 404 sentence\n" + r.describe())
            r = coe("a-reader", "federation", "delete", "fed1")
            if r.rc == 0 or "Policy doesn't allow federation:delete" not in r.err:
                raise CheckFailed("a reader's federation delete should be refused by policy (403)\n"
                                  + r.describe())
            expect_ok(coe("a-member", "federation", "delete", "fed1", *WAIT))
            r = expect_ok(coe("a-member", "federation", "list", "-f", "json"))
            if "fed1" in names_of(r):
                raise CheckFailed("fed1 still listed after delete --wait\n" + r.describe())
        finally:
            # Whatever failed above, leave c1 and tpl-a deletable for the checks that follow.
            status, _, _ = http("GET", srv.endpoint + "/federations/fed1", {"X-Auth-Token": a_member})
            if status == 200:
                coe("a-member", "federation", "delete", "fed1", *WAIT)
            coe("a-member", "cluster", "delete", "m1")
            wait_gone(srv, a_member, "/v1/clusters/m1")

    rep.check("federation (the plugin, password auth, catalog): create --wait, list, show; B's member "
              "gets 404, A's reader cannot delete; delete --wait", federation)

    def cluster_delete() -> None:
        expect_ok(coe("a-member", "cluster", "delete", "c1"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, _, _ = http("GET", srv.endpoint + "/clusters/c1", {"X-Auth-Token": a_member})
            if status == 404:
                return
            time.sleep(0.5)
        raise CheckFailed("c1 still there 60 s after delete")

    rep.check("cluster delete c1", cluster_delete)

    def template_delete() -> None:
        expect_ok(coe("a-member", "cluster", "template", "delete", "tpl-a"))
        r = expect_ok(coe("a-member", "cluster", "template", "list", "-f", "json"))
        if "tpl-a" in names_of(r):
            raise CheckFailed("tpl-a still listed\n" + r.describe())

    rep.check("template delete", template_delete)

    def revoked() -> None:
        token = issue_token(ks, "b-member", "proj-b")
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
        if status != 200:
            raise CheckFailed("a fresh token: expected 200, got %d %s" % (status, body))
        admin = issue_token(ks, "admin", "admin", ADMIN_PASSWORD)
        status, _, body = http("DELETE", ks.url + "/auth/tokens", {"X-Auth-Token": admin, "X-Subject-Token": token})
        if status != 204:
            raise CheckFailed("Keystone did not revoke the token: %d %s" % (status, body))
        revoked_at = time.monotonic()
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
        if status != 200:
            raise CheckFailed("right after the revocation the cached answer should still serve it, got %d %s"
                              % (status, body))
        time.sleep(TOKEN_CACHE_TIME + 1)
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
        if status != 401:
            raise CheckFailed("%.1f s after the revocation (token_cache_time = %d): expected 401, got %d %s"
                              % (time.monotonic() - revoked_at, TOKEN_CACHE_TIME, status, body))

    rep.check("a token revoked in Keystone (DELETE /v3/auth/tokens) is served from the cache, then refused "
              "(401) once token_cache_time (%d s) has passed" % TOKEN_CACHE_TIME, revoked)

    def one_validation() -> None:
        token = issue_token(ks, "a-reader", "proj-a")
        before = ks.validations()
        for _ in range(REQUESTS_PER_TOKEN):
            status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
            if status != 200:
                raise CheckFailed("expected 200, got %d %s" % (status, body))
        calls = ks.validations() - before
        if calls != 1:
            raise CheckFailed("%d requests with one token asked Keystone %d times (expected 1)"
                              % (REQUESTS_PER_TOKEN, calls))

    rep.check("%d requests with one token: Keystone validates it once" % REQUESTS_PER_TOKEN, one_validation)

    def bad_token_flood() -> None:
        before = ks.validations()
        for _ in range(20):
            status, _, _ = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": "gAAAAA-flood"})
            if status != 401:
                raise CheckFailed("expected 401, got %d" % status)
        calls = ks.validations() - before
        if calls != 1:
            raise CheckFailed("20 requests with one bad token asked Keystone %d times (expected 1)" % calls)

    rep.check("20 requests with one bad token: Keystone is asked once (refusals are cached)", bad_token_flood)

    def role_removed() -> None:
        token = issue_token(ks, "b-reader", "proj-b")
        status, _, _ = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
        if status != 200:
            raise CheckFailed("a fresh token: expected 200, got %d" % status)
        r = expect_ok(cli.run([cli.openstack, "--os-cloud", "admin", "role", "remove", "--user", "b-reader",
                               "--project", "proj-b", "reader"]))
        time.sleep(TOKEN_CACHE_TIME + 1)
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": token})
        if status != 401:
            raise CheckFailed("expected 401 after the role was removed, got %d %s\n%s" % (status, body, r.describe()))

    rep.check("after `openstack role remove` the user's token is refused once token_cache_time has passed",
              role_removed)

    def kubectl_https() -> None:
        # kubectl sends its bearer token over HTTPS only: a second `fleetyard serve` (its own
        # SQLite database, the same Keystone) serves TLS with a CA made here.
        kubectl = kubectl_binary()
        if kubectl is None:
            raise CheckFailed("kubectl is required (FLEETYARD_REQUIRE_KUBECTL=1) but there is "
                              "none (FLEETYARD_KUBECTL or the PATH)")
        workdir = srv.workdir.parent / "fleetyard-https"
        (workdir / "etc" / "fleetyard").mkdir(parents=True)
        (workdir / "etc" / "fleetyard" / "fleetyard.conf").write_text(fleetyard_config(ks))
        files = make_tls_files(workdir / "tls")
        tls = TlsServer(srv.binary, workdir, "keystone-https", files)
        try:
            tls.start()
            ns = projects["proj-a"]
            ca_data = base64.b64encode(files["ca"].read_bytes()).decode()

            def run(token: str, *args: str) -> subprocess.CompletedProcess:
                config = workdir / ("kubeconfig-" + secrets.token_hex(4))
                config.write_text(textwrap.dedent("""\
                    apiVersion: v1
                    kind: Config
                    clusters:
                    - name: fleetyard
                      cluster:
                        server: %s
                        certificate-authority-data: %s
                    users:
                    - name: me
                      user:
                        token: %s
                    contexts:
                    - name: fleetyard
                      context: {cluster: fleetyard, user: me, namespace: %s}
                    current-context: fleetyard
                    """) % (tls.base, ca_data, token, ns))
                env = dict(os.environ, HOME=str(workdir))
                return subprocess.run([kubectl, "--kubeconfig", str(config), "--cache-dir",
                                       str(workdir / "kube-cache"), *args],
                                      capture_output=True, text=True, timeout=120, env=env)

            manifest = workdir / "edge.yaml"
            manifest.write_text(textwrap.dedent("""\
                apiVersion: clusterregistry.k8s.io/v1alpha1
                kind: Cluster
                metadata:
                  name: tls-edge
                spec:
                  kubernetesApiEndpoints:
                    serverEndpoints:
                    - clientCIDR: 0.0.0.0/0
                      serverAddress: 10.8.0.9:6443
                """))
            a_token = issue_token(ks, "a-member", "proj-a")
            r = run(a_token, "create", "-f", str(manifest))
            if r.returncode != 0 or r.stdout.strip() != "cluster.clusterregistry.k8s.io/tls-edge created":
                raise CheckFailed("kubectl create -f: rc %d\n%s\n%s" % (r.returncode, r.stdout, r.stderr))
            r = run(a_token, "get", "clusters", "-A")
            rows = [line.split() for line in r.stdout.splitlines()[1:]]
            if r.returncode != 0 or [row[:2] for row in rows] != [[ns, "tls-edge"]]:
                raise CheckFailed("kubectl get clusters -A: expected one row %s tls-edge, got rc %d\n%s\n%s"
                                  % (ns, r.returncode, r.stdout, r.stderr))
            b_token = issue_token(ks, "b-member", "proj-b")
            r = run(b_token, "get", "clusters", "-n", ns)
            if r.returncode != 0 or "No resources found in %s namespace." % ns not in r.stderr \
                    or "tls-edge" in r.stdout:
                raise CheckFailed("project B's member in A's namespace: expected no resources, got rc %d\n%s\n%s"
                                  % (r.returncode, r.stdout, r.stderr))
            r = run(b_token, "get", "clusters", "tls-edge", "-n", ns)
            if r.returncode == 0 or "NotFound" not in r.stderr:
                raise CheckFailed("project B's member getting tls-edge: expected NotFound, got rc %d\n%s\n%s"
                                  % (r.returncode, r.stdout, r.stderr))
            r = run("not-a-keystone-token", "get", "clusters", "-A")
            if r.returncode == 0 or "You must be logged in to the server" not in r.stderr:
                raise CheckFailed("a bad token: expected kubectl's \"You must be logged in\", got rc %d\n%s\n%s"
                                  % (r.returncode, r.stdout, r.stderr))
            # The same service refuses plain HTTP on its HTTPS port.
            status, _, body = http("GET", "http://127.0.0.1:%d/v1/" % tls.port)
            if status != 400 or "HTTPS" not in json.dumps(body):
                raise CheckFailed("plain HTTP to the HTTPS port: expected 400, got %d %s" % (status, body))
        except CheckFailed as e:
            raise CheckFailed("%s\nHTTPS server log tail:\n%s" % (e, indent(tls.log_tail())))
        finally:
            tls.stop()

    kubectl_check = ("kubectl with Keystone tokens over HTTPS (a second fleetyard serve with "
                     "enabled_ssl): create -f and get clusters -A as project A's member, nothing "
                     "of A's for B's member (no resources, NotFound), \"You must be logged in\" "
                     "for a bad token, 400 for plain HTTP")
    if kubectl_binary() is None and os.environ.get("FLEETYARD_REQUIRE_KUBECTL") != "1":
        # Said, not passed: without kubectl this check did not run.
        print("skip - %s: no kubectl on this machine (FLEETYARD_KUBECTL or the PATH)" % kubectl_check,
              flush=True)
    else:
        rep.check(kubectl_check, kubectl_https)

    def keystone_stopped() -> None:
        cached = issue_token(ks, "a-reader", "proj-a")
        uncached = issue_token(ks, "a-member", "proj-a")
        status, _, _ = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": cached})
        if status != 200:
            raise CheckFailed("expected 200 with Keystone up, got %d" % status)
        ks.stop()
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": cached})
        if status != 200:
            raise CheckFailed("a cached token with Keystone stopped: expected 200, got %d %s" % (status, body))
        started = time.monotonic()
        status, _, body = http("GET", srv.endpoint + "/clustertemplates", {"X-Auth-Token": uncached})
        took = time.monotonic() - started
        if status != 503:
            raise CheckFailed("an uncached token with Keystone stopped: expected 503, got %d %s" % (status, body))
        err = body.get("errors", [{}])[0] if isinstance(body, dict) else {}
        if err.get("status") != 503 or "Keystone" not in str(err.get("detail")):
            raise CheckFailed("not Magnum's error body naming Keystone: %r" % (body,))
        if took > HTTP_CONNECT_TIMEOUT + 1:
            raise CheckFailed("the 503 took %.1f s (http_connect_timeout = %d)" % (took, HTTP_CONNECT_TIMEOUT))

    rep.check("Keystone stopped: a cached token is still served, an uncached one gets 503 with Magnum's "
              "error body within http_connect_timeout", keystone_stopped)


# --------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keystone-venv", default=".tox/keystone", help="virtualenv with keystone and gunicorn")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    venv_bin = Path(sys.executable).parent
    ks_venv = Path(os.path.abspath(args.keystone_venv))
    for need, what in ((binary, "the fleetyard binary"), (str(venv_bin / "openstack"), "`openstack` (clients venv)"),
                       (str(ks_venv / "bin" / "keystone-manage"), "keystone-manage (keystone venv)"),
                       (str(ks_venv / "bin" / "gunicorn"), "gunicorn (keystone venv)")):
        if not os.access(need, os.X_OK):
            print("keystone-check: %s is missing: %s" % (what, need), file=sys.stderr)
            print("keystone-check: 0 passed, 1 failed")
            return 1

    # A SIGTERM still stops Keystone and the server: SystemExit runs the finally blocks.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    for var in ("no_proxy", "NO_PROXY"):
        os.environ[var] = ",".join(filter(None, [os.environ.get(var), "127.0.0.1", "localhost"]))

    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="fleetyard-keystone-check-"))
    rep = Report()
    ks = Keystone(ks_venv, root / "keystone")
    srv: Server | None = None
    proxy: PrefixProxy | None = None
    try:
        rep.check("keystone-manage db_sync, fernet_setup, credential_setup, bootstrap", ks.bootstrap)
        if rep.failed:
            return 1
        failed = rep.failed
        rep.check("Keystone (gunicorn, one worker) answers GET /v3 on 127.0.0.1:%d" % ks.port, ks.start)
        if rep.failed != failed:
            return 1
        projects = rep.check("projects service, proj-a, proj-b; the service user; readers, members, admins",
                             lambda: create_identities(ks))
        if projects is None:
            return 1

        cwd = root / "cwd"
        cwd.mkdir()
        (cwd / "clouds.yaml").write_text(clouds_yaml(ks))
        cli = Clients(venv_bin, cwd)

        workdir = root / "fleetyard"
        (workdir / "etc" / "fleetyard").mkdir(parents=True)
        (workdir / "etc" / "fleetyard" / "fleetyard.conf").write_text(fleetyard_config(ks))
        srv = Server(binary, workdir, "keystone", {})

        def register() -> None:
            admin = ["--os-cloud", "admin"]
            expect_ok(cli.run([cli.openstack, *admin, "service", "create", "--name", "magnum",
                               "--description", "Container Infrastructure Management Service",
                               "container-infra"]))
            expect_ok(cli.run([cli.openstack, *admin, "endpoint", "create", "--region", REGION,
                               "container-infra", "public", srv.endpoint]))
            expect_ok(cli.run([cli.openstack, *admin, "endpoint", "create", "--region", REGION,
                               "container-infra", "internal", proxy.endpoint]))

        proxy = PrefixProxy(srv.port)
        proxy.start()
        rep.check("openstack service create container-infra; endpoint create public %s, internal %s "
                  "(a reverse proxy with a path prefix)" % (srv.endpoint, proxy.endpoint), register)

        rep.server = srv
        failed = rep.failed
        rep.check("fleetyard serve (auth_strategy = keystone) answers GET /healthcheck", srv.start)
        if rep.failed == failed:
            keystone_checks(rep, cli, srv, ks, projects, proxy)
            if srv.proc is not None and srv.proc.poll() is not None:
                rep.fail("fleetyard keeps running through the checks", "it exited with code %s" % srv.proc.returncode)
    finally:
        if srv is not None:
            srv.stop()
        if proxy is not None:
            proxy.stop()
        ks.stop()
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
        timings = ", ".join("%s %.1f s" % kv for kv in ks.timings.items())
        print("# keystone: %s; whole check %.1f s" % (timings or "-", time.monotonic() - began), flush=True)
        print("keystone-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
