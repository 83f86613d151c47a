// resil/asio/pipeline.hpp — the asynchronous pipeline: resil's policies
// composed so that `co_await` runs a call, on standalone Asio.
//
//   auto pipe = resil::asio::pipeline(
//       resil::deadline_policy{250ms},
//       resil::retry_policy{{.budget = &budget}},
//       std::ref(breaker),                            // shared with blocking callers
//       resil::timeout_policy{{.total = 150ms}});
//
//   // In a coroutine:
//   resil::outcome<reply> out = co_await pipe([&](resil::context& ctx) -> asio::awaitable<reply> {
//       co_return co_await fetch(ctx);                 // honours ctx.limits_for_attempt()
//   }, classify);
//
//   // With any completion token (callback, use_future, deferred, use_awaitable):
//   resil::asio::async_call(pipe, io.get_executor(), fn, classify,
//                           [](std::exception_ptr e, resil::outcome<reply> out) { ... });
//
// The same policies, options, shared state, classifiers, listeners and
// events as resil::pipeline (resil/pipeline.hpp), in the same order, driven
// by the same decision cores (resil/asio/policies.hpp): given the same
// results on the manual clock both emit the same events. The callable takes
// the context (resil::basic_context<Clock>&) or nothing and returns an
// asio::awaitable<R>; a callable taking (context&, completion token) is
// called with asio::use_awaitable.
//
// Cancellation. A call's Asio cancellation (the slot of the caller's
// coroutine or completion handler) ends waits between attempts at once and
// reaches the attempt in flight, which then ends as reason::cancelled. It is
// bridged to the context's std::stop_token: ctx.stop_token() fires too, so a
// callable that watches it (the curl clients do) stops as well. A stop
// token the caller gave (call_options::stop) does the same. On a real
// clock, the call's deadline cancels the attempt in flight when it passes:
// the callable need not watch the time to be cut off (it should still pass
// ctx.limits_for_attempt() to its client, so that the attempt ends by
// itself and cleanly).
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_state.hpp>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "../clock.hpp"
#include "../context.hpp"
#include "../events.hpp"
#include "../outcome.hpp"
#include "../pipeline.hpp"
#include "../policy_steps.hpp"
#include "../detail/pipeline_call.hpp"
#include "policies.hpp"
#include "waiter.hpp"

namespace resil::asio {

namespace detail {

/// Starts the callable's attempt: an awaitable, not yet running.
template <class F, class Ctx>
auto start_attempt(F& f, Ctx& ctx) {
    if constexpr (std::is_invocable_v<F&, Ctx&>)
        return std::invoke(f, ctx);
    else if constexpr (std::is_invocable_v<F&, Ctx&, const ::asio::use_awaitable_t<>&>)
        return std::invoke(f, ctx, ::asio::use_awaitable);
    else if constexpr (std::is_invocable_v<F&>)
        return std::invoke(f);
    else
        static_assert(std::is_invocable_v<F&>,
                      "resil::asio: the callable must take the context (resil::basic_context<Clock>&), the "
                      "context and a completion token, or nothing, and return an asio::awaitable<R>");
}

template <class A>
struct awaitable_result {
    static_assert(always_false<A>, "resil::asio: the callable must return an asio::awaitable<R>");
};
template <class T, class Executor>
struct awaitable_result<::asio::awaitable<T, Executor>> {
    using type = T;
};

/// R of the asio::awaitable<R> the callable returns.
template <class F, class Ctx>
using callable_result_t =
    typename awaitable_result<decltype(start_attempt(std::declval<F&>(), std::declval<Ctx&>()))>::type;

/// Who cut an attempt short: nobody, the caller's cancellation, the deadline.
enum class cut_by : std::uint8_t { none, caller, deadline };

/// What a guarded attempt completes with.
template <class V>
struct guarded_result {
    std::exception_ptr error;
    std::optional<V> value;
    cut_by cut = cut_by::none;
};

/// The call's std::stop_source, made when an attempt first needs one, with
/// the caller's own stop token chained to it; the context gets its own
/// token back when this goes.
struct forward_stop {
    std::stop_source* to;
    void operator()() const noexcept { to->request_stop(); }
};

template <class Clock>
struct call_cancellation {
    call_cancellation() = default;
    call_cancellation(const call_cancellation&) = delete;
    call_cancellation& operator=(const call_cancellation&) = delete;
    ~call_cancellation() {
        if (!ctx) return;
        chained.reset();
        ctx->set_stop_token(std::move(original));
    }

