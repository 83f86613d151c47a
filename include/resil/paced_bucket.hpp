// resil/paced_bucket.hpp — a token bucket whose rate and burst follow what
// the server advertises in its rate-limit fields (RateLimit in each draft's
// shape, RateLimit-*, X-RateLimit-*, x-rate-limit-*, x-ratelimit-*-requests,
// anthropic-ratelimit-*: read by resil/rate_limit_fields.hpp, the most restrictive
// quota of them), so a batch caller slows down before the 429 rather than
// after it.
//
//   resil::paced_bucket pace{{.rate = 10, .burst = 10}};      // until a server says more
//
//   // Directly (or from an asynchronous pipeline): the decision core.
//   if (auto r = pace.try_acquire(); !r) wait(r.wait);         // never sleeps itself
//   auto resp = call();
//   pace.observe([&](std::string_view n) { return resp.header(n); });   // any letter case
//
//   // In a pipeline: waits up to max_wait for a token, then reason::rate_limited;
//   // a result with header(name) (resil::curl::response) updates the pace itself.
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(pace));
//
// What a response changes (update()):
//   remaining r > 0, reset in t > 0 s   pace r / t per second (spread what is left
//                                        evenly until the quota comes back), burst
//                                        rate × burst_window, at least 1, at most r;
//   remaining 0, reset in t             no token before t from now (at most
//                                        max_pause), then the pace as it was;
//   anything else                        nothing (no quota, no reset, a reset of 0).
// A pace outside [min_rate, max_rate] is clamped there: a quota claiming a
// billion requests a second, or one a year, neither floods the server nor
// stalls the client (the rate is never 0). A pace raised to min_rate still
// grants at most the r tokens that remain: the one that spends them pauses
// the bucket until the reset (at most max_pause), as remaining 0 would.
// Rates are rounded to a whole number of nanoseconds per token, upwards:
// never faster than advertised.
//
// The same GCRA arithmetic as resil::token_bucket (detail/gcra.hpp), with
// time counted in nanoseconds (f = 1) so the theoretical arrival time keeps
// its meaning when the rate changes. Lock-free: the state is two atomic words,
// the TAT and the parameters (ns per token | burst), each changed by
// compare-and-swap; a change of pace rescales what is owed (the TAT ahead of
// now) from the old interval to the new one. The core never sleeps: try_acquire() answers at once
// (with a reservation within `lookahead`, whose wait the caller performs).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "detail/gcra.hpp"
#include "detail/platform.hpp"
#include "detail/saturate.hpp"
#include "detail/stripes.hpp"
#include "events.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "rate_limit_fields.hpp"
#include "rate_limit_decision.hpp"
#include "token_bucket.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a paced_bucket; the defaults are the documented ones.
struct paced_bucket_options {
    /// Tokens per second until a response says otherwise, in [min_rate, max_rate]. Default 10.
    double rate = 10.0;
    /// Tokens when full until a response says otherwise, in [1, largest_burst]. Default 10.
    std::int64_t burst = 10;
    /// The slowest pace a response may set, in [1e-4, max_rate]. Default 1e-4
    /// per second (one token in 10,000 s, about 2.8 h): slower quotas are
    /// raised to it, but then grant at most what remains before their reset.
    double min_rate = 1e-4;
    /// The fastest pace a response may set, in [min_rate, 1e6]. Default 1e6 per second.
    double max_rate = 1e6;
    /// A response's burst: this much time at its pace (at least 1 token, at
    /// most what remains), in [0, 1 h]. Default 1 s.
    duration burst_window = std::chrono::seconds{1};
    /// The longest pause an exhausted quota imposes, in [0, 24 h]; a longer
    /// reset is cut to it. Default 5 min.
    duration max_pause = std::chrono::minutes{5};
    /// In a pipeline only: how long a call may wait for its token (never past
    /// its deadline), in [0, 1 h]. Default 1 s: a paced client waits.
    duration max_wait = std::chrono::seconds{1};

    /// The largest `burst` validate() accepts.
    static constexpr std::int64_t largest_burst = 1'000'000;

