// resil/redis/detail/decision.hpp — the decision code every path of the
// Redis limiter runs (the blocking one, resil/redis/rate_limiter.hpp, and the
// one on Asio, resil/redis/asio_rate_limiter.hpp): the limiter's state
// (options, key, quota constants, lease, fallback bucket, health, counters)
// and a decision's steps around its round trip, which each path makes its
// own way:
//
//   decision d{...};
//   if (core.begin(d, stop)) return d.result;  // screened, or spent from the lease
//   const asked how = <round trip>(core, d, answer);   // the path's own (script_arguments, read_answer)
//   core.answered(d, how, answer, stop);       // the result, or a wait (a reservation, the fallback's)
//   if (d.waits) core.woke(d, <wait until d.wake>);
//   return d.result;
//
// As a pipeline policy, both paths also share the call's decision
// (for_call) and what the call does with its result (verdict_for_call:
// the events, as token_bucket's).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../../clock.hpp"
#include "../../deadline.hpp"
#include "../../detail/fork_epoch.hpp"
#include "../../detail/gcra.hpp"
#include "../../detail/saturate.hpp"
#include "../../detail/stripes.hpp"
#include "../../events.hpp"
#include "../../reason.hpp"
#include "../../token_bucket.hpp"
#include "../../validation.hpp"
#include "../options.hpp"
#include "../result.hpp"
#include "health.hpp"
#include "local.hpp"
#include "script.hpp"

namespace resil::redis::detail {

/// How a path's round trip ended.
enum class asked : std::uint8_t {
    answered,  ///< Redis decided (the answer)
    failed,    ///< Redis could not decide: the failure policy applies
    no_time,   ///< the caller's deadline left no time to ask (nothing is wrong with Redis)
};

/// Instead of Redis's TIME: none (the tests' override is an instant in µs).
inline constexpr std::int64_t no_time_override = -1;

/// One decision in progress: what was asked, and what its steps decided.
struct decision {
    std::string_view key;
    std::int64_t n = 1;
    time_point until = time_point::max();
    bool waiting = false;  ///< acquire(): permits that exist by `until` are reserved, then waited for
    std::int64_t now_override = no_time_override;

    // Planned by begin().
    bool refill = false;      ///< this decision refills the lease
    std::int64_t want = 0;    ///< permits to take when there is room (≥ n: a lease's)
    std::int64_t look_us = 0; ///< the lookahead: what is left of the deadline, when waiting
    time_point start{};       ///< when it began; read only when waiting

    // Decided (`result`), or a wait until `wake`, then woke().
    rate_limit_result result{};
    bool waits = false;
    time_point wake{};

    // What woke() finishes: a reservation in Redis, or the fallback bucket's.
    bool reserved_in_redis = false;
    time_point replied{};
    std::int64_t remaining = 0;
    std::int64_t reset_ns = 0;
    token_bucket::pending_acquire fallback{};
};

/// What a pipeline call does with its decision: go ahead, or a rejection.
struct call_verdict {
    bool admitted = true;
    resil::reason why = reason::none;
    std::optional<duration> retry_after{};
};

/// A key of another quota, built on the stack: no allocation per call.
struct key_text {
    char data[2 * rate_limiter_options::max_key_length + 2];
    std::size_t size = 0;
    [[nodiscard]] std::string_view view() const noexcept { return {data, size}; }
};

/// The limiter's state and decision steps. Thread-safe.
class limiter_core {
public:
    static constexpr std::int64_t max_lookahead_us = std::int64_t{1} << 49;  // 18 years

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit limiter_core(rate_limiter_options options)
        : options_(validated(std::move(options))),
          key_(options_.key_prefix + "{" + options_.key + "}"),
          params_(resil::detail::gcra::make_params(options_.rate, options_.burst)),
          constants_(params_),
          local_(fallback_options(options_)),
          health_(options_.reconnect_backoff, options_.reconnect_backoff_max) {
        resil::detail::watch_forks();  // a forked child opens connections of its own
    }

    limiter_core(const limiter_core&) = delete;
    limiter_core& operator=(const limiter_core&) = delete;

    [[nodiscard]] const rate_limiter_options& options() const noexcept { return options_; }
    [[nodiscard]] const std::string& key() const noexcept { return key_; }
    [[nodiscard]] const resil::detail::gcra::params& params() const noexcept { return params_; }
    [[nodiscard]] const script_constants& constants() const noexcept { return constants_; }
    [[nodiscard]] const token_bucket& fallback_bucket() const noexcept { return local_; }
    [[nodiscard]] const detail::health& health() const noexcept { return health_; }

