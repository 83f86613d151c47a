// resil/retry.hpp — bounded retries of what is safe to retry, with jittered
// backoff, Retry-After, a retry budget and the deadline all respected.
//
//   resil::retry_budget budget;                           // shared: 10 % + 10/s
//   auto pipe = resil::pipeline(
//       resil::deadline_policy{2s},
//       resil::retry_policy{{.max_attempts = 3,
//                            .backoff = resil::full_jitter{100ms, 1s},
//                            .budget = &budget}});
//
// After a failed attempt the policy retries only when all of these hold:
//  - the failure came from an attempt (a rejection by an inner breaker, bucket
//    or limit is returned as is);
//  - its verdict is in `retry_on` (retryable and ambiguous by default), and an
//    ambiguous one belongs to an operation that is idempotent or carries an
//    idempotency key (else reason::unsafe_to_retry);
//  - the server did not say "don't retry" (reason::dont_retry);
//  - attempts remain (else reason::retries_exhausted);
//  - the wait, max(backoff delay, Retry-After), fits: it leaves at least
//    timeouts::min_attempt_time of the deadline for the attempt after it, and
//    is at most `max_wait` — else it gives up at once, without sleeping
//    (reason::deadline_exceeded when less than that was left before any wait,
//    reason::retry_after_exceeds_deadline when the server's Retry-After was
//    the longer wait, reason::backoff_exceeds_deadline when the backoff was);
//  - the budget, if any, grants the retry (else reason::budget_exhausted).
// The wait ends early when the context's stop token fires (reason::cancelled).
// When it gives up on a retryable failure, the outcome tells outer layers
// "don't retry" (unless `tell_callers_dont_retry` is off), so retries happen in
// one layer instead of multiplying through every layer.
#pragma once

#include <chrono>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "detail/platform.hpp"
#include "backoff.hpp"
#include "clock.hpp"
#include "detail/thread_jitter.hpp"  // ctx.jitter(): the per-thread engine
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "retry_budget.hpp"
#include "timeouts.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a retry_policy; the defaults are the documented ones.
struct retry_options {
    /// Limits of max_attempts.
    static constexpr std::uint32_t min_attempts = 1;
    /// The largest `max_attempts` validate() accepts.
    static constexpr std::uint32_t max_attempts_limit = 100;
    /// Limits of max_wait: one attempt's worth up to a day.
    static constexpr duration min_max_wait = timeouts::min_attempt_time;
    /// The largest `max_wait` validate() accepts.
    static constexpr duration max_max_wait = std::chrono::hours{24};

    /// Attempts in all, the first included (1 = never retry), in
    /// [min_attempts, max_attempts_limit]. Default 3.
    std::uint32_t max_attempts = 3;
    /// The wait before retry n (n = 1, 2, ...). Default full jitter, base
    /// 100 ms, cap 1 s: uniform in [0, min(1 s, 100 ms × 2ⁿ)).
    resil::backoff backoff = full_jitter{std::chrono::milliseconds{100}, std::chrono::seconds{1}};
    /// Verdicts worth retrying. Default: retryable and ambiguous (the latter
    /// only for idempotent or keyed operations).
    verdict_set retry_on{verdict::retryable, verdict::ambiguous};
    /// Shared retry budget, or null for none. Not owned; must outlive the policy.
    retry_budget* budget = nullptr;
    /// The longest single wait, whatever the server asks, in
    /// [min_max_wait, max_max_wait] and at least the backoff's cap. Default 60 s.
    duration max_wait = std::chrono::seconds{60};
    /// When giving up on a retryable failure, mark the outcome "don't retry"
    /// for outer layers. Default on.
    bool tell_callers_dont_retry = true;

