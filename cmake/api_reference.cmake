# Builds the API reference and fails on any doxygen warning, listing each as
#   include/resil/<header>:<line>: <what is missing>
# Run by the target resil_api_reference and the test api_reference:
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<build>/docs/Doxyfile
#         -DWARNINGS=<its WARN_LOGFILE> -DSOURCE_DIR=<source dir> -P api_reference.cmake
cmake_minimum_required(VERSION 3.21)
if(NOT DOXYGEN)
  message(FATAL_ERROR "doxygen was not found when resil was configured: install it (Debian: apt-get install "
                      "doxygen; scripts/lib.sh lists it), or configure with -DRESIL_BUILD_API_REFERENCE=OFF")
endif()
file(REMOVE "${WARNINGS}")
# doxygen creates its OUTPUT_DIRECTORY but not the log's directory: on a fresh
# build tree the log would go to stderr and the run fail.
cmake_path(GET WARNINGS PARENT_PATH _log_dir)
file(MAKE_DIRECTORY "${_log_dir}")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE _rc)
set(_text "")
if(EXISTS "${WARNINGS}")
  file(READ "${WARNINGS}" _text)
endif()
string(STRIP "${_text}" _text)
if(_text STREQUAL "" AND _rc EQUAL 0)
  cmake_path(GET WARNINGS PARENT_PATH _out)
  message(STATUS "API reference: ${_out}/html/index.html (no warnings)")
  return()
endif()
# Paths as in the source tree, so that each line reads file:line: name.
string(REPLACE "${SOURCE_DIR}/" "" _text "${_text}")
string(REGEX MATCHALL "\n" _lines "\n${_text}")
list(LENGTH _lines _count)
string(REGEX MATCHALL "is not documented" _undocumented "${_text}")
list(LENGTH _undocumented _undocumented_count)
message("${_text}\n")
message(FATAL_ERROR "doxygen exited with ${_rc} and ${_count} warning line(s), "
                    "${_undocumented_count} for public names without a comment: give each a /// comment "
                    "(what it is, units, defaults, thread safety where it matters); the rest are broken "
                    "doc commands or markup. The exclusions (detail, fmt, std, nlohmann) are in docs/Doxyfile.in.")
