#!/usr/bin/env bash
# Writes sql/prescient-bundle.sql (the schema as one SQL file, `prescient migrate --print-bundle`) and the
# copies the worker clients ship beside their code; tests fail while any of them differs from the binary's.
#   scripts/schema-bundle.sh [PRESCIENT_BINARY]   (default build/engine/prescient)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prescient=${1:-$repo/build/engine/prescient}
[ -x "$prescient" ] || { echo "schema-bundle.sh: no binary at $prescient (run scripts/setup.sh)" >&2; exit 2; }
"$prescient" migrate --print-bundle > "$repo/sql/prescient-bundle.sql"
for copy in jobs/workers/go/prescient/prescient-bundle.sql jobs/workers/node/prescient-bundle.sql \
            jobs/workers/java/src/main/resources/dev/prescient/prescient-bundle.sql \
            jobs/workers/python/src/prescient/prescient-bundle.sql; do
  [ -d "$repo/$(dirname "$copy")" ] && cp "$repo/sql/prescient-bundle.sql" "$repo/$copy"
done
echo "schema-bundle.sh: wrote sql/prescient-bundle.sql and the clients' copies"
