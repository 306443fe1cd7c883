#!/usr/bin/env bash
# scripts/bench-table.sh turns a results file of scripts/bench.sh into the table docs/performance.md keeps:
# on tests/bench/sample-results.json (a run's file, cut down, with the figures of the last run against the
# peers) a drain is compared with both floors and graphile-worker, a bulk enqueue with graphile-worker's best
# batch, a peer not run leaves its column empty, a dashboard call is a time and a note stays a note, the five
# slots' floor gives each run's ratio; a file that is not a results file is refused, exit 1, named.
#   tests/bench/bench_table_test.sh REPO
set -euo pipefail
repo=${1:?usage: bench_table_test.sh REPO}
fail() { echo "bench_table_test.sh: FAILED: $*" >&2; exit 1; }
out=$("$repo/scripts/bench-table.sh" "$repo/tests/bench/sample-results.json")
for row in \
  "| slot drain, noop, 2 workers | 134.7 [130.0–140.0] | 59 % | 80 % | 2.02× |  |" \
  "| enqueue bulk, 1000 per call | 88.9 [85.0–90.0] |  |  | 1.11× |  |" \
  "| dashboard: /api/stats | 1.2 ms | | | | |" \
  "| worker idle, Go: CPU in a minute waiting for its slot | 1.5 ms (target: at most 5 ms) | | | | |" \
  "| SQL floor on prescient's tables (no engine) | 168.0 | 73 % | 100 % | | |" \
  "| SQL floor: five slots of schedules on prescient's tables | the fifth slot's rate over the first's: 0.77, 0.90 | | | | |"; do
  grep -qxF -- "$row" <<<"$out" || fail "no row $row (it printed: $out)"
done
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
echo '{"n": 1}' >"$bad"
status=0
said=$("$repo/scripts/bench-table.sh" "$bad" 2>&1) || status=$?
[ "$status" = 1 ] || fail "exit $status on a file that is not a results file"
grep -qF "is not a results file of scripts/bench.sh" <<<"$said" || fail "not named: $said"
echo "bench_table_test.sh: the sample's table is as docs/performance.md keeps it; a bad file is refused"
