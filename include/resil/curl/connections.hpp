// resil/curl/connections.hpp — where a client's connections go and how long
// they live: endpoint pinning (resolve and connect-to overrides, client-wide
// or for one request), the DNS cache lifetime, the age and idle limits of a
// kept-alive connection, and TCP keepalive.
//
//   resil::curl::client http({.connections = {
//       .resolve = {"api.internal:443:10.0.0.7"},     // skip DNS for this host and port
//       .max_connection_age = std::chrono::minutes{5},  // spread over new load-balancer targets
//   }});
//   // One request to one chosen replica; the Host header and the TLS name stay api.internal:
//   auto req = resil::curl::request::get("https://api.internal/v1/items").connect_to({"10.0.0.9", 443});
//
// libcurl counts these durations in whole seconds, so they are
// std::chrono::seconds: a finer duration does not convert silently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/platform.hpp"
#include "../validation.hpp"
#include "detail/text.hpp"

namespace resil::curl {

namespace detail {

/// A port as libcurl's override lists write it: 1 to 65535 in decimal, no sign.
[[nodiscard]] constexpr bool is_port_text(std::string_view s) noexcept {
    if (s.empty() || s.size() > 5) return false;
    std::uint32_t v = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::uint32_t>(c - '0');
    }
    return v >= 1 && v <= 65535;
}

/// Splits off the host at the front of an override entry: a bracketed IPv6
/// literal ("[::1]") or everything up to the next ':'. Returns the host (may
/// be empty) and moves `rest` past it; nothing for an unclosed bracket.
[[nodiscard]] constexpr std::optional<std::string_view> take_host(std::string_view& rest) noexcept {
    std::size_t end = 0;
    if (!rest.empty() && rest.front() == '[') {
        end = rest.find(']');
        if (end == std::string_view::npos) return std::nullopt;
        ++end;
    } else {
        end = rest.find(':');
        if (end == std::string_view::npos) end = rest.size();
    }
    const auto host = rest.substr(0, end);
    rest.remove_prefix(end);
    return host;
}

[[nodiscard]] constexpr bool is_hex_digit(char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
[[nodiscard]] constexpr bool is_alnum(char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// An IPv4 address in dotted decimal: four numbers 0 to 255, 1 to 3 digits each.
[[nodiscard]] constexpr bool is_ipv4_text(std::string_view s) noexcept {
    for (int part = 0; part < 4; ++part) {
        if (part != 0) {
            if (s.empty() || s.front() != '.') return false;
            s.remove_prefix(1);
        }
        std::size_t digits = 0;
        unsigned v = 0;
        while (digits < s.size() && digits < 4 && s[digits] >= '0' && s[digits] <= '9')
            v = v * 10 + static_cast<unsigned>(s[digits++] - '0');
        if (digits == 0 || digits > 3 || v > 255) return false;
        s.remove_prefix(digits);
    }
    return s.empty();
}

/// An IPv6 address as RFC 4291 writes it (hex groups, one "::", an IPv4
/// tail), with an optional zone ("%25eth0" or "%eth0") of URL-unreserved
/// characters, as libcurl reads one between brackets.
[[nodiscard]] constexpr bool is_ipv6_text(std::string_view s) noexcept {
    if (const auto percent = s.find('%'); percent != std::string_view::npos) {
        auto zone = s.substr(percent + 1);
        s = s.substr(0, percent);
        if (zone.starts_with("25")) zone.remove_prefix(2);
        if (zone.empty()) return false;
        for (const char c : zone)
            if (!is_alnum(c) && c != '-' && c != '.' && c != '_' && c != '~') return false;
    }
    int groups = 0;
    bool gap = false;
    if (s.starts_with("::")) {
        gap = true;
        s.remove_prefix(2);
        if (s.empty()) return true;
    }
    for (;;) {
        const auto colon = s.find(':');
        const auto piece = s.substr(0, colon);
        if (piece.find('.') != std::string_view::npos) {
            // An IPv4 tail ends the address and counts two groups.
            if (colon != std::string_view::npos || !is_ipv4_text(piece)) return false;
            groups += 2;
            break;
        }
        if (piece.empty() || piece.size() > 4) return false;
        for (const char c : piece)
            if (!is_hex_digit(c)) return false;
        ++groups;
        if (colon == std::string_view::npos) break;
        s.remove_prefix(colon + 1);
        if (!s.empty() && s.front() == ':') {
            if (gap) return false;
            gap = true;
            s.remove_prefix(1);
            if (s.empty()) break;
        } else if (s.empty()) {
            return false;
        }
    }
    return gap ? groups <= 7 : groups == 8;
}

/// Takes ":" then the text up to the next ':' (or the end when `last`).
[[nodiscard]] constexpr std::optional<std::string_view> take_field(std::string_view& rest, bool last) noexcept {
    if (rest.empty() || rest.front() != ':') return std::nullopt;
    rest.remove_prefix(1);
    const auto end = last ? rest.size() : rest.find(':');
    if (end == std::string_view::npos) return std::nullopt;
    const auto field = rest.substr(0, end);
    rest.remove_prefix(end);
    return field;
}

/// Text libcurl splits on ':' and ',' may hold no space or control character.
[[nodiscard]] constexpr bool is_plain_override_text(std::string_view s) noexcept {
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7F) return false;
    }
    return true;
}

/// A resolve entry's host is in brackets ("[::1]:443:..."): libcurl 7.88
/// reads the host up to the first ':' and refuses every transfer with such an
/// entry (CURLE_BAD_FUNCTION_ARGUMENT), and an IPv6 literal in a URL is never
/// resolved, so no entry for one is needed.
[[nodiscard]] constexpr bool is_bracketed_resolve_host(std::string_view s) noexcept {
    if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
    return !s.empty() && s.front() == '[';
}

/// CURLOPT_RESOLVE's "host:port:address[,address...]" (a leading '+' makes
/// the entry time out like a resolved one; "-host:port" removes an entry).
/// The host is a name, never a bracketed address (is_bracketed_resolve_host).
[[nodiscard]] constexpr bool is_resolve_entry(std::string_view s) noexcept {
    if (!is_plain_override_text(s) || s.empty() || is_bracketed_resolve_host(s)) return false;
    bool removal = false;
    if (s.front() == '+' || s.front() == '-') {
        removal = s.front() == '-';
        s.remove_prefix(1);
    }
    const auto host = take_host(s);
    if (!host || host->empty()) return false;
    const auto port = take_field(s, removal);
    if (!port || !is_port_text(*port)) return false;
    if (removal) return s.empty();
    const auto addresses = take_field(s, true);
    if (!addresses || addresses->empty() || addresses->front() == ',' || addresses->back() == ',') return false;
    return addresses->find(",,") == std::string_view::npos;
}

/// CURLOPT_CONNECT_TO's "host:port:connect-host:connect-port"; an empty host
/// or port matches any, an empty connect-host or connect-port keeps the URL's.
[[nodiscard]] constexpr bool is_connect_to_entry(std::string_view s) noexcept {
    if (!is_plain_override_text(s) || s.empty()) return false;
    const auto host = take_host(s);
    if (!host) return false;
    const auto port = take_field(s, false);
    if (!port || (!port->empty() && !is_port_text(*port))) return false;
    if (s.empty() || s.front() != ':') return false;
    s.remove_prefix(1);
    const auto to_host = take_host(s);
    if (!to_host) return false;
    const auto to_port = take_field(s, true);
    return to_port && (to_port->empty() || is_port_text(*to_port)) && !(to_host->empty() && to_port->empty());
}

}  // namespace detail

