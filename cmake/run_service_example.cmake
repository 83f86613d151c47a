# Runs the example service: its standard output must be the expected text
# (as run_and_compare.cmake checks the other examples), and the Prometheus
# text it writes must pass `promtool check metrics` without a word. Invoked
# by ctest as:
#   cmake -DEXAMPLE=<exe> -DEXPECTED=<file> -DMETRICS=<file> -DPROMTOOL=<promtool> -P run_service_example.cmake
file(REMOVE "${METRICS}")
set(ARGS --write-metrics ${METRICS})
include(${CMAKE_CURRENT_LIST_DIR}/run_and_compare.cmake)  # its output, as every example's
if(NOT PROMTOOL OR NOT EXISTS "${PROMTOOL}")
  message(FATAL_ERROR "promtool not found: install the Debian package prometheus (scripts/lib.sh lists it)")
endif()
if(NOT EXISTS "${METRICS}")
  message(FATAL_ERROR "${EXAMPLE} wrote no metrics to ${METRICS}")
endif()
execute_process(COMMAND ${PROMTOOL} check metrics INPUT_FILE ${METRICS}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
  message(FATAL_ERROR "promtool check metrics on ${METRICS} (exit ${rc}):\n${out}${err}")
endif()
file(STRINGS "${METRICS}" _lines)
list(LENGTH _lines _count)
message(STATUS "${EXAMPLE}: output as expected; ${_count} lines of metrics, promtool finds nothing to say")
