// resil/redis.hpp — everything of target resil::redis (hiredis): the rate
// limiter whose quota lives in Redis and is shared by every process naming
// the same key. See docs/redis_rate_limiter.md.
#pragma once

#include "redis/options.hpp"
#include "redis/result.hpp"
#include "redis/rate_limiter.hpp"