    std::optional<std::stop_source> source;  // declared first: outlives the callback
    std::optional<std::stop_callback<forward_stop>> chained;
    std::stop_token original;
    basic_context<Clock>* ctx = nullptr;

    std::stop_source& bridge(basic_context<Clock>& c) {
        if (!ctx) {
            ctx = &c;
            source.emplace();
            original = c.stop_token();
            if (original.stop_possible()) chained.emplace(original, forward_stop{&*source});
            c.set_stop_token(source->get_token());
        }
        return *source;
    }
};

/// One guarded attempt in flight: the attempt runs as a child coroutine
/// whose cancellation this state owns, so that both the caller's
/// cancellation and the deadline can cut it, and the context's stop source
/// fires with them. Shared by the child's completion and the deadline
/// timer's handler; the caller's slot points at it without owning it (the
/// slot is cleared before the completion).
template <class V, class Handler>
struct guarded_state {
    guarded_state(const ::asio::any_io_executor& ex, Handler h, std::stop_source* call, std::stop_source* attempt)
        : handler(std::move(h)), timer(ex), call_stop(call), attempt_stop(attempt) {}

    void cut_short(cut_by by) {
        if (done || cut != cut_by::none) return;
        cut = by;
        // The callable's stop callbacks run here, on the executor. The
        // deadline stops this attempt only; the caller stops the call.
        (by == cut_by::caller ? call_stop : attempt_stop)->request_stop();
        inner.emit(::asio::cancellation_type::all);
    }

    Handler handler;
    ::asio::cancellation_signal inner;
    ::asio::steady_timer timer;
    ::asio::cancellation_slot outer;
    std::stop_source* call_stop;
    std::stop_source* attempt_stop;
    cut_by cut = cut_by::none;
    bool done = false;
};

template <class V>
struct guarded_initiation {
    template <class Handler, class Clock>
    void operator()(Handler handler, ::asio::any_io_executor ex, ::asio::awaitable<std::optional<V>> attempt,
                    std::stop_source* call_stop, std::stop_source* attempt_stop, time_point deadline,
                    Clock clock) const {
        using state_type = guarded_state<V, Handler>;
        auto state = std::make_shared<state_type>(ex, std::move(handler), call_stop, attempt_stop);
        auto outer = ::asio::get_associated_cancellation_slot(state->handler);
        if (outer.is_connected()) {
            state->outer = outer;
            state_type* raw = state.get();
            outer.assign([raw](::asio::cancellation_type) { raw->cut_short(cut_by::caller); });
        }
        if (deadline != time_point::max()) {
            const auto left = deadline - clock.now();
            state->timer.expires_after(left > duration::zero() ? left : duration::zero());
            state->timer.async_wait([state](const std::error_code& ec) {
                if (!ec) state->cut_short(cut_by::deadline);
            });
        }
        auto& signal = state->inner;
        ::asio::co_spawn(
            ex, std::move(attempt),
            ::asio::bind_cancellation_slot(
                signal.slot(), [state, ex](std::exception_ptr e, std::optional<V> value) mutable {
                    state->done = true;
                    state->timer.cancel();
                    if (state->outer.is_connected()) state->outer.clear();
                    auto h = std::move(state->handler);
                    // The child's frames go only after this returns: the
                    // signal they were bound to must outlive them.
                    ::asio::post(ex, [keep = state] {});
                    std::move(h)(guarded_result<V>{std::move(e), std::move(value), state->cut});
                }));
    }
};

/// Runs `attempt` as a child whose cancellation the caller's slot and the
/// deadline (time_point::max(): none) both reach.
template <class V, class Clock>
::asio::awaitable<guarded_result<V>> run_guarded(::asio::any_io_executor ex,
                                                 ::asio::awaitable<std::optional<V>> attempt,
                                                 std::stop_source* call_stop, std::stop_source* attempt_stop,
                                                 time_point deadline, const Clock& clock) {
    return ::asio::async_initiate<const ::asio::use_awaitable_t<>&, void(guarded_result<V>)>(
        guarded_initiation<V>{}, ::asio::use_awaitable, std::move(ex), std::move(attempt), call_stop, attempt_stop,
        deadline, clock);
}

/// The attempt's awaitable as one whose result is default-constructible (a
/// co_spawn'd child's must be), void as resil::unit.
template <class V, class A>
::asio::awaitable<std::optional<V>> as_optional(A started) {
    if constexpr (std::is_same_v<A, ::asio::awaitable<void>>) {
        co_await std::move(started);
        co_return V{};
    } else {
        co_return co_await std::move(started);
    }
}

}  // namespace detail

namespace detail {
template <class Pipeline>
struct call_initiation;

/// What a nested run of layers reports: nothing (the call's own run does).
struct no_report {
    template <class Ctx>
    explicit no_report(Ctx&) noexcept {}
    template <class Out>
    void finished(const Out&) const noexcept {}
    void threw() const noexcept {}
};
}  // namespace detail

/// An asynchronous pipeline; made by resil::asio::pipeline(...).
template <clock Clock, class Listener, class... Policies>
class basic_pipeline {
    using listener_type = std::remove_reference_t<decltype(resil::detail::unwrap(std::declval<const Listener&>()))>;
    using call_context_type = resil::detail::call_context<Clock, listener_type>;
    using pctx_type = typename call_context_type::context_type;
    static constexpr std::size_t layer_count = sizeof...(Policies);

