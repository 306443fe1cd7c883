#!/usr/bin/env bash
# Fails when SQL text appears outside its two places: sql/ (the schema) and engine/src/db/ (every
# statement the engine runs). Looks at the C++ string literals of engine/ and jobs/ for the shapes of
# statements. Not checked: tests/ (they set scenarios up in SQL) and jobs/examples/ (an application's
# plugin asking its own tables through its job context, as applications do).
#   scripts/check-sql-seam.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
statement='"[^"]*(SELECT [a-z*(]|INSERT INTO|UPDATE [a-z]|DELETE FROM|(CREATE|ALTER|DROP) (TABLE|INDEX|FUNCTION|SCHEMA|ROLE|TRIGGER|SEQUENCE|VIEW)|TRUNCATE |SAVEPOINT|ROLLBACK|"COMMIT|"BEGIN|LISTEN [a-z]|NOTIFY |pg_notify)'
found=$(cd "$repo" && grep -rnE --include='*.cpp' --include='*.hpp' "$statement" engine jobs \
          | grep -vE '^(engine/src/db/|jobs/examples/)' || true)
if [ -n "$found" ]; then
  echo "check-sql-seam.sh: SQL outside sql/ and engine/src/db/ (move it into the db layer):" >&2
  echo "$found" >&2
  exit 1
fi
echo "check-sql-seam.sh: SQL only in sql/ and engine/src/db/"
