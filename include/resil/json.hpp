// resil/json.hpp — policy options from JSON and back (nlohmann/json), so
// operators tune a dependency's pipeline in a file instead of a rebuild.
//
//   // triton.json: {"deadline": "250ms", "retry": {"max_attempts": 3}, "circuit_breaker": {"open_for": "30s"}}
//   auto cfg = resil::json::load_config("triton.json");     // throws resil::json::config_error
//   resil::circuit_breaker breaker{cfg.circuit_breaker.value_or(resil::circuit_breaker_options{})};
//   auto pipe = resil::pipeline(resil::deadline_policy{cfg.deadline.value_or(250ms)},
//                               resil::retry_policy{cfg.retry.value_or(resil::retry_options{})},
//                               std::ref(breaker));
//
//   nlohmann::json j = resil::json::write(breaker.options());    // {"mode": "time_window", ...}
//   auto back = resil::json::read<resil::circuit_breaker_options>(j, "circuit_breaker");
//
// Durations are strings with a unit ("250ms", "1.5s", "2m", "100us", "1h");
// bare numbers are refused, since their unit would be a guess. Reading is
// strict: an unknown key (a typo), a wrong type, a duplicate key, a value the
// options type's validate() refuses — each is a config_error naming the JSON
// path and the reason ("retry.max_attempts: must be in [1, 100], got 0"). A
// missing key takes the documented default. Writing gives every key in the
// documented order, and reading it back gives the same options.
// docs/observability.md lists every key with its type, default and range.
//
// This header includes them all, and the policies they configure:
//   json/error.hpp            config_error
//   json/duration.hpp         duration text: parse_duration, format_duration (standard library only)
//   json/parse.hpp            the strict parser (refuses duplicate keys)
//   json/pipeline_config.hpp  pipeline_config, every section optional
//   json/fields.hpp           each options type's keys, listed once
//   json/read.hpp             read<T>: shape checks, then the type's validate()
//   json/write.hpp            write(options)
//   json/load_config.hpp      load_config(file), parse_config(text)
//   json/conversions.hpp      nlohmann's get<T>() and assignment
//   json/adaptive.hpp         the keys of paced_bucket, adaptive_limit and adaptive_throttle options
//   json/hedge.hpp            the keys of hedge_options
//   json/fallback.hpp         the keys of fallback_options
//   json/fault_injection.hpp  the keys of fault_injection_options (and verdicts by name)
//   json/balancing.hpp        the keys of balancer, outlier detection and health check options
//   json/discovery.hpp        the keys of a DNS discovery source's options (its header only, not libresolv)
//   json/redis.hpp            the keys of the Redis limiter's options (its header only, not hiredis)
//   json/pushback.hpp         the keys of pushback_options (the floor under Retry-After)
//   json/sse.hpp              the keys of an event stream reader's options
//
// Needs the resil::json CMake target (nlohmann_json 3.9 or later). Three
// more need libcurl's headers too (and the resil::curl target), so are not
// included here: json/curl.hpp (the libcurl client's options),
// json/dependency.hpp (a dependency's options) and json/service_config.hpp
// (a service file of named dependencies; docs/configuration.md).
#pragma once

#include "backoff.hpp"
#include "circuit_breaker.hpp"
#include "clock.hpp"
#include "concurrency_limit.hpp"
#include "deadline_policy.hpp"
#include "outcome.hpp"
#include "retry.hpp"
#include "retry_budget.hpp"
#include "timeouts.hpp"
#include "token_bucket.hpp"

#include "json/adaptive.hpp"
#include "json/balancing.hpp"
#include "json/conversions.hpp"
#include "json/discovery.hpp"
#include "json/duration.hpp"
#include "json/error.hpp"
#include "json/fallback.hpp"
#include "json/fault_injection.hpp"
#include "json/fields.hpp"
#include "json/hedge.hpp"
#include "json/load_config.hpp"
#include "json/metrics.hpp"
#include "json/parse.hpp"
#include "json/pipeline_config.hpp"
#include "json/pushback.hpp"
#include "json/read.hpp"
#include "json/redis.hpp"
#include "json/sse.hpp"
#include "json/write.hpp"
