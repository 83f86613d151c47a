// Fuzz harness: service files, resil::json::parse_service_config (and the
// readers of a dependency's and the libcurl client's options under it).
//
// Properties, for every input:
// - the only exception is resil::json::config_error, and its what() is
//   "path: reason" (or the reason alone for the whole document);
// - an accepted service file, written back with write() and read again,
//   gives the same JSON text (secrets, never written, aside: written once,
//   the text is stable);
// - the same for the document read as a dependency's options and as the
//   libcurl client's, on their own.
#include <resil/json/service_config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config_errors.hpp"
#include "fuzz_check.hpp"

namespace rj = resil::json;

using resil_fuzz::check_reader;
using resil_fuzz::only_config_errors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = resil_fuzz::text_of(data, size);

    rj::service_config service;
    if (only_config_errors("parse_service_config", [&] { service = rj::parse_service_config(text); })) {
        const auto written = rj::write(service).dump();
        rj::service_config again;
        FUZZ_CHECK(only_config_errors("parse_service_config of written options",
                                      [&] { again = rj::parse_service_config(written); }));
        FUZZ_CHECK(rj::write(again).dump() == written);
        for (const auto& [name, options] : service.dependencies)
            FUZZ_CHECK(&rj::dependency_options_of(service, name) == &options && options.name == name);
    }

    nlohmann::json j;
    if (!only_config_errors("parse", [&] { j = rj::parse(text); })) return 0;
    check_reader<resil::http::dependency_options>(j);
    check_reader<resil::curl::client_options>(j);
    check_reader<resil::http::health_check_settings>(j);
    return 0;
}
