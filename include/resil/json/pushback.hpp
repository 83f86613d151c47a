// resil/json/pushback.hpp — the JSON keys of resil::pushback_options
// (resil/rate_limit_fields.hpp: the floor under a server's Retry-After),
// read and written by resil::json::read and write as every options type is.
//
//   auto o = resil::json::read<resil::pushback_options>(j["pushback"], "pushback");
//   // {"floor": "50ms"}; {"floor": "2m"} → "pushback.floor: must be in [0s, 1m], got "2m""
#pragma once


#include "../rate_limit_fields.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct fields<pushback_options> {
    using T = pushback_options;
    static constexpr auto list = field_list{key("floor", &T::floor)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::pushback_options)
