// resil/json/adaptive.hpp — the JSON keys of the adaptive policies' options
// (resil/paced_bucket.hpp, resil/adaptive_limit.hpp,
// resil/adaptive_throttle.hpp), read and written by resil::json::read and
// write as every options type is: strict, with the JSON path and a "did you
// mean" in every error, the ranges left to each type's validate().
//
//   auto o = resil::json::read<resil::adaptive_limit_options>(j["limit"], "limit");
//   // {"algorithm": "gradient2", "smoothin": 0.2} → config_error
//   //   "limit.smoothin: unknown key; did you mean "smoothing"? (expected one of: ...)"
#pragma once

#include <array>
#include <string_view>

#include "../adaptive_limit.hpp"
#include "../adaptive_throttle.hpp"
#include "../paced_bucket.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct enumerators<adaptive_algorithm> {
    static constexpr std::string_view what = "an adaptive algorithm";
    static constexpr std::array values{adaptive_algorithm::aimd, adaptive_algorithm::gradient2};
};

template <>
struct fields<paced_bucket_options> {
    using T = paced_bucket_options;
    static constexpr auto list =
        field_list{key("rate", &T::rate),         key("burst", &T::burst),         key("min_rate", &T::min_rate),
                   key("max_rate", &T::max_rate), key("burst_window", &T::burst_window), key("max_pause", &T::max_pause),
                   key("max_wait", &T::max_wait)};
};

template <>
struct fields<adaptive_limit_options> {
    using T = adaptive_limit_options;
    static constexpr auto list = field_list{
        key("algorithm", &T::algorithm),
        key("initial_limit", &T::initial_limit),
        key("min_limit", &T::min_limit),
        key("max_limit", &T::max_limit),
        key("backoff_ratio", &T::backoff_ratio),
        key("smoothing", &T::smoothing),
        key("rtt_tolerance", &T::rtt_tolerance),
        key("long_window", &T::long_window),
        key("queue_size", &T::queue_size),
        key("cut_once_per_round", &T::cut_once_per_round),
        key("increase_per_success", &T::increase_per_success),
        key("overload_latency", &T::overload_latency),
        key("overload_verdicts", &T::overload_verdicts),
    };
};

template <>
struct fields<adaptive_throttle_options> {
    using T = adaptive_throttle_options;
    static constexpr auto list =
        field_list{key("k", &T::k), key("window", &T::window), key("overload_verdicts", &T::overload_verdicts)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::paced_bucket_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::adaptive_limit_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::adaptive_throttle_options)
