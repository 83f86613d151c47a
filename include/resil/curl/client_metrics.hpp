// resil/curl/client_metrics.hpp — what a client (resil::curl::client or
// async_client) counts about its own connections: a snapshot taken by its
// metrics().
//
//   const resil::curl::client_metrics m = http.metrics();
//   gauge("fresh_connections_for_idle", m.fresh_connections_for_idle);
#pragma once

#include <cstdint>

namespace resil::curl {

/// Counters of one client since it was made; a copy (client::metrics(),
/// async_client::metrics()).
struct client_metrics {
    /// Requests that may not be repeated which opened a new connection
    /// because the kept-alive connections to their origin had been idle
    /// close to their server's limit (connection_options::
    /// max_idle_for_unrepeatable): each is one connection opened where one
    /// could have been reused, so that the request reaches the server at
    /// most once.
    std::uint64_t fresh_connections_for_idle = 0;
};

}  // namespace resil::curl
