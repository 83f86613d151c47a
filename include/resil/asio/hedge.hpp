// resil/asio/hedge.hpp — hedged calls on Asio: copies of one call in
// flight at once, the first acceptable answer wins, the others are
// cancelled.
//
//   resil::retry_budget budget;                                  // shared with the retry policy
//   resil::hedge_policy hedge{{.max_hedges = 1, .delay = 50ms, .percentile = 0.95, .budget = &budget}};
//
//   // In a coroutine, alone or as (the body of) a pipeline's callable:
//   resil::curl::response r = co_await resil::asio::hedged(hedge, ctx,
//       [&](resil::context& c, auto token) { return http.async_perform(req, c, std::move(token)); });
//
// The driver of resil::hedge_policy (resil/hedge.hpp), whose rules it
// follows: copy 0 starts at once; while no copy has answered acceptably and
// some copy still runs, copy k (k = 1 … max_hedges) starts k × delay later,
// when the call may be repeated and the retry budget grants it. Whether it
// may be repeated is what copy 0's client said of this request
// (ctx.mark_repeatable, as resil's clients do before their first
// suspension): a context nobody marked by the time a hedge is due is not
// repeatable, whatever its key (a key protects only when it was sent).
// Nothing starts once ctx's stop token has fired. A copy's result is judged by the classifier (the pipelines'; the
// default finds resil::curl::classify by ADL):
//  - success or permanent: a final answer; it wins at once and every other
//    copy is cancelled (terminal cancellation through its own slot: the curl
//    clients remove its transfer) and reported as events::hedge_cancelled;
//  - retryable or ambiguous, or an exception: not final while another copy
//    runs; when none runs any more, the call ends with the first such result
//    (an exception is rethrown), for a retry policy outside to judge;
//  - a failure known never sent (classification::never_sent: a copy the
//    balancer had no endpoint for, or a breaker refused): no answer at all,
//    and no latency; the call ends with it only when no copy was sent.
// A listener or classifier that throws ends the call: every copy is
// cancelled and, once all have completed, hedged() rethrows the first such
// exception.
// The latency of each copy that completed before the call ended is recorded
// in the policy, and so is the run of a loser that outlived the delay (a
// lower bound of its latency; a shorter run says nothing and is not); a
// copy that ended after ctx's stop token fired is not (it was cut short). Losers
// never reach a circuit
// breaker: around hedged() a pipeline sees one attempt, with the winner's
// result (its outcome's attempts() says 1). When the copies return
// outcomes (resil::asio::call_endpoint's), the one hedged() completes with
// says in attempts() how many times the copies ran the callable in all: the
// sum of what each copy's outcome says (1 for a copy sent, 0 for one the
// balancer had no endpoint for), 1 for a copy that threw; losers included.
//
// All copies share `ctx` (its clock, stop token, limits and idempotency key:
// every copy sends the same key). The call's budget deposit is made here
// only when no retry policy made it (ctx.counted_in_budget()), inside a
// pipeline or not.
//
// Cancellation: the awaiting coroutine's cancellation (terminal, partial or
// total; a pipeline's deadline or caller) cancels every copy; the call ends
// once each has completed, with the first failure seen or else the first
// copy's cancelled result. hedged() completes only after every copy it
// started has completed, so `ctx`, `fn` and what they reference are never
// used after it returns; a stopped io_context destroys the copies' frames
// with the call's.
//
// Events go to `listener` (any resil listener; std::ref to share one):
// hedge_started, hedge_refused, hedge_cancelled, hedge_won. The copies run on the
// awaiting coroutine's executor when its handlers never run at once (a
// strand, or an io_context built with concurrency hint 1: asio::io_context
// io{1}); otherwise on a strand made for the call (one allocation).
//
// Memory: the call's state comes from the handler's associated allocator
// (by default Asio's per-thread recycling allocator), the copies' frames
// from Asio's frame recycling. Asio keeps 2 blocks per purpose and thread by
// default; a program that defines ASIO_RECYCLING_ALLOCATOR_CACHE_SIZE=8
// (everywhere: it shapes Asio's per-thread state) hedges with no heap
// allocation per call once warm.
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <array>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/dispatch.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/recycling_allocator.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "../clock.hpp"
#include "../context.hpp"
#include "../events.hpp"
#include "../hedge.hpp"
#include "../outcome.hpp"
#include "../pipeline.hpp"
#include "pipeline.hpp"
#include "waiter.hpp"

