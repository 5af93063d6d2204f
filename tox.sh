#!/usr/bin/env bash
# tox-like entry points for Fleetyard.
#
#   ./tox.sh [ENV] [args...]      (ENV defaults to "test"; ./tox.sh help lists them)
#
# Works from any directory: it runs from the repository root.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

# The real clients the `cli` env drives. Changing this list re-installs the venv.
CLIENT_REQUIREMENTS="python-openstackclient python-magnumclient==5.0.0 openstacksdk pyjwt"
CLIENT_VENV=.tox/clients
# The real oslo.messaging notification listener the `oslo` env runs. Changing it re-installs.
OSLO_REQUIREMENTS="oslo.messaging"
OSLO_VENV=.tox/oslo
# The real Keystone the `keystone` env runs (with gunicorn to serve it), every dependency pinned
# by the constraints file. Changing either re-installs the venv.
KEYSTONE_REQUIREMENTS="keystone==30.0.0 gunicorn"
KEYSTONE_CONSTRAINTS=tools/keystone-constraints.txt
KEYSTONE_VENV=.tox/keystone
# The real dashboard the `horizon` env drives: Horizon with the magnum-ui plugin (served by
# gunicorn) and selenium for headless Chromium, every dependency pinned by the constraints file
# (python-magnumclient 5.0.0 breaks magnum-ui 19, Horizon 27 its Create Cluster form). Changing
# either re-installs the venv. Chromium and its driver come from Debian (apt-get when missing).
HORIZON_REQUIREMENTS="horizon==26.0.0 magnum-ui==19.0.0 python-magnumclient==4.11.0 gunicorn selenium"
HORIZON_CONSTRAINTS=tools/horizon-constraints.txt
HORIZON_VENV=.tox/horizon
# The Skyline dashboard the `skyline` env drives (served by gunicorn and Debian's nginx, apt-get
# when missing), every dependency pinned by the constraints file. Changing either re-installs.
SKYLINE_REQUIREMENTS="skyline-apiserver==9.0.0 skyline-console==9.0.0 gunicorn selenium"
SKYLINE_CONSTRAINTS=tools/skyline-constraints.txt
SKYLINE_VENV=.tox/skyline
# schemathesis for the `fuzz-api` env (and the short run inside `test`). Changing it re-installs.
SCHEMATHESIS_REQUIREMENTS="schemathesis==4.32.5"
SCHEMATHESIS_VENV=.tox/schemathesis
# The official Kubernetes Python client the `kube` env drives (its version matches the 1.32 the
# registry reports), every dependency pinned by the constraints file. Changing either re-installs.
KUBE_REQUIREMENTS="kubernetes==32.0.1"
KUBE_CONSTRAINTS=tools/kube-constraints.txt
KUBE_VENV=.tox/kube
# docutils for the `lint` env's documentation check (tools/check_docs.py). Changing it re-installs.
DOCS_REQUIREMENTS="docutils==0.22.4"
DOCS_VENV=.tox/docs
# The short run `test` ends with: examples per operation for the admin run (about 50 s for both
# backends); the `fuzz-api` env's default is 200 (about 14,000 requests per backend).
FUZZ_API_SHORT_EXAMPLES=10

