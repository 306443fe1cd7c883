# The Java client (jobs/workers/java/README.md), included by jobs/workers/CMakeLists.txt. build.sh runs Maven
# offline on Debian's repository, into ${PROJECT_BINARY_DIR}/workers/java/target: workers_java_build compiles
# the client and its tests (a fixture: the conformance driver runs from those classes), workers_java runs the
# JUnit 5 tests (surefire) on a fresh database. The CLI's target is prescient_cli (OUTPUT_NAME prescient); the
# target `prescient` is the shared library.
set(prescient_java_dir "${CMAKE_CURRENT_LIST_DIR}")
set(prescient_java_env "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")

add_test(NAME workers_java_build COMMAND "${prescient_java_dir}/build.sh")
set_tests_properties(workers_java_build PROPERTIES
  LABELS workers TIMEOUT 300 FIXTURES_SETUP workers_java ENVIRONMENT "${prescient_java_env}")

add_test(NAME workers_java
         COMMAND "${PRESCIENT_WITH_DATABASE}" "$<TARGET_FILE:prescient_cli>" --slot 1s -- "${prescient_java_dir}/build.sh" test)
set_tests_properties(workers_java PROPERTIES
  LABELS workers TIMEOUT 300 FIXTURES_REQUIRED workers_java ENVIRONMENT "${prescient_java_env}")

# The README followed as a new team would (readme-check.sh): its marked blocks as written in a service's folder
# outside the checkout (the jar built there, Main.java), the service creating the schema without the binary and
# running its first check, then `prescient migrate` after it and before it. After the build, whose packages it
# needs too: two apt-gets at once on a fresh machine would fight over dpkg's lock.
add_test(NAME workers_java_readme COMMAND "${prescient_java_dir}/readme-check.sh" "$<TARGET_FILE:prescient_cli>")
set_tests_properties(workers_java_readme PROPERTIES
  LABELS workers TIMEOUT 180 FIXTURES_REQUIRED workers_java ENVIRONMENT "${prescient_java_env}")
