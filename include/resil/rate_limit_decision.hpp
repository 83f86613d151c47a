// resil/rate_limit_decision.hpp — what a rate limiter answers, one type for
// every limiter: granted or why not, the wait, the Retry-After, who decided,
// and where the quota stands after the decision (for a service's own
// RateLimit fields).
//
//   const resil::rate_limit_decision r = bucket.try_acquire();   // token_bucket, paced_bucket
//   if (!r) return reply(429, {{"Retry-After", std::to_string(r.retry_after.count())}});
//   // RateLimit: "default";r=<r.remaining>;t=<r.reset in whole seconds, rounded up>
//
// resil::token_bucket and resil::paced_bucket return it (token_bucket_result
// and token_bucket_status are its old names), and so does the Redis limiter
// (resil::redis::rate_limit_result is this type; docs/token_bucket.md, "The
// answer").
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "enum_name.hpp"
#include "clock.hpp"

namespace resil {

/// What a rate limiter said about a request.
enum class rate_limit_status : std::uint8_t {
    granted,        ///< the tokens (permits) were taken
    rejected,       ///< not enough now (for a waiting acquire: not before the deadline); see `wait`
    exceeds_burst,  ///< more than the limiter can ever hold: no wait will help
    cancelled,      ///< a waiting acquire only: the stop token fired; nothing was taken
    unavailable,    ///< a limiter with a store (Redis) only: the store could not decide and it fails closed
    no_time,        ///< a limiter with a store only: the deadline left no time to ask it; nothing was decided
};

/// The status's name, e.g. "rejected".
[[nodiscard]] constexpr enum_name to_string(rate_limit_status s) noexcept {
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

/// Who took a rate-limit decision.
enum class decided_by : std::uint8_t {
    none,      ///< nobody needed to or could (nothing asked, more than the burst, cancelled, no time left)
    redis,     ///< the shared quota, in Redis (resil::redis::rate_limiter)
    lease,     ///< permits leased from Redis earlier, spent locally
    fallback,  ///< Redis could not decide: the limiter's failure policy did
    local,     ///< this process's bucket (resil::token_bucket, resil::paced_bucket)
};

/// Who decided, e.g. "redis" or "lease".
[[nodiscard]] constexpr enum_name to_string(decided_by d) noexcept {
    switch (d) {
        case decided_by::none: return "none";
        case decided_by::redis: return "redis";
        case decided_by::lease: return "lease";
        case decided_by::fallback: return "fallback";
        case decided_by::local: return "local";
    }
    return "unknown";
}

/// The answer to one request for tokens (permits). A plain value; `true`
/// when granted.
struct rate_limit_decision {
    /// Granted, rejected, or why it could not be decided.
    rate_limit_status status = rate_limit_status::granted;
    /// rejected: how long until the tokens exist (at least 1 ns). granted:
    /// how long the caller waits (acquire(): waited) for tokens reserved
    /// ahead of time; zero for tokens there now. Otherwise zero.
    duration wait{};
    /// rejected: `wait` rounded up to whole seconds, at least 1 s (the value
    /// of a Retry-After header). Otherwise zero.
    std::chrono::seconds retry_after{};
    /// Who decided; none for the answers no limiter state was asked for
    /// (nothing asked, more than the burst, cancelled before deciding).
    decided_by source = decided_by::none;
    /// Whole tokens left after this decision, in [0, burst] (a grant's tokens
    /// already taken, tokens reserved by waiting callers too). Zero when
    /// nobody decided (source none).
    std::int64_t remaining = 0;
    /// How long until the limiter next gains a whole token, from the
    /// decision (for a grant that waited: from the end of the wait); zero
    /// when it is full (nothing more to gain) or nobody decided.
    duration reset{};

    /// True when the tokens were granted.
    [[nodiscard]] constexpr bool granted() const noexcept { return status == rate_limit_status::granted; }
    /// granted().
    explicit constexpr operator bool() const noexcept { return granted(); }

    /// Field-by-field equality.
    friend constexpr bool operator==(const rate_limit_decision&, const rate_limit_decision&) = default;
};

}  // namespace resil
