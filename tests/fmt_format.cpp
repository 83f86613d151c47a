// resil::fmt: the formatters' exact output, and the log listener's lines for
// a scripted run on the manual clock.
#include <resil/fmt.hpp>

#include <resil/circuit_breaker.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/adaptive_limit.hpp>
#include <resil/balancer.hpp>
#include <resil/fallback.hpp>
#include <resil/jitter.hpp>
#include <resil/metrics.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::circuit_state;
using resil::duration;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;
namespace events = resil::events;

namespace {
struct reply {
    int status = 200;
    std::optional<duration> retry_after{};
};
resil::classification classify(const reply& r) {
    if (r.status < 500) return verdict::success;
    return {verdict::retryable, resil::server_hint{r.retry_after, false}};
}
}  // namespace

TEST_CASE("fmt: verdicts, reasons and breaker states format as their names, with string specs") {
    CHECK(fmt::format("{}", verdict::success) == "success");
    CHECK(fmt::format("{}", verdict::ambiguous) == "ambiguous");
    CHECK(fmt::format("{}", reason::none) == "none");
    CHECK(fmt::format("{}", reason::retry_after_exceeds_deadline) == "retry_after_exceeds_deadline");
    CHECK(fmt::format("{}", reason::circuit_open) == "circuit_open");
    CHECK(fmt::format("{}", circuit_state::half_open) == "half_open");
    CHECK(fmt::format("[{:>12}]", verdict::retryable) == "[   retryable]");
    CHECK(fmt::format("[{:<6}]", circuit_state::open) == "[open  ]");
    CHECK(fmt::format("[{:*^8}]", reason::shed) == "[**shed**]");
    for (std::size_t i = 0; i < resil::reason_count; ++i) {
        const auto r = static_cast<reason>(i);
        CHECK(fmt::format("{}", r) == resil::to_string(r));
    }
}

