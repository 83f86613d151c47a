#include <resil/backoff.hpp>  // jitter_engine, for the property test
#include <resil/deadline.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeouts.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

#include "catch.hpp"

// timeouts::invalid_reason() is deprecated; its behaviour stays tested here.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

using namespace std::chrono_literals;
using resil::duration;
using std::chrono::milliseconds;

TEST_CASE("timeouts: every field defaults to no limit, which is valid") {
    const resil::timeouts t;
    CHECK(t.connect == resil::timeouts::no_limit);
    CHECK(t.read == resil::timeouts::no_limit);
    CHECK(t.total == resil::timeouts::no_limit);
    CHECK(resil::timeouts::no_limit == milliseconds::max());
    CHECK_FALSE(t.invalid_reason());
}

TEST_CASE("timeouts: clamped to what is left of the deadline, field by field") {
    // Gateway deadline 250 ms; the attempt allows connect 20, read 100, total 150 ms.
    const resil::timeouts per_attempt{.connect = 20ms, .read = 100ms, .total = 150ms};
    resil::testing::manual_clock clock;
    const auto dl = resil::basic_deadline<resil::testing::manual_clock>::after(250ms, clock);

    clock.advance(70ms);  // 180 ms left: nothing to cut
    CHECK(per_attempt.clamp_to(dl) == per_attempt);

    clock.advance(90ms);  // 90 ms left
    const resil::timeouts expected{.connect = 20ms, .read = 90ms, .total = 90ms};
    CHECK(per_attempt.clamp_to(dl) == expected);

    clock.advance(90ms);  // expired: zero everywhere means "out of time"
    const resil::timeouts expired{.connect = 0ms, .read = 0ms, .total = 0ms};
    CHECK(per_attempt.clamp_to(dl) == expired);
}

TEST_CASE("timeouts: the remaining time is floored to whole milliseconds") {
    const resil::timeouts t{.connect = 20ms, .read = 100ms, .total = 150ms};
    CHECK(t.clamp_to(90'999'999ns).total == 90ms);
    CHECK(t.clamp_to(90ms).total == 90ms);
    CHECK(t.clamp_to(1'999'999ns).connect == 1ms);
    CHECK(t.clamp_to(999'999ns).connect == 0ms);  // under a millisecond left: out of time
    CHECK(t.clamp_to(1ns).total == 0ms);
}

TEST_CASE("timeouts: zero or negative time left gives zero; no deadline changes nothing") {
    const resil::timeouts t{.connect = 20ms, .read = 100ms, .total = 150ms};
    for (const duration left : {0ns, -1ns, duration{-1h}, duration::min()}) {
        const auto c = t.clamp_to(left);
        CHECK(c.connect == 0ms);
        CHECK(c.read == 0ms);
        CHECK(c.total == 0ms);
    }
    CHECK(t.clamp_to(duration::max()) == t);
    CHECK(t.clamp_to(resil::deadline{}) == t);
    CHECK(resil::timeouts{}.clamp_to(resil::deadline{}) == resil::timeouts{});
    // Unlimited fields take a real deadline's remaining time.
    const auto capped = resil::timeouts{}.clamp_to(5s);
    CHECK(capped == resil::timeouts{.connect = 5s, .read = 5s, .total = 5s});
}

TEST_CASE("timeouts: clamping never exceeds what is left nor what was configured") {
    resil::jitter_engine rng{17};
    for (int i = 0; i < 20'000; ++i) {
        const auto pick_ms = [&](std::uint64_t limit) {
            return milliseconds{static_cast<milliseconds::rep>(rng() % limit) + 1};
        };
        const resil::timeouts t{.connect = pick_ms(500), .read = pick_ms(5'000), .total = pick_ms(50'000)};
        const duration left{static_cast<duration::rep>(rng() % 60'000'000'000ULL)};
        const auto c = t.clamp_to(left);
        for (const auto& [clamped, configured] : {std::pair{c.connect, t.connect}, std::pair{c.read, t.read},
                                                 std::pair{c.total, t.total}}) {
            REQUIRE(clamped <= left);
            REQUIRE(clamped <= configured);
            REQUIRE(clamped >= 0ms);
            // And it is the largest such whole-millisecond value.
            REQUIRE((clamped == configured || left - clamped < 1ms));
        }
    }
}

TEST_CASE("timeouts: zero or negative configured values are named") {
    using namespace std::string_view_literals;
    CHECK(resil::timeouts{.connect = 0ms}.invalid_reason() == "connect timeout must be positive"sv);
    CHECK(resil::timeouts{.read = -5ms}.invalid_reason() == "read timeout must be positive"sv);
    CHECK(resil::timeouts{.total = milliseconds::min()}.invalid_reason() == "total timeout must be positive"sv);
    CHECK_FALSE(resil::timeouts{.connect = 1ms, .read = 1ms, .total = 1ms}.invalid_reason());
    // A connect timeout above the total is allowed: the total simply wins.
    CHECK_FALSE(resil::timeouts{.connect = 5s, .total = 1s}.invalid_reason());
    static_assert(!resil::timeouts{.connect = 20ms, .read = 100ms, .total = 150ms}.invalid_reason());
}

TEST_CASE("timeouts: tightened_by takes the smaller of each field; no_limit is the identity") {
    using namespace std::chrono_literals;
    constexpr resil::timeouts outer{.connect = 50ms, .total = 1s};
    constexpr resil::timeouts inner{.connect = 1s, .read = 100ms, .total = 300ms};
    STATIC_REQUIRE(outer.tightened_by(inner) == resil::timeouts{.connect = 50ms, .read = 100ms, .total = 300ms});
    STATIC_REQUIRE(outer.tightened_by(inner) == inner.tightened_by(outer));
    STATIC_REQUIRE(outer.tightened_by(resil::timeouts{}) == outer);
}

TEST_CASE("timeouts: validate names the field and the value") {
    using namespace std::chrono_literals;
    CHECK_FALSE(resil::timeouts{}.validate());
    CHECK_FALSE(resil::timeouts{.connect = 1ms, .read = 1ms, .total = 1ms}.validate());
    auto bad = resil::timeouts{.read = -5ms}.validate();
    REQUIRE(bad);
    CHECK(bad->field == "read");
    CHECK(bad->message() == "`read` must be at least 1ms, got -5ms");
    CHECK(resil::timeouts{.connect = 0ms}.validate()->message() == "`connect` must be at least 1ms, got 0s");
    CHECK(resil::timeouts{.total = 0ms}.validate()->field == "total");
}

TEST_CASE("timeouts: one rule says whether an attempt may start") {
    using namespace std::chrono_literals;
    STATIC_REQUIRE(resil::timeouts::enough_for_attempt(resil::timeouts::min_attempt_time));
    STATIC_REQUIRE(!resil::timeouts::enough_for_attempt(resil::timeouts::min_attempt_time - 1ns));
    STATIC_REQUIRE(resil::timeouts::enough_for_attempt(resil::duration::max()));
    STATIC_REQUIRE(!resil::timeouts::enough_for_attempt(-1s));
}
