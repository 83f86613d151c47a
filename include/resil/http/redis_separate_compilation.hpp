// resil/http/redis_separate_compilation.hpp — the one translation unit of a
// RESIL_SEPARATE_COMPILATION program whose dependencies share a quota through
// Redis (resil/http/redis_quota.hpp): it compiles the core, resil::curl
// (resil::http::dependency with it) and resil::redis, then the quota, so that
// a file including redis_quota.hpp parses neither hiredis nor the limiter.
// Needs the resil::curl and resil::redis CMake targets. See
// docs/compile_time.md.
#pragma once

#include "../curl/separate_compilation.hpp"
#include "../redis/separate_compilation.hpp"
#include "redis_quota.hpp"
