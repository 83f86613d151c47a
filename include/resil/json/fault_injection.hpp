// resil/json/fault_injection.hpp — the JSON keys of fault_injection_options
// (resil/fault_injection.hpp), read and written by resil::json::read and
// write as every options type is: off unless the file says "enabled": true.
//
//   // {"enabled": true, "tag": "chaos",
//   //  "delay": {"probability": 0.1, "latency": "300ms"},
//   //  "abort": {"probability": 0.05, "verdict": "retryable", "retry_after": "1s"}}
//   resil::fault_injection faults{resil::json::read<resil::fault_injection_options>(j["faults"], "faults")};
//   // {"delay": {"probability": 1.5}} → "faults.delay.probability: must be in [0, 1], got 1.5"
#pragma once

#include <array>
#include <string_view>

#include "../fault_injection.hpp"
#include "../outcome.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

/// A verdict by name: "retryable", "permanent", "ambiguous" (and "success",
/// which fault_injection_options::validate() refuses for an abort).
template <>
struct enumerators<verdict> {
    static constexpr std::string_view what = "a verdict";
    static constexpr std::array values{verdict::success, verdict::retryable, verdict::permanent, verdict::ambiguous};
};

template <>
struct fields<fault_injection_options::delay_fault> {
    using T = fault_injection_options::delay_fault;
    static constexpr auto list = field_list{key("probability", &T::probability), key("latency", &T::latency)};
};

template <>
struct fields<fault_injection_options::abort_fault> {
    using T = fault_injection_options::abort_fault;
    static constexpr auto list = field_list{key("probability", &T::probability), key("verdict", &T::verdict),
                                            key("never_sent", &T::never_sent), key("retry_after", &T::retry_after)};
};

template <>
struct fields<fault_injection_options> {
    using T = fault_injection_options;
    static constexpr auto list = field_list{key("enabled", &T::enabled), key("tag", &T::tag), key("delay", &T::delay),
                                            key("abort", &T::abort)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::fault_injection_options)
