// resil/json/sse.hpp — the JSON keys of resil::sse::reader_options
// (resil/sse.hpp: an event stream reader's limits), read and written by
// resil::json::read and write as every options type is.
//
//   auto o = resil::json::read<resil::sse::reader_options>(j["events"], "events");
//   // {"max_line_bytes": 65536, "max_event_bytes": 1048576, "validate_utf8": true}
//   // {"max_line_bytes": 0} → config_error "events.max_line_bytes: must be at least 1, got 0"
#pragma once


#include "../sse.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct fields<sse::reader_options> {
    using T = sse::reader_options;
    static constexpr auto list =
        field_list{key("max_line_bytes", &T::max_line_bytes), key("max_event_bytes", &T::max_event_bytes),
                   key("max_body_bytes", &T::max_body_bytes), key("validate_utf8", &T::validate_utf8)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::sse::reader_options)
