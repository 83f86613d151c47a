// resil/adaptive_throttle.hpp — client-side adaptive throttling (Google's
// SRE book, "Handling Overload"): when the dependency has been refusing work,
// refuse some locally instead of sending it.
//
//   resil::adaptive_throttle throttle{{.k = 2.0, .window = 2min}};
//
//   // Directly (or from an asynchronous pipeline): the decision core.
//   if (auto ticket = throttle.try_acquire()) {
//       auto r = call();
//       throttle.record(std::move(ticket), resil::load_signal_of(classify(r).verdict));
//   } else {
//       return plan_b();                                   // reason::throttled
//   }
//
//   // In a pipeline: reason::throttled, counted per attempt (inside the retry).
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(throttle));
//
// Each request is rejected locally with probability
//     max(0, (requests − k · accepts) / (requests + 1))
// over the last `window` (2 min by default): requests are everything the
// application asked for, the local rejections included; accepts are answers
// that are not overload signals (options.overload_verdicts: 429, 503,
// timeouts by default). Where the book counts the requests attempted, a
// request sent is counted here when its answer is recorded (the same counts
// once the answers are in, a call's latency later), and one whose end
// teaches nothing (cancelled, or refused by a policy before it was sent:
// load_signal::ignored) is not counted: it never asked the dependency. While the dependency accepts everything, nothing is
// rejected; when it accepts only a fraction a, the requests that still reach
// it settle near k · accepts: with k = 2 the client sends about twice what
// the dependency accepts, instead of the full offered load. Larger k is more
// lenient (more wasted attempts, faster to notice recovery); k = 1 is the
// strictest. The probability stays below 1, so some requests always go
// through and recovery is seen.
//
// Lock-free: the counts are a rolling time window (detail/rolling_window.hpp:
// 10 buckets, per-thread stripes), "calls" counting requests and "failures"
// counting the ones not accepted; the random draw is this thread's jitter
// engine (or the caller's number in [0, 1)). A decision uses the probability
// as of at most window / 100 ago (1.2 s of a 2 min window), recomputed by the
// first call after that: adding the window up on every call would cost more
// than a clock read, and more with every stripe. No allocation after
// construction.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "clock.hpp"
#include "context.hpp"
#include "detail/platform.hpp"
#include "detail/rolling_window.hpp"
#include "detail/thread_jitter.hpp"
#include "events.hpp"
#include "jitter.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "validation.hpp"

namespace resil {

/// Options of an adaptive_throttle; the defaults are the documented ones.
struct adaptive_throttle_options {
    /// Requests allowed per accept before throttling starts, in [1, 1000].
    /// Default 2 (the SRE book's).
    double k = 2.0;
    /// The span the counts cover, in [min_window, max_window] = [10 ms, 24 h].
    /// Default 2 min.
    duration window = std::chrono::minutes{2};
    /// Verdicts that are not accepts. Default retryable and ambiguous.
    verdict_set overload_verdicts = default_overload_verdicts;

    ///@{
    /// The bounds validate() checks: min_X and max_X are the smallest and
    /// largest `X` it accepts.
    static constexpr duration min_window = std::chrono::milliseconds{10};
    static constexpr duration max_window = std::chrono::hours{24};
    ///@}