    // Each policy checked as the pipeline is built: one short error for a
    // policy without an asynchronous form, naming it.
    static_assert((detail::require_asynchronous_form<std::remove_cvref_t<std::unwrap_reference_t<Policies>>>::value &&
                   ...));

public:
    using clock_type = Clock;
    /// The value type of an outcome of callable F.
    template <class F>
    using value_type_for = resil::detail::value_of_t<detail::callable_result_t<F, basic_context<Clock>>>;
    /// The outcome a call of F completes with.
    template <class F>
    using outcome_for = outcome<value_type_for<F>>;

    constexpr basic_pipeline(Clock c, Listener l, Policies... policies)
        : clock_(std::move(c)), listener_(std::move(l)), policies_(std::move(policies)...) {}

    /// Runs `fn` through the policies with a fresh context, in the awaiting
    /// coroutine: `auto out = co_await pipe(fn, classify);`.
    template <class F, class Classifier = resil::detail::default_classifier>
    ::asio::awaitable<outcome_for<F>> operator()(F fn, Classifier classify = {}) const {
        return drive<0, F, Classifier>({}, nullptr, std::move(fn), std::move(classify));
    }

    /// Runs `fn` with a context the caller prepared (stop token, upstream
    /// deadline, idempotency), as resil::basic_pipeline::execute does;
    /// `ctx` must outlive the call and holds its final state afterwards.
    template <class F, class Classifier = resil::detail::default_classifier>
    ::asio::awaitable<outcome_for<F>> execute(basic_context<Clock>& ctx, F fn, Classifier classify = {}) const {
        return drive<0, F, Classifier>({}, &ctx, std::move(fn), std::move(classify));
    }

    /// The I-th policy as given (a reference_wrapper stays one).
    template <std::size_t I>
    [[nodiscard]] const auto& policy() const noexcept {
        return std::get<I>(policies_);
    }
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// The same pipeline, telling `listener` about every event.
    template <class L>
    [[nodiscard]] auto with_listener(L listener) const {
        resil::detail::require_listener<L>();
        return std::apply(
            [&](const auto&... p) { return basic_pipeline<Clock, L, Policies...>(clock_, std::move(listener), p...); },
            policies_);
    }

private:
    template <class>
    friend struct detail::call_initiation;

