// resil/asio/policies.hpp — resil's policies in the asynchronous pipeline.
//
// Each one runs the decision core its blocking execute() runs (retry's loop,
// the breaker's enter/leave, the bucket's reservation, ...), with the same
// options, the same shared state and the same events; only the waiting
// differs: `co_await` on the rest of the pipeline, and a timer
// (resil/asio/waiter.hpp) instead of a sleep. So one breaker, bucket, budget
// or limit serves blocking and asynchronous callers at once.
//
// A policy of your own joins by having a member
//
//   template <class Context, class Next>
//   auto async_execute(Context& ctx, Next next) const -> decltype(next(ctx)) {
//       ...                                   // before the rest of the pipeline
//       auto out = co_await next(ctx);        // a resil::outcome<T>
//       ...                                   // after
//       co_return out;
//   }
//
// (async_policy<P> below finds it), or, for a type you cannot change, by a
// specialisation of resil::asio::async_policy<P> with the same static run().
#pragma once

#include <type_traits>
#include <utility>

#include <asio/awaitable.hpp>

#include "../circuit_breaker.hpp"
#include "../concurrency_limit.hpp"
#include "../deadline_policy.hpp"
#include "../fallback.hpp"
#include "../outcome.hpp"
#include "../retry.hpp"
#include "../timeout_policy.hpp"
#include "../token_bucket.hpp"
#include "waiter.hpp"

namespace resil::asio {

namespace detail {
template <class A>
struct awaited;
template <class T, class Executor>
struct awaited<::asio::awaitable<T, Executor>> {
    using type = T;
};
/// The outcome type a `next(ctx)` of the asynchronous pipeline completes with.
template <class Next, class Context>
using next_outcome_t = typename awaited<std::invoke_result_t<Next&, Context&>>::type;

template <class>
inline constexpr bool always_false = false;
}  // namespace detail

/// The resil::outcome<T> that `next(ctx)` completes with, in a policy's
/// async_execute: `using result = resil::asio::outcome_of_t<Next, Context>;`
/// then `co_return result::rejected(reason::shed);` refuses the call.
template <class Next, class Context>
using outcome_of_t = detail::next_outcome_t<Next, Context>;

/// How the asynchronous pipeline runs policy P: `static auto run(const P&,
/// Context&, Next) -> decltype(next(ctx))`, a coroutine. The primary template
/// calls P's member async_execute; resil's policies are specialised below.
template <class P>
struct async_policy {
    template <class Context, class Next>
    static auto run(const P& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        if constexpr (requires { policy.async_execute(ctx, std::move(next)); }) {
            return policy.async_execute(ctx, std::move(next));
        } else {
            static_assert(detail::always_false<P>,
                          "resil::asio: this policy has no asynchronous form. Give it a member "
                          "`template <class Context, class Next> auto async_execute(Context& ctx, Next next) const "
                          "-> decltype(next(ctx)) { auto out = co_await next(ctx); co_return out; }` (see "
                          "resil/asio/policies.hpp), or specialise resil::asio::async_policy<P>");
        }
    }
};

template <>
struct async_policy<retry_policy> {
    template <class Context, class Next>
    static auto run(const retry_policy& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        policy.begin(ctx);
        auto first = co_await next(ctx);
        if (first.ok() || !first.attempted()) co_return first;
        // The loop execute() runs, waiting on a timer instead of the clock's sleep.
        retry_policy::loop<result> loop{std::move(first)};
        for (;;) {
            const auto wait = loop.judge(ctx, policy);
            if (!wait) co_return loop.take();
            const bool slept = co_await wait_for(ctx.clock(), *wait, ctx.stop_token());
            if (!loop.waited(ctx, slept)) co_return loop.take();
            if (loop.next_attempt(co_await next(ctx))) co_return loop.take();
        }
    }
};

template <class Clock>
struct async_policy<basic_circuit_breaker<Clock>> {
    template <class Context, class Next>
    static auto run(const basic_circuit_breaker<Clock>& breaker, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        auto call = breaker.enter(ctx);
        if (!call) co_return result::rejected(reason::circuit_open, call.retry_after());
        auto out = co_await next(ctx);  // if it throws, the admission gives a probe back
        breaker.leave(ctx, call, out);
        co_return out;
    }
};

template <class Clock>
struct async_policy<basic_token_bucket<Clock>> {
    template <class Context, class Next>
    static auto run(const basic_token_bucket<Clock>& bucket, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        auto step = bucket.enter(ctx);
        if (step.waits() &&
            !bucket.waited(ctx, step, co_await wait_until(bucket.clock(), step.until(), ctx.stop_token())))
            co_return result::rejected(reason::cancelled);
        if (!step) co_return result::rejected(step.reason(), step.retry_after());
        co_return co_await next(ctx);
    }
};

template <>
struct async_policy<concurrency_limit> {
    template <class Context, class Next>
    static auto run(const concurrency_limit& limit, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        const auto held = limit.enter(ctx);  // held across the rest, however it ends
        if (!held) co_return result::rejected(reason::shed);
        co_return co_await next(ctx);
    }
};

template <>
struct async_policy<deadline_policy> {
    template <class Context, class Next>
    static auto run(const deadline_policy& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        // Restores the outer deadline on every way out (a deadline_policy
        // inside a retry bounds each attempt only).
        struct restore {
            Context& ctx;
            time_point outer;
            ~restore() { ctx.set_deadline_instant(outer); }
        } guard{ctx, ctx.deadline_instant()};
        if (!policy.enter(ctx)) co_return result::rejected(reason::deadline_exceeded);
        auto out = co_await next(ctx);
        policy.leave(ctx, out);
        co_return out;
    }
};

template <>
struct async_policy<timeout_policy> {
    template <class Context, class Next>
    static auto run(const timeout_policy& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        using result = detail::next_outcome_t<Next, Context>;
        if (!policy.admits(ctx)) co_return result::rejected(reason::deadline_exceeded);
        struct restore {
            Context& ctx;
            resil::timeouts outer;
            ~restore() { ctx.set_timeouts(outer); }
        } guard{ctx, ctx.timeouts()};
        ctx.set_timeouts(guard.outer.tightened_by(policy.timeouts()));
        co_return co_await next(ctx);
    }
};

template <class Fallback>
struct async_policy<fallback_policy<Fallback>> {
    template <class Context, class Next>
    static auto run(const fallback_policy<Fallback>& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        auto out = co_await next(ctx);
        policy.recover(ctx, out);
        co_return out;
    }
};

}  // namespace resil::asio
