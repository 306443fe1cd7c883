#!/usr/bin/env bash
# README.md's five-minute tour runs as written: its first shell block, on a database of its own on the
# tests' server (in place of `scripts/pg.sh start`, and without `scripts/pg.sh stop`), with the built CLI,
# from a folder of its own. Every command must succeed, and the first schedule prints what the README
# says it prints.
#   tests/docs/readme_tour_test.sh REPO BUILD_DIR
set -euo pipefail
repo=${1:?usage: readme_tour_test.sh REPO BUILD_DIR}
build=${2:?usage: readme_tour_test.sh REPO BUILD_DIR}
fail() { echo "readme_tour_test.sh: FAILED: $*" >&2; exit 1; }
server=${PRESCIENT_TEST_DATABASE_URL:?readme_tour_test.sh: run it through ctest from scripts/test.sh, which starts PostgreSQL}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
work=$(mktemp -d)
name=prescient_readme_tour_$$
trap '"$pg_bin/psql" -q -X "$server" -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1; rm -rf "$work"' EXIT
"$pg_bin/psql" -q -X -v ON_ERROR_STOP=1 "$server" -c "CREATE DATABASE $name"
db="${server%%\?*}"
db="${db%/*}/$name"

tour=$(awk '/^## A five-minute tour/ { inside = 1 } inside && /^```sh/ { block = 1; next }
            block && /^```/ { exit } block' "$repo/README.md")
grep -qF 'P=build/engine/prescient' <<<"$tour" || fail "README.md's tour does not set P=build/engine/prescient"
grep -qF 'export PRESCIENT_DATABASE_URL=$(scripts/pg.sh start)' <<<"$tour" ||
  fail "README.md's tour does not start with scripts/pg.sh start"
tour=$(sed -e 's|^export PRESCIENT_DATABASE_URL=$(scripts/pg.sh start)$|export PRESCIENT_DATABASE_URL="$TOUR_DB"|' \
           -e 's|^P=build/engine/prescient$|P="$TOUR_BUILD/engine/prescient"|' \
           -e 's| build/plugins| "$TOUR_BUILD/plugins"|' -e '/^scripts\/pg.sh stop$/d' <<<"$tour")
out=$(cd "$work" && TOUR_DB=$db TOUR_BUILD=$build bash -euo pipefail -c "$tour" 2>&1) ||
  fail "the tour stopped (it said: $out)"
grep -qE '^created id=1 job_key=order:42 next_check_at=' <<<"$out" ||
  fail "the first schedule did not print what the README says (it said: $out)"
echo "readme_tour_test.sh: README.md's tour ran as written"
