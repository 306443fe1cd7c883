#!/usr/bin/env bash
# Figures for prescient, side by side with the bare-SQL floor and (with --peers) graphile-worker and
# pg-boss, all measured in the same run on the same server: a Release build, a fresh private cluster
# (the settings of scripts/pg.sh, which are those of ../shared/peers/pg.sh; fsync and
# synchronous_commit on), then one table, and the raw figures in bench-results/<time>.json.
# Figures, not pass/fail.
#   scripts/bench.sh [--n N] [--quick] [--peers]
#     --n N     checks per throughput measure (default 100000)
#     --quick   skip the slow measures: scale stops at 1M, 10 000 schedules instead of 100 000
#     --peers   also run ../shared/peers/run-all.sh (bulk enqueue and process phases, 1 run each;
#               installs its pinned Node packages from npm on first use)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=100000
scale_sizes=1000000,10000000
schedule_count=100000
peers=false
usage="usage: scripts/bench.sh [--n N] [--quick] [--peers]"
while [ $# -gt 0 ]; do
  case "$1" in
    --n) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; n=$2; shift 2 ;;
    --quick) scale_sizes=100000,1000000; schedule_count=10000; shift ;;
    --peers) peers=true; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$n" in ''|*[!0-9]*|0) echo "bench.sh: --n must be a positive number, not '$n'" >&2; exit 2 ;; esac

export PRESCIENT_BUILD_DIR=$repo/build-release
BUILD_TYPE=Release "$repo/scripts/setup.sh"
cmake --build "$PRESCIENT_BUILD_DIR" --target prescient_bench -j "$(nproc)" >/dev/null

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-bench.XXXXXX)/pg
export PRESCIENT_PGDATA
cleanup() {
  "$repo/scripts/pg.sh" stop || true
  rm -rf "$(dirname "$PRESCIENT_PGDATA")"
}
trap cleanup EXIT
url=$("$repo/scripts/pg.sh" start)
server=${url%/*}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
psql() { "$pg_bin/psql" -q -X "$@"; }
prescient=$PRESCIENT_BUILD_DIR/engine/prescient
"$prescient" migrate --db "$url" --slot 1m >/dev/null 2>&1
psql "$server/postgres" -c "CREATE DATABASE prescient_1s"
"$prescient" migrate --db "$server/prescient_1s" --slot 1s >/dev/null 2>&1

echo "bench.sh: prescient, N = $n (scale: $scale_sizes pending; $schedule_count schedules)"
results=$("$PRESCIENT_BUILD_DIR/tests/prescient_bench" --db "$url" --db-1s "$server/prescient_1s" --n "$n" \
  --only enqueue,drain,scale,lateness,schedules --scale "$scale_sizes" --schedules "$schedule_count")

echo "bench.sh: the SQL floor (../shared/floor/lock_settle.sql, 2 clients), N = $n"
floor_dir=$repo/../shared/floor
psql "$url" -f "$floor_dir/schema.sql" >/dev/null 2>&1
psql "$url" -v n="$n" -f "$floor_dir/load.sql" >/dev/null
psql "$url" -c "VACUUM ANALYZE floor.future_job" -c "CHECKPOINT"
start=$(date +%s.%N)
"$pg_bin/pgbench" -n -f "$floor_dir/lock_settle.sql" -c 2 -j 2 -t $(( (n + 1999) / 2000 )) "$url" >/dev/null
floor_seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
floor_left=$(psql -At "$url" -c "SELECT count(*) FROM floor.future_job")
floor_rate=$(awk -v n="$n" -v left="$floor_left" -v s="$floor_seconds" 'BEGIN { print (n - left) / s }')
psql "$url" -c "DROP SCHEMA floor CASCADE"

# The peers' best rates of this run, by phase (0 when not run).
graphile_process=0 graphile_bulk=0 pgboss_process=0 pgboss_bulk=0
if $peers; then
  echo "bench.sh: the peers (../shared/peers/run-all.sh: enqueue-bulk and process, 1 run each), N = $n"
  psql "$server/postgres" -c "CREATE DATABASE peers"
  peer_results=$(mktemp /tmp/prescient-peers.XXXXXX.jsonl)
  # run-all.sh checks its server with pg_ctl on PGDATA_BENCH: point it at this run's cluster.
  (cd "$repo/../shared/peers" &&
    DATABASE_URL="$server/peers" PGDATA_BENCH=$PRESCIENT_PGDATA N=$n REPS=1 ONLY="enqueue-bulk process" \
      RESULTS_FILE=$peer_results ./run-all.sh >/dev/null)
  best() {  # best jobs_per_sec of a peer's phase in this run's results
    grep "\"peer\":\"$1\"" "$peer_results" | grep "\"phase\":\"$2\"" |
      sed -E 's/.*"jobs_per_sec":([0-9.]+).*/\1/' | sort -n | tail -n 1
  }
  graphile_process=$(best graphile-worker process) graphile_bulk=$(best graphile-worker enqueue-bulk)
  pgboss_process=$(best pg-boss process) pgboss_bulk=$(best pg-boss enqueue-bulk)
  rm -f "$peer_results"
