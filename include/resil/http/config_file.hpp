// resil/http/config_file.hpp — a resil::http::client configured by a JSON
// file: the sections resil::json::load_config reads (deadline, timeouts,
// retry, retry_budget, circuit_breaker), each over the same option of
// `defaults`. Needs the resil::curl and resil::json CMake targets.
//
//   static auto inventory = resil::http::load_client("inventory.json");   // throws resil::json::config_error
//   auto out = inventory.get("http://inventory.internal/items/42");
//
// Like resil/http.hpp, it declares only: with RESIL_SEPARATE_COMPILATION a
// file that includes it parses neither nlohmann/json.hpp nor the policies,
// and the definition is compiled once, in the source file that includes
// <resil/http/separate_compilation.hpp>.
#pragma once

#include <string_view>

#include "../detail/platform.hpp"
#include "../http.hpp"

namespace resil::http {

/// A client from the configuration file `file` (resil::json::load_config):
/// a section the file has replaces that part of `defaults`; an absent one
/// keeps it. Throws resil::json::config_error for a file that cannot be read
/// or holds an invalid option (the message names the file and the JSON
/// path), std::invalid_argument for a section the client has no policy for
/// (token_bucket, concurrency_limit) or an invalid option in `defaults`.
[[nodiscard]] RESIL_DECL client load_client(std::string_view file, const client_options& defaults = {});

}  // namespace resil::http

#if RESIL_DETAIL_BODIES
#include <filesystem>

#include "../json/load_config.hpp"

namespace resil::http {

RESIL_DECL client load_client(std::string_view file, const client_options& defaults) {
    return client(json::load_config(std::filesystem::path(file)), defaults);
}

}  // namespace resil::http
#endif
