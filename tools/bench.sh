#!/usr/bin/env bash
# The benchmark behind `./tox.sh bench`: release build, the API on PostgreSQL, seeded data,
# wrk load over loopback, pgbench -S as the reference, and the conductor's status-sync round.
#
#   ./tox.sh bench                    full run (up to 1,000,000 clusters)
#   BENCH_MAX_CLUSTERS=100000 ./tox.sh bench   a shorter run
#   BENCH_DURATION=10 BENCH_CONNECTIONS=32     per-scenario seconds and connections
#   BENCH_KEYSTONE=0                  skip the Keystone-token GET (it needs .tox/keystone and
#                                     .tox/clients: run ./tox.sh keystone once)
#   BENCH_ONLY=notifications          only the notification section: raw lapin confirmed
#                                     publishing beside the relay, and commit-to-consumer latency
#   BENCH_ONLY=health_probe           only the health prober: one full round over
#                                     BENCH_PROBE_CLUSTERS (100,000) clusters, a tenth behind
#                                     hanging listeners, at BENCH_PROBE_CONCURRENCY (2048)
#   BENCH_ONLY=registry / machines / groups
#                                     run by tox.sh itself: examples/registry_bench.rs,
#                                     examples/machine_bench.rs and examples/group_bench.rs
#                                     (see docs/performance.rst)
#
# It ends with one table of goals: each figure beside its anchor measured in the same run
# (pgbench running the same statements, raw lapin publishing) and the ratio, written as JSON
# too (BENCH_JSON, default $CARGO_TARGET_DIR/bench/bench.json) for comparison between runs.
# Every goal's figures are medians of three runs taken in turn with their anchor's, on a shared
# machine: compare ratios within a run.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

PG_ADMIN="${FLEETYARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
PG_BASE="${PG_ADMIN%/*}"
DB=fleetyard_bench
DB_URL="$PG_BASE/$DB"
PORT="${BENCH_PORT:-19611}"
CONN="${BENCH_CONNECTIONS:-32}"
DURATION="${BENCH_DURATION:-10}"
MAX="${BENCH_MAX_CLUSTERS:-1000000}"
WORK="$(mktemp -d /tmp/fleetyard-bench.XXXXXX)"
API_PID=""
KS_API_PID=""
KEYSTONE_PID=""

stop_pid() { # pid: stop a process this script started, and wait for it
  if [[ -n "$1" ]]; then kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; fi
}

