# Every public header is in its umbrella: resil/resil.hpp includes every
# header of the core (standard library only) at the top of include/resil,
# and each integration's umbrella every header of its folder. Run by ctest:
#   cmake -DRESIL_INCLUDE_DIR=<include dir> -P umbrellas.cmake
# A header added without its umbrella fails here, naming both.
cmake_minimum_required(VERSION 3.21)
set(_root "${RESIL_INCLUDE_DIR}/resil")
set(_failed 0)

# umbrella FILE, FOLDER (relative to include/resil, "." for the top), and
# headers of the folder it leaves out on purpose.
function(check_umbrella umbrella folder)
  file(READ "${_root}/${umbrella}" _text)
  file(GLOB _headers RELATIVE "${_root}/${folder}" "${_root}/${folder}/*.hpp")
  foreach(_h IN LISTS _headers)
    if(_h STREQUAL "separate_compilation.hpp" OR "${_h}" IN_LIST ARGN)
      continue()
    endif()
    if(folder STREQUAL ".")
      set(_name "${_h}")
    else()
      set(_name "${folder}/${_h}")
    endif()
    string(FIND "${_text}" "#include \"${_name}\"" _at)
    if(_at EQUAL -1)
      message(SEND_ERROR "resil/${umbrella} does not include ${_name}")
      set(_failed 1 PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

# The top level: the integrations' umbrellas are not the core's; rate_limit.hpp
# forwards to rate_limit_fields.hpp.
check_umbrella(resil.hpp . rate_limit.hpp resil.hpp asio.hpp curl.hpp curl_asio.hpp fmt.hpp http.hpp json.hpp prometheus.hpp redis.hpp discovery.hpp)
check_umbrella(balancer.hpp balancer)
check_umbrella(asio.hpp asio)
# resil/curl.hpp needs libcurl alone: the clients on Asio are in
# resil/curl_asio.hpp (their old paths under curl/ forward there).
check_umbrella(curl.hpp curl async_client.hpp async_hedged_client.hpp)
check_umbrella(curl_asio.hpp curl_asio)
# resil/json.hpp needs nlohmann alone: the tables of the libcurl client's and
# a dependency's options, and the service file, need libcurl's headers too.
check_umbrella(json.hpp json curl.hpp dependency.hpp service_config.hpp)
# resil/redis.hpp needs hiredis alone: the limiter on Asio is included as
# resil/redis/asio_rate_limiter.hpp (resil::redis and resil::asio).
check_umbrella(redis.hpp redis asio_rate_limiter.hpp)
# resil/discovery.hpp needs libresolv alone: its Asio driver is included as
# resil/discovery/asio.hpp (resil::discovery and resil::asio).
check_umbrella(discovery.hpp discovery asio.hpp)
if(_failed)
  message(FATAL_ERROR "an umbrella header misses a header of its folder")
endif()
message(STATUS "every header is in its umbrella")
