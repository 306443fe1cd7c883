#!/usr/bin/env bash
# scripts/check-sql-seam.sh can fail: on a copy of engine/ and jobs/ it passes; a statement planted in the
# runner and one in a job class each fail it, named by file and line.
#   tests/architecture/check_sql_seam_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

cp -r "$repo/engine" "$repo/jobs" "$work/"
"$repo/scripts/check-sql-seam.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

echo 'const char* kPlanted = "SELECT id FROM prescient.future_job";' >>"$work/engine/src/runner/settlements.cpp"
echo 'const char* kPlanted = "UPDATE prescient.cron_schedule SET paused_at = now()";' >>"$work/jobs/cron_job.cpp"
out=$(run_failing check-sql-seam.sh "two planted statements")
for planted in "engine/src/runner/settlements.cpp:$(wc -l <"$work/engine/src/runner/settlements.cpp"):" \
               "jobs/cron_job.cpp:$(wc -l <"$work/jobs/cron_job.cpp"):"; do
  grep -qF "$planted" <<<"$out" || fail "not named: $planted (it said: $out)"
done
echo "check_sql_seam_test.sh: the copy passes; each planted statement fails it, named"
