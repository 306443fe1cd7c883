#!/usr/bin/env bash
# scripts/check-contributing.sh can fail: on a copy of the tree it passes; a recipe naming a file that is not
# there, a link to a page that is not there, a recipe that names no file, and a recipe naming more hand-edited
# files than it says each fail it, named by the line of CONTRIBUTING.md to change; a pattern
# (`sql/NNNN_name.sql`) is not taken for a file, nor a test or a generated file for a hand-edited one.
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
plant '' '### A new planted page' 'At most 2 hand-edited files, tests apart.' \
  '1. `engine/web/web_pages.cpp`, `engine/web/assets/app.js`, `engine/web/web_api.cpp`, `sql/NNNN_name.sql`.' \
  'Generated: `sql/schema.sql`,' '`docs/cli.md`.'
out=$(run_failing check-contributing.sh "a recipe naming more hand-edited files than it says")
grep -qxF "check-contributing.sh: CONTRIBUTING.md:$((lines + 3)): the recipe \"A new planted page\" names 4 hand-edited files, more than the 2 it says: make the change touch fewer, or the bound true (engine/web/assets/app.js, engine/web/web_api.cpp, engine/web/web_pages.cpp, sql/NNNN_name.sql)" <<<"$out" ||
  fail "the recipe over its bound was not named (it said: $out)"
plant '' '### A new planted page' 'At most 2 hand-edited files, tests apart.' \
  '1. `engine/web/web_pages.cpp`, `engine/web/assets/app.js`, `tests/unit/web_pages_test.cpp`.' \
  'Generated: `sql/schema.sql`.'
"$repo/scripts/check-contributing.sh" "$work" >/dev/null || fail "a test or a generated file was counted as hand-edited"
echo "check_contributing_test.sh: the copy passes; each planted path, the recipe without a file and the recipe" \
  "over its bound fail it, named"
