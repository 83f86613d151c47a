// resil/rate_limit.hpp — renamed resil/rate_limit_fields.hpp: it reads the
// rate-limit fields a server sends (a parser, not a limiter; the limiters
// are token_bucket.hpp, paced_bucket.hpp and redis/rate_limiter.hpp). This
// path keeps compiling.
#pragma once

#include "rate_limit_fields.hpp"
