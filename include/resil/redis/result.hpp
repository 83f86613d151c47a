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

namespace resil::redis {

/// What the limiter said about a request.
enum class rate_limit_status : std::uint8_t {
    granted,        ///< the permits were taken
    rejected,       ///< not enough permits now (acquire(): not before the deadline); see `wait`
    exceeds_burst,  ///< more permits than the quota can ever hold (or, failing open, than the local bucket can)
    cancelled,      ///< acquire() only: the stop token fired
    unavailable,    ///< Redis could not decide and the limiter fails closed
    no_time,        ///< the caller's deadline left no time to ask Redis (or to get a connection): nothing was decided
};

[[nodiscard]] constexpr std::string_view to_string(rate_limit_status s) noexcept {
    switch (s) {
        case rate_limit_status::granted: return "granted";
        case rate_limit_status::rejected: return "rejected";
        case rate_limit_status::exceeds_burst: return "exceeds_burst";
        case rate_limit_status::cancelled: return "cancelled";
        case rate_limit_status::unavailable: return "unavailable";
        case rate_limit_status::no_time: return "no_time";
    }
    return "unknown";
}

/// Who decided.
enum class decided_by : std::uint8_t {
    none,      ///< nobody needed to or could (n = 0, bad weight, cancelled, no time left)
    redis,     ///< the shared quota, in Redis
    lease,     ///< permits leased from Redis earlier, spent locally
    fallback,  ///< Redis could not decide: the failure policy did
};

[[nodiscard]] constexpr std::string_view to_string(decided_by d) noexcept {
    switch (d) {
        case decided_by::none: return "none";
        case decided_by::redis: return "redis";
        case decided_by::lease: return "lease";
        case decided_by::fallback: return "fallback";
    }
    return "unknown";
}

/// The answer to one request, shaped like token_bucket_result, with where
/// the quota stands for a service's own RateLimit fields
/// (draft-ietf-httpapi-ratelimit-headers: `r` is `remaining`, `t` is
/// `reset` rounded up to whole seconds; see docs/redis_rate_limiter.md).
struct rate_limit_result {
    rate_limit_status status = rate_limit_status::granted;
    /// rejected: how long until the permits exist (at least 1 ns). granted by
    /// acquire(): how long it slept. Otherwise zero.
    duration wait{};
    /// rejected: `wait` in whole seconds rounded up, at least 1 s (a
    /// Retry-After header's value). Otherwise zero.
    std::chrono::seconds retry_after{};
    decided_by source = decided_by::none;
    /// Whole permits left in the quota after this decision, in [0, burst]
    /// (a grant's permits already taken). From a lease: the lease's unspent
    /// permits plus what Redis reported when it was taken; from the
    /// fallback: its local bucket's. Zero when nobody decided
    /// (source none) or the limiter fails closed.
    std::int64_t remaining = 0;
    /// How long until the quota next gains a whole permit; zero when it is
    /// full (nothing more to gain), when nobody decided, or failing closed.
    /// From a lease: as Redis reported it when the lease was taken, counted
    /// down since.
    duration reset{};

    [[nodiscard]] constexpr bool granted() const noexcept { return status == rate_limit_status::granted; }
    explicit constexpr operator bool() const noexcept { return granted(); }
    friend constexpr bool operator==(const rate_limit_result&, const rate_limit_result&) = default;
};

/// Counters since construction; each read is relaxed (a snapshot of
/// independent counters, not of one instant).
struct rate_limiter_metrics {
    std::uint64_t granted = 0;           ///< every grant, whoever decided
    std::uint64_t rejected = 0;          ///< rate-limited (by Redis or, failing open, locally)
    std::uint64_t round_trips = 0;       ///< EVALSHA calls that got an answer
    std::uint64_t lease_grants = 0;      ///< grants spent from a lease, without a round trip
    std::uint64_t store_failures = 0;    ///< decisions Redis could not make (policy applied)
    std::uint64_t fail_open_admitted = 0;
    std::uint64_t fail_open_rejected = 0;
    std::uint64_t fail_closed_rejected = 0;
    std::uint64_t connects = 0;          ///< connections opened (the first ones included)
    std::uint64_t script_loads = 0;      ///< SCRIPT LOAD after NOSCRIPT (cache flushed, failover)
    std::uint64_t error_replies = 0;     ///< error or malformed answers from Redis
    std::uint64_t no_time = 0;           ///< decisions the caller's deadline left no time for (not failures)
};

}  // namespace resil::redis