    /// The coroutine async_call() spawns: a call whose cancellation is the
    /// completion handler's slot, of any type (terminal, partial, total).
    template <class F, class Classifier>
    ::asio::awaitable<std::optional<outcome_for<F>>> spawned(std::optional<basic_call_options<Clock>> options, F fn,
                                                             Classifier classify) const {
        co_await ::asio::this_coro::reset_cancellation_state(::asio::enable_total_cancellation());
        co_await ::asio::this_coro::throw_if_cancelled(false);  // a cancelled call ends with an outcome
        if (options) {
            basic_context<Clock> ctx{std::move(*options)};
            co_return co_await execute(ctx, std::move(fn), std::move(classify));
        }
        co_return co_await (*this)(std::move(fn), std::move(classify));
    }

    template <std::size_t I>
    using policy_t = std::remove_cvref_t<std::unwrap_reference_t<std::tuple_element_t<I, std::tuple<Policies...>>>>;
    template <std::size_t I>
    const policy_t<I>& policy_at() const noexcept {
        return resil::detail::unwrap(std::get<I>(policies_));
    }

    // How layer I runs for outcome Out: its steps, or (a policy of the
    // user's not written as steps) its async_execute around the layers inside
    // it, in a coroutine of their own.
    template <std::size_t I, class Out>
    static constexpr bool stepped = policy_steps<policy_t<I>, pctx_type, Out>;

    // Per layer and call: what a layer keeps between its way in and its way
    // out, from enter() to leave() (nothing for a nested policy, which keeps
    // its own frame).
    struct no_state {};
    template <class P, class Out>
    static auto state_of() {
        if constexpr (policy_steps<P, pctx_type, Out>)
            return std::optional<resil::detail::call_state_t<P, pctx_type, Out>>{};
        else
            return no_state{};
    }
    template <class Out>
    using states_t = std::tuple<decltype(state_of<std::remove_cvref_t<std::unwrap_reference_t<Policies>>, Out>())...>;

    // What the layers of one call share: the context, the callable, its
    // classifier and the call's cancellation (all in the call's frame).
    template <class F, class Classifier>
    struct call_env {
        pctx_type* ctx = nullptr;
        F* fn = nullptr;
        Classifier* classify = nullptr;
        detail::call_cancellation<Clock>* cancel = nullptr;
    };

    // Calls f(integral_constant<I>) for the runtime index i in [K, layer_count).
    template <std::size_t K, class R, class Fn>
    static R dispatch(std::size_t i, Fn&& f) {
        R r{};
        if constexpr (K < layer_count) {
            [&]<std::size_t... Is>(std::index_sequence<Is...>) {
                (void)((i == K + Is ? (r = f(std::integral_constant<std::size_t, K + Is>{}), true) : false) || ...);
            }(std::make_index_sequence<layer_count - K>{});
        }
        return r;
    }

    // Layer I's way in: its enter(); a nested policy starts its coroutine
    // (`nested`), which runs every layer inside it.
    template <std::size_t I, class Out, class F, class Classifier>
    layer_in enter_layer(pctx_type& ctx, states_t<Out>& states, std::optional<::asio::awaitable<Out>>& nested,
                         const call_env<F, Classifier>& env) const {
        using P = policy_t<I>;
        if constexpr (stepped<I, Out>) {
            return settled_in<I, Out>(states, policy_at<I>().enter(ctx, std::get<I>(states).emplace()));
        } else if constexpr (detail::nests<P>) {
            nested.emplace(policy_at<I>().async_execute(ctx, [this, inner = env](pctx_type& c) mutable {
                inner.ctx = &c;
                return this->template drive<I + 1, F, Classifier>(inner, nullptr, std::nullopt, std::nullopt);
            }));
            return layer_in::proceed();
        } else {
            return layer_in::refuse(reason::failed);  // not reached: refused as the pipeline is built
        }
    }

