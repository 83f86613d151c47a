# Every policy of the library is in the lists that test it: a class that
# declares its clock rule (`static constexpr resil::time_source time_source`,
# resil/policy_checklist.hpp) is named in tests/policy_checklist.cpp (or the
# Redis limiters' tests), and, unless it is one of the parts named below that are no
# layer of a pipeline, in tests/asio_pipeline.cpp's `library_policies`, whose
# static_assert wants both forms (steps for the blocking pipeline, accepted
# by the asynchronous one). A policy added without them fails here, by name.
# Run by ctest:
#   cmake -DRESIL_SOURCE_DIR=<source dir> -P policy_lists.cmake
cmake_minimum_required(VERSION 3.21)
set(_include "${RESIL_SOURCE_DIR}/include/resil")
set(_tests "${RESIL_SOURCE_DIR}/tests")

# Declared with a clock rule, and no layer of a pipeline: why.
set(_not_layers
    balancer        # a balanced call drives it (call_endpoint), around the pipeline's callable
    health_checker  # probes on its own schedule
    hedge_policy    # a hedged call drives it (resil::asio::hedged)
    retry_budget    # the retry policy's, withdrawn by its steps
    rate_limiter    # the Redis limiter blocks its thread: on Asio it is async_rate_limiter
    async_rate_limiter)  # both pipelines at the same Redis instants: tests/redis_asio_rate_limiter.cpp

file(GLOB_RECURSE _headers "${_include}/*.hpp")
set(_policies)
foreach(_h IN LISTS _headers)
  file(STRINGS "${_h}" _lines REGEX "^(class [A-Za-z_0-9]+( final)? *\\{|.*time_source time_source =)")
  set(_class "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^class ([A-Za-z_0-9]+)")
      set(_class "${CMAKE_MATCH_1}")
    elseif(_line MATCHES "time_source time_source =" AND NOT _class STREQUAL "")
      string(REGEX REPLACE "^basic_" "" _name "${_class}")
      list(APPEND _policies "${_name}")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES _policies)
list(LENGTH _policies _count)
if(_count LESS 10)
  message(FATAL_ERROR "found ${_count} policies declaring a clock rule (${_policies}): the search is broken")
endif()

file(READ "${_tests}/policy_checklist.cpp" _checklist)
foreach(_more redis_policy_checklist redis_asio_rate_limiter)
  file(READ "${_tests}/${_more}.cpp" _text)
  string(APPEND _checklist "${_text}")
endforeach()
file(READ "${_tests}/asio_pipeline.cpp" _pipeline)
string(REGEX MATCH "using library_policies =[^;]*;" _layers "${_pipeline}")
if(_layers STREQUAL "")
  message(FATAL_ERROR "tests/asio_pipeline.cpp has no `using library_policies = ...;`")
endif()

set(_failed 0)
foreach(_p IN LISTS _policies)
  if(NOT _checklist MATCHES "[^A-Za-z_0-9]${_p}[^A-Za-z_0-9]")
    message(SEND_ERROR "${_p} declares a clock rule but tests/policy_checklist.cpp does not check it")
    set(_failed 1)
  endif()
  if(NOT _p IN_LIST _not_layers AND NOT _layers MATCHES "[^A-Za-z_0-9]${_p}[^A-Za-z_0-9]")
    message(SEND_ERROR "${_p} is a policy but not in tests/asio_pipeline.cpp's library_policies "
                       "(both forms), nor named in tests/policy_lists.cmake as no layer of a pipeline")
    set(_failed 1)
  endif()
endforeach()
if(_failed)
  message(FATAL_ERROR "a policy is missing from the lists that test it")
endif()
message(STATUS "${_count} policies, each in its lists: ${_policies}")
