// resil/curl/detail/connection_state.hpp — what a client keeps for its
// connection options (resil/curl/connections.hpp, share.hpp): the override
// lists libcurl reads by pointer, the buffer of a request's own connect-to
// entry, and its hold on the shared cache.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace resil::curl {
class shared_cache;
}

namespace resil::curl::detail {

/// Lives in detail::handles, which is never moved (the client holds it by
/// pointer), so libcurl may keep pointers into it.
struct connection_state {
    /// The client-wide lists (connection_options::resolve, connect_to):
    /// libcurl keeps the list pointers and reads the nodes at transfer time.
    std::vector<std::string> resolve_lines;
    std::vector<curl_slist> resolve_nodes;
    std::vector<std::string> connect_to_lines;
    std::vector<curl_slist> connect_to_nodes;
    /// A request's endpoint as the entry "url-host:url-port:host:port" (only
    /// the URL's own host and port go there, not a redirect's), put in front
    /// of the client-wide list. The buffer is reserved for the longest entry
    /// once, so each request's entry is written in place.
    std::string pinned_line;
    curl_slist pinned_node{nullptr, nullptr};
    /// The CURLOPT_CONNECT_TO list last set, and whether one was.
    const curl_slist* applied_connect_to = nullptr;
    bool connect_to_applied = false;
    /// Holds the shared cache as long as the easy handle: handles' destructor
    /// cleans the easy handle up first, then its members go, this one with them.
    std::shared_ptr<shared_cache> shared;
};

}  // namespace resil::curl::detail
