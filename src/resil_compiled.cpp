// src/resil_compiled.cpp — the one source of the resil::compiled library
// (CMake option RESIL_BUILD_COMPILED): resil's out-of-line functions and
// explicit instantiations, compiled once, for programs built with
// RESIL_SEPARATE_COMPILATION (which the target carries to its users).
// docs/compile_time.md. The components this build found decide what it
// holds (RESIL_COMPILED_WITH_<COMPONENT>, set by CMakeLists.txt); a
// component's separate_compilation.hpp includes the core's.
#include <resil/separate_compilation.hpp>

#if RESIL_COMPILED_WITH_CURL
#include <resil/curl/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_JSON
#include <resil/json/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_CURL && RESIL_COMPILED_WITH_JSON
#include <resil/http/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_REDIS
#include <resil/redis/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_CURL && RESIL_COMPILED_WITH_REDIS
#include <resil/http/redis_separate_compilation.hpp>
#endif
// The asynchronous side: resil::http::dependency's Asio face, and its Redis
// quota where a dependency shares one through Redis.
#if RESIL_COMPILED_WITH_ASIO && RESIL_COMPILED_WITH_CURL
#include <resil/curl_asio/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_ASIO && RESIL_COMPILED_WITH_CURL && RESIL_COMPILED_WITH_REDIS
#include <resil/http/async_redis_quota.hpp>
#endif
