#!/usr/bin/env bash
# Sets up (packages, build), starts a private PostgreSQL cluster in a temporary directory (never the
# developer's .prescient/), runs every test with CTest, stops the cluster whatever happened, and exits
# with the tests' status.
#   scripts/test.sh [--soak]
#     --soak   the fault tests (tests/reliability) at full size: 50 000 checks, 25 runner kills, ...
set -euo pipefail

case "${1:-}" in
  '') ;;
  --soak) export PRESCIENT_SOAK=1 ;;
  *) echo "usage: scripts/test.sh [--soak]" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PRESCIENT_BUILD_DIR:-$repo/build}

"$repo/scripts/setup.sh"

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-test.XXXXXX)/pg
export PRESCIENT_PGDATA
cleanup() {
  "$repo/scripts/pg.sh" stop || true
  rm -rf "$(dirname "$PRESCIENT_PGDATA")"
}
trap cleanup EXIT

PRESCIENT_TEST_DATABASE_URL=$("$repo/scripts/pg.sh" start)
export PRESCIENT_TEST_DATABASE_URL
echo "test.sh: tests use $PRESCIENT_TEST_DATABASE_URL"

# --no-tests=error: a run that finds no test is a failure, not a pass.
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j 2
