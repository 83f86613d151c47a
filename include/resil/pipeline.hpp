// resil/pipeline.hpp — composes policies outer → inner around any callable.
//
//   auto pipe = resil::pipeline(
//       resil::deadline_policy{250ms},          // outermost: the whole call
//       resil::retry_policy{},                  // 3 attempts, full jitter
//       std::ref(breaker),                      // shared state: by reference
//       resil::timeout_policy{{.total = 150ms}});
//   auto out = pipe([&](resil::context& ctx) { return call(ctx); }, classify);
//
// Policies run in the order written; each is any type with
//
//   template <class Context, class Next>
//   auto execute(Context& ctx, Next&& next) const;   // returns next(ctx)'s outcome type
//
// so users can write their own. `next(ctx)` runs the rest of the pipeline and
// returns a resil::outcome<T>. Everything is a template: the composition
// inlines and allocates nothing per call. Policies given by value are owned
// by the pipeline and must be safe to call from several threads at once
// (resil's are); shared-state policies are passed with std::ref and outlive it.
//
// The callable takes the context (`resil::basic_context<Clock>&`) or nothing.
// Its result is judged by a classifier: a callable (const R&) -> verdict or
// classification. Give one as the second argument, or declare
// `resil::classification classify(const R&)` next to R (found by ADL); a
// callable returning void is a success unless it throws. Exceptions propagate
// unchanged, unless the classifier is a resil::classifier{on_result,
// on_exception}: then they are judged and retried like results (and
// rethrown by value()).
#pragma once

#include <concepts>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "clock.hpp"
#include "context.hpp"
#include "events.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "detail/pipeline_call.hpp"

