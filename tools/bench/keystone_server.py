#!/usr/bin/env python3
"""A real Keystone for `./tox.sh bench`, started as tools/keystone_check.py starts one.

Bootstraps Keystone 30 (from .tox/keystone) on SQLite with fernet tokens in WORKDIR, serves it
with gunicorn (one worker) on a free loopback port, creates the same service user and
projects as the keystone check, issues a token for project A's member, and writes what the
benchmark needs as JSON to --ready:

    {"auth_url": ..., "service_password": ..., "token": ..., "project_id": ...,
     "access_log": ...}

(`access_log` is gunicorn's: one line per Keystone request, so the benchmark counts token
validations.) Then it waits; SIGTERM or SIGINT stops Keystone. Run it with the clients venv's
python (the set-up uses openstacksdk):

    .tox/clients/bin/python tools/bench/keystone_server.py --keystone-venv .tox/keystone \\
        --workdir /tmp/ks --ready /tmp/ks/ready.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import keystone_check as kc  # noqa: E402  (the keystone check's Keystone and set-up)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keystone-venv", default=".tox/keystone")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--ready", required=True, help="where to write the JSON once Keystone serves")
    args = ap.parse_args()

    for var in ("no_proxy", "NO_PROXY"):
        os.environ[var] = ",".join(filter(None, [os.environ.get(var), "127.0.0.1", "localhost"]))
    stop = {"now": False}

    def on_signal(signum: int, frame: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    ks = kc.Keystone(Path(os.path.abspath(args.keystone_venv)), Path(os.path.abspath(args.workdir)))
    try:
        ks.bootstrap()
        ks.start()
        projects = kc.create_identities(ks)
        token = kc.issue_token(ks, "a-member", "proj-a")
        ready = Path(args.ready)
        tmp = ready.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "auth_url": ks.url,
            "service_password": kc.SERVICE_PASSWORD,
            "token": token,
            "project_id": projects["proj-a"],
            "access_log": str(ks.access_log),
        }))
        tmp.rename(ready)
        print("keystone-bench: serving %s (bootstrap %.1f s, start %.1f s)"
              % (ks.url, ks.timings.get("bootstrap", 0), ks.timings.get("start", 0)),
              file=sys.stderr, flush=True)
        while not stop["now"]:
            if ks.proc is not None and ks.proc.poll() is not None:
                print("keystone-bench: gunicorn exited\n" + ks.log_tail(), file=sys.stderr)
                return 1
            time.sleep(0.2)
        return 0
    except kc.CheckFailed as e:
        print("keystone-bench: %s" % e, file=sys.stderr)
        return 1
    finally:
        ks.stop()


if __name__ == "__main__":
    sys.exit(main())
