#!/usr/bin/env bash
# Builds the Go client into $PRESCIENT_WORKERS_BUILD_DIR/go, never into the source tree: a GOPATH (GOPATH mode,
# GO111MODULE=off: Debian's golang-go and pgx v4 under /usr/share/gocode; no module proxy needed) whose
# module directory is a link to this folder, then vet (the package prescient, prescienttest, the driver), the
# conformance driver and the test binary:
#   bin/conformance-driver, bin/prescient.test (run it with PRESCIENT_DATABASE_URL set, through with-database.sh)
set -euo pipefail
: "${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}"
here=$(cd "$(dirname "$0")" && pwd)
out=$PRESCIENT_WORKERS_BUILD_DIR/go
pkg=github.com/prescient-dev/prescient/jobs/workers/go
mkdir -p "$out/gopath/src/${pkg%/*}" "$out/bin"
ln -sfn "$here" "$out/gopath/src/$pkg"
export GO111MODULE=off GOFLAGS= GOPATH="$out/gopath:/usr/share/gocode" GOCACHE="${GOCACHE:-$out/cache}"
go vet "$pkg/prescient" "$pkg/prescienttest" "$pkg/cmd/conformance-driver"
go build -o "$out/bin/conformance-driver" "$pkg/cmd/conformance-driver"
go test -c -o "$out/bin/prescient.test" "$pkg/prescient"
echo "build.sh: built $out/bin/conformance-driver and $out/bin/prescient.test"
