// resil/testing/manual_clock.hpp: a clock that moves only when told, for users'
// own tests of code that waits.
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <stop_token>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;

TEST_CASE("manual clock: time moves only forward, and only when told; copies share it") {
    const manual_clock clock;
    const auto t0 = clock.now();
    CHECK(clock.now() == t0);
    clock.advance(30s);
    CHECK(clock.now() == t0 + 30s);
    clock.advance(-5s);  // ignored
    CHECK(clock.now() == t0 + 30s);
    clock.advance_to(t0);  // earlier: ignored
    CHECK(clock.now() == t0 + 30s);
    const manual_clock copy = clock;
    copy.advance(1s);
    CHECK(clock.now() == t0 + 31s);
}

TEST_CASE("manual clock: sleeps pass at once and are recorded; a stop already requested sleeps nothing") {
    const manual_clock clock;
    const auto t0 = clock.now();
    CHECK(clock.sleep_for(250ms));
    CHECK(clock.sleep_until(t0 + 1s));
    CHECK(clock.now() == t0 + 1s);
    CHECK(clock.sleeps() == 2);
    CHECK(clock.slept() == 1s);

    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_for(1h, stop.get_token()));
    CHECK(clock.now() == t0 + 1s);
}
