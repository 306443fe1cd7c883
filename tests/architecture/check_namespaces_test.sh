#!/usr/bin/env bash
# scripts/check-namespaces.sh can fail: on a copy of the sources it passes; a db/ header declaring in
# prescient, a runner/ header in prescient::detail (as several did) and a job class in prescient each fail
# it, named with file and line, while a block that only forward-declares another library's class passes.
#   tests/architecture/check_namespaces_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/engine"
cp -r "$repo/engine/src" "$repo/engine/include" "$repo/engine/cli" "$repo/engine/web" "$work/engine/"
cp -r "$repo/jobs" "$work/"
"$repo/scripts/check-namespaces.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

printf '#pragma once\nnamespace prescient {\nint planted();\n}  // namespace prescient\n' >"$work/engine/src/db/planted.hpp"
printf '#pragma once\n\nnamespace prescient::detail {\nstruct Planted {\n  int n;\n};\n}\n' >"$work/engine/src/runner/planted.hpp"
printf '#pragma once\nnamespace httplib {\nclass Server;\n}\nnamespace prescient {\nclass PlantedJob {};\n}\n' \
  >"$work/jobs/planted_job.hpp"
printf '#pragma once\nnamespace httplib {\nclass Server;\n}\nnamespace prescient::db {\nint fine();\n}\n' \
  >"$work/engine/src/db/forward_only.hpp"
out=$(run_failing check-namespaces.sh "three planted violations")
require_reported "$out" ': declares in namespace ' \
  "engine/src/db/planted.hpp:2: declares in namespace prescient: a header here declares in prescient::db" \
  "engine/src/runner/planted.hpp:3: declares in namespace prescient::detail: a header here declares in prescient::runner" \
  "jobs/planted_job.hpp:5: declares in namespace prescient: a header here declares in prescient::jobs"
echo "check_namespaces_test.sh: the copy passes; each planted violation fails it, named"
