// resil/optional_policy.hpp — a layer that runs a policy when one is
// configured and passes every call through when none is: one pipeline type
// for every configuration, without a second copy of any policy.
//
//   std::optional<resil::circuit_breaker> breaker;      // from the configuration, or not
//   if (cfg.breaker) breaker.emplace(*cfg.breaker);
//   auto pipe = resil::pipeline(resil::retry_policy{},
//                               resil::optional_policy{breaker},   // a breaker, or nothing
//                               resil::timeout_policy{{.total = 150ms}});
//   // The same in resil::asio::pipeline.
//
// It forwards every step of resil/policy_steps.hpp that P has (call_state,
// enter, waited, leave, retried and leave_again, unwind, async_wait, clock)
// to the policy it points at; without one, enter() and leave() proceed and
// nothing else is ever asked (no wait is requested). P's call state is used
// as it is, default-constructed, whether or not P is there: resil's states
// are empty until enter() fills them, and destroying an empty one gives
// nothing back. No allocation, no copy of P: it holds a pointer.
//
// P must be written as steps (resil/policy_steps.hpp): every policy of
// resil's core is; the Redis limiters are not layers of this kind (the
// blocking one has execute() only).
//
// Lifetime: the policy pointed at must outlive the pipeline. Thread-safety:
// as P's (the layer itself is an immutable pointer).
#pragma once

#include <optional>

#include "clock.hpp"
#include "policy_steps.hpp"

namespace resil {

/// Runs *policy when it is set, passes through otherwise (see the banner).
template <class P>
class optional_policy {
public:
    /// No policy: every call passes through.
    constexpr optional_policy() noexcept = default;
    /// `policy` when not null. Not owned: it must outlive the pipeline.
    constexpr explicit optional_policy(const P* policy) noexcept : p_(policy) {}
    /// The policy held by `policy`, or none when it is empty.
    constexpr explicit optional_policy(const std::optional<P>& policy) noexcept
        : p_(policy ? &*policy : nullptr) {}
    optional_policy(const std::optional<P>&&) = delete;  // would point into a temporary

    /// The policy run, or null.
    [[nodiscard]] constexpr const P* get() const noexcept { return p_; }
    /// Whether a policy is held.
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return p_ != nullptr; }

    /// P's own state, whether P is there or not (see the banner).
    template <class Context, class Outcome>
    using call_state = typename P::template call_state<Context, Outcome>;

    /// As P: whether its steps may answer a failed attempt (policy_steps.hpp).
    static constexpr bool answers_failed_attempts = detail::answers_failed_attempts<P>;

    /// P's enter(), or proceed() without P.
    template <class Context, class State>
    layer_in enter(Context& ctx, State& s) const {
        if (p_ == nullptr) return layer_in::proceed();
        return p_->enter(ctx, s);
    }

    // Asked only after a wait that enter() or leave() requested: P is there.
    /// P's waited() (asked only after a wait P requested).
    template <class Context, class State>
        requires detail::waits_on_entry<P, Context, State>
    layer_in waited(Context& ctx, State& s, bool reached) const {
        return p_->waited(ctx, s, reached);
    }

    /// P's leave(), or proceed() without P.
    template <class Context, class State, class Outcome>
    layer_out leave(Context& ctx, State& s, Outcome& out) const {
        if (p_ == nullptr) return layer_out::proceed();
        return p_->leave(ctx, s, out);
    }

    /// P's retried() (asked only after a wait P requested).
    template <class Context, class State, class Outcome>
        requires detail::retries_on_leave<P, Context, State, Outcome>
    bool retried(Context& ctx, State& s, Outcome& out, bool waited_all) const {
        return p_->retried(ctx, s, out, waited_all);
    }

    /// P's leave_again() (asked only after P's retried()).
    template <class Context, class State, class Outcome>
        requires detail::retries_on_leave<P, Context, State, Outcome>
    layer_out leave_again(Context& ctx, State& s, Outcome& out) const {
        return p_->leave_again(ctx, s, out);
    }

    // Between enter() and leave(): enter() proceeded, which it does without
    // P too, so the pointer is checked.
    /// P's unwind(), when P is held.
    template <class Context, class State>
        requires detail::unwinds<P, Context, State>
    void unwind(Context& ctx, State& s) const noexcept {
        if (p_ != nullptr) p_->unwind(ctx, s);
    }

    /// P's async_wait() (asked only for a wait P requested).
    template <class Context, class State>
        requires detail::waits_asynchronously<P, Context, State>
    auto async_wait(Context& ctx, State& s, time_point until) const {
        return p_->async_wait(ctx, s, until);
    }

    /// P's clock, for the waits P asks for (only P asks for waits).
    [[nodiscard]] decltype(auto) clock() const noexcept
        requires requires(const P& p) {
            { p.clock() } -> resil::clock;
        }
    {
        return p_->clock();
    }

private:
    const P* p_ = nullptr;
};

/// Deduces P from an optional policy.
template <class P>
optional_policy(const std::optional<P>&) -> optional_policy<P>;
/// Deduces P from a pointer to a policy.
template <class P>
optional_policy(const P*) -> optional_policy<P>;

}  // namespace resil
