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
#include <tuple>

#include "../http/dependency_options.hpp"
#include "../validation.hpp"
#include "adaptive.hpp"
#include "balancing.hpp"
#include "conversions.hpp"
#include "curl.hpp"
#include "fields.hpp"
#include "hedge.hpp"
#include "read.hpp"
#include "redis.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct fields<http::health_check_settings> {
    using T = http::health_check_settings;
    static constexpr auto list = std::tuple{key("probe", &T::probe), key("path", &T::path)};
};

/// Every member is configuration: the dependency's name, its endpoints and
/// policies, its transport (whose own code-only members json/curl.hpp leaves out).
template <>
struct fields<http::dependency_options> {
    using T = http::dependency_options;
    static constexpr auto list = std::tuple{
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
    };
};

/// A health check's path: "/" then printable ASCII without a space.
[[nodiscard]] inline validation_result check_health_path(std::string_view path) {
    bool ok = path.starts_with('/');
    for (const char c : path) ok = ok && c > ' ' && c < 0x7f;
    if (ok) return std::nullopt;
    return invalid_option{"path", resil::detail::concat({"must start with '/' and hold no space or control "
                                                         "character, got \"",
                                                         path.substr(0, 64), "\""})};
}

template <>
struct checker<http::health_check_settings> {
    static validation_result check(const http::health_check_settings& s) {
        if (auto bad = s.probe.validate()) return bad->within("probe");
        return check_health_path(s.path);
    }
};

/// A dependency's name: 1 to 64 characters of [a-z0-9_-].
[[nodiscard]] inline validation_result check_dependency_name(std::string_view name) {
    bool ok = !name.empty() && name.size() <= 64;
    for (const char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
    if (ok) return std::nullopt;
    return invalid_option{"name", resil::detail::concat({"must be 1 to 64 characters of [a-z0-9_-], got \"",
                                                         name.substr(0, 64), "\""})};
}

/// Each part of a dependency at its name, in the order of the table.
template <>
struct checker<http::dependency_options> {
    static validation_result check(const http::dependency_options& d) {
        if (auto bad = check_dependency_name(d.name)) return bad;
        if (d.endpoints.empty()) return invalid_option{"endpoints", "must name at least one endpoint, got none"};
        if (auto bad = validate_endpoints(std::span<const endpoint>(d.endpoints))) return bad;
        if (auto bad = d.balancing.validate()) return bad->within("balancing");
        if (d.health_check)
            if (auto bad = checker<http::health_check_settings>::check(*d.health_check))
                return bad->within("health_check");
        if (auto bad = d.transport.validate()) return bad->within("transport");
        if (auto bad = d.deadline.validate()) return bad->within("deadline");
        if (auto bad = d.timeouts.validate()) return bad->within("timeouts");
        if (auto bad = d.retry.validate()) return bad->within("retry");
        if (auto bad = optional_part("retry_budget", d.retry_budget)) return bad;
        if (auto bad = optional_part("circuit_breaker", d.circuit_breaker)) return bad;
        if (auto bad = optional_part("concurrency_limit", d.concurrency_limit)) return bad;
        if (auto bad = optional_part("adaptive_limit", d.adaptive_limit)) return bad;
        if (d.concurrency_limit && d.adaptive_limit)
            return invalid_option{"adaptive_limit", "must be absent while concurrency_limit is given (one limit on "
                                                    "calls in flight), got both"};
        if (auto bad = optional_part("pacing", d.pacing)) return bad;
        if (auto bad = optional_part("quota", d.quota)) return bad;
        if (auto bad = optional_part("shared_quota", d.shared_quota)) return bad;
        return optional_part("hedge", d.hedge);
    }

private:
    template <class Options>
    static validation_result optional_part(std::string_view name, const std::optional<Options>& part) {
        if (!part) return std::nullopt;
        if (auto bad = part->validate()) return bad->within(name);
        return std::nullopt;
    }
};

}  // namespace resil::json::detail