    /// The first invalid field, or nothing:
    ///   "`max_attempts` must be in [1, 100], got 0"
    ///   "`backoff.cap` must be at most max_wait (1min), got 2min"
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const retry_options&, const retry_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result retry_options::validate() const {
    if (auto bad = detail::check_in_range("max_attempts", max_attempts, min_attempts, max_attempts_limit))
        return bad;
    if (auto bad = backoff.validate()) return bad->within("backoff");
    if (auto bad = detail::check_in_range("max_wait", max_wait, min_max_wait, max_max_wait)) return bad;
    if (backoff.cap() <= max_wait) return std::nullopt;  // the message is built only when needed
    return detail::check_that(false, "backoff.cap", {"at most max_wait (", detail::format_duration(max_wait), ")"},
                              backoff.cap());
}
#endif

/// One retry decision, from retry_policy::decide.
struct retry_decision {
    /// True when the failed attempt is retried after `delay`.
    bool retry = false;
    duration delay{};               ///< the wait before the next attempt, when retrying
    resil::reason reason = reason::none;  ///< why not, when not retrying
    bool from_retry_after = false;  ///< the server's Retry-After set the delay
};

/// What retry_policy::decide needs to know about the failed attempt.
struct failed_attempt {
    std::uint32_t attempt = 1;       ///< 1 for the first
    classification result{};         ///< its verdict and server hint
    bool safe_to_repeat = false;     ///< idempotent, or carries an idempotency key
    duration previous_delay{};       ///< the last wait (for decorrelated jitter)
    duration remaining = duration::max();  ///< left of the deadline now
};

/// Bounded retries of what is safe to retry: jittered backoff, Retry-After, a
/// retry budget and the deadline all respected. Stateless and copyable (the
/// budget, if any, is shared by pointer): share it freely across threads.
class retry_policy {
public:
    /// Reads the call's context (the pipeline's clock) and keeps no state
    /// across calls: no clock, no metrics() (resil/policy_checklist.hpp).
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    /// No state across calls: copies share nothing, and it has no metrics()
    /// (resil/policy_checklist.hpp).
    static constexpr bool stateless = true;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit retry_policy(retry_options options = {}) : options_(std::move(options)) {
        throw_if_invalid("resil::retry_policy", options_.validate());
    }

    /// The options it was built with.
    [[nodiscard]] const retry_options& options() const noexcept { return options_; }

    /// The pure decision after a failed attempt (budget aside): whether to
    /// retry and after how long. Draws jitter from `rng`.
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] retry_decision decide(const failed_attempt& f, URBG& rng) const noexcept {
        const auto v = f.result.verdict;
        if (!options_.retry_on.contains(v) || v == verdict::success) return {false, {}, reason::failed, false};
        if (v == verdict::ambiguous && !f.safe_to_repeat) return {false, {}, reason::unsafe_to_retry, false};
        if (f.result.hint.dont_retry) return {false, {}, reason::dont_retry, false};
        if (f.attempt >= options_.max_attempts) return {false, {}, reason::retries_exhausted, false};

        auto delay = options_.backoff.delay(f.attempt, f.previous_delay, rng);
        bool from_server = false;
        if (const auto& ra = f.result.hint.retry_after; ra && *ra > delay) {
            delay = *ra;
            from_server = true;
        }
        // Waiting must leave time for the attempt after it: the same
        // timeouts::min_attempt_time the context requires of every attempt.
        if (!timeouts::enough_for_attempt(f.remaining)) return {false, {}, reason::deadline_exceeded, false};
        if (!timeouts::enough_for_attempt(f.remaining - delay) || delay > options_.max_wait)
            return {false, {}, from_server ? reason::retry_after_exceeds_deadline : reason::backoff_exceeds_deadline,
                    false};
        return {true, delay, reason::none, from_server};
    }

    /// The least time worth starting an attempt with (timeouts::min_attempt_time).
    static constexpr duration min_attempt_time = timeouts::min_attempt_time;

// g++ 12 warns that the optional outcome kept across a wait may be used
// uninitialised; it is read only after emplace (a known false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    /// As a pipeline policy: the steps below, driven blocking (the waits are
    /// the context clock's sleeps).
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What a driver does before the first attempt: deposit in the budget,
    /// number the attempt. (The policy's first step; hedged calls outside a
    /// pipeline start here too.)
    template <class Context>
    [[gnu::always_inline]] void begin(Context& ctx) const {
        if (options_.budget) {
            options_.budget->deposit(ctx.cached_now());
            ctx.mark_counted_in_budget();  // a hedge inside counts nothing more
        }
        ctx.set_attempt(1);
    }

    /// One call's retry loop between attempts, without the waiting:
    /// wait_before_next_attempt() says whether to wait and retry, waited() takes the wait's result, and
    /// next_attempt() takes the next attempt's outcome. execute() drives it
    /// with the clock's sleep; resil/asio drives the same loop with a timer,
    /// so both make the same decisions and emit the same events.
    /// Outcomes are moved with emplace or move-assigned (an outcome's
    /// assignment destroys and rebuilds its value): T need not be assignable.
    template <class Outcome>
    class loop {
    public:
        /// `first`: the first attempt's failed outcome.
        explicit loop(Outcome first) : sent_(!first.never_sent()) { out_.emplace(std::move(first)); }

