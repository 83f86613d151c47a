// resil/json/detail/options_instances.hpp — the reader and the writers of an
// options type compiled once when a program defines
// RESIL_SEPARATE_COMPILATION (docs/compile_time.md): read<T> from
// nlohmann::json, write<nlohmann::ordered_json> (the default) and
// write<nlohmann::json>. Each json/*.hpp names its types after their key
// tables, at global scope:
//
//   RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::hedge_options)        // a header: declarations
//   RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::hedge_options)   // a separate_compilation.hpp
//
// Header-only (the default) the first expands to nothing: each file
// instantiates what it calls, as before.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "../../detail/platform.hpp"
#include "../read.hpp"
#include "../write.hpp"

#if RESIL_DETAIL_EXTERN_TEMPLATES
#define RESIL_JSON_DETAIL_EXTERN_OPTIONS(T)                                                                   \
    extern template T resil::json::read<T, nlohmann::json>(const nlohmann::json&, std::string_view);         \
    extern template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json, T>(const T&);          \
    extern template nlohmann::json resil::json::write<nlohmann::json, T>(const T&);
#else
#define RESIL_JSON_DETAIL_EXTERN_OPTIONS(T)
#endif

#define RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(T)                                                              \
    template T resil::json::read<T, nlohmann::json>(const nlohmann::json&, std::string_view);                \
    template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json, T>(const T&);                 \
    template nlohmann::json resil::json::write<nlohmann::json, T>(const T&);

// The core's options types (json/fields.hpp), a deadline and a backoff.
#if RESIL_DETAIL_EXTERN_TEMPLATES
extern template resil::duration resil::json::read<resil::duration, nlohmann::json>(const nlohmann::json&,
                                                                                    std::string_view);
extern template resil::backoff resil::json::read<resil::backoff, nlohmann::json>(const nlohmann::json&,
                                                                                  std::string_view);
extern template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json>(resil::duration);
extern template nlohmann::ordered_json resil::json::write<nlohmann::ordered_json>(const resil::backoff&);
#endif
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::timeouts)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::retry_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::retry_budget_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::circuit_breaker_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::token_bucket_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::concurrency_limit_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::deadline_policy_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::json::pipeline_config)
