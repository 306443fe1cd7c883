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
usage="usage: scripts/endurance.sh [--minutes M] [--rate R] [--out FILE]"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; minutes=$2; shift 2 ;;
    --rate) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; rate=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; out=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "endurance.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$minutes" in ''|*[!0-9]*|0) echo "endurance.sh: --minutes must be a positive number, not '$minutes'" >&2; exit 2 ;; esac
case "$rate" in ''|*[!0-9]*|0) echo "endurance.sh: --rate must be a positive number, not '$rate'" >&2; exit 2 ;; esac
[ -n "$out" ] || out=$repo/bench-results/endurance-$(date -u +%Y%m%dT%H%M%SZ).tsv
mkdir -p "$(dirname "$out")"

export PRESCIENT_BUILD_DIR=${PRESCIENT_BUILD_DIR:-$repo/build-release}
BUILD_TYPE=${BUILD_TYPE:-Release} "$repo/scripts/setup.sh" >&2
prescient=$PRESCIENT_BUILD_DIR/engine/prescient

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-endurance.XXXXXX)/pg
export PRESCIENT_PGDATA
daemon=""
cleanup() {
  [ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
  [ -z "$daemon" ] || wait "$daemon" 2>/dev/null || true
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
# the run's end. The sql class's function asks again once, 2 s later.
psql "$db" <<'SQL'
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
      FROM (SELECT CASE i % 5 WHEN 2 THEN 'emit' WHEN 3 THEN 'sql' ELSE 'noop' END AS job,
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
"$prescient" daemon --db "$db" --runner-id endurance --log-level warn >/dev/null 2>&1 &
daemon=$!
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

columns="time	phase	finished_per_s	p50_ms	p99_ms	backlog	horizon_xids	horizon_holder	dead_future_job	dead_history	dead_event	dead_cron_schedule	kb_future_job	kb_history	kb_event	kb_cron_schedule	sessions	daemon_rss_kb"
echo "$columns" >"$out"
echo "endurance.sh: $minutes min at $rate checks/s (+ 50 schedules every 10 s), phases of $phase_seconds s; samples in $out" >&2
echo "$columns" | tr '\t' ' ' >&2
next=$(( start + 10 ))
while [ "$next" -le "$end" ]; do
  sleep $(( next - $(date +%s) > 0 ? next - $(date +%s) : 0 ))
  figures=$(psql "$db" -At -F $'\t' <<'SQL'
WITH finished AS (
  SELECT extract(epoch FROM finished_at - last_check_at) * 1000 AS late_ms FROM prescient.job_history
   WHERE finished_at > now() - interval '10 seconds' AND outcome <> 'cancelled'),
tables AS (
  SELECT CASE WHEN relname LIKE 'job\_history%' THEN 'job_history' ELSE relname END AS t,
         sum(n_dead_tup)::bigint AS dead, (sum(pg_total_relation_size(relid)) / 1024)::bigint AS kb
    FROM pg_stat_user_tables WHERE schemaname = 'prescient' GROUP BY 1),
holder AS (SELECT xid_age, kind || coalesce(' ' || pid, '') || coalesce(' ' || application_name, '') AS who
             FROM prescient.horizon_holders() WHERE holds_tables LIMIT 1)
SELECT (SELECT round(count(*) / 10.0) FROM finished),
       (SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms)), 0) FROM finished),
       (SELECT coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms)), 0) FROM finished),
       (SELECT count(*) FROM prescient.future_job WHERE next_check_at < date_trunc('second', now())),
       coalesce((SELECT xid_age FROM holder), 0), coalesce((SELECT replace(who, ' ', '_') FROM holder), '-'),
       (SELECT dead FROM tables WHERE t = 'future_job'), (SELECT dead FROM tables WHERE t = 'job_history'),
       (SELECT dead FROM tables WHERE t = 'event'), (SELECT dead FROM tables WHERE t = 'cron_schedule'),
       (SELECT kb FROM tables WHERE t = 'future_job'), (SELECT kb FROM tables WHERE t = 'job_history'),
       (SELECT kb FROM tables WHERE t = 'event'), (SELECT kb FROM tables WHERE t = 'cron_schedule'),
       (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()) - 1
SQL
)
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status" 2>/dev/null || echo 0)
  line="$(date -u +%H:%M:%S)	$(phase_of $(( next - start - 1 )))	$figures	$rss"
  echo "$line" >>"$out"
  echo "$line" | tr '\t' ' ' >&2
  next=$(( next + 10 ))
done

echo "endurance.sh: per phase (finished/s and p50 lateness: the samples' mean; p99 lateness, backlog, horizon and dead tuples: their max)" >&2
awk -F '\t' 'NR > 1 {
  p = $2; if (!(p in n)) order[++phases] = p
  n[p]++; runs[p] += $3; p50[p] += $4; if ($5 > p99[p]) p99[p] = $5; if ($6 > backlog[p]) backlog[p] = $6
  if ($7 > horizon[p]) horizon[p] = $7; if ($9 > dead_q[p]) dead_q[p] = $9; if ($10 > dead_h[p]) dead_h[p] = $10
}
END {
  printf "%-9s %10s %8s %10s %8s %12s %15s %12s\n", "phase", "finished/s", "p50_ms", "p99_ms_max", "backlog", "horizon_xids", "dead_future_job", "dead_history"
  for (i = 1; i <= phases; i++) {
    p = order[i]
    printf "%-9s %10.0f %8.0f %10d %8d %12d %15d %12d\n", p, runs[p] / n[p], p50[p] / n[p], p99[p], backlog[p], horizon[p], dead_q[p], dead_h[p]
  }
}' "$out" >&2
