# Runs by ctest for one tests/compile_fail/*_fail.cpp: the file must NOT
# compile, and the compiler's output must contain the text that follows
# "// expect: " in it (the first line of the static_assert a user would see).
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
