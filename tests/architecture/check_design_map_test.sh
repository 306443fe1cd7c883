#!/usr/bin/env bash
# scripts/check-design-map.sh can fail: on a copy of the repository's map and code it passes; a row naming
# a file that does not exist, a function the file only calls, a constant it only uses, a member of the wrong class, or a ninth file
# each fail it, named.
#   tests/architecture/check_design_map_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/docs"
cp -r "$repo/engine" "$work/"
cp "$repo/docs/design.md" "$work/docs/"
"$repo/scripts/check-design-map.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

# plant ROW EXPECTED: the map with ROW added after its first row fails, saying EXPECTED
plant() {
  cp "$repo/docs/design.md" "$work/docs/design.md"
  sed -i "0,/^| \`engine\/src\/runner\/daemon.cpp\`/{/^| \`engine\/src\/runner\/daemon.cpp\`/a $1
}" "$work/docs/design.md"
  local out
  out=$(run_failing check-design-map.sh "the row $1")
  grep -qF "$2" <<<"$out" || fail "the row $1 was not named (it said: $out)"
}
plant '| `engine/src/runner/nowhere.cpp` | `run` | |' 'engine/src/runner/nowhere.cpp does not exist'
# worker.cpp calls settlements_of (runner::settlements_of(...)) but does not define it
plant '| `engine/src/runner/worker.cpp` | `settlements_of` | |' 'engine/src/runner/worker.cpp defines no settlements_of'
# pg_runner_store.cpp sends kClaimDue but does not define it
plant '| `engine/src/db/pg_runner_store.cpp` | `kClaimDue` | |' 'engine/src/db/pg_runner_store.cpp defines no kClaimDue'
plant '| `engine/src/runner/daemon.cpp` | `SlotRunner::run` | |' 'engine/src/runner/daemon.cpp defines no SlotRunner::run'
plant '| `engine/src/runner/daemon.cpp` | `Daemon::run` | |' 'the map has 9 files (1 to 8)'
echo "check_design_map_test.sh: the copy passes; each planted row fails it, named"
