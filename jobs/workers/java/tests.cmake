# The Java client (jobs/workers/java/README.md), included by jobs/workers/CMakeLists.txt. build.sh compiles it
# with javac into ${PROJECT_BINARY_DIR}/workers/java (a fixture); tests.sh runs its tests (a plain main, since
# Debian packages no JUnit here), the seed scenario and the conformance driver's among them, on a fresh
# database. These are the commands that were run by hand, with /work/bin/prescient for the binary.
# The CLI's target is prescient_cli (OUTPUT_NAME prescient); the target `prescient` is the shared library.
set(prescient_java_dir "${CMAKE_CURRENT_LIST_DIR}")
set(prescient_java_env "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")

add_test(NAME workers_java_build COMMAND "${prescient_java_dir}/build.sh")
set_tests_properties(workers_java_build PROPERTIES
  LABELS workers TIMEOUT 180 FIXTURES_SETUP workers_java ENVIRONMENT "${prescient_java_env}")

add_test(NAME workers_java
         COMMAND "${PRESCIENT_WITH_DATABASE}" "$<TARGET_FILE:prescient_cli>" --slot 1s -- "${prescient_java_dir}/tests.sh")
set_tests_properties(workers_java PROPERTIES
  LABELS workers TIMEOUT 180 FIXTURES_REQUIRED workers_java ENVIRONMENT "${prescient_java_env}")