namespace resil::asio {

namespace detail {

/// What a hedged call completes with: the winner, or the failure it ends on.
template <class V>
struct hedge_result {
    std::exception_ptr error;
    std::optional<V> value;
};

/// One hedged call: its copies, their cancellation, the timer between them.
/// Shared by the copies' completions and the timer's handler; the caller's
/// slot points at it without owning it (cleared before the completion).
template <class V, class Ctx, class F, class Classifier, class Listener, class Handler>
struct hedge_state : std::enable_shared_from_this<hedge_state<V, Ctx, F, Classifier, Listener, Handler>> {
    static constexpr std::size_t most_copies = hedge_options::max_hedges_limit + 1;
    using clock_type = std::remove_cvref_t<decltype(std::declval<Ctx&>().clock())>;
    static constexpr bool virtual_time = waiter_traits<clock_type>::virtual_time;
    // Copies whose results are outcomes (resil::call_endpoint's) say how many
    // times each ran the callable; the call's result says how many in all.
    static constexpr bool counts_runs = requires(V& v) {
        { v.attempts() } -> std::convertible_to<std::uint32_t>;
        v.set_attempts(std::uint32_t{});
    };

    hedge_state(const hedge_policy& p, Ctx& c, F& f, Classifier& k, Listener& l, Handler h,
                const ::asio::any_io_executor& e)
        : policy(p), ctx(c), fn(f), classify(k), listener(l), handler(std::move(h)), ex(e), timer(e) {}

    void start() {
        // A hedged call is one attempt: only what its copies' client says of
        // this request counts, not a mark left by an earlier call.
        ctx.set_attempt(ctx.attempt());
        if (!ctx.counted_in_budget() && policy.options().budget) {
            policy.count_call(ctx.clock().now());
            ctx.mark_counted_in_budget();
        }
        auto slot = ::asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected()) {
            outer = slot;
            // Weak: the slot's signal may outlive this state (an io_context
            // destroyed mid-call frees the state, not the caller's signal).
            outer.assign([weak = this->weak_from_this()](::asio::cancellation_type) {
                if (auto self = weak.lock()) self->cancel_all();
            });
        }
        hedging = policy.options().max_hedges > 0;
        start_copy();
        if (hedging && !decided) {
            wait = policy.delay(ctx.clock().now());
            arm();
        }
    }

    void start_copy() {
        const std::uint32_t k = started++;
        started_at[k] = ctx.clock().now();
        running[k] = true;
        ++running_count;
        auto self = this->shared_from_this();
        ::asio::co_spawn(ex, run_copy(self, k),
                         ::asio::bind_cancellation_slot(
                             signals[k].slot(), [self, k](std::exception_ptr e, std::optional<V> v) {
                                 self->copy_done(k, std::move(e), std::move(v));
                             }));
    }

    // A copy as a child coroutine of its own, so that each has its own
    // cancellation slot.
    // (as_optional's work done here: one coroutine frame less per copy.)
    static ::asio::awaitable<std::optional<V>> run_copy(std::shared_ptr<hedge_state> self, std::uint32_t k) {
        if (k == 0) self->began = true;
        auto started = start_attempt(self->fn, self->ctx);
        if constexpr (std::is_same_v<decltype(started), ::asio::awaitable<void>>) {
            co_await std::move(started);
            co_return V{};
        } else {
            co_return co_await std::move(started);
        }
    }

    void arm() {
        auto self = this->shared_from_this();
        if constexpr (virtual_time) {
            // No real time passes: the wait is one turn of the executor, after
            // which the clock is moved on as its own sleep would move it.
            ::asio::post(ex, [self] {
                if (self->decided) return;
                resil::sleep_until(self->ctx.clock(), self->ctx.clock().now() + self->wait, {});
                self->hedge_due();
            });
        } else {
            timer.expires_after(wait);
            timer.async_wait([self](const std::error_code& ec) {
                if (!ec) self->hedge_due();
            });
        }
    }

    void hedge_due() {
        if (decided || !hedging || running_count == 0) return;
        if (ctx.stop_requested()) {
            hedging = false;  // a copy now would fail before it starts, and cost a budget token
            return;
        }
        if (!began) {
            // Copy 0 has not begun (its client has not yet marked the
            // context): judge after it has.
            ::asio::post(ex, [self = this->shared_from_this()] { self->hedge_due(); });
            return;
        }
        if (!policy.may_hedge(ctx.repeatable_marked() && ctx.safe_to_repeat())) {
            hedging = false;  // an operation that may not be repeated runs once
            return;
        }
        const std::uint32_t copy = started;
        if (!policy.try_start_hedge(ctx.clock().now())) {
            hedging = false;
            notify(events::hedge_refused{copy});
            return;
        }
        notify(events::hedge_started{copy, wait});
        if (decided) return;  // the listener threw: the call ends
        hedging = copy < policy.options().max_hedges;
        start_copy();
        if (hedging && !decided) arm();
    }

