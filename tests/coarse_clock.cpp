#include <resil/circuit_breaker.hpp>
#include <resil/coarse_clock.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <functional>

#include <stop_token>

#include "catch.hpp"

using namespace std::chrono_literals;

TEST_CASE("coarse clock: on the steady clock's time line, at most a tick behind") {
    const resil::coarse_steady_clock coarse;
    const resil::steady_clock precise;
    const auto before = precise.now();
    const auto reading = coarse.now();
    const auto after = precise.now();
    CHECK(reading <= after);
    // Usually within a tick; a VM whose timer ticks arrive late lags by about
    // two (8 ms seen at 250 Hz). A bound this loose still tells the steady
    // time line from any other clock (they differ by seconds or more).
    CHECK(reading >= before - 2 * resil::coarse_steady_clock::resolution() - 50ms);
}

TEST_CASE("coarse clock: sleep_until waits for the instant, and ends early when stopped") {
    const resil::coarse_steady_clock clock;
    const resil::steady_clock precise;
    CHECK(clock.sleep_until(precise.now() - 1s));  // already past
    const auto target = precise.now() + 5ms;
    CHECK(clock.sleep_until(target));
    CHECK(precise.now() >= target);
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_until(precise.now() + 1h, stop.get_token()));
    CHECK(resil::sleep_until(clock, precise.now() + 1ms));  // the generic form uses the member
}

TEST_CASE("coarse clock: a pipeline on it starts its deadline up to a tick early, never late") {
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0}};  // one retry per call made
    resil::basic_circuit_breaker<resil::coarse_steady_clock> breaker;
    const auto pipe = resil::pipeline(resil::coarse_steady_clock{}, resil::deadline_policy{250ms},
                                      resil::retry_policy{{.budget = &budget}}, std::ref(breaker),
                                      resil::timeout_policy{{.total = 150ms}});
    const resil::steady_clock precise;
    const auto tick = resil::coarse_steady_clock::resolution();
    const auto before = precise.now();
    resil::time_point deadline{};
    resil::time_point inside{};
    auto out = pipe([&](resil::basic_context<resil::coarse_steady_clock>& ctx) {
        inside = precise.now();
        deadline = ctx.deadline_instant();
        return 1;
    }, resil::always_success);
    REQUIRE(out.ok());
    // The deadline is the coarse reading + 250 ms: never after the precise
    // budget, and only as far before it as the coarse clock lags (a tick,
    // about two on a VM whose ticks arrive late; see the first test).
    CHECK(deadline <= inside + 250ms);
    CHECK(deadline >= before + 250ms - 2 * tick - 50ms);
    const auto m = breaker.metrics();
    CHECK(m.calls == 1);
    CHECK(m.calls_in_window == 1);
    CHECK(budget.balance(precise.now()) == 1);  // the deposit, read on the precise clock
}
