# Dependencies of resil's integrations that ship no CMake package of their own
# on Debian: standalone Asio (header-only) and hiredis (HiredisConfig.cmake
# sets variables, no target). Each function makes an IMPORTED target that the
# integration links, and sets `found`. Included by resil's build and, once
# installed, by resil-config.cmake, so a consumer finds them the same way.

# resil_dep::asio: standalone Asio 1.22 or later (C++20 coroutines,
# cancellation slots, experimental::parallel_group).
function(resil_find_asio found)
  if(NOT TARGET resil_dep::asio)
    find_path(RESIL_ASIO_INCLUDE_DIR asio.hpp)
    if(NOT RESIL_ASIO_INCLUDE_DIR OR NOT EXISTS "${RESIL_ASIO_INCLUDE_DIR}/asio/version.hpp")
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    file(STRINGS "${RESIL_ASIO_INCLUDE_DIR}/asio/version.hpp" _v REGEX "#define ASIO_VERSION [0-9]+")
    string(REGEX MATCH "[0-9]+" _v "${_v}")
    if(NOT _v OR _v LESS 102200)
      message(STATUS "resil: Asio ${_v} found in ${RESIL_ASIO_INCLUDE_DIR}, 1.22 or later needed")
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    find_package(Threads REQUIRED)
    add_library(resil_dep::asio INTERFACE IMPORTED)
    # clang 14's UBSan `function` check cannot assemble coroutines ("Cannot
    # represent a difference across sections"); off for code using Asio's
    # coroutines, a no-op without -fsanitize.
    set_target_properties(resil_dep::asio PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${RESIL_ASIO_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE;ASIO_NO_DEPRECATED"
      INTERFACE_COMPILE_OPTIONS "$<$<CXX_COMPILER_ID:Clang>:-fno-sanitize=function>"
      INTERFACE_LINK_LIBRARIES Threads::Threads)
  endif()
  set(${found} TRUE PARENT_SCOPE)
endfunction()

# resil_dep::hiredis: the hiredis C client (0.14 or later).
function(resil_find_hiredis found)
  if(NOT TARGET resil_dep::hiredis)
    find_path(RESIL_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
    find_library(RESIL_HIREDIS_LIBRARY NAMES hiredis)
    if(NOT RESIL_HIREDIS_INCLUDE_DIR OR NOT EXISTS "${RESIL_HIREDIS_INCLUDE_DIR}/hiredis/hiredis.h" OR
       NOT RESIL_HIREDIS_LIBRARY OR NOT EXISTS "${RESIL_HIREDIS_LIBRARY}")
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    add_library(resil_dep::hiredis UNKNOWN IMPORTED)
    set_target_properties(resil_dep::hiredis PROPERTIES
      IMPORTED_LOCATION "${RESIL_HIREDIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RESIL_HIREDIS_INCLUDE_DIR}")
  endif()
  set(${found} TRUE PARENT_SCOPE)
endfunction()

# resil_dep::resolv: the C library's DNS resolver (resolv.h, res_nquery and
# the ns_* parser of libresolv; glibc ships both).
function(resil_find_resolv found)
  if(NOT TARGET resil_dep::resolv)
    find_path(RESIL_RESOLV_INCLUDE_DIR resolv.h)
    find_library(RESIL_RESOLV_LIBRARY NAMES resolv)
    if(NOT RESIL_RESOLV_INCLUDE_DIR OR NOT EXISTS "${RESIL_RESOLV_INCLUDE_DIR}/arpa/nameser.h" OR
       NOT RESIL_RESOLV_LIBRARY OR NOT EXISTS "${RESIL_RESOLV_LIBRARY}")
      set(${found} FALSE PARENT_SCOPE)
      return()
    endif()
    add_library(resil_dep::resolv UNKNOWN IMPORTED)
    set_target_properties(resil_dep::resolv PROPERTIES IMPORTED_LOCATION "${RESIL_RESOLV_LIBRARY}")
  endif()
  set(${found} TRUE PARENT_SCOPE)
endfunction()
