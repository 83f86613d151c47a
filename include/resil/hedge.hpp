// resil/hedge.hpp — hedged requests: when the first attempt of a call has not
// answered after a delay, start another copy of it; the first acceptable
// answer wins and the other copies are cancelled.
//
//   resil::retry_budget budget;                               // shared with the retry policy
//   resil::hedge_policy hedge{{.max_hedges = 1,
//                              .delay = 50ms,                // until enough latencies are known
//                              .percentile = 0.95,           // then: the p95 of recent attempts
//                              .budget = &budget}};
//
// This header is the decision core: whether a call may be hedged, how long to
// wait before each next copy, whether the shared throttle grants it, and the
// latencies the delay is learnt from. It reads no clock and starts nothing:
// the code that runs copies side by side asks it: resil::asio::hedged
// (resil/asio/hedge.hpp) on Asio, e.g. around async_perform calls of
// resil::curl::async_client. resil's pipelines do not start copies by
// themselves: the hedged call is a pipeline's callable.
//
// The rules a driver follows:
//  - only an operation that may be repeated is hedged: idempotent, or
//    carrying an idempotency key (every copy then sends the same key); any
//    other call runs once, unhedged (may_hedge);
//  - copy k (k = 1 … max_hedges) starts when the earlier ones have run for
//    k × delay(now) without an acceptable answer, and only when the retry
//    budget grants it (try_start_hedge): hedges and retries share one
//    throttle, so neither can multiply the load on a struggling dependency;
//  - a copy that fails with a retryable failure does not end the call while
//    other copies still run; the first acceptable answer wins at once;
//  - the copies that lose are cancelled (their transfers removed); they are
//    reported as cancelled by a hedge (events::hedge_cancelled), never as
//    failures to a circuit breaker;
//  - the latency of every copy that completes is recorded (record); a
//    cancelled copy's only when it ran at least the delay, as its run: a
//    lower bound, which ranks it above the delay as its latency would (left
//    out, the slow tail would vanish from the window and the delay sink);
//  - a call is counted in the budget (count_call) by the hedge only when no
//    retry policy outside it counted it already (the context says so:
//    counted_in_budget()), with or without a pipeline around the hedge.
// With a retry policy, put the hedge inside it: each retry is a hedged group
// of copies, and both draw on the same budget.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>

#include "clock.hpp"
#include "events.hpp"  // events::hedge_started, hedge_refused, hedge_cancelled
#include "latency_tracker.hpp"
#include "retry_budget.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a hedge_policy; the defaults are the documented ones.
struct hedge_options {
    ///@{
    /// The bounds validate() checks: max_hedges_limit bounds `max_hedges`,
    /// max_delay_limit every delay field, max_min_samples `min_samples`.
    static constexpr std::uint32_t max_hedges_limit = 8;
    static constexpr duration max_delay_limit = std::chrono::hours{1};
    static constexpr std::uint32_t max_min_samples = 1'000'000;
    ///@}

    /// Extra copies of a call at most, besides its first attempt, in
    /// [0, max_hedges_limit]; 0 turns hedging off. Default 1.
    std::uint32_t max_hedges = 1;
    /// The wait before each next copy when `percentile` is 0, and while the
    /// window holds fewer than `min_samples` latencies, in [0, 1h]. Default
    /// 100 ms. 0 starts every copy at once.
    duration delay = std::chrono::milliseconds{100};
    /// 0: the delay is always `delay`. In (0, 1): the delay is that
    /// percentile of the latencies of the attempts that completed in the last
    /// `window` (0.95: the p95), clamped to [min_delay, max_delay].
    double percentile = 0.0;
    /// Bounds of a learnt delay, 0 ≤ min_delay ≤ max_delay ≤ 1h. Default 1 ms
    /// and 10 s.
    duration min_delay = std::chrono::milliseconds{1};
    /// The longest adaptive delay: the percentile is clamped to [min_delay,
    /// max_delay]. Default 10 s.
    duration max_delay = std::chrono::seconds{10};
    /// The span latencies are learnt over, in [100ms, 1h]. Default 10 s.
    duration window = std::chrono::seconds{10};
    /// Latencies needed in the window before the percentile is trusted, in
    /// [1, 1,000,000]. Default 50.
    std::uint32_t min_samples = 50;
    /// The throttle hedges draw on, shared with the retry policy (one
    /// withdrawal per extra copy), or null for none. Not owned; must outlive
    /// the policy.
    retry_budget* budget = nullptr;

    /// The first invalid field, or nothing:
    ///   "`percentile` must be 0 (a fixed delay) or in (0, 1), got 1.5"
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_in_range("max_hedges", max_hedges, std::uint32_t{0}, max_hedges_limit))
            return bad;
        if (auto bad = detail::check_in_range("delay", delay, duration::zero(), max_delay_limit)) return bad;
        // Written so that NaN fails too.
        if (auto bad = detail::check_that(percentile == 0.0 || (percentile > 0.0 && percentile < 1.0), "percentile",
                                          "0 (a fixed delay) or in (0, 1)", percentile))
            return bad;
        if (auto bad = detail::check_in_range("max_delay", max_delay, duration::zero(), max_delay_limit)) return bad;
        if (auto bad = detail::check_in_range("min_delay", min_delay, duration::zero(), max_delay)) return bad;
        if (auto bad = detail::check_in_range("window", window, latency_tracker::min_window,
                                              latency_tracker::max_window))
            return bad;
        return detail::check_in_range("min_samples", min_samples, std::uint32_t{1}, max_min_samples);
    }

    /// Field-by-field equality.
    friend bool operator==(const hedge_options&, const hedge_options&) = default;
};

