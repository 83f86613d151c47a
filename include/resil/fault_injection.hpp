// resil/fault_injection.hpp — faults injected on purpose, to check that a
// service's retries, breakers and fallbacks do what they should (chaos
// testing in staging: Polly's chaos strategies, Envoy's fault filter).
//
//   resil::fault_injection faults{{.enabled = true,
//                                  .delay = {.probability = 0.1, .latency = 300ms},
//                                  .abort = {.probability = 0.05, .verdict = resil::verdict::retryable}}};
//   auto pipe = resil::pipeline(resil::fallback_policy{plan_b}, resil::deadline_policy{250ms},
//                               resil::retry_policy{}, std::ref(breaker), std::ref(faults),
//                               resil::timeout_policy{...});
//
// Off unless configured: `enabled` is false by default, and a disabled
// policy costs a call one load and one branch. Enabled, each call (each
// attempt, placed inside a retry) is, independently:
//  - delayed by `delay.latency` with probability `delay.probability`, before
//    it runs: a wait on the call's clock, which the blocking pipeline sleeps
//    and resil::asio::pipeline awaits on a timer. A delay never outlives the
//    call's deadline (it ends there, and the call fails deadline_exceeded)
//    nor its stop token (the call fails cancelled);
//  - failed with probability `abort.probability` (after any delay, as
//    Envoy's filter does): the rest of the pipeline does not run, and the
//    call's outcome is a failed attempt judged `abort.verdict` (with
//    `abort.retry_after` as a server's Retry-After, and `abort.never_sent`
//    for a request that never left), for reason::injected_fault. Outer
//    policies judge it as any failed attempt: a retry retries a retryable
//    one, a breaker counts it, a fallback answers for it.
// With a `tag`, only calls whose context carries that fault tag
// (call_options::fault_tag, e.g. set from a staging request's header) are
// eligible: the named share of calls; others pass untouched.
//
// Chance: one draw in [0, 1) per decision from the call's jitter engine
// (ctx.jitter(): the caller's seeded engine, or this thread's), so no lock,
// no allocation, no shared line written to decide; probabilities 0 and 1
// draw nothing and are exact. Counts (metrics()) are per-thread stripes,
// written only when a fault is injected. Thread-safe; not copyable (pass it
// to a pipeline with std::ref); emits events::fault_injected.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "clock.hpp"
#include "context.hpp"
#include "detail/platform.hpp"
#include "detail/saturate.hpp"
#include "detail/stripes.hpp"
#include "detail/thread_jitter.hpp"
#include "events.hpp"
#include "jitter.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "timeouts.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a fault_injection policy; the defaults inject nothing.
struct fault_injection_options {
    /// The longest injected delay (and abort.retry_after): 1 h.
    static constexpr duration max_latency = std::chrono::hours{1};
    /// The longest tag: 64 characters.
    static constexpr std::size_t max_tag_length = 64;

    /// Added latency: the call waits `latency` before it runs.
    struct delay_fault {
        /// The share of eligible calls delayed, in [0, 1]. Default 0.
        double probability = 0.0;
        /// How long, in [0, max_latency]; cut short by the call's deadline
        /// and stop token. Default 0.
        duration latency{};

        /// Field-by-field equality.
        friend bool operator==(const delay_fault&, const delay_fault&) = default;
    };

    /// An injected failure: the call does not run, and its outcome is a
    /// failed attempt, judged as a real failure would be.
    struct abort_fault {
        /// The share of eligible calls failed, in [0, 1]. Default 0.
        double probability = 0.0;
        /// How the failed attempt is judged: retryable (as a 503 or a refused
        /// connection), permanent (as a 400) or ambiguous (as a timeout
        /// after sending). Not success. Default retryable.
        resil::verdict verdict = verdict::retryable;
        /// The request is known never to have left (as a refused
        /// connection): a balanced call may move to another idempotency
        /// scope. Not with an ambiguous verdict. Default false.
        bool never_sent = false;
        /// As a server's Retry-After on the failure, in [0, max_latency];
        /// none by default.
        std::optional<duration> retry_after{};

