#!/usr/bin/env bash
# Builds and tests the Java client with Maven, offline, on Debian's Maven repository (/usr/share/maven-repo),
# installing the Debian packages it needs first. The output goes to $PRESCIENT_WORKERS_BUILD_DIR/java/target
# when that is set (CTest's build tree), else to target/ here.
#   jobs/workers/java/build.sh                 # mvn package -DskipTests: classes, test classes, the jar
#   with-database.sh PRESCIENT_BINARY --slot 1s -- jobs/workers/java/build.sh test [-Dtest=Class[#method]]
# CTest's workers_java_build runs the first, workers_java the second; the conformance driver runs from the
# classes the first made.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../../scripts/lib/packages.sh
. "$here/../../../scripts/lib/packages.sh"
# Maven, its plugins at the versions pom.xml pins, JUnit 5, the JDBC driver and SLF4J: Debian 12's, in
# /usr/share/maven-repo.
ensure_packages build.sh openjdk-17-jdk-headless maven libmaven-compiler-plugin-java libmaven-resources-plugin-java \
  libmaven-jar-plugin-java libmaven-install-plugin-java libsurefire-java junit5 libpostgresql-jdbc-java \
  libslf4j-java

options=(-o -B -ntp -Dmaven.repo.local=/usr/share/maven-repo -f "$here/pom.xml")
if [[ -n ${PRESCIENT_WORKERS_BUILD_DIR:-} ]]; then
  options+=("-Dprescient.build.directory=$PRESCIENT_WORKERS_BUILD_DIR/java/target")
fi
(($# > 0)) || set -- package -DskipTests
exec mvn "${options[@]}" "$@"