    // The wait enter() asked for: until its instant, on the policy's clock;
    // or the policy's own async_wait (a wait on something other than time:
    // the Redis limiter's round trip).
    template <std::size_t I, class Out>
    ::asio::awaitable<bool> wait_in_layer(pctx_type& ctx, states_t<Out>& states, time_point until) const {
        if constexpr (stepped<I, Out>) {
            using S = resil::detail::call_state_t<policy_t<I>, pctx_type, Out>;
            if constexpr (resil::detail::waits_asynchronously<policy_t<I>, pctx_type, S>)
                return policy_at<I>().async_wait(ctx, *std::get<I>(states), until);
        }
        return wait_until(resil::detail::wait_clock(policy_at<I>(), ctx), until, ctx.stop_token());
    }

    template <std::size_t I, class Out>
    layer_in waited_layer(pctx_type& ctx, states_t<Out>& states, bool reached) const {
        if constexpr (stepped<I, Out>) {
            using S = resil::detail::call_state_t<policy_t<I>, pctx_type, Out>;
            if constexpr (resil::detail::waits_on_entry<policy_t<I>, pctx_type, S>)
                return settled_in<I, Out>(states, policy_at<I>().waited(ctx, *std::get<I>(states), reached));
        }
        return layer_in::proceed();
    }

    // A layer that refuses is done: its state goes at once.
    template <std::size_t I, class Out>
    static layer_in settled_in(states_t<Out>& states, layer_in in) {
        if (in.refuses()) std::get<I>(states).reset();
        return in;
    }

    // Layer I's way out: leave(), or leave_again() after its retried().
    template <std::size_t I, class Out>
    layer_out leave_layer(pctx_type& ctx, states_t<Out>& states, Out& out, bool again) const {
        if constexpr (stepped<I, Out>) {
            using S = resil::detail::call_state_t<policy_t<I>, pctx_type, Out>;
            layer_out step;
            if constexpr (resil::detail::retries_on_leave<policy_t<I>, pctx_type, S, Out>)
                step = again ? policy_at<I>().leave_again(ctx, *std::get<I>(states), out)
                             : policy_at<I>().leave(ctx, *std::get<I>(states), out);
            else
                step = policy_at<I>().leave(ctx, *std::get<I>(states), out);
            if (!step.waits()) std::get<I>(states).reset();
            return step;
        } else {
            return layer_out::proceed();  // left within its own coroutine
        }
    }

    template <std::size_t I, class Out>
    ::asio::awaitable<bool> wait_out_layer(pctx_type& ctx, duration d) const {
        return wait_for(resil::detail::wait_clock(policy_at<I>(), ctx), d, ctx.stop_token());
    }

    template <std::size_t I, class Out>
    bool retried_layer(pctx_type& ctx, states_t<Out>& states, Out& out, bool waited_all) const {
        if constexpr (stepped<I, Out>) {
            using S = resil::detail::call_state_t<policy_t<I>, pctx_type, Out>;
            if constexpr (resil::detail::retries_on_leave<policy_t<I>, pctx_type, S, Out>) {
                if (policy_at<I>().retried(ctx, *std::get<I>(states), out, waited_all)) return true;
            }
            std::get<I>(states).reset();
        }
        return false;
    }

    // The layers still entered, innermost first, when an exception leaves
    // the call: each puts back what it changed in the context (unwind) and
    // gives back what it holds (its state goes), as the blocking pipeline's
    // frames would.
    template <std::size_t K, class Out>
    void unwind(pctx_type& ctx, states_t<Out>& states) const noexcept {
        for (std::size_t i = layer_count; i-- > K;)
            dispatch<K, bool>(i, [&](auto I) {
                constexpr std::size_t at = decltype(I)::value;
                if constexpr (stepped<at, Out>) {
                    auto& s = std::get<at>(states);
                    using S = resil::detail::call_state_t<policy_t<at>, pctx_type, Out>;
                    if constexpr (resil::detail::unwinds<policy_t<at>, pctx_type, S>)
                        if (s) policy_at<at>().unwind(ctx, *s);
                    s.reset();
                }
                return true;
            });
    }