    /// The first field outside its range: "`min_rate` must be in [0.01, 1e6], got 0".
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const paced_bucket_options&, const paced_bucket_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result paced_bucket_options::validate() const {
    if (auto bad = detail::check_in_range("min_rate", min_rate, 1e-4, 1e6)) return bad;
    if (auto bad = detail::check_that(max_rate >= min_rate && max_rate <= 1e6, "max_rate",
                                      {"in [min_rate, 1e6] = [", detail::format_option_value(min_rate), ", 1e6]"},
                                      max_rate))
        return bad;
    if (auto bad = detail::check_that(rate >= min_rate && rate <= max_rate, "rate",
                                      {"in [min_rate, max_rate] = [", detail::format_option_value(min_rate), ", ",
                                       detail::format_option_value(max_rate), "]"},
                                      rate))
        return bad;
    if (auto bad = detail::check_in_range("burst", burst, std::int64_t{1}, largest_burst)) return bad;
    if (auto bad = detail::check_in_range("burst_window", burst_window, duration::zero(), duration{std::chrono::hours{1}}))
        return bad;
    if (auto bad = detail::check_in_range("max_pause", max_pause, duration::zero(), duration{std::chrono::hours{24}}))
        return bad;
    return detail::check_in_range("max_wait", max_wait, duration::zero(), duration{std::chrono::hours{1}});
}
#endif

/// What a paced_bucket has done since construction.
struct paced_bucket_metrics {
    double rate = 0.0;          ///< now
    std::int64_t burst = 0;     ///< now
    std::uint64_t rate_changes = 0;  ///< updates that changed the rate or the burst
    std::uint64_t pauses = 0;        ///< exhausted quotas that pushed the next token back
};

/// A token bucket paced by the server's rate-limit fields, on `Clock`.
/// Thread-safe and lock-free; members are const. Not copyable.
template <clock Clock = steady_clock>
class basic_paced_bucket {
public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit basic_paced_bucket(paced_bucket_options options = {}, Clock clock = {})
        : options_(validated(options)), clock_(std::move(clock)), origin_(clock_.now()) {
        params_.store(pack(interval_of(options_.rate), options_.burst), std::memory_order_relaxed);
    }
    basic_paced_bucket(const basic_paced_bucket&) = delete;
    basic_paced_bucket& operator=(const basic_paced_bucket&) = delete;

    /// One token at `now` if there is one; with `lookahead` > 0, also one
    /// that will exist within it (reserved: the result is `granted` with the
    /// `wait` the caller must let pass before sending). Never sleeps. The
    /// answer says where the bucket stands after it (`remaining`, `reset`:
    /// resil/rate_limit_decision.hpp), at the pace in force.
    /// Always inlined: `remaining` and `reset` cost a division that the
    /// compiler drops where they are not read.
    [[nodiscard]] RESIL_DETAIL_ALWAYS_INLINE rate_limit_decision try_acquire(
        time_point now, duration lookahead = duration::zero()) const noexcept {
        const auto p = params_of(params_.load(std::memory_order_relaxed));
        const auto elapsed = elapsed_ns(now);
        const auto ahead = std::clamp<std::int64_t>(lookahead.count(), 0, detail::gcra::max_lookahead_ns);
        auto tat = tat_.load(std::memory_order_relaxed);
        for (;;) {
            const auto d = detail::gcra::decide(p, tat, elapsed, 1, ahead);
            if (!d.conforming) return rejected(p, d.ready_at - elapsed, tat, elapsed);
            if (tat_.compare_exchange_weak(tat, d.new_tat, std::memory_order_relaxed)) {
                if (quota_left_.load(std::memory_order_relaxed) > 0) spend_quota(elapsed);
                const auto wait = d.ready_at - elapsed;
                return standing(p, {rate_limit_status::granted, duration{wait > 0 ? wait : 0}, {}}, d.new_tat, elapsed);
            }
        }
    }
    /// A token now, or the wait until the next one: never waits itself. Paused
    /// (the server said the quota is spent), it refuses until the reset.
    [[nodiscard]] RESIL_DETAIL_ALWAYS_INLINE rate_limit_decision try_acquire() const noexcept {
        return try_acquire(clock_.now());
    }

