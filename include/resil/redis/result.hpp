// resil/redis/result.hpp — what resil::redis::rate_limiter answers, blocking
// or on Asio: a decision's status, who made it, the wait and Retry-After,
// where the quota stands (`remaining`, `reset`), and the limiter's counters.
//
//   const resil::redis::rate_limit_result r = limiter.try_acquire();
//   if (!r) return reply(429, r.retry_after);
//   log(to_string(r.status), to_string(r.source), r.remaining);
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "../clock.hpp"
#include "../rate_limit_decision.hpp"

namespace resil::redis {

// One answer for every rate limiter (resil/rate_limit_decision.hpp): the
// Redis limiter's names are the core's, so a caller holding a token_bucket
// and a Redis limiter handles both answers with one function.
//   status: unavailable (Redis could not decide and the limiter fails
//     closed), no_time (the caller's deadline left no time to ask Redis or
//     to get a connection: nothing was decided) are the Redis limiter's own.
//   source: redis, lease (permits leased from Redis earlier, spent
//     locally), fallback (the failure policy decided; remaining and reset
//     are its local bucket's), none (n = 0, a bad weight, cancelled, no time).
//   remaining, reset: from a lease, its unspent permits plus what Redis
//     reported when it was taken, the reset counted down since; zero when
//     the limiter fails closed.
/// The core's rate_limit_status, under resil::redis too.
using rate_limit_status = resil::rate_limit_status;
/// The core's decided_by, under resil::redis too.
using decided_by = resil::decided_by;
/// The core's rate_limit_result, under resil::redis too.
using rate_limit_result = resil::rate_limit_decision;
// resil::redis::to_string(r.status), as before the names were shared.
using resil::to_string;

/// Counters since construction; each read is relaxed (a snapshot of
/// independent counters, not of one instant).
struct rate_limiter_metrics {
    std::uint64_t granted = 0;           ///< every grant, whoever decided
    std::uint64_t rejected = 0;          ///< rate-limited (by Redis or, failing open, locally)
    std::uint64_t round_trips = 0;       ///< EVALSHA calls that got an answer
    std::uint64_t lease_grants = 0;      ///< grants spent from a lease, without a round trip
    std::uint64_t store_failures = 0;    ///< decisions Redis could not make (policy applied)
    /// Store failures the fail-open bucket granted.
    std::uint64_t fail_open_admitted = 0;
    /// Store failures the fail-open bucket refused.
    std::uint64_t fail_open_rejected = 0;
    /// Store failures refused by fail_closed.
    std::uint64_t fail_closed_rejected = 0;
    std::uint64_t connects = 0;          ///< connections opened (the first ones included)
    std::uint64_t script_loads = 0;      ///< SCRIPT LOAD after NOSCRIPT (cache flushed, failover)
    std::uint64_t error_replies = 0;     ///< error or malformed answers from Redis
    std::uint64_t no_time = 0;           ///< decisions the caller's deadline left no time for (not failures)
    /// Redis Cluster: MOVED and ASK redirects followed (zero on one server).
    std::uint64_t redirections = 0;
    /// Redis Cluster: slot maps read (CLUSTER SLOTS answered), the first included.
    std::uint64_t map_refreshes = 0;
};

}  // namespace resil::redis
