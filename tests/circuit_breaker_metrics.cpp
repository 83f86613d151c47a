// resil/circuit_breaker/metrics.hpp: the snapshot metrics() returns, as each
// of the three modes fills it (lifetime counts, the window or the run).
#include <resil/circuit_breaker/metrics.hpp>

#include <resil/circuit_breaker.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::circuit_state;
using resil::verdict;
using resil::testing::manual_clock;
using breaker_type = resil::basic_circuit_breaker<manual_clock>;

namespace {

void calls(breaker_type& breaker, int n, verdict v) {
    for (int i = 0; i < n; ++i) {
        auto p = breaker.try_acquire();
        REQUIRE(p.admitted());
        breaker.record(p, v);
    }
}

}  // namespace

TEST_CASE("circuit breaker metrics: a default snapshot is closed and all zero") {
    const resil::circuit_breaker_metrics m;
    CHECK(m.state == circuit_state::closed);
    CHECK_FALSE(m.isolated);
    CHECK(m.calls == 0);
    CHECK(m.failures == 0);
    CHECK(m.slow_calls == 0);
    CHECK(m.rejections == 0);
    CHECK(m.transitions == 0);
    CHECK(m.calls_in_window == 0);
    CHECK(m.failures_in_window == 0);
}

TEST_CASE("circuit breaker metrics: time window — the window's counts, and lifetime counts kept across a reset") {
    manual_clock clock;
    breaker_type breaker{{.window = 10s}, clock};
    calls(breaker, 6, verdict::success);
    calls(breaker, 2, verdict::retryable);
    auto m = breaker.metrics();
    CHECK(m.calls == 8);
    CHECK(m.failures == 2);
    CHECK(m.calls_in_window == 8);
    CHECK(m.failures_in_window == 2);
    clock.advance(11s);  // all of it older than the window
    m = breaker.metrics();
    CHECK(m.calls == 8);
    CHECK(m.calls_in_window == 0);
    calls(breaker, 1, verdict::success);
    breaker.reset();
    m = breaker.metrics();
    CHECK(m.calls == 9);
    CHECK(m.failures == 2);
    CHECK(m.calls_in_window == 0);
}

TEST_CASE("circuit breaker metrics: count window — the last N calls, and every call in the lifetime counts") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::count_window, .window_calls = 4, .min_calls = 4}, clock};
    calls(breaker, 3, verdict::success);
    calls(breaker, 1, verdict::retryable);
    calls(breaker, 2, verdict::success);
    const auto m = breaker.metrics();
    CHECK(m.state == circuit_state::closed);
    CHECK(m.calls == 6);
    CHECK(m.failures == 1);
    CHECK(m.calls_in_window == 4);
    CHECK(m.failures_in_window == 1);
}

TEST_CASE("circuit breaker metrics: consecutive failures — the current run in both window fields") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3}, clock};
    calls(breaker, 2, verdict::retryable);
    calls(breaker, 1, verdict::success);
    calls(breaker, 2, verdict::retryable);
    auto m = breaker.metrics();
    CHECK(m.calls == 5);
    CHECK(m.failures == 4);
    CHECK(m.calls_in_window == 2);
    CHECK(m.failures_in_window == 2);
    calls(breaker, 1, verdict::retryable);
    m = breaker.metrics();
    CHECK(m.state == circuit_state::open);
    CHECK(m.transitions == 1);
    CHECK_FALSE(breaker.try_acquire().admitted());
    CHECK(breaker.metrics().rejections == 1);
}

TEST_CASE("circuit breaker metrics: isolated, slow calls and rejections") {
    manual_clock clock;
    breaker_type breaker{{.slow_call_threshold = 1s}, clock};
    auto p = breaker.try_acquire();
    clock.advance(2s);
    breaker.record(p, verdict::success);
    breaker.isolate();
    CHECK_FALSE(breaker.try_acquire().admitted());
    const auto m = breaker.metrics();
    CHECK(m.state == circuit_state::open);
    CHECK(m.isolated);
    CHECK(m.slow_calls == 1);
    CHECK(m.failures == 1);
    CHECK(m.rejections == 1);
    CHECK(m.transitions == 1);
}