/// What a hedge_policy has decided since construction; a snapshot (each
/// field read relaxed, on its own).
struct hedge_metrics {
    std::uint64_t hedges = 0;   ///< extra copies granted (try_start_hedge() true)
    std::uint64_t refused = 0;  ///< extra copies the throttle (the retry budget) refused
    duration delay{};           ///< the wait before each next copy now: `delay`, or the last learnt percentile

    /// Field-by-field equality.
    friend bool operator==(const hedge_metrics&, const hedge_metrics&) = default;
};

/// The decision core of hedged requests (banner above). Shared state (the
/// latencies learnt): one per dependency, passed by reference, safe to use
/// from any number of threads. Allocates only at construction.
class hedge_policy {
public:
    /// Owns no clock: every member that depends on time takes `now`, read
    /// by its driver (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::caller_now;

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::hedge_policy: `max_hedges` must be in [0, 8], got 9".
    explicit hedge_policy(hedge_options options = {})
        : options_(checked(std::move(options))),
          latencies_(options_.window),
          refresh_every_(std::max<duration>(options_.window / 40, std::chrono::milliseconds{1})),
          learnt_(options_.delay.count()) {}

    hedge_policy(const hedge_policy&) = delete;
    hedge_policy& operator=(const hedge_policy&) = delete;

    /// The options it was built with.
    [[nodiscard]] const hedge_options& options() const noexcept { return options_; }

    /// Whether a call may have extra copies: hedging is on and the operation
    /// may be repeated (idempotent, or carrying an idempotency key).
    [[nodiscard]] bool may_hedge(bool safe_to_repeat) const noexcept {
        return safe_to_repeat && options_.max_hedges > 0;
    }

    /// The wait before each next copy, as of `now`: `delay`, or the learnt
    /// percentile. The percentile is recomputed at most once every window/40
    /// (by one caller; the others read the last value), so asking costs two
    /// atomic loads.
    [[nodiscard]] duration delay(time_point now) const noexcept {
        if (options_.percentile == 0.0) return options_.delay;
        const auto t = now.time_since_epoch().count();
        auto due = refresh_at_.load(std::memory_order_relaxed);
        if (t >= due &&
            refresh_at_.compare_exchange_strong(due, saturating_add(t, refresh_every_.count()),
                                                std::memory_order_relaxed)) {
            const auto e = latencies_.estimate(now, options_.percentile);
            const duration d = e.samples >= options_.min_samples
                                   ? std::clamp(e.value, options_.min_delay, options_.max_delay)
                                   : options_.delay;
            learnt_.store(d.count(), std::memory_order_relaxed);
            return d;
        }
        return duration{learnt_.load(std::memory_order_relaxed)};
    }

    /// Asks the shared throttle for one more copy at `now`: true when granted
    /// (always, without a budget); a refusal takes nothing.
    [[nodiscard]] bool try_start_hedge(time_point now) const noexcept {
        const bool granted = options_.budget == nullptr || options_.budget->try_withdraw(now);
        (granted ? hedges_ : refused_).fetch_add(1, std::memory_order_relaxed);
        return granted;
    }

    /// Counts a call in the budget, when no retry policy outside the hedge
    /// does (see the banner).
    void count_call(time_point now) const noexcept {
        if (options_.budget) options_.budget->deposit(now);
    }

    /// Records the latency of a copy that completed (won, or lost by
    /// answering after the winner). Allocates nothing.
    void record(time_point now, duration latency) const noexcept { latencies_.record(now, latency); }

    /// The recent attempt latencies it computes an adaptive delay from.
    [[nodiscard]] const latency_tracker& latencies() const noexcept { return latencies_; }

    /// Copies granted and refused since construction, and the delay in force
    /// (as of the last delay() that computed it; reads no clock).
    [[nodiscard]] hedge_metrics metrics() const noexcept {
        return {hedges_.load(std::memory_order_relaxed), refused_.load(std::memory_order_relaxed),
                options_.percentile == 0.0 ? options_.delay : duration{learnt_.load(std::memory_order_relaxed)}};
    }

private:
    static hedge_options checked(hedge_options o) {
        throw_if_invalid("resil::hedge_policy", o.validate());
        return o;
    }
    static duration::rep saturating_add(duration::rep a, duration::rep b) noexcept {
        return a > std::numeric_limits<duration::rep>::max() - b ? std::numeric_limits<duration::rep>::max() : a + b;
    }

    hedge_options options_;
    mutable latency_tracker latencies_;
    duration refresh_every_;
    mutable std::atomic<duration::rep> refresh_at_{std::numeric_limits<duration::rep>::min()};
    mutable std::atomic<duration::rep> learnt_;
    // Written only when a copy is asked for (rarely: past the delay).
    mutable std::atomic<std::uint64_t> hedges_{0};
    mutable std::atomic<std::uint64_t> refused_{0};
};

}  // namespace resil
