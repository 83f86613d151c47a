// resil/asio/policies.hpp — how resil::asio::pipeline runs a policy.
//
// A policy written as steps (resil/policy_steps.hpp: enter, the wait it asks
// for, leave, and retry's retried) — every policy of resil, and any of yours
// written so — is driven by the pipeline's one coroutine: its steps run
// synchronously on the way in and out, and its waits are timers
// (resil/asio/waiter.hpp) instead of sleeps. The blocking pipeline drives
// the very same steps, so both make the same decisions with the same options
// and shared state, and emit the same events; one breaker, bucket, budget or
// limit serves blocking and asynchronous callers at once. A whole call
// through any number of such policies is one coroutine frame.
//
// A policy of your own that is not written as steps joins by having a member
//
//   template <class Context, class Next>
//   auto async_execute(Context& ctx, Next next) const -> decltype(next(ctx)) {
//       ...                                   // before the rest of the pipeline
//       auto out = co_await next(ctx);        // a resil::outcome<T>
//       ...                                   // after
//       co_return out;
//   }
//
// next(ctx) runs the policies inside it and the callable (in a coroutine of
// their own), and completes with their outcome; to refuse the call, return
// resil::asio::next_outcome_t<Next, Context>::rejected(reason) instead.
//
// A policy whose way in waits on something other than time — a round trip to
// a store, resil::redis::async_rate_limiter's — has a step of its own that
// the pipeline awaits instead of a timer (policy_steps.hpp: async_wait).
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <type_traits>
#include <utility>

#include <asio/awaitable.hpp>

// The policies this header has always brought along (code includes them through it).
#include "../circuit_breaker.hpp"
#include "../clock.hpp"
#include "../concurrency_limit.hpp"
#include "../context.hpp"
#include "../deadline_policy.hpp"
#include "../detail/pipeline_call.hpp"
#include "../events.hpp"
#include "../fallback.hpp"
#include "../outcome.hpp"
#include "../policy_steps.hpp"
#include "../retry.hpp"
#include "../timeout_policy.hpp"
#include "../token_bucket.hpp"

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
/// async_execute: `using result = resil::asio::next_outcome_t<Next, Context>;`
/// then `co_return result::rejected(reason::shed);` refuses the call.
/// (Named for what it is: the outcome type of `next`, the rest of the pipeline.)
template <class Next, class Context>
using next_outcome_t = detail::next_outcome_t<Next, Context>;
/// The former name, kept for one release.
template <class Next, class Context>
using outcome_of_t [[deprecated("use resil::asio::next_outcome_t")]] = next_outcome_t<Next, Context>;

namespace detail {

// What policies are checked against before any call: the context the
// pipeline gives them, and an outcome (their steps are templates on both).
using probe_context = resil::detail::pipeline_context<steady_clock, const no_listener>;
using probe_outcome = outcome<unit>;

template <class P>
concept written_as_steps = policy_steps<P, probe_context, probe_outcome>;

template <class P>
concept nests = requires(const P& p, probe_context& ctx,
                         ::asio::awaitable<probe_outcome> (*next)(probe_context&)) {
    p.async_execute(ctx, next);
};

}  // namespace detail

/// Whether resil::asio::pipeline can run policy P: written as steps, or
/// with a member async_execute.
template <class P>
inline constexpr bool has_asynchronous_form = detail::written_as_steps<P> || detail::nests<P>;

namespace detail {

/// The check basic_pipeline makes of each of its policies, as it is built:
/// one short error naming the policy's type (in the requirement) and saying
/// what to write.
template <class P>
struct require_asynchronous_form {
    static_assert(has_asynchronous_form<P>,
                  "resil::asio::pipeline: the policy named in this requirement has no asynchronous form. Write it as "
                  "steps (enter / leave: resil/policy_steps.hpp), which both pipelines drive, or give it a member "
                  "`template <class Context, class Next> auto async_execute(Context& ctx, Next next) const -> "
                  "decltype(next(ctx)) { co_return co_await next(ctx); }` (docs/async.md)");
    static constexpr bool value = true;
};

}  // namespace detail

}  // namespace resil::asio
