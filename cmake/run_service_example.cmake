# Runs the example service: its standard output must be the expected text
# (as run_and_compare.cmake checks the other examples), and the Prometheus
# text it writes must pass `promtool check metrics` without a word. Invoked
# by ctest as:
#   cmake -DEXAMPLE=<exe> -DEXPECTED=<file> -DMETRICS=<file> -DPROMTOOL=<promtool> -P run_service_example.cmake
file(REMOVE "${METRICS}")
execute_process(COMMAND ${EXAMPLE} --write-metrics ${METRICS} OUTPUT_VARIABLE actual RESULT_VARIABLE rc TIMEOUT 180)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXAMPLE} exited with ${rc}\n${actual}")
endif()
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${EXPECTED}.actual "${actual}")
  message(FATAL_ERROR "${EXAMPLE}: output differs from ${EXPECTED} (actual output written to ${EXPECTED}.actual)\n"
                      "--- expected ---\n${expected}\n--- actual ---\n${actual}")
endif()
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