    void copy_done(std::uint32_t k, std::exception_ptr e, std::optional<V> v) {
        running[k] = false;
        --running_count;
        if constexpr (counts_runs) runs += e ? 1u : (v ? v->attempts() : 0u);  // one that threw ran
        if (decided) {
            if (lost[k]) {
                notify(events::hedge_cancelled{k});
            } else if (!have_result) {
                // Cancelled by the caller before any copy completed: the
                // call ends as this copy did.
                result.error = std::move(e);
                result.value = std::move(v);
                have_result = true;
            }
        } else {
            const auto now = ctx.clock().now();
            classification judged{verdict::retryable};
            if (!e) {
                try {
                    judged = classification(std::invoke(classify, *v));
                } catch (...) {
                    fail(std::current_exception());
                }
            }
            // A copy that never left (a balancer with no endpoint for it, a
            // breaker's refusal) says nothing of the latency, and is no answer.
            const bool unsent = !e && judged.never_sent && judged.verdict != verdict::success;
            if (!ctx.stop_requested() && !unsent) policy.record(now, now - started_at[k]);
            const bool final_answer = !e && !unsent &&
                                      (judged.verdict == verdict::success || judged.verdict == verdict::permanent);
            // decided here: the classifier threw. A result that was never
            // sent gives way to any copy's that was.
            if (!decided && (final_answer || !have_result || (result_unsent && !unsent))) {
                result.error = std::move(e);
                result.value = std::move(v);
                have_result = true;
                result_unsent = unsent;
            }
            if (decided) {
                // The classifier threw: fail() cancelled the others.
            } else if (final_answer) {
                decide();
                for (std::uint32_t j = 0; j < started; ++j)
                    if (running[j]) {
                        lost[j] = true;
                        // A loser that outlived the delay is known to take at
                        // least its run: recorded so, it ranks above the
                        // delay, as its real latency would. Without it the
                        // slow tail would vanish from the window and the
                        // learnt delay would sink, hedging ever more calls.
                        const auto ran = now - started_at[j];
                        if (ran >= wait) policy.record(now, ran);
                        signals[j].emit(::asio::cancellation_type::terminal);
                    }
                if (k != 0) notify(events::hedge_won{k, wait});
            } else if (running_count == 0) {
                decide();
            }
        }
        if (decided && running_count == 0) finish();
    }

    // Events reach the listener through here: a listener that throws must
    // not unwind through a copy's completion or the timer's handler, where
    // the call would never finish; it ends the call instead.
    template <class Event>
    void notify(const Event& e) noexcept {
        try {
            resil::emit(listener, e);
        } catch (...) {
            fail(std::current_exception());
        }
    }

    // User code (listener, classifier) threw: every copy is cancelled, none as
    // a loser, and the call ends with the first such exception.
    void fail(std::exception_ptr e) noexcept {
        if (!user_error) user_error = std::move(e);
        cancel_all();
    }

    // The caller's cancellation: every copy is cancelled, none as a loser.
    void cancel_all() {
        if (decided) return;
        decide();
        for (std::uint32_t j = 0; j < started; ++j)
            if (running[j]) signals[j].emit(::asio::cancellation_type::terminal);
    }

    void decide() {
        decided = true;
        hedging = false;
        if constexpr (!virtual_time) timer.cancel();
    }

    // Every copy has completed. The completion is posted: the caller's slot
    // is cleared and the handler runs outside any copy's completion and any
    // emit, and the signals the copies' frames were bound to outlive them.
    void finish() {
        if (finished) return;
        finished = true;
        if (user_error) {
            result.error = user_error;
            result.value.reset();
        }
        if constexpr (counts_runs)
            if (result.value) result.value->set_attempts(runs);
        ::asio::post(ex, [self = this->shared_from_this()] {
            if (self->outer.is_connected()) self->outer.clear();
            auto h = std::move(self->handler);
            std::move(h)(std::move(self->result));
        });
    }

