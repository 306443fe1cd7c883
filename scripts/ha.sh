#!/usr/bin/env bash
# A local high-availability cluster, the production shape of docs/operations.md ("High availability") on
# loopback: three PostgreSQL 15 nodes under Patroni, its consensus store etcd, and HAProxy in front routing
# to the leader by Patroni's REST health check. All from Debian's packages (installed when missing).
#   scripts/ha.sh start          start what is not running (all of it, the first time: a new cluster); print
#                                the multi-host URL (target_session_attrs=read-write) and the proxy's URL
#   scripts/ha.sh stop           stop everything it started; a no-op when nothing runs
#   scripts/ha.sh status         the nodes as Patroni lists them (exit 3 when the cluster is not running)
#   scripts/ha.sh urls           print the two URLs again
#   scripts/ha.sh leader         print the leader's node name (exit 3 when there is none)
#   scripts/ha.sh kill-leader    kill -9 the leader's Patroni and its postmaster at once: a crashed node,
#                                which the other two fail over from (a postmaster killed alone is restarted
#                                in place by its Patroni: no failover). Prints the node killed.
#   scripts/ha.sh freeze-leader  SIGSTOP the leader's Patroni: its leader key expires without a clean
#                                shutdown while its PostgreSQL runs on. Prints the node frozen. `start`
#                                thaws it (SIGCONT), `stop` too.
#   scripts/ha.sh switchover     a planned switchover (patronictl) to a synchronous standby; prints it
# A node killed is started again by the next `start` (it rejoins as a standby, rewound if it must be).
#
# One etcd member, not three: the three would share this one machine, so they add no fault tolerance (the
# machine is the failure domain either way) and triple the consensus writes and fsyncs on a 2-core CI
# machine; what this cluster is for is the death of a PostgreSQL node, which one member serves. Production
# runs three or five members on separate machines (the DCS the operator already has).
#
# synchronous_mode with synchronous_mode_strict: a commit is acknowledged only once a synchronous standby
# has it, and when no standby is in sync writes wait instead of going asynchronous, so the leader's death
# loses nothing acknowledged. ttl 10 s, loop_wait 1 s, retry_timeout 4 s (loop_wait + 2 x retry_timeout
# <= ttl, as Patroni requires): a dead leader's key expires within about 10 s, and a standby is elected.
#
# Its files live in $PRESCIENT_HA_DIR, by default a directory under the system's temporary directory, never
# in the repository. Loopback only, ports chosen free; trust authentication, as scripts/pg.sh: a private
# cluster, not a production server. As root, etcd, Patroni (with PostgreSQL) and HAProxy run as the
# unprivileged user `postgres` (PostgreSQL refuses root).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$(realpath -m "${PRESCIENT_HA_DIR:-${TMPDIR:-/tmp}/prescient-ha-$(id -u)}")
scope=prescient
db_name=prescient
db_user=prescient
nodes=(node1 node2 node3)

say() { echo "ha.sh: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=lib/local_server.sh
. "$repo/scripts/lib/local_server.sh"
# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null) || die "PostgreSQL 15 is not installed (run scripts/setup.sh first)"
  echo "$bin"
}

