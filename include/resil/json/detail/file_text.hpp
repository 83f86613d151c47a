// resil/json/detail/file_text.hpp — a configuration file's text, or a
// resil::json::config_error naming the file and why it cannot be read
// (missing, a directory, not readable): what load_config and
// load_service_config read before they parse. Standard library only.
#pragma once

#include <filesystem>
#include <fstream>
#include <ios>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "../error.hpp"

namespace resil::json::detail {

/// The text of `file`; config_error with the file as its source otherwise.
inline std::string file_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    // The cause, for the message: a directory opens as an empty stream.
    std::error_code ignored;
    const auto status = std::filesystem::status(file, ignored);
    if (std::filesystem::is_directory(status)) throw config_error({}, "cannot open the file: it is a directory", file.string());
    if (!in) {
        throw config_error({}, std::filesystem::exists(status) ? "cannot open the file: not readable"
                                                               : "cannot open the file: it does not exist",
                           file.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw config_error({}, "cannot read the file", file.string());
    return std::move(text).str();
}

}  // namespace resil::json::detail
