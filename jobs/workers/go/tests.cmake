# The Go client (jobs/workers/go/README.md). build.sh builds it in GOPATH mode with Debian's golang-go and pgx v4
# (/usr/share/gocode) into ${PROJECT_BINARY_DIR}/workers/go: vet, the conformance driver and the test binary.
# The test binary then runs against a fresh migrated database (with-database.sh), slot resolution 1 s.
add_test(NAME workers_go_build COMMAND "${CMAKE_CURRENT_LIST_DIR}/build.sh")
set_tests_properties(workers_go_build PROPERTIES
  LABELS workers
  FIXTURES_SETUP workers_go
  TIMEOUT 300
  ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")

add_test(NAME workers_go
  COMMAND "${PRESCIENT_WITH_DATABASE}" "$<TARGET_FILE:prescient_cli>" --slot 1s --
          "${PROJECT_BINARY_DIR}/workers/go/bin/prescient.test" -test.v -test.timeout 150s)
set_tests_properties(workers_go PROPERTIES
  LABELS workers
  FIXTURES_REQUIRED workers_go
  TIMEOUT 180
  ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")

# The README followed as a new team would (readme-check.sh): its marked blocks as written, a service that creates
# the schema without the binary and runs its first check, then `prescient migrate` after it and before it; the
# seed scenario's pinned-clock test, run by go test.
# After the build only to share its warm Go cache.
add_test(NAME workers_go_readme COMMAND "${CMAKE_CURRENT_LIST_DIR}/readme-check.sh" "$<TARGET_FILE:prescient_cli>")
set_tests_properties(workers_go_readme PROPERTIES
  LABELS workers
  FIXTURES_REQUIRED workers_go
  TIMEOUT 180
  ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")
