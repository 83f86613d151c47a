// resil/redis/separate_compilation.hpp — what resil::redis compiles once when
// a program defines RESIL_SEPARATE_COMPILATION (see
// resil/separate_compilation.hpp): the blocking limiter's decision (the round
// trip to Redis, its answer, the wait). Include it in the same one source
// file as the core's. Needs hiredis (the resil::redis CMake target).
#pragma once

#include "../separate_compilation.hpp"
#include "../redis.hpp"
