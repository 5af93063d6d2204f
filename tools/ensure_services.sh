#!/usr/bin/env bash
# Make sure the services the Rust tests talk to are up:
#   PostgreSQL on 127.0.0.1:5432 (trust auth for the users postgres and root)
#   RabbitMQ   on 127.0.0.1:5672 (guest/guest)
#   kubectl    (the machine's, else Debian's kubernetes-client; a warning if neither)
#
# Already reachable -> says so in one line each and returns at once.
# Installed but stopped -> starts it and waits (ENSURE_SERVICES_WAIT, default 60 s).
# Not installed -> apt-get installs it (needs root or passwordless sudo),
#                  configures trust auth on loopback for PostgreSQL, starts it.
# Anything it cannot fix ends with one "ensure_services: ERROR: ..." line.
#
# Set FLEETYARD_SKIP_ENSURE_SERVICES=1 to skip it (services elsewhere).
set -euo pipefail

PG_HOST=127.0.0.1
PG_PORT=5432
MQ_HOST=127.0.0.1
MQ_PORT=5672
WAIT="${ENSURE_SERVICES_WAIT:-60}"

log() { echo "ensure_services: $*"; }
die() {
  echo "ensure_services: ERROR: $*" >&2
  exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

if [[ "${FLEETYARD_SKIP_ENSURE_SERVICES:-}" == 1 ]]; then
  log "skipped (FLEETYARD_SKIP_ENSURE_SERVICES=1)"
  exit 0
fi

# Root commands: directly as root, else through passwordless sudo if there is one.
if [[ "$(id -u)" == 0 ]]; then
  SUDO=()
elif have sudo && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  SUDO=(false)
fi
as_root() { "${SUDO[@]}" "$@"; }

tcp_open() { # host port; the subshell closes the descriptor again
  timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

pg_up() {
  if have pg_isready; then
    pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 3
  else
    tcp_open "$PG_HOST" "$PG_PORT"
  fi
}

mq_up() { tcp_open "$MQ_HOST" "$MQ_PORT"; }

wait_for() { # check-function
  local deadline=$((SECONDS + WAIT))
  while ((SECONDS < deadline)); do
    "$1" && return 0
    sleep 1
  done
  "$1"
}

pg_version() { # the newest installed cluster version, e.g. 15
  find /etc/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V | tail -n 1 || true
}

pg_start_hint() {
  local v
  v="$(pg_version)"
  echo "pg_ctlcluster --skip-systemctl-redirect ${v:-<version>} main start"
}

APT_UPDATED=""
apt_install() { # package...
  local logf
  logf="$(mktemp "${TMPDIR:-/tmp}/ensure_services-apt.XXXXXX")"
  log "installing $* with apt-get (log: $logf)"
  if [[ -z "$APT_UPDATED" ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$logf" 2>&1 || return 1
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "$@" >>"$logf" 2>&1
}

# Trust for TCP connections from loopback, ahead of the packaged rules (first match wins).
pg_configure_trust() {
  local v hba
  v="$(pg_version)"
  hba="/etc/postgresql/$v/main/pg_hba.conf"
  [[ -f "$hba" ]] || return 1
  if ! as_root grep -q '^# fleetyard: loopback trust' "$hba"; then
    as_root sed -i '1i # fleetyard: loopback trust (tools/ensure_services.sh)\nhost    all    all    127.0.0.1/32    trust\nhost    all    all    ::1/128         trust\n' "$hba"
  fi
}

pg_start() {
  local v
  v="$(pg_version)"
  [[ -n "$v" ]] || return 1
  as_root pg_ctlcluster --skip-systemctl-redirect "$v" main start >/dev/null 2>&1 || true
}

pg_reload() {
  local v
  v="$(pg_version)"
  as_root pg_ctlcluster --skip-systemctl-redirect "$v" main reload >/dev/null 2>&1 || true
}

pg_ensure_root_role() {
  local psql=(psql -X -q -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -tA)
  if [[ "$("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'root'")" != 1 ]]; then
    "${psql[@]}" -c "CREATE ROLE root SUPERUSER LOGIN" >/dev/null
  fi
  if [[ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'root'")" != 1 ]]; then
    "${psql[@]}" -c "CREATE DATABASE root OWNER root" >/dev/null
  fi
}

ensure_postgres() {
  if pg_up; then
    log "PostgreSQL is up on $PG_HOST:$PG_PORT"
    return 0
  fi
  local fresh=""
  if [[ -z "$(pg_version)" ]] || ! have pg_ctlcluster; then
    apt_install postgresql ||
      die "PostgreSQL is not installed and 'apt-get install -y postgresql' failed (run it as root, then: $(pg_start_hint))"
    fresh=1
    pg_configure_trust ||
      die "PostgreSQL was installed but its pg_hba.conf was not found under /etc/postgresql; set trust auth for 127.0.0.1/32 and ::1/128 by hand"
  fi
  log "starting PostgreSQL"
  pg_start
  wait_for pg_up ||
    die "PostgreSQL is not reachable on $PG_HOST:$PG_PORT after ${WAIT}s; start it by hand with: $(pg_start_hint)"
  if [[ -n "$fresh" ]]; then
    pg_reload # the packaged postinst may have started it before pg_hba.conf was changed
    sleep 1
    pg_ensure_root_role ||
      die "PostgreSQL is up but the role root could not be created; run: psql -h $PG_HOST -U postgres -c 'CREATE ROLE root SUPERUSER LOGIN'"
  fi
  log "PostgreSQL is up on $PG_HOST:$PG_PORT"
}

ensure_rabbitmq() {
  if mq_up; then
    log "RabbitMQ is up on $MQ_HOST:$MQ_PORT"
    return 0
  fi
  if ! have rabbitmq-server && [[ ! -x /usr/sbin/rabbitmq-server ]]; then
    apt_install rabbitmq-server ||
      die "RabbitMQ is not installed and 'apt-get install -y rabbitmq-server' failed (run it as root, then: rabbitmq-server -detached)"
  fi
  # A node that is still booting has its beam process but no listener yet: don't start a second one.
  if ! pgrep -f 'beam.*-s rabbit' >/dev/null 2>&1 && ! pgrep -f 'beam.*rabbit@' >/dev/null 2>&1; then
    log "starting RabbitMQ"
    as_root env PATH="/usr/sbin:/usr/lib/rabbitmq/bin:$PATH" rabbitmq-server -detached >/dev/null 2>&1 || true
  else
    log "waiting for the running RabbitMQ node to listen"
  fi
  wait_for mq_up ||
    die "RabbitMQ is not reachable on $MQ_HOST:$MQ_PORT after ${WAIT}s; start it by hand with: rabbitmq-server -detached (log: /var/log/rabbitmq/)"
  log "RabbitMQ is up on $MQ_HOST:$MQ_PORT"
}

# kubectl for the registry's kubectl suite (tests/integration/registry_kubectl.rs): the machine's
# own, else Debian's kubernetes-client. Not fatal: without one those tests say they were skipped.
ensure_kubectl() {
  if have kubectl; then
    log "kubectl is there ($(kubectl version --client 2>/dev/null | head -1))"
    return 0
  fi
  if apt_install kubernetes-client && have kubectl; then
    log "kubectl installed from Debian ($(kubectl version --client 2>/dev/null | head -1))"
  else
    log "WARNING: no kubectl and 'apt-get install -y kubernetes-client' failed; the kubectl tests will be skipped"
  fi
}

ensure_postgres
ensure_rabbitmq
ensure_kubectl