namespace resil {

/// The type of resil::always_success.
struct always_success_t {
    /// verdict::success for any result.
    template <class R>
        requires(!std::is_same_v<R, std::exception_ptr>)  // exceptions are not judged: they propagate
    constexpr verdict operator()(const R&) const noexcept {
        return verdict::success;
    }
};

/// A classifier for results that are always a success; exceptions propagate.
///   pipe([] { return compute(); }, resil::always_success);
inline constexpr always_success_t always_success{};

/// Combines a result classifier and an exception classifier into one. Only a
/// classifier made this way judges exceptions (the pipeline catches them);
/// any other lets them propagate unchanged.
///
///   resil::classifier{[](const reply& r) { return r.ok ? success : retryable; },
///                     [](const std::exception_ptr&) { return resil::verdict::retryable; }}
template <class OnResult, class OnException>
struct classifier : OnResult, OnException {
    /// Marks it as judging exceptions: the pipeline catches them and asks it.
    static constexpr bool judges_exceptions = true;
    using OnResult::operator();
    using OnException::operator();
};
/// Deduces the two classifiers' types.
template <class OnResult, class OnException>
classifier(OnResult, OnException) -> classifier<OnResult, OnException>;

namespace detail {

/// A policy or listener as given (const), or what a std::reference_wrapper
/// refers to (as it was wrapped: std::ref gives non-const access).
template <class P>
using unwrapped_t =
    std::conditional_t<std::is_same_v<std::unwrap_reference_t<P>, P>, const P&, std::unwrap_reference_t<P>&>;
template <class P>
constexpr unwrapped_t<P> unwrap(const P& p) noexcept {
    return p;
}

template <class R>
concept adl_classifiable = requires(const R& r) {
    { classify(r) } -> std::convertible_to<classification>;
};

template <class C>
concept judges_exceptions_concept = requires {
    requires static_cast<bool>(C::judges_exceptions);
};
/// Whether a classifier judges exceptions: an explicit opt-in (resil::classifier
/// or a `static constexpr bool judges_exceptions = true` member), never
/// inferred, so a generic-lambda classifier is not asked about exception_ptr.
template <class C>
inline constexpr bool judges_exceptions = judges_exceptions_concept<std::remove_cvref_t<C>>;

template <class L>
inline constexpr bool handles_any_event =
    std::is_same_v<std::remove_cv_t<L>, no_listener> ||
    // A disjunction stops at the first event handled, so a generic lambda
    // written for the older events is never asked about the later ones.
    std::disjunction_v<std::is_invocable<L&, const events::attempt_started&>,
                       std::is_invocable<L&, const events::attempt_finished&>,
                       std::is_invocable<L&, const events::retry_scheduled&>,
                       std::is_invocable<L&, const events::retries_exhausted&>,
                       std::is_invocable<L&, const events::budget_refused&>,
                       std::is_invocable<L&, const events::breaker_state_changed&>,
                       std::is_invocable<L&, const events::rejected&>,
                       std::is_invocable<L&, const events::fallback_used&>,
                       std::is_invocable<L&, const events::call_finished&>,
                       std::is_invocable<L&, const events::deadline_exceeded&>,
                       std::is_invocable<L&, const events::limit_changed&>,
                       std::is_invocable<L&, const events::pace_changed&>,
                       std::is_invocable<L&, const events::quota_store_failed&>>;

/// Refuses, at compile time, a listener that would hear nothing: what both
/// pipelines' with_listener check.
template <class L>
constexpr void require_listener() noexcept {
    using called = std::remove_reference_t<decltype(unwrap(std::declval<const L&>()))>;
    static_assert(handles_any_event<called>,
                  "resil: this listener handles no event as the pipeline calls it. A listener given by value "
                  "is called as const: make its operator() const, or pass std::ref(listener).");
}

/// The classifier used when the caller gives none.
struct default_classifier {
    template <class R>
        requires(!std::is_same_v<R, std::exception_ptr>)  // exceptions are not judged: they propagate
    constexpr classification operator()(const R& r) const {
        if constexpr (std::is_same_v<R, unit>) {
            return verdict::success;
        } else {
            static_assert(adl_classifiable<R>,
                          "resil: no classifier for this result type. Pass one as the pipeline call's second "
                          "argument, e.g. pipe(fn, [](const R& r) { return ok(r) ? resil::verdict::success : "
                          "resil::verdict::retryable; }), pass resil::always_success, or declare "
                          "`resil::classification classify(const R&)` in R's namespace.");
            return classify(r);
        }
    }
};

/// Compile-time checks of a classifier against the callable's result R, with
/// messages that show the fix as code.
template <class Classifier, class R>
constexpr bool check_classifier() noexcept {
    using C = std::remove_cvref_t<Classifier>;
    if constexpr (std::is_void_v<R>) {
        // A void callable's classifier sees resil::unit (or nothing): one that
        // takes only exceptions, without resil::classifier, would be silently
        // ignored and the exception would propagate.
        static_assert(judges_exceptions<C> || std::is_invocable_v<C&, const unit&> ||
                          !std::is_invocable_v<C&, const std::exception_ptr&>,
                      "resil: this classifier takes only exceptions, and the callable returns void, so it would "
                      "never be asked: exceptions propagate unless the classifier is a resil::classifier. Write "
                      "pipe(fn, resil::classifier{resil::always_success, [](const std::exception_ptr&) { "
                      "return resil::verdict::retryable; }})");
        return true;
    } else {
        using V = std::remove_cvref_t<R>;
        if constexpr (std::is_invocable_v<C&, const V&>) {
            using returned = std::invoke_result_t<C&, const V&>;
            static_assert(!std::is_same_v<std::remove_cvref_t<returned>, bool>,
                          "resil: the classifier returns bool; it must return resil::verdict (or "
                          "resil::classification), which can say retryable, permanent or ambiguous. Write "
                          "[](const R& r) { return ok(r) ? resil::verdict::success : resil::verdict::retryable; }");
            static_assert(std::is_same_v<std::remove_cvref_t<returned>, bool> ||
                              std::is_convertible_v<returned, classification>,
                          "resil: the classifier must return resil::verdict or resil::classification. Write "
                          "[](const R& r) { return ok(r) ? resil::verdict::success : resil::verdict::retryable; }");
        } else {
            static_assert(!std::is_invocable_v<C&, const std::exception_ptr&>,
                          "resil: this classifier takes only exceptions; results need one too. Write "
                          "resil::classifier{[](const R& r) { return ok(r) ? resil::verdict::success : "
                          "resil::verdict::retryable; }, [](const std::exception_ptr&) { return "
                          "resil::verdict::retryable; }}");
            static_assert(std::is_invocable_v<C&, const std::exception_ptr&>,
                          "resil: the classifier cannot be called with the callable's result (const R&). Write "
                          "[](const R& r) { return ok(r) ? resil::verdict::success : resil::verdict::retryable; }, "
                          "with R the type the callable returns");
        }
        return true;
    }
}

template <class F, class Ctx>
decltype(auto) invoke_callable(F& f, Ctx& ctx) {
    if constexpr (std::is_invocable_v<F&, Ctx&>)
        return std::invoke(f, ctx);
    else if constexpr (std::is_invocable_v<F&>)
        return std::invoke(f);
    else
        static_assert(std::is_invocable_v<F&>,
                      "resil: the callable must take the context (resil::basic_context<Clock>&) or nothing");
}

template <class F, class Ctx>
using callable_result_t = decltype(invoke_callable(std::declval<F&>(), std::declval<Ctx&>()));

template <class R>
using value_of_t = std::conditional_t<std::is_void_v<R>, unit, std::remove_cvref_t<R>>;

}  // namespace detail

/// A composed pipeline; made by resil::pipeline(...).
template <clock Clock, class Listener, class... Policies>
class basic_pipeline {
public:
    /// The clock type it reads.
    using clock_type = Clock;

