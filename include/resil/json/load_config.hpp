// resil/json/load_config.hpp — a whole pipeline_config from a file or from
// text: the strict parser (json/parse.hpp) then the strict reader
// (json/read.hpp). Errors carry the file name.
//
//   auto cfg = resil::json::load_config("triton.json");   // throws resil::json::config_error
//   // "triton.json: retry.max_attempts: must be in [1, 100], got 0"
#pragma once

#include <filesystem>
#include <string_view>

#include "../detail/platform.hpp"
#include "error.hpp"
#include "pipeline_config.hpp"

#if RESIL_DETAIL_BODIES
#include <nlohmann/json.hpp>


#include "detail/file_text.hpp"
#include "parse.hpp"
#include "read.hpp"
#else
// With RESIL_SEPARATE_COMPILATION, both are compiled once for nlohmann::json
// (resil/json/separate_compilation.hpp): a file that only loads its
// configuration does not parse nlohmann/json.hpp at all.
#include <nlohmann/json_fwd.hpp>
#endif

namespace resil::json {

#if !RESIL_DETAIL_BODIES
template <class Json = nlohmann::json>
[[nodiscard]] pipeline_config parse_config(std::string_view text);
template <class Json = nlohmann::json>
[[nodiscard]] pipeline_config load_config(const std::filesystem::path& file);
#else

// Both are templates (called as before: parse_config(text), load_config(file))
// only so that a translation unit that includes this header without calling
// them does not instantiate the JSON parser and the whole reader: that is
// most of what resil/json.hpp would cost to include.

/// Parses `text` (see parse()) and reads a pipeline_config from it.
template <class Json = nlohmann::json>
[[nodiscard]] pipeline_config parse_config(std::string_view text) {
    return read<pipeline_config>(parse<Json>(text));
}

/// Reads a pipeline_config from a file. Errors carry the file name in
/// source() and what().
template <class Json = nlohmann::json>
[[nodiscard]] pipeline_config load_config(const std::filesystem::path& file) {
    const std::string text = detail::file_text(file);
    try {
        return parse_config<Json>(text);
    } catch (const config_error& e) {
        throw config_error(e.path(), e.reason(), file.string());
    }
}
#endif

}  // namespace resil::json
