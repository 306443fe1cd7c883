# The conformance suite every worker client must pass (README.md in this folder): run.py runs the scenarios of
# scenarios.json against a fresh database (with-database.sh, slot 1 s), starting each language's
# conformance-driver. One test per language (its scenarios, and 2+2 with itself), one with several languages
# at once, and one for the protocol (the answers compared with the C++ runner's class `conformance` from the
# test plugins, and bad input through SQL). They load the machine's two cores: one at a time (RESOURCE_LOCK).
# Together they are about 4 minutes run one after the other: the longest chain of the suite. A high COST starts
# them first (CTest starts costlier tests first, and has no timings of its own in a fresh clone), so the
# chain runs beside the other tests instead of after them (it was the last 3.5 minutes of a 7-minute ctest).
# The drivers run on the server's clock, as in production (--server-clock: workers may not pin it there), so a
# client that sends a time of its own where it should not is refused here, not only in production.
# The binary is the target prescient_cli (OUTPUT_NAME prescient; the target `prescient` is the library).
set(PRESCIENT_CONFORMANCE "${CMAKE_CURRENT_LIST_DIR}/run.py")
set(PRESCIENT_CONFORMANCE_ENV
    "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers"
    "PRESCIENT_TEST_PLUGINS=${PROJECT_BINARY_DIR}/tests/test_plugins")

foreach(language python go java node)
  add_test(NAME workers_conformance_${language}
           COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --server-clock --
                   /usr/bin/python3 "${PRESCIENT_CONFORMANCE}" --suite language --languages ${language})
  set_tests_properties(workers_conformance_${language} PROPERTIES
                       LABELS workers TIMEOUT 180 RESOURCE_LOCK workers COST 500
                       ENVIRONMENT "${PRESCIENT_CONFORMANCE_ENV}")
  if(NOT language STREQUAL "python")  # Python runs from the source tree: no build
    set_tests_properties(workers_conformance_${language} PROPERTIES FIXTURES_REQUIRED workers_${language})
  endif()
endforeach()

add_test(NAME workers_conformance_mixed
         COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --server-clock --
                 /usr/bin/python3 "${PRESCIENT_CONFORMANCE}" --suite mixed --languages python,go,java,node)
add_test(NAME workers_conformance_protocol
         COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --
                 /usr/bin/python3 "${PRESCIENT_CONFORMANCE}" --suite protocol --languages python,go,java,node
                 --prescient $<TARGET_FILE:prescient_cli> --plugins "${PROJECT_BINARY_DIR}/tests/test_plugins")
set_tests_properties(workers_conformance_mixed PROPERTIES TIMEOUT 240)
set_tests_properties(workers_conformance_protocol PROPERTIES TIMEOUT 150)
set_tests_properties(workers_conformance_mixed workers_conformance_protocol PROPERTIES
                     LABELS workers RESOURCE_LOCK workers COST 500
                     FIXTURES_REQUIRED "workers_go;workers_java;workers_node"
                     ENVIRONMENT "${PRESCIENT_CONFORMANCE_ENV}")
