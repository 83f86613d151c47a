// resil/policy_steps.hpp — a policy written once, as its steps, and the
// blocking driver of those steps. resil/asio/pipeline.hpp drives the same
// steps with timers, so both pipelines make the same decisions and emit the
// same events.
//
//   // Refuses an attempt with less than `minimum` of the deadline left.
//   struct enough_time_left {
//       resil::duration minimum;
//
//       template <class Context, class Outcome>
//       struct call_state {};                                   // nothing kept between the steps
//
//       template <class Context, class State>
//       resil::layer_in enter(Context& ctx, State&) const {
//           if (ctx.cached_remaining() >= minimum) return resil::layer_in::proceed();
//           ctx.emit(resil::events::rejected{resil::reason::deadline_exceeded, std::nullopt});
//           return resil::layer_in::refuse(resil::reason::deadline_exceeded);
//       }
//       template <class Context, class State, class Outcome>
//       resil::layer_out leave(Context&, State&, Outcome&) const {
//           return resil::layer_out::proceed();
//       }
//   };
//
// The steps of a policy P, for a call's context type Context and outcome type
// Outcome (resil::outcome<T>):
//
//   template <class Context, class Outcome> struct call_state;   // or an alias
//       What the policy keeps between its steps, per call and layer:
//       default-constructed before enter(), destroyed after leave() (or when
//       enter() refuses, or an exception unwinds the call: its destructor
//       gives back what enter() took, e.g. a permit).
//   layer_in enter(Context& ctx, State& s) const;
//       On the way in: proceed(), refuse(reason[, retry_after]) (the rest of
//       the pipeline does not run; the call's outcome is
//       Outcome::rejected(reason, retry_after)), fail(reason, classification)
//       (the rest does not run either, but the outcome is a failed attempt,
//       Outcome::failed_attempt: what a fault-injection policy answers, so
//       that outer retries and breakers judge it as a real failure; a policy
//       that answers it declares `static constexpr bool
//       answers_failed_attempts = true`), or wait_until(t).
//   layer_in waited(Context& ctx, State& s, bool reached) const;   // if enter() may wait
//       After the wait enter() asked for: `reached` is false when the stop
//       token (or, on Asio, the caller's cancellation) cut it short.
//       proceed(), refuse(...) or fail(...).
//   layer_out leave(Context& ctx, State& s, Outcome& out) const;
//       On the way out, with the rest of the pipeline's outcome, which it may
//       change: proceed(), or wait_for(d) and then retried().
//   bool retried(Context& ctx, State& s, Outcome& out, bool waited_all) const;   // if leave() may wait
//       After leave()'s wait: true to run the rest of the pipeline again,
//       false when `out` is final.
//   layer_out leave_again(Context& ctx, State& s, Outcome& out) const;          // if leave() may wait
//       As leave(), with the outcome of the rest run again after retried().
//       (Apart from leave() so that leave(), on the common path, reads
//       nothing the compiler cannot see: a state whose address reaches no
//       out-of-line code stays in registers.)
//   void unwind(Context& ctx, State& s) const noexcept;              // optional
//       An exception is unwinding the call between enter() and leave(): put
//       back what enter() changed in the context (a deadline, timeouts).
//       (A state that pointed at the context to do it in its destructor
//       would cost every call: the compiler could no longer keep the
//       context in registers.)
//   asio::awaitable<bool> async_wait(Context& ctx, State& s, time_point until) const;   // optional
//       What resil::asio::pipeline awaits for enter()'s wait instead of a
//       timer: a wait on something other than time (a round trip to a
//       store: resil::redis::async_rate_limiter's), then waited(). A policy
//       with it runs in resil::asio::pipeline only.
//
// A wait is on the policy's own clock when it has one (`clock()`: a token
// bucket's), on the context's otherwise. resil::layer_in and
// resil::layer_out are small values (16 bytes, trivially copyable).
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "detail/platform.hpp"
#include "outcome.hpp"
#include "reason.hpp"

namespace resil {

/// What a policy's way in says (policy_steps.hpp): go on inward, refuse the
/// call with a reason (and how long to wait before trying again), answer
/// for the rest with a failed attempt, or wait until an instant and then
/// ask the policy's waited().
class layer_in {
public:
    /// Go on inward.
    constexpr layer_in() noexcept = default;
    /// Go on to the next layer.
    [[nodiscard]] static constexpr layer_in proceed() noexcept { return {}; }
    /// Refuse the call: its outcome is rejected(why, retry_after).
    [[nodiscard]] static constexpr layer_in refuse(resil::reason why,
                                                   std::optional<duration> retry_after = std::nullopt) noexcept {
        layer_in in;
        in.kind_ = kind::refuse;
        in.reason_ = why;
        in.has_retry_after_ = retry_after.has_value();
        in.value_ = retry_after ? retry_after->count() : 0;
        return in;
    }
    /// Answer for the rest of the pipeline with a failed attempt judged `c`,
    /// for reason `why`: Outcome::failed_attempt(c, why). Outer policies see
    /// an attempt that failed (a retry may retry it, a breaker counts it).
    /// refuses() is true of it too: the rest does not run.
    [[nodiscard]] static constexpr layer_in fail(resil::reason why, const classification& c) noexcept {
        layer_in in = refuse(why, c.hint.retry_after);
        in.kind_ = kind::fail;
        in.verdict_ = c.verdict;
        in.never_sent_ = c.never_sent;
        in.dont_retry_ = c.hint.dont_retry;
        return in;
    }
    /// Wait until `t` (on the policy's clock), then ask waited().
    [[nodiscard]] static constexpr layer_in wait_until(time_point t) noexcept {
        layer_in in;
        in.kind_ = kind::wait;
        in.value_ = t.time_since_epoch().count();
        return in;
    }

