#include <resil/clock.hpp>
#include <resil/testing/manual_clock.hpp>

#include <thread>

#include "catch.hpp"

using namespace std::chrono_literals;

TEST_CASE("manual clock: sleeps advance virtual time at once and are recorded") {
    resil::testing::manual_clock clock;
    const auto t0 = clock.now();
    REQUIRE(clock.sleep_for(250ms, {}));
    CHECK(clock.now() - t0 == 250ms);
    CHECK(clock.sleeps() == 1);
    CHECK(clock.slept() == 250ms);
}

TEST_CASE("manual clock: copies share one time line") {
    resil::testing::manual_clock clock;
    const auto copy = clock;
    clock.advance(3s);
    CHECK(copy.now() == clock.now());
}

TEST_CASE("manual clock: time never runs backwards") {
    resil::testing::manual_clock clock;
    const auto t0 = clock.now();
    clock.advance(-5s);
    clock.advance_to(t0 - 1s);
    CHECK(clock.now() == t0);
    clock.advance_to(t0 + 7s);
    CHECK(clock.now() == t0 + 7s);
}

TEST_CASE("manual clock: a requested stop refuses the sleep without advancing") {
    resil::testing::manual_clock clock;
    std::stop_source stop;
    stop.request_stop();
    const auto t0 = clock.now();
    CHECK_FALSE(clock.sleep_for(1s, stop.get_token()));
    CHECK(clock.now() == t0);
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("manual clock: concurrent advances are all counted") {
    resil::testing::manual_clock clock;
    const auto t0 = clock.now();
    std::thread a([&] { for (int i = 0; i < 1000; ++i) clock.advance(1ms); });
    std::thread b([&] { for (int i = 0; i < 1000; ++i) clock.sleep_for(1ms, {}); });
    a.join();
    b.join();
    CHECK(clock.now() - t0 == 2000ms);
}

TEST_CASE("steady clock: a stop request wakes a long sleep promptly") {
    resil::steady_clock clock;
    std::stop_source stop;
    const auto t0 = clock.now();
    std::jthread stopper([&] {
        std::this_thread::sleep_for(20ms);
        stop.request_stop();
    });
    // 60 s would time the test out if the wake-up were lost; the bound below is
    // generous because shared machines are noisy, and still far below 60 s.
    CHECK_FALSE(clock.sleep_for(60s, stop.get_token()));
    CHECK(clock.now() - t0 < 10s);
}

TEST_CASE("steady clock: a short sleep without a stop token completes") {
    resil::steady_clock clock;
    const auto t0 = clock.now();
    CHECK(clock.sleep_for(2ms));
    CHECK(clock.now() - t0 >= 2ms);
    CHECK(clock.sleep_for(-1s));
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_for(0s, stop.get_token()));
}
