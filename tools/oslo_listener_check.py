#!/usr/bin/env python3
"""The REAL oslo.messaging notification listener against a running Fleetyard.

Starts an oslo.messaging notification listener (`get_notification_listener`, no
pool, so it consumes the shared `notifications.<priority>` queues exactly like
Ceilometer or Searchlight do) on a fresh exchange, then `fleetyard serve`
configured with `driver = messagingv2` and that exchange as its
`control_exchange`, performs operations that emit events and checks what the
listener's endpoint received: event_type, priority, publisher_id, payload.

- Always: a cluster template create (`magnum.cluster_template.create`).
- When `POST /v1/clusters` exists: a cluster create, whose
  `magnum.cluster.create` pending and success events must both arrive.

Every check prints `ok - ...` or `FAIL - ...`; the last line is
`oslo-listener-check: N passed, N failed`; the exit status is 1 when anything
failed.  Run it through `./tox.sh oslo`, or by hand:

    .tox/oslo/bin/python tools/oslo_listener_check.py --bin target/debug/fleetyard

It needs oslo.messaging (and so kombu) in the Python it runs with, and
RabbitMQ on --transport-url (default rabbit://guest:guest@127.0.0.1:5672/).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable

START_TIMEOUT = 60  # seconds for `fleetyard serve` to answer /healthcheck
EVENT_TIMEOUT = 60  # seconds for an event to reach the listener
CLUSTER_TIMEOUT = 120  # seconds for a cluster create to finish (fake driver)
HOST = "oslo-check-host"

NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class CheckFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(text: str, lines: int = 25) -> str:
    parts = (text or "").rstrip().splitlines()
    return "\n".join(parts[-lines:])


class Received:
    """What the listener's endpoint was handed, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.items: list[dict[str, Any]] = []

    def add(self, priority: str, ctxt: Any, publisher_id: str, event_type: str, payload: Any, metadata: Any) -> None:
        with self.lock:
            self.items.append(
                {
                    "priority": priority,
                    "ctxt": ctxt,
                    "publisher_id": publisher_id,
                    "event_type": event_type,
                    "payload": payload,
                    "metadata": metadata,
                }
            )
            self.lock.notify_all()

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for item in self.items:
                    if match(item):
                        return item
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)

    def summary(self) -> str:
        with self.lock:
            return "\n".join(
                "    %s %s %s" % (i["priority"], i["event_type"], (i["payload"] or {}).get("target", {}).get("id"))
                for i in self.items
            ) or "    (nothing)"


class Endpoint:
    """oslo.messaging calls the method named like the message's priority."""

    def __init__(self, received: Received):
        self.received = received

    def _handler(priority: str):  # type: ignore[misc]
        def handle(self, ctxt, publisher_id, event_type, payload, metadata):
            self.received.add(priority, ctxt, publisher_id, event_type, payload, metadata)

        return handle

    audit = _handler("audit")
    debug = _handler("debug")
    info = _handler("info")
    warn = _handler("warn")
    error = _handler("error")
    critical = _handler("critical")
    sample = _handler("sample")


class Server:
    """`fleetyard serve` with its own port, SQLite database and log."""

    def __init__(self, binary: str, workdir: Path, env: dict[str, str]):
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.log_path = workdir / "server.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FLEETYARD__")}
        self.env.update(
            {
                "FLEETYARD__API__HOST": "127.0.0.1",
                "FLEETYARD__API__PORT": str(self.port),
                "FLEETYARD__DATABASE__CONNECTION": "sqlite://%s" % (workdir / "fleetyard.sqlite"),
                "FLEETYARD__DEFAULT__HOST": HOST,
            }
        )
        self.env.update(env)
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
                raise CheckFailed("`fleetyard serve` exited with %s:\n%s" % (self.proc.returncode, self.log()))
            try:
                with NO_PROXY_OPENER.open(self.base + "/healthcheck", timeout=2) as r:
                    if r.status == 200:
                        return
                    last = "HTTP %d" % r.status
            except urllib.error.HTTPError as e:
                last = "HTTP %d" % e.code
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            time.sleep(0.2)
        raise CheckFailed("/healthcheck did not answer within %ds (last: %s)\n%s" % (START_TIMEOUT, last, self.log()))

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

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with NO_PROXY_OPENER.open(req, timeout=30) as r:
                text = r.read().decode()
                status = r.status
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            status = e.code
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text


