// resil/curl_asio/async_options.hpp — what the asynchronous libcurl client
// (resil/curl_asio/async_client.hpp) adds to client_options: its limits on
// calls in flight, pooled transfers and connections. Standard library only,
// so that a header naming it (resil/http/async_dependency.hpp) need not
// parse the client.
#pragma once

#include <cstddef>

#include "../validation.hpp"

namespace resil::curl {

/// What the asynchronous client adds to client_options.
struct async_options {
    /// Calls in flight at once; more complete at once, unsent. Bounds memory.
    std::size_t max_in_flight = 10'000;
    /// Transfers (easy handles and buffers) and responses kept for reuse once idle.
    std::size_t max_idle_transfers = 256;
    /// Connections to one host at once (CURLMOPT_MAX_HOST_CONNECTIONS); more
    /// calls queue inside libcurl (their total limit runs). 0: no limit.
    long max_host_connections = 0;
    /// HTTP/2 streams per connection (CURLMOPT_MAX_CONCURRENT_STREAMS): a
    /// connection whose streams are all busy makes libcurl open another.
    long max_concurrent_streams = 100;
    /// Whether an https:// call waits for a connection being set up to the
    /// same host, to multiplex on it, instead of opening one of its own
    /// (CURLOPT_PIPEWAIT), with http_version::http2_tls. Not over http://
    /// (libcurl 7.88 would learn only from the first answer that the
    /// connection does not multiplex: the other calls would wait for it), nor
    /// with http2_prior_knowledge (libcurl 7.88 fails the calls that waited:
    /// "Error in the HTTP2 framing layer"); there, calls started together
    /// before any connection exists open a connection each.
    bool wait_for_multiplexing = true;

    /// The most calls in flight one client accepts.
    static constexpr std::size_t most_in_flight = 1'000'000;

    /// The first invalid field, if any.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = resil::detail::check_in_range("max_in_flight", max_in_flight, std::size_t{1}, most_in_flight))
            return bad;
        if (auto bad = resil::detail::check_in_range("max_idle_transfers", max_idle_transfers, std::size_t{0},
                                                     most_in_flight))
            return bad;
        if (auto bad = resil::detail::check_in_range("max_host_connections", max_host_connections, 0L, 1'000'000L))
            return bad;
        if (auto bad = resil::detail::check_in_range("max_concurrent_streams", max_concurrent_streams, 1L,
                                                     2'147'483'647L))
            return bad;
        return std::nullopt;
    }
};

}  // namespace resil::curl