    /// Follows what one response said about the quota (see the banner), as of
    /// `now` on this bucket's clock. Returns the change, if any.
    std::optional<events::pace_changed> update(const rate_limit_info& info, time_point now) const noexcept {
        if (!info.remaining || !info.reset) return std::nullopt;
        if (*info.remaining == 0) return pause(*info.reset, now);
        if (info.reset->count() <= 0) return std::nullopt;
        const double seconds = std::chrono::duration<double>(*info.reset).count();
        const double advertised = static_cast<double>(*info.remaining) / seconds;
        const double rate = std::clamp(advertised, options_.min_rate, options_.max_rate);
        // Raised to min_rate: count down the r tokens left until the reset.
        if (advertised < rate) {
            quota_reset_.store(detail::saturating_add(elapsed_ns(now), info.reset->count()), std::memory_order_relaxed);
            quota_left_.store(*info.remaining, std::memory_order_relaxed);
        } else {
            quota_left_.store(-1, std::memory_order_relaxed);
        }
        const auto interval = interval_of(rate);
        const double burst_tokens = std::floor(std::chrono::duration<double>(options_.burst_window).count() * rate);
        const auto burst = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(burst_tokens, 1e6)), 1,
                                                    std::min(*info.remaining, paced_bucket_options::largest_burst));
        const auto word = pack(interval, burst);
        const auto old = params_.exchange(word, std::memory_order_relaxed);
        if (old == word) return std::nullopt;
        rescale_debt(params_of(old), params_of(word), elapsed_ns(now));
        rate_changes_.fetch_add(1, std::memory_order_relaxed);
        return events::pace_changed{rate_of(interval), burst, duration::zero(), next_generation()};
    }

    /// update() from a response's header fields (`lookup`: as for
    /// resil::read_rate_limit), received at `now` on this bucket's clock and
    /// `wall` on the system clock (for Unix-time resets).
    template <header_lookup Lookup>
    std::optional<events::pace_changed> observe(const Lookup& lookup, time_point now,
                                                std::chrono::system_clock::time_point wall) const noexcept {
        return update(read_rate_limit(lookup, wall), now);
    }
    /// observe() at the clock's reading and the system clock's.
    template <header_lookup Lookup>
    std::optional<events::pace_changed> observe(const Lookup& lookup) const noexcept {
        return observe(lookup, clock_.now(), std::chrono::system_clock::now());
    }

    /// Tokens per second now.
    [[nodiscard]] double rate() const noexcept { return rate_of(params_of(params_.load(std::memory_order_relaxed)).token_units); }
    /// Tokens when full now.
    [[nodiscard]] std::int64_t burst() const noexcept { return params_of(params_.load(std::memory_order_relaxed)).burst; }
    /// Whole tokens available at `now`.
    [[nodiscard]] std::int64_t available(time_point now) const noexcept {
        return detail::gcra::whole_tokens(params_of(params_.load(std::memory_order_relaxed)),
                                          tat_.load(std::memory_order_relaxed), elapsed_ns(now));
    }
    /// A snapshot of its counts now.
    [[nodiscard]] paced_bucket_metrics metrics() const noexcept {
        return {rate(), burst(), rate_changes_.load(std::memory_order_relaxed), pauses_.load(std::memory_order_relaxed)};
    }
    /// The options it was built with.
    [[nodiscard]] const paced_bucket_options& options() const noexcept { return options_; }
    /// The clock it reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// As a pipeline policy: one token per attempt, waiting up to max_wait
    /// (within the call's deadline and stop token) — reason::rate_limited
    /// with the wait as retry_after when none comes in time, reason::cancelled
    /// when the stop token fires during the wait (the reserved token is then
    /// forfeited: erring on the side of the limit). When the result has
    /// `header(name)` (resil::curl::response), its rate-limit fields update
    /// the pace; a change is emitted as events::pace_changed.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);  // the steps below, driven blocking
    }

    /// What the policy keeps during a call (policy_steps.hpp): whether the
    /// context reads the bucket's time line.
    class admission {
    private:
        friend class basic_paced_bucket;
        bool shared_ = false;
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = admission;

    /// The policy's first step: takes a token, or reserves one that will
    /// exist within max_wait (never past the call's deadline) and asks to
    /// wait until then, or refuses the call with reason::rate_limited and
    /// the wait as retry_after (emitting events::rejected).
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        a.shared_ = detail::context_reads(ctx, clock_);
        const auto now = a.shared_ ? ctx.cached_now() : clock_.now();
        const auto patience = detail::saturating_add(now, options_.max_wait);
        const auto until = std::min(patience, ctx.deadline_instant());
        const auto r = try_acquire(now, until > now ? until - now : duration::zero());
        if (!r) {
            ctx.emit(events::rejected{reason::rate_limited, r.wait});
            return layer_in::refuse(reason::rate_limited, r.wait);
        }
        if (r.wait > duration::zero()) return layer_in::wait_until(detail::saturating_add(now, r.wait));
        return layer_in::proceed();
    }

    /// After the wait enter() asked for: `reached` false when the stop token
    /// fired (the reserved token is forfeited: erring on the side of the
    /// limit; the call is refused with reason::cancelled).
    template <class Context>
    layer_in waited(Context& ctx, admission&, bool reached) const {
        ctx.clear_cached_now();
        if (reached) return layer_in::proceed();
        ctx.emit(events::rejected{reason::cancelled, std::nullopt});
        return layer_in::refuse(reason::cancelled);
    }

    /// The policy's last step: a result with `header(name)` updates the pace
    /// from its rate-limit fields, emitting events::pace_changed.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, admission& a, Outcome& out) const {
        if constexpr (requires { out->header(std::string_view{}); }) {
            if (out.has_value()) {
                // header(name, index) too, where the result has it: a
                // RateLimit field on several lines is read whole.
                const auto lookup = detail::fields_lookup<std::remove_cvref_t<decltype(*out)>>{&*out};
                if (const auto change = observe(lookup, a.shared_ ? ctx.cached_now() : clock_.now(),
                                                std::chrono::system_clock::now()))
                    ctx.emit(*change);
            }
        }
        return layer_out::proceed();
    }

