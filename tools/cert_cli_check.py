#!/usr/bin/env python3
"""Real-client check of cluster certificates: `coe cluster config`, `coe ca ...`
and `coe credential rotate`.

Starts `fleetyard serve` (the embedded default: SQLite, no-auth, the fake
driver, the certificate key generated beside the database) and drives it with
the REAL `openstack` CLI and python-magnumclient 5.0.0 from the `.tox/clients`
virtualenv: a TLS cluster template and a cluster, `coe cluster config` (the
kubeconfig's client certificate must pass `openssl verify -CAfile` against the
cluster CA, and its server must be the cluster's api_address), `coe ca show`,
`coe ca sign` with a CSR made by `openssl req`, `coe ca rotate` (afterwards the
CA is new, new kubeconfigs chain to it and the old client certificate does
not), and `coe credential rotate`. Every check prints `ok - ...` or
`FAIL - ...`; the last line is `cert-cli-check: N passed, N failed`, and the
exit status is 1 when anything failed.

Run it through `./tox.sh cli`, or by hand:

    .tox/clients/bin/python tools/cert_cli_check.py --bin target/debug/fleetyard

The harness (server start/stop, clean client environment, bookkeeping) is
tools/cli_check.py's. It needs `openssl` on the PATH.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import subprocess
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
    expect_fields,
    expect_ok,
    noauth,
    run_phase,
)

WAIT_TIMEOUT = 60  # seconds, for a cluster to reach a status


def openssl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def kubeconfig_fields(path: Path) -> dict[str, str]:
    """The single-cluster kubeconfig `coe cluster config` writes, read line by line."""
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition(": ")
        if sep and key in ("server", "certificate-authority-data", "client-certificate-data",
                           "client-key-data"):
            fields[key] = value.strip()
    missing = {"server", "certificate-authority-data", "client-certificate-data",
               "client-key-data"} - set(fields)
    if missing:
        raise CheckFailed("%s lacks %s:\n%s" % (path, ", ".join(sorted(missing)), path.read_text()))
    return fields


def verify(ca: Path, cert: Path, cwd: Path) -> subprocess.CompletedProcess:
    return openssl("verify", "-CAfile", str(ca), str(cert), cwd=cwd)


def cert_checks(rep: Report, cli: Clients, srv: Server, work: Path) -> None:
    auth = noauth(srv)

    def coe(*args: str) -> Result:
        return cli.coe(auth, *args)

    state: dict[str, str] = {}

    def wait_for(status: str) -> dict:
        deadline = time.monotonic() + WAIT_TIMEOUT
        body: dict = {}
        while time.monotonic() < deadline:
            body = expect_ok(coe("cluster", "show", "k8s-a", "-f", "json")).json()
            if body.get("status") == status:
                return body
            if str(body.get("status", "")).endswith("_FAILED"):
                break
            time.sleep(0.5)
        raise CheckFailed("cluster k8s-a did not reach %s within %ds (last: %s, %s)"
                          % (status, WAIT_TIMEOUT, body.get("status"), body.get("status_reason")))

    def create() -> None:
        r = expect_ok(coe("cluster", "template", "create", "k8s-tpl", "--coe", "kubernetes",
                          "--image", "fedora-coreos-40", "--external-network", "public", "-f", "json"))
        expect_fields(r, {"name": "k8s-tpl", "tls_disabled": False})
        expect_ok(coe("cluster", "create", "k8s-a", "--cluster-template", "k8s-tpl"))
        body = wait_for("CREATE_COMPLETE")
        if not body.get("api_address"):
            raise CheckFailed("the cluster has no api_address: %r" % (body,))
        state["uuid"] = body["uuid"]
        state["api_address"] = body["api_address"]

    rep.check("template (tls_disabled false) and cluster create; the cluster reaches CREATE_COMPLETE", create)

    def config(label: str) -> tuple[Path, Path]:
        d = work / label
        d.mkdir()
        r = expect_ok(coe("cluster", "config", "k8s-a", "--dir", str(d)))
        kubeconfig = d / "config"
        if not kubeconfig.exists():
            raise CheckFailed("no %s written\n%s" % (kubeconfig, r.describe()))
        fields = kubeconfig_fields(kubeconfig)
        if fields["server"] != state.get("api_address"):
            raise CheckFailed("kubeconfig server is %r, the cluster's api_address %r"
                              % (fields["server"], state.get("api_address")))
        ca, cert = d / "ca.pem", d / "cert.pem"
        ca.write_bytes(base64.b64decode(fields["certificate-authority-data"]))
        cert.write_bytes(base64.b64decode(fields["client-certificate-data"]))
        v = verify(ca, cert, d)
        if v.returncode != 0 or "OK" not in v.stdout:
            raise CheckFailed("openssl verify -CAfile ca.pem cert.pem failed:\n%s%s" % (v.stdout, v.stderr))
        subject = openssl("x509", "-in", str(cert), "-noout", "-subject", cwd=d).stdout
        if "system:masters" not in subject or "admin" not in subject:
            raise CheckFailed("unexpected client certificate subject: %s" % subject)
        return ca, cert

    def cluster_config() -> None:
        ca, cert = config("config-1")
        state["ca_path"], state["cert_path"] = str(ca), str(cert)

    rep.check("cluster config --dir D: the kubeconfig's client certificate passes `openssl verify -CAfile` "
              "and its server is the cluster's api_address", cluster_config)

    def ca_show() -> None:
        r = expect_ok(coe("ca", "show", "k8s-a"))
        pem = r.out.strip()
        if not pem.startswith("-----BEGIN CERTIFICATE-----"):
            raise CheckFailed("no PEM certificate printed\n" + r.describe())
        if "ca_path" in state and pem != Path(state["ca_path"]).read_text().strip():
            raise CheckFailed("ca show differs from the kubeconfig's CA\n" + r.describe())
        state["old_ca"] = pem

    rep.check("ca show prints the cluster CA (the kubeconfig's CA)", ca_show)

    def ca_sign() -> None:
        d = work / "sign"
        d.mkdir()
        made = openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "dev.key",
                       "-subj", "/CN=dev-user/O=developers", "-out", "dev.csr", cwd=d)
        if made.returncode != 0:
            raise CheckFailed("openssl req failed:\n" + made.stderr)
        r = expect_ok(coe("ca", "sign", "k8s-a", str(d / "dev.csr")))
        pem = r.out.strip()
        if not pem.startswith("-----BEGIN CERTIFICATE-----"):
            raise CheckFailed("no PEM certificate printed\n" + r.describe())
        (d / "dev.pem").write_text(pem + "\n")
        (d / "ca.pem").write_text(state.get("old_ca", "") + "\n")
        v = verify(d / "ca.pem", d / "dev.pem", d)
        if v.returncode != 0:
            raise CheckFailed("the signed certificate does not verify against the CA:\n%s%s" % (v.stdout, v.stderr))
        subject = openssl("x509", "-in", "dev.pem", "-noout", "-subject", cwd=d).stdout
        if "dev-user" not in subject or "developers" not in subject:
            raise CheckFailed("the signed certificate has subject %s" % subject)

    rep.check("ca sign with a CSR made by `openssl req`: the certificate keeps its subject and chains to the CA", ca_sign)

    def ca_rotate() -> None:
        r = expect_ok(coe("ca", "rotate", "k8s-a"))
        if "accepted" not in r.out:
            raise CheckFailed("no acceptance printed\n" + r.describe())
        wait_for("UPDATE_COMPLETE")
        new = expect_ok(coe("ca", "show", "k8s-a")).out.strip()
        if not new.startswith("-----BEGIN CERTIFICATE-----") or new == state.get("old_ca"):
            raise CheckFailed("ca show still returns the old CA after the rotation")
        ca, _cert = config("config-2")
        old_cert = Path(state.get("cert_path", "/nonexistent"))
        if old_cert.exists() and verify(ca, old_cert, ca.parent).returncode == 0:
            raise CheckFailed("the client certificate signed by the old CA still verifies against the new one")

    rep.check("ca rotate: UPDATE_COMPLETE, a new CA is shown, a new kubeconfig chains to it and the old "
              "certificate does not", ca_rotate)

    def credential_rotate() -> None:
        r = expect_ok(coe("credential", "rotate", "k8s-a"))
        if "accepted" not in r.out or state.get("uuid", "?") not in r.out:
            raise CheckFailed("expected 'Request to rotate credentials for cluster <uuid> accepted.'\n"
                              + r.describe())

    rep.check("credential rotate (API 1.12) is accepted", credential_rotate)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="path of the fleetyard binary to test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = ap.parse_args()

    binary = os.path.abspath(args.bin)
    if not os.access(binary, os.X_OK):
        print("cert-cli-check: %s is not an executable file" % binary, file=sys.stderr)
        print("cert-cli-check: 0 passed, 1 failed")
        return 1
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "openstack").exists():
        print("cert-cli-check: no `openstack` beside %s; run me with the clients venv's python "
              "(./tox.sh cli builds it)" % sys.executable, file=sys.stderr)
        print("cert-cli-check: 0 passed, 1 failed")
        return 1
    if shutil.which("openssl") is None:
        print("cert-cli-check: `openssl` is not on the PATH", file=sys.stderr)
        print("cert-cli-check: 0 passed, 1 failed")
        return 1

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    root = Path(tempfile.mkdtemp(prefix="fleetyard-cert-cli-check-"))
    rep = Report()
    try:
        clients_cwd = root / "cwd"  # empty: a clouds.yaml here would change the CLI's auth
        clients_cwd.mkdir()
        cli = Clients(venv_bin, clients_cwd)
        work = root / "work"
        work.mkdir()
        run_phase(rep, binary, root, "certificates", {},
                  lambda srv: cert_checks(rep, cli, srv, work))
    finally:
        if args.keep:
            print("# kept %s" % root, flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("cert-cli-check: %d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
