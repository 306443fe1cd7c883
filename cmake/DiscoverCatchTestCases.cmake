# Run by prescient_catch_tests (CatchTestCases.cmake) after a build: lists the test cases of EXECUTABLE
# and writes OUTPUT, a CTest script with one test per case. -D inputs: EXECUTABLE, LABEL, TIMEOUT, COST,
# LOCK (every case's), TAG_LOCKS (pairs: tag, lock), TAG_FIXTURES (pairs: tag, fixtures), WORKING_DIRECTORY,
# OUTPUT.
cmake_minimum_required(VERSION 3.25)

# The names of the cases matching SPEC (empty: all), one list element each; each case is tagged with its
# source file's name too ([#fault_test]). A name may hold ';', a list
# separator to CMake: it travels as a placeholder until it is written out.
function(case_names spec out)
  execute_process(COMMAND "${EXECUTABLE}" --filenames-as-tags ${spec} --list-test-names-only
    OUTPUT_VARIABLE listed RESULT_VARIABLE result ERROR_VARIABLE errors)
  if(result LESS 0 OR NOT result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${EXECUTABLE} --list-test-names-only failed (${result}): ${errors}")
  endif()
  string(REPLACE ";" "<semicolon>" listed "${listed}")
  string(REPLACE "\n" ";" listed "${listed}")
  list(FILTER listed EXCLUDE REGEX "^$")
  set(${out} "${listed}" PARENT_SCOPE)
endfunction()

case_names("" names)
list(LENGTH names count)
if(count EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} has no test cases")
endif()

# Which lock each case takes: the lock of the first of its tags that TAG_LOCKS names ("a+b" names two).
set(locked_names "")
set(tag_locks ${TAG_LOCKS})
while(tag_locks)
  list(POP_FRONT tag_locks tag lock)
  case_names("[${tag}]" tagged)
  foreach(name IN LISTS tagged)
    string(MD5 key "${name}")
    if(NOT DEFINED lock_of_${key})
      set(lock_of_${key} "${lock}")
    endif()
  endforeach()
endwhile()

# Which fixtures each case requires: those of every one of its tags that TAG_FIXTURES names.
set(tag_fixtures ${TAG_FIXTURES})
while(tag_fixtures)
  list(POP_FRONT tag_fixtures tag fixtures)
  case_names("[${tag}]" tagged)
  string(REPLACE "+" ";" fixtures "${fixtures}")
  foreach(name IN LISTS tagged)
    string(MD5 key "${name}")
    list(APPEND fixtures_of_${key} ${fixtures})
  endforeach()
endwhile()

set(script "")
foreach(name IN LISTS names)
  string(MD5 key "${name}")
  string(REPLACE "<semicolon>" ";" name "${name}")
  # As Catch's test spec reads a name: a backslash escapes; ',' separates names; [ ] enclose a tag;
  # '"' quotes. A leading '-' is escaped too, or the command line would take the name for an option.
  set(spec "${name}")
  foreach(char "\\" "," "[" "]" "\"")
    string(REPLACE "${char}" "\\${char}" spec "${spec}")
  endforeach()
  if(spec MATCHES "^-")
    string(PREPEND spec "\\")
  endif()
  set(test "${LABEL}: ${name}")
  # --warn NoTests: a name that matched no case fails instead of passing on nothing.
  string(APPEND script "add_test([==[${test}]==] [==[${EXECUTABLE}]==] [==[${spec}]==] --warn NoTests)\n")
  set(properties "LABELS ${LABEL} TIMEOUT ${TIMEOUT} COST ${COST} WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]")
  set(locks ${LOCK})
  if(DEFINED lock_of_${key})
    string(REPLACE "+" ";" tag_lock "${lock_of_${key}}")  # "a+b": both locks
    list(APPEND locks ${tag_lock})
  endif()
  if(locks)
    string(APPEND properties " RESOURCE_LOCK \"${locks}\"")
  endif()
  if(DEFINED fixtures_of_${key})
    string(APPEND properties " FIXTURES_REQUIRED \"${fixtures_of_${key}}\"")
  endif()
  string(APPEND script "set_tests_properties([==[${test}]==] PROPERTIES ${properties})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
