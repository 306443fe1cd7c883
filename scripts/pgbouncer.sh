#!/usr/bin/env bash
# PgBouncer (Debian's package) in front of a PostgreSQL on this machine, for tests, benchmarks and trying
# the pooled topology (docs/operations.md, "Topologies").
#   scripts/pgbouncer.sh start MODE PORT [USER,...]
#       pool the server at 127.0.0.1:PORT in MODE (transaction or session) for the users named (default:
#       prescient, the user of scripts/pg.sh), listening on a free loopback port; print that port
#   scripts/pgbouncer.sh stop              stop it; a no-op when it is not running
# PRESCIENT_PGBOUNCER_SERVER_LIFETIME sets server_lifetime (seconds; 0: a server connection serves one
# transaction, then a new one is opened: a test of what a moved session loses, made certain).
# Its files are in .prescient/pgbouncer under the repository, or $PRESCIENT_PGBOUNCER_DIR. The users
# are let in without a password (trust): this is for the private clusters of scripts/pg.sh; as root it
# runs as the user `postgres`, since PgBouncer refuses root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(realpath -m "${PRESCIENT_PGBOUNCER_DIR:-$repo/.prescient/pgbouncer}")

say() { echo "pgbouncer.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# shellcheck source=lib/local_server.sh
. "$repo/scripts/lib/local_server.sh"

running() { [ -f "$dir/pgbouncer.pid" ] && kill -0 "$(cat "$dir/pgbouncer.pid")" 2>/dev/null; }

# pgbouncer.ini for MODE, the server at SERVER_PORT and PgBouncer at PORT.
write_config() {
  local mode=$1 server_port=$2 port=$3
  cat >"$dir/pgbouncer.ini" <<CONF
[databases]
* = host=127.0.0.1 port=$server_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
max_client_conn = 500
default_pool_size = 40
server_lifetime = ${PRESCIENT_PGBOUNCER_SERVER_LIFETIME:-3600}
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
CONF
}

start() {
  local mode=${1:-} server_port=${2:-} users=${3:-prescient}
  case "$mode" in transaction|session) ;; *) die "invalid pool mode '$mode': use transaction or session" ;; esac
  [[ "$server_port" =~ ^[0-9]+$ ]] || die "invalid server port '$server_port'"
  command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || die "pgbouncer is not installed (apt-get install pgbouncer)"
  running && die "already running in $dir (scripts/pgbouncer.sh stop first)"
  make_owned_dir "$dir"
  [[ "${PRESCIENT_PGBOUNCER_SERVER_LIFETIME:-0}" =~ ^[0-9]+$ ]] ||
    die "invalid PRESCIENT_PGBOUNCER_SERVER_LIFETIME '$PRESCIENT_PGBOUNCER_SERVER_LIFETIME': use whole seconds"
  local user
  : >"$dir/users.txt"
  for user in ${users//,/ }; do
    [[ "$user" =~ ^[a-z_][a-z0-9_]*$ ]] || die "invalid user name '$user'"
    echo "\"$user\" \"\"" >>"$dir/users.txt"
  done
  # A free port can be taken between the look and the bind (by another server, or an outgoing connection):
  # then PgBouncer exits, and another port is tried.
  local attempt port
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    write_config "$mode" "$server_port" "$port"
    as_owner "$(command -v pgbouncer || echo /usr/sbin/pgbouncer)" -d -q "$dir/pgbouncer.ini" || true
    for _ in $(seq 1 100); do
      running && port_in_use "$port" && { echo "$port"; return; }
      sleep 0.05
    done
    say "pgbouncer did not start listening on 127.0.0.1:$port (attempt $attempt); last log lines:"
    tail -n 3 "$dir/pgbouncer.log" >&2 || true
    stop
  done
  die "pgbouncer did not start listening (see $dir/pgbouncer.log)"
}

stop() {
  running || return 0
  local pid
  pid=$(cat "$dir/pgbouncer.pid")
  kill "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  *) die "usage: scripts/pgbouncer.sh start transaction|session PORT [USER,...] | stop" ;;
esac
