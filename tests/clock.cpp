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

namespace {
// A clock with only sleep_for, as user clocks written before sleep_until were.
class sleep_for_only_clock {
public:
    [[nodiscard]] resil::time_point now() const noexcept { return time_.now(); }
    bool sleep_for(resil::duration d, std::stop_token stop = {}) const { return time_.sleep_for(d, stop); }
    resil::testing::manual_clock time_;
};
static_assert(resil::clock<sleep_for_only_clock>);
}  // namespace

TEST_CASE("manual clock: sleep_until moves time to exactly the instant") {
    resil::testing::manual_clock clock;
    const auto t0 = clock.now();
    CHECK(clock.sleep_until(t0 + 250ms));
    CHECK(clock.now() == t0 + 250ms);
    CHECK(clock.slept() == 250ms);
    CHECK(clock.sleep_until(t0));  // already past: time stays
    CHECK(clock.now() == t0 + 250ms);
    CHECK(clock.sleeps() == 2);
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_until(t0 + 1s, stop.get_token()));
    CHECK(clock.now() == t0 + 250ms);
}

TEST_CASE("resil::sleep_until uses the clock's own sleep_until, or sleeps what is left from a fresh reading") {
    resil::testing::manual_clock clock;
    const auto t0 = clock.now();
    CHECK(resil::sleep_until(clock, t0 + 100ms));
    CHECK(clock.now() == t0 + 100ms);

    sleep_for_only_clock old;
    const auto t1 = old.now();
    old.time_.advance(30ms);  // time passes after the instant was decided
    CHECK(resil::sleep_until(old, t1 + 100ms));
    CHECK(old.now() == t1 + 100ms);
    CHECK(old.time_.slept() == 70ms);
    CHECK(resil::sleep_until(old, t1));  // past: no sleep
    CHECK(old.time_.sleeps() == 1);
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(resil::sleep_until(old, t1 + 1s, stop.get_token()));
    CHECK_FALSE(resil::sleep_until(clock, t0 + 1s, stop.get_token()));
}

TEST_CASE("steady clock: sleep_until an instant already past returns at once; a stop refuses it") {
    resil::steady_clock clock;
    CHECK(clock.sleep_until(clock.now() - 1s));
    CHECK(resil::sleep_until(clock, clock.now() + 1ms));
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_until(clock.now() + 1h, stop.get_token()));
}
