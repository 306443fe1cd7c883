# The Python client (jobs/workers/python, README.md there): no build step, the package runs from src/.
# Each test module runs under pytest (Debian's; the tests are unittest cases) in a fresh migrated database of
# its own (with-database.sh); bytecode goes under the build tree, never into the sources, and pytest keeps no
# cache there (pyproject.toml). The README's test (tests/test_readme.py) installs the package as the
# README says, into a virtual environment under the build tree, and runs the README's first run against an empty
# database and the binary's.
set(PRESCIENT_PYTHON "/usr/bin/python3" CACHE FILEPATH "The Python with psycopg 3 that runs the Python worker client")
set(PRESCIENT_PYTHON_CLIENT_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(PRESCIENT_PYTHON_ENVIRONMENT
    "PRESCIENT_WORKERS_BUILD_DIR=${PROJECT_BINARY_DIR}/workers"
    "PRESCIENT_PYTHON=${PRESCIENT_PYTHON}"
    "PYTHONPATH=${PRESCIENT_PYTHON_CLIENT_DIR}/src"
    "PYTHONPYCACHEPREFIX=${PROJECT_BINARY_DIR}/workers/python/pycache")

foreach(module enqueue worker seed_scenario conformance_driver exactly_once schema dead_letters psycopg2 types aio)
  add_test(NAME workers_python_${module}
           COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --
                   "${PRESCIENT_PYTHON}" -m pytest -v tests/test_${module}.py
           WORKING_DIRECTORY "${PRESCIENT_PYTHON_CLIENT_DIR}")
  set_tests_properties(workers_python_${module} PROPERTIES
                       LABELS workers TIMEOUT 90 ENVIRONMENT "${PRESCIENT_PYTHON_ENVIRONMENT}")
endforeach()
# The kill test runs twice (the blocking worker, the asyncio one): about 20 s each alone, up to twice that beside
# other tests; the timeout is a guard against a hang (the test itself fails a run that stops making progress).
set_tests_properties(workers_python_exactly_once PROPERTIES TIMEOUT 240)

add_test(NAME workers_python_readme
         COMMAND "${PRESCIENT_WITH_DATABASE}" $<TARGET_FILE:prescient_cli> --slot 1s --
                 "${PRESCIENT_PYTHON}" -m pytest -v tests/test_readme.py
         WORKING_DIRECTORY "${PRESCIENT_PYTHON_CLIENT_DIR}")
set_tests_properties(workers_python_readme PROPERTIES
                     LABELS workers TIMEOUT 180
                     ENVIRONMENT "${PRESCIENT_PYTHON_ENVIRONMENT};PRESCIENT_BINARY=$<TARGET_FILE:prescient_cli>")