private:
    static const paced_bucket_options& validated(const paced_bucket_options& o) {
        throw_if_invalid("resil::paced_bucket", o.validate());
        return o;
    }

    // The parameters' word: ns per token (44 bits: ≤ 1e13 at 1e-4 per second) | burst (20 bits: ≤ 1e6).
    static constexpr int interval_bits = 44;
    static constexpr std::uint64_t pack(std::int64_t interval_ns, std::int64_t burst) noexcept {
        return static_cast<std::uint64_t>(interval_ns) | static_cast<std::uint64_t>(burst) << interval_bits;
    }
    // GCRA's constants with one unit per nanosecond (f = 1), so TAT is in ns.
    static constexpr detail::gcra::params params_of(std::uint64_t word) noexcept {
        detail::gcra::params p;
        p.token_units = static_cast<std::int64_t>(word & ((std::uint64_t{1} << interval_bits) - 1));
        p.burst = static_cast<std::int64_t>(word >> interval_bits);
        // ≤ 1e6 · 1e13 fits 64 unsigned bits; capped at about 18 years so the TAT stays far from overflow.
        const auto tolerance = static_cast<std::uint64_t>(p.burst) * static_cast<std::uint64_t>(p.token_units);
        p.tolerance = static_cast<std::int64_t>(std::min<std::uint64_t>(tolerance, detail::gcra::max_lookahead_ns));
        p.units_per_ns_q32 = detail::gcra::one_q32;
        p.ns_per_unit_q64 = 0;
        return p;
    }
    static std::int64_t interval_of(double rate) noexcept {
        return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(1e9 / rate)));
    }
    static double rate_of(std::int64_t interval_ns) noexcept { return 1e9 / static_cast<double>(interval_ns); }

    std::uint64_t next_generation() const noexcept { return generation_.fetch_add(1, std::memory_order_relaxed) + 1; }

    // No token before `now + reset` (capped at max_pause): TAT such that the
    // next token is due exactly then, unless it is already due later.
    std::optional<events::pace_changed> pause(duration reset, time_point now) const noexcept {
        const auto wait = std::clamp(reset, duration::zero(), options_.max_pause);
        if (wait <= duration::zero()) return std::nullopt;
        const auto p = params_of(params_.load(std::memory_order_relaxed));
        const auto target = elapsed_ns(now) + wait.count() + p.tolerance - p.token_units;
        auto tat = tat_.load(std::memory_order_relaxed);
        do {
            if (tat >= target) return std::nullopt;
        } while (!tat_.compare_exchange_weak(tat, target, std::memory_order_relaxed));
        pauses_.fetch_add(1, std::memory_order_relaxed);
        return events::pace_changed{rate_of(p.token_units), p.burst, wait, next_generation()};
    }

    // A quota raised to min_rate: the grant that takes its last token pauses
    // the bucket until the reset (at most max_pause).
    void spend_quota(std::int64_t elapsed) const noexcept {
        const auto until = quota_reset_.load(std::memory_order_relaxed);
        if (elapsed >= until) {  // past the reset: the quota no longer binds
            quota_left_.store(-1, std::memory_order_relaxed);
            return;
        }
        if (quota_left_.fetch_sub(1, std::memory_order_relaxed) == 1)
            (void)pause(duration{until - elapsed}, origin_ + duration{elapsed});
    }

    // The TAT is in ns, so tokens owed at the old pace would be repaid at the
    // old pace: a faster pace would wait out the slow one's debt. Keep the
    // debt in tokens instead (ns × new / old interval), at most a full burst.
    void rescale_debt(const detail::gcra::params& from, const detail::gcra::params& to, std::int64_t now) const noexcept {
        auto tat = tat_.load(std::memory_order_relaxed);
        std::int64_t next = 0;
        do {
            if (tat <= now) return;  // no debt
            const double owed = static_cast<double>(tat - now) / static_cast<double>(from.token_units);
            const double scaled = std::min(owed * static_cast<double>(to.token_units), static_cast<double>(to.tolerance));
            next = now + static_cast<std::int64_t>(std::ceil(scaled));
            if (next == tat) return;
        } while (!tat_.compare_exchange_weak(tat, next, std::memory_order_relaxed));
    }

    // `r` with where the bucket stands at `elapsed` given `tat`, at the pace
    // `p` the decision used (time in ns: a unit is a nanosecond). Pure:
    // dropped by callers that ignore it.
    static rate_limit_decision standing(const detail::gcra::params& p, rate_limit_decision r, std::int64_t tat,
                                        std::int64_t elapsed) noexcept {
        r.source = decided_by::local;
        r.remaining = detail::gcra::whole_tokens(p, tat, elapsed);
        const auto next = detail::gcra::next_token_at(p, tat, elapsed);
        r.reset = next == 0 ? duration::zero() : duration{next - elapsed};
        return r;
    }

    static rate_limit_decision rejected(const detail::gcra::params& p, std::int64_t wait_ns, std::int64_t tat,
                                        std::int64_t elapsed) noexcept {
        return standing(p,
                        {rate_limit_status::rejected, duration{wait_ns > 0 ? wait_ns : 1},
                         std::chrono::seconds{detail::gcra::retry_after_seconds(wait_ns)}},
                        tat, elapsed);
    }

    std::int64_t elapsed_ns(time_point now) const noexcept {
        return detail::gcra::elapsed_ns(now.time_since_epoch().count(), origin_.time_since_epoch().count());
    }

    paced_bucket_options options_;
    [[no_unique_address]] Clock clock_;
    time_point origin_;
    // The theoretical arrival time in ns since origin_ (0: full at the origin).
    alignas(detail::stripe_alignment) mutable std::atomic<std::int64_t> tat_{0};
    mutable std::atomic<std::uint64_t> params_{0};
    // A quota raised to min_rate: tokens left before its reset (-1: none), and the reset in ns since origin_.
    mutable std::atomic<std::int64_t> quota_left_{-1};
    mutable std::atomic<std::int64_t> quota_reset_{0};
    alignas(detail::stripe_alignment) mutable std::atomic<std::uint64_t> rate_changes_{0};
    mutable std::atomic<std::uint64_t> pauses_{0};
    mutable std::atomic<std::uint64_t> generation_{0};
};

/// A paced bucket on the real monotonic clock.
using paced_bucket = basic_paced_bucket<>;

}  // namespace resil
