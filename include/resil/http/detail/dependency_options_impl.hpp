// resil/http/detail/dependency_options_impl.hpp — the checks of
// resil::http::dependency_options (resil/http/dependency_options.hpp), each
// field named from the options' root.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "../dependency_options.hpp"

namespace resil::http {

namespace detail {

[[nodiscard]] inline bool is_dependency_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

}  // namespace detail

RESIL_DECL validation_result health_check_settings::validate() const {
    if (auto bad = probe.validate()) return bad->within("probe");
    // Printable ASCII without a space: it goes into a request line as it is.
    bool ok = path.starts_with('/');
    for (const char c : path) ok = ok && c > ' ' && c < 0x7f;
    if (ok) return std::nullopt;
    return invalid_option{"path", resil::detail::concat({"must start with '/' and hold no space or control "
                                                         "character, got \"",
                                                         std::string_view(path).substr(0, 64), "\""})};
}

RESIL_DECL validation_result dependency_options::validate() const {
    if (!detail::is_dependency_name(name))
        return invalid_option{"name", resil::detail::concat({"must be 1 to 64 characters of [a-z0-9_-], got \"",
                                                              std::string_view(name).substr(0, 80), "\""})};
    if (endpoints.empty()) return invalid_option{"endpoints", "must name at least one endpoint, got none"};
    if (auto bad = validate_endpoints(endpoints)) return bad;
    if (auto bad = balancing.validate()) return bad->within("balancing");
    if (health_check)
        if (auto bad = health_check->validate()) return bad->within("health_check");
    if (auto bad = transport.validate()) return bad->within("transport");
    if (auto bad = deadline.validate()) return bad->within("deadline");
    if (auto bad = timeouts.validate()) return bad->within("timeouts");
    // The dependency's own budget takes the place of a pointer given here.
    if (auto bad = retry.validate()) return bad->within("retry");
    if (retry_budget)
        if (auto bad = retry_budget->validate()) return bad->within("retry_budget");
    if (circuit_breaker)
        if (auto bad = circuit_breaker->validate()) return bad->within("circuit_breaker");
    if (concurrency_limit)
        if (auto bad = concurrency_limit->validate()) return bad->within("concurrency_limit");
    if (adaptive_limit) {
        if (concurrency_limit)
            return invalid_option{"adaptive_limit",
                                  "must be absent while concurrency_limit is given (one limit on calls in flight), got both"};
        if (auto bad = adaptive_limit->validate()) return bad->within("adaptive_limit");
    }
    if (pacing)
        if (auto bad = pacing->validate()) return bad->within("pacing");
    if (quota)
        if (auto bad = quota->validate()) return bad->within("quota");
    if (shared_quota)
        if (auto bad = shared_quota->validate()) return bad->within("shared_quota");
    if (hedge)
        if (auto bad = hedge->validate()) return bad->within("hedge");
    if (faults)
        if (auto bad = faults->validate()) return bad->within("faults");
    return std::nullopt;
}

}  // namespace resil::http
