// resil/json/balancing.hpp — the JSON keys of the balancing options
// (resil/balancer.hpp): balancer_options with its affinity, outlier detection and
// per-endpoint breaker as nested objects, an endpoint, and
// health_check_options; read
// and written by resil::json::read and write as every options type is. The
// hooks (on_ejected, on_returned, a breaker's on_state_change) are code,
// not configuration: neither read nor written.
//
//   auto o = resil::json::read<resil::balancer_options>(j["balancer"], "balancer");
//   // {"policy": "peak_ewma", "outlier": {"consecutive_failures": 0}, "endpoint_breaker": null}
//   // {"outlier": {"max_ejection_share": 2}} → config_error
//   //   "balancer.outlier.max_ejection_share: must be in [0, 1], got 2"
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "../balancer.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct enumerators<balancing_policy> {
    static constexpr std::string_view what = "a balancing policy";
    static constexpr std::array values{balancing_policy::round_robin, balancing_policy::random,
                                       balancing_policy::least_outstanding, balancing_policy::power_of_two_choices,
                                       balancing_policy::peak_ewma, balancing_policy::ring_hash,
                                       balancing_policy::maglev, balancing_policy::rendezvous};
};

template <>
struct fields<affinity_options> {
    using T = affinity_options;
    static constexpr auto list = field_list{
        key("min_ring_size", &T::min_ring_size),
        key("max_ring_size", &T::max_ring_size),
        key("maglev_table_size", &T::maglev_table_size),
        key("load_bound_factor", &T::load_bound_factor),
    };
};

template <>
struct fields<outlier_detection_options> {
    using T = outlier_detection_options;
    static constexpr auto list = field_list{
        key("consecutive_failures", &T::consecutive_failures),
        key("base_ejection_time", &T::base_ejection_time),
        key("max_ejection_time", &T::max_ejection_time),
        key("ejection_decay_interval", &T::ejection_decay_interval),
        key("max_ejection_share", &T::max_ejection_share),
    };
};

/// Every balancer option but the hooks (code, not configuration);
/// endpoint_breaker is null for none, else a circuit breaker's object.
template <>
struct fields<balancer_options> {
    using T = balancer_options;
    static constexpr auto list = field_list{
        key("policy", &T::policy),
        key("decay_time", &T::decay_time),
        key("unmeasured_penalty", &T::unmeasured_penalty),
        key("affinity", &T::affinity),
        key("outlier", &T::outlier),
        key("panic_threshold", &T::panic_threshold),
        key("failover_threshold", &T::failover_threshold),
        key("endpoint_breaker", &T::endpoint_breaker),
    };
};

/// One endpoint of a set (resil/balancer/endpoint.hpp). In a list (a
/// dependency's "endpoints") the owner checks the whole list, uniqueness
/// included; read alone, it is checked as a list of one.
template <>
struct fields<endpoint> {
    using T = endpoint;
    static constexpr auto list = field_list{key("address", &T::address), key("weight", &T::weight),
                                            key("zone", &T::zone), key("priority", &T::priority),
                                            key("idempotency_scope", &T::idempotency_scope)};
};

template <>
struct checker<endpoint> {
    static validation_result check(const endpoint& e) {
        auto bad = validate_endpoints(std::span<const endpoint>(&e, 1));
        constexpr std::string_view item = "endpoints[0].";
        if (bad && std::string_view(bad->field).starts_with(item)) bad->field.erase(0, item.size());
        return bad;
    }
};

template <>
struct fields<health_check_options> {
    using T = health_check_options;
    static constexpr auto list =
        field_list{key("interval", &T::interval), key("timeout", &T::timeout),
                   key("unhealthy_threshold", &T::unhealthy_threshold), key("healthy_threshold", &T::healthy_threshold)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::outlier_detection_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::balancer_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::endpoint)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::health_check_options)
