# prescient_catch_tests(TARGET LABEL label [TIMEOUT s] [COST c] [LOCK lock] [TAG_LOCKS tag lock ...]
#                       [TAG_FIXTURES tag fixtures ...])
# Each test case of a Catch2 executable becomes a CTest test of its own, named "LABEL: case name" and
# labelled LABEL, so `ctest -j` spreads the cases over the cores, `ctest -L db` runs one kind and a
# failure names its case. The cases are listed after every build of the executable (as Catch2's own
# catch_discover_tests does), by DiscoverCatchTestCases.cmake, which unlike Catch2's keeps a name with a
# ';' whole and escapes every character Catch's test spec reads (\ , [ ] ").
#   TIMEOUT    seconds a case may take before CTest stops it
#   COST       CTest's weight on a first run, before it has timings of its own (costlier cases start first)
#   LOCK       every case takes RESOURCE_LOCK lock: never two cases holding it at once
#   TAG_LOCKS  pairs: the cases tagged [tag] take RESOURCE_LOCK lock ("a+b": both); a source file's cases
#              are tagged #file ([#fault_test] for fault_test.cpp), so a tag may name a file
#   TAG_FIXTURES pairs: the cases tagged [tag] require CTest's FIXTURES_REQUIRED fixtures ("a+b": both), so
#              CTest runs those fixtures' setup tests first, even under ctest -R
function(prescient_catch_tests target)
  cmake_parse_arguments(arg "" "LABEL;TIMEOUT;COST;LOCK" "TAG_LOCKS;TAG_FIXTURES" ${ARGN})
  if(NOT arg_LABEL)
    message(FATAL_ERROR "prescient_catch_tests(${target}): LABEL is required")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  if(NOT arg_COST)
    set(arg_COST 1)
  endif()
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS "${tests_file}"
    COMMAND "${CMAKE_COMMAND}"
            -D "EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "LABEL=${arg_LABEL}"
            -D "TIMEOUT=${arg_TIMEOUT}"
            -D "COST=${arg_COST}"
            -D "LOCK=${arg_LOCK}"
            -D "TAG_LOCKS=${arg_TAG_LOCKS}"
            -D "TAG_FIXTURES=${arg_TAG_FIXTURES}"
            -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -D "OUTPUT=${tests_file}"
            -P "${PROJECT_SOURCE_DIR}/cmake/DiscoverCatchTestCases.cmake"
    VERBATIM)
  # CTest reads the list when it runs; before the first build there is none, and a test says so.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${tests_file}\")\n"
    "  include(\"${tests_file}\")\n"
    "else()\n"
    "  add_test(\"${arg_LABEL}: ${target} is not built\" false)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
