// resil/circuit_breaker/options.hpp: the defaults, the named limits, and
// validate()'s exact message for every field.
#include <resil/circuit_breaker/options.hpp>

#include <chrono>
#include <limits>
#include <optional>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;
using options = resil::circuit_breaker_options;
using resil::breaker_mode;
using resil::duration;
using resil::verdict;

namespace {

// The message of the first invalid field, or "(valid)".
std::string message_of(const options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : "(valid)";
}

std::string field_of(const options& o) {
    const auto bad = o.validate();
    return bad ? bad->field : "(valid)";
}

}  // namespace

TEST_CASE("circuit breaker options: the defaults are the documented ones, and valid") {
    const options o;
    CHECK(o.mode == breaker_mode::time_window);
    CHECK(o.failure_ratio == 0.5);
    CHECK(o.window == duration{10s});
    CHECK(o.window_calls == 100);
    CHECK(o.min_calls == 20);
    CHECK(o.consecutive_failures == 5);
    CHECK_FALSE(o.slow_call_threshold.has_value());
    CHECK(o.open_for == duration{30s});
    CHECK(o.half_open_probes == 5);
    CHECK(o.probe_timeout == duration::zero());
    CHECK(o.failure_verdicts == resil::verdict_set{verdict::retryable, verdict::ambiguous});
    CHECK_FALSE(o.validate().has_value());
}

TEST_CASE("circuit breaker options: the limits are named constants") {
    STATIC_REQUIRE(options::min_window == duration{10ms});
    STATIC_REQUIRE(options::max_window == duration{24h});
    STATIC_REQUIRE(options::min_window_calls == 1);
    STATIC_REQUIRE(options::max_window_calls == 1'000'000);
    STATIC_REQUIRE(options::min_min_calls == 1);
    STATIC_REQUIRE(options::min_consecutive_failures == 1);
    STATIC_REQUIRE(options::max_consecutive_failures == 1'000'000);
    STATIC_REQUIRE(options::min_open_for == duration{1ms});
    STATIC_REQUIRE(options::max_open_for == duration{24h});
    STATIC_REQUIRE(options::min_probes == 1);
    STATIC_REQUIRE(options::max_probes == 1000);
    STATIC_REQUIRE(options::min_probe_timeout == duration{1ms});
    STATIC_REQUIRE(options::max_probe_timeout == duration{24h});
}

TEST_CASE("circuit breaker options: validate() names the field, its range and the value, in one form") {
    const auto nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(message_of({.mode = static_cast<breaker_mode>(7)}) ==
          "`mode` must be one of time_window, count_window, consecutive_failures, got 7");
    CHECK(message_of({.failure_ratio = 1.5}) ==
          "`failure_ratio` must be in [0, 1) (it opens when the ratio is strictly above it), got 1.5");
    CHECK(message_of({.failure_ratio = 1.0}) ==
          "`failure_ratio` must be in [0, 1) (it opens when the ratio is strictly above it), got 1");
    CHECK(message_of({.failure_ratio = -0.1}) ==
          "`failure_ratio` must be in [0, 1) (it opens when the ratio is strictly above it), got -0.1");
    CHECK(message_of({.failure_ratio = nan}) ==
          "`failure_ratio` must be in [0, 1) (it opens when the ratio is strictly above it), got nan");
    CHECK(message_of({.window = 5ms}) == "`window` must be in [10ms, 24h], got 5ms");
    CHECK(message_of({.window = 0s}) == "`window` must be in [10ms, 24h], got 0s");
    CHECK(message_of({.window = 25h}) == "`window` must be in [10ms, 24h], got 25h");
    CHECK(message_of({.window = 9999us}) == "`window` must be in [10ms, 24h], got 9999us");
    CHECK(message_of({.window_calls = 0}) == "`window_calls` must be in [1, 1000000], got 0");
    CHECK(message_of({.window_calls = 1'000'001}) == "`window_calls` must be in [1, 1000000], got 1000001");
    CHECK(message_of({.min_calls = 0}) == "`min_calls` must be at least 1, got 0");
    CHECK(message_of({.mode = breaker_mode::count_window, .window_calls = 10, .min_calls = 11}) ==
          "`min_calls` must be at most window_calls (10) in count_window mode, or the breaker could never open, got 11");
    CHECK(message_of({.consecutive_failures = 0}) == "`consecutive_failures` must be in [1, 1000000], got 0");
    CHECK(message_of({.consecutive_failures = 1'000'001}) ==
          "`consecutive_failures` must be in [1, 1000000], got 1000001");
    CHECK(message_of({.slow_call_threshold = 0ms}) == "`slow_call_threshold` must be positive when set, got 0s");
    CHECK(message_of({.slow_call_threshold = -2s}) == "`slow_call_threshold` must be positive when set, got -2s");
    CHECK(message_of({.open_for = 0s}) == "`open_for` must be in [1ms, 24h], got 0s");
    CHECK(message_of({.open_for = -5s}) == "`open_for` must be in [1ms, 24h], got -5s");
    CHECK(message_of({.open_for = 500us}) == "`open_for` must be in [1ms, 24h], got 500us");
    CHECK(message_of({.open_for = 25h}) == "`open_for` must be in [1ms, 24h], got 25h");
    CHECK(message_of({.half_open_probes = 0}) == "`half_open_probes` must be in [1, 1000], got 0");
    CHECK(message_of({.half_open_probes = 1001}) == "`half_open_probes` must be in [1, 1000], got 1001");
    CHECK(message_of({.probe_timeout = -1s}) ==
          "`probe_timeout` must be 0 (the same as open_for) or in [1ms, 24h], got -1s");
    CHECK(message_of({.probe_timeout = 500us}) ==
          "`probe_timeout` must be 0 (the same as open_for) or in [1ms, 24h], got 500us");
    CHECK(message_of({.probe_timeout = 36h}) ==
          "`probe_timeout` must be 0 (the same as open_for) or in [1ms, 24h], got 36h");
    CHECK(message_of({.failure_verdicts = {verdict::success}}) ==
          "`failure_verdicts` must not contain success, got {success}");
    CHECK(message_of({.failure_verdicts = {verdict::retryable, verdict::success}}) ==
          "`failure_verdicts` must not contain success, got {success, retryable}");
}

