#!/usr/bin/env bash
# Follows README.md as a new team would, with no prescient binary in the service's way: the README's marked
# blocks (the line `<!-- readme-test: NAME -->` before a fenced block) run as written, from a HOME of their
# own under $PRESCIENT_WORKERS_BUILD_DIR/go/readme: the packages, the GOPATH link (from the repository's
# root), then main.go built in a folder of its own, and the seed scenario's code with its pinned-clock test in
# another (with a TestMain of this script's: the schema by prescient.Migrate, the class, the README's tables).
# Then, each on a fresh database of the cluster named by PRESCIENT_TEST_DATABASE_URL (with-database.sh):
#   client first: the service creates the schema, declares its class with its policy and runs its first check;
#     then `prescient migrate` upgrades the same database, and nothing of the first changes;
#   binary first: `prescient migrate` makes the schema; the service's migrate accepts it, changing none of its
#     bookkeeping, and runs its first check;
#   the seed scenario's test, run by go test on an empty database.
#   readme-check.sh PRESCIENT_BINARY
# The service runs until its check ran once, then gets SIGTERM and must exit 0. Go's build cache is the one
# build.sh uses (a cold one only costs time).
set -euo pipefail
prescient=$(realpath "${1:?usage: readme-check.sh PRESCIENT_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
repository=$(cd "$here/../../.." && pwd)
readme=$here/README.md
work=${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/go/readme
export GOCACHE=${GOCACHE:-$PRESCIENT_WORKERS_BUILD_DIR/go/cache}
say() { echo "readme-check.sh: $*"; }
fail() { echo "readme-check.sh: $*" >&2; exit 1; }

# block NAME: the text of the fenced block after the README's line `<!-- readme-test: NAME -->`.
block() {
  local text
  text=$(awk -v marker="<!-- readme-test: $1 -->" '
    $0 == marker { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }' "$readme")
  [ -n "$text" ] || fail "README.md has no block marked <!-- readme-test: $1 -->"
  printf '%s\n' "$text"
}

# sql QUERY: the query's rows on the test's database, unaligned.
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PRESCIENT_DATABASE_URL" -c "$1"; }

# bookkeeping: what either migrate records (the migrations and function files with their checksums, the slot).
bookkeeping() {
  sql "SELECT version, name, checksum FROM prescient.schema_migrations ORDER BY version"
  sql "SELECT name, checksum FROM prescient.schema_functions ORDER BY name"
  sql "SELECT slot_seconds FROM prescient.settings"
}

# first_check: the README's run line, the service, in the background until its check of order 42 ran once, then
# SIGTERM; it must stop cleanly. Then its class's policy, as main.go declares it.
first_check() {
  local run_line=$1 log=$2 pid ran="" status=0
  (cd "$work/orders" && export DATABASE_URL=$PRESCIENT_DATABASE_URL PRESCIENT_SLOT_SECONDS=1 &&
    eval "exec $run_line") >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    ran=$(sql "SELECT check_count FROM prescient.future_job WHERE job_key = 'order_unshipped:42'" 2>/dev/null || true)
    [ "$ran" = 1 ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "the service ended before its first check"; }
    sleep 0.1
  done
  [ "$ran" = 1 ] || { kill -TERM "$pid"; cat "$log" >&2; fail "the first check did not run within 30 s"; }
  kill -TERM "$pid"
  wait "$pid" || status=$?
  [ "$status" = 0 ] || { cat "$log" >&2; fail "the service did not stop cleanly on SIGTERM (exit $status)"; }
  grep -q "order 42 not shipped yet (check [0-9]*, run 1)" "$log" || { cat "$log" >&2; fail "the handler did not log"; }
  [ "$(sql "SELECT runs_in, max_checks, max_attempts, backoff_seconds FROM prescient.job_class
            WHERE job = 'order_unshipped'")" = "worker|30|3|60" ] || fail "the class's policy is not main.go's"
  [ "$(sql "SELECT next_check_at - first_check_at FROM prescient.future_job
            WHERE job_key = 'order_unshipped:42'")" = "1 day" ] || fail "the check does not look again tomorrow"
  say "the service ran its first check and stopped: $(grep -c . "$log") lines of log"
}

case ${2:-} in
  --client-first)
    [ "$(sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'prescient'")" = 0 ] || fail "not an empty database"
    first_check "$3" "$work/client-first.log"
    [ "$(sql "SELECT slot_seconds FROM prescient.settings")" = 1 ] || fail "the service did not make a 1 s slot"
    state="SELECT id, job, entity_key, next_check_at, check_count, attempts FROM prescient.future_job ORDER BY id"
    before=$(bookkeeping; sql "$state")
    "$prescient" migrate --log-level warn
    after=$(bookkeeping; sql "$state")
    [ "$before" = "$after" ] || fail "prescient migrate changed the service's database: $(diff <(echo "$before") <(echo "$after"))"
    say "client first, then prescient migrate: accepted, nothing changed"
    exit 0 ;;
  --binary-first)
    before=$(bookkeeping)
    first_check "$3" "$work/binary-first.log"
    [ "$before" = "$(bookkeeping)" ] || fail "the service's migrate changed the binary's bookkeeping"
    say "prescient migrate first, then the service: accepted, nothing changed"
    exit 0 ;;
  --seed-test)
    psql -X -q -v ON_ERROR_STOP=1 -d "$PRESCIENT_DATABASE_URL" -c "$(block seed-tables)"
    (cd "$work/seed" && DATABASE_URL=$PRESCIENT_DATABASE_URL GO111MODULE=off GOPATH=$HOME/go:/usr/share/gocode \
      go test -count=1 -v .)
    say "the seed scenario's pinned-clock test passed"
    exit 0 ;;
  "") ;;
  *) fail "unknown step '$2'" ;;