/// One replica to send a request to (request::connect_to): a host name or
/// address (an IPv6 address in brackets, "[::1]") and a port. The request's
/// URL still names the service: its host is the Host header and the name TLS
/// verifies, only the TCP connection goes here.
struct endpoint {
    /// A host name, an IPv4 address, or an IPv6 address in brackets ("[::1]").
    std::string host;
    /// The TCP port, 1 to 65535.
    std::uint16_t port = 0;

    /// The first invalid field, if any: the host non-empty, at most 255
    /// bytes, with no space or control character, and either a name or
    /// IPv4 address with no ':', ',' or bracket, or one IPv6 address in
    /// brackets ("[::1]"); the port 1 to 65535.
    ///   "`host` must be one IPv6 address in brackets, e.g. [::1], got \"[zzz]\""
    [[nodiscard]] validation_result validate() const {
        if (const auto why = host_requirement())
            return invalid_option{"host", resil::detail::concat({*why, ", got ", detail::quote_for_error(host)})};
        return resil::detail::check_at_least("port", port, std::uint16_t{1});
    }

    /// Deprecated: validate() names the field and the value. What the first
    /// invalid field must be (static text), or nothing.
    [[nodiscard]] std::optional<std::string_view> invalid_reason() const noexcept {
        if (auto why = host_requirement()) return why;
        if (port == 0) return "must be in [1, 65535]";
        return std::nullopt;
    }