    /// The clock, the listener and the policies, outermost first
    /// (resil::pipeline() deduces them).
    constexpr basic_pipeline(Clock c, Listener l, Policies... policies)
        : clock_(std::move(c)), listener_(std::move(l)), policies_(std::move(policies)...) {}

    /// Runs `fn` through the policies with a fresh context.
    template <class F, class Classifier = detail::default_classifier>
    auto operator()(F&& fn, Classifier classify = {}) const {
        // Built in place, with nothing to give back: no call_context.
        pipeline_context_type pctx{clock_, detail::unwrap(listener_)};
        return run_call(pctx, fn, classify);
    }

    /// Runs `fn` with a context the caller prepared (stop token, upstream
    /// deadline, idempotency); `ctx` holds the final state afterwards, also
    /// when an exception escapes. This is also how pipelines nest: an inner
    /// pipeline given the outer one's context honours its deadline, stop
    /// token and idempotency key.
    template <class F, class Classifier = detail::default_classifier>
    auto execute(basic_context<Clock>& ctx, F&& fn, Classifier classify = {}) const {
        call_context_type call{ctx, clock_, detail::unwrap(listener_)};
        return run_call(call.get(), fn, classify);
    }

    /// The I-th policy as given (a reference_wrapper stays one).
    template <std::size_t I>
    [[nodiscard]] const auto& policy() const noexcept {
        return std::get<I>(policies_);
    }
    /// The clock every call's context reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// The same pipeline, telling `listener` about every event.
    template <class L>
    [[nodiscard]] auto with_listener(L listener) const {
        detail::require_listener<L>();
        return std::apply(
            [&](const auto&... p) { return basic_pipeline<Clock, L, Policies...>(clock_, std::move(listener), p...); },
            policies_);
    }

private:
    using call_context_type =
        detail::call_context<Clock, std::remove_reference_t<decltype(detail::unwrap(std::declval<const Listener&>()))>>;
    // The context the policies see: the caller's plus this pipeline's listener.
    using pipeline_context_type = typename call_context_type::context_type;