# Runs a server in the background as the server user, without an intermediate process (setpriv execs), so
# that $! is the server's own pid.
spawn() {
  local log=$1
  shift
  if [ "$(id -u)" = 0 ]; then
    (cd / && exec setpriv --reuid="$run_user" --regid="$run_user" --init-groups --reset-env "$@" >>"$log" 2>&1 </dev/null) &
  else
    (cd / && exec "$@" >>"$log" 2>&1 </dev/null) &
  fi
  echo $!
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# The ports, chosen once when the cluster is made: etcd's client and peer ports, HAProxy's, and each
# node's PostgreSQL and REST ports.
declare -A port
load_ports() {
  [ -f "$dir/ports" ] || return 1
  local name value
  while read -r name value; do port[$name]=$value; done <"$dir/ports"
}
choose_ports() {
  local name chosen=" " p
  for name in etcd etcd_peer proxy node1_pg node1_rest node2_pg node2_rest node3_pg node3_rest; do
    p=$(free_port)
    while [[ "$chosen" == *" $p "* ]]; do p=$(free_port); done
    chosen+="$p "
    echo "$name $p"
  done >"$dir/ports"
  load_ports
}

multi_host_url() {
  local hosts="" n
  for n in "${nodes[@]}"; do hosts+="${hosts:+,}127.0.0.1:${port[${n}_pg]}"; done
  echo "postgresql://$db_user@$hosts/$db_name?target_session_attrs=read-write&connect_timeout=2"
}
proxy_url() { echo "postgresql://$db_user@127.0.0.1:${port[proxy]}/$db_name?connect_timeout=2"; }

# The HTTP status of GET PATH on 127.0.0.1:PORT (000 when nothing answers within a second).
http_status() {
  local answer
  # The whole answer is read (it is short): a client that hangs up early makes Patroni log a traceback.
  answer=$(timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf 'GET %s HTTP/1.0\r\n\r\n' '$2' >&3 && cat <&3" \
    2>/dev/null) || true
  [[ "$answer" =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]] && echo "${BASH_REMATCH[1]}" || echo 000
}

# The node holding the leader key, by each node's REST API (/primary answers 200 on the leader only).
leader() {
  local n
  for n in "${nodes[@]}"; do
    [ "$(http_status "${port[${n}_rest]}" /primary)" = 200 ] && { echo "$n"; return 0; }
  done
  return 1
}

write_patroni_config() {
  local n=$1 data=$dir/$1/data
  cat >"$dir/$n/patroni.yml" <<YAML
scope: $scope
name: $n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${port[${n}_rest]}
  connect_address: 127.0.0.1:${port[${n}_rest]}
etcd3:
  hosts: 127.0.0.1:${port[etcd]}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      # No replication slots: a new leader makes the standbys' slots only a few loops after its promotion
      # (2.4 s measured here), and a standby streams only once its slot exists, so until then the leader
      # has no synchronous standby and, strict, takes no commit. wal_keep_size keeps what a standby that
      # was away briefly needs; production sizes it for its longest absence (or keeps slots and the wait).
      use_slots: false
      parameters:
        max_connections: 200
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        hot_standby: "on"
        wal_log_hints: "on"
        # A standby whose stream broke tries again after this (default 5 s). After a failover the other
        # standby's first try comes before the new leader has made its replication slot; until its
        # next, the new leader has no synchronous standby, and in strict mode takes no commit.
        wal_retrieve_retry_interval: 500ms
  initdb:
    - encoding: UTF8
    - locale: C
postgresql:
  listen: 127.0.0.1:${port[${n}_pg]}
  connect_address: 127.0.0.1:${port[${n}_pg]}
  data_dir: $data
  bin_dir: $(pg_bin)
  pgpass: $dir/$n/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: $db_user
    replication:
      username: $db_user
    rewind:
      username: $db_user
  parameters:
    unix_socket_directories: $dir/$n
    shared_buffers: 128MB
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
YAML
}

write_haproxy_config() {
  local n servers=""
  for n in "${nodes[@]}"; do
    servers+="  server $n 127.0.0.1:${port[${n}_pg]} check port ${port[${n}_rest]}"$'\n'
  done
  # /primary answers 200 on the leader only; checked every 500 ms, down after 2 failures, and the sessions
  # to a node marked down are cut, so a client of the proxy reconnects to the new leader. No retries: a
  # connect to a node that went down and is not marked so yet fails at once, and the client tries again
  # by its own backoff. HAProxy's retries wait a second before each try of the same node: a connect made
  # as a leader stopped was held 2-3 s, and the Node worker (the switchover test's client of the proxy)
  # settled again up to 2.5 s after the new leader's first commit, against 1.2-1.7 s without them.
  cat >"$dir/haproxy.cfg" <<CFG
global
  maxconn 1000
  pidfile $dir/haproxy.pid
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
  retries 0
listen postgres
  bind 127.0.0.1:${port[proxy]}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
$servers
CFG
}

start_etcd() {
  alive "$dir/etcd.pid" && return
  make_owned_dir "$dir/etcd"
  chmod 700 "$dir/etcd"
  spawn "$dir/etcd.log" /usr/bin/etcd --name etcd1 --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:${port[etcd]}" --advertise-client-urls "http://127.0.0.1:${port[etcd]}" \
    --listen-peer-urls "http://127.0.0.1:${port[etcd_peer]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${port[etcd_peer]}" \
    --initial-cluster "etcd1=http://127.0.0.1:${port[etcd_peer]}" >"$dir/etcd.pid"
  local _
  for _ in $(seq 1 100); do
    [ "$(http_status "${port[etcd]}" /health)" = 200 ] && return
    alive "$dir/etcd.pid" || break
    sleep 0.1
  done
  tail -n 5 "$dir/etcd.log" >&2 || true
  die "etcd did not start on 127.0.0.1:${port[etcd]} (see $dir/etcd.log)"
}

start_node() {
  local n=$1
  if alive "$dir/$n/patroni.pid"; then
    kill -CONT "$(cat "$dir/$n/patroni.pid")"  # thawed, if frozen
    return
  fi
  make_owned_dir "$dir/$n"
  write_patroni_config "$n"
  [ "$(id -u)" = 0 ] && chown -R "$run_user" "$dir/$n"
  # A postmaster left by a Patroni killed alone would keep the port: Patroni stops and restarts it itself.
  spawn "$dir/$n/patroni.log" /usr/bin/patroni "$dir/$n/patroni.yml" >"$dir/$n/patroni.pid"
}

start_proxy() {
  alive "$dir/haproxy.pid" && return
  write_haproxy_config
  [ "$(id -u)" = 0 ] && chown "$run_user" "$dir/haproxy.cfg" "$dir"
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid="$run_user" --regid="$run_user" --init-groups /usr/sbin/haproxy -D -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1
  else
    /usr/sbin/haproxy -D -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1
  fi
}

psql_on() { as_owner "$(pg_bin)/psql" -h 127.0.0.1 -p "${port[${1}_pg]}" -U "$db_user" "${@:2}"; }

start() {
  ensure_packages ha.sh patroni python3-etcd etcd-server haproxy >&2
  local began=$SECONDS
  make_owned_dir "$dir"
  load_ports || choose_ports
  start_etcd
  local n
  for n in "${nodes[@]}"; do start_node "$n"; done
  local _ lead=""
  for _ in $(seq 1 600); do
    lead=$(leader) && break
    sleep 0.1
  done
  [ -n "$lead" ] || die "no leader elected within a minute (see $dir/node*/patroni.log)"
  # Writable, with a synchronous standby in place (strict mode: until then a commit waits).
  for _ in $(seq 1 600); do
    [ "$(psql_on "$lead" -d postgres -Atqc "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'" \
        2>/dev/null)" = 1 ] && break
    sleep 0.1
  done
  if ! psql_on "$lead" -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db_name'" | grep -q 1; then
    psql_on "$lead" -d postgres -qc "CREATE DATABASE $db_name" >/dev/null
  fi
  # Every node up and holding the database (a standby replays the CREATE DATABASE a moment after the
  # leader's commit; a node whose port was taken meanwhile never comes up: said here, not later).
  for n in "${nodes[@]}"; do
    for _ in $(seq 1 300); do
      psql_on "$n" -d "$db_name" -Atqc "SELECT 1" >/dev/null 2>&1 && continue 2
      sleep 0.1
    done
    tail -n 5 "$dir/$n/patroni.log" >&2 || true
    die "$n did not come up with the database on 127.0.0.1:${port[${n}_pg]} within 30 s (see $dir/$n/patroni.log)"
  done
  start_proxy
  # HAProxy starts with every node up, until its checks mark the standbys down: ready once six sessions
  # in a row (two rounds of its round robin) take a commit, which only the leader does.
  local in_a_row=0
  for _ in $(seq 1 300); do
    if as_owner "$(pg_bin)/psql" "$(proxy_url)" -Atqc "SELECT txid_current()" >/dev/null 2>&1; then
      in_a_row=$((in_a_row + 1))
      [ "$in_a_row" -ge 6 ] && break
    else
      in_a_row=0
      sleep 0.1
    fi
  done
  [ "$in_a_row" -ge 6 ] || die "the proxy on 127.0.0.1:${port[proxy]} did not reach the leader alone within 30 s"
  say "leader $lead; up in $((SECONDS - began)) s"
  urls
}

urls() {
  load_ports || die "no cluster in $dir: run scripts/ha.sh start"
  echo "$(multi_host_url)"
  echo "$(proxy_url)"
}

# SIGTERM to the pid in FILE, then SIGKILL after 30 s; a no-op when it is not running.
stop_pid() {
  local file=$1 pid _
  alive "$file" || return 0
  pid=$(cat "$file")
  kill -CONT "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  [ -d "$dir" ] || return 0
  stop_pid "$dir/haproxy.pid"
  local n
  for n in "${nodes[@]}"; do
    [ -f "$dir/$n/patroni.pid" ] && kill -CONT "$(cat "$dir/$n/patroni.pid")" 2>/dev/null || true
  done
  for n in "${nodes[@]}"; do stop_pid "$dir/$n/patroni.pid" & done
  wait
  # A postmaster whose Patroni was killed outlives it (kill-leader kills both, but a Patroni may die alone).
  for n in "${nodes[@]}"; do
    if [ -f "$dir/$n/data/postmaster.pid" ]; then
      as_owner "$(pg_bin)/pg_ctl" -D "$dir/$n/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
  done
  stop_pid "$dir/etcd.pid"
  say "stopped the cluster in $dir"
}

status() {
  load_ports && alive "$dir/etcd.pid" || { echo "not running ($dir)"; exit 3; }
  as_owner /usr/bin/patronictl -c "$dir/node1/patroni.yml" list
}

# Loads the ports and sets `lead` to the leader's node name, or fails saying there is none.
require_leader() {
  load_ports || die "no cluster in $dir: run scripts/ha.sh start"
  lead=$(leader) || die "no leader now"
}

kill_leader() {
  local lead postmaster=""
  require_leader
  [ -f "$dir/$lead/data/postmaster.pid" ] && postmaster=$(head -n 1 "$dir/$lead/data/postmaster.pid")
  kill -9 "$(cat "$dir/$lead/patroni.pid")" ${postmaster:+"$postmaster"}
  say "killed $lead (Patroni and PostgreSQL) at $(date -u +%H:%M:%S.%N | cut -c1-12)"
  echo "$lead"
}

freeze_leader() {
  local lead
  require_leader
  kill -STOP "$(cat "$dir/$lead/patroni.pid")"
  say "froze $lead's Patroni at $(date -u +%H:%M:%S.%N | cut -c1-12)"
  echo "$lead"
}

switchover() {
  local lead candidate
  require_leader
  candidate=$(psql_on "$lead" -d postgres -Atqc "SELECT application_name FROM pg_stat_replication WHERE sync_state = 'sync' LIMIT 1")
  [ -n "$candidate" ] || die "no synchronous standby to switch over to"
  as_owner /usr/bin/patronictl -c "$dir/$lead/patroni.yml" switchover --leader "$lead" --candidate "$candidate" --force >&2
  echo "$candidate"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  urls) urls ;;
  leader) load_ports || exit 3; leader || exit 3 ;;
  kill-leader) kill_leader ;;
  freeze-leader) freeze_leader ;;
  switchover) switchover ;;
  *) echo "usage: scripts/ha.sh start|stop|status|urls|leader|kill-leader|freeze-leader|switchover" >&2; exit 2 ;;
esac
