// resil/asio.hpp — resil on standalone Asio (target resil::asio): the
// asynchronous pipeline, whose calls wait without holding a thread.
//
//   #include <resil/asio.hpp>
//   auto pipe = resil::asio::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{}, std::ref(breaker));
//   auto out = co_await pipe([&](resil::context& ctx) { return fetch(ctx); }, classify);
//
// See docs/async.md: the model, cancellation, the waiter, completion tokens,
// and writing a policy of your own for it.
#pragma once

#include "asio/config.hpp"  // first: before any Asio header
#include "asio/call_endpoint.hpp"
#include "asio/health_check.hpp"
#include "asio/hedge.hpp"
#include "asio/pipeline.hpp"
#include "asio/policies.hpp"
#include "asio/waiter.hpp"