    /// True for proceed().
    [[nodiscard]] constexpr bool proceeds() const noexcept { return kind_ == kind::proceed; }
    /// True for refuse() and fail(): the rest of the pipeline does not run.
    [[nodiscard]] constexpr bool refuses() const noexcept { return kind_ == kind::refuse || kind_ == kind::fail; }
    /// True for fail(): the outcome is a failed attempt, not a rejection.
    [[nodiscard]] constexpr bool fails() const noexcept { return kind_ == kind::fail; }
    /// True for wait_until().
    [[nodiscard]] constexpr bool waits() const noexcept { return kind_ == kind::wait; }
    /// For a refusal: why.
    [[nodiscard]] constexpr resil::reason reason() const noexcept { return reason_; }
    /// For a refusal: how long to wait before trying again, when known.
    [[nodiscard]] constexpr std::optional<duration> retry_after() const noexcept {
        if (!has_retry_after_) return std::nullopt;
        return duration{value_};
    }
    /// For a wait: the instant to wait until.
    [[nodiscard]] constexpr time_point until() const noexcept { return time_point{duration{value_}}; }
    /// For fail(): how the failed attempt is judged.
    [[nodiscard]] constexpr classification failure() const noexcept {
        classification c{verdict_, server_hint{retry_after(), dont_retry_}};
        c.never_sent = never_sent_;
        return c;
    }

    /// The outcome of a call this refuses or fails, of type Outcome (resil::outcome<T>).
    template <class Outcome>
    [[nodiscard]] Outcome outcome_instead() const noexcept {
        if (kind_ == kind::fail) [[unlikely]]
            return Outcome::failed_attempt(failure(), reason_);
        return Outcome::rejected(reason_, retry_after());
    }

private:
    enum class kind : std::uint8_t { proceed, refuse, wait, fail };
    duration::rep value_ = 0;  // the refusal's retry_after, or the wait's instant
    kind kind_ = kind::proceed;
    resil::reason reason_ = reason::none;
    bool has_retry_after_ = false;
    // fail() only: how the failed attempt is judged.
    resil::verdict verdict_ = verdict::permanent;
    bool never_sent_ = false;
    bool dont_retry_ = false;
};
static_assert(sizeof(layer_in) <= 16, "layer_in stays a small value");

/// What a policy's way out says (policy_steps.hpp): go on outward, or wait
/// (a retry's backoff) and then ask the policy's retried().
class layer_out {
public:
    /// Go on outward.
    constexpr layer_out() noexcept = default;
    /// Go on: the outcome passes outwards as it is.
    [[nodiscard]] static constexpr layer_out proceed() noexcept { return {}; }
    /// Wait for `d` (on the policy's clock), then ask retried().
    [[nodiscard]] static constexpr layer_out wait_for(duration d) noexcept {
        layer_out out;
        out.wait_ = d;
        out.waits_ = true;
        return out;
    }

