// resil/json/duration.hpp — the duration text of configuration files
// ("250ms", "1.5s", "2m"): resil/duration_text.hpp, under resil::json's names.
#pragma once

#include "../duration_text.hpp"

namespace resil::json {

using resil::duration_text_error;
using resil::duration_text_result;
using resil::format_duration;
using resil::parse_duration;
using resil::to_string;

namespace detail {
using resil::detail::tick_exponent;
}  // namespace detail

}  // namespace resil::json
