#!/usr/bin/env bash
# Throughput figures for prescient, side by side with the bare-SQL floor measured in the same run on
# the same server: a Release build, a fresh private cluster (the settings of scripts/pg.sh, which are
# those of ../shared/peers/pg.sh; fsync and synchronous_commit on), then one table, and the raw
# figures in bench-results/<time>.json. Figures, not pass/fail.
#   scripts/bench.sh [--n N]        (default N = 100000)
# Not yet here (the benchmarks issue): the peers run in the same session, the 1M/10M scale run,
# daemon lateness and sustained schedules.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=100000
while [ $# -gt 0 ]; do
  case "$1" in
    --n) n=$2; shift 2 ;;
    *) echo "usage: scripts/bench.sh [--n N]" >&2; exit 2 ;;
  esac
done
case "$n" in ''|*[!0-9]*) echo "bench.sh: --n must be a positive number, not '$n'" >&2; exit 2 ;; esac

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
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
"$PRESCIENT_BUILD_DIR/engine/prescient" migrate --db "$url" --slot 1m >/dev/null 2>&1

echo "bench.sh: prescient, N = $n"
results=$("$PRESCIENT_BUILD_DIR/tests/prescient_bench" --db "$url" --n "$n")

echo "bench.sh: the SQL floor (../shared/floor/lock_settle.sql, 2 clients), N = $n"
floor_dir=$repo/../shared/floor
"$pg_bin/psql" -q -X "$url" -f "$floor_dir/schema.sql" >/dev/null 2>&1
"$pg_bin/psql" -q -X "$url" -v n="$n" -f "$floor_dir/load.sql" >/dev/null
start=$(date +%s.%N)
"$pg_bin/pgbench" -n -f "$floor_dir/lock_settle.sql" -c 2 -j 2 -t $(( (n + 1999) / 2000 )) "$url" >/dev/null
floor_seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
floor_left=$("$pg_bin/psql" -Atq -X "$url" -c "SELECT count(*) FROM floor.future_job")
floor_rate=$(awk -v n="$n" -v left="$floor_left" -v s="$floor_seconds" 'BEGIN { print (n - left) / s }')

mkdir -p "$repo/bench-results"
out=$repo/bench-results/$(date -u +%Y%m%dT%H%M%SZ).json
{
  echo "{\"n\": $n, \"machine\": \"$(nproc) cores, $(uname -r)\", \"server\": \"$("$pg_bin/postgres" --version)\","
  echo " \"floor_checks_per_second\": $floor_rate, \"prescient\": ["
  echo "$results" | paste -sd, -
  echo "]}"
} >"$out"

printf '\n%-46s %12s %10s %10s\n' "measure" "checks/s" "seconds" "vs floor"
echo "$results" | while read -r line; do
  measure=$(echo "$line" | sed -E 's/.*"measure":"([^"]*)".*/\1/')
  rate=$(echo "$line" | sed -E 's/.*"checks_per_second":([0-9.e+]*).*/\1/')
  secs=$(echo "$line" | sed -E 's/.*"seconds":([0-9.e+-]*).*/\1/')
  ratio=-
  case "$measure" in "slot drain"*) ratio=$(awk -v r="$rate" -v f="$floor_rate" 'BEGIN { printf "%.0f%%", 100 * r / f }') ;; esac
  printf '%-46s %12.0f %10.3f %10s\n' "$measure" "$rate" "$secs" "$ratio"
done
printf '%-46s %12.0f %10.3f %10s\n' "SQL floor (lock_settle, 2 clients)" "$floor_rate" "$floor_seconds" "100%"
echo "bench.sh: raw figures in $out"
