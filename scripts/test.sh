#!/usr/bin/env bash
# Sets up (packages, build), starts a private PostgreSQL cluster in a temporary directory (never the
# developer's .prescient/), runs every test with CTest, stops the cluster whatever happened, and exits
# with the tests' status. At the end it prints how long each phase and each kind of test took.
#   scripts/test.sh [--quick] [--soak] [--sanitize] [--no-package]
#     --quick       the loop to run many times a day: build what changed, then only the tests labelled
#                   unit, architecture, db and cli (no browser, no daemons under faults, no fuzzing, no
#                   packages). The same as `ctest -L '^(unit|architecture|db|cli)$'` on a running cluster.
#     --soak        the fault tests (tests/reliability) at full size: 50 000 checks, 25 runner kills, ...
#     --sanitize    build everything under ASan + UBSan (in build-sanitize/) and run the suite there
#     --no-package  skip the Debian packages' test (their build takes its objects from the compiler
#                   cache this build filled; then install, run, remove, purge and upgrade)
# Then scripts/fuzz.sh fuzzes the parsers ($PRESCIENT_FUZZ_RUNS runs per target, default 20000), and,
# as root, scripts/package.sh --test builds the Debian packages, runs lintian, and installs, runs,
# removes, purges and upgrades them on this machine.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
package_test=yes
quick=no
for arg in "$@"; do
  case "$arg" in
    --quick) quick=yes ;;
    --no-package) package_test=no ;;
    --soak) export PRESCIENT_SOAK=1 ;;
    --sanitize)
      export PRESCIENT_SANITIZE=ON PRESCIENT_BUILD_DIR=$repo/build-sanitize
      # Any finding fails the test that triggered it (child processes included).
      export ASAN_OPTIONS=abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ;;
    *) echo "usage: scripts/test.sh [--quick] [--soak] [--sanitize] [--no-package]" >&2; exit 2 ;;
  esac
done

# The time of each phase, printed at the end (and the time per label, from CTest).
phases=""
phase_started=$(date +%s)
phase_done() {  # phase_done NAME
  local now
  now=$(date +%s)
  phases+=$(printf '  %-28s %4d s' "$1" $((now - phase_started)))$'\n'
  phase_started=$now
}
build_dir=${PRESCIENT_BUILD_DIR:-$repo/build}

"$repo/scripts/setup.sh"
phase_done "setup and build"
# A test reads the server's messages in German (decisions go by SQLSTATE, never by message text): the
# locale must exist before the cluster starts.
# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_locale test.sh de_DE.UTF-8
# The dashboard's tests drive a real browser: Debian's headless Chromium. The http class's tests run the
# receivers of docs/http.md as written, in Python and in Node.
ensure_packages test.sh chromium fonts-liberation python3 nodejs pgbouncer
# The worker clients (jobs/workers): Debian's psycopg 3 (for Debian's own python3), Go with pgx v4 (a
# GOPATH build), JDK 17 with the PostgreSQL JDBC driver; Node's pg comes from npm, pinned in its lock file.
ensure_packages test.sh python3-psycopg golang-go golang-github-jackc-pgx-v4-dev openjdk-17-jdk-headless \
  libpostgresql-jdbc-java
# Debian's nodejs has no npm (Debian's npm package brings it); a Node.js from elsewhere (NodeSource) does.
command -v npm >/dev/null || ensure_packages test.sh npm
# The Python client: its README installs it offline into a virtual environment, built by Debian's hatchling;
# it takes psycopg2 connections too (Django's and SQLAlchemy's driver), and Django's own; mypy --strict checks it;
# pytest runs its tests.
ensure_packages test.sh python3-venv python3-hatchling python3-psycopg2 python3-django mypy python3-pytest

# The tests that build (the bench, the public headers alone) through the compiler cache the build used.
# shellcheck source=lib/compiler_cache.sh
. "$repo/scripts/lib/compiler_cache.sh"
use_compiler_cache "$repo"

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-test.XXXXXX)/pg
export PRESCIENT_PGDATA
cleanup() {
  "$repo/scripts/pg.sh" stop || true
  rm -rf "$(dirname "$PRESCIENT_PGDATA")"
}
trap cleanup EXIT

# Not durable (fsync off): the tests kill processes, never the machine. Only this cluster: the variable is
# not exported, so the private clusters the reliability tests crash and replicate stay durable.
PRESCIENT_TEST_DATABASE_URL=$(PRESCIENT_PG_DURABLE=no "$repo/scripts/pg.sh" start)
export PRESCIENT_TEST_DATABASE_URL
echo "test.sh: tests use $PRESCIENT_TEST_DATABASE_URL"

labels=()
[ "$quick" = yes ] && labels=(-L '^(unit|architecture|db|cli)$')
# --no-tests=error: a run that finds no test is a failure, not a pass. Four at a time on two cores: most
# cases wait (for a slot boundary, a lease, a daemon) far longer than they compute; the ones that load the
# machine hold resource locks (tests/CMakeLists.txt). The tests' status is kept until the timings are printed.
ctest_log=$(dirname "$PRESCIENT_PGDATA")/ctest.log
status=0
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j 4 "${labels[@]}" | tee "$ctest_log" ||
  status=$?
phase_done "ctest"

# The worker clients' tests as their own runners (pytest, go test, Maven Surefire, node --test) reported them,
# from CTest's full log: each verdict in its runner's words, beside CTest's pass or fail.
if [ -f "$build_dir/Testing/Temporary/LastTest.log" ]; then
  echo "test.sh: the worker clients' tests, as their own runners reported them"
  awk '
    /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
    name ~ /^workers_(python|go|java|node)/ &&
      (/ (passed|failed|error)[^=]* in [0-9.]+s/ || /^(ok|FAIL)[ \t]+[^0-9 \t]/ || /^(PASS|FAIL)$/ ||
       /Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$/ || /^# (pass|fail) /) {
      line = $0; gsub(/=+/, "", line); gsub(/^[ \t]+|[ \t]+$/, "", line); sub(/^\[[A-Z]+\] /, "", line)
      print "  " name ": " line
    }' "$build_dir/Testing/Temporary/LastTest.log"
fi

if [ "$quick" = no ] && [ "$status" = 0 ]; then
  # The parsers of outside input under libFuzzer (clang, ASan + UBSan), a fixed number of runs each.
  "$repo/scripts/fuzz.sh" --runs "${PRESCIENT_FUZZ_RUNS:-20000}" || status=$?
  phase_done "fuzzing"

  # The Debian packages as an operator meets them. It installs and purges real packages and adds the user
  # prescient, so it runs as root only (CI; a throwaway machine); the packages go to a temporary directory.
  if [ "$status" != 0 ]; then
    :
  elif [ "$package_test" = no ]; then
    echo "test.sh: the package test was skipped (--no-package)"
  elif [ "$(id -u)" != 0 ]; then
    echo "test.sh: the package test was skipped: it needs root (scripts/package.sh --test)"
  else
    "$repo/scripts/package.sh" --test --out "$(dirname "$PRESCIENT_PGDATA")/packages" || status=$?
    phase_done "packages"
  fi
fi

echo "test.sh: time per phase"
printf '%s' "$phases"
echo "test.sh: time per label (the sum of its tests' times, run 4 at a time)"
sed -n '/^Label Time Summary:/,/^$/p' "$ctest_log" | tail -n +2
exit "$status"
