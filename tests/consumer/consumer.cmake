# Shared by the three consumer projects: one program that uses resil the way
# a user's program does, linked to every resil target the package provides.
# Include it after resil was made available (find_package, add_subdirectory
# or FetchContent); RESIL_CONSUMER_HOW names which, for the program's output.

add_executable(consumer "${CMAKE_CURRENT_LIST_DIR}/consumer.cpp")
target_compile_definitions(consumer PRIVATE RESIL_CONSUMER_HOW="${RESIL_CONSUMER_HOW}")
target_link_libraries(consumer PRIVATE resil::resil)

# An integration must come through whenever its dependency is installed here:
# a silently missing resil::curl is a packaging bug. RESIL_CONSUMER_EXPECTED
# names the integrations asked for (default: all); any other must NOT be there.
if(NOT DEFINED RESIL_CONSUMER_EXPECTED)
  set(RESIL_CONSUMER_EXPECTED curl json fmt prometheus asio redis discovery)
endif()
set(_resil_dep_curl CURL)
set(_resil_dep_json nlohmann_json)
set(_resil_dep_fmt fmt)
set(_resil_dep_prometheus prometheus-cpp)
set(_resil_dep_asio RESIL_CONSUMER_ASIO)
set(_resil_dep_redis RESIL_CONSUMER_HIREDIS)
set(_resil_dep_discovery RESIL_CONSUMER_RESOLV)
find_package(CURL QUIET)
find_package(nlohmann_json 3.9 QUIET)
find_package(fmt 9 QUIET)
find_package(prometheus-cpp CONFIG QUIET)
# Asio, hiredis and libresolv have no package of their own: looked up in the cache
# variables resil's lookup uses (cmake/resil-dependencies.cmake), so that a
# value given on the command line hides them from both alike.
find_path(RESIL_ASIO_INCLUDE_DIR asio.hpp)
find_path(RESIL_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
find_library(RESIL_HIREDIS_LIBRARY NAMES hiredis)
find_path(RESIL_RESOLV_INCLUDE_DIR resolv.h)
find_library(RESIL_RESOLV_LIBRARY NAMES resolv)
set(RESIL_CONSUMER_ASIO_FOUND FALSE)
if(RESIL_ASIO_INCLUDE_DIR AND EXISTS "${RESIL_ASIO_INCLUDE_DIR}/asio/version.hpp")
  set(RESIL_CONSUMER_ASIO_FOUND TRUE)
endif()
set(RESIL_CONSUMER_HIREDIS_FOUND FALSE)
if(RESIL_HIREDIS_INCLUDE_DIR AND EXISTS "${RESIL_HIREDIS_INCLUDE_DIR}/hiredis/hiredis.h" AND
   RESIL_HIREDIS_LIBRARY AND EXISTS "${RESIL_HIREDIS_LIBRARY}")
  set(RESIL_CONSUMER_HIREDIS_FOUND TRUE)
endif()
set(RESIL_CONSUMER_RESOLV_FOUND FALSE)
if(RESIL_RESOLV_INCLUDE_DIR AND EXISTS "${RESIL_RESOLV_INCLUDE_DIR}/arpa/nameser.h" AND
   RESIL_RESOLV_LIBRARY AND EXISTS "${RESIL_RESOLV_LIBRARY}")
  set(RESIL_CONSUMER_RESOLV_FOUND TRUE)
endif()
foreach(_integration curl json fmt prometheus asio redis discovery)
  string(TOUPPER ${_integration} _upper)
  if(TARGET resil::${_integration})
    if(NOT _integration IN_LIST RESIL_CONSUMER_EXPECTED)
      message(FATAL_ERROR "resil::${_integration} came through the package although it was not asked for")
    endif()
    target_link_libraries(consumer PRIVATE resil::${_integration})
    target_compile_definitions(consumer PRIVATE RESIL_CONSUMER_HAVE_${_upper}=1)
  elseif(${_resil_dep_${_integration}}_FOUND AND _integration IN_LIST RESIL_CONSUMER_EXPECTED)
    message(FATAL_ERROR "${_resil_dep_${_integration}} is installed but resil::${_integration} did not come through")
  endif()
endforeach()

# resil_consumer_check_subproject(<resil source dir>): resil, as somebody's
# subproject, must define its library targets and nothing else: no tests,
# examples, benchmarks, warning target or CTest set-up of its own.
function(resil_consumer_check_subproject resil_dir)
  get_property(_subdirs DIRECTORY "${resil_dir}" PROPERTY SUBDIRECTORIES)
  if(_subdirs)
    message(FATAL_ERROR "resil as a subproject added its own directories: ${_subdirs}")
  endif()
  get_property(_targets DIRECTORY "${resil_dir}" PROPERTY BUILDSYSTEM_TARGETS)
  list(REMOVE_ITEM _targets resil resil_curl resil_json resil_fmt resil_prometheus resil_asio resil_redis
       resil_discovery resil_compiled)
  if(_targets)
    message(FATAL_ERROR "resil as a subproject defined extra targets: ${_targets}")
  endif()
  if(DEFINED CACHE{BUILD_TESTING})
    message(FATAL_ERROR "resil as a subproject included CTest (BUILD_TESTING is set)")
  endif()
endfunction()