TEST_CASE("circuit breaker options: every message ends with the bad value") {
    const options bad[] = {{.window = 5ms}, {.open_for = 0s}, {.half_open_probes = 0}, {.min_calls = 0},
                           {.failure_ratio = 2.0}, {.probe_timeout = -1s}};
    for (const auto& o : bad) {
        const auto m = message_of(o);
        CHECK(m.find(", got ") != std::string::npos);
        CHECK(m.rfind(", got ") > m.find("must be"));
    }
}

TEST_CASE("circuit breaker options: the field is named as in the options type, for a loader to map to its path") {
    CHECK(field_of({.window = 5ms}) == "window");
    CHECK(field_of({.mode = breaker_mode::count_window, .window_calls = 10, .min_calls = 11}) == "min_calls");
    CHECK(field_of({.failure_verdicts = {verdict::success}}) == "failure_verdicts");
    CHECK(options{.window = 5ms}.validate()->within("circuit_breaker").message() ==
          "`circuit_breaker.window` must be in [10ms, 24h], got 5ms");
}

TEST_CASE("circuit breaker options: the limits themselves are valid, one past them is not") {
    CHECK(message_of({.window = options::min_window}) == "(valid)");
    CHECK(message_of({.window = options::max_window}) == "(valid)");
    CHECK(field_of({.window = options::max_window + 1ns}) == "window");
    CHECK(message_of({.window_calls = options::max_window_calls}) == "(valid)");
    CHECK(message_of({.consecutive_failures = options::max_consecutive_failures}) == "(valid)");
    CHECK(message_of({.open_for = options::min_open_for}) == "(valid)");
    CHECK(field_of({.open_for = options::min_open_for - 1ns}) == "open_for");
    CHECK(message_of({.half_open_probes = options::max_probes, .probe_timeout = options::max_probe_timeout}) == "(valid)");
    CHECK(message_of({.probe_timeout = options::min_probe_timeout}) == "(valid)");
    CHECK(message_of({.slow_call_threshold = 1ns}) == "(valid)");
    CHECK(message_of({.mode = breaker_mode::count_window, .window_calls = 20, .min_calls = 20}) == "(valid)");
    // min_calls above window_calls only matters in count_window mode.
    CHECK(message_of({.window_calls = 10, .min_calls = 11}) == "(valid)");
    // probe_timeout 0 means "the same as open_for": valid, resolved by the breaker.
    CHECK(message_of({.probe_timeout = 0s}) == "(valid)");
}

TEST_CASE("circuit breaker options: the first invalid field, in declaration order, is the one named") {
    CHECK(field_of({.failure_ratio = 2.0, .window = 0s, .open_for = 0s}) == "failure_ratio");
    CHECK(field_of({.window = 0s, .open_for = 0s}) == "window");
    CHECK(field_of({.open_for = 0s, .half_open_probes = 0}) == "open_for");
}

TEST_CASE("docs/circuit_breaker.md defaults: the validate() snippet") {
    resil::circuit_breaker_options o{.open_for = 500us};
    const auto bad = o.validate();
    REQUIRE(bad);
    CHECK(bad->field == "open_for");
    CHECK(bad->message() == "`open_for` must be in [1ms, 24h], got 500us");
}
