#!/usr/bin/env bash
# scripts/check-design-map.sh can fail: on a copy of the repository's map and code it passes; a row naming
# a file that does not exist, a file outside engine/, jobs/ and sql/, a function the file only calls, a
# constant it only uses, a member of another class, a thirteenth file, and a step removed from the middle
# of the path each fail it, named.
#   tests/architecture/check_design_map_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/docs"
cp -r "$repo/engine" "$repo/jobs" "$repo/sql" "$work/"
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
# worker.cpp calls settlements_of (runner::settlements_of(...)) but does not define it
add '| `engine/src/runner/worker.cpp` | `settlements_of` | |' 'engine/src/runner/worker.cpp defines no settlements_of'
# pg_runner_store.cpp sends kClaimDue but does not define it
add '| `engine/src/db/pg_runner_store.cpp` | `kClaimDue` | |' 'engine/src/db/pg_runner_store.cpp defines no kClaimDue'
# worker.cpp defines Worker::Impl::claim_batch: a member of Worker::Impl, not of Impl nor of SlotRunner
plant 's/| `Worker::Impl::claim_batch` |/| `SlotRunner::claim_batch` |/' \
  'engine/src/runner/worker.cpp defines no SlotRunner::claim_batch'
plant 's/| `Worker::Impl::claim_batch` |/| `Impl::claim_batch` |/' 'engine/src/runner/worker.cpp defines no Impl::claim_batch'
# PgRunnerStore::settle left out: kSettle, below it, is used by no row above
plant '/^| `engine\/src\/db\/pg_runner_store.cpp` | `PgRunnerStore::settle` |/d' \
  'kSettle (engine/src/db/runner_statements.hpp): no row above it calls or uses it'
# the map has twelve files (since the settlement moved into SQL): three more take it past twelve
add '| `engine/src/core/clock.cpp` | `x` | |\n| `engine/src/core/duration.cpp` | `x` | |\n| `engine/src/core/errors.cpp` | `x` | |' \
  'files (1 to 12)'
echo "check_design_map_test.sh: the copy passes; each planted row fails it, named"
