// resil/curl_asio.hpp — the libcurl clients on Asio (targets resil::curl and
// resil::asio): resil::curl::async_client, whose calls wait without holding
// a thread, and resil::curl::hedged_client, hedged calls from a blocking
// thread. See docs/curl_async.md.
//
//   #include <resil/curl_asio.hpp>
//   resil::curl::async_client http(io);
//   auto r = co_await http.async_perform(req, ctx, asio::use_awaitable);
#pragma once

#include "curl_asio/async_client.hpp"
#include "curl_asio/async_options.hpp"
#include "curl_asio/async_hedged_client.hpp"
