// resil/redis/detail/local.hpp — what a limiter decides in its own process:
// permits leased from Redis and spent locally, and the fallback bucket that
// decides while Redis cannot (failing open). Shared by the blocking and the
// asynchronous path.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "../../clock.hpp"
#include "../../deadline.hpp"
#include "../../detail/gcra.hpp"
#include "../../token_bucket.hpp"
#include "../options.hpp"
#include "../result.hpp"
#include "health.hpp"

namespace resil::redis::detail {

/// Permits taken from Redis beyond a decision's own, spent by later
/// decisions of this process without a round trip. One word, (expiry in ms
/// since the origin) << 24 | permits; one refill at a time. Thread-safe.
class lease {
public:
    /// The permits left in the lease after taking n from it, or -1 when it
    /// does not hold n (or has expired).
    std::int64_t spend(std::int64_t n, std::int64_t now_ns) const noexcept {
        auto word = word_.load(std::memory_order_relaxed);
        const auto now = static_cast<std::uint64_t>((now_ns - origin_ns_) / 1'000'000);
        for (;;) {
            const auto permits = static_cast<std::int64_t>(word & mask);
            if (permits < n || (word >> bits) <= now) return -1;
            const auto next = word - static_cast<std::uint64_t>(n);
            if (word_.compare_exchange_weak(word, next, std::memory_order_relaxed)) return permits - n;
        }
    }

    // A grant from the lease: where the quota stood when the lease was
    // taken (a hint at most lease_ttl old), with the lease's unspent permits.
    rate_limit_result grant(std::int64_t left, std::int64_t now_ns, std::int64_t burst) const noexcept {
        const auto shared = remaining_.load(std::memory_order_relaxed);
        const auto remaining = left > burst - shared ? burst : left + shared;
        const auto reset_at = reset_at_ns_.load(std::memory_order_relaxed);
        const duration reset{reset_at > now_ns ? reset_at - now_ns : 0};
        return {rate_limit_status::granted, {}, {}, decided_by::lease, remaining, reset};
    }

    /// True when this caller may refill the lease (no other refill runs):
    /// others ask for exactly their n meanwhile, so the unspent lease never
    /// exceeds lease − 1 permits.
    bool start_refill() const noexcept { return !refilling_.exchange(true, std::memory_order_acquire); }

    /// Ends a refill: `leased` permits (0: none) beyond the decision's own,
    /// valid for `ttl`, and where Redis said the quota stood.
    void end_refill(std::int64_t leased, std::int64_t remaining, std::int64_t reset_ns,
                    std::chrono::milliseconds ttl) const noexcept {
        if (leased > 0) {
            const auto now_ns = steady_ns();
            remaining_.store(remaining, std::memory_order_relaxed);
            reset_at_ns_.store(reset_ns > 0 ? now_ns + reset_ns : 0, std::memory_order_relaxed);
            const auto expiry = static_cast<std::uint64_t>((now_ns - origin_ns_) / 1'000'000) +
                                static_cast<std::uint64_t>(ttl.count());
            word_.store(expiry << bits | static_cast<std::uint64_t>(leased), std::memory_order_relaxed);
        }
        refilling_.store(false, std::memory_order_release);
    }

private:
    static constexpr int bits = 24;
    static constexpr std::uint64_t mask = (std::uint64_t{1} << bits) - 1;

    std::int64_t origin_ns_ = steady_ns();
    mutable std::atomic<std::uint64_t> word_{0};
    mutable std::atomic<bool> refilling_{false};
    // Where the quota stood when the lease was taken: Redis's remaining, and
    // when the next permit comes (steady ns; 0: the quota was full).
    mutable std::atomic<std::int64_t> remaining_{0};
    mutable std::atomic<std::int64_t> reset_at_ns_{0};
};

/// The bucket that decides while Redis cannot, failing open: rate /
/// expected_pods, burst / expected_pods (at least 1).
[[nodiscard]] inline token_bucket_options fallback_options(const rate_limiter_options& o) {
    const auto pods = static_cast<std::int64_t>(o.expected_pods);
    auto burst = o.burst / pods;
    if (burst < 1) burst = 1;
    double rate = o.rate / static_cast<double>(pods);
    if (rate < token_bucket_options::min_rate) rate = token_bucket_options::min_rate;
    if (static_cast<double>(burst) / rate > token_bucket_options::max_refill_seconds)
        burst = resil::detail::gcra::largest_burst(rate);
    return {.rate = rate, .burst = burst};
}

// Where the fallback bucket stands after its decision: its whole tokens,
// and the time until the next from the fraction refilling (tokens(), a
// double: off by at most burst · 2⁻⁵² of a permit's interval). Read
// after the decision, so other threads' decisions may fall in between.
[[nodiscard]] inline rate_limit_result with_local_state(const token_bucket& local, rate_limit_result r) noexcept {
    const auto now = steady_clock{}.now();
    r.remaining = local.available(now);
    if (r.remaining >= local.options().burst) return r;
    double missing = static_cast<double>(r.remaining + 1) - local.tokens(now);  // in (0, 1]
    missing = missing < 0 ? 0 : missing > 1 ? 1 : missing;
    r.reset = duration{static_cast<std::int64_t>(std::ceil(missing * 1e9 / local.options().rate))};
    return r;
}

}  // namespace resil::redis::detail
