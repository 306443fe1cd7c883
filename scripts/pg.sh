#!/usr/bin/env bash
# A private PostgreSQL cluster for development, demos and tests.
#   scripts/pg.sh start    initdb (once), start on a free loopback port, print the connection URL
#   scripts/pg.sh stop     stop it (nothing left running); a no-op when it is not running
#   scripts/pg.sh restart  a fast restart on the same port (sessions are cut, as in a failover)
#   scripts/pg.sh status   say whether it runs (exit 0) or not (exit 3)
#   scripts/pg.sh url      print the connection URL
#   scripts/pg.sh standby PORT  make this cluster a streaming standby of the one on 127.0.0.1:PORT
#                          (pg_basebackup -R), start it and print its URL
#   scripts/pg.sh promote  promote a standby to primary, waiting until it takes writes
#   scripts/pg.sh crash    stop at once, as a crash does (pg_ctl -m immediate): no shutdown checkpoint
# The data directory is .prescient/pg under the repository, or $PRESCIENT_PGDATA.
# The server listens on 127.0.0.1 only, with a unix socket in the data directory and trust
# authentication: it is a private development cluster, not a production server.
# PRESCIENT_PG_DURABLE=no when a cluster is created: fsync and full_page_writes off, for the shared test
# cluster of scripts/test.sh, whose tests kill processes, never the machine (a crash of the OS could lose
# it; a crash of PostgreSQL cannot). synchronous_commit stays on. Every other cluster, the benchmarks' and
# the ones the reliability tests crash, restart or replicate, keeps the durable default.
# As root it runs as the unprivileged user `postgres` (created if missing): PostgreSQL refuses root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data=$(realpath -m "${PRESCIENT_PGDATA:-$repo/.prescient/pg}")
db_name=prescient
db_user=prescient

say() { echo "pg.sh: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lib/local_server.sh
. "$repo/scripts/lib/local_server.sh"

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] ||
    die "no PostgreSQL server found under /usr/lib/postgresql (run scripts/setup.sh first)"
  echo "$dir"
}

port_file() { echo "$data/prescient.port"; }
url() { echo "postgresql://$db_user@127.0.0.1:$(cat "$(port_file)")/$db_name"; }
running() { [ -f "$data/PG_VERSION" ] && as_owner "$(pg_bin)/pg_ctl" -D "$data" status >/dev/null 2>&1; }

init_cluster() {
  [ -f "$data/PG_VERSION" ] && return
  say "creating a cluster in $data"
  make_owned_dir "$data"
  chmod 700 "$data"
  as_owner "$(pg_bin)/initdb" -D "$data" -U "$db_user" --auth=trust -E UTF8 --locale=C >/dev/null
  cat >>"$data/postgresql.conf" <<CONF

# ---- prescient private cluster (scripts/pg.sh) ----
listen_addresses = '127.0.0.1'
unix_socket_directories = '$data'
max_connections = 200
shared_buffers = 512MB
work_mem = 16MB
maintenance_work_mem = 256MB
wal_buffers = 16MB
max_wal_size = 4GB
checkpoint_timeout = 15min
synchronous_commit = on
random_page_cost = 1.1
CONF
  case "${PRESCIENT_PG_DURABLE:-yes}" in yes | no) ;; *) die "PRESCIENT_PG_DURABLE is '$PRESCIENT_PG_DURABLE': use yes or no" ;; esac
  if [ "${PRESCIENT_PG_DURABLE:-yes}" = no ]; then
    printf 'fsync = off\nfull_page_writes = off\n' >>"$data/postgresql.conf"
  else
    printf 'fsync = on\n' >>"$data/postgresql.conf"
  fi
}

start() {
  init_cluster
  if running; then url; return; fi
  local bin attempt port
  bin=$(pg_bin)
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    echo "$port" >"$(port_file)"
    [ "$(id -u)" = 0 ] && chown "$run_user" "$(port_file)"
    say "starting PostgreSQL on 127.0.0.1:$port (attempt $attempt)"
    if as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $port" -w -t 60 start >/dev/null; then
      if ! as_owner "$bin/psql" -h "$data" -p "$port" -U "$db_user" -d postgres -Atqc \
          "SELECT 1 FROM pg_database WHERE datname = '$db_name'" | grep -q 1; then
        as_owner "$bin/createdb" -h "$data" -p "$port" -U "$db_user" "$db_name"
      fi
      url
      return
    fi
    say "start failed (the port may have been taken meanwhile); last log lines:"
    tail -n 3 "$data/server.log" >&2 || true
  done
  die "could not start PostgreSQL; see $data/server.log"
}

stop() {
  if running; then
    as_owner "$(pg_bin)/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
    say "stopped the cluster in $data"
  fi
}

# A fast restart on the same port (the fault tests restart the server under running daemons).
restart() {
  running || die "no cluster running in $data"
  as_owner "$(pg_bin)/pg_ctl" -D "$data" -m fast -w -t 60 restart >/dev/null
  say "restarted the cluster in $data"
}

# A streaming replica of the cluster on 127.0.0.1:PORT, for failover tests: a base backup with the
# replication settings written (-R), its own socket directory, started on a port of its own.
standby() {
  local primary_port=${1:-}
  [[ "$primary_port" =~ ^[0-9]+$ ]] || die "invalid primary port '$primary_port'"
  [ -f "$data/PG_VERSION" ] && die "$data already holds a cluster"
  make_owned_dir "$data"
  chmod 700 "$data"
  say "copying the cluster on port $primary_port into $data"
  as_owner "$(pg_bin)/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U "$db_user" -D "$data" -R -X stream -c fast
  echo "unix_socket_directories = '$data'" | as_owner tee -a "$data/postgresql.conf" >/dev/null
  start
}

promote() {
  running || die "no cluster running in $data"
  as_owner "$(pg_bin)/pg_ctl" -D "$data" -w -t 60 promote >/dev/null
  say "promoted the cluster in $data"
}

crash() {
  running || return 0
  as_owner "$(pg_bin)/pg_ctl" -D "$data" -m immediate -w -t 60 stop >/dev/null
  say "stopped the cluster in $data at once (immediate)"
}

case "${1:-}" in
  start) start ;;
  standby) standby "${2:-}" ;;
  promote) promote ;;
  crash) crash ;;
  stop) stop ;;
  restart) restart ;;
  status)
    if running; then echo "running: $(url)"; else echo "not running ($data)"; exit 3; fi ;;
  url)
    [ -f "$(port_file)" ] || die "no cluster in $data: run scripts/pg.sh start"
    url ;;
  *) echo "usage: scripts/pg.sh start|stop|restart|status|url|standby PORT|promote|crash" >&2; exit 2 ;;
esac