cleanup() {
  stop_pid "$API_PID"
  stop_pid "$KS_API_PID"
  stop_pid "$KEYSTONE_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '==> bench: %s\n' "$*" >&2; }
wait_healthy() { # base URL: wait up to 10 s for a process this script started to answer
  for _ in $(seq 1 100); do
    curl -sf "$1/healthcheck" >/dev/null && return 0
    sleep 0.1
  done
}

notifications() { # raw lapin vs the relay (msg/s, ratio) and commit-to-consumer p50/p99
  say "notifications: relay throughput beside raw lapin, commit-to-consumer latency"
  cargo run -q --release --example notify_bench -- --pg-url "$PG_ADMIN" 2>&1 || echo "notify bench failed"
}

health_probe() { # one health prober round over local HTTPS endpoints, a tenth hanging
  say "health probe: one round over ${BENCH_PROBE_CLUSTERS:-100000} clusters, a tenth hanging"
  cargo run -q --release --example health_probe_bench -- --pg-url "$PG_ADMIN" \
    --clusters "${BENCH_PROBE_CLUSTERS:-100000}" --concurrency "${BENCH_PROBE_CONCURRENCY:-2048}" \
    2>&1 || echo "health probe bench failed"
}

probe_figures() { # the health probe bench's output: its PROBE_JSON line as probe:<key> figures
  sed -n 's/^PROBE_JSON //p' | python3 -c '
import json, sys
for line in sys.stdin:
    for k, v in json.loads(line).items():
        print(f"probe:{k}\t{v}")' || true
}

if [[ "${BENCH_ONLY:-}" == health_probe ]]; then
  tools/ensure_services.sh >&2
  health_probe
  exit 0
fi

if [[ "${BENCH_ONLY:-}" == notifications ]]; then
  tools/ensure_services.sh >&2
  notifications
  exit 0
fi

tools/ensure_services.sh >&2
if ! command -v wrk >/dev/null 2>&1; then
  say "installing wrk (Debian package)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null
fi
if ! command -v sqlite3 >/dev/null 2>&1; then
  say "installing sqlite3 (Debian package), to seed the embedded database"
  DEBIAN_FRONTEND=noninteractive apt-get install -y sqlite3 >/dev/null
fi
say "building (release)"
cargo build --release --bin fleetyard --example conductor_bench >&2
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$TARGET/release/fleetyard"

psql_admin() { psql -v ON_ERROR_STOP=1 -qAt "$PG_ADMIN" "$@"; }
psql_db() { psql -v ON_ERROR_STOP=1 -qAt "$DB_URL" "$@"; }

say "fresh database $DB"
psql_admin -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
FLEETYARD__DATABASE__CONNECTION="$DB_URL" "$BIN" db upgrade >&2

METRICS_ADDR="127.0.0.1:$((PORT + 2))"
say "starting the API on 127.0.0.1:$PORT (metrics on $METRICS_ADDR)"
FLEETYARD__API__PORT="$PORT" FLEETYARD__DATABASE__CONNECTION="$DB_URL" \
  FLEETYARD__METRICS__LISTEN_ADDRESS="$METRICS_ADDR" \
  FLEETYARD__DATABASE__MAX_POOL_SIZE="$CONN" FLEETYARD__DATABASE__AUTO_MIGRATE=false \
  FLEETYARD__DEFAULT__LOG_LEVEL=warn "$BIN" api >"$WORK/api.log" 2>&1 &
API_PID=$!
wait_healthy "http://127.0.0.1:$PORT"

BASE="http://127.0.0.1:$PORT"
HDR=(-H "X-Project-Id: bench" -H "X-User-Id: bench-user" -H "X-Roles: member,reader")
JSON=(-H "Content-Type: application/json")

TPL=$(curl -sf "${HDR[@]}" "${JSON[@]}" -X POST "$BASE/v1/clustertemplates" \
  -d '{"name": "bench-template", "coe": "kubernetes", "image_id": "fedora-coreos-40"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')

seed() { # seed N more clusters after OFFSET existing ones
  psql_db -v n="$1" -v offset="$2" -f tools/bench/seed.sql >/dev/null
}

RESULTS="$WORK/results.tsv"
FIGURES="$WORK/figures.tsv"
: >"$FIGURES"
figure() { # key value: one figure for the goals table, also shown as it is measured
  printf '%s\t%s\n' "$1" "$2" >>"$FIGURES"
  case "$1" in rps:* | p50:* | p99:*) ;; *) say "figure $1 = $2" ;; esac
}
# Resident and peak memory of a process (KiB), from /proc.
memory() { # name pid
  figure "rss_kib:$1" "$(awk '/^VmRSS:/ { print $2 }' "/proc/$2/status")"
  figure "hwm_kib:$1" "$(awk '/^VmHWM:/ { print $2 }' "/proc/$2/status")"
}
# wrk's output to "name<TAB>req/s<TAB>p50 ms<TAB>p99 ms<TAB>non-2xx" on stdout
wrk_once() {
  local name="$1"; shift
  local out
  out=$(wrk -t2 -c"$CONN" -d"${DURATION}s" --latency "${HDR[@]}" "$@")
  echo "$out" >"$WORK/wrk-$(echo "$name" | tr ' /?=&' '_____').txt"
  echo "$out" | awk -v name="$name" '
    function ms(v) {
      if (v ~ /us$/) { sub(/us$/, "", v); return v / 1000 }
      if (v ~ /ms$/) { sub(/ms$/, "", v); return v + 0 }
      if (v ~ /s$/)  { sub(/s$/, "", v);  return v * 1000 }
      return v
    }
    /^ +50%/ { p50 = ms($2) }
    /^ +99%/ { p99 = ms($2) }
    /^Requests\/sec:/ { rps = $2 }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    END { printf "%s\t%.0f\t%.2f\t%.2f\t%s\n", name, rps, p50, p99, (bad == "" ? 0 : bad) }
  '
}
# A result row into the results and the figures.
record() { # row
  echo "$1" | tee -a "$RESULTS" >&2
  echo "$1" | awk -F'\t' '{ printf "rps:%s\t%s\np50:%s\t%s\np99:%s\t%s\n", $1, $2, $1, $3, $1, $4 }' >>"$FIGURES"
}
run_wrk() { # name, wrk arguments: one run of DURATION seconds
  record "$(wrk_once "$@")"
}
# One run of a pgbench anchor, as a row like wrk's (its tps in the req/s column).
pgbench_row() { # name, pgbench arguments
  local name="$1"; shift
  printf '%s\t%s\t0\t0\t0\n' "$name" "$(pgbench "$@" 2>/dev/null | awk '/^tps = / { print int($3) }' | tail -1)"
}
# Scenarios measured in rounds: each round runs every named scenario once, in turn
# (A B C A B C A B C), so that what else the shared machine does falls on all of them alike.
# A scenario is run by a function given its name: it prints one row. Rows gather in $ROUNDS
# until record_medians turns them into figures.
ROUNDS="$WORK/rounds.tsv"
rounds3() { # run function, names...
  local run="$1"; shift
  : >"$ROUNDS"
  for _ in 1 2 3; do
    for name in "$@"; do "$run" "$name" >>"$ROUNDS"; done
  done
}
# Each named scenario's figures as the median of its runs in $ROUNDS (req/s, p50 and p99 each;
# the mean of the middle two for an even count); an anchor ("anchor:...") as a figure, the
# rest as result rows. Every run's req/s is kept too, as "runs:<name>".
record_medians() { # names...
  local name row
  for name in "$@"; do
    row=$(awk -F'\t' -v name="$name" '
      function median(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      $1 == name { n++; r[n] = $2; p[n] = $3; q[n] = $4; bad += $5; runs = runs (n > 1 ? " " : "") $2 }
      END { if (n) printf "%s\t%.0f\t%.2f\t%.2f\t%d\t%s\n", name, median(r, n), median(p, n), median(q, n), bad, runs }
    ' "$ROUNDS")
    if [[ -z "$row" ]]; then continue; fi
    printf 'runs:%s\t%s\n' "$name" "$(cut -f6 <<<"$row")" >>"$FIGURES"
    case "$name" in
      anchor:*) figure "$name" "$(cut -f2 <<<"$row")" ;;
      *) record "$(cut -f1-5 <<<"$row")" ;;
    esac
  done
}