    // Runs layers [K, layer_count) and the attempt in one coroutine: in
    // through each layer's enter, the attempt, out through each leave, and
    // in again from a retry's layer after its wait. K == 0 is the call
    // itself, which owns the context, the callable and the classifier; a
    // policy of the user's runs the layers inside it with K > 0.
    template <std::size_t K, class F, class Classifier>
    ::asio::awaitable<outcome_for<F>> drive(call_env<F, Classifier> env, basic_context<Clock>* given,
                                            std::optional<F> own_fn, std::optional<Classifier> own_classify) const {
        using value_type = value_type_for<F>;
        using Out = outcome<value_type>;
        std::optional<call_context_type> call;  // K == 0: the call's context, given back when it ends
        detail::call_cancellation<Clock> own_cancel;  // declared after: gives the context its stop token back first
        if constexpr (K == 0) {
            static_assert(
                resil::detail::check_classifier<Classifier, detail::callable_result_t<F, basic_context<Clock>>>());
            if (given)
                call.emplace(*given, clock_, resil::detail::unwrap(listener_));
            else
                call.emplace(clock_, resil::detail::unwrap(listener_));  // built in place, as the blocking pipeline's
            env = {&call->get(), &*own_fn, &*own_classify, &own_cancel};
            if (resil::detail::refused_before_start(call->get())) co_return Out::rejected(reason::cancelled);
        }
        pctx_type& ctx = *env.ctx;
        using report_type = std::conditional_t<K == 0, resil::detail::call_report<pctx_type>, detail::no_report>;
        const report_type report{ctx};
        states_t<Out> states;
        std::array<bool, layer_count + 1> retrying{};  // layers whose retried() sent the call in again
        try {
            std::size_t i = K;  // the next layer in
            std::optional<Out> out;
            for (;;) {
                // In: each layer's enter, until one refuses the call or all let it through.
                while (!out && i < layer_count) {
                    std::optional<::asio::awaitable<Out>> nested;
                    auto in = dispatch<K, layer_in>(i, [&](auto I) {
                        return this->enter_layer<decltype(I)::value, Out>(ctx, states, nested, env);
                    });
                    if (in.waits()) {
                        const bool reached = co_await dispatch<K, ::asio::awaitable<bool>>(i, [&](auto I) {
                            return this->wait_in_layer<decltype(I)::value, Out>(ctx, states, in.until());
                        });
                        in = dispatch<K, layer_in>(
                            i, [&](auto I) { return this->waited_layer<decltype(I)::value, Out>(ctx, states, reached); });
                    }
                    if (nested) {
                        out.emplace(co_await std::move(*nested));
                        break;  // the user's policy has run its whole course
                    }
                    if (!in.proceeds()) {
                        out.emplace(Out::rejected(in.reason(), in.retry_after()));
                        break;
                    }
                    ++i;
                }
                if (!out) {
                    // The attempt. Guarded (a child coroutine whose
                    // cancellation the call owns) when something may cut it
                    // short: the caller's cancellation, or a deadline on a
                    // real clock. Otherwise awaited directly: nothing to
                    // allocate.
                    const auto attempt_started = resil::detail::begin_attempt(ctx);
                    const ::asio::cancellation_state state = co_await ::asio::this_coro::cancellation_state;
                    bool guarded = state.slot().is_connected();
                    if constexpr (!waiter_traits<Clock>::virtual_time)
                        guarded = guarded || ctx.deadline_instant() != time_point::max();
                    std::exception_ptr error;
                    std::optional<value_type> value;
                    detail::cut_by cut = detail::cut_by::none;
                    basic_context<Clock>& user_ctx = ctx;
                    if (guarded) {
                        // In a coroutine of its own: its frame is made only when needed.
                        auto r = co_await guarded_attempt<value_type>(ctx, *env.fn, *env.cancel);
                        error = std::move(r.error);
                        value = std::move(r.value);
                        cut = r.cut;
                        if (error && cut == detail::cut_by::none && !resil::detail::judges_exceptions<Classifier>)
                            std::rethrow_exception(error);  // unjudged exceptions propagate, as in the blocking pipeline
                    } else {
                        try {
                            if constexpr (std::is_void_v<detail::callable_result_t<F, basic_context<Clock>>>) {
                                co_await detail::start_attempt(*env.fn, user_ctx);
                                value.emplace();
                            } else {
                                value.emplace(co_await detail::start_attempt(*env.fn, user_ctx));
                            }
                        } catch (...) {
                            if constexpr (resil::detail::judges_exceptions<Classifier>)
                                error = std::current_exception();
                            else
                                throw;
                        }
                    }
                    out.emplace(judged<F, value_type>(*env.classify, std::move(error), value, cut));
                    resil::detail::end_attempt(ctx, attempt_started, *out);
                }
                // Out: each entered layer's leave, innermost first; a retry
                // may wait and send the call in again from the layer after it.
                bool again = false;
                while (i > K) {
                    --i;
                    const auto step = dispatch<K, layer_out>(i, [&](auto I) {
                        return this->leave_layer<decltype(I)::value, Out>(ctx, states, *out, retrying[i]);
                    });
                    if (step.waits()) {
                        const bool waited_all = co_await dispatch<K, ::asio::awaitable<bool>>(i, [&](auto I) {
                            return this->wait_out_layer<decltype(I)::value, Out>(ctx, step.wait());
                        });
                        if (dispatch<K, bool>(i, [&](auto I) {
                                return this->retried_layer<decltype(I)::value, Out>(ctx, states, *out, waited_all);
                            })) {
                            retrying[i] = true;
                            ++i;
                            again = true;
                            out.reset();  // the retry's loop keeps the attempt's outcome
                            break;
                        }
                    }
                    retrying[i] = false;
                }
                if (!again) break;
            }
            report.finished(*out);
            co_return std::move(*out);
        } catch (...) {
            unwind<K, Out>(ctx, states);
            report.threw();
            throw;
        }
    }

