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
#if RESIL_COMPILED_WITH_REDIS && __has_include(<resil/redis/separate_compilation.hpp>)
#include <resil/redis/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_CURL && RESIL_COMPILED_WITH_REDIS && __has_include(<resil/http/redis_separate_compilation.hpp>)
#include <resil/http/redis_separate_compilation.hpp>
#endif
// The asynchronous side, where its parts are compiled apart.
#if RESIL_COMPILED_WITH_ASIO && __has_include(<resil/asio/separate_compilation.hpp>)
#include <resil/asio/separate_compilation.hpp>
#endif
#if RESIL_COMPILED_WITH_ASIO && RESIL_COMPILED_WITH_CURL && __has_include(<resil/curl_asio/separate_compilation.hpp>)
#include <resil/curl_asio/separate_compilation.hpp>
#endif
