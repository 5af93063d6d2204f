"""The table and the JSON of ./tox.sh bench.

    python3 report.py FIGURES_TSV OUT_JSON

FIGURES_TSV holds one figure per line, "key<TAB>value", written as the bench measures:
  rps:<scenario>, p50:<scenario>, p99:<scenario>   wrk, per scenario
  anchor:<name>                                     what PostgreSQL itself serves (tps)
  rss_kib:<process>, hwm_kib:<process>              resident and peak memory (/proc)
  notify:<key>                                      examples/notify_bench.rs's NOTIFY_JSON
  probe:<key>                                       examples/health_probe_bench.rs's PROBE_JSON
  runs:<scenario or anchor:name>                    every run's req/s or tps, space-separated;
                                                    the figure is their median
Every goal is a ratio to an anchor measured in the same run, or a bound; a goal whose figures
are missing (a shorter run) is listed as not measured. A ratio without a target is shown for
what it explains ("info").
"""

import json
import sys


def load(path):
    figures, runs = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("\t")
            try:
                if key.startswith("runs:"):
                    runs[key[len("runs:"):]] = [float(v) for v in value.split()]
                else:
                    figures[key] = float(value)
            except ValueError:
                continue
    return figures, runs


def goals(fig):
    prefix = "rps:GET clusters?limit=100 first page @"
    sizes = sorted({int(k[len(prefix):]) for k in fig if k.startswith(prefix) and k[len(prefix):].isdigit()})
    out = []

    def ratio(label, num, den, target, cmp=">="):
        out.append(("ratio", label, num, den, target, cmp))

    def bound(label, key, target, unit, scale=1.0):
        out.append(("bound", label, key, scale, target, unit))

    for name in ("clustertemplate", "federation", "cluster", "nodegroup"):
        ratio(f"GET {name} / pgbench -S", f"rps:GET {name}", "anchor:pgbench -S", 0.70)
    # How much of GET cluster's distance is its statement's weight in PostgreSQL.
    ratio("pgbench GET cluster's own statement / pgbench -S", "anchor:GET cluster statement",
          "anchor:pgbench -S", None)
    ratio("GET cluster / pgbench its own statement", "rps:GET cluster",
          "anchor:GET cluster statement", None)
    for n in sizes:
        ratio(f"GET clusters?limit=100 @{n} / pgbench same page",
              f"rps:GET clusters?limit=100 first page @{n}", f"anchor:list page @{n}", 0.50)
        ratio(f"GET clusters/detail?limit=100 @{n} / pgbench same page",
              f"rps:GET clusters/detail?limit=100 first page @{n}", f"anchor:detail page @{n}", 0.50)
        ratio(f"deep / first page p99 @{n} (medians of 3)", f"p99:GET clusters?limit=100 deep page @{n}",
              f"p99:GET clusters?limit=100 first page @{n}", 1.5, "<=")
    ratio("POST federation / pgbench same 3 inserts", "rps:POST federation",
          "anchor:create federation", 0.70)
    ratio("relay / raw lapin confirmed publish", "notify:relay_msgs_per_s", "notify:raw_msgs_per_s", 0.80)
    bound("commit-to-consumer p99, relay in writer's process", "notify:latency_same_p99_ms", 50, "ms")
    bound("commit-to-consumer p99, relay woken by LISTEN", "notify:latency_listen_p99_ms", 50, "ms")
    # The round's length against [health_probe] interval: each cluster is probed once per
    # interval only while a round fits in one.
    clusters = fig.get("probe:clusters")
    over = f" over {clusters:,.0f} clusters" if clusters else ""
    ratio(f"health prober round{over}, a tenth hanging / interval",
          "probe:round_s", "probe:interval_s", 1.0, "<=")
    bound("fleetyard api RSS after the list load @1000", "rss_kib:api_list", 32, "MiB", 1 / 1024)
    bound("fleetyard api peak RSS through the list load (VmHWM)", "hwm_kib:api_list", 32, "MiB",
          1 / 1024)
    bound("fleetyard api RSS after every page load (detail too)", "rss_kib:api_pages", 32, "MiB",
          1 / 1024)
    bound("fleetyard api peak RSS through every page load (VmHWM)", "hwm_kib:api_pages", 32,
          "MiB", 1 / 1024)
    bound("fleetyard api RSS after every load (writes too)", "rss_kib:api", 32, "MiB", 1 / 1024)
    bound("fleetyard api peak RSS through every load (VmHWM)", "hwm_kib:api", 32, "MiB", 1 / 1024)
    bound("fleetyard serve (SQLite) RSS after its list load", "rss_kib:serve", 48, "MiB", 1 / 1024)
    bound("fleetyard serve (SQLite) peak RSS (VmHWM)", "hwm_kib:serve", 48, "MiB", 1 / 1024)
    ratio("serve on SQLite list @1000 / api on PostgreSQL list @1000",
          "rps:GET clusters?limit=100 first page @1000 (serve, SQLite)",
          "rps:GET clusters?limit=100 first page @1000", 1.0)
    for name in ("federation", "cluster"):
        ratio(f"GET {name} after 100,000 updates without vacuum / right before",
              f"rps:GET {name} (bloated)", f"rps:GET {name} (before the updates)", 0.70)
    return out


