#!/usr/bin/env bash
# Runs the Java client's tests (dev.prescient.ClientTests, a plain main: JUnit is not packaged in Debian)
# against PRESCIENT_DATABASE_URL, from the jars build.sh made in $PRESCIENT_WORKERS_BUILD_DIR/java.
#   with-database.sh PRESCIENT_BINARY --slot 1s -- jobs/workers/java/tests.sh [TEST_NAME]...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set (where jobs/workers/java/build.sh built)}"
build=$PRESCIENT_WORKERS_BUILD_DIR/java
[[ -f $build/prescient-worker-tests.jar ]] || { echo "tests.sh: $build has no build: run $here/build.sh" >&2; exit 2; }
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dprescient.java.dir="$here" \
  '-Djava.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %5$s%6$s%n' \
  -cp "$build/prescient-worker.jar:$build/prescient-worker-tests.jar:${PRESCIENT_JDBC_JAR:-/usr/share/java/postgresql.jar}" \
  dev.prescient.ClientTests "$@"
