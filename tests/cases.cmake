# cases.cmake - registers every case of every cmocka test binary with
# ctest, as BINARY.CASE. ctest includes this file each time it starts
# (tests/CMakeLists.txt writes keel_cases.cmake, which sets the variables
# below and includes it), so the cases are whatever the built binaries
# list with --list: a case added to a binary, or a store added to
# test_conformance's table, is registered without touching CMake.
#
# Set by keel_cases.cmake:
#   KEEL_TEST_BINARIES  NAME=PATH of each test binary
#   KEEL_MYSQL_CASES    regex of the ctest names that need the MySQL fixture
#   KEEL_MYSQL_ENV      the environment those cases get
#   KEEL_MYSQL_LOCKED   regex of the cases that also take the resource lock
#                       mariadb_globals (see tests/CMakeLists.txt)
#   KEEL_PG_CASES       regex of the ctest names that need the PostgreSQL
#                       fixture
#   KEEL_PG_ENV         the environment those cases get

foreach(entry IN LISTS KEEL_TEST_BINARIES)
  string(REGEX REPLACE "=.*" "" name "${entry}")
  string(REGEX REPLACE "^[^=]*=" "" binary "${entry}")
  if(NOT EXISTS "${binary}")
    # Not built yet: one failing case says so rather than none at all.
    add_test(${name}.NOT_BUILT "${binary}")
    continue()
  endif()
  execute_process(COMMAND "${binary}" --list
    OUTPUT_VARIABLE listed ERROR_VARIABLE list_error RESULT_VARIABLE list_rc)
  if(NOT list_rc EQUAL 0)
    add_test(${name}.LIST_FAILED "${binary}" --list)
    continue()
  endif()
  string(REPLACE "\n" ";" cases "${listed}")
  foreach(case IN LISTS cases)
    if(case STREQUAL "")
      continue()
    endif()
    set(test ${name}.${case})
    add_test(${test} "${binary}" "${case}")
    set_tests_properties(${test} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
    if(KEEL_MYSQL_CASES AND test MATCHES "${KEEL_MYSQL_CASES}")
      set_tests_properties(${test} PROPERTIES FIXTURES_REQUIRED mysql_server
        ENVIRONMENT "${KEEL_MYSQL_ENV}")
      if(test MATCHES "${KEEL_MYSQL_LOCKED}")
        set_tests_properties(${test} PROPERTIES RESOURCE_LOCK mariadb_globals)
      endif()
    endif()
    if(KEEL_PG_CASES AND test MATCHES "${KEEL_PG_CASES}")
      set_tests_properties(${test} PROPERTIES FIXTURES_REQUIRED postgres_server
        ENVIRONMENT "${KEEL_PG_ENV}")
    endif()
  endforeach()
endforeach()