    struct counters {
        std::atomic<std::uint64_t> granted{0}, rejected{0}, round_trips{0}, lease_grants{0}, store_failures{0},
            fail_open_admitted{0}, fail_open_rejected{0}, fail_closed_rejected{0}, connects{0}, script_loads{0},
            error_replies{0}, no_time{0}, redirections{0}, map_refreshes{0};
    };
    // Each thread counts in its own stripe: no cache line written by every
    // decision of every thread (lease grants take ~100 ns).
    static void bump(std::atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
    [[nodiscard]] counters& count() const noexcept { return counters_.local(); }

    /// A reply that is no NOSCRIPT, as both paths take it: an error reply
    /// (counted, remembered: the failure policy applies) or the answer
    /// (a round trip, Redis up).
    asked take_reply(reading& r, script_answer& out) const {
        if (r.kind != reply_kind::answer) {
            bump(count().error_replies);
            health_.remember(std::move(r.error));
            return asked::failed;
        }
        bump(count().round_trips);
        health_.mark_up();
        out = r.answer;
        return asked::answered;
    }

    [[nodiscard]] rate_limiter_metrics metrics() const noexcept {
        rate_limiter_metrics m;
        for (std::size_t i = 0; i < counters_.size(); ++i) {
            const counters& c = counters_[i];
            auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
            m.granted += get(c.granted);
            m.rejected += get(c.rejected);
            m.round_trips += get(c.round_trips);
            m.lease_grants += get(c.lease_grants);
            m.store_failures += get(c.store_failures);
            m.fail_open_admitted += get(c.fail_open_admitted);
            m.fail_open_rejected += get(c.fail_open_rejected);
            m.fail_closed_rejected += get(c.fail_closed_rejected);
            m.connects += get(c.connects);
            m.script_loads += get(c.script_loads);
            m.error_replies += get(c.error_replies);
            m.no_time += get(c.no_time);
            m.redirections += get(c.redirections);
            m.map_refreshes += get(c.map_refreshes);
        }
        return m;
    }

    /// The answers that need no round trip: a stop already requested (when
    /// waiting), n = 0, n > burst. A negative n throws std::invalid_argument.
    std::optional<rate_limit_result> screen(std::int64_t n, bool waiting, const std::stop_token& stop) const {
        if (waiting && stop.stop_requested()) return rate_limit_result{rate_limit_status::cancelled, {}, {}, decided_by::none};
        if (n < 0)
            throw std::invalid_argument("resil::redis::rate_limiter: cannot take a negative number of permits, got " +
                                        std::to_string(n));
        if (n == 0) return rate_limit_result{};
        if (n > options_.burst) return rate_limit_result{rate_limit_status::exceeds_burst, {}, {}, decided_by::none};
        return std::nullopt;
    }

    /// The Redis key of another quota (key_prefix + "{" + key + "}"); throws
    /// std::invalid_argument for a key validate() would refuse.
    key_text keyed(std::string_view key) const {
        if (!valid_key_text(key, false)) {
            throw std::invalid_argument(
                resil::detail::concat({"resil::redis::rate_limiter: ", bad_key("key", key, false)->message()}));
        }
        key_text out;
        const std::string_view prefix = options_.key_prefix;
        std::memcpy(out.data, prefix.data(), prefix.size());
        out.data[prefix.size()] = '{';
        std::memcpy(out.data + prefix.size() + 1, key.data(), key.size());
        out.data[prefix.size() + 1 + key.size()] = '}';
        out.size = prefix.size() + key.size() + 2;
        return out;
    }

    /// The decision's first step: true when it is decided (d.result)
    /// without a round trip (screen(), or from the lease); otherwise its
    /// round trip is planned (want, lookahead).
    bool begin(decision& d, const std::stop_token& stop) const {
        if (auto early = screen(d.n, d.waiting, stop)) {
            d.result = *early;
            return true;
        }
        // Leases belong to the limiter's own key.
        const bool leasing = options_.lease > 1 && !d.waiting && d.key.data() == key_.data();
        if (leasing) {
            const auto now_ns = steady_ns();
            if (const auto left = lease_.spend(d.n, now_ns); left >= 0) {
                bump(count().granted);
                bump(count().lease_grants);
                d.result = lease_.grant(left, now_ns, options_.burst);
                return true;
            }
        }
        d.refill = leasing && d.n < options_.lease && lease_.start_refill();
        d.want = d.refill ? options_.lease : d.n;
        // Read only when waiting: a clock read costs ~0.1 µs when the thread
        // has just slept on a reply (the clock's page has gone cold).
        if (d.waiting) {
            d.start = steady_clock{}.now();
            const auto left = d.until == time_point::max() ? max_lookahead_us
                              : d.until <= d.start
                                  ? 0
                                  : std::chrono::duration_cast<std::chrono::microseconds>(d.until - d.start).count();
            d.look_us = left < max_lookahead_us ? left : max_lookahead_us;
        }
        if (d.now_override == no_time_override) d.now_override = fixed_now_us_.load(std::memory_order_relaxed);
        return false;
    }

    /// After the round trip: the result (d.result), or a wait until d.wake
    /// (the permits reserved in Redis, or in the fallback bucket), after
    /// which woke() finishes the decision.
    void answered(decision& d, asked how, const script_answer& a, const std::stop_token& stop) const {
        const bool ok = how == asked::answered;
        std::int64_t leased = 0;
        if (d.refill) {
            if (ok && a.taken > d.n) leased = a.taken - d.n;
            lease_.end_refill(leased, a.remaining, a.reset_ns, options_.lease_ttl);
        }
        if (how == asked::no_time) {
            bump(count().no_time);
            d.result = {rate_limit_status::no_time, {}, {}, decided_by::none};
            return;
        }
        if (!ok) return fail(d, stop);
        if (a.taken == 0) {
            bump(count().rejected);
            d.result = rejected(a);
            return;
        }
        // The permits leased beyond n are this process's to spend: still in
        // the quota as far as its callers are concerned.
        const std::int64_t remaining = leased > options_.burst - a.remaining ? options_.burst : a.remaining + leased;
        if (a.wait_ns <= 0) {
            bump(count().granted);
            d.result = {rate_limit_status::granted, {}, {}, decided_by::redis, remaining, duration{a.reset_ns}};
            return;
        }
        // A reservation: the permits exist wait_ns after the script ran,
        // which was before the reply came; waiting from the reply errs late,
        // never past the deadline.
        // (read_answer bounds wait_ns by the lookahead, itself bounded by
        // the deadline; the sum saturates all the same.)
        d.replied = steady_clock{}.now();
        d.wake = resil::detail::saturating_add(d.replied, duration{a.wait_ns});
        if (d.wake > d.until) d.wake = d.until;
        d.reserved_in_redis = true;
        d.remaining = remaining;
        d.reset_ns = a.reset_ns;
        d.waits = true;
    }

    /// After the wait answered() asked for: `reached` false when it was cut
    /// short (the stop token, a cancellation): a reservation in Redis is
    /// forfeited (errs on the side of the limit), the fallback's goes back.
    void woke(decision& d, bool reached) const {
        d.waits = false;
        if (!d.reserved_in_redis) {
            d.result = fallback_result(local_.finish_acquire(d.fallback, reached));
            return;
        }
        if (!reached) {
            d.result = {rate_limit_status::cancelled, {}, {}, decided_by::redis};
            return;
        }
        bump(count().granted);
        // Where the quota stood at the decision; its reset counted down since.
        const auto woke_at = steady_clock{}.now();
        const auto reset_at = resil::detail::saturating_add(d.replied, duration{d.reset_ns});
        d.result = {rate_limit_status::granted, woke_at - d.start, {}, decided_by::redis, d.remaining,
                    reset_at > woke_at ? reset_at - woke_at : duration::zero()};
    }

    /// A pipeline call's decision: one permit within the call's deadline;
    /// with options().max_wait > 0, waiting up to that long (never past the
    /// deadline).
    template <class Context>
    decision for_call(const Context& ctx) const {
        if constexpr (requires { typename Context::clock_type; })
            static_assert(std::is_same_v<typename Context::clock_type, steady_clock>,
                          "resil::redis::rate_limiter: the pipeline's clock must be resil::steady_clock (Redis runs in real time)");
        decision d;
        d.key = key_;
        d.until = ctx.deadline_instant();
        if (options_.max_wait > std::chrono::milliseconds::zero()) {
            const auto patience = resil::detail::saturating_add(steady_clock{}.now(), duration{options_.max_wait});
            if (patience < d.until) d.until = patience;
            d.waiting = true;
        }
        return d;
    }

    /// What a pipeline call does with its decision, the events emitted: as
    /// token_bucket, reason::rate_limited with the wait; failing closed,
    /// reason::quota_unavailable; no time left, reason::deadline_exceeded;
    /// every decision Redis could not make, events::quota_store_failed.
    template <class Context>
    call_verdict verdict_for_call(Context& ctx, const rate_limit_result& r) const {
        if constexpr (requires { ctx.clear_cached_now(); }) ctx.clear_cached_now();  // a round trip took time
        if (r.source == decided_by::fallback)
            ctx.emit(events::quota_store_failed{options_.on_failure == failure_policy::fail_open, r.granted()});
        switch (r.status) {
            case rate_limit_status::granted: return {};
            case rate_limit_status::cancelled:
                ctx.emit(events::rejected{reason::cancelled, std::nullopt});
                return {false, reason::cancelled, std::nullopt};
            case rate_limit_status::unavailable:
                ctx.emit(events::rejected{reason::quota_unavailable, std::nullopt});
                return {false, reason::quota_unavailable, std::nullopt};
            case rate_limit_status::no_time:  // as a deadline_policy with no time left for an attempt
                ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
                return {false, reason::deadline_exceeded, std::nullopt};
            case rate_limit_status::rejected:
            case rate_limit_status::exceeds_burst: break;
        }
        ctx.emit(events::rejected{reason::rate_limited, r.wait});
        return {false, reason::rate_limited, r.wait};
    }

    /// For tests only: decisions asked without an instant of their own run
    /// at this Redis time (µs since the script's epoch; no_time_override:
    /// TIME), so that both paths can be compared at the same instants.
    void fix_redis_time(std::int64_t now_us) const noexcept { fixed_now_us_.store(now_us, std::memory_order_relaxed); }

private:
    static rate_limiter_options validated(rate_limiter_options o) {
        throw_if_invalid("resil::redis::rate_limiter", o.validate());
        return o;
    }

    // The local bucket's rounding of the wait into Retry-After (detail/gcra.hpp).
    static rate_limit_result rejected(const script_answer& a) noexcept {
        // At most 2^61 ns (read_answer caps it): Retry-After cannot overflow.
        const std::int64_t wait_ns = a.wait_ns < 1 ? 1 : a.wait_ns;
        return {rate_limit_status::rejected, duration{wait_ns},
                std::chrono::seconds{resil::detail::gcra::retry_after_seconds(wait_ns)}, decided_by::redis,
                a.remaining, duration{a.reset_ns}};
    }

    // Redis could not decide: the failure policy. Failing open, the
    // fallback bucket decides (waiting for its tokens when the decision
    // waits: woke() finishes it).
    void fail(decision& d, const std::stop_token& stop) const {
        bump(count().store_failures);
        if (options_.on_failure == failure_policy::fail_closed) {
            bump(count().fail_closed_rejected);
            d.result = {rate_limit_status::unavailable, {}, {}, decided_by::fallback};
            return;
        }
        if (d.waiting) {
            d.fallback = local_.start_acquire(resil::deadline::at(d.until), d.n, stop);
            if (d.fallback.waits()) {
                d.reserved_in_redis = false;
                d.wake = d.fallback.until();
                d.waits = true;
                return;
            }
            d.result = fallback_result(d.fallback.result());
            return;
        }
        d.result = fallback_result(local_.try_acquire(d.n));
    }

    rate_limit_result fallback_result(const token_bucket_result& r) const noexcept {
        if (r) {
            bump(count().granted);
            bump(count().fail_open_admitted);
            return with_local_state(local_, {rate_limit_status::granted, r.wait, {}, decided_by::fallback});
        }
        bump(count().fail_open_rejected);
        switch (r.status) {
            case token_bucket_status::rejected:
                bump(count().rejected);
                return with_local_state(local_,
                                        {rate_limit_status::rejected, r.wait, r.retry_after, decided_by::fallback});
            case token_bucket_status::cancelled: return {rate_limit_status::cancelled, {}, {}, decided_by::fallback};
            default: return with_local_state(local_, {rate_limit_status::exceeds_burst, {}, {}, decided_by::fallback});
        }
    }

    rate_limiter_options options_;
    std::string key_;
    resil::detail::gcra::params params_;  // the script's arithmetic is the local bucket's
    script_constants constants_;
    token_bucket local_;
    lease lease_;
    detail::health health_;
    resil::detail::stripes<counters> counters_;
    mutable std::atomic<std::int64_t> fixed_now_us_{no_time_override};
};

}  // namespace resil::redis::detail
