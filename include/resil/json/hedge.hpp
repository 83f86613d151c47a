// resil/json/hedge.hpp — the JSON keys of hedge_options (resil/hedge.hpp),
// read and written by resil::json::read and write as every options type is.
// The budget pointer is code, not configuration: neither read nor written.
//
//   auto o = resil::json::read<resil::hedge_options>(j["hedge"], "hedge");
//   o.budget = &budget;                                   // shared with the retry policy
//   resil::hedge_policy hedge{o};
#pragma once


#include "../hedge.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

/// Every hedge option but the budget pointer (code, not configuration).
template <>
struct fields<hedge_options> {
    using T = hedge_options;
    static constexpr auto list =
        field_list{key("max_hedges", &T::max_hedges), key("delay", &T::delay),         key("percentile", &T::percentile),
                   key("min_delay", &T::min_delay),   key("max_delay", &T::max_delay), key("window", &T::window),
                   key("min_samples", &T::min_samples)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::hedge_options)
