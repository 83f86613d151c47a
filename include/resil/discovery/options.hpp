// resil/discovery/options.hpp — what a DNS discovery source is told (the
// name, the records, how often), what it tells (one event per lookup), and
// its counts.
//
//   resil::dns_discovery_options o{.name = "triton.ml.svc.cluster.local", .port = 8000,
//                                  .min_ttl = 5s, .max_ttl = 60s};
//   if (auto bad = o.validate()) log(bad->message());   // "`port` must be in [1, 65535], got 0"
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "../clock.hpp"
#include "../enum_name.hpp"
#include "../events.hpp"
#include "../balancer/endpoint.hpp"
#include "../validation.hpp"

namespace resil {

/// Which records a DNS discovery source asks for.
enum class dns_records : std::uint8_t {
    /// A and AAAA of the name: one endpoint per address, all on
    /// dns_discovery_options::port (a Kubernetes headless Service).
    address,
    /// SRV of the name (`_port._proto.name`): one endpoint per target and
    /// port, its SRV weight as the endpoint's weight and its priority rank
    /// as the endpoint's priority group; each target's addresses from A / AAAA.
    srv,
};

/// The records' name, e.g. "srv".
[[nodiscard]] constexpr enum_name to_string(dns_records r) noexcept {
    switch (r) {
        case dns_records::address: return "address";
        case dns_records::srv: return "srv";
    }
    return "unknown";
}

// dns_lookup_outcome and events::dns_lookup are in resil/events.hpp, with
// every event resil emits.

/// What a DNS discovery source (resil/discovery/dns_discovery.hpp) is told.
/// Defaults follow CoreDNS's TTL floor (5 s) and stay below gRPC's 30 s
/// minimum between lookups; docs/discovery.md compares them.
struct dns_discovery_options {
    /// The name to resolve ("triton.ml.svc.cluster.local", or with
    /// dns_records::srv "_http._tcp.triton.ml.svc.cluster.local"). Required.
    std::string name;
    /// A / AAAA (default) or SRV.
    dns_records records = dns_records::address;
    /// The port of every endpoint found by address records (SRV records carry their own).
    std::uint32_t port = 80;
    /// The endpoints' form: "http" or "https" give "http://10.0.0.1:8080"
    /// (a base URL), "" gives "10.0.0.1:8080" (for connect_to).
    std::string scheme = "http";
    /// Ask for A records (IPv4); `ipv4` or `ipv6` must be true.
    bool ipv4 = true;
    /// Ask for AAAA records (IPv6).
    bool ipv6 = true;
    /// The DNS server as "IPv4:port" ("127.0.0.1:5353"); empty: the system's
    /// (/etc/resolv.conf). libresolv takes an IPv4 server address here.
    std::string nameserver{};
    /// Every endpoint's idempotency scope (resil/balancer/endpoint.hpp).
    std::string idempotency_scope{};
    /// A fixed time between lookups; zero (default): the records' smallest
    /// TTL, clamped to [min_ttl, max_ttl].
    duration interval = duration::zero();
    /// The shortest wait between lookups: a TTL of 0 (dnsmasq's default for
    /// hosts files) is not a lookup in a loop.
    duration min_ttl = std::chrono::seconds{5};
    /// The longest wait between lookups, whatever the TTL.
    duration max_ttl = std::chrono::seconds{300};
    /// The wait after a failed or empty lookup; doubled after each further
    /// one in a row, at most max_ttl.
    duration retry_after_failure = std::chrono::seconds{1};
    /// How long one query waits for its answer: whole seconds (libresolv's unit).
    duration query_timeout = std::chrono::seconds{2};
    /// Queries sent before a lookup fails.
    std::uint32_t query_attempts = 2;
    /// Told of every lookup; runs on the thread that looked up. Must not throw.
    std::function<void(const events::dns_lookup&)> on_lookup{};

    /// The longest name (RFC 1035: 255 octets on the wire, 253 characters written).
    static constexpr std::size_t max_name_length = 253;
    /// The limit of min_ttl, max_ttl, interval and retry_after_failure.
    static constexpr duration max_wait = std::chrono::hours{24};
    /// The shortest min_ttl, interval and retry_after_failure.
    static constexpr duration min_wait = std::chrono::milliseconds{10};
    /// The longest query_timeout.
    static constexpr duration max_query_timeout = std::chrono::seconds{30};
    /// The most query_attempts.
    static constexpr std::uint32_t max_query_attempts = 5;

