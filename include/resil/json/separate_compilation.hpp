// resil/json/separate_compilation.hpp — what resil::json compiles once when a
// program defines RESIL_SEPARATE_COMPILATION (see
// resil/separate_compilation.hpp): the JSON path helpers, load_config and
// parse_config for nlohmann::json, every options type's reader (read<T> from
// nlohmann::json) and writers (write<nlohmann::ordered_json> and
// write<nlohmann::json>), and the metrics' JSON (to_json). Include it in the
// same one source file as the core's (and resil/curl/separate_compilation.hpp
// when you use both). The options of libcurl's client and of a dependency
// are resil/http/separate_compilation.hpp's (they need libcurl's headers).
#pragma once

#include "../separate_compilation.hpp"
#include "../json.hpp"

namespace resil::json {
template pipeline_config parse_config<nlohmann::json>(std::string_view);
template pipeline_config load_config<nlohmann::json>(const std::filesystem::path&);
template nlohmann::json to_json<nlohmann::json>(const metrics&);
template nlohmann::json to_json<nlohmann::json>(const metrics&, time_point);
}  // namespace resil::json

template resil::duration resil::json::read<resil::duration, nlohmann::json>(const nlohmann::json&, std::string_view);
template resil::backoff resil::json::read<resil::backoff, nlohmann::json>(const nlohmann::json&, std::string_view);
template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json>(resil::duration);
template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json>(const resil::backoff&);
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::timeouts)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::retry_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::retry_budget_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::circuit_breaker_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::token_bucket_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::concurrency_limit_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::deadline_policy_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::json::pipeline_config)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::paced_bucket_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::adaptive_limit_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::adaptive_throttle_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::outlier_detection_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::balancer_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::endpoint)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::health_check_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::fallback_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::fault_injection_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::hedge_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::pushback_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::redis::rate_limiter_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::sse::reader_options)
