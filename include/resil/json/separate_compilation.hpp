// resil/json/separate_compilation.hpp — what resil::json compiles once when a
// program defines RESIL_SEPARATE_COMPILATION (see
// resil/separate_compilation.hpp): the JSON path helpers, and load_config and
// parse_config for nlohmann::json. Include it in the same one source file as
// the core's (and resil/curl/separate_compilation.hpp when you use both).
#pragma once

#include "../separate_compilation.hpp"
#include "../json.hpp"

namespace resil::json {
template pipeline_config parse_config<nlohmann::json>(std::string_view);
template pipeline_config load_config<nlohmann::json>(const std::filesystem::path&);
}  // namespace resil::json
