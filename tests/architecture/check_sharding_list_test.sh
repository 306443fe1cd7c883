#!/usr/bin/env bash
# scripts/check-sharding-list.sh can fail: on a copy of the sources and docs/scaling.md it passes; a new
# advisory lock in an SQL function and a new notification in engine/src/db/ each fail it, named, and so does
# a row of the list whose use is gone.
#   tests/architecture/check_sharding_list_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/engine/src" "$work/sql" "$work/docs"
cp -r "$repo/engine/src/db" "$work/engine/src/"
cp -r "$repo/sql/functions" "$work/sql/"
cp "$repo/docs/scaling.md" "$work/docs/"
"$repo/scripts/check-sharding-list.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

printf '%s\n' 'CREATE OR REPLACE FUNCTION prescient.planted() RETURNS void' \
  'LANGUAGE sql AS $$ SELECT pg_advisory_lock(1) $$;' >"$work/sql/functions/999_planted.sql"
printf 'constexpr const char* kPlanted = "NOTIFY prescient_planted";\n' >"$work/engine/src/db/planted.hpp"
rm "$work/engine/src/db/migrator.cpp"
out=$(run_failing check-sharding-list.sh "two planted uses and a row gone stale")
require_reported "$out" 'docs/scaling.md' \
  "engine/src/db/planted.hpp: uses the construct 'notification', which docs/scaling.md does not list" \
  "sql/functions/999_planted.sql: uses the construct 'advisory lock', which docs/scaling.md does not list" \
  "engine/src/db/migrator.cpp: listed in docs/scaling.md for the construct 'advisory lock', which it no longer uses"
echo "check_sharding_list_test.sh: the copy passes; each planted use and the stale row fail it, named"