    // The callable's attempt as a child coroutine whose cancellation the
    // call owns. The call's stop source (the caller's cancellation) and this
    // attempt's, which the deadline fires: a deadline cuts the attempt short
    // without making the call look cancelled.
    template <class V, class F>
    static ::asio::awaitable<detail::guarded_result<V>> guarded_attempt(pctx_type& ctx, F& fn,
                                                                       detail::call_cancellation<Clock>& cancel) {
        auto& call_source = cancel.bridge(ctx);
        std::stop_source attempt_source;
        std::stop_callback<detail::forward_stop> chained(call_source.get_token(),
                                                         detail::forward_stop{&attempt_source});
        struct restore_stop {
            pctx_type& ctx;
            std::stop_token call;
            ~restore_stop() { ctx.set_stop_token(std::move(call)); }
        } restore_call_token{ctx, call_source.get_token()};
        ctx.set_stop_token(attempt_source.get_token());
        const auto deadline = waiter_traits<Clock>::virtual_time ? time_point::max() : ctx.deadline_instant();
        basic_context<Clock>& user_ctx = ctx;
        co_return co_await detail::run_guarded<V>(co_await ::asio::this_coro::executor,
                                                  detail::as_optional<V>(detail::start_attempt(fn, user_ctx)),
                                                  &call_source, &attempt_source, deadline, ctx.clock());
    }

    // The attempt's outcome, judged as the blocking pipeline judges it
    // (resil/detail/pipeline_call.hpp); an attempt cut short by the call is a
    // failure that may have reached the server.
    template <class F, class T, class Classifier>
    static outcome<T> judged(Classifier& classify, std::exception_ptr error, std::optional<T>& value,
                             detail::cut_by cut) {
        if (!error) [[likely]] {
            if constexpr (std::is_void_v<detail::callable_result_t<F, basic_context<Clock>>>)
                return resil::detail::judged_void<T>(classify);
            else
                return resil::detail::judged_value<T>(classify, std::move(*value));
        }
        if (cut != detail::cut_by::none) {
            auto out = outcome<T>::from_exception(error, classification(verdict::ambiguous));
            if (cut == detail::cut_by::caller) out.fail(reason::cancelled);
            return out;
        }
        if constexpr (resil::detail::judges_exceptions<Classifier>)
            return resil::detail::judged_exception<T>(classify, std::move(error));
        else
            std::rethrow_exception(error);  // not reached: unjudged exceptions propagate before
    }

