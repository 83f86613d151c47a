// resil/curl_asio/separate_compilation.hpp — the one translation unit of a
// RESIL_SEPARATE_COMPILATION program that uses resil::http::dependency's
// Asio face (resil/http/async_dependency.hpp): it compiles the core and
// resil::curl (resil/curl/separate_compilation.hpp), then the face's calls:
// the asynchronous pipeline, hedging and the asynchronous libcurl client
// they run, for the face's type-erased completion. A program whose
// dependencies share a quota through Redis on the Asio face adds
// <resil/http/async_redis_quota.hpp> after it (and links resil::redis).
// See docs/compile_time.md.
#pragma once

#include "../curl/separate_compilation.hpp"
#include "../http/async_dependency.hpp"