say "seeding 1,000 clusters"
seed 1000 0
HOST=$(psql_db -c "SELECT uuid FROM cluster WHERE project_id = 'bench' ORDER BY id LIMIT 1")
say "creating 100 federations on host $HOST"
for i in $(seq 1 100); do
  curl -sf "${HDR[@]}" "${JSON[@]}" -X POST "$BASE/v1/federations" \
    -d "{\"name\": \"fed$i\", \"hostcluster_id\": \"$HOST\", \"properties\": {\"dns-zone\": \"bench.example.\"}}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])'
done >"$WORK/federations.txt"
# The API alone runs no conductor: settle the seeded federations as a conductor would, so
# joins are accepted.
psql_db -c "UPDATE federation SET status = 'CREATE_COMPLETE'" >/dev/null
FED=$(head -1 "$WORK/federations.txt")
NG=$(psql_db -c "SELECT uuid FROM nodegroup WHERE cluster_id = '$HOST' AND role <> 'master' LIMIT 1")
psql_db -c "SELECT uuid FROM cluster WHERE project_id = 'bench' ORDER BY id OFFSET 1" >"$WORK/members.txt"

# The reference runs right before each round of the single-row GETs and once more after the
# last, so a change in what else the shared machine is doing falls on both; each GET's figure
# is the median of its three runs, the reference's the median of its four.
say "single-row GETs: three rounds, each after pgbench -S ($CONN connections)"
psql_admin -c "DROP DATABASE IF EXISTS fleetyard_pgbench WITH (FORCE)" -c "CREATE DATABASE fleetyard_pgbench" >/dev/null
pgbench -q -i -s 10 "$PG_BASE/fleetyard_pgbench" >/dev/null 2>&1
# One run of a single-row GET (a "(...)" after its name says when), or of their reference.
single_row() { # name
  case "$1" in
    "anchor:pgbench -S")
      pgbench_row "$1" -n -S -c "$CONN" -j 2 -T "$DURATION" "$PG_BASE/fleetyard_pgbench" ;;
    "GET clustertemplate") wrk_once "$1" "$BASE/v1/clustertemplates/$TPL" ;;
    "GET federation" | "GET federation ("*) wrk_once "$1" "$BASE/v1/federations/$FED" ;;
    "GET cluster" | "GET cluster ("*) wrk_once "$1" "$BASE/v1/clusters/$HOST" ;;
    "GET nodegroup") wrk_once "$1" -H "OpenStack-API-Version: container-infra latest" \
      "$BASE/v1/clusters/$HOST/nodegroups/$NG" ;;
  esac
}
SINGLE_ROW=("anchor:pgbench -S" "GET clustertemplate" "GET federation" "GET cluster" "GET nodegroup")
rounds3 single_row "${SINGLE_ROW[@]}"
single_row "anchor:pgbench -S" >>"$ROUNDS"
record_medians "${SINGLE_ROW[@]}"
PGBENCH_RUNS=$(awk -F'\t' '$1 == "runs:anchor:pgbench -S" { print $2 }' "$FIGURES")
PGBENCH_TPS=$(awk -F'\t' '$1 == "anchor:pgbench -S" { print $2 }' "$FIGURES")
psql_admin -c "DROP DATABASE IF EXISTS fleetyard_pgbench WITH (FORCE)" >/dev/null
# What PostgreSQL alone serves of GET cluster's own statement (its weight on the database's
# side), run as pgbench runs -S: the part of GET cluster's distance that is the statement's.
figure "anchor:GET cluster statement" "$(pgbench -n -M prepared -f tools/bench/get_cluster.sql \
  -D uuid="'$HOST'" -c "$CONN" -j 2 -T "$DURATION" "$DB_URL" 2>/dev/null |
  awk '/^tps = / { print int($3) }' | tail -1)"

