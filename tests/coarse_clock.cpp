#include <resil/coarse_clock.hpp>

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
    CHECK(reading >= before - resil::coarse_steady_clock::resolution() - 1ms);
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