usage() {
  cat <<'EOF'
usage: ./tox.sh [ENV] [args...]

envs:
  test    (default) the lint (the `lint` env), then ensure PostgreSQL/RabbitMQ, run
          the Rust tests (cargo nextest, or cargo test), then the real-client checks
          (the `cli`, `keystone`, `horizon`, `oslo` and `kube` envs), then a short `fuzz-api` run
          (FUZZ_API_EXAMPLES=10); args go to the test runner
  unit    ensure services, then only the Rust tests; args go to the test runner
  lint    cargo fmt --check and cargo clippy --all-targets -D warnings, then
          tools/check_modules.py (no import circle among the modules of src/, no file
          over 800 lines of non-test code), then
          tools/check_docs.py with docutils (pinned, in .tox/docs): README.rst,
          CONTRIBUTING.rst and docs/**/*.rst render without a warning or error, every
          page under docs/ is linked from README.rst, every relative link resolves
  cli     build the fleetyard binary (or use $FLEETYARD_BIN), set up the client
          venv in .tox/clients and run tools/cli_check.py against the real
          `openstack coe` CLI and openstacksdk, then tools/cert_cli_check.py
          (coe cluster config, coe ca show|sign|rotate, coe credential rotate);
          args go to cli_check.py
  keystone
          build the fleetyard binary (or use $FLEETYARD_BIN), install Keystone from PyPI
          into .tox/keystone (pinned by tools/keystone-constraints.txt), set up the client
          venv and run tools/keystone_check.py: Keystone bootstrapped on SQLite with fernet
          tokens, Fleetyard registered in its catalog with auth_strategy = keystone, driven
          by the real `openstack` CLI (password auth, clouds.yaml) and openstacksdk, and
          kubectl with a Keystone token over HTTPS; args go to keystone_check.py
  horizon build the fleetyard binary (or use $FLEETYARD_BIN), install Horizon 26.0.0 +
          magnum-ui 19.0.0 into .tox/horizon (pinned by tools/horizon-constraints.txt), Keystone
          into .tox/keystone (as `keystone`), Debian's chromium and chromium-driver when missing
          (apt-get), and run tools/horizon_check.py: Keystone, `fleetyard serve` in keystone
          mode, a read-only Nova/Glance/Neutron stand-in and Horizon (gunicorn, one worker), then
          headless Chromium drives the Container Infra panels as a member, a reader and an
          admin (templates, clusters, resize, certificates, Get Cluster Config with the
          kubeconfig verified, quotas); screenshots and logs of a failed run are kept under
          HORIZON_CHECK_OUT (default target/horizon-check); args go to horizon_check.py
  skyline build the fleetyard binary (or use $FLEETYARD_BIN), install skyline-apiserver and
          skyline-console 9.0.0 into .tox/skyline (pinned by tools/skyline-constraints.txt),
          Keystone into .tox/keystone, Debian's nginx, chromium and chromium-driver when
          missing, and run tools/skyline_check.py: the horizon env's Keystone, Fleetyard and
          stand-in, Skyline's apiserver behind the nginx skyline-nginx-generator writes, and
          headless Chromium driving the console's Container Infra pages and forms as a member
          (create, resize, delete; Skyline's own faults reported apart); screenshots and
          logs of a failed run under SKYLINE_CHECK_OUT (default target/skyline-check). Not part
          of `test`; args go to skyline_check.py
  oslo    build the fleetyard binary (or use $FLEETYARD_BIN), set up .tox/oslo with
          oslo.messaging and run tools/oslo_listener_check.py: the real oslo
          notification listener receives `fleetyard serve`'s messagingv2 events
  kube    build the fleetyard binary (or use $FLEETYARD_BIN), install the official
          Kubernetes Python client (kubernetes==32.0.1, every dependency pinned by
          tools/kube-constraints.txt) into .tox/kube and run tools/kube_conformance.py: the
          cluster registry driven by DynamicClient, CustomObjectsApi and watch.Watch against
          `fleetyard serve` (no-auth) on SQLite and on a fresh PostgreSQL database (CRUD,
          selectors, paging, patches, server-side apply, the status subresource, dry-run
          deletes, finalizers, watches and their resume and 410, ClusterProfiles, Status
          errors); KUBE_CONFORMANCE_BACKENDS (sqlite,postgresql); args go to the script
          (--only CHECK,..., --keep, -v)
  fuzz [SECONDS]
          the cargo-fuzz targets of fuzz/ (every parser of outside input), each for SECONDS
          (default 60) with -rss_limit_mb and -timeout, so a panic, a hang or unbounded
          allocation fails; installs cargo-fuzz when missing. Runs on the stable toolchain
          without a sanitizer (--sanitizer none). Not part of `test`
  fuzz-api
          build the fleetyard binary (or use $FLEETYARD_BIN), install schemathesis
          (pinned) into .tox/schemathesis and run tools/fuzz_api.py: schemathesis over
          GET /v1/openapi.json against `fleetyard serve` (no-auth, as admin then member)
          on SQLite and on a fresh PostgreSQL database; examples, coverage, fuzzing and
          stateful phases; fails on any 5xx, a status or body the document does not
          describe, a request past its 10 s timeout or fewer than 10,000 requests per
          backend; FUZZ_API_EXAMPLES (default 200), FUZZ_API_BACKENDS (sqlite,postgresql),
          FUZZ_API_ROLES (admin,member), FUZZ_API_SEED; args go to fuzz_api.py
  drills  the fault drills of tests/integration/drills/ at full length, one at a time, on
          the release binary (built, or $FLEETYARD_BIN): a conductor SIGKILLed through 100
          jobs, the API killed mid-request, the broker refused and then partitioned for
          FLEETYARD_DRILL_BROKER_SECONDS (60) each under writes, and the scale-out run of
          three API and three conductor processes over FLEETYARD_DRILL_CLUSTERS (1000)
          clusters and FLEETYARD_DRILL_FEDERATIONS (100) federations with kills; figures are
          printed (the suite runs short forms of the same drills); args go to the test runner
  run     cargo run --release -- serve [args...]
  bench   tools/bench.sh [args...]; BENCH_ONLY=notifications runs only its notification
          section; BENCH_ONLY=registry runs only examples/registry_bench.rs (release): the
          cluster registry's `kubectl get clusters -A` pages over REGISTRY_BENCH_CLUSTERS
          (100,000) registered clusters and /v1-change-to-watch-event latency, figures as JSON
          to REGISTRY_BENCH_JSON (target/registry-bench.json); BENCH_ONLY=machines runs only
          examples/machine_bench.rs (release): MACHINE_BENCH_CLUSTERS (1,000) clusters of 100
          machines, the first machine page on /v1 (1.19) and `kubectl get machines -n -l
          cluster.k8s.io/cluster-name=<c>` (Table and JSON), and GET cluster and the cluster
          lists before and after the machines exist, figures as JSON to MACHINE_BENCH_JSON
          (target/machine-bench.json); BENCH_ONLY=groups runs only examples/group_bench.rs
          (release): GROUP_BENCH_CLUSTERS (100,000) clusters, 1,000 groups and 10,000
          bindings, a bound member's /v1 list (1.20) and `kubectl get clusters -A` first page,
          and owner-change-to-event latency on its group-filtered watch, figures as JSON to
          GROUP_BENCH_JSON (target/group-bench.json); args go to the example
          (--keep-database keeps its database for EXPLAIN)
  help    this text

environment:
  FLEETYARD_TEST_PG_URL    default postgres://postgres@127.0.0.1:5432/postgres
  FLEETYARD_TEST_AMQP_URL  default amqp://guest:guest@127.0.0.1:5672/%2f
  FLEETYARD_BIN            binary for `cli`, `keystone`, `horizon`, `skyline`, `oslo`, `kube`,
                           `fuzz-api` and `drills` (skips the build)
  FLEETYARD_DRILL_SEED     replays a drill's random kill times (each drill prints its seed)
  FLEETYARD_SKIP_ENSURE_SERVICES=1  don't check/start the local services
EOF
}

step() { printf '==> tox.sh %s: %s\n' "$ENV_NAME" "$*"; }

FAILED=()
PART_RC=0
part() { # name command... : run one part, remember a failure (PART_RC), carry on
  local name="$1"
  shift
  step "$name"
  PART_RC=0
  "$@" || PART_RC=$?
  if ((PART_RC != 0)); then
    printf '==> tox.sh %s: %s FAILED (exit %d)\n' "$ENV_NAME" "$name" "$PART_RC" >&2
    FAILED+=("$name")
  fi
}

finish() {
  if ((${#FAILED[@]})); then
    printf '==> tox.sh %s: FAILED:\n' "$ENV_NAME" >&2
    printf '      %s\n' "${FAILED[@]}" >&2
    exit 1
  fi
  printf '==> tox.sh %s: ok\n' "$ENV_NAME"
}

docs_venv() {
  local stamp="$DOCS_VENV/.requirements"
  if [[ -x "$DOCS_VENV/bin/python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$DOCS_REQUIREMENTS" ]]; then
    echo "reusing $DOCS_VENV ($DOCS_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$DOCS_VENV/bin/python" ]]; then
    python3 -m venv --clear "$DOCS_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$DOCS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check $DOCS_REQUIREMENTS || return
  printf '%s' "$DOCS_REQUIREMENTS" >"$stamp"
}

lint_parts() {
  part "cargo fmt --all -- --check" cargo fmt --all -- --check
  part "cargo clippy --all-targets -- -D warnings" cargo clippy --all-targets -- -D warnings
  # No import circle between the modules of src/, no file over 800 lines of non-test code.
  part "tools/check_modules.py" python3 tools/check_modules.py
  part "docs venv $DOCS_VENV" docs_venv
  if ((PART_RC != 0)); then
    FAILED+=("docs check (not run: no docs venv)")
    return 0
  fi
  # README.rst, CONTRIBUTING.rst and docs/**/*.rst rendered with docutils, failing on any
  # warning; every docs/ page linked from README.rst; every relative link resolving.
  part "docs: tools/check_docs.py" "$DOCS_VENV/bin/python" tools/check_docs.py
}

test_env() {
  export FLEETYARD_TEST_PG_URL="${FLEETYARD_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
  export FLEETYARD_TEST_AMQP_URL="${FLEETYARD_TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}"
}

rust_tests() {
  # With a kubectl on the machine, the registry's kubectl tests must run, not skip.
  if command -v kubectl >/dev/null 2>&1; then
    export FLEETYARD_REQUIRE_KUBECTL=1
  fi
  if cargo nextest --version >/dev/null 2>&1; then
    part "cargo nextest run --no-fail-fast${*:+ $*}" cargo nextest run --no-fail-fast "$@"
    # nextest does not run doctests
    if (($# == 0)); then
      part "cargo test --doc" cargo test --doc --no-fail-fast
    fi
  else
    part "cargo test --no-fail-fast${*:+ $*}" cargo test --no-fail-fast "$@"
  fi
}

client_venv() {
  local stamp="$CLIENT_VENV/.requirements"
  if [[ -x "$CLIENT_VENV/bin/python" && -x "$CLIENT_VENV/bin/openstack" && -f "$stamp" ]] &&
    [[ "$(cat "$stamp")" == "$CLIENT_REQUIREMENTS" ]]; then
    echo "reusing $CLIENT_VENV ($CLIENT_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$CLIENT_VENV/bin/python" ]]; then
    python3 -m venv --clear "$CLIENT_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$CLIENT_VENV/bin/python" -m pip install --quiet --disable-pip-version-check $CLIENT_REQUIREMENTS || return
  printf '%s' "$CLIENT_REQUIREMENTS" >"$stamp"
}

cli_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("cli check (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "client venv $CLIENT_VENV" client_venv
  if ((PART_RC != 0)); then
    FAILED+=("cli check (not run: no client venv)")
    return 0
  fi
  part "cli check: tools/cli_check.py --bin $bin${*:+ $*}" "$CLIENT_VENV/bin/python" tools/cli_check.py --bin "$bin" "$@"
  part "cert cli check: tools/cert_cli_check.py --bin $bin" "$CLIENT_VENV/bin/python" tools/cert_cli_check.py --bin "$bin"
  part "nodegroup cli check: tools/nodegroup_cli_check.py --bin $bin" "$CLIENT_VENV/bin/python" tools/nodegroup_cli_check.py --bin "$bin"
  part "cluster cli check: tools/cluster_cli_check.py --bin $bin" "$CLIENT_VENV/bin/python" tools/cluster_cli_check.py --bin "$bin"
  part "federation cli check: tools/federation_cli_check.py --bin $bin" python3 tools/federation_cli_check.py --bin "$bin"
  part "machine cli check: tools/machine_cli_check.py --bin $bin" python3 tools/machine_cli_check.py --bin "$bin"
  part "group cli check: tools/group_cli_check.py --bin $bin" python3 tools/group_cli_check.py --bin "$bin"
}

keystone_venv() {
  local stamp="$KEYSTONE_VENV/.requirements"
  local want
  want="$KEYSTONE_REQUIREMENTS $(sha256sum "$KEYSTONE_CONSTRAINTS" | cut -d' ' -f1)"
  if [[ -x "$KEYSTONE_VENV/bin/keystone-manage" && -x "$KEYSTONE_VENV/bin/gunicorn" && -f "$stamp" ]] &&
    [[ "$(cat "$stamp")" == "$want" ]]; then
    echo "reusing $KEYSTONE_VENV ($KEYSTONE_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$KEYSTONE_VENV/bin/python" ]]; then
    python3 -m venv --clear "$KEYSTONE_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$KEYSTONE_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$KEYSTONE_CONSTRAINTS" $KEYSTONE_REQUIREMENTS || return
  printf '%s' "$want" >"$stamp"
}

