// resil/json/pipeline_config.hpp — every option of a dependency's pipeline,
// each section optional, as load_config() returns it.
//
//   auto cfg = resil::json::load_config("triton.json");
//   resil::retry_policy retry{cfg.retry.value_or(resil::retry_options{})};
#pragma once

#include <optional>

#include "../circuit_breaker/options.hpp"
#include "../clock.hpp"
#include "../concurrency_limit.hpp"
#include "../retry.hpp"
#include "../retry_budget.hpp"
#include "../timeouts.hpp"
#include "../token_bucket.hpp"

namespace resil::json {

/// Every option of a dependency's pipeline, each optional: a section absent
/// from the file is empty here (the caller picks its own default or leaves
/// the policy out). JSON keys are the member names.
struct pipeline_config {
    std::optional<duration> deadline{};                             ///< "deadline": "250ms"
    std::optional<resil::timeouts> timeouts{};                      ///< "timeouts": {...}
    std::optional<retry_options> retry{};                           ///< "retry": {...} (budget pointer unset)
    std::optional<retry_budget_options> retry_budget{};             ///< "retry_budget": {...}
    std::optional<circuit_breaker_options> circuit_breaker{};       ///< "circuit_breaker": {...} (no callback)
    std::optional<token_bucket_options> token_bucket{};             ///< "token_bucket": {...}
    std::optional<concurrency_limit_options> concurrency_limit{};   ///< "concurrency_limit": {...}
};

}  // namespace resil::json
