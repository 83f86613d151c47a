// resil/json/fields.hpp: each options type's keys, listed once; the writer
// writes exactly them, in order, and the reader accepts exactly them.
#include <resil/json/fields.hpp>
#include <resil/json/read.hpp>
#include <resil/json/write.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"

namespace rj = resil::json;

namespace {

template <class T>
std::vector<std::string> written_keys(const T& options) {
    const auto written = rj::write(options);  // items() refers to it: keep it alive
    std::vector<std::string> keys;
    for (const auto& [k, v] : written.items()) keys.push_back(k);
    return keys;
}

template <class T>
std::vector<std::string> table_keys() {
    std::vector<std::string> keys;
    for (auto k : rj::detail::key_names<T>()) keys.emplace_back(k);
    return keys;
}

template <class T>
void check_table(const T& options) {
    INFO(rj::write(options).dump());
    CHECK(written_keys(options) == table_keys<T>());
    // Each key alone is accepted by the reader.
    const auto written = rj::write<nlohmann::json>(options);
    for (const auto& [k, v] : written.items()) {
        INFO(k);
        CHECK_NOTHROW(rj::read<T>(nlohmann::json{{k, v}}));
    }
}

}  // namespace

TEST_CASE("json fields: the writer writes every key of the table, in its order") {
    check_table(resil::timeouts{});
    check_table(resil::retry_options{});
    check_table(resil::retry_budget_options{});
    check_table(resil::circuit_breaker_options{});
    check_table(resil::token_bucket_options{});
    check_table(resil::concurrency_limit_options{});
    CHECK(table_keys<resil::circuit_breaker_options>() ==
          std::vector<std::string>{"mode", "failure_ratio", "window", "window_calls", "min_calls", "consecutive_failures",
                                   "slow_call_threshold", "open_for", "half_open_probes", "probe_timeout",
                                   "failure_verdicts"});
}

TEST_CASE("json fields: a backoff's keys are its kind and its strategy's fields") {
    CHECK(std::vector<std::string_view>(rj::detail::backoff_keys.begin(), rj::detail::backoff_keys.end()) ==
          std::vector<std::string_view>{"kind", "base", "cap", "multiplier"});
    CHECK(written_keys(resil::backoff{resil::decorrelated_jitter{}}) == std::vector<std::string>{"kind", "base", "cap"});
}

TEST_CASE("json fields: the reader's list of expected keys is the table") {
    try {
        (void)rj::read<resil::retry_budget_options>(nlohmann::json{{"windw", "1s"}}, "b");
        FAIL("accepted");
    } catch (const rj::config_error& e) {
        CHECK(std::string(e.what()) ==
              R"(b.windw: unknown key; did you mean "window"? (expected one of: ratio, min_per_second, window))");
    }
}

TEST_CASE("json fields: a pipeline_config writes only its sections that are set") {
    CHECK(rj::write(rj::pipeline_config{}).dump() == "{}");
    CHECK(rj::write(rj::pipeline_config{.concurrency_limit = resil::concurrency_limit_options{}}).dump() ==
          R"({"concurrency_limit":{"max_in_flight":16}})");
}
