# Runs by ctest for one tests/compile_fail/*_fail.cpp: the file must NOT
# compile, and the compiler's output must contain the text that follows
# "// expect: " in it (the first line of the static_assert a user would see);
# and, where the file says so, the text after "// also-expect: " too, and no
# more lines of diagnostics than "// max-lines: N" (an error that stays short).
#   cmake -DCXX=<compiler> -DSOURCE=<file> -DINCLUDE=<include dir> -P check.cmake
file(READ "${SOURCE}" _text)
string(REGEX MATCH "// expect: ([^\n]*)" _ "${_text}")
set(_expected "${CMAKE_MATCH_1}")
if(_expected STREQUAL "")
  message(FATAL_ERROR "${SOURCE}: no '// expect: <text>' line")
endif()
execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -I "${INCLUDE}" "${SOURCE}"
                RESULT_VARIABLE _result OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(_result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not")
endif()
string(FIND "${_out}${_err}" "${_expected}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed to compile, but without \"${_expected}\":\n${_out}${_err}")
endif()
string(REGEX MATCH "// also-expect: ([^\n]*)" _ "${_text}")
if(NOT CMAKE_MATCH_1 STREQUAL "")
  string(FIND "${_out}${_err}" "${CMAKE_MATCH_1}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed to compile, but without \"${CMAKE_MATCH_1}\":\n${_out}${_err}")
  endif()
endif()
string(REGEX MATCH "// max-lines: ([0-9]+)" _ "${_text}")
if(NOT CMAKE_MATCH_1 STREQUAL "")
  set(_max "${CMAKE_MATCH_1}")
  string(REGEX MATCHALL "\n" _lines "${_out}${_err}")
  list(LENGTH _lines _count)
  if(_count GREATER _max)
    message(FATAL_ERROR "${SOURCE}: ${_count} lines of diagnostics, more than ${_max}:\n${_out}${_err}")
  endif()
endif()
