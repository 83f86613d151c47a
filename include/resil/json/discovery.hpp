// resil/json/discovery.hpp — the JSON keys of a DNS discovery source's
// options (resil/discovery/options.hpp; its header only, not libresolv), read
// and written by resil::json::read and write as every options type is. The
// on_lookup listener is code, not configuration: neither read nor written.
//
//   auto o = resil::json::read<resil::dns_discovery_options>(j["discovery"], "discovery");
//   // {"name": "triton.ml.svc.cluster.local", "port": 8000, "min_ttl": "5s", "max_ttl": "1m"}
//   // {"name": "_http._tcp.triton.ml.svc.cluster.local", "records": "srv"}
//   // {"name": "x.test", "query_timeout": "1500ms"} → config_error
//   //   "discovery.query_timeout: must be whole seconds, got 1.5s"
#pragma once

#include <array>
#include <string_view>

#include "../discovery/options.hpp"
#include "conversions.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct enumerators<dns_records> {
    static constexpr std::string_view what = "a kind of DNS records";
    static constexpr std::array values{dns_records::address, dns_records::srv};
};

template <>
struct fields<dns_discovery_options> {
    using T = dns_discovery_options;
    static constexpr auto list = field_list{
        key("name", &T::name),
        key("records", &T::records),
        key("port", &T::port),
        key("scheme", &T::scheme),
        key("ipv4", &T::ipv4),
        key("ipv6", &T::ipv6),
        key("nameserver", &T::nameserver),
        key("idempotency_scope", &T::idempotency_scope),
        key("interval", &T::interval),
        key("min_ttl", &T::min_ttl),
        key("max_ttl", &T::max_ttl),
        key("retry_after_failure", &T::retry_after_failure),
        key("query_timeout", &T::query_timeout),
        key("query_attempts", &T::query_attempts),
    };
};

}  // namespace resil::json::detail
