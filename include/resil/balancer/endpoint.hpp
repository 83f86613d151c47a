// resil/balancer/endpoint.hpp — one replica a balancer may send a call to,
// and the check of a list of them.
//
//   std::vector<resil::endpoint> replicas{{.address = "http://10.0.0.1:8080"},
//                                         {.address = "10.0.0.2:8080", .weight = 3},
//                                         {.address = "https://backup.example.com", .priority = 1}};
//   if (auto bad = resil::validate_endpoints(replicas)) log(bad->message());
//
// An address is a base URL (http:// or https://, a host, an optional port and
// path) or a bare host:port (for request::connect_to). Weights are relative
// shares; priority 0 is the primary group, 1 the first failover group, and so on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../validation.hpp"

namespace resil {

/// One replica a balancer may send a call to: its address (a base URL or
/// host:port), its weight within its priority group, its priority (0 the
/// primary group, 1 the first failover group, ...) and its idempotency scope. A
/// plain value; check a list with validate_endpoints().
struct endpoint {
    /// "http://host:port/base", "https://host", or "host:port".
    std::string address;
    /// Relative share of the calls, in [1, max_weight].
    std::int32_t weight = 1;
    /// Free-form locality label (e.g. "eu-west-1a"), reported back, not used to pick.
    std::string zone{};
    /// 0: the primary group; a higher number is used only while every lower
    /// group has too few healthy endpoints (balancer_options::failover_threshold).
    std::uint32_t priority = 0;
    /// The idempotency scope: endpoints that share one store of idempotency
    /// keys (replicas of one service) name the same scope. Empty: the
    /// endpoint's priority group is its scope. A call that may have reached
    /// an endpoint of a scope, and may not be repeated elsewhere, sends its
    /// later attempts only to that scope (docs/balancing.md, "At most once").
    std::string idempotency_scope{};

    /// The largest `weight` accepted.
    static constexpr std::int32_t max_weight = 10000;
    /// Characters in a scope's name.
    static constexpr std::size_t max_scope_length = 256;
    /// The largest `priority` accepted: 8 groups.
    static constexpr std::uint32_t max_priority = 7;
    /// Endpoints per set: the limit keeps a weighted round-robin schedule and
    /// a scan of the set small.
    static constexpr std::size_t max_endpoints = 4096;

    /// Field-by-field equality.
    friend bool operator==(const endpoint&, const endpoint&) = default;
};

namespace detail {

[[nodiscard]] constexpr bool is_port(std::string_view text) noexcept {
    if (text.empty() || text.size() > 5) return false;
    std::uint32_t port = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        port = port * 10 + static_cast<std::uint32_t>(c - '0');
    }
    return port >= 1 && port <= 65535;
}

/// A host as a URL or connect_to names it: a name or IPv4 address (labels
/// of letters, digits, '-', '_' between dots, none empty, none starting or
/// ending with '-'; one trailing dot allowed), or an IPv6 address in brackets.
[[nodiscard]] constexpr bool is_host(std::string_view text) noexcept {
    if (text.empty()) return false;
    if (text.front() == '[') {
        if (text.size() < 3 || text.back() != ']') return false;
        for (char c : text.substr(1, text.size() - 2))
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
                return false;
        return true;
    }
    if (text.size() > 1 && text.back() == '.') text.remove_suffix(1);  // a fully qualified name
    std::size_t label = 0;  // characters in the current label
    char previous = '.';
    for (char c : text) {
        if (c == '.') {
            if (label == 0 || previous == '-') return false;
            label = 0;
        } else {
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_'))
                return false;
            if (label == 0 && c == '-') return false;
            ++label;
        }
        previous = c;
    }
    return label != 0 && previous != '-';
}

/// host[:port], the port required when `port_required`.
[[nodiscard]] constexpr bool is_authority(std::string_view text, bool port_required) noexcept {
    const auto bracket = text.rfind(']');
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket))
        return !port_required && is_host(text);
    return is_host(text.substr(0, colon)) && is_port(text.substr(colon + 1));
}