    /// The first invalid field: "`name` must be a DNS name, got \"\"".
    [[nodiscard]] validation_result validate() const;
};

namespace detail {

/// A DNS name as a query takes it: labels of 1 to 63 letters, digits, '-' or
/// '_', one trailing dot allowed, at most 253 characters.
[[nodiscard]] constexpr bool is_dns_name(std::string_view text) noexcept {
    if (text.size() > 1 && text.back() == '.') text.remove_suffix(1);
    if (text.empty() || text.size() > dns_discovery_options::max_name_length) return false;
    std::size_t label = 0;
    for (char c : text) {
        if (c == '.') {
            if (label == 0) return false;
            label = 0;
            continue;
        }
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_'))
            return false;
        if (++label > 63) return false;
    }
    return label != 0;
}

/// "a.b.c.d:port", port in [1, 65535].
[[nodiscard]] constexpr bool is_ipv4_and_port(std::string_view text) noexcept {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    auto port = text.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    std::uint32_t p = 0;
    for (char c : port) {
        if (c < '0' || c > '9') return false;
        p = p * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (p < 1 || p > 65535) return false;
    int parts = 0;
    std::uint32_t octet = 0;
    std::size_t digits = 0;
    for (char c : text.substr(0, colon)) {
        if (c == '.') {
            if (digits == 0) return false;
            ++parts;
            octet = 0;
            digits = 0;
        } else if (c >= '0' && c <= '9') {
            octet = octet * 10 + static_cast<std::uint32_t>(c - '0');
            if (++digits > 3 || octet > 255) return false;
        } else {
            return false;
        }
    }
    return digits != 0 && parts == 3;
}

/// "`field` must be <what>, got \"<got>\"" (a text field; at most 256 characters shown).
[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option bad_text_option(std::string_view field, std::string_view what,
                                                                      std::string_view got) {
    return invalid_option{std::string(field), concat({"must be ", what, ", got \"", got.substr(0, 256), "\""})};
}

}  // namespace detail

inline validation_result dns_discovery_options::validate() const {
    if (!detail::is_dns_name(name))
        return detail::bad_text_option("name", "a DNS name (labels of letters, digits, '-', '_'; at most 253 characters)",
                                       name);
    if (auto bad = detail::check_in_range("port", port, std::uint32_t{1}, std::uint32_t{65535})) return bad;
    if (!(scheme.empty() || scheme == "http" || scheme == "https"))
        return detail::bad_text_option("scheme", "\"http\", \"https\" or \"\"", scheme);
    if (!ipv4 && !ipv6) return detail::check_that(false, "ipv6", "true when `ipv4` is false", ipv6);
    if (!nameserver.empty() && !detail::is_ipv4_and_port(nameserver))
        return detail::bad_text_option("nameserver", "empty or an IPv4 address and port (\"127.0.0.1:53\")",
                                       nameserver);
    if (!detail::is_scope_name(idempotency_scope))
        return detail::bad_text_option("idempotency_scope", "at most 256 printable ASCII characters",
                                       idempotency_scope);
    if (interval != duration::zero())
        if (auto bad = detail::check_in_range("interval", interval, min_wait, max_wait)) return bad;
    if (auto bad = detail::check_in_range("min_ttl", min_ttl, min_wait, max_wait)) return bad;
    if (auto bad = detail::check_in_range("max_ttl", max_ttl, min_ttl, max_wait)) return bad;
    if (auto bad = detail::check_in_range("retry_after_failure", retry_after_failure, min_wait, max_wait)) return bad;
    if (auto bad = detail::check_in_range("query_timeout", query_timeout, duration{std::chrono::seconds{1}},
                                          max_query_timeout))
        return bad;
    if (query_timeout % std::chrono::seconds{1} != duration::zero())
        return detail::check_that(false, "query_timeout", "whole seconds", query_timeout);
    if (auto bad = detail::check_in_range("query_attempts", query_attempts, std::uint32_t{1}, max_query_attempts))
        return bad;
    return std::nullopt;
}

/// What one lookup found: what a lookup function of yours returns to a
/// dns_discovery (a simulated DNS, another resolver), and what its own
/// libresolv lookup returns.
struct dns_answer {
    /// What the lookup came to.
    dns_lookup_outcome outcome = dns_lookup_outcome::failed;
    /// The endpoints found (resolved only; the source sorts them by address
    /// and drops repeats).
    std::vector<endpoint> endpoints{};
    /// The smallest TTL of the records, in seconds (resolved only).
    std::uint32_t ttl = 0;
    /// Why it failed or was empty.
    std::string error{};
};

/// A DNS discovery source's counts since it was made.
struct dns_discovery_metrics {
    /// Lookups done.
    std::uint64_t lookups = 0;
    /// Lookups that failed (the last good set kept).
    std::uint64_t failures = 0;
    /// Lookups that found nothing (NXDOMAIN, no records; the last good set kept).
    std::uint64_t empty = 0;
    /// Lookups that changed the set (each one apply: replace()).
    std::uint64_t changes = 0;
    /// Endpoints added by those changes.
    std::uint64_t added = 0;
    /// Endpoints removed by those changes.
    std::uint64_t removed = 0;
    /// Endpoints in the last good set.
    std::uint64_t endpoints = 0;
    /// Failed or empty lookups in a row now (0 after a resolved one).
    std::uint64_t failing_in_row = 0;
};

}  // namespace resil