    /// True when it asked to wait before the next attempt.
    [[nodiscard]] constexpr bool waits() const noexcept { return waits_; }
    /// For a wait: how long.
    [[nodiscard]] constexpr duration wait() const noexcept { return wait_; }

private:
    duration wait_{};
    bool waits_ = false;
};

/// Whether P is written as steps (see the banner) for a call of context
/// type Context and outcome type Outcome: both pipelines then drive it.
template <class P, class Context, class Outcome>
concept policy_steps = requires { typename P::template call_state<Context, Outcome>; } &&
                       requires(const P& p, Context& ctx, typename P::template call_state<Context, Outcome>& s,
                                Outcome& out) {
                           { p.enter(ctx, s) } -> std::same_as<layer_in>;
                           { p.leave(ctx, s, out) } -> std::same_as<layer_out>;
                       };

namespace detail {

template <class P, class Context, class State>
concept waits_on_entry = requires(const P& p, Context& ctx, State& s, bool b) {
    { p.waited(ctx, s, b) } -> std::same_as<layer_in>;
};

template <class P, class Context, class State, class Outcome>
concept retries_on_leave = requires(const P& p, Context& ctx, State& s, Outcome& out, bool b) {
    { p.retried(ctx, s, out, b) } -> std::same_as<bool>;
    { p.leave_again(ctx, s, out) } -> std::same_as<layer_out>;
};

template <class P, class Context, class State>
concept unwinds = requires(const P& p, Context& ctx, State& s) { p.unwind(ctx, s); };

/// Whether P waits on entry through an async_wait of its own (policy_steps.hpp):
/// an asynchronous-only policy.
template <class P, class Context, class State>
concept waits_asynchronously = requires(const P& p, Context& ctx, State& s, time_point t) { p.async_wait(ctx, s, t); };

/// The clock a policy's waits are on: its own when it has one, the context's otherwise.
template <class P, class Context>
constexpr decltype(auto) wait_clock(const P& p, Context& ctx) noexcept {
    if constexpr (requires { { p.clock() } -> clock; })
        return p.clock();
    else
        return ctx.clock();
}

/// The state type P keeps for a call of Context and Outcome.
template <class P, class Context, class Outcome>
using call_state_t = typename P::template call_state<Context, Outcome>;

// The blocking driver, in parts: the common path (enter, the rest, leave)
// is always inlined into the pipeline, as a hand-written execute() would be,
// and the waits live out of line; the one outcome returned is built in the
// caller's place.

template <class P, class Context, class State>
layer_in wait_on_entry(const P& p, Context& ctx, State& s, layer_in in) {
    const bool reached = resil::sleep_until(wait_clock(p, ctx), in.until(), ctx.stop_token());
    return p.waited(ctx, s, reached);
}

// The outcome comes in and goes out by value: its address never reaches
// out-of-line code, so that on the common path the compiler keeps it whole.
template <class P, class Context, class State, class Next, class Outcome>
Outcome wait_and_retry(const P& p, Context& ctx, State& s, Next& next, Outcome out, layer_out step) {
    do {
        if (!p.retried(ctx, s, out, wait_clock(p, ctx).sleep_for(step.wait(), ctx.stop_token()))) break;
        out = next(ctx);
        step = p.leave_again(ctx, s, out);
    } while (step.waits());
    return out;
}

template <class P, class Context, class State, class Next>
[[gnu::always_inline]] inline auto run_inner_then_leave(const P& p, Context& ctx, State& s, Next& next) {
    auto out = next(ctx);
    const layer_out step = p.leave(ctx, s, out);
    if constexpr (retries_on_leave<P, Context, State, decltype(out)>) {
        if (step.waits()) [[unlikely]]
            out = wait_and_retry(p, ctx, s, next, std::move(out), step);
    }
    return out;
}

/// Whether P's steps may answer layer_in::fail() (P declares
/// `static constexpr bool answers_failed_attempts = true`, as
/// resil::fault_injection does). Only for such a policy does the blocking
/// driver look for a failed attempt: the branch alone, on every policy's
/// refusal path, moves g++'s inlining of the common path (17 instructions
/// more per call of a three-policy pipeline, callgrind, g++ 12 -O3).
template <class P>
concept answers_failed_attempts = requires {
    requires static_cast<bool>(P::answers_failed_attempts);
};

// The outcome of a failed layer, out of line.
template <class Outcome>
RESIL_DETAIL_COLD Outcome failed_instead(layer_in in) noexcept {
    return in.template outcome_instead<Outcome>();
}

/// Runs policy P's steps around `next` (the rest of the pipeline), blocking
/// for the waits they ask for: what resil::pipeline does for every policy
/// written as steps, and what their execute() is.
template <class P, class Context, class Next>
[[gnu::always_inline]] inline auto run_steps(const P& p, Context& ctx, Next& next) -> decltype(next(ctx)) {
    using outcome_type = decltype(next(ctx));
    using state_type = call_state_t<P, Context, outcome_type>;
    static_assert(!waits_asynchronously<P, Context, state_type>,
                  "resil::pipeline: this policy waits only asynchronously (async_wait): use it in resil::asio::pipeline");
    state_type s;  // default-initialised: nothing to zero on the common path
    layer_in in = p.enter(ctx, s);
    if constexpr (waits_on_entry<P, Context, state_type>) {
        if (in.waits()) [[unlikely]]
            in = wait_on_entry(p, ctx, s, in);
    }
    if (!in.proceeds()) [[unlikely]] {
        if constexpr (answers_failed_attempts<P>) {
            if (in.fails()) [[unlikely]]
                return failed_instead<outcome_type>(in);
        }
        return outcome_type::rejected(in.reason(), in.retry_after());
    }
    if constexpr (unwinds<P, Context, state_type>) {
        try {
            return run_inner_then_leave(p, ctx, s, next);
        } catch (...) {
            p.unwind(ctx, s);
            throw;
        }
    } else {
        return run_inner_then_leave(p, ctx, s, next);
    }
}

}  // namespace detail

}  // namespace resil