        /// Judges the attempt just failed: the wait before retrying it, or
        /// nothing when the call ends now (then take() is its outcome).
        /// Emits budget_refused, retry_scheduled, retries_exhausted and
        /// deadline_exceeded as the blocking policy does.
        template <class Context>
        [[deprecated("renamed wait_before_next_attempt")]] std::optional<duration> judge(Context& ctx,
                                                                                      const retry_policy& policy) {
            return wait_before_next_attempt(ctx, policy);
        }
        /// Judges the attempt just failed: the wait before retrying it, or
        /// nothing when the call ends now (then take() is its outcome). Emits
        /// budget_refused, retry_scheduled, retries_exhausted and
        /// deadline_exceeded as the blocking policy does.
        template <class Context>
        std::optional<duration> wait_before_next_attempt(Context& ctx, const retry_policy& policy) {
            if (ctx.stop_requested()) {
                out_->fail(reason::cancelled);
                return std::nullopt;
            }
            const failed_attempt f{attempt_,
                                   classification(out_->verdict(), server_hint{out_->retry_after(), out_->dont_retry()}),
                                   ctx.safe_to_repeat(), previous_, ctx.cached_remaining()};
            auto d = policy.decide(f, ctx.jitter());
            const auto& o = policy.options_;
            if (d.retry && o.budget && !o.budget->try_withdraw(ctx.cached_now())) {
                ctx.emit(events::budget_refused{attempt_});
                d = {false, {}, reason::budget_exhausted, false};
            }
            if (!d.retry) {
                policy.give_up(ctx, *out_, d.reason, attempt_);
                return std::nullopt;
            }
            ctx.emit(events::retry_scheduled{attempt_, d.delay, out_->verdict(), d.from_retry_after});
            delay_ = d.delay;
            return d.delay;
        }

        /// After the wait wait_before_next_attempt() asked for: `slept` false when it was cut
        /// short (cancelled). True when the next attempt is to run; its
        /// number is then set in the context.
        template <class Context>
        bool waited(Context& ctx, bool slept) {
            ctx.clear_cached_now();  // the next attempt starts later than any reading kept
            if (!slept) {
                out_->fail(reason::cancelled);
                return false;
            }
            previous_ = delay_;
            last_.reset();
            last_.emplace(std::move(*out_));
            ctx.set_attempt(++attempt_);
            return true;
        }

        /// The next attempt's outcome; true when the call ends with it (a
        /// success, or an inner refusal: then the caller still gets the last
        /// response there was, with the refusal as the reason).
        bool next_attempt(Outcome again) {
            // The outcome kept says in attempts() how many runs the call has
            // had so far (an inner refusal adds none): kept here, off the
            // path of a call answered at once.
            again.set_attempts(last_->attempts() + again.attempts());
            if (again.ok()) {
                out_.reset();
                out_.emplace(std::move(again));
                return true;
            }
            if (!again.attempted()) {
                last_->fail(again.reason());
                last_->set_attempts(again.attempts());
                out_.reset();
                out_.emplace(std::move(*last_));
                return true;
            }
            sent_ = sent_ || !again.never_sent();
            out_.reset();
            out_.emplace(std::move(again));
            return false;
        }

        /// The call's outcome once it ends. "Never sent" only when no
        /// attempt of the call may have been sent: a caller that moves the
        /// call elsewhere (an idempotency scope) must know of any. Its
        /// attempts() counts the runs of every attempt.
        Outcome take() {
            if (sent_) out_->mark_may_have_been_sent();
            return std::move(*out_);
        }

    private:
        std::optional<Outcome> out_;   // the attempt being judged
        std::optional<Outcome> last_;  // the failed attempt before a wait
        duration previous_{};
        duration delay_{};
        std::uint32_t attempt_ = 1;
        bool sent_ = false;  // some attempt may have reached the server
    };

