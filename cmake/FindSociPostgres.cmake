# Debian's libsoci-dev ships no CMake config, so SOCI (core + PostgreSQL backend) is found by hand.
find_path(SOCI_INCLUDE_DIR soci/soci.h REQUIRED)
find_library(SOCI_CORE_LIBRARY NAMES soci_core REQUIRED)
find_library(SOCI_POSTGRESQL_LIBRARY NAMES soci_postgresql REQUIRED)

add_library(SOCI::postgresql INTERFACE IMPORTED)
# SYSTEM: SOCI's headers are not ours to keep warning-free.
target_include_directories(SOCI::postgresql SYSTEM INTERFACE ${SOCI_INCLUDE_DIR} ${PostgreSQL_INCLUDE_DIRS})
target_link_libraries(SOCI::postgresql INTERFACE
  ${SOCI_POSTGRESQL_LIBRARY} ${SOCI_CORE_LIBRARY} PostgreSQL::PostgreSQL ${CMAKE_DL_LIBS})
message(STATUS "SOCI: ${SOCI_CORE_LIBRARY}, ${SOCI_POSTGRESQL_LIBRARY}")