# The same single-row GET with auth_strategy = keystone and one cached token, against a real
# Keystone started as tools/keystone_check.py starts one; its access log counts validations.
KEYSTONE_SUMMARY="Keystone token GET: skipped (BENCH_KEYSTONE=0)"
if [[ "${BENCH_KEYSTONE:-1}" != 0 ]]; then
  if [[ -x .tox/keystone/bin/keystone-manage && -x .tox/clients/bin/python ]]; then
    say "starting Keystone (tools/bench/keystone_server.py)"
    .tox/clients/bin/python tools/bench/keystone_server.py --keystone-venv .tox/keystone \
      --workdir "$WORK/keystone" --ready "$WORK/keystone.json" >"$WORK/keystone.out" 2>&1 &
    KEYSTONE_PID=$!
    for _ in $(seq 1 240); do
      [[ -f "$WORK/keystone.json" ]] && break
      kill -0 "$KEYSTONE_PID" 2>/dev/null || break
      sleep 0.5
    done
  fi
  if [[ -f "$WORK/keystone.json" ]]; then
    ks() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/keystone.json" "$1"; }
    KS_PORT=$((PORT + 1))
    KS_TOKEN=$(ks token)
    KS_LOG=$(ks access_log)
    say "starting an API with auth_strategy = keystone on 127.0.0.1:$KS_PORT"
    FLEETYARD__API__PORT="$KS_PORT" FLEETYARD__DATABASE__CONNECTION="$DB_URL" \
      FLEETYARD__DATABASE__MAX_POOL_SIZE="$CONN" FLEETYARD__DATABASE__AUTO_MIGRATE=false \
      FLEETYARD__DEFAULT__LOG_LEVEL=warn FLEETYARD__DEFAULT__AUTH_STRATEGY=keystone \
      FLEETYARD__KEYSTONE_AUTHTOKEN__AUTH_URL="$(ks auth_url)" \
      FLEETYARD__KEYSTONE_AUTHTOKEN__USERNAME=fleetyard \
      FLEETYARD__KEYSTONE_AUTHTOKEN__PASSWORD="$(ks service_password)" \
      FLEETYARD__KEYSTONE_AUTHTOKEN__PROJECT_NAME=service "$BIN" api >"$WORK/api-keystone.log" 2>&1 &
    KS_API_PID=$!
    wait_healthy "http://127.0.0.1:$KS_PORT"
    KS_BASE="http://127.0.0.1:$KS_PORT"
    validations() { grep -c '"GET /v3/auth/tokens' "$KS_LOG" || true; }
    KS_BEFORE=$(validations)
    # The token's first request (the create) is the one that asks Keystone.
    if KS_TPL=$(curl -sf -H "X-Auth-Token: $KS_TOKEN" "${JSON[@]}" -X POST "$KS_BASE/v1/clustertemplates" \
      -d '{"name": "bench-template-ks", "coe": "kubernetes", "image_id": "fedora-coreos-40"}' |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])'); then
      # No-auth right before and right after, so that what else the machine does shows as a
      # gap between those two instead of skewing the ratio.
      run_wrk "GET clustertemplate (no-auth, before)" "$BASE/v1/clustertemplates/$TPL"
      SAVED_HDR=("${HDR[@]}")
      HDR=(-H "X-Auth-Token: $KS_TOKEN")
      run_wrk "GET clustertemplate (Keystone token)" "$KS_BASE/v1/clustertemplates/$KS_TPL"
      HDR=("${SAVED_HDR[@]}")
      run_wrk "GET clustertemplate (no-auth, after)" "$BASE/v1/clustertemplates/$TPL"
      sleep 0.5 # gunicorn writes its access log line after the answer
      KS_CALLS=$(($(validations) - KS_BEFORE))
      # The create and wrk's requests.
      KS_REQUESTS=$(($(awk '/requests in/ { print $1 }' "$WORK/wrk-GET_clustertemplate_(Keystone_token).txt") + 1))
      KEYSTONE_SUMMARY=$(awk -v calls="$KS_CALLS" -v n="$KS_REQUESTS" 'BEGIN {
        printf "Keystone token validations (GET /v3/auth/tokens) for %d requests with one token: %d, %.4f per 1,000 requests (expected: 1 in all)", n, calls, (n > 0 ? calls * 1000 / n : 0) }')
    else
      KEYSTONE_SUMMARY="Keystone token GET: failed (the template create with the token was refused; see below)"
      tail -5 "$WORK/api-keystone.log" >&2
    fi
    stop_pid "$KS_API_PID"
    KS_API_PID=""
  else
    KEYSTONE_SUMMARY="Keystone token GET: skipped (no Keystone: run ./tox.sh keystone once to install .tox/keystone and .tox/clients)"
    if [[ -f "$WORK/keystone.out" ]]; then tail -5 "$WORK/keystone.out" >&2; fi
  fi
  stop_pid "$KEYSTONE_PID"
  KEYSTONE_PID=""
