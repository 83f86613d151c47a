// resil/json/conversions.hpp — nlohmann's own conversions for resil's
// options, so `j.get<resil::retry_options>()` and `nlohmann::json j = options;`
// work too: reading through resil::json::read (strict, no path prefix),
// writing through resil::json::write.
//
//   nlohmann::json j = resil::retry_options{};
//   auto back = j.get<resil::retry_options>();
#pragma once

#include <nlohmann/json.hpp>

#include "../backoff.hpp"
#include "../circuit_breaker/options.hpp"
#include "../concurrency_limit.hpp"
#include "../retry.hpp"
#include "../retry_budget.hpp"
#include "../timeouts.hpp"
#include "../token_bucket.hpp"
#include "pipeline_config.hpp"
#include "read.hpp"
#include "write.hpp"

namespace nlohmann {
#define RESIL_JSON_SERIALIZER(type)                                                   \
    template <>                                                                       \
    struct adl_serializer<type> {                                                     \
        template <class Json>                                                         \
        static void to_json(Json& j, const type& value) {                            \
            j = ::resil::json::write<Json>(value);                                    \
        }                                                                             \
        template <class Json>                                                         \
        static void from_json(const Json& j, type& value) {                          \
            value = ::resil::json::read<type>(j);                                     \
        }                                                                             \
    };
RESIL_JSON_SERIALIZER(::resil::timeouts)
RESIL_JSON_SERIALIZER(::resil::backoff)
RESIL_JSON_SERIALIZER(::resil::retry_options)
RESIL_JSON_SERIALIZER(::resil::retry_budget_options)
RESIL_JSON_SERIALIZER(::resil::circuit_breaker_options)
RESIL_JSON_SERIALIZER(::resil::token_bucket_options)
RESIL_JSON_SERIALIZER(::resil::concurrency_limit_options)
RESIL_JSON_SERIALIZER(::resil::json::pipeline_config)
#undef RESIL_JSON_SERIALIZER
}  // namespace nlohmann
