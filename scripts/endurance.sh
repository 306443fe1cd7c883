#!/usr/bin/env bash
# A soak that is a benchmark (issue 62; this is its first form): a steady mixed load on a fresh private
# cluster (durable settings, as scripts/bench.sh's) for a chosen time, through the phases that hurt a queue
# living in a shared database, with the figures every 10 s. Figures, not pass/fail.
#   scripts/endurance.sh [--minutes M] [--rate R] [--out FILE]
#     --minutes M  the whole run (default 5), in five equal phases:
#                    baseline     the load alone
#                    pinned       three overlapping REPEATABLE READ snapshots (each half the phase, started a
#                                 quarter apart, each running a query as a report would)
#                    idle         a session that wrote and then sits `idle in transaction` the whole phase
#                    index        CREATE INDEX CONCURRENTLY on the history's partitions, built and dropped
#                                 again in turn through the phase
#                    recovery     the load alone again
#     --rate R     checks enqueued per second (default 200, each due 2 s after its enqueue, on a 1 s grid):
#                  two fifths run once (noop), one fifth emits an event (emit), one fifth asks again 2 s
#                  later, once (the sql class), one fifth runs once under a flow limit (a rate per tenant,
#                  above its share: it admits, it does not hold back); and 50 recurring schedules fire every
#                  10 s (5 runs/s). One daemon fires them all.
#     --out FILE   the samples, tab-separated (default bench-results/endurance-<time>.tsv)
# Every 10 s, one line: the phase; checks finished per second over the last 10 s (a rescheduled check's
# first run and the schedules' own checks are not among them: they do not finish); lateness p50 and p99 in ms
# (settled time minus the slot due, of the checks finished in those 10 s); the backlog (checks due before
# the current slot, live); the horizon (transactions behind, and who holds it, from
# prescient.horizon_holders()); dead tuples and total size (kB) of future_job, of the history (all its
# partitions), of the outbox (event) and of cron_schedule; the server's sessions on the database and the
# daemon's resident memory (kB). At the end, a summary per phase.
# Not yet in this form (issue 62): a worker class taken by a worker in another language, --peers
# (graphile-worker under the same load), the 3-minute run in the suite, and the figures in
# docs/performance.md.
# The build is PRESCIENT_BUILD_DIR (default build-release, BUILD_TYPE Release, as scripts/bench.sh's).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minutes=5
rate=200
out=""
check=false
usage="usage: scripts/endurance.sh [--minutes M] [--rate R] [--out FILE] [--check]"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; minutes=$2; shift 2 ;;
    --rate) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; rate=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; out=$2; shift 2 ;;
    --check) check=true; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "endurance.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$minutes" in ''|*[!0-9]*|0) echo "endurance.sh: --minutes must be a positive number, not '$minutes'" >&2; exit 2 ;; esac
case "$rate" in ''|*[!0-9]*|0) echo "endurance.sh: --rate must be a positive number, not '$rate'" >&2; exit 2 ;; esac
if $check && [ "$minutes" -lt 2 ]; then
  echo "endurance.sh: --check needs --minutes 2 or more (two samples in each phase), not '$minutes'" >&2; exit 2
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

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-endurance.XXXXXX)/pg
export PRESCIENT_PGDATA
daemon=""
worker=""
cleanup() {
  for pid in $daemon $worker; do kill "$pid" 2>/dev/null || true; done
  for pid in $daemon $worker; do wait "$pid" 2>/dev/null || true; done
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
                              WHEN 4 THEN json_build_object('tenant', 't' || i % 10)::text
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

phase_seconds=$(( minutes * 60 / 5 ))
start=$(date +%s)
end=$(( start + 5 * phase_seconds ))
PGAPPNAME=endurance-daemon "$prescient" daemon --db "$db" --runner-id endurance --log-level warn >/dev/null 2>&1 &
daemon=$!
PGAPPNAME=endurance-worker PRESCIENT_DATABASE_URL=$db PRESCIENT_WORKERS_BUILD_DIR=$workers_build \
  "$repo/jobs/workers/python/conformance-driver" work --name endurance --classes endurance_worker 2>"$worker_log" &
worker=$!
PGAPPNAME=endurance-load psql "$db" -c "CALL endurance.load($rate, to_timestamp($end))" &

phase_of() {  # phase_of SECONDS_SINCE_START
  local names=(baseline pinned idle index recovery) n=$(( $1 / phase_seconds ))
  [ "$n" -lt 5 ] || n=4
  echo "${names[$n]}"
}

# The phases' sessions, each started in the background at its time.
pin() {  # pin DELAY HOLD N: a REPEATABLE READ snapshot held HOLD seconds, running a query as a report would
  sleep "$1"
  PGAPPNAME=endurance-pin-$3 psql "$db" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
    -c "SELECT count(*) FROM prescient.job_history" -c "SELECT pg_sleep($2)" -c "COMMIT" >/dev/null
}
idle() {  # idle DELAY HOLD: a transaction that wrote (it has an xid), then waits for its client
  sleep "$1"
  { echo "BEGIN;"; echo "SELECT txid_current();"; sleep "$2"; echo "COMMIT;"; } |
    PGAPPNAME=endurance-idle psql "$db" >/dev/null
}
index() {  # index DELAY UNTIL: CREATE INDEX CONCURRENTLY on each history partition with rows, dropped again
  sleep "$1"
  while [ "$(date +%s)" -lt "$2" ]; do
    for partition in $(psql "$db" -At -c "SELECT relname FROM pg_stat_user_tables WHERE schemaname = 'prescient'
                                           AND relname LIKE 'job\_history\_%' AND n_live_tup > 0"); do
      PGAPPNAME=endurance-index psql "$db" -c "CREATE INDEX CONCURRENTLY endurance_$partition ON prescient.$partition (entity_key, finished_at)" \
        -c "DROP INDEX CONCURRENTLY prescient.endurance_$partition"
    done
  done
}
p=$phase_seconds
pin "$p" $(( p / 2 )) 1 &
pin $(( p + p / 4 )) $(( p / 2 )) 2 &
pin $(( p + p / 2 )) $(( p / 2 )) 3 &
idle $(( 2 * p )) "$p" &
index $(( 3 * p )) $(( start + 4 * p )) &

columns="time	phase	finished_per_s	p50_ms	p99_ms	worker_per_s	worker_p99_ms	backlog	horizon_xids	horizon_holder	dead_future_job	dead_history	dead_event	dead_cron_schedule	kb_future_job	kb_history	kb_event	kb_cron_schedule	sessions	daemon_sessions	worker_sessions	daemon_rss_kb"
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
}' "$out" >&2
echo "endurance.sh: backlog $backlog, $drained_in s after the load stopped; each table's size (kB) over the recovery phase:" >&2
join <(echo "$sizes_before_recovery") <(echo "$sizes_after_recovery") |
  awk '{ printf "  %-16s %8d -> %8d\n", $1, $2, $3 }' >&2

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
