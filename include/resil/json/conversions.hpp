// resil/json/conversions.hpp — nlohmann's own conversions for resil's
// options, so `j.get<resil::retry_options>()` and `nlohmann::json j = options;`
// work too: reading through resil::json::read (strict, no path prefix),
// writing through resil::json::write. Every options type with a key table
// (json/fields.hpp and the headers beside it) has them, and resil::backoff.
//
//   nlohmann::json j = resil::retry_options{};
//   auto back = j.get<resil::retry_options>();
/// \file
/// nlohmann::json's own conversions for resil::backoff and every options type
/// with a key table: `j.get<resil::retry_options>()` reads through
/// resil::json::read (strict, no path prefix) and `nlohmann::json j =
/// options;` writes through resil::json::write. They are a specialisation of
/// nlohmann::adl_serializer, which the reference does not list as a class.
#pragma once

#include <nlohmann/json.hpp>

#include <type_traits>

#include "../backoff.hpp"
#include "../circuit_breaker/options.hpp"
#include "../concurrency_limit.hpp"
#include "../retry.hpp"
#include "../retry_budget.hpp"
#include "../timeouts.hpp"
#include "../token_bucket.hpp"
#include "detail/options_instances.hpp"
#include "pipeline_config.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {
/// What nlohmann converts through resil::json: a backoff, and every options type.
template <class T>
concept converted = std::is_same_v<T, resil::backoff> || options_type<T>;
}  // namespace resil::json::detail

namespace nlohmann {
template <class T>
    requires ::resil::json::detail::converted<T>
struct adl_serializer<T, void> {
    template <class Json>
    static void to_json(Json& j, const T& value) {
        j = ::resil::json::write<Json>(value);
    }
    template <class Json>
    static void from_json(const Json& j, T& value) {
        value = ::resil::json::read<T>(j);
    }
};
}  // namespace nlohmann