    /// The first field outside its range: "`k` must be in [1, 1000], got 0.5".
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const adaptive_throttle_options&, const adaptive_throttle_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result adaptive_throttle_options::validate() const {
    if (auto bad = detail::check_that(k >= 1.0 && k <= 1000.0, "k", "in [1, 1000]", k)) return bad;
    return detail::check_in_range("window", window, min_window, max_window);
}
#endif

/// The SRE formula: max(0, (requests − k · accepts) / (requests + 1)).
[[nodiscard]] constexpr double throttle_probability(std::uint64_t requests, std::uint64_t accepts, double k) noexcept {
    const double p = (static_cast<double>(requests) - k * static_cast<double>(accepts)) /
                     (static_cast<double>(requests) + 1.0);
    return p > 0.0 ? p : 0.0;
}

/// Requests and accepts in a throttle's window.
struct throttle_counts {
    /// Requests counted in the window (the `requests` of the SRE formula).
    std::uint64_t requests = 0;
    /// Requests the backend accepted in the window (`accepts`).
    std::uint64_t accepts = 0;
};

/// What an adaptive_throttle has done since construction.
struct adaptive_throttle_metrics {
    std::uint64_t requests = 0;   ///< asked for, throttled ones included
    std::uint64_t throttled = 0;  ///< rejected locally
    std::uint64_t accepts = 0;    ///< answered without an overload signal
};

/// Client-side adaptive throttling on `Clock`. Thread-safe and lock-free;
/// members are const, so pipelines share it by std::ref. Not copyable.
template <clock Clock = steady_clock>
class basic_adaptive_throttle {
public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// An admitted request, to hand to record() with its answer's signal.
    /// Destroyed unrecorded, it counts nothing (the request was not sent).
    class ticket {
    public:
        ticket() noexcept = default;
        /// Takes over `o`'s admission; `o` holds nothing after.
        ticket(ticket&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)) {}
        /// Drops the admission it holds (counting nothing), then takes over
        /// `o`'s.
        ticket& operator=(ticket&& o) noexcept {
            owner_ = std::exchange(o.owner_, nullptr);
            return *this;
        }
        ticket(const ticket&) = delete;
        ticket& operator=(const ticket&) = delete;
        /// True when the request may be sent: record() its answer.
        [[nodiscard]] bool admitted() const noexcept { return owner_ != nullptr; }
        /// admitted().
        explicit operator bool() const& noexcept { return admitted(); }
        explicit operator bool() const&& = delete;

    private:
        friend class basic_adaptive_throttle;
        explicit ticket(const basic_adaptive_throttle* o) noexcept : owner_(o) {}
        const basic_adaptive_throttle* owner_ = nullptr;
    };

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::adaptive_throttle: `k` must be in [1, 1000], got 0.5".
    explicit basic_adaptive_throttle(adaptive_throttle_options options = {}, Clock clock = {},
                                     std::size_t stripe_count = detail::default_stripe_count())
        : options_(validated(options)), clock_(std::move(clock)), window_(options_.window, stripe_count) {}
    basic_adaptive_throttle(const basic_adaptive_throttle&) = delete;
    basic_adaptive_throttle& operator=(const basic_adaptive_throttle&) = delete;

    /// Admits the request unless `u` (a uniform number in [0, 1)) falls below
    /// the rejection probability at `now`; a rejection is counted at once as
    /// a request not accepted. Never waits, never allocates.
    [[nodiscard]] ticket try_acquire(time_point now, double u) const noexcept {
        if (u < decision_probability(now)) return reject(now);
        return ticket{this};
    }
    /// try_acquire() drawing from this thread's jitter engine.
    [[nodiscard]] ticket try_acquire(time_point now) const noexcept {
        // The common case, a dependency accepting everything: no draw needed.
        const auto p = decision_probability(now);
        if (p <= 0.0) return ticket{this};
        if (unit_interval(detail::thread_jitter()) < p) return reject(now);
        return ticket{this};
    }
    /// try_acquire(now) at the clock's reading: admitted, or refused with
    /// probability max(0, (requests - k × accepts) / (requests + 1)).
    [[nodiscard]] ticket try_acquire() const noexcept { return try_acquire(clock_.now()); }

    /// Counts the admitted request with its answer at `now`: accepted or
    /// overload; `ignored` (and an empty ticket) counts nothing.
    void record(ticket&& t, load_signal s, time_point now) const noexcept {
        if (!std::exchange(t.owner_, nullptr) || s == load_signal::ignored) return;
        window_.record(now, s == load_signal::overload);
    }
    /// Counts the backend's answer to an admitted request at the clock's
    /// reading: accepted unless `s` is load_signal::overload. A refused ticket
    /// and load_signal::ignored count nothing.
    void record(ticket&& t, load_signal s) const noexcept {
        if (t && s != load_signal::ignored) record(std::move(t), s, clock_.now());
    }