keystone_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("keystone check (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "keystone venv $KEYSTONE_VENV" keystone_venv
  if ((PART_RC != 0)); then
    FAILED+=("keystone check (not run: no keystone venv)")
    return 0
  fi
  part "client venv $CLIENT_VENV" client_venv
  if ((PART_RC != 0)); then
    FAILED+=("keystone check (not run: no client venv)")
    return 0
  fi
  part "keystone check: tools/keystone_check.py --bin $bin${*:+ $*}" "$CLIENT_VENV/bin/python" \
    tools/keystone_check.py --bin "$bin" --keystone-venv "$KEYSTONE_VENV" "$@"
}

horizon_venv() {
  local stamp="$HORIZON_VENV/.requirements"
  local want
  want="$HORIZON_REQUIREMENTS $(sha256sum "$HORIZON_CONSTRAINTS" | cut -d' ' -f1)"
  if [[ -x "$HORIZON_VENV/bin/gunicorn" && -x "$HORIZON_VENV/bin/django-admin" && -f "$stamp" ]] &&
    [[ "$(cat "$stamp")" == "$want" ]]; then
    echo "reusing $HORIZON_VENV ($HORIZON_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$HORIZON_VENV/bin/python" ]]; then
    python3 -m venv --clear "$HORIZON_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$HORIZON_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$HORIZON_CONSTRAINTS" $HORIZON_REQUIREMENTS || return
  printf '%s' "$want" >"$stamp"
}