    [[no_unique_address]] Clock clock_;
    [[no_unique_address]] Listener listener_;
    std::tuple<Policies...> policies_;
};

/// Composes `policies` outer → inner on the real clock, for asynchronous calls.
template <class... Policies>
    requires(!clock<std::remove_cvref_t<Policies>> && ...)
[[nodiscard]] constexpr auto pipeline(Policies... policies) {
    return basic_pipeline<steady_clock, no_listener, Policies...>(steady_clock{}, no_listener{},
                                                                   std::move(policies)...);
}

/// Composes `policies` outer → inner on `clock` (e.g. a manual clock in tests).
template <clock Clock, class... Policies>
[[nodiscard]] constexpr auto pipeline(Clock clock, Policies... policies) {
    return basic_pipeline<Clock, no_listener, Policies...>(std::move(clock), no_listener{}, std::move(policies)...);
}

namespace detail {

template <class Pipeline>
struct call_initiation {
    template <class Handler, class Executor, class Options, class F, class Classifier>
    void operator()(Handler handler, const Pipeline* pipe, Executor ex, Options options, F fn,
                    Classifier classify) const {
        using result = typename Pipeline::template outcome_for<F>;
        auto slot = ::asio::get_associated_cancellation_slot(handler);
        auto handler_ex = ::asio::get_associated_executor(handler, ex);
        ::asio::co_spawn(
            ex, pipe->spawned(std::move(options), std::move(fn), std::move(classify)),
            ::asio::bind_cancellation_slot(
                slot, ::asio::bind_executor(handler_ex, [h = std::move(handler)](
                                                            std::exception_ptr e, std::optional<result> out) mutable {
                    // An exception (one nobody judged) leaves no outcome:
                    // the placeholder says so.
                    if (e || !out)
                        std::move(h)(e, result::rejected(reason::failed));
                    else
                        std::move(h)(std::exception_ptr{}, std::move(*out));
                })));
    }
};

}  // namespace detail

/// Runs `fn` through `pipe` on `ex` and completes `token` with
/// void(std::exception_ptr, resil::outcome<T>): a callback, asio::use_future,
/// asio::experimental::deferred, asio::use_awaitable, ... The exception is
/// one that left the pipeline (no classifier judged it); then the outcome is
/// a placeholder rejection (reason::failed). The handler's cancellation slot
/// cancels the call; `pipe` must outlive it. `options` (deadline, stop
/// token, idempotency) as resil::basic_call_options.
template <class Pipeline, class Executor, class F, class Classifier, class Token>
auto async_call(const Pipeline& pipe, Executor ex, std::optional<basic_call_options<typename Pipeline::clock_type>> options,
                F fn, Classifier classify, Token&& token) {
    using result = typename Pipeline::template outcome_for<F>;
    return ::asio::async_initiate<Token, void(std::exception_ptr, result)>(
        detail::call_initiation<Pipeline>{}, token, &pipe, std::move(ex), std::move(options), std::move(fn),
        std::move(classify));
}

/// async_call with a fresh context.
template <class Pipeline, class Executor, class F, class Classifier, class Token>
auto async_call(const Pipeline& pipe, Executor ex, F fn, Classifier classify, Token&& token) {
    return async_call(pipe, std::move(ex), std::nullopt, std::move(fn), std::move(classify),
                      std::forward<Token>(token));
}

/// async_call with a fresh context and the default classifier.
template <class Pipeline, class Executor, class F, class Token>
auto async_call(const Pipeline& pipe, Executor ex, F fn, Token&& token) {
    return async_call(pipe, std::move(ex), std::nullopt, std::move(fn), resil::detail::default_classifier{},
                      std::forward<Token>(token));
}

}  // namespace resil::asio