        /// Field-by-field equality.
        friend bool operator==(const abort_fault&, const abort_fault&) = default;
    };

    /// Nothing is injected unless true. Default false.
    bool enabled = false;
    /// Empty (the default): every call is eligible. Otherwise only calls
    /// whose context carries this fault tag (call_options::fault_tag); at
    /// most max_tag_length characters.
    std::string tag{};
    /// Added latency; none by default.
    delay_fault delay{};
    /// Injected failures; none by default.
    abort_fault abort{};

    /// The first invalid field, if any:
    ///   "`delay.probability` must be in [0, 1], got 1.5"
    ///   "`delay.latency` must be in [0s, 1h], got 2h"
    ///   "`abort.verdict` must be retryable, permanent or ambiguous, got success"
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const fault_injection_options&, const fault_injection_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result fault_injection_options::validate() const {
    if (auto bad = detail::check_that(tag.size() <= max_tag_length, "tag", "at most 64 characters long",
                                      tag.size()))
        return bad;
    if (auto bad = detail::check_in_range("delay.probability", delay.probability, 0.0, 1.0)) return bad;
    if (auto bad = detail::check_in_range("delay.latency", delay.latency, duration::zero(), max_latency)) return bad;
    if (auto bad = detail::check_in_range("abort.probability", abort.probability, 0.0, 1.0)) return bad;
    if (abort.verdict == verdict::success)
        return invalid_option{"abort.verdict", "must be retryable, permanent or ambiguous, got success"};
    if (auto bad = detail::check_that(!(abort.never_sent && abort.verdict == verdict::ambiguous), "abort.never_sent",
                                      "false with an ambiguous verdict (an ambiguous failure may have reached the server)",
                                      abort.never_sent))
        return bad;
    if (abort.retry_after)
        if (auto bad = detail::check_in_range("abort.retry_after", *abort.retry_after, duration::zero(), max_latency))
            return bad;
    return std::nullopt;
}
#endif

/// What a fault_injection policy has injected since construction; a
/// snapshot (each count read relaxed, on its own).
struct fault_injection_metrics {
    std::uint64_t delays = 0;        ///< calls delayed (events::fault_injected, kind delay)
    std::uint64_t delays_cut = 0;    ///< of which the deadline or the stop token ended early
    std::uint64_t aborts = 0;        ///< calls failed on purpose (kind abort)

    /// Field-by-field equality.
    friend bool operator==(const fault_injection_metrics&, const fault_injection_metrics&) = default;
};

/// The fault-injection policy (see the banner). Thread-safe: every member may
/// be called from any number of threads at once.
class fault_injection {
public:
    /// Reads the call's context: its clock, deadline, stop token, jitter
    /// engine and fault tag (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    /// Its enter() may answer layer_in::fail(): an injected failed attempt.
    static constexpr bool answers_failed_attempts = true;

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::fault_injection: `delay.probability` must be in [0, 1], got 1.5".
    explicit fault_injection(fault_injection_options options = {}) : options_(std::move(options)) {
        throw_if_invalid("resil::fault_injection", options_.validate());
    }
    fault_injection(const fault_injection&) = delete;
    fault_injection& operator=(const fault_injection&) = delete;

    /// The options it was built with.
    [[nodiscard]] const fault_injection_options& options() const noexcept { return options_; }
    /// options().enabled: whether it injects anything at all.
    [[nodiscard]] bool enabled() const noexcept { return options_.enabled; }

    /// Counts since construction (the stripes added up).
    [[nodiscard]] fault_injection_metrics metrics() const noexcept {
        fault_injection_metrics m;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            m.delays += counts_[i].delays.load(std::memory_order_relaxed);
            m.delays_cut += counts_[i].delays_cut.load(std::memory_order_relaxed);
            m.aborts += counts_[i].aborts.load(std::memory_order_relaxed);
        }
        return m;
    }