TEST_CASE("fmt: every event formats as one line") {
    CHECK(fmt::format("{}", events::attempt_started{1}) == "attempt 1 started");
    CHECK(fmt::format("{}", events::attempt_finished{2, verdict::retryable, 12ms}) == "attempt 2: retryable in 12ms");
    CHECK(fmt::format("{}", events::retry_scheduled{1, duration{137'482'913}, verdict::retryable, true}) ==
          "retry 1 in 137ms (retryable, Retry-After)");
    CHECK(fmt::format("{}", events::retry_scheduled{2, 400ms, verdict::ambiguous, false}) ==
          "retry 2 in 400ms (ambiguous)");
    CHECK(fmt::format("{}", events::retries_exhausted{3}) == "retries exhausted after 3 attempts");
    CHECK(fmt::format("{}", events::retries_exhausted{1}) == "retries exhausted after 1 attempt");
    CHECK(fmt::format("{}", events::budget_refused{2}) == "retry 2 refused by the retry budget");
    CHECK(fmt::format("{}", events::breaker_state_changed{circuit_state::closed, circuit_state::open, 0.8, 5, {}}) ==
          "circuit breaker closed -> open (failure ratio 0.8 over 5 calls)");
    CHECK(fmt::format("{}", events::breaker_state_changed{circuit_state::closed, circuit_state::open, 5.0 / 6, 6, {}}) ==
          "circuit breaker closed -> open (failure ratio 0.833 over 6 calls)");
    CHECK(fmt::format("{}", events::breaker_state_changed{circuit_state::half_open, circuit_state::closed, 0.0, 1, {}}) ==
          "circuit breaker half_open -> closed (failure ratio 0 over 1 call)");
    CHECK(fmt::format("{}", events::breaker_state_changed{circuit_state::open, circuit_state::half_open, 0.0, 0, {}}) ==
          "circuit breaker open -> half_open");
    CHECK(fmt::format("{}", events::rejected{reason::circuit_open, 29'800ms}) ==
          "rejected: circuit_open (retry after 29.8s)");
    CHECK(fmt::format("{}", events::rejected{reason::shed, std::nullopt}) == "rejected: shed");
    CHECK(fmt::format("{}", events::fallback_used{reason::circuit_open}) == "fallback used for circuit_open");
    CHECK(fmt::format("{}", events::call_finished{reason::none, 2, false}) == "call finished: ok after 2 attempts");
    CHECK(fmt::format("{}", events::call_finished{reason::retries_exhausted, 3, false}) ==
          "call finished: retries_exhausted after 3 attempts");
    CHECK(fmt::format("{}", events::call_finished{reason::circuit_open, 0, true}) ==
          "call finished: circuit_open after 0 attempts, answered by the fallback");
    CHECK(fmt::format("{}", events::deadline_exceeded{1}) == "deadline exceeded after 1 attempt");
    CHECK(fmt::format("{}", events::quota_store_failed{false, false}) == "quota store failed: rejected (fail closed)");
    CHECK(fmt::format("{}", events::quota_store_failed{true, true}) ==
          "quota store failed: admitted by the local bucket (fail open)");
    CHECK(fmt::format("{}", events::quota_store_failed{true, false}) ==
          "quota store failed: rejected by the local bucket (fail open)");
    CHECK(fmt::format("{}", events::limit_changed{20, 18, resil::load_signal::overload, 3}) ==
          "concurrency limit 20 -> 18 (overload)");
    CHECK(fmt::format("{}", events::limit_changed{18, 19, resil::load_signal::accepted, 4}) ==
          "concurrency limit 18 -> 19 (accepted)");
    CHECK(fmt::format("{}", events::pace_changed{2.0, 5, duration::zero(), 1}) == "pace 2/s, burst 5");
    CHECK(fmt::format("{}", events::pace_changed{1.0 / 60, 1, duration::zero(), 2}) == "pace 0.0167/s, burst 1");
    CHECK(fmt::format("{}", events::pace_changed{2.0, 5, 5s, 3}) == "pace 2/s, burst 5, paused for 5s");
    CHECK(fmt::format("[{:>9}]", resil::load_signal::overload) == "[ overload]");
}

TEST_CASE("fmt: durations in lines are rounded to three significant digits") {
    auto line = [](duration d) { return fmt::format("{}", events::attempt_finished{1, verdict::success, d}); };
    CHECK(line(0ns) == "attempt 1: success in 0s");
    CHECK(line(7ns) == "attempt 1: success in 7ns");
    CHECK(line(1'500ns) == "attempt 1: success in 1.5us");
    CHECK(line(100us) == "attempt 1: success in 100us");
    CHECK(line(duration{12'345'678}) == "attempt 1: success in 12.3ms");
    CHECK(line(999'999us) == "attempt 1: success in 1000ms");
    CHECK(line(1s) == "attempt 1: success in 1s");
    CHECK(line(1'234ms) == "attempt 1: success in 1.23s");
    CHECK(line(90s) == "attempt 1: success in 1.5m");
    CHECK(line(36h) == "attempt 1: success in 36h");
    CHECK(line(-5ms) == "attempt 1: success in -5ms");
    CHECK(line(duration{9'996'000}) == "attempt 1: success in 10ms");
    CHECK(line(duration{99'960'000}) == "attempt 1: success in 100ms");
    CHECK(line(duration::max()) == "attempt 1: success in 2562048h");
}

namespace {

// The rounding as it was written by hand before fmt's "g" took it over: fixed
// with 2, 1 or 0 decimals by magnitude, then trailing zeros trimmed.
std::string rounded_by_hand(duration d) {
    struct unit {
        std::string_view name;
        double ns;
    };
    static constexpr unit units[] = {{"h", 3.6e12}, {"m", 6e10}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
    const auto count = d.count();
    if (count == 0) return "0s";
    const double magnitude = count < 0 ? -static_cast<double>(count) : static_cast<double>(count);
    const unit* chosen = &units[5];
    for (const auto& u : units) {
        if (magnitude >= u.ns) {
            chosen = &u;
            break;
        }
    }
    const double v = magnitude / chosen->ns;
    const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    std::string text = fmt::format("{:.{}f}", v, decimals);
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    return (count < 0 ? "-" : "") + text + std::string(chosen->name);
}

}  // namespace

TEST_CASE("fmt: the rounding of durations matches the former hand-trimmed form (seeded)") {
    resil::jitter_engine rng{20260101};
    for (int i = 0; i < 200'000; ++i) {
        // Log-uniform magnitudes, so every unit and every rounding edge shows up.
        const int digits = static_cast<int>(rng() % 19);
        std::int64_t count = static_cast<std::int64_t>(rng() >> 1);
        std::int64_t limit = 1;
        for (int k = 0; k < digits; ++k) limit *= 10;
        count = count % limit + 1;
        if (rng() % 4 == 0) count = -count;
        const duration d{count};
        INFO(count);
        REQUIRE(fmt::format("{}", events::attempt_finished{1, verdict::success, d}) ==
                "attempt 1: success in " + rounded_by_hand(d));
    }
}

TEST_CASE("fmt: a metrics snapshot formats as one line, reasons only when counted") {
    CHECK(fmt::format("{}", resil::metrics_snapshot{}) ==
          "calls 0: 0 ok, 0 failed; attempts 0; retries 0; retries exhausted 0; budget refusals 0; deadlines exceeded "
          "0; rejections 0; fallbacks 0; breaker opened 0, half-opened 0, closed 0, open 0s");
    resil::metrics_snapshot s;
    s.calls = 7;
    s.successes = 2;
    s.failures.by_reason[static_cast<std::size_t>(reason::retries_exhausted)] = 3;
    s.failures.by_reason[static_cast<std::size_t>(reason::circuit_open)] = 2;
    s.attempts = 12;
    s.retries = 6;
    s.retries_after_server_hint = 1;
    s.retries_exhausted = 3;
    s.rejections.by_reason[static_cast<std::size_t>(reason::circuit_open)] = 2;
    s.fallbacks = s.failures;
    s.breaker_opened = 2;
    s.breaker_half_opened = 1;
    s.breaker_closed = 1;
    s.time_open = 30s;
    CHECK(fmt::format("{}", s) ==
          "calls 7: 2 ok, 5 failed (retries_exhausted 3, circuit_open 2); attempts 12; retries 6 (1 after "
          "Retry-After); retries exhausted 3; budget refusals 0; deadlines exceeded 0; rejections 2 (circuit_open 2); "
          "fallbacks 5 (retries_exhausted 3, circuit_open 2); breaker opened 2, half-opened 1, closed 1, open 30s");
    // An adaptive limit's and a paced bucket's changes, only when there are some.
    s.limit_increases = 4;
    s.limit_decreases = 1;
    s.pace_changes = 2;
    const auto line = fmt::format("{}", s);
    CHECK(line.ends_with("open 30s; limit raised 4, lowered 1; pace changes 2"));
    // A balancer's ejections and returns, where its hooks feed the object.
    s.endpoint_ejections = 3;
    s.endpoint_returns = 2;
    CHECK(fmt::format("{}", s).ends_with("pace changes 2; endpoints ejected 3, returned 2"));
    // A shared quota's store failures, where there are some.
    s.quota_store_failures = 7;
    CHECK(fmt::format("{}", s).ends_with("pace changes 2; quota store failures 7; endpoints ejected 3, returned 2"));
}

TEST_CASE("fmt: the log listener writes a line for each change of an adaptive limit") {
    manual_clock clock;
    std::vector<std::string> lines;
    const resil::log_listener log{[&lines](std::string_view line) { lines.emplace_back(line); }, "batch"};
    STATIC_REQUIRE(resil::listens_to<decltype(log), events::limit_changed>);
    STATIC_REQUIRE(resil::listens_to<decltype(log), events::pace_changed>);
    resil::basic_adaptive_limit<manual_clock> limit{{.initial_limit = 2, .min_limit = 1, .max_limit = 10}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(limit)).with_listener(log);
    const auto by_status = [](int status) { return status == 503 ? verdict::retryable : verdict::success; };
    for (const int status : {200, 200, 503}) (void)pipe([status] { return status; }, by_status);
    std::vector<std::string> changes;
    for (const auto& l : lines)
        if (l.find("limit") != std::string::npos) changes.push_back(l);
    CHECK(changes == std::vector<std::string>{"batch: concurrency limit 2 -> 3 (accepted)",
                                              "batch: concurrency limit 3 -> 2 (overload)"});
}

TEST_CASE("fmt: the log listener writes one line per event of a scripted run") {
    manual_clock clock;
    std::vector<std::string> lines;
    const resil::log_listener log{[&lines](std::string_view line) { lines.emplace_back(line); }, "triton"};
    resil::basic_circuit_breaker<manual_clock> breaker{{.min_calls = 2, .open_for = 10s, .half_open_probes = 1}, clock};
    const auto pipe = resil::pipeline(clock, resil::fallback_policy{[] { return reply{-1, std::nullopt}; }}, resil::deadline_policy{2s},
                                      resil::retry_policy{{.max_attempts = 3,
                                                           .backoff = resil::exponential_backoff{100ms, 1s}}},
                                      std::ref(breaker))
                          .with_listener(log);

    std::deque<reply> script{{503, duration{337'250'000}}, {503, std::nullopt}};
    const auto call = [&] {
        const auto r = script.front();
        script.pop_front();
        clock.advance(12ms);
        return r;
    };
    CHECK(pipe(call).value().status == -1);  // 503 with Retry-After, 503: the breaker opens
    CHECK(pipe(call).value().status == -1);  // open: rejected at once
    CHECK(lines == std::vector<std::string>{
                       "triton: attempt 1 started",
                       "triton: attempt 1: retryable in 12ms",
                       "triton: retry 1 in 337ms (retryable, Retry-After)",
                       "triton: attempt 2 started",
                       "triton: attempt 2: retryable in 12ms",
                       "triton: circuit breaker closed -> open (failure ratio 1 over 2 calls)",
                       "triton: retry 2 in 400ms (retryable)",
                       "triton: rejected: circuit_open (retry after 9.6s)",
                       "triton: fallback used for circuit_open",
                       "triton: call finished: circuit_open after 2 attempts, answered by the fallback",
                       "triton: rejected: circuit_open (retry after 9.6s)",
                       "triton: fallback used for circuit_open",
                       "triton: call finished: circuit_open after 0 attempts, answered by the fallback",
                   });
}

TEST_CASE("fmt: the log listener without a name, and as a breaker's hook") {
    std::vector<std::string> lines;
    const auto sink = [&lines](std::string_view line) { lines.emplace_back(line); };
    STATIC_REQUIRE(resil::listens_to<resil::log_listener<decltype(sink)>, events::call_finished>);
    STATIC_REQUIRE_FALSE(resil::listens_to<resil::log_listener<decltype(sink)>, int>);
    STATIC_REQUIRE(resil::listens_to<resil::log_listener<decltype(sink)>, events::quota_store_failed>);
    resil::log_listener plain{sink};
    plain(events::fallback_used{reason::rate_limited});
    CHECK(lines == std::vector<std::string>{"fallback used for rate_limited"});
    lines.clear();
    plain(events::quota_store_failed{false, false});
    CHECK(lines == std::vector<std::string>{"quota store failed: rejected (fail closed)"});

    lines.clear();
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.on_state_change = resil::log_listener{sink, "db"}}, clock};
    breaker.isolate();
    breaker.reset();
    CHECK(lines == std::vector<std::string>{"db: circuit breaker closed -> open", "db: circuit breaker open -> closed"});
}

TEST_CASE("fmt: a long line is passed whole to the sink") {
    std::string seen;
    const std::string name(600, 'x');
    resil::log_listener log{[&seen](std::string_view line) { seen = line; }, name};
    log(events::attempt_started{1});
    CHECK(seen == name + ": attempt 1 started");
}

TEST_CASE("fmt: a balancer's ejections and returns, and the log listener as its hooks") {
    CHECK(fmt::format("{}", events::endpoint_ejected{"http://a:80", 2, std::chrono::seconds{60}, {}}) ==
          "endpoint http://a:80 ejected for 1m (multiplier 2)");
    CHECK(fmt::format("{}", events::endpoint_returned{"http://a:80", {}}) == "endpoint http://a:80 returned");
    std::vector<std::string> lines;
    const auto sink = [&lines](std::string_view line) { lines.emplace_back(line); };
    manual_clock clock;
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}},
                       {.policy = resil::balancing_policy::round_robin,
                        .outlier = {.consecutive_failures = 1, .max_ejection_share = 0.5},
                        .on_ejected = resil::log_listener{sink, "replicas"},
                        .on_returned = resil::log_listener{sink, "replicas"}}};
    for (;;) {
        auto l = lb.pick(clock.now());
        if (l.address() != "a:80") continue;
        l.record_and_end(clock.now(), resil::endpoint_result::failure);
        break;
    }
    clock.advance(std::chrono::seconds{30});
    (void)lb.pick(clock.now());
    CHECK(lines == std::vector<std::string>{"replicas: endpoint a:80 ejected for 30s (multiplier 1)",
                                            "replicas: endpoint a:80 returned"});
}