    const hedge_policy& policy;
    Ctx& ctx;
    F& fn;
    Classifier& classify;
    Listener& listener;
    Handler handler;
    ::asio::any_io_executor ex;
    ::asio::steady_timer timer;
    ::asio::cancellation_slot outer;
    std::array<::asio::cancellation_signal, most_copies> signals;
    std::array<time_point, most_copies> started_at{};
    std::array<bool, most_copies> running{};
    std::array<bool, most_copies> lost{};
    hedge_result<V> result;
    std::exception_ptr user_error;  // the first a listener or classifier threw
    duration wait{};
    std::uint32_t started = 0;
    std::uint32_t running_count = 0;
    bool began = false;
    bool hedging = false;
    bool decided = false;
    bool have_result = false;
    std::uint32_t runs = 0;      // what the copies' outcomes say they ran (counts_runs)
    bool result_unsent = false;  // the result held is a copy's that was never sent
    bool finished = false;
};

template <class V>
struct hedge_initiation {
    template <class Handler, class Ctx, class F, class Classifier, class Listener>
    void operator()(Handler handler, ::asio::any_io_executor ex, const hedge_policy* policy, Ctx* ctx, F* fn,
                    Classifier* classify, Listener* listener) const {
        using state_type = hedge_state<V, Ctx, F, Classifier, Listener, Handler>;
        // The state from the handler's allocator, by default Asio's
        // per-thread recycling one: no heap allocation once warm.
        auto alloc = ::asio::get_associated_allocator(handler, ::asio::recycling_allocator<void>{});
        if (serialised(ex)) {
            auto state = std::allocate_shared<state_type>(alloc, *policy, *ctx, *fn, *classify, *listener,
                                                          std::move(handler), ex);
            state->start();
        } else {
            // The copies, the timer and the completion touch the state and
            // ctx: on an executor run by several threads they go through a
            // strand of their own, the start included.
            ::asio::any_io_executor strand = ::asio::make_strand(ex);
            auto state = std::allocate_shared<state_type>(alloc, *policy, *ctx, *fn, *classify, *listener,
                                                          std::move(handler), strand);
            ::asio::dispatch(strand, [state] { state->start(); });
        }
    }

    // Whether handlers on `ex` never run at once: a strand, or an io_context
    // declared to be run by one thread (concurrency hint 1). Told by the
    // target's type: Asio 1.22's any_io_executor::target<T>() is non-null for
    // any T, so it cannot tell a strand from a plain io_context executor.
    static bool serialised(const ::asio::any_io_executor& ex) {
        const std::type_info& type = ex.target_type();
        if (type == typeid(::asio::strand<::asio::io_context::executor_type>) ||
            type == typeid(::asio::strand<::asio::any_io_executor>))
            return true;
        if (type == typeid(::asio::io_context::executor_type))
            return ::asio::use_service<::asio::detail::scheduler>(
                       ex.target<::asio::io_context::executor_type>()->context())
                       .concurrency_hint() == 1;
        return false;
    }
};

}  // namespace detail

/// Runs `fn` hedged by `policy` under `ctx` (banner above): an awaitable of
/// what `fn`'s awaitable gives, the winning copy's result. `fn` takes the
/// forms a pipeline's callable takes: (ctx) → asio::awaitable<R>, (ctx,
/// completion token), or (). `classify` judges a copy's result (verdict or
/// classification; `{}`: the default, which finds classify(const R&) by
/// ADL); `listener` hears the hedge's events. A streamed call is not for
/// hedging: its sink cannot take two copies' bodies.
template <class Ctx, class F, class Classifier = resil::detail::default_classifier, class Listener = no_listener>
auto hedged(const hedge_policy& policy, Ctx& ctx, F fn, Classifier classify = {}, Listener listener = {})
    -> ::asio::awaitable<detail::callable_result_t<F, Ctx>> {
    using R = detail::callable_result_t<F, Ctx>;
    using V = std::conditional_t<std::is_void_v<R>, unit, R>;
    auto& heard = resil::detail::unwrap(listener);
    auto r = co_await ::asio::async_initiate<const ::asio::use_awaitable_t<>&, void(detail::hedge_result<V>)>(
        detail::hedge_initiation<V>{}, ::asio::use_awaitable, co_await ::asio::this_coro::executor, &policy, &ctx,
        &fn, &classify, &heard);
    if (r.error) std::rethrow_exception(r.error);
    if constexpr (!std::is_void_v<R>) co_return std::move(*r.value);
}

}  // namespace resil::asio
