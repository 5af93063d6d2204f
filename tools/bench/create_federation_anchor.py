"""Writes the pgbench script that anchors POST /v1/federations in ./tox.sh bench: the three
inserts the service commits for one create (the federation row, its conductor job and its
notification, with a real notification body taken from the outbox) in one transaction.

    python3 create_federation_anchor.py HOST_UUID DRIVER MESSAGE_FILE > script.sql
"""

import json
import sys


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def main() -> None:
    host = sys.argv[1]
    driver = sys.argv[2]
    with open(sys.argv[3], encoding="utf-8") as f:
        message = json.dumps(json.loads(f.read()))
    props = quote(json.dumps({"dns-zone": "bench.example."}))
    print("BEGIN;")
    print(
        "INSERT INTO federation (uuid, project_id, user_id, name, hostcluster_id, member_ids, "
        f"status, properties, version, created_at) VALUES (gen_random_uuid()::text, 'bench', "
        f"'bench-user', 'anchor-' || gen_random_uuid()::text, {quote(host)}, '[]', "
        f"'CREATE_IN_PROGRESS', {props}, 0, now());"
    )
    print(
        "INSERT INTO job (uuid, operation, resource_type, resource_uuid, driver, payload, state, "
        "attempts, max_attempts, run_after, deadline_at, created_at) VALUES "
        "(gen_random_uuid()::text, 'federation.create', 'federation', gen_random_uuid()::text, "
        f"{quote(driver)}, '{{}}', 'pending', 0, 5, now(), NULL, now());"
    )
    print(
        "INSERT INTO outbox (message_id, resource_type, resource_uuid, event_type, priority, "
        "message, created_at) VALUES (gen_random_uuid()::text, 'federation', "
        "gen_random_uuid()::text, 'magnum.federation.create', 'INFO', "
        f"{quote(message)}, now()) RETURNING pg_notify('fleetyard_outbox', '');"
    )
    print("END;")


if __name__ == "__main__":
    main()
