// resil/json/fallback.hpp — the JSON keys of fallback_options
// (resil/fallback.hpp): the reasons a fallback handles, by name.
//
//   auto o = resil::json::read<resil::fallback_options>(j["fallback"], "fallback");
//   // {"handles": ["circuit_open", "shed"]}
#pragma once


#include "../fallback.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct fields<fallback_options> {
    using T = fallback_options;
    static constexpr auto list = field_list{key("handles", &T::handles)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::fallback_options)