class Check:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def run(self, name: str, fn: Callable[[], None]) -> bool:
        try:
            fn()
        except CheckFailed as e:
            self.failed += 1
            print("FAIL - %s\n%s" % (name, "\n".join("    " + line for line in str(e).splitlines())), flush=True)
            return False
        except Exception:  # a bug in the check or an unexpected client error: still a failure
            self.failed += 1
            print("FAIL - %s\n%s" % (name, traceback.format_exc()), flush=True)
            return False
        self.passed += 1
        print("ok - %s" % name, flush=True)
        return True


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def check_event(item: dict[str, Any] | None, what: str, received: Received, server: Server, *,
                priority: str, event_type: str, target_id: str, action: str, outcome: str,
                type_uri: str) -> None:
    if item is None:
        raise CheckFailed(
            "the listener did not receive %s within %ds; it received:\n%s\nserver log:\n%s"
            % (what, EVENT_TIMEOUT, received.summary(), server.log())
        )
    p = item["payload"]
    expect(item["priority"] == priority, "priority %r, expected %r" % (item["priority"], priority))
    expect(item["event_type"] == event_type, "event_type %r" % item["event_type"])
    expect(item["publisher_id"] == "container-infra.%s" % HOST, "publisher_id %r" % item["publisher_id"])
    expect(isinstance(p, dict), "payload is not an object: %r" % (p,))
    expect(p.get("typeURI") == "http://schemas.dmtf.org/cloud/audit/1.0/event", "payload typeURI %r" % p.get("typeURI"))
    expect(p.get("eventType") == "activity", "eventType %r" % p.get("eventType"))
    expect(p.get("action") == action, "action %r, expected %r" % (p.get("action"), action))
    expect(p.get("outcome") == outcome, "outcome %r, expected %r" % (p.get("outcome"), outcome))
    target = p.get("target") or {}
    expect(target.get("id") == target_id, "target id %r" % target.get("id"))
    expect(target.get("typeURI") == type_uri, "target typeURI %r" % target.get("typeURI"))
    attachments = target.get("attachments") or []
    expect(len(attachments) == 1 and isinstance(attachments[0].get("content"), dict), "target attachments %r" % attachments)
    meta = item["metadata"] or {}
    expect(bool(meta.get("message_id")), "metadata has no message_id: %r" % meta)
    expect(bool(meta.get("timestamp")), "metadata has no timestamp: %r" % meta)
    ctxt = item["ctxt"] or {}
    expect(not ctxt.get("auth_token"), "the context carries a token: %r" % ctxt.get("auth_token"))


def delete_exchange(url: str, exchange: str) -> None:
    """Best effort: remove the check's exchange (its bindings go with it)."""
    try:
        import kombu

        with kombu.Connection(url.replace("rabbit://", "amqp://", 1), connect_timeout=5) as conn:
            conn.default_channel.exchange_delete(exchange)
    except Exception as e:  # cleanup only
        print("# note: could not delete exchange %s: %s" % (exchange, e), flush=True)


