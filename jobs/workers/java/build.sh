#!/usr/bin/env bash
# Builds the Java client with javac (no Maven or Gradle needed) into $PRESCIENT_WORKERS_BUILD_DIR/java:
#   prescient-worker.jar        the client: dev.prescient (needs the PostgreSQL JDBC driver at run time)
#   prescient-worker-tests.jar  the tests, the seed scenario example and the conformance driver
# The JDBC driver is Debian's /usr/share/java/postgresql.jar (libpostgresql-jdbc-java), or $PRESCIENT_JDBC_JAR.
#   jobs/workers/java/build.sh          # CTest's workers_java_build runs exactly this
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set (the folder for the builds of jobs/workers)}"
out=$PRESCIENT_WORKERS_BUILD_DIR/java
jdbc=${PRESCIENT_JDBC_JAR:-/usr/share/java/postgresql.jar}
[[ -f $jdbc ]] || { echo "build.sh: no JDBC driver at $jdbc (apt-get install libpostgresql-jdbc-java)" >&2; exit 1; }

rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out/classes" "$out/test-classes"
javac_flags=(--release 17 -encoding UTF-8 -Xlint:all,-serial)
mapfile -t main_sources < <(find "$here/src/main/java" -name '*.java' | sort)
javac "${javac_flags[@]}" -Werror -cp "$jdbc" -d "$out/classes" "${main_sources[@]}"
cp -r "$here/src/main/resources/." "$out/classes/"  # the schema bundle (PrescientSchema)
jar --create --file "$out/prescient-worker.jar" -C "$out/classes" .

mapfile -t test_sources < <(find "$here/src/test/java" -name '*.java' | sort)
javac "${javac_flags[@]}" -Werror -cp "$jdbc:$out/prescient-worker.jar" -d "$out/test-classes" "${test_sources[@]}"
jar --create --file "$out/prescient-worker-tests.jar" -C "$out/test-classes" .
echo "build.sh: built $out/prescient-worker.jar and $out/prescient-worker-tests.jar"
