#!/usr/bin/env bash
# scripts/check-contributing.sh can fail: on a copy of the tree it passes; a recipe naming a file that is not
# there, a link to a page that is not there, and a recipe that names no file each fail it, named by the line
# of CONTRIBUTING.md to change; a pattern (`sql/NNNN_name.sql`) is not taken for a file.
#   tests/architecture/check_contributing_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

cp -r "$repo/engine" "$repo/jobs" "$repo/sql" "$repo/tests" "$repo/scripts" "$repo/cmake" "$repo/debian" \
  "$repo/docs" "$work/"
cp "$repo/CONTRIBUTING.md" "$repo/README.md" "$repo/CMakeLists.txt" "$repo/.gitignore" "$work/"
"$repo/scripts/check-contributing.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

lines=$(wc -l <"$repo/CONTRIBUTING.md")
# plant TEXT...: CONTRIBUTING.md with the lines TEXT added at its end (after the last recipe)
plant() {
  cp "$repo/CONTRIBUTING.md" "$work/CONTRIBUTING.md"
  printf '%s\n' "$@" >>"$work/CONTRIBUTING.md"
}
plant '1. The keys: `engine/src/core/flow_key.cpp`.'
out=$(run_failing check-contributing.sh "a file that is gone")
require_reported "$out" 'is no file or folder' \
  "check-contributing.sh: CONTRIBUTING.md:$((lines + 1)): \`engine/src/core/flow_key.cpp\` is no file or folder of the tree: correct the recipe, or the path"
plant 'See [the guide](docs/nowhere.md).'
out=$(run_failing check-contributing.sh "a link to a page that is not there")
require_reported "$out" 'is no file or folder' \
  "check-contributing.sh: CONTRIBUTING.md:$((lines + 1)): \`docs/nowhere.md\` is no file or folder of the tree: correct the recipe, or the path"
plant '' '### A new planted thing' 'Edit whatever seems right.'
out=$(run_failing check-contributing.sh "a recipe without a file")
grep -qxF "check-contributing.sh: CONTRIBUTING.md:$((lines + 2)): the recipe \"A new planted thing\" names no file" <<<"$out" ||
  fail "the recipe without a file was not named (it said: $out)"
plant '1. `sql/NNNN_name.sql` and `jobs/workers/LANGUAGE/tests.cmake`, as `sql/0001_init.sql`.'
"$repo/scripts/check-contributing.sh" "$work" >/dev/null || fail "a pattern was taken for a file"
echo "check_contributing_test.sh: the copy passes; each planted path and the recipe without a file fail it, named"
