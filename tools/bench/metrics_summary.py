"""Summarises a scrape of fleetyard's /metrics for ./tox.sh bench: the server-side mean time
per route (requests >= 1000), the database pool's gauges and mean wait, and how many callers
the shared single-row reads answered per statement.

    python3 metrics_summary.py METRICS_TXT
"""

import re
import sys


def main() -> None:
    sums, counts, pool, plain = {}, {}, {}, {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            m = re.match(r"fleetyard_http_request_duration_seconds_(sum|count)\{(.*)\} (\S+)", line)
            if m:
                labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                key = (labels.get("method", ""), labels.get("route", ""), labels.get("status", ""))
                (sums if m.group(1) == "sum" else counts)[key] = float(m.group(3))
                continue
            m = re.match(r'fleetyard_db_pool_connections\{state="(\w+)"\} (\S+)', line)
            if m:
                pool[m.group(1)] = m.group(2)
                continue
            m = re.match(r"(fleetyard_db_\w+) (\S+)$", line)
            if m:
                plain[m.group(1)] = float(m.group(2))
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        if n >= 1000:
            mean = 1000 * sums.get(key, 0.0) / n
            print(f"  {key[0]:<6} {key[1]:<56} {key[2]}  n={n:>9.0f}  mean {mean:7.3f} ms")
    print("  pool at the scrape: " + ", ".join(f"{k} {v}" for k, v in sorted(pool.items())))
    waits = plain.get("fleetyard_db_pool_wait_seconds_count", 0.0)
    if waits:
        mean = 1e6 * plain.get("fleetyard_db_pool_wait_seconds_sum", 0.0) / waits
        print(f"  pool wait: {waits:.0f} connections taken, mean wait {mean:.1f} us")
    statements = plain.get("fleetyard_db_shared_read_statements_total", 0.0)
    if statements:
        callers = plain.get("fleetyard_db_shared_read_callers_total", 0.0)
        print(
            f"  shared single-row reads: {callers:.0f} callers in {statements:.0f} statements "
            f"({callers / statements:.2f} callers per statement)"
        )


if __name__ == "__main__":
    main()