chromium_installed() {
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "using $(chromium --version 2>/dev/null | tail -n 1) and $(command -v chromedriver)"
    return 0
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo=(sudo -n)
  fi
  echo "installing chromium and chromium-driver with apt-get"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || return
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null || return
  command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1
}

horizon_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("horizon check (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "horizon venv $HORIZON_VENV" horizon_venv
  if ((PART_RC != 0)); then
    FAILED+=("horizon check (not run: no horizon venv)")
    return 0
  fi
  part "keystone venv $KEYSTONE_VENV" keystone_venv
  if ((PART_RC != 0)); then
    FAILED+=("horizon check (not run: no keystone venv)")
    return 0
  fi
  part "chromium and chromium-driver" chromium_installed
  if ((PART_RC != 0)); then
    FAILED+=("horizon check (not run: no chromium)")
    return 0
  fi
  part "horizon check: tools/horizon_check.py --bin $bin${*:+ $*}" "$HORIZON_VENV/bin/python" \
    tools/horizon_check.py --bin "$bin" --keystone-venv "$KEYSTONE_VENV" \
    --out "${HORIZON_CHECK_OUT:-${CARGO_TARGET_DIR:-target}/horizon-check}" "$@"
}

skyline_venv() {
  local stamp="$SKYLINE_VENV/.requirements"
  local want
  want="$SKYLINE_REQUIREMENTS $(sha256sum "$SKYLINE_CONSTRAINTS" | cut -d' ' -f1)"
  if [[ -x "$SKYLINE_VENV/bin/skyline-nginx-generator" && -x "$SKYLINE_VENV/bin/gunicorn" && -f "$stamp" ]] &&
    [[ "$(cat "$stamp")" == "$want" ]]; then
    echo "reusing $SKYLINE_VENV ($SKYLINE_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$SKYLINE_VENV/bin/python" ]]; then
    python3 -m venv --clear "$SKYLINE_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$SKYLINE_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$SKYLINE_CONSTRAINTS" $SKYLINE_REQUIREMENTS || return
  printf '%s' "$want" >"$stamp"
}