fi

mkdir -p "$repo/bench-results"
out=$repo/bench-results/$(date -u +%Y%m%dT%H%M%SZ).json
{
  echo "{\"n\": $n, \"machine\": \"$(nproc) cores, $(uname -r)\", \"server\": \"$("$pg_bin/postgres" --version)\","
  echo " \"floor_checks_per_second\": $floor_rate,"
  echo " \"peers\": {\"graphile_worker\": {\"process\": ${graphile_process:-0}, \"bulk\": ${graphile_bulk:-0}},"
  echo "           \"pg_boss\": {\"process\": ${pgboss_process:-0}, \"bulk\": ${pgboss_bulk:-0}}},"
  echo " \"prescient\": ["
  echo "$results" | paste -sd, -
  echo "]}"
} >"$out"

ratio() { awk -v r="$1" -v base="$2" 'BEGIN { if (base > 0) printf "%.2fx", r / base; else printf "-" }'; }
field() {  # a field of one JSON line: a string's text, or a number
  echo "$1" | sed -nE -e "s/.*\"$2\":\"([^\"]*)\".*/\1/p;t" -e "s/.*\"$2\":([^,}]*).*/\1/p"
}
printf '\n%-58s %10s %9s %8s %9s %9s  %s\n' "measure" "checks/s" "seconds" "floor" "graphile" "pg-boss" "note"
echo "$results" | while read -r line; do
  measure=$(field "$line" measure) rate=$(field "$line" checks_per_second) secs=$(field "$line" seconds)
  note=$(field "$line" note)
  vs_floor=- vs_graphile=- vs_pgboss=-
  case "$measure" in
    "slot drain"*)
      vs_floor=$(awk -v r="$rate" -v f="$floor_rate" 'BEGIN { printf "%.0f%%", 100 * r / f }')
      vs_graphile=$(ratio "$rate" "$graphile_process") vs_pgboss=$(ratio "$rate" "$pgboss_process") ;;
    "enqueue bulk"*)
      vs_graphile=$(ratio "$rate" "$graphile_bulk") vs_pgboss=$(ratio "$rate" "$pgboss_bulk") ;;
  esac
  printf '%-58s %10.0f %9.3f %8s %9s %9s  %s\n' "$measure" "$rate" "$secs" "$vs_floor" "$vs_graphile" "$vs_pgboss" "$note"
done
printf '%-58s %10.0f %9.3f %8s\n' "SQL floor (lock_settle, 2 clients)" "$floor_rate" "$floor_seconds" "100%"
if $peers; then
  printf '%-58s %10.0f\n' "graphile-worker: best process rate (this run)" "$graphile_process" \
    "graphile-worker: best bulk enqueue (this run)" "$graphile_bulk" \
    "pg-boss: best process rate (this run)" "$pgboss_process" "pg-boss: best bulk enqueue (this run)" "$pgboss_bulk"
fi
echo "bench.sh: raw figures in $out"