fi

list_at() {
  local n="$1"
  local deep
  deep=$(psql_db -c "SELECT uuid FROM cluster WHERE project_id = 'bench' ORDER BY id OFFSET $((n - 150)) LIMIT 1")
  list_page() { # name: one run of a page, or of the same page run by pgbench
    case "$1" in
      "anchor:list page @$n") pgbench_row "$1" -n -M prepared -f tools/bench/list_page.sql \
        -c "$CONN" -j 2 -T "$DURATION" "$DB_URL" ;;
      "anchor:detail page @$n") pgbench_row "$1" -n -M prepared -f tools/bench/list_detail_page.sql \
        -c "$CONN" -j 2 -T "$DURATION" "$DB_URL" ;;
      "GET clusters?limit=100 first page @$n") wrk_once "$1" "$BASE/v1/clusters?limit=100" ;;
      "GET clusters?limit=100 deep page @$n") wrk_once "$1" "$BASE/v1/clusters?limit=100&marker=$deep" ;;
      "GET clusters/detail?limit=100 first page @$n") wrk_once "$1" "$BASE/v1/clusters/detail?limit=100" ;;
    esac
  }
  # The list's first and deep page beside their reference, three rounds: the goal compares
  # the pages' p99, a figure one run on a shared machine moves by half.
  local list=("anchor:list page @$n" "GET clusters?limit=100 first page @$n"
    "GET clusters?limit=100 deep page @$n")
  rounds3 list_page "${list[@]}"
  record_medians "${list[@]}"
  # Memory under the list load and after it (the goal), before any detail page.
  if [[ "$n" == 1000 ]]; then memory api_list "$API_PID"; fi
  local detail=("anchor:detail page @$n" "GET clusters/detail?limit=100 first page @$n")
  rounds3 list_page "${detail[@]}"
  record_medians "${detail[@]}"
}
list_at 1000
COUNT=1000
for target in 100000 1000000; do
  if ((target > MAX)); then break; fi
  say "seeding up to $target clusters"
  seed $((target - COUNT)) "$COUNT"
  COUNT=$target
  list_at "$COUNT"
done

# Memory after every page load (detail pages of every fleet size too); again after the writes.
memory api_pages "$API_PID"

