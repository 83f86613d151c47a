// resil/curl.hpp — the libcurl adapter (CMake target resil::curl): real HTTP
// transfers under resil's deadline, timeouts, cancellation and idempotency
// keys, classified by what may have reached the server.
//
//   #include <resil/curl.hpp>
//
//   resil::curl::client http;   // one per thread
//   auto out = pipe([&](resil::context& ctx) {
//       return http.perform(resil::curl::request::get("http://inventory.internal/items/42"), ctx);
//   });
//   if (out) render(out->body());
//
// Pieces: request (resil/curl/request.hpp), response and transport_status
// (resil/curl/response.hpp), classify (resil/curl/classification.hpp), client
// (resil/curl/client.hpp) and client_options (resil/curl/options.hpp), with
// connection_options and endpoint (resil/curl/connections.hpp) and
// shared_cache (resil/curl/share.hpp). See docs/curl.md.
#pragma once

#include "curl/classification.hpp"
#include "curl/client.hpp"
#include "curl/client_metrics.hpp"
#include "curl/connections.hpp"
#include "curl/describe.hpp"
#include "curl/options.hpp"
#include "curl/transport.hpp"
#include "curl/transport_options.hpp"
#include "curl/fields.hpp"
#include "curl/request.hpp"
#include "curl/response.hpp"
#include "curl/share.hpp"
#include "curl/sse_stream.hpp"
#include "curl/streaming.hpp"