apt_installed() { # command package...: apt-get installs the packages when the command is missing
  local cmd="$1"
  shift
  if command -v "$cmd" >/dev/null 2>&1 || [[ -x "/usr/sbin/$cmd" ]]; then
    echo "using $cmd"
    return 0
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo=(sudo -n)
  fi
  echo "installing $* with apt-get"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || return
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

skyline_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("skyline check (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "skyline venv $SKYLINE_VENV" skyline_venv
  if ((PART_RC != 0)); then
    FAILED+=("skyline check (not run: no skyline venv)")
    return 0
  fi
  part "keystone venv $KEYSTONE_VENV" keystone_venv
  if ((PART_RC != 0)); then
    FAILED+=("skyline check (not run: no keystone venv)")
    return 0
  fi
  part "nginx, chromium and chromium-driver" eval 'apt_installed nginx nginx && chromium_installed'
  if ((PART_RC != 0)); then
    FAILED+=("skyline check (not run: no nginx or chromium)")
    return 0
  fi
  part "skyline check: tools/skyline_check.py --bin $bin${*:+ $*}" "$SKYLINE_VENV/bin/python" \
    tools/skyline_check.py --bin "$bin" --keystone-venv "$KEYSTONE_VENV" \
    --out "${SKYLINE_CHECK_OUT:-${CARGO_TARGET_DIR:-target}/skyline-check}" "$@"
}

oslo_venv() {
  local stamp="$OSLO_VENV/.requirements"
  if [[ -x "$OSLO_VENV/bin/python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$OSLO_REQUIREMENTS" ]]; then
    echo "reusing $OSLO_VENV ($OSLO_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$OSLO_VENV/bin/python" ]]; then
    python3 -m venv --clear "$OSLO_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$OSLO_VENV/bin/python" -m pip install --quiet --disable-pip-version-check $OSLO_REQUIREMENTS || return
  printf '%s' "$OSLO_REQUIREMENTS" >"$stamp"
}