export BENCH_HOST="$HOST" BENCH_FEDERATIONS="$WORK/federations.txt" BENCH_MEMBERS="$WORK/members.txt"
run_wrk "PATCH federation join" -s tools/bench/join.lua "${JSON[@]}" "$BASE"
# POST federation beside its anchor: the same three inserts (row, job, notification with a
# real body) in one transaction, run by pgbench at the same concurrency; three rounds.
psql_db -c "SELECT message FROM outbox WHERE event_type LIKE 'magnum.federation.create%' ORDER BY id DESC LIMIT 1" >"$WORK/message.json"
python3 tools/bench/create_federation_anchor.py "$HOST" \
  "$(psql_db -c "SELECT driver FROM job WHERE operation = 'federation.create' LIMIT 1")" \
  "$WORK/message.json" >"$WORK/create_federation.sql"
create_federation() { # name: one run of POST federation, or of its anchor
  case "$1" in
    "POST federation") wrk_once "$1" -s tools/bench/create_federation.lua "${JSON[@]}" "$BASE/v1/federations" ;;
    "anchor:create federation") pgbench_row "$1" -n -M prepared -f "$WORK/create_federation.sql" \
      -c "$CONN" -j 2 -T "$DURATION" "$DB_URL" ;;
  esac
}
rounds3 create_federation "POST federation" "anchor:create federation"
record_medians "POST federation" "anchor:create federation"

# Plans after growth and bloat: 100,000 updates each of federation and cluster rows with
# autovacuum off, then the same single-row GETs again. Each is compared with the same GET
# right before the updates: by now the federation has the joins' members (about ninety), and
# a row four times as wide is a different read from the one measured at the start.
rounds3 single_row "GET federation (before the updates)" "GET cluster (before the updates)"
record_medians "GET federation (before the updates)" "GET cluster (before the updates)"
say "100,000 updates of federations and of clusters with autovacuum off"
psql_db -c "ALTER TABLE federation SET (autovacuum_enabled = off)" \
  -c "ALTER TABLE cluster SET (autovacuum_enabled = off)" >/dev/null
NFED=$(psql_db -c "SELECT max(id) FROM federation")
NCLU=$(psql_db -c "SELECT max(id) FROM cluster")
printf '\\set i random(1, %s)\nUPDATE federation SET updated_at = now() WHERE id = :i;\n' "$NFED" >"$WORK/bloat_fed.sql"
printf '\\set i random(1, %s)\nUPDATE cluster SET status_reason = NULL WHERE id = :i;\n' "$NCLU" >"$WORK/bloat_cluster.sql"
pgbench -n -M prepared -f "$WORK/bloat_fed.sql" -c 4 -j 2 -t 25000 "$DB_URL" >/dev/null 2>&1
pgbench -n -M prepared -f "$WORK/bloat_cluster.sql" -c 4 -j 2 -t 25000 "$DB_URL" >/dev/null 2>&1
rounds3 single_row "GET federation (bloated)" "GET cluster (bloated)"
record_medians "GET federation (bloated)" "GET cluster (bloated)"
psql_db -c "ALTER TABLE federation RESET (autovacuum_enabled)" \
  -c "ALTER TABLE cluster RESET (autovacuum_enabled)" >/dev/null

memory api "$API_PID"
# What the service saw, from its own /metrics: server-side time per route and the pool.
curl -sf "http://$METRICS_ADDR/metrics" >"$WORK/metrics.txt" || : >"$WORK/metrics.txt"

kill "$API_PID" 2>/dev/null || true
wait "$API_PID" 2>/dev/null || true
API_PID=""

# The embedded default: `fleetyard serve` (API, conductor, relay) on an SQLite file, seeded
# with 1,000 clusters the same way, and the same list.
SERVE_PORT=$((PORT + 3))
SQLITE_DB="$WORK/serve.sqlite"
say "starting fleetyard serve on SQLite ($SQLITE_DB), 127.0.0.1:$SERVE_PORT"
FLEETYARD__API__PORT="$SERVE_PORT" FLEETYARD__DATABASE__CONNECTION="sqlite://$SQLITE_DB" \
  FLEETYARD__QUOTAS__MAX_CLUSTERS_PER_PROJECT=100000 \
  FLEETYARD__DEFAULT__LOG_LEVEL=warn "$BIN" serve >"$WORK/serve.log" 2>&1 &
