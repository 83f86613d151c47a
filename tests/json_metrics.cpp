// The metrics' JSON export (resil/json/metrics.hpp, through nlohmann/json):
// every counter of the snapshot is there with its value, the name survives
// any characters, the latency histogram is there; and the metrics object's
// form, written and read back, holds the snapshot's counters.
#include <resil/circuit_breaker.hpp>
#include <resil/events.hpp>
#include <resil/json/metrics.hpp>
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

// The counters, without the name (what nlohmann::json j = snapshot holds).
void check_counters(const nlohmann::json& j, const resil::metrics_snapshot& s) {
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
    CHECK(j["limit_increases"] == s.limit_increases);
    CHECK(j["limit_decreases"] == s.limit_decreases);
    CHECK(j["pace_changes"] == s.pace_changes);
    CHECK(j["quota_store_failures"] == s.quota_store_failures);
    CHECK(j["endpoint_ejections"] == s.endpoint_ejections);
    CHECK(j["endpoint_returns"] == s.endpoint_returns);
    check_counts(j["failures"], s.failures);
    check_counts(j["rejections"], s.rejections);
    check_counts(j["fallbacks"], s.fallbacks);
}

void check_matches(const nlohmann::json& j, const resil::metrics_snapshot& s, const std::string& name) {
    CHECK(j["policy"] == name);
    check_counters(j, s);
    // Nothing else: a consumer can rely on this exact set of keys.
    CHECK(j.size() == 22);
}

// What to_json(m) writes, read back from its text, without the two
// histograms and the parts (breaker_state, endpoints, ...): the object
// to_json(m.snapshot(), m.name()) gives.
nlohmann::json counters_as_written(const resil::metrics& m) {
    auto j = nlohmann::json::parse(resil::json::to_json(m).dump());
    for (const char* key : {"attempt_duration_seconds", "call_duration_seconds", "breaker_state", "hedges", "quota",
                            "endpoints"})
        j.erase(key);
    return j;
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
    m(events::limit_changed{20, 18, resil::load_signal::overload, 1});
    m(events::limit_changed{18, 19, resil::load_signal::accepted, 2});
    m(events::limit_changed{19, 20, resil::load_signal::accepted, 3});
    m(events::pace_changed{2.0, 5, resil::duration::zero(), 1});
    m(events::endpoint_ejected{"a:80", 1, 30s, resil::time_point{}});
    m(events::endpoint_ejected{"b:80", 2, 60s, resil::time_point{}});
    m(events::endpoint_returned{"a:80", resil::time_point{}});

    const auto s = m.snapshot();
    CHECK(s.calls == 3);
    CHECK(s.rejections[reason::circuit_open] == 1);
    const auto j = resil::json::to_json(s, m.name());
    check_matches(j, s, "triton");
    CHECK(counters_as_written(m) == j);  // the metrics object's form, the same counters
    CHECK(j["rejections"]["circuit_open"] == 1);
    CHECK(j["failures"]["retries_exhausted"] == 1);
    CHECK(j["breaker_opened"] == 1);
    CHECK(j["breaker_closed"] == 1);
    CHECK(j["fallbacks"]["shed"] == 1);
    CHECK(j["attempts"] == 3);
    CHECK(j["limit_increases"] == 2);
    CHECK(j["limit_decreases"] == 1);
    CHECK(j["pace_changes"] == 1);
    CHECK(j["endpoint_ejections"] == 2);
    CHECK(j["endpoint_returns"] == 1);
    // The parts: the breaker (closed again) and the endpoints, each by address.
    const auto whole = resil::json::to_json(m);
    CHECK(whole["breaker_state"] == "closed");
    CHECK(whole["endpoints"] == nlohmann::json::parse(R"([{"endpoint":"a:80","ejections":1,"returns":1,"ejected":false},
                                                         {"endpoint":"b:80","ejections":1,"returns":0,"ejected":true}])"));
}

TEST_CASE("metrics json: the name is escaped, whatever it holds") {
    const std::string name = "db \"primary\"\\eu\nwest\t\x01 ñ";
    resil::metrics m{name};
    m(events::rejected{reason::rate_limited, 1s});
    m(events::call_finished{reason::rate_limited, 0, false});
    const auto text = resil::json::to_json(m.snapshot(), m.name()).dump();
    const auto j = nlohmann::json::parse(text);
    check_matches(j, m.snapshot(), name);
    CHECK(counters_as_written(m) == j);
    CHECK(j["rejections"]["rate_limited"] == 1);
    CHECK(j["failures"]["rate_limited"] == 1);
}

TEST_CASE("metrics json: a fresh metrics object exports zeros") {
    resil::metrics m;
    const auto j = resil::json::to_json(m.snapshot(), m.name());
    check_matches(j, resil::metrics_snapshot{}, "default");
    CHECK(j["breaker_open_seconds"].get<double>() == 0.0);
    CHECK(counters_as_written(m) == j);
}

TEST_CASE("metrics json: a metrics object with its attempt latency histogram; nlohmann's own conversion") {
    resil::testing::manual_clock clock;
    resil::metrics m{"inventory"};
    resil::basic_circuit_breaker<resil::testing::manual_clock> breaker{
        {.min_calls = 1, .open_for = 2s, .on_state_change = m.breaker_hook()}, clock};
    m(events::attempt_finished{1, verdict::success, 3ms});
    m(events::attempt_finished{2, verdict::success, 20s});
    breaker.isolate();
    clock.advance(1500ms);

    const auto j = resil::json::to_json(m);
    CHECK(j["policy"] == "inventory");
    check_counters(j, m.snapshot());
    CHECK(j.size() == 25);  // the 22 keys of the counters, the two histograms, and the breaker's state
    CHECK(j["breaker_state"] == "open");
    CHECK(j["call_duration_seconds"]["buckets"].size() == resil::latency_bucket_bounds.size() + 1);
    const auto& h = j["attempt_duration_seconds"];
    CHECK(h["count"] == 2);
    CHECK(h["sum"].get<double>() == Approx(20.003));
    REQUIRE(h["buckets"].size() == resil::latency_bucket_bounds.size() + 1);
    CHECK(h["buckets"][0]["le"].get<double>() == Approx(0.001));
    CHECK(h["buckets"][0]["count"] == 0);
    CHECK(h["buckets"][2]["le"].get<double>() == Approx(0.005));
    CHECK(h["buckets"][2]["count"] == 1);  // cumulative, as Prometheus' le buckets
    CHECK(h["buckets"][12]["le"].get<double>() == Approx(10.0));
    CHECK(h["buckets"][12]["count"] == 1);
    CHECK(h["buckets"][13]["le"] == "+Inf");
    CHECK(h["buckets"][13]["count"] == 2);

    CHECK(j["breaker_open_seconds"].get<double>() == 0.0);  // the open period has not ended
    CHECK(resil::json::to_json(m, clock.now())["breaker_open_seconds"].get<double>() == Approx(1.5));

    const nlohmann::json counters = m.snapshot();
    check_counters(counters, m.snapshot());
    CHECK(counters.size() == 21);  // no name in a snapshot
    const nlohmann::json histogram = m.latencies().attempt;
    CHECK(histogram == h);
}