oslo_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("oslo listener check (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "oslo venv $OSLO_VENV" oslo_venv
  if ((PART_RC != 0)); then
    FAILED+=("oslo listener check (not run: no oslo venv)")
    return 0
  fi
  part "oslo listener check: tools/oslo_listener_check.py --bin $bin${*:+ $*}" "$OSLO_VENV/bin/python" tools/oslo_listener_check.py --bin "$bin" "$@"
}

kube_venv() {
  local stamp="$KUBE_VENV/.requirements"
  local want
  want="$KUBE_REQUIREMENTS $(sha256sum "$KUBE_CONSTRAINTS" | cut -d' ' -f1)"
  if [[ -x "$KUBE_VENV/bin/python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; then
    echo "reusing $KUBE_VENV ($KUBE_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$KUBE_VENV/bin/python" ]]; then
    python3 -m venv --clear "$KUBE_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$KUBE_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$KUBE_CONSTRAINTS" $KUBE_REQUIREMENTS || return
  printf '%s' "$want" >"$stamp"
}

kube_env() {
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("kube conformance (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "kube venv $KUBE_VENV" kube_venv
  if ((PART_RC != 0)); then
    FAILED+=("kube conformance (not run: no kube venv)")
    return 0
  fi
  part "kube conformance: tools/kube_conformance.py --bin $bin${*:+ $*}" "$KUBE_VENV/bin/python" \
    tools/kube_conformance.py --bin "$bin" "$@"
}

# The cargo-fuzz targets (fuzz/fuzz_targets/*.rs) `fuzz` runs, in order.
FUZZ_TARGETS="patch policy_rule policy_file pyliteral microversion jwt csr transport_url label_selector
  field_selector continue_token"
# Per-input limits of `fuzz`: an input taking longer (seconds) is a hang, a process growing
# past this resident size (MB) is unbounded allocation; both fail the run like a panic.
FUZZ_TIMEOUT=10
FUZZ_RSS_LIMIT_MB=2048

fuzz_env() {
  local seconds="${1:-60}" target
  if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "tox.sh fuzz: SECONDS must be a positive whole number, got '$seconds'" >&2
    exit 2
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    part "cargo install cargo-fuzz" cargo install cargo-fuzz --locked
    ((PART_RC == 0)) || return 0
  fi
  # Only the stable toolchain is assumed: without a sanitizer cargo-fuzz passes no -Z flag
  # (coverage via -Cpasses=sancov-module), so no nightly and no RUSTC_BOOTSTRAP. Panics (debug
  # assertions on), timeouts and the RSS limit are still caught.
  local fuzz=(cargo fuzz)
  part "cargo fuzz build --sanitizer none" "${fuzz[@]}" build --sanitizer none
  ((PART_RC == 0)) || return 0
  for target in $FUZZ_TARGETS; do
    # New inputs go to fuzz/corpus/<target> (not committed); fuzz/seeds/<target> is read only.
    mkdir -p "fuzz/corpus/$target" "fuzz/seeds/$target"
    part "fuzz $target for ${seconds}s" "${fuzz[@]}" run --sanitizer none "$target" \
      "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
      -max_total_time="$seconds" -timeout="$FUZZ_TIMEOUT" -rss_limit_mb="$FUZZ_RSS_LIMIT_MB" \
      -print_final_stats=1
  done
}

schemathesis_venv() {
  local stamp="$SCHEMATHESIS_VENV/.requirements"
  if [[ -x "$SCHEMATHESIS_VENV/bin/st" && -f "$stamp" ]] &&
    [[ "$(cat "$stamp")" == "$SCHEMATHESIS_REQUIREMENTS" ]]; then
    echo "reusing $SCHEMATHESIS_VENV ($SCHEMATHESIS_REQUIREMENTS)"
    return 0
  fi
  if [[ ! -x "$SCHEMATHESIS_VENV/bin/python" ]]; then
    python3 -m venv --clear "$SCHEMATHESIS_VENV" || return
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # the list is words on purpose
  "$SCHEMATHESIS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check $SCHEMATHESIS_REQUIREMENTS || return
  printf '%s' "$SCHEMATHESIS_REQUIREMENTS" >"$stamp"
}

fuzz_api_env() { # [fuzz_api.py args...]; FUZZ_API_* from the environment
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --bin fleetyard" cargo build --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("fuzz-api (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/debug/fleetyard"
  fi
  part "schemathesis venv $SCHEMATHESIS_VENV" schemathesis_venv
  if ((PART_RC != 0)); then
    FAILED+=("fuzz-api (not run: no schemathesis venv)")
    return 0
  fi
  part "fuzz-api: tools/fuzz_api.py --bin $bin (FUZZ_API_EXAMPLES=${FUZZ_API_EXAMPLES:-200})${*:+ $*}" \
    "$SCHEMATHESIS_VENV/bin/python" tools/fuzz_api.py --bin "$bin" "$@"
}

drills_env() { # [test runner args...]
  local bin="${FLEETYARD_BIN:-}"
  if [[ -z "$bin" ]]; then
    part "cargo build --release --bin fleetyard" cargo build --release --bin fleetyard
    if ((PART_RC != 0)); then
      FAILED+=("drills (not run: the build failed)")
      return 0
    fi
    bin="${CARGO_TARGET_DIR:-target}/release/fleetyard"
  fi
  bin="$(readlink -f "$bin")"
  local runner=(cargo test --no-fail-fast --test integration drills:: -- --nocapture --test-threads 1)
  if cargo nextest --version >/dev/null 2>&1; then
    runner=(cargo nextest run --no-fail-fast --no-capture drills::)
  fi
  FLEETYARD_DRILL_BIN="$bin" \
    FLEETYARD_DRILL_BROKER_SECONDS="${FLEETYARD_DRILL_BROKER_SECONDS:-60}" \
    FLEETYARD_DRILL_CLUSTERS="${FLEETYARD_DRILL_CLUSTERS:-1000}" \
    FLEETYARD_DRILL_FEDERATIONS="${FLEETYARD_DRILL_FEDERATIONS:-100}" \
    part "drills: ${runner[*]} (FLEETYARD_DRILL_BIN=$bin)${*:+ $*}" "${runner[@]}" "$@"
}

ENV_NAME="${1:-test}"
(($#)) && shift

case "$ENV_NAME" in
test)
  lint_parts
  test_env
  part "ensure services" tools/ensure_services.sh
  rust_tests "$@"
  cli_env
  keystone_env
  horizon_env
  oslo_env
  kube_env
  FUZZ_API_EXAMPLES="$FUZZ_API_SHORT_EXAMPLES" FUZZ_API_MIN_REQUESTS=0 fuzz_api_env
  finish
  ;;
unit)
  test_env
  part "ensure services" tools/ensure_services.sh
  rust_tests "$@"
  finish
  ;;
lint)
  lint_parts
  finish
  ;;
cli)
  cli_env "$@"
  finish
  ;;
