// resil/json/redis.hpp — the JSON keys of resil::redis::rate_limiter_options
// (resil/redis/options.hpp), read and written by resil::json::read and
// write as every options type is. Needs only the options' header (standard
// library only), not hiredis: a service may read its quota's configuration
// without linking resil::redis where it does not build the limiter.
//
//   auto o = resil::json::read<resil::redis::rate_limiter_options>(j["quota"], "quota");
//   // {"rate": 50, "burst": 100, "key": "llm-api", "on_failure": "fail_open", "connect_timeout": "50ms"}
//   // {"on_failure": "fail_opn"} → config_error
//   //   "quota.on_failure: must be one of "fail_open", "fail_closed", got "fail_opn""
#pragma once

#include <array>
#include <string_view>

#include "../redis/options.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct enumerators<redis::failure_policy> {
    static constexpr std::string_view what = "a failure policy";
    static constexpr std::array values{redis::failure_policy::fail_open, redis::failure_policy::fail_closed};
};

/// The timeouts and backoffs are whole milliseconds ("50ms", "2s"; "1.5ms" is refused).
template <>
struct fields<redis::rate_limiter_options> {
    using T = redis::rate_limiter_options;
    static constexpr auto list = field_list{
        key("rate", &T::rate),
        key("burst", &T::burst),
        key("host", &T::host),
        key("port", &T::port),
        key("cluster_nodes", &T::cluster_nodes),
        key("sentinels", &T::sentinels),
        key("sentinel_master", &T::sentinel_master),
        key("max_redirections", &T::max_redirections),
        key("key", &T::key),
        key("key_prefix", &T::key_prefix),
        key("connect_timeout", &T::connect_timeout),
        key("reply_timeout", &T::reply_timeout),
        key("connections", &T::connections),
        key("reconnect_backoff", &T::reconnect_backoff),
        key("reconnect_backoff_max", &T::reconnect_backoff_max),
        key("on_failure", &T::on_failure),
        key("expected_pods", &T::expected_pods),
        key("lease", &T::lease),
        key("lease_ttl", &T::lease_ttl),
        key("max_wait", &T::max_wait),
    };
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::redis::rate_limiter_options)
