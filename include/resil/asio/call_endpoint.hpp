// resil/asio/call_endpoint.hpp — one attempt of an asynchronous call, sent to
// an endpoint a balancer picks: resil::call_endpoint's rules (balancer/call.hpp)
// on Asio, with the same steps.
//
//   resil::tried_endpoints tried;                      // one per call, shared by its retries and hedge copies
//   auto out = co_await pipe([&](resil::context& ctx) {
//       return resil::asio::call_endpoint(lb, ctx, tried,
//           [&](const resil::endpoint& ep) -> asio::awaitable<resil::curl::response> {
//               const auto req = resil::curl::request::get(ep.address + "/v1/items");  // lives until the answer
//               co_return co_await http.async_perform(req, ctx, asio::use_awaitable);
//           });
//   });
//
//   // Hedged: every copy picks again, avoiding endpoints tried by the others;
//   // a copy of a call that may not be repeated elsewhere stays in the scope
//   // of the copies in flight (and never starts unless the call is repeatable).
//   // Each copy's transfer takes the context hedged() gives it (`c`).
//   resil::outcome<resil::curl::response> r = co_await resil::asio::hedged(hedge, ctx, [&](resil::context& c) {
//       return resil::asio::call_endpoint(lb, c, tried,
//           [&](const resil::endpoint& ep) -> asio::awaitable<resil::curl::response> {
//               const auto req = resil::curl::request::get(ep.address + "/v1/items");
//               co_return co_await http.async_perform(req, c, asio::use_awaitable);
//           });
//   });
//
// `fn` takes the endpoint and returns an asio::awaitable<R> (a coroutine
// lambda, as above: what the transfer reads, such as the request, must live
// until it completes, so build it inside the coroutine), or takes the
// endpoint and a completion token (asio::use_awaitable is passed). The
// attempt is cut short, and says nothing about its endpoint, when the
// awaiting coroutine is cancelled (a losing hedge copy, the pipeline's
// deadline or caller) or ctx's stop token fired: its breaker permit is
// released and the endpoint not charged.
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <functional>
#include <type_traits>
#include <utility>

#include <asio/awaitable.hpp>
#include <asio/cancellation_state.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "../balancer/call.hpp"
#include "../outcome.hpp"
#include "pipeline.hpp"

namespace resil::asio {

/// Picks an endpoint of `lb` as resil::call_endpoint does (avoiding those in
/// `tried`, within the call's idempotency scope once it is held to one),
/// awaits `fn(endpoint)` and records its latency and result. Completes with
/// the result and `classify`'s verdict, or a rejection with
/// reason::no_endpoint or reason::no_endpoint_in_scope.
template <class Ctx, class Fn, class Classifier = resil::detail::adl_classify>
auto call_endpoint(const balancer& lb, Ctx& ctx, tried_endpoints& tried, Fn fn, Classifier classify = {})
    -> ::asio::awaitable<outcome<detail::callable_result_t<Fn, const endpoint>>> {
    using R = detail::callable_result_t<Fn, const endpoint>;
    static_assert(!std::is_void_v<R>, "resil::asio::call_endpoint: the attempt must give a result to classify");
    auto attempt = resil::detail::begin_endpoint_attempt(lb, ctx, tried);
    if (!attempt) co_return outcome<R>::rejected(attempt.refusal);
    R value = co_await detail::start_attempt(fn, attempt.lease.target());
    const classification c = std::invoke(classify, std::as_const(value));
    const ::asio::cancellation_state state = co_await ::asio::this_coro::cancellation_state;
    const auto cancelled = state.cancelled();
    resil::detail::end_endpoint_attempt(attempt, ctx, c, resil::detail::counts_against_endpoint(value, c),
                                        ctx.stop_requested() || cancelled != ::asio::cancellation_type::none);
    co_return outcome<R>::from_value(c, std::move(value));
}

}  // namespace resil::asio