keystone)
  keystone_env "$@"
  finish
  ;;
horizon)
  horizon_env "$@"
  finish
  ;;
skyline)
  skyline_env "$@"
  finish
  ;;
oslo)
  test_env
  part "ensure services" tools/ensure_services.sh
  oslo_env "$@"
  finish
  ;;
kube)
  test_env
  part "ensure services" tools/ensure_services.sh
  kube_env "$@"
  finish
  ;;
fuzz)
  fuzz_env "$@"
  finish
  ;;
fuzz-api)
  test_env
  part "ensure services" tools/ensure_services.sh
  FUZZ_API_MIN_REQUESTS="${FUZZ_API_MIN_REQUESTS-10000}" fuzz_api_env "$@"
  finish
  ;;
drills)
  test_env
  part "ensure services" tools/ensure_services.sh
  drills_env "$@"
  finish
  ;;
run)
  step "cargo run --release -- serve${*:+ $*}"
  exec cargo run --release -- serve "$@"
  ;;
bench)
  if [[ "${BENCH_ONLY:-}" == registry ]]; then
    # The cluster registry at fleet size (its own database beside FLEETYARD_BENCH_PG_URL).
    [[ "${FLEETYARD_SKIP_ENSURE_SERVICES:-}" == 1 ]] || tools/ensure_services.sh >&2
    step "cargo run --release --example registry_bench${*:+ -- $*}"
    exec cargo run -q --release --example registry_bench -- \
      --pg-url "${FLEETYARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}" "$@"
  fi
  if [[ "${BENCH_ONLY:-}" == machines ]]; then
    # Machines at fleet size (its own database beside FLEETYARD_BENCH_PG_URL).
    [[ "${FLEETYARD_SKIP_ENSURE_SERVICES:-}" == 1 ]] || tools/ensure_services.sh >&2
    step "cargo run --release --example machine_bench${*:+ -- $*}"
    exec cargo run -q --release --example machine_bench -- \
      --pg-url "${FLEETYARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}" "$@"
  fi
  if [[ "${BENCH_ONLY:-}" == groups ]]; then
    # Cluster groups at fleet size (its own database beside FLEETYARD_BENCH_PG_URL).
    [[ "${FLEETYARD_SKIP_ENSURE_SERVICES:-}" == 1 ]] || tools/ensure_services.sh >&2
    step "cargo run --release --example group_bench${*:+ -- $*}"
    exec cargo run -q --release --example group_bench -- \
      --pg-url "${FLEETYARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}" "$@"
  fi
  if [[ -f tools/bench.sh ]]; then
    step "tools/bench.sh${*:+ $*}"
    exec bash tools/bench.sh "$@"
  fi
  echo "no benchmark defined yet" >&2
  exit 1
  ;;
help | -h | --help)
  usage
  ;;
*)
  echo "tox.sh: unknown env '$ENV_NAME'" >&2
  usage >&2
  exit 2
  ;;
esac
