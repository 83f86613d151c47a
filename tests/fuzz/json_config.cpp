// Fuzz harness: configuration files, resil::json::parse_config (and the
// parse() and read<T>() under it).
//
// Properties, for every input:
// - the only exception is resil::json::config_error (any other, nlohmann's
//   own above all, is a finding), and its what() is "path: reason" (or the
//   reason alone for the whole document);
// - an accepted configuration, written back with write() and read again,
//   gives the same JSON text: options → JSON → options is lossless;
// - the same for the document read as each options type on its own
//   (resil::json::read<T>), so every reader sees the fuzzer's values.
#include <resil/balancer.hpp>
#include <resil/json.hpp>

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

    rj::pipeline_config config;
    if (only_config_errors("parse_config", [&] { config = rj::parse_config(text); })) {
        const auto written = rj::write(config).dump();
        rj::pipeline_config again;
        FUZZ_CHECK(only_config_errors("parse_config of written options", [&] { again = rj::parse_config(written); }));
        FUZZ_CHECK(rj::write(again).dump() == written);
    }

    nlohmann::json j;
    if (!only_config_errors("parse", [&] { j = rj::parse(text); })) return 0;
    check_reader<resil::duration>(j);
    check_reader<resil::timeouts>(j);
    check_reader<resil::backoff>(j);
    check_reader<resil::retry_options>(j);
    check_reader<resil::retry_budget_options>(j);
    check_reader<resil::circuit_breaker_options>(j);
    check_reader<resil::token_bucket_options>(j);
    check_reader<resil::concurrency_limit_options>(j);
    check_reader<resil::deadline_policy_options>(j);
    check_reader<resil::paced_bucket_options>(j);
    check_reader<resil::adaptive_limit_options>(j);
    check_reader<resil::adaptive_throttle_options>(j);
    check_reader<resil::fallback_options>(j);
    check_reader<resil::hedge_options>(j);
    check_reader<resil::balancer_options>(j);
    check_reader<resil::endpoint>(j);
    check_reader<resil::health_check_options>(j);
    check_reader<resil::redis::rate_limiter_options>(j);
    check_reader<resil::pushback_options>(j);
    check_reader<resil::sse::reader_options>(j);
    return 0;
}
