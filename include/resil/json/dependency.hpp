// resil/json/dependency.hpp — the JSON keys of one dependency's options
// (resil/http/dependency_options.hpp) and of its health checks, read and
// written by resil::json::read and write as every options type is: each
// member a key, each nested options type an object with its own keys, an
// absent optional policy `null` or left out (no policy), the endpoints an
// array of objects.
//
//   auto o = resil::json::read<resil::http::dependency_options>(j, "payments");
//   // {"name": "payments",
//   //  "endpoints": [{"address": "https://pay-a.internal", "idempotency_scope": "provider-a"},
//   //                {"address": "https://pay-b.internal", "priority": 1, "idempotency_scope": "provider-b"}],
//   //  "balancing": {"endpoint_breaker": {"open_for": "30s"}},
//   //  "transport": {"tls": {"ca_file": "/etc/ca.pem"}},
//   //  "deadline": {"budget": "2s"}, "retry": {"max_attempts": 2}}
//   // {"endpoints": [{"address": "https://a"}, {"address": "https://b", "weight": 0}]} → config_error
//   //   "payments.endpoints[1].weight: must be in [1, 10000], got 0"
//
// The reader checks every part at its path: the name, the endpoint list
// (addresses unique), each policy's options by its own validate(), the
// transport (files it names readable now), and that concurrency_limit and
// adaptive_limit are not both given. A service file holding several
// dependencies is resil/json/service_config.hpp.
//
// Needs libcurl's headers (the transport is resil::curl::client_options):
// not in resil/json.hpp; link the resil::json and resil::curl CMake targets.
#pragma once

#include <span>
#include <string_view>

#include "../http/dependency_options.hpp"
#include "../validation.hpp"
#include "adaptive.hpp"
#include "balancing.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "curl.hpp"
#include "fault_injection.hpp"
#include "fields.hpp"
#include "hedge.hpp"
#include "read.hpp"
#include "redis.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct fields<http::health_check_settings> {
    using T = http::health_check_settings;
    static constexpr auto list = field_list{key("probe", &T::probe), key("path", &T::path)};
};

/// Every member is configuration: the dependency's name, its endpoints and
/// policies, its transport (whose own code-only members json/curl.hpp leaves out).
template <>
struct fields<http::dependency_options> {
    using T = http::dependency_options;
    static constexpr auto list = field_list{
        key("name", &T::name),
        key("endpoints", &T::endpoints),
        key("balancing", &T::balancing),
        key("health_check", &T::health_check),
        key("transport", &T::transport),
        key("deadline", &T::deadline),
        key("timeouts", &T::timeouts),
        key("retry", &T::retry),
        key("retry_budget", &T::retry_budget),
        key("circuit_breaker", &T::circuit_breaker),
        key("concurrency_limit", &T::concurrency_limit),
        key("adaptive_limit", &T::adaptive_limit),
        key("pacing", &T::pacing),
        key("quota", &T::quota),
        key("shared_quota", &T::shared_quota),
        key("hedge", &T::hedge),
        key("faults", &T::faults),
    };
};

// No checker: dependency_options::validate() and health_check_settings::
// validate() are the one place these options are checked, and the reader
// calls them (names at the path of the section read).

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::http::health_check_settings)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::http::dependency_options)
