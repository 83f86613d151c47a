// The metrics' JSON export, parsed back with nlohmann/json: every counter of
// the snapshot is there with its value, and the name survives any characters.
#include <resil/circuit_breaker.hpp>
#include <resil/events.hpp>
#include <resil/metrics.hpp>
#include <resil/outcome.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::circuit_state;
using resil::reason;
using resil::verdict;
namespace events = resil::events;

namespace {

void check_counts(const nlohmann::json& j, const resil::reason_counts& counts) {
    REQUIRE(j.is_object());
    CHECK(j.size() == resil::reason_count - 1);  // every reason but "none"
    CHECK_FALSE(j.contains("none"));
    for (std::size_t i = 1; i < resil::reason_count; ++i) {
        const auto name = std::string(to_string(static_cast<reason>(i)));
        INFO(name);
        REQUIRE(j.contains(name));
        CHECK(j[name].get<std::uint64_t>() == counts.by_reason[i]);
    }
}

void check_matches(const nlohmann::json& j, const resil::metrics_snapshot& s, const std::string& name) {
    CHECK(j["policy"] == name);
    CHECK(j["calls"] == s.calls);
    CHECK(j["successes"] == s.successes);
    CHECK(j["attempts"] == s.attempts);
    CHECK(j["retries"] == s.retries);
    CHECK(j["retries_after_server_hint"] == s.retries_after_server_hint);
    CHECK(j["retries_exhausted"] == s.retries_exhausted);
    CHECK(j["budget_refusals"] == s.budget_refusals);
    CHECK(j["deadlines_exceeded"] == s.deadlines_exceeded);
    CHECK(j["breaker_opened"] == s.breaker_opened);
    CHECK(j["breaker_half_opened"] == s.breaker_half_opened);
    CHECK(j["breaker_closed"] == s.breaker_closed);
    CHECK(j["breaker_open_seconds"].get<double>() == Approx(std::chrono::duration<double>(s.time_open).count()));
    check_counts(j["failures"], s.failures);
    check_counts(j["rejections"], s.rejections);
    check_counts(j["fallbacks"], s.fallbacks);
    // Nothing else: a consumer can rely on this exact set of keys.
    CHECK(j.size() == 16);
}

}  // namespace

TEST_CASE("metrics json: the export parses and holds every counter of the snapshot") {
    resil::testing::manual_clock clock;
    resil::metrics m{"triton"};
    resil::basic_circuit_breaker<resil::testing::manual_clock> breaker{
        {.min_calls = 2, .open_for = 2s, .half_open_probes = 1, .on_state_change = m.breaker_hook()}, clock};
    const auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2}}, std::ref(breaker))
                          .with_listener(std::ref(m));
    const auto failing = [] { return 503; };
    const auto judge = [](int status) { return status < 500 ? verdict::success : verdict::retryable; };
    CHECK(pipe(failing, judge).reason() == reason::retries_exhausted);  // two 503s open the breaker
    CHECK(pipe(failing, judge).reason() == reason::circuit_open);       // rejected at once
    clock.advance(2s);
    CHECK(pipe([] { return 200; }, judge).ok());  // the probe closes it
    m(events::fallback_used{reason::shed});

    const auto s = m.snapshot();
    CHECK(s.calls == 3);
    CHECK(s.rejections[reason::circuit_open] == 1);
    const auto j = nlohmann::json::parse(m.json());
    check_matches(j, s, "triton");
    CHECK(j["rejections"]["circuit_open"] == 1);
    CHECK(j["failures"]["retries_exhausted"] == 1);
    CHECK(j["breaker_opened"] == 1);
    CHECK(j["breaker_closed"] == 1);
    CHECK(j["fallbacks"]["shed"] == 1);
    CHECK(j["attempts"] == 3);
}

TEST_CASE("metrics json: the name is escaped, whatever it holds") {
    const std::string name = "db \"primary\"\\eu\nwest\t\x01 ñ";
    resil::metrics m{name};
    m(events::rejected{reason::rate_limited, 1s});
    m(events::call_finished{reason::rate_limited, 0, false});
    const auto text = m.json();
    const auto j = nlohmann::json::parse(text);
    check_matches(j, m.snapshot(), name);
    CHECK(j["rejections"]["rate_limited"] == 1);
    CHECK(j["failures"]["rate_limited"] == 1);
}

TEST_CASE("metrics json: a fresh metrics object exports zeros") {
    resil::metrics m;
    const auto j = nlohmann::json::parse(m.json());
    check_matches(j, resil::metrics_snapshot{}, "default");
    CHECK(j["breaker_open_seconds"].get<double>() == 0.0);
}