    /// As a pipeline policy: the steps below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What the policy keeps between its steps (policy_steps.hpp): whether
    /// the call, once delayed, is to fail, and whether the delay was cut to
    /// the deadline.
    struct decision {
        bool abort = false;            ///< the call fails once any delay is over
        bool cut_to_deadline = false;  ///< the delay ends at the deadline, before its latency
    };
    /// What a call keeps between the steps: the decision made on entry.
    template <class Context, class Outcome>
    using call_state = decision;

    /// Decides the call's faults: a delay (wait_until, on the context's
    /// clock, never past the deadline), then an abort (fail()), or nothing.
    template <class Context>
    layer_in enter(Context& ctx, decision& d) const {
        if (!options_.enabled) [[likely]]
            return layer_in::proceed();
        if (!options_.tag.empty() && std::string_view(options_.tag) != ctx.fault_tag()) return layer_in::proceed();
        d.abort = drawn(options_.abort.probability, ctx);
        if (drawn(options_.delay.probability, ctx)) {
            const time_point now = ctx.cached_now();
            const time_point wanted = detail::saturating_add(now, options_.delay.latency);
            const time_point until = std::min(wanted, ctx.deadline_instant());
            d.cut_to_deadline = until < wanted;
            counts_.local().delays.fetch_add(1, std::memory_order_relaxed);
            ctx.emit(events::fault_injected{fault_kind::delay, until > now ? until - now : duration::zero(),
                                            verdict::success});
            return layer_in::wait_until(until);
        }
        return after_delay(ctx, d);
    }

    /// After the delay: a delay the stop token cut short fails the call
    /// cancelled, one the deadline ended fails it deadline_exceeded (as a
    /// dependency that slow would); otherwise the abort, if drawn.
    template <class Context>
    layer_in waited(Context& ctx, decision& d, bool reached) const {
        ctx.clear_cached_now();  // it waited
        if (!reached) {
            counts_.local().delays_cut.fetch_add(1, std::memory_order_relaxed);
            ctx.emit(events::rejected{reason::cancelled, std::nullopt});
            return layer_in::refuse(reason::cancelled);
        }
        if (d.cut_to_deadline || !timeouts::enough_for_attempt(ctx.cached_remaining())) {
            if (d.cut_to_deadline) counts_.local().delays_cut.fetch_add(1, std::memory_order_relaxed);
            ctx.emit(events::deadline_exceeded{ctx.attempt()});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            return layer_in::refuse(reason::deadline_exceeded);
        }
        return after_delay(ctx, d);
    }

    /// Nothing to do on the way out: the outcome is the call's (or the
    /// injected failure, which outer policies judge).
    template <class Context, class Outcome>
    layer_out leave(Context&, decision&, Outcome&) const noexcept {
        return layer_out::proceed();
    }

private:
    // A relaxed counter on the calling thread's stripe: only this thread
    // (and others given the same stripe) writes its line.
    struct counters {
        std::atomic<std::uint64_t> delays{0};
        std::atomic<std::uint64_t> delays_cut{0};
        std::atomic<std::uint64_t> aborts{0};
    };

    // p <= 0 and p >= 1 draw nothing: exact, and free.
    template <class Context>
    static bool drawn(double p, Context& ctx) {
        if (p <= 0.0) return false;
        if (p >= 1.0) return true;
        return unit_interval(ctx.jitter()) < p;
    }

    template <class Context>
    layer_in after_delay(Context& ctx, const decision& d) const {
        if (!d.abort) return layer_in::proceed();
        const auto& a = options_.abort;
        counts_.local().aborts.fetch_add(1, std::memory_order_relaxed);
        ctx.emit(events::fault_injected{fault_kind::abort, duration::zero(), a.verdict});
        const server_hint hint{a.retry_after, false};
        return layer_in::fail(reason::injected_fault,
                              a.never_sent ? classification::not_sent(a.verdict, hint) : classification{a.verdict, hint});
    }

    // Read by every call, never written after construction.
    fault_injection_options options_;
    detail::stripes<counters> counts_;
};

}  // namespace resil
