#!/usr/bin/env bash
# Follows README.md as a new team would, with no prescient binary in the service's way: the README's marked
# blocks (the line `<!-- readme-test: NAME -->` before a fenced block) run as written, from a HOME of their
# own under $PRESCIENT_WORKERS_BUILD_DIR/go/readme: the packages, the GOPATH link (from the repository's
# root), then main.go built in a folder of its own, and the seed scenario's code with its pinned-clock test in
# another (with a TestMain of this script's: the schema by prescient.Migrate, the class, the README's tables).
# Then the service against the engine's migrate, each way round (../readme-first-service.sh), and the seed
# scenario's test, run by go test on an empty database of the cluster named by PRESCIENT_TEST_DATABASE_URL
# (with-database.sh).
#   readme-check.sh PRESCIENT_BINARY
# Go's build cache is the one build.sh uses (a cold one only costs time).
set -euo pipefail
# shellcheck source=../readme-lib.sh
. "$(dirname "$0")/../readme-lib.sh"
work=${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/go/readme
export GOCACHE=${GOCACHE:-$PRESCIENT_WORKERS_BUILD_DIR/go/cache}

case ${2:-} in
  --seed-test)
    psql -X -q -v ON_ERROR_STOP=1 -d "$PRESCIENT_DATABASE_URL" -c "$(readme_block seed-tables)"
    (cd "$work/seed" && DATABASE_URL=$PRESCIENT_DATABASE_URL GO111MODULE=off GOPATH=$HOME/go:/usr/share/gocode \
      go test -count=1 -v .)
    say "the seed scenario's pinned-clock test passed"
    exit 0 ;;
  "") ;;
  *) fail "unknown step '$2'" ;;
esac

readme_packages packages

rm -rf "$work"
mkdir -p "$work/home" "$work/orders"
export HOME=$work/home
say "the README's GOPATH link, from the repository"
(cd "$repository" && bash -euo pipefail -c "$(readme_block gopath)")
readme_block main.go >"$work/orders/main.go"
[ -z "$(gofmt -l "$work/orders")" ] || fail "README.md's main.go is not gofmt's: $(gofmt -d "$work/orders")"
say "the README's build, in the service's folder"
build_and_run=$(readme_block build-and-run)
(cd "$work/orders" && bash -euo pipefail -c "$(sed '$d' <<<"$build_and_run")")
(cd "$work/orders" && GO111MODULE=off GOPATH=$HOME/go:/usr/share/gocode go vet .)
run_line=$(tail -n 1 <<<"$build_and_run")

say "the README's seed scenario and its pinned-clock test, in a folder of their own"
client=$(readme_block main.go | grep -o '"github.com/[^"]*/prescient"')  # the import path, quoted
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

$(readme_block seed)
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

$(readme_block seed-test)
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
"$repository/jobs/workers/readme-first-service.sh" "$prescient" "$work/orders" "$run_line"
"$with_database" "$prescient" --empty -- "$client_dir/readme-check.sh" "$prescient" --seed-test
