# The Node client's tests (included by jobs/workers/CMakeLists.txt). workers_node_build installs pg, @types/pg and
# TypeScript from package-lock.json into ${PROJECT_BINARY_DIR}/workers/node (npm ci: the registry must be
# reachable unless that directory is up to date); the tests find them through NODE_PATH. Each test file runs in a
# fresh migrated database of its own (with-database.sh) and declares the worker classes it uses.
set(PRESCIENT_NODE_CLIENT_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(PRESCIENT_NODE_BUILD_DIR "${PROJECT_BINARY_DIR}/workers/node")

add_test(NAME workers_node_build
         COMMAND "${PRESCIENT_NODE_CLIENT_DIR}/build.sh" "${PRESCIENT_NODE_BUILD_DIR}")
set_tests_properties(workers_node_build PROPERTIES
  LABELS workers
  FIXTURES_SETUP workers_node
  TIMEOUT 300
  ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")

# seed: the seed scenario, pinned clock; enqueue: in the caller's transaction; worker: the loop on the real
# clock (about 14 s); intx: settling in the handler's transaction; killtest: exactly once with a worker killed
# mid-run (about 20 s); driver: the conformance driver as a process; migrate: the schema from the bundle;
# classes: a worker class and its policy declared from the worker role, and retry of a dead letter; log: the
# logger's events and fields; install: the package installed into an application of its own (npm pack, or a
# file: dependency with install-links), about 25 s.
foreach(part seed enqueue classes log worker intx killtest driver migrate install)
  add_test(NAME workers_node_${part}
           COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --
                   node --test "${PRESCIENT_NODE_CLIENT_DIR}/test/${part}.test.js")
  set_tests_properties(workers_node_${part} PROPERTIES
    LABELS workers
    FIXTURES_REQUIRED workers_node
    TIMEOUT 60
    ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers;NODE_PATH=${PRESCIENT_NODE_BUILD_DIR}/node_modules")
endforeach()
# The kill test runs 10 000 checks through two worker processes (about 20 s; more on a loaded machine).
set_tests_properties(workers_node_install PROPERTIES TIMEOUT 120)
set_tests_properties(workers_node_killtest PROPERTIES TIMEOUT 240)  # a hang guard: the test fails on a stall

# types: index.d.ts and a typed service (test/types/orders.ts) under tsc --noEmit --strict, with @types/pg and the
# TypeScript package-lock.json pins (both installed by workers_node_build); no database.
add_test(NAME workers_node_types
         COMMAND node --test "${PRESCIENT_NODE_CLIENT_DIR}/test/types.test.js")
set_tests_properties(workers_node_types PROPERTIES
  LABELS workers
  FIXTURES_REQUIRED workers_node
  TIMEOUT 60
  ENVIRONMENT "NODE_PATH=${PRESCIENT_NODE_BUILD_DIR}/node_modules")

# The README followed as a new team would (readme-check.sh): its install as written in an application's folder
# outside the checkout (npm pack, npm install of the tarball), its service.js creating the schema without the
# binary and running its first check, then `prescient migrate` after it and before it. After the build only to
# share its npm cache.
add_test(NAME workers_node_readme COMMAND "${PRESCIENT_NODE_CLIENT_DIR}/readme-check.sh" $<TARGET_FILE:prescient_cli>)
set_tests_properties(workers_node_readme PROPERTIES
  LABELS workers
  FIXTURES_REQUIRED workers_node
  TIMEOUT 120
  ENVIRONMENT "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers")