    /// A call's loop, from its first failed attempt on. Unlike a
    /// std::optional, nothing is zeroed when it is made: the common call
    /// never starts a loop.
    template <class Outcome>
    class loop_slot {
    public:
        loop_slot() noexcept {}  // NOLINT: the union member stays unconstructed
        loop_slot(const loop_slot&) = delete;
        loop_slot& operator=(const loop_slot&) = delete;
        ~loop_slot() { reset(); }

        /// True while a loop lives in it.
        explicit operator bool() const noexcept { return engaged_; }
        /// Says again, where the compiler sees it, that no loop was started:
        /// the slot's address reaches out-of-line code on the failure path,
        /// so the destructor would otherwise read the flag back after every
        /// call the compiler cannot see into.
        void known_empty() noexcept { engaged_ = false; }
        /// The loop; the slot must hold one.
        loop<Outcome>* operator->() noexcept { return &loop_; }
        /// Starts a loop from the first failed outcome, ending any loop it
        /// held.
        void emplace(Outcome first) {
            reset();
            ::new (static_cast<void*>(&loop_)) loop<Outcome>(std::move(first));
            engaged_ = true;
        }
        /// Ends the loop it holds, if any.
        void reset() noexcept {
            if (engaged_) {
                loop_.~loop();
                engaged_ = false;
            }
        }

    private:
        union {
            loop<Outcome> loop_;
        };
        bool engaged_ = false;
    };

    /// What the policy keeps during a call (policy_steps.hpp): its retry
    /// loop, from the first failed attempt on.
    template <class Context, class Outcome>
    using call_state = loop_slot<Outcome>;

    /// The policy's first step: begin().
    template <class Context, class Outcome>
    layer_in enter(Context& ctx, loop_slot<Outcome>&) const {
        begin(ctx);
        return layer_in::proceed();
    }

    /// The policy's last step, after the first attempt: a success (or an
    /// inner rejection, nothing attempted) goes out as it is; a failure is
    /// judged, and either ends the call (`out` is then its outcome) or asks
    /// to wait the backoff before retried(). `out` is taken into the loop
    /// meanwhile.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, loop_slot<Outcome>& l, Outcome& out) const {
        // The common case reads nothing but the outcome, and stays small
        // enough to inline.
        if (out.ok() || !out.attempted()) [[likely]] {
            l.known_empty();
            return layer_out::proceed();
        }
        l.emplace(std::move(out));
        return judged(ctx, l, out);
    }

    /// After the backoff: true when the next attempt is to run; false when
    /// the wait was cut short (cancelled: `out` is then the call's outcome).
    template <class Context, class Outcome>
    bool retried(Context& ctx, loop_slot<Outcome>& l, Outcome& out, bool waited_all) const {
        if (l->waited(ctx, waited_all)) return true;
        finish(l, out);
        return false;
    }

    /// After each retried attempt, as leave() after the first.
    template <class Context, class Outcome>
    layer_out leave_again(Context& ctx, loop_slot<Outcome>& l, Outcome& out) const {
        if (l->next_attempt(std::move(out))) return finish(l, out);
        return judged(ctx, l, out);
    }

private:
    // The loop judges out of line; the outcome stays here, where the
    // compiler sees every use of it.
    template <class Context, class Outcome>
    layer_out judged(Context& ctx, loop_slot<Outcome>& l, Outcome& out) const {
        if (const auto wait = l->wait_before_next_attempt(ctx, *this)) return layer_out::wait_for(*wait);
        return finish(l, out);
    }

    template <class Outcome>
    static layer_out finish(loop_slot<Outcome>& l, Outcome& out) {
        out = l->take();
        l.reset();
        return layer_out::proceed();
    }

public:
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

private:
    template <class Context, class Outcome>
    void give_up(Context& ctx, Outcome& out, resil::reason why, std::uint32_t attempt) const {
        // A plain "failed" does not hide what a nested call's outcome said
        // of itself (no_endpoint_in_scope, circuit_open, ...).
        if (why != reason::failed || out.ok()) out.fail(why);
        if (why == reason::retries_exhausted) ctx.emit(events::retries_exhausted{attempt});
        if (why == reason::deadline_exceeded) ctx.emit(events::deadline_exceeded{attempt});
        // Retrying happens in one layer: tell the layers above not to add theirs.
        if (options_.tell_callers_dont_retry && why != reason::failed && why != reason::unsafe_to_retry)
            out.mark_dont_retry();
    }

    retry_options options_;
};

}  // namespace resil