    template <class F, class Classifier>
    auto run_call(pipeline_context_type& pctx, F& fn, Classifier& classify) const {
        using result_type = detail::callable_result_t<F, basic_context<Clock>>;
        using value_type = detail::value_of_t<result_type>;
        static_assert(detail::check_classifier<Classifier, result_type>());

        if (detail::refused_before_start(pctx)) return outcome<value_type>::rejected(reason::cancelled);
        auto innermost = [&fn, &classify](pipeline_context_type& c) -> outcome<value_type> {
            return attempt<value_type>(c, fn, classify);
        };
        const detail::call_report<pipeline_context_type> report{pctx};
        try {
            auto out = run<0>(pctx, innermost);
            report.finished(out);
            return out;
        } catch (...) {
            report.threw();
            throw;
        }
    }

    // Policy I around the rest: its execute() (for resil's policies, the
    // blocking driver of their steps, detail::run_steps, with the breaker's
    // fast path written out); a policy written only as steps
    // (resil/policy_steps.hpp), by that driver here.
    template <std::size_t I, class Ctx, class Innermost>
    auto run(Ctx& ctx, Innermost& innermost) const {
        if constexpr (I == sizeof...(Policies)) {
            return innermost(ctx);
        } else {
            const auto& policy = detail::unwrap(std::get<I>(policies_));
            auto next = [this, &innermost](Ctx& c) { return this->run<I + 1>(c, innermost); };
            if constexpr (requires { policy.execute(ctx, next); })
                return policy.execute(ctx, next);  // for resil's policies, their steps' driver
            else
                return detail::run_steps(policy, ctx, next);
        }
    }

    template <class T, class Ctx, class F, class Classifier>
    static outcome<T> attempt(Ctx& ctx, F& fn, Classifier& classify) {
        const auto started = detail::begin_attempt(ctx);
        auto out = judged<T>(ctx, fn, classify);
        detail::end_attempt(ctx, started, out);
        return out;
    }

    template <class T, class Ctx, class F, class Classifier>
    static outcome<T> judged(Ctx& ctx, F& fn, Classifier& classify) {
        if constexpr (detail::judges_exceptions<Classifier>) {
            try {
                return call<T>(ctx, fn, classify);
            } catch (...) {
                return detail::judged_exception<T>(classify, std::current_exception());
            }
        } else {
            return call<T>(ctx, fn, classify);
        }
    }

    template <class T, class Ctx, class F, class Classifier>
    static outcome<T> call(Ctx& ctx, F& fn, Classifier& classify) {
        basic_context<Clock>& user_ctx = ctx;
        using R = detail::callable_result_t<F, basic_context<Clock>>;
        if constexpr (std::is_void_v<R>) {
            detail::invoke_callable(fn, user_ctx);
            return detail::judged_void<T>(classify);
        } else {
            decltype(auto) r = detail::invoke_callable(fn, user_ctx);
            return detail::judged_value<T>(classify, std::forward<decltype(r)>(r));
        }
    }

    [[no_unique_address]] Clock clock_;
    [[no_unique_address]] Listener listener_;
    std::tuple<Policies...> policies_;
};

/// Composes `policies` outer → inner on the real clock.
template <class... Policies>
    requires(!clock<std::remove_cvref_t<Policies>> && ...)
[[nodiscard]] constexpr auto pipeline(Policies... policies) {
    return basic_pipeline<steady_clock, no_listener, Policies...>(steady_clock{}, no_listener{}, std::move(policies)...);
}

/// Composes `policies` outer → inner on `clock` (e.g. a manual clock in tests).
template <clock Clock, class... Policies>
[[nodiscard]] constexpr auto pipeline(Clock clock, Policies... policies) {
    return basic_pipeline<Clock, no_listener, Policies...>(std::move(clock), no_listener{}, std::move(policies)...);
}

}  // namespace resil