/// Whether `address` is an http(s) base URL or a host:port.
[[nodiscard]] constexpr bool is_endpoint_address(std::string_view address) noexcept {
    for (char c : address)
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
    std::string_view rest;
    if (address.starts_with("http://")) rest = address.substr(7);
    else if (address.starts_with("https://")) rest = address.substr(8);
    else return is_authority(address, true);
    const auto slash = rest.find_first_of("/?#");
    return is_authority(rest.substr(0, slash), false);
}

/// An address as compared for uniqueness: scheme and host in lower case, the
/// scheme's default port and a trailing '/' dropped, so "http://A:80/" and
/// "http://a" name one endpoint. (For validation only: allocates.)
[[nodiscard]] inline std::string normalized_address(std::string_view address) {
    std::string out(address);
    std::size_t authority = 0;
    std::string_view default_port;
    if (address.starts_with("http://")) {
        authority = 7;
        default_port = ":80";
    } else if (address.starts_with("https://")) {
        authority = 8;
        default_port = ":443";
    }
    auto end = out.find_first_of("/?#", authority);
    if (end == std::string::npos) end = out.size();
    for (std::size_t i = 0; i < end; ++i)
        if (out[i] >= 'A' && out[i] <= 'Z') out[i] = static_cast<char>(out[i] - 'A' + 'a');
    if (!default_port.empty() && std::string_view(out).substr(0, end).ends_with(default_port)) {
        out.erase(end - default_port.size(), default_port.size());
        end -= default_port.size();
    }
    while (out.size() > end && out.back() == '/') out.pop_back();
    return out;
}

/// A scope's name: printable ASCII, at most endpoint::max_scope_length characters.
[[nodiscard]] constexpr bool is_scope_name(std::string_view name) noexcept {
    if (name.size() > endpoint::max_scope_length) return false;
    for (char c : name)
        if (c < ' ' || c > '~') return false;
    return true;
}

[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option bad_endpoint_field(std::size_t index, std::string_view field,
                                                                         std::string_view what, std::string_view got) {
    const auto i = std::to_string(index);
    return invalid_option{concat({"endpoints[", i, "].", field}), concat({"must be ", what, ", got \"", got, "\""})};
}

}  // namespace detail

/// The first invalid endpoint of a list, in the house form:
/// "`endpoints[1].weight` must be in [1, 10000], got 0",
/// "`endpoints[2].address` must be unique, got \"10.0.0.1:80\"" (addresses
/// compared with scheme and host in lower case, without a default port or a
/// trailing '/').
/// An empty list is valid here (a set may become empty at run time); a
/// balancer refuses one at construction.
[[nodiscard]] inline validation_result validate_endpoints(std::span<const endpoint> endpoints) {
    if (endpoints.size() > endpoint::max_endpoints)
        return detail::check_in_range("endpoints.size", endpoints.size(), std::size_t{0}, endpoint::max_endpoints);
    std::vector<std::string> normalized;
    normalized.reserve(endpoints.size());
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        const auto& e = endpoints[i];
        if (!detail::is_endpoint_address(e.address))
            return detail::bad_endpoint_field(i, "address", "an http:// or https:// URL or a host:port", e.address);
        normalized.push_back(detail::normalized_address(e.address));
        for (std::size_t j = 0; j < i; ++j)
            if (normalized[j] == normalized[i])
                return detail::bad_endpoint_field(i, "address", "unique", e.address);
        if (auto bad = detail::check_in_range("weight", e.weight, std::int32_t{1}, endpoint::max_weight))
            return bad->within(detail::concat({"endpoints[", std::to_string(i), "]"}));
        if (auto bad = detail::check_in_range("priority", e.priority, std::uint32_t{0}, endpoint::max_priority))
            return bad->within(detail::concat({"endpoints[", std::to_string(i), "]"}));
        if (!detail::is_scope_name(e.idempotency_scope))
            return detail::bad_endpoint_field(i, "idempotency_scope",
                                              "at most 256 printable ASCII characters (empty: the priority group)",
                                              e.idempotency_scope.substr(0, endpoint::max_scope_length));
    }
    return std::nullopt;
}

}  // namespace resil
