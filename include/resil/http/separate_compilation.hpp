// resil/http/separate_compilation.hpp — the one translation unit of a
// RESIL_SEPARATE_COMPILATION program that uses resil::http::load_client
// (resil/http/config_file.hpp) or a service file
// (resil/json/service_config.hpp): it compiles the core, resil::curl (and
// resil::http::client with it) and resil::json, then load_client, the
// readers and writers of libcurl's client options and of a dependency's
// options, and the service file's reader and writer. A program that uses
// resil::http::client without a configuration file needs
// <resil/curl/separate_compilation.hpp> only. See docs/compile_time.md.
#pragma once

#include "../curl/separate_compilation.hpp"
#include "../json/separate_compilation.hpp"
#include "../json/curl.hpp"
#include "../json/dependency.hpp"
#include "../json/service_config.hpp"
#include "config_file.hpp"

RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::tls_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::proxy_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::redirect_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::connection_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::client_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::shared_cache_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::stream_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::curl::sse_stream_options)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::http::health_check_settings)
RESIL_JSON_DETAIL_INSTANTIATE_OPTIONS(resil::http::dependency_options)

namespace resil::json {
template service_config read_service_config<nlohmann::json>(const nlohmann::json&, std::string_view);
template service_config read_service_config<nlohmann::ordered_json>(const nlohmann::ordered_json&, std::string_view);
template service_config parse_service_config<nlohmann::json>(std::string_view);
template service_config load_service_config<nlohmann::json>(const std::filesystem::path&);
template http::dependency_options load_dependency_options<nlohmann::json>(const std::filesystem::path&,
                                                                          std::string_view);
template nlohmann::ordered_json write<nlohmann::ordered_json>(const service_config&);
template nlohmann::json write<nlohmann::json>(const service_config&);
}  // namespace resil::json