esac

# shellcheck source=../../../scripts/lib/packages.sh
. "$repository/scripts/lib/packages.sh"
packages=$(block packages | awk '{ for (i = 1; i <= NF; i++) if (seen && $i !~ /^-/) print $i; else if ($i == "install") seen = 1 }')
# shellcheck disable=SC2086 # one package a word
ensure_packages readme-check.sh $packages

rm -rf "$work"
mkdir -p "$work/home" "$work/orders"
export HOME=$work/home
say "the README's GOPATH link, from the repository"
(cd "$repository" && bash -euo pipefail -c "$(block gopath)")
block main.go >"$work/orders/main.go"
[ -z "$(gofmt -l "$work/orders")" ] || fail "README.md's main.go is not gofmt's: $(gofmt -d "$work/orders")"
say "the README's build, in the service's folder"
build_and_run=$(block build-and-run)
(cd "$work/orders" && bash -euo pipefail -c "$(sed '$d' <<<"$build_and_run")")
(cd "$work/orders" && GO111MODULE=off GOPATH=$HOME/go:/usr/share/gocode go vet .)
run_line=$(tail -n 1 <<<"$build_and_run")

say "the README's seed scenario and its pinned-clock test, in a folder of their own"
client=$(block main.go | grep -o '"github.com/[^"]*/prescient"')  # the import path, quoted
client_test=${client%\"}test\"                                    # prescienttest, beside it
mkdir -p "$work/seed"
cat >"$work/seed/seed.go" <<GO
package seed

import (
	"context"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	$client
)

$(block seed)
GO
cat >"$work/seed/seed_test.go" <<GO
package seed

import (
	"context"
	"testing"
	"time"

	$client
	$client_test
)

$(block seed-test)
GO
cat >"$work/seed/main_test.go" <<GO
package seed

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"

	$client
)

// pool is the test database as a team's tests make it, with no prescient binary: the schema, the class.
var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	if err := setUp(context.Background(), os.Getenv("DATABASE_URL")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	pool.Close()
	os.Exit(code)
}

func setUp(ctx context.Context, url string) (err error) {
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer owner.Close(ctx)
	if _, err := prescient.Migrate(ctx, owner, 1); err != nil {
		return err
	}
	if pool, err = pgxpool.Connect(ctx, url); err != nil {
		return err
	}
	_, err = prescient.DeclareWorkerClass(ctx, pool, "order_unshipped", prescient.Policy{})
	return err
}
GO
[ -z "$(gofmt -l "$work/seed")" ] || fail "README.md's seed scenario is not gofmt's: $(gofmt -d "$work/seed")"
(cd "$work/seed" && GO111MODULE=off GOPATH=$HOME/go:/usr/share/gocode go vet .)

with_database=$repository/jobs/workers/with-database.sh
"$with_database" "$prescient" --empty -- "$here/readme-check.sh" "$prescient" --client-first "$run_line"
"$with_database" "$prescient" --slot 1s -- "$here/readme-check.sh" "$prescient" --binary-first "$run_line"
"$with_database" "$prescient" --empty -- "$here/readme-check.sh" "$prescient" --seed-test