def main():
    fig, runs = load(sys.argv[1])
    rows = []
    for g in goals(fig):
        if g[0] == "ratio":
            _, label, num, den, target, cmp = g
            a, b = fig.get(num), fig.get(den)
            value = a / b if a is not None and b else None
            if target is None:
                rows.append({"goal": label, "figure": a, "anchor": b, "value": value,
                             "target": "-", "met": None, "info": True, "figure_key": num,
                             "anchor_key": den})
                continue
            met = None if value is None else (value >= target if cmp == ">=" else value <= target)
            rows.append({"goal": label, "figure": a, "anchor": b, "value": value,
                         "target": f"{cmp} {target:.2f}x", "met": met, "figure_key": num,
                         "anchor_key": den})
        else:
            _, label, key, scale, target, unit = g
            a = fig.get(key)
            value = None if a is None else a * scale
            met = None if value is None else value <= target
            rows.append({"goal": label, "figure": value, "anchor": None, "value": value,
                         "target": f"<= {target} {unit}", "met": met, "figure_key": key,
                         "anchor_key": None})
    print(f"{'goal':<68} {'figure':>10} {'anchor':>10} {'value':>8}  {'target':<12} met")
    for r in rows:
        num = lambda v, f: "-" if v is None else f.format(v)
        if r.get("info"):
            met = "info"
        else:
            met = "not measured" if r["met"] is None else ("yes" if r["met"] else "NO")
        value = num(r["value"], "{:.2f}x" if r["anchor_key"] else "{:.1f}")
        print(f"{r['goal']:<68} {num(r['figure'], '{:.5g}'):>10} {num(r['anchor'], '{:.5g}'):>10} "
              f"{value:>8}  {r['target']:<12} {met}")
    # The runs behind each median: the req/s or tps of a ratio's figure and anchor, kept as
    # "runs:<scenario>" and "runs:anchor:<name>" (a p99 or memory figure has none).
    def scenario(key):
        if key and key.startswith("rps:"):
            return key[len("rps:"):]
        return key if key and key.startswith("anchor:") else None

    spread = []
    for r in rows:
        r["figure_runs"] = runs.get(scenario(r["figure_key"]))
        r["anchor_runs"] = runs.get(scenario(r["anchor_key"]))
        if r["figure_runs"] and r["anchor_runs"]:
            f, a = r["figure_runs"], r["anchor_runs"]
            spread.append(f"{r['goal']:<68} {min(f):>10.0f}-{max(f):<10.0f} {min(a):>10.0f}-{max(a):<10.0f}")
    if spread:
        print("\nThe runs behind each median (req/s or tps, lowest-highest of each)")
        print(f"{'goal':<68} {'figure runs':>21} {'anchor runs':>21}")
        print("\n".join(spread))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"goals": rows, "figures": fig, "runs": runs}, f, indent=2, sort_keys=True)
    print(f"\n(written as JSON to {sys.argv[2]})")


if __name__ == "__main__":
    main()
