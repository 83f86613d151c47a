// resil/redis/detail/node_list.hpp — a Redis node's "host:port" and the
// options' comma-separated lists of them (cluster_nodes), read with the
// standard library only: options.hpp checks them without hiredis.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace resil::redis::detail {

struct node_address {
    std::string host;
    int port = 0;
    friend bool operator==(const node_address&, const node_address&) = default;
};

/// "host:port" or "[v6]:port" → its parts; false when it is not one.
[[nodiscard]] inline bool parse_node_address(std::string_view text, node_address& out) {
    std::string_view host;
    std::string_view port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return false;
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host.empty() || host.size() > 255 || port.empty() || port.size() > 5) return false;
    for (const char c : host)
        if (c <= ' ' || c >= 0x7f || c == ',') return false;
    int p = 0;
    for (const char c : port) {
        if (c < '0' || c > '9') return false;
        p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return false;
    out.host = std::string(host);
    out.port = p;
    return true;
}

/// A comma-separated list of "host:port" (spaces around the commas allowed),
/// at most `max` of them; false at the first entry that is not one, or when
/// there are none or too many.
[[nodiscard]] inline bool parse_node_list(std::string_view text, std::size_t max, std::vector<node_address>& out) {
    out.clear();
    while (!text.empty()) {
        const auto comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        node_address a;
        if (!parse_node_address(item, a) || out.size() == max) return false;
        out.push_back(std::move(a));
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
        if (text.empty()) return false;  // a trailing comma
    }
    return !out.empty();
}

}  // namespace resil::redis::detail