def default_transport_url() -> str:
    """FLEETYARD_TEST_AMQP_URL (amqp://...) in oslo's rabbit:// form: oslo reads amqp:// as
    its AMQP 1.0 driver."""
    url = os.environ.get("FLEETYARD_TEST_AMQP_URL", "")
    if url.startswith("amqp://"):
        return "rabbit://" + url[len("amqp://"):]
    return url or "rabbit://guest:guest@127.0.0.1:5672/"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the fleetyard binary")
    ap.add_argument("--transport-url", default=default_transport_url(),
                    help="oslo's form (rabbit://...); default from FLEETYARD_TEST_AMQP_URL, else the local broker")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    # oslo.messaging imports eventlet-era modules that warn on import; the check does not use them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import oslo_messaging
        from oslo_config import cfg

    exchange = "fy-oslo-check-%s" % uuid.uuid4().hex[:12]
    print("# exchange %s, broker %s" % (exchange, args.transport_url.split("@")[-1]), flush=True)
    check = Check()
    received = Received()
    workdir = Path(tempfile.mkdtemp(prefix="fy-oslo-check-"))
    conf = cfg.ConfigOpts()
    conf([], project="fleetyard-oslo-check")
    transport = oslo_messaging.get_notification_transport(conf, url=args.transport_url)
    targets = [oslo_messaging.Target(exchange=exchange, topic="notifications")]
    listener = oslo_messaging.get_notification_listener(
        transport, targets, [Endpoint(received)], executor="threading"
    )
    server = Server(
        os.path.abspath(args.bin),
        workdir,
        {
            "FLEETYARD__OSLO_MESSAGING_NOTIFICATIONS__DRIVER": "messagingv2",
            "FLEETYARD__DEFAULT__CONTROL_EXCHANGE": exchange,
            "FLEETYARD__DEFAULT__TRANSPORT_URL": args.transport_url,
            "FLEETYARD__DEFAULT__LOG_LEVEL": "info",
        },
    )

    def scenario() -> None:
        listener.start()
        if not check.run("fleetyard serve starts with driver = messagingv2", server.start):
            return

        template: dict[str, Any] = {}

        def template_create() -> None:
            status, body = server.request(
                "POST",
                "/v1/clustertemplates",
                {
                    "name": "oslo-check",
                    "coe": "kubernetes",
                    "image_id": "fedora-coreos-40",
                    "keypair_id": "oslo-check-key",
                    "external_network_id": "public",
                    "flavor_id": "m1.small",
                    "master_flavor_id": "m1.small",
                },
            )
            expect(status == 201, "POST /v1/clustertemplates: HTTP %s %s" % (status, body))
            template.update(body)
            uid = body["uuid"]
            item = received.wait_for(
                lambda i: i["event_type"] == "magnum.cluster_template.create"
                and (i["payload"] or {}).get("target", {}).get("id") == uid,
                EVENT_TIMEOUT,
            )
            check_event(item, "magnum.cluster_template.create", received, server, priority="info",
                        event_type="magnum.cluster_template.create", target_id=uid, action="create",
                        outcome="success", type_uri="service/magnum/cluster_template")

        if not check.run("listener receives magnum.cluster_template.create (INFO, CADF payload)", template_create):
            return

        status, _ = server.request("GET", "/v1/clusters")
        if status == 404:
            print("# POST /v1/clusters does not exist yet (GET /v1/clusters: 404): cluster events not checked", flush=True)
            return

        cluster: dict[str, Any] = {}

        def cluster_create() -> None:
            status, body = server.request(
                "POST",
                "/v1/clusters",
                {
                    "name": "oslo-check",
                    "cluster_template_id": template["uuid"],
                    "master_count": 1,
                    "node_count": 1,
                    "keypair": "oslo-check-key",
                },
            )
            expect(status == 202, "POST /v1/clusters: HTTP %s %s" % (status, body))
            cluster.update(body)

        if not check.run("POST /v1/clusters is accepted", cluster_create):
            return
        cid = cluster["uuid"]

        def event(outcome: str, timeout: float) -> Callable[[], None]:
            def run() -> None:
                item = received.wait_for(
                    lambda i: i["event_type"] == "magnum.cluster.create"
                    and (i["payload"] or {}).get("target", {}).get("id") == cid
                    and (i["payload"] or {}).get("outcome") == outcome,
                    timeout,
                )
                check_event(item, "magnum.cluster.create (%s)" % outcome, received, server,
                            priority="info", event_type="magnum.cluster.create", target_id=cid,
                            action="create", outcome=outcome, type_uri="service/magnum/cluster")
                content = item["payload"]["target"]["attachments"][0]["content"]
                expect(item["payload"]["target"]["attachments"][0].get("name") == "cluster_data",
                       "attachment name %r" % item["payload"]["target"]["attachments"][0].get("name"))
                expect("docker_volume_size:" in content, "Magnum's 'docker_volume_size:' key is missing: %r" % sorted(content))
            return run

        check.run("listener receives magnum.cluster.create pending (INFO)", event("pending", EVENT_TIMEOUT))
        check.run("listener receives magnum.cluster.create success (INFO)", event("success", CLUSTER_TIMEOUT))
        return

    try:
        scenario()
    finally:
        server.stop()
        try:
            listener.stop()
            listener.wait()
        except Exception:
            pass
        transport.cleanup()
        delete_exchange(args.transport_url, exchange)
        if not args.keep:
            for p in sorted(workdir.rglob("*"), reverse=True):
                try:
                    p.unlink() if p.is_file() else p.rmdir()
                except OSError:
                    pass
            try:
                workdir.rmdir()
            except OSError:
                pass
        else:
            print("# work directory kept: %s" % workdir)
    return finish(check)


def finish(check: Check) -> int:
    print("oslo-listener-check: %d passed, %d failed" % (check.passed, check.failed), flush=True)
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