    /// Requests and accepts in the window ending at `now`.
    [[nodiscard]] throttle_counts counts(time_point now) const noexcept {
        const auto c = window_.totals(now);
        return {c.calls, c.calls - std::min(c.failures, c.calls)};
    }
    /// The probability that a request at `now` is rejected locally, in [0, 1),
    /// from the window's counts now (try_acquire() uses it as of at most
    /// window / 100 ago: see the banner).
    [[nodiscard]] double rejection_probability(time_point now) const noexcept {
        const auto c = counts(now);
        return throttle_probability(c.requests, c.accepts, options_.k);
    }
    /// A snapshot of its counts now.
    [[nodiscard]] adaptive_throttle_metrics metrics() const noexcept {
        const auto life = window_.lifetime();
        adaptive_throttle_metrics m;
        m.requests = life.calls;
        m.accepts = life.calls - std::min(life.failures, life.calls);
        for (std::size_t i = 0; i < throttled_.size(); ++i) m.throttled += throttled_[i].load(std::memory_order_relaxed);
        return m;
    }
    /// The options it was built with.
    [[nodiscard]] const adaptive_throttle_options& options() const noexcept { return options_; }
    /// The clock it reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// As a pipeline policy: rejects with reason::throttled (events::rejected)
    /// or runs the rest of the pipeline and counts its answer. The steps
    /// below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What the policy holds during a call (policy_steps.hpp): its ticket,
    /// and whether the context reads the throttle's time line. A call that
    /// unwinds counts nothing.
    class admission {
    private:
        friend class basic_adaptive_throttle;
        ticket held_;
        bool shared_ = false;
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = admission;

    /// The policy's first step: admits the request, or refuses it with
    /// reason::throttled (emitting events::rejected).
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        a.shared_ = detail::context_reads(ctx, clock_);
        a.held_ = try_acquire(a.shared_ ? ctx.cached_now() : clock_.now());
        if (a.held_) return layer_in::proceed();
        ctx.emit(events::rejected{reason::throttled, std::nullopt});
        return layer_in::refuse(reason::throttled);
    }

    /// The policy's last step: counts the answer (accepted or overload;
    /// nothing for load_signal::ignored).
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, admission& a, Outcome& out) const {
        const auto s = load_signal_of_outcome(out, options_.overload_verdicts);
        if (s != load_signal::ignored) record(std::move(a.held_), s, a.shared_ ? ctx.cached_now() : clock_.now());
        return layer_out::proceed();
    }

private:
    // The probability as of at most refresh_ ago: adding up the window (10
    // buckets × 2 words × stripes) on every call would cost more than the
    // call's clock read, and grow with the machine's thread count.
    double decision_probability(time_point now) const noexcept {
        const auto t = now.time_since_epoch().count();
        const auto at = computed_at_.load(std::memory_order_relaxed);
        if (at != never && t >= at && t - at < refresh_.count()) return cached_.load(std::memory_order_relaxed);
        const double p = rejection_probability(now);
        // Two relaxed stores: a reader pairing a new instant with the old
        // probability decides on one refresh's older figure, nothing worse.
        cached_.store(p, std::memory_order_relaxed);
        computed_at_.store(t, std::memory_order_relaxed);
        return p;
    }

    ticket reject(time_point now) const noexcept {
        window_.record(now, true);
        throttled_.local().fetch_add(1, std::memory_order_relaxed);
        return ticket{};
    }

    static const adaptive_throttle_options& validated(const adaptive_throttle_options& o) {
        throw_if_invalid("resil::adaptive_throttle", o.validate());
        return o;
    }

    adaptive_throttle_options options_;
    [[no_unique_address]] Clock clock_;
    mutable detail::rolling_time_window window_;
    detail::stripes<std::atomic<std::uint64_t>> throttled_;
    duration refresh_ = options_.window / 100;
    static constexpr duration::rep never = std::numeric_limits<duration::rep>::min();
    // Read by every call, written once per refresh_.
    alignas(detail::stripe_alignment) mutable std::atomic<double> cached_{0.0};
    mutable std::atomic<duration::rep> computed_at_{never};
};

/// Client-side adaptive throttling on the real monotonic clock.
using adaptive_throttle = basic_adaptive_throttle<>;

}  // namespace resil