API_PID=$!
wait_healthy "http://127.0.0.1:$SERVE_PORT"
curl -sf "${HDR[@]}" "${JSON[@]}" -X POST "http://127.0.0.1:$SERVE_PORT/v1/clustertemplates" \
  -d '{"name": "bench-template", "coe": "kubernetes", "image_id": "fedora-coreos-40"}' >/dev/null
sqlite3 "$SQLITE_DB" <tools/bench/seed_sqlite.sql
serve_page() { # name: one run of a page from fleetyard serve
  case "$1" in
    "GET clusters?limit=100 "*) wrk_once "$1" "http://127.0.0.1:$SERVE_PORT/v1/clusters?limit=100" ;;
    "GET clusters/detail?limit=100 "*) wrk_once "$1" "http://127.0.0.1:$SERVE_PORT/v1/clusters/detail?limit=100" ;;
  esac
}
SERVE_PAGES=("GET clusters?limit=100 first page @1000 (serve, SQLite)"
  "GET clusters/detail?limit=100 first page @1000 (serve, SQLite)")
rounds3 serve_page "${SERVE_PAGES[@]}"
record_medians "${SERVE_PAGES[@]}"
memory serve "$API_PID"
stop_pid "$API_PID"
API_PID=""

say "conductor status-sync round over 10,000 in-progress clusters"
SYNC=$("$TARGET/release/examples/conductor_bench" --database-url "$DB_URL" --clusters 10000 --rounds 3)

echo
echo "Fleetyard benchmark: $CONN connections, ${DURATION}s per scenario, wrk over loopback, PostgreSQL"
printf '%-44s %10s %10s %10s %8s\n' "scenario" "req/s" "p50 ms" "p99 ms" "non-2xx"
while IFS=$'\t' read -r name rps p50 p99 bad; do
  printf '%-44s %10s %10s %10s %8s\n' "$name" "$rps" "$p50" "$p99" "$bad"
done <"$RESULTS"
echo
echo "pgbench -S (same connection count): ${PGBENCH_TPS} tps (median of ${PGBENCH_RUNS}: one before each round of the single-row GETs, one after the last; the ratios are in the goals table)"
awk -F'\t' '
  $1 == "GET clustertemplate (no-auth, before)" { before = $2 }
  $1 == "GET clustertemplate (no-auth, after)" { after = $2 }
  $1 == "GET clustertemplate (Keystone token)" { keystone = $2 }
  END { if (before > 0 && after > 0 && keystone > 0)
    printf "GET clustertemplate with one cached Keystone token: %d req/s, %.2fx no-auth (mean of %d just before and %d just after)\n",
      keystone, keystone * 2 / (before + after), before, after }
' "$RESULTS"
echo "$KEYSTONE_SUMMARY"
awk -F'\t' '
  $1 ~ /^GET clusters\?limit=100 first page @[0-9]+$/ { split($1, a, "@"); first[a[2]] = $4 }
  $1 ~ /^GET clusters\?limit=100 deep page @[0-9]+$/  { split($1, a, "@"); deep[a[2]] = $4 }
  END { for (n in deep) if (first[n] > 0)
    printf "deep/first page p99 at %8s clusters: %.2fx (median p99s of three runs each; target <= 1.5x)\n", n, deep[n] / first[n] }
' "$RESULTS" | sort -t: -k1,1n
echo
echo "$SYNC"
echo
if [[ -s "$WORK/metrics.txt" ]]; then
  echo "From the API's /metrics (server-side time, mean per route, requests >= 1000):"
  python3 tools/bench/metrics_summary.py "$WORK/metrics.txt"
fi
echo
NOTIFY_OUT=$(notifications)
echo "$NOTIFY_OUT"
echo "$NOTIFY_OUT" | sed -n 's/^NOTIFY_JSON //p' | python3 -c '
import json, sys
for line in sys.stdin:
    for k, v in json.loads(line).items():
        print(f"notify:{k}\t{v}")' >>"$FIGURES" || true
echo
PROBE_OUT=$(health_probe)
echo "$PROBE_OUT"
echo "$PROBE_OUT" | probe_figures >>"$FIGURES"
echo
echo "Goals: each figure beside its anchor from this run"
mkdir -p "$TARGET/bench"
cp "$FIGURES" "$TARGET/bench/figures.tsv"
python3 tools/bench/report.py "$FIGURES" "${BENCH_JSON:-$TARGET/bench/bench.json}"
