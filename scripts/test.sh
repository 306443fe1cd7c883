#!/usr/bin/env bash
# Sets up (packages, build), starts a private PostgreSQL cluster in a temporary directory (never the
# developer's .prescient/), runs every test with CTest, stops the cluster whatever happened, and exits
# with the tests' status.
#   scripts/test.sh [--soak] [--sanitize] [--no-package]
#     --soak        the fault tests (tests/reliability) at full size: 50 000 checks, 25 runner kills, ...
#     --sanitize    build everything under ASan + UBSan (in build-sanitize/) and run the suite there
#     --no-package  skip the Debian packages' test (about 7 minutes on 2 cores: two package builds, the
#                   second mostly from the compiler cache)
# Then scripts/fuzz.sh fuzzes the parsers ($PRESCIENT_FUZZ_RUNS runs per target, default 20000), and,
# as root, scripts/package.sh --test builds the Debian packages, runs lintian, and installs, runs,
# removes, purges and upgrades them on this machine.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
package_test=yes
for arg in "$@"; do
  case "$arg" in
    --no-package) package_test=no ;;
    --soak) export PRESCIENT_SOAK=1 ;;
    --sanitize)
      export PRESCIENT_SANITIZE=ON PRESCIENT_BUILD_DIR=$repo/build-sanitize
      # Any finding fails the test that triggered it (child processes included).
      export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ;;
    *) echo "usage: scripts/test.sh [--soak] [--sanitize] [--no-package]" >&2; exit 2 ;;
  esac
done

build_dir=${PRESCIENT_BUILD_DIR:-$repo/build}

"$repo/scripts/setup.sh"
# A test reads the server's messages in German (decisions go by SQLSTATE, never by message text): the
# locale must exist before the cluster starts.
# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_locale test.sh de_DE.UTF-8
# The dashboard's tests drive a real browser: Debian's headless Chromium. The http class's tests run the
# receivers of docs/http.md as written, in Python and in Node.
ensure_packages test.sh chromium fonts-liberation python3 nodejs pgbouncer

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

# The parsers of outside input under libFuzzer (clang, ASan + UBSan), a fixed number of runs each.
"$repo/scripts/fuzz.sh" --runs "${PRESCIENT_FUZZ_RUNS:-20000}"

# The Debian packages as an operator meets them. It installs and purges real packages and adds the user
# prescient, so it runs as root only (CI; a throwaway machine); the packages go to a temporary directory.
if [ "$package_test" = no ]; then
  echo "test.sh: the package test was skipped (--no-package)"
elif [ "$(id -u)" != 0 ]; then
  echo "test.sh: the package test was skipped: it needs root (scripts/package.sh --test)"
else
  "$repo/scripts/package.sh" --test --out "$(dirname "$PRESCIENT_PGDATA")/packages"
fi
