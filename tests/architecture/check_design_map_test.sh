#!/usr/bin/env bash
# scripts/check-design-map.sh can fail: on a copy of the repository's map and code it passes; a row naming
# a file that does not exist, a file outside engine/, jobs/ and sql/, a function the file only calls, a
# constant it only uses, a member of another class, a thirteenth file, and a step removed from the middle
# of the path each fail it, named; and so does a code name in backticks anywhere in the map that the tree
# does not hold (a file, an SQL function, an identifier), named by the map's line.
#   tests/architecture/check_design_map_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/docs"
cp -r "$repo/engine" "$repo/jobs" "$repo/sql" "$repo/tests" "$repo/scripts" "$repo/cmake" "$repo/debian" "$work/"
cp "$repo/CMakeLists.txt" "$work/"
cp "$repo/docs/design.md" "$work/docs/"
"$repo/scripts/check-design-map.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

# plant EDIT EXPECTED: the map changed by the sed script EDIT fails, saying EXPECTED
plant() {
  cp "$repo/docs/design.md" "$work/docs/design.md"
  sed -i "$1" "$work/docs/design.md"
  cmp -s "$repo/docs/design.md" "$work/docs/design.md" && fail "the edit $1 changed nothing"
  local out
  out=$(run_failing check-design-map.sh "the edit $1")
  grep -qF "$2" <<<"$out" || fail "the edit $1 was not named (it said: $out)"
}
# add ROW EXPECTED: the map with ROW added after its first row fails, saying EXPECTED
add() {
  plant "0,/^| \`engine\/src\/runner\/daemon.cpp\`/{/^| \`engine\/src\/runner\/daemon.cpp\`/a $1
}" "$2"
}
add '| `engine/src/runner/nowhere.cpp` | `run` | |' 'engine/src/runner/nowhere.cpp does not exist'
add '| `docs/design.md` | `run` | |' 'docs/design.md is not under engine/, jobs/ or sql/'
# runner_thread.cpp calls settlements_of (runner::settlements_of(...)) but does not define it
add '| `engine/src/runner/runner_thread.cpp` | `settlements_of` | |' 'engine/src/runner/runner_thread.cpp defines no settlements_of'
# pg_runner_store.cpp sends kClaimDue but does not define it
add '| `engine/src/db/pg_runner_store.cpp` | `kClaimDue` | |' 'engine/src/db/pg_runner_store.cpp defines no kClaimDue'
# runner_thread.cpp defines RunnerThread::Impl::claim_batch: a member of RunnerThread::Impl, not of Impl nor of SlotRunner
plant 's/| `RunnerThread::Impl::claim_batch` |/| `SlotRunner::claim_batch` |/' \
  'engine/src/runner/runner_thread.cpp defines no SlotRunner::claim_batch'
plant 's/| `RunnerThread::Impl::claim_batch` |/| `Impl::claim_batch` |/' 'engine/src/runner/runner_thread.cpp defines no Impl::claim_batch'
# PgRunnerStore::settle left out: kSettle, below it, is used by no row above
plant '/^| `engine\/src\/db\/pg_runner_store.cpp` | `PgRunnerStore::settle` |/d' \
  'kSettle (engine/src/db/runner_statements.hpp): no row above it calls or uses it'
# the map has twelve files (since the settlement moved into SQL): three more take it past twelve
add '| `engine/src/core/clock.cpp` | `x` | |\n| `engine/src/core/duration.cpp` | `x` | |\n| `engine/src/core/errors.cpp` | `x` | |' \
  'files (1 to 12)'

# mention TEXT EXPECTED: the map with a line of TEXT added at its end fails, saying EXPECTED of that line
mention() {
  local line
  line=$(($(wc -l <"$repo/docs/design.md") + 1))
  plant "\$a $1" "docs/design.md:$line: $2"
}
mention 'The judge also asks `prescient.judge_age`.' '`prescient.judge_age` is no function, table, view or type that sql/ creates'
mention 'Keys come from `engine/src/core/flow_key.cpp`.' '`engine/src/core/flow_key.cpp` is no file or folder of the tree'
mention 'The judge applies `own_limits`.' '`own_limits`: own_limits is in no source'
mention 'It calls `RunnerThread::Impl::judge_answer`.' '`RunnerThread::Impl::judge_answer`: judge_answer is in no source'
# a placeholder is a pattern, and an existing name passes
cp "$repo/docs/design.md" "$work/docs/design.md"
echo 'A migration is `sql/NNNN_name.sql`; a command `engine/cli/cmd_NAME.cpp`; the judge `prescient.judge`.' \
  >>"$work/docs/design.md"
"$repo/scripts/check-design-map.sh" "$work" >/dev/null || fail "a placeholder or an existing name was refused"
echo "check_design_map_test.sh: the copy passes; each planted row and each planted name fails it, named"