    /// Field-by-field equality.
    friend bool operator==(const endpoint&, const endpoint&) = default;

private:
    [[nodiscard]] std::optional<std::string_view> host_requirement() const noexcept {
        if (host.empty()) return "must be non-empty";
        if (host.size() > 255) return "must be at most 255 bytes";
        if (!detail::is_plain_override_text(host)) return "must hold no space or control character";
        if (host.front() == '[') {
            if (host.size() < 3 || host.back() != ']' ||
                !detail::is_ipv6_text(std::string_view(host).substr(1, host.size() - 2)))
                return "must be one IPv6 address in brackets, e.g. [::1]";
            return std::nullopt;
        }
        if (host.find_first_of(":[],") != std::string::npos)
            return "must hold no ':', ',' or bracket (write an IPv6 address as [::1])";
        return std::nullopt;
    }
};

/// Where connections go and how long a kept-alive one is used
/// (client_options::connections). The defaults are libcurl's, except that
/// the idle limit is stated. Every duration libcurl applies is whole seconds,
/// as libcurl counts; max_idle_for_unrepeatable, which resil applies itself,
/// is milliseconds.
struct connection_options {
    /// Longest duration a field below takes (a year): far beyond any use, and
    /// small enough for libcurl's `long` on every platform.
    static constexpr std::chrono::seconds longest{std::chrono::hours{24 * 365}};
    /// Linux's ceiling for the keepalive idle time and interval.
    static constexpr std::chrono::seconds longest_keepalive{32767};

    /// Fixed addresses for host names, each "host:port:address[,address...]"
    /// (CURLOPT_RESOLVE): connections to host:port go to these addresses
    /// without asking DNS. They enter the DNS cache at the first transfer and
    /// never expire; with a shared_cache sharing DNS, every client of the
    /// cache sees them.
    std::vector<std::string> resolve{};
    /// Connection redirections, each "host:port:connect-host:connect-port"
    /// (CURLOPT_CONNECT_TO): a request to host:port connects to
    /// connect-host:connect-port instead while the Host header and the TLS
    /// name stay the URL's. An empty host or port matches any; the first
    /// matching entry wins, after a request's own connect_to.
    std::vector<std::string> connect_to{};
    /// How long a resolved name is kept (CURLOPT_DNS_CACHE_TIMEOUT): 0 asks
    /// DNS for every new connection. Default 60 s, libcurl's.
    std::chrono::seconds dns_cache_lifetime{60};
    /// A kept-alive connection older than this is not used again
    /// (CURLOPT_MAXLIFETIME_CONN), so a long-lived client moves to the
    /// targets a load balancer or DNS adds. libcurl compares whole seconds:
    /// a connection is retired once more than N full seconds old. Default
    /// none: a connection lives as long as it is reused.
    std::optional<std::chrono::seconds> max_connection_age{};
    /// A kept-alive connection idle longer than this is not used again
    /// (CURLOPT_MAXAGE_CONN), in whole seconds as above. Default 118 s,
    /// libcurl's (below the 120 s idle limit common in load balancers).
    std::chrono::seconds max_connection_idle{118};
    /// A request that may not be repeated (neither idempotent nor keyed) is
    /// not sent on a kept-alive connection that has been idle this long, when
    /// the connection's server announced no idle limit (with `Keep-Alive:
    /// timeout=N` it is N less min(N/2, 1 s)): such connections to the
    /// request's origin are retired and the request opens a new connection,
    /// counted in client_metrics::fresh_connections_for_idle. A server that
    /// closes an idle connection as a request arrives on it leaves that
    /// request ambiguous: sent, maybe not read. Idle time is measured on the
    /// context's clock from the end of the connection's last transfer. 0:
    /// every such request opens a new connection. Default 1 s, below the
    /// shortest idle limit common among servers that announce none
    /// (gunicorn's 2 s; nginx, HAProxy and uvicorn default to 5 s or more).
    std::chrono::milliseconds max_idle_for_unrepeatable{1000};
    /// Turns on TCP keepalive probes (CURLOPT_TCP_KEEPALIVE), so a silently
    /// dropped peer is noticed on a long idle connection. Default off.
    bool tcp_keepalive = false;
    /// Idle time before the first probe (CURLOPT_TCP_KEEPIDLE); with tcp_keepalive. Default 60 s.
    std::chrono::seconds tcp_keepalive_idle{60};
    /// Time between probes (CURLOPT_TCP_KEEPINTVL); with tcp_keepalive. Default 60 s.
    std::chrono::seconds tcp_keepalive_interval{60};

