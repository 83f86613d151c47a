# Runs an example and compares its standard output with the expected text, so
# that documented code cannot rot. Invoked by ctest as:
#   cmake -DEXAMPLE=<exe> -DEXPECTED=<file> [-DARGS=a;b] -P run_and_compare.cmake
execute_process(COMMAND ${EXAMPLE} ${ARGS} OUTPUT_VARIABLE actual RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXAMPLE} exited with ${rc}\n${actual}")
endif()
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${EXPECTED}.actual "${actual}")
  message(FATAL_ERROR "${EXAMPLE}: output differs from ${EXPECTED} (actual output written to ${EXPECTED}.actual)\n"
                      "--- expected ---\n${expected}\n--- actual ---\n${actual}")
endif()