    /// The first invalid field, if any: every resolve and connect_to entry
    /// in libcurl's form (no space or control character, ports 1 to 65535),
    /// dns_cache_lifetime in [0s, longest], the connection limits in [1s,
    /// longest], max_idle_for_unrepeatable in [0ms, longest], the keepalive
    /// times in [1s, longest_keepalive].
    [[nodiscard]] validation_result validate() const {
        using std::chrono::seconds;
        for (std::size_t i = 0; i < resolve.size(); ++i) {
            if (detail::is_bracketed_resolve_host(resolve[i]))
                return entry_error("resolve", i,
                                   "must name a host without brackets (libcurl refuses a bracketed one there, and "
                                   "an IPv6 address in a URL is not resolved)",
                                   resolve[i]);
            if (!detail::is_resolve_entry(resolve[i]))
                return entry_error("resolve", i, "must be \"host:port:address[,address...]\"", resolve[i]);
        }
        for (std::size_t i = 0; i < connect_to.size(); ++i)
            if (!detail::is_connect_to_entry(connect_to[i]))
                return entry_error("connect_to", i, "must be \"host:port:connect-host:connect-port\"", connect_to[i]);
        const seconds one{1};
        if (auto bad = resil::detail::check_in_range("dns_cache_lifetime", dns_cache_lifetime, seconds{0}, longest))
            return bad;
        if (max_connection_age)
            if (auto bad = resil::detail::check_in_range("max_connection_age", *max_connection_age, one, longest))
                return bad;
        if (auto bad = resil::detail::check_in_range("max_connection_idle", max_connection_idle, one, longest))
            return bad;
        if (auto bad = resil::detail::check_in_range("max_idle_for_unrepeatable", max_idle_for_unrepeatable,
                                                     std::chrono::milliseconds::zero(),
                                                     std::chrono::milliseconds{longest}))
            return bad;
        if (auto bad = resil::detail::check_in_range("tcp_keepalive_idle", tcp_keepalive_idle, one, longest_keepalive))
            return bad;
        if (auto bad =
                resil::detail::check_in_range("tcp_keepalive_interval", tcp_keepalive_interval, one, longest_keepalive))
            return bad;
        return std::nullopt;
    }

private:
    [[nodiscard]] RESIL_DETAIL_COLD static invalid_option entry_error(std::string_view list, std::size_t index,
                                                                    std::string_view requirement,
                                                                    std::string_view text) {
        return {resil::detail::concat({list, "[", std::to_string(index), "]"}),
                resil::detail::concat({requirement, ", got ", detail::quote_for_error(text)})};
    }
};

}  // namespace resil::curl
