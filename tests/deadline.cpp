#include <resil/deadline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::time_point;
using manual_deadline = resil::basic_deadline<resil::testing::manual_clock>;

// ---------------------------------------------------------------------------
// The deadline

TEST_CASE("deadline: each hop waits min(its own cap, what is left)") {
    // Gateway deadline 250 ms, the model call capped at 150 ms.
    resil::testing::manual_clock clock;
    const auto dl = manual_deadline::after(250ms, clock);
    clock.advance(70ms);  // receiving and preparing the request
    CHECK(dl.remaining() == 180ms);
    CHECK(dl.clamp(150ms) == 150ms);
    clock.advance(90ms);  // 160 ms in all
    CHECK(dl.remaining() == 90ms);
    CHECK(dl.clamp(150ms) == 90ms);
    CHECK_FALSE(dl.expired());
}

TEST_CASE("deadline: expires exactly at its instant, and stays expired") {
    resil::testing::manual_clock clock;
    const auto dl = manual_deadline::after(100ms, clock);
    REQUIRE(dl.is_set());
    CHECK(dl.when() == clock.now() + 100ms);
    clock.advance(100ms - 1ns);
    CHECK_FALSE(dl.expired());
    CHECK(dl.remaining() == 1ns);
    clock.advance(1ns);
    CHECK(dl.expired());
    CHECK(dl.remaining() == 0ns);
    CHECK(dl.clamp(150ms) == 0ns);
    clock.advance(1h);
    CHECK(dl.expired());
    CHECK(dl.remaining() == 0ns);  // never negative
}

TEST_CASE("deadline: the pure forms agree with the clock-reading ones") {
    resil::testing::manual_clock clock;
    const auto dl = manual_deadline::after(250ms, clock);
    const auto t0 = clock.now();
    CHECK(dl.remaining(t0 + 70ms) == 180ms);
    CHECK(dl.clamp(150ms, t0 + 160ms) == 90ms);
    CHECK(dl.expired(t0 + 250ms));
    CHECK_FALSE(dl.expired(t0 + 249ms));
    CHECK(dl.remaining(t0 + 10s) == 0ns);
    CHECK(dl.remaining() == 250ms);  // the clock itself did not move
}

TEST_CASE("deadline: none never expires and clamps nothing") {
    const resil::deadline none;
    CHECK_FALSE(none.is_set());
    CHECK(none.when() == time_point::max());
    CHECK(none.remaining() == duration::max());
    CHECK_FALSE(none.expired());
    CHECK(none.clamp(150ms) == 150ms);
    CHECK(none.clamp(duration::max()) == duration::max());
    CHECK_FALSE(none.expired(time_point::max()));
    CHECK(none.remaining(time_point::min()) == duration::max());

    resil::testing::manual_clock clock;
    const manual_deadline none_on_clock{clock};
    clock.advance(24h * 365);
    CHECK_FALSE(none_on_clock.expired());
    CHECK_FALSE(manual_deadline::at(time_point::max(), clock).is_set());
}

TEST_CASE("deadline: after() saturates instead of overflowing") {
    resil::testing::manual_clock clock;
    CHECK_FALSE(manual_deadline::after(duration::max(), clock).is_set());
    CHECK_FALSE(resil::deadline::after(duration::max()).is_set());
    CHECK(resil::deadline::after(duration::max()).remaining() == duration::max());
    // Near the end of the time line, any budget reaching past it is "none".
    resil::testing::manual_clock late{time_point::max() - 1h};
    CHECK_FALSE(manual_deadline::after(2h, late).is_set());
    const auto fits = manual_deadline::after(30min, late);
    CHECK(fits.is_set());
    CHECK(fits.remaining() == 30min);
}

TEST_CASE("deadline: a zero or negative budget is already expired") {
    resil::testing::manual_clock clock;
    for (const duration budget : {0ns, -1ns, duration{-5s}, duration::min()}) {
        const auto dl = manual_deadline::after(budget, clock);
        CHECK(dl.is_set());
        CHECK(dl.expired());
        CHECK(dl.remaining() == 0ns);
        CHECK(dl.clamp(1s) == 0ns);
    }
    resil::testing::manual_clock early{time_point::min() + 1h};
    const auto dl = manual_deadline::after(duration::min(), early);
    CHECK(dl.when() == time_point::min());  // saturated at the start of the time line
    CHECK(dl.remaining() == 0ns);
}

TEST_CASE("deadline: remaining() never overflows between the ends of the time line") {
    const auto far = resil::deadline::at(time_point::max() - 1ns);
    CHECK(far.is_set());
    CHECK(far.remaining(time_point::min()) == duration::max());
    CHECK(far.remaining(time_point{}) == duration::max() - 1ns);
    const auto past = resil::deadline::at(time_point::min());
    CHECK(past.remaining(time_point::max()) == 0ns);
    CHECK(past.expired(time_point::min()));
}

TEST_CASE("deadline: clamp never goes negative") {
    resil::testing::manual_clock clock;
    const auto dl = manual_deadline::after(1s, clock);
    CHECK(dl.clamp(-5ms) == 0ns);
    CHECK(dl.clamp(0ns) == 0ns);
    CHECK(dl.clamp(duration::min()) == 0ns);
    CHECK(dl.clamp(duration::max()) == 1s);
}

TEST_CASE("deadline: tightened keeps the earlier instant, on the same clock") {
    resil::testing::manual_clock clock;
    const auto outer = manual_deadline::after(300ms, clock);
    clock.advance(20ms);
    const auto inner = outer.tightened(250ms);  // 270 ms left outside: 250 ms wins
    CHECK(inner.remaining() == 250ms);
    const auto looser = outer.tightened(1s);  // the caller's deadline wins
    CHECK(looser.when() == outer.when());
    clock.advance(100ms);
    CHECK(inner.remaining() == 150ms);  // reads the shared manual clock

    const manual_deadline none{clock};
    const auto from_none = none.tightened(100ms);
    CHECK(from_none.is_set());
    CHECK(from_none.remaining() == 100ms);
    CHECK_FALSE(none.tightened(duration::max()).is_set());
    CHECK(outer.tightened(-1s).expired());
}

TEST_CASE("deadline: the classic chain gives up layer by layer, 300 > 250 > 150 > 100 ms") {
    resil::testing::manual_clock clock;
    const auto caller = manual_deadline::after(300ms, clock);
    const auto gateway = caller.tightened(250ms);
    const auto model_call = gateway.tightened(150ms);
    const auto queue = model_call.tightened(100ms);
    CHECK(queue.when() < model_call.when());
    CHECK(model_call.when() < gateway.when());
    CHECK(gateway.when() < caller.when());
    clock.advance(100ms);
    CHECK(queue.expired());
    CHECK_FALSE(model_call.expired());
}

TEST_CASE("deadline: earliest() takes the earlier of two instants") {
    resil::testing::manual_clock clock;
    const auto dl = manual_deadline::after(1s, clock);
    const auto t0 = clock.now();
    CHECK(dl.earliest(t0 + 200ms).when() == t0 + 200ms);
    CHECK(dl.earliest(t0 + 5s).when() == t0 + 1s);
    CHECK(manual_deadline{clock}.earliest(t0 + 5s).when() == t0 + 5s);
    CHECK_FALSE(manual_deadline{clock}.earliest(time_point::max()).is_set());
}

TEST_CASE("deadline: the steady clock costs no space, and class template deduction works") {
    CHECK(sizeof(resil::deadline) == sizeof(time_point));
    resil::testing::manual_clock clock;
    const resil::basic_deadline deduced{clock};
    STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(deduced)>, manual_deadline>);
    const auto real = resil::deadline::after(1h);
    CHECK(real.is_set());
    CHECK(real.remaining() > 59min);
    CHECK(real.remaining() <= 1h);
}

// ---------------------------------------------------------------------------
// The propagation header

TEST_CASE("timeout header: encodes in the finest unit that fits 8 digits, rounding down") {
    struct example {
        duration in;
        std::string_view text;
    };
    const std::vector<example> examples{
        {0ns, "0n"},
        {-1ns, "0n"},
        {-5s, "0n"},
        {duration::min(), "0n"},
        {1ns, "1n"},
        {99'999'999ns, "99999999n"},
        {100'000'000ns, "100000u"},
        {100'000'999ns, "100000u"},  // rounds down, never up
        {250ms, "250000u"},
        {1500ms, "1500000u"},           // 1,500,000,000 n would take 10 digits
        {1'999'999'999ns, "1999999u"},  // just below 2 s stays below 2 s
        {99'999'999'999ns, "99999999u"},
        {100s, "100000m"},
        {2h, "7200000m"},
        {99'999'999ms, "99999999m"},
        {100'000'000ms, "100000S"},
        {99'999'999s, "99999999S"},
        {100'000'000s, "1666666M"},
        {std::chrono::minutes{99'999'999}, "99999999M"},
        {std::chrono::minutes{100'000'000}, "1666666H"},
        {duration::max(), "2562047H"},
    };
    for (const auto& e : examples) {
        INFO(e.in.count() << " ns");
        CHECK(resil::encode_timeout_header(e.in).view() == e.text);
    }
    static_assert(resil::encode_timeout_header(1500ms).view() == "1500000u");
    CHECK(resil::timeout_header_name == "grpc-timeout");
}

TEST_CASE("timeout header: decoding what was encoded never gives more time than was left") {
    std::vector<duration> samples{0ns, 1ns, 999ns, 1us, 150ms, 250ms, 1s, 1'999'999'999ns, 1h, 24h, duration::max()};
    // A spread of magnitudes from 1 ns to near duration::max().
    for (std::int64_t v = 1; v < duration::max().count() / 7; v = v * 7 + 3) samples.emplace_back(v);
    for (const auto d : samples) {
        const auto text = resil::encode_timeout_header(d);
        INFO(d.count() << " ns -> " << std::string(text.view()));
        const auto back = resil::decode_timeout_header(text.view());
        REQUIRE(back);
        CHECK(*back <= d);
        // The loss is under one unit of the encoding; a coarser unit is chosen
        // only once the value exceeds 8 digits in the finer one, so at least
        // 6 significant digits survive.
        CHECK(d - *back < std::max(duration{1}, d / 100'000));
        CHECK(text.size <= 9);
    }
    CHECK(resil::decode_timeout_header(resil::encode_timeout_header(250ms).view()) == 250ms);
}

TEST_CASE("timeout header: decodes every unit") {
    CHECK(resil::decode_timeout_header("1H") == 1h);
    CHECK(resil::decode_timeout_header("2M") == 2min);
    CHECK(resil::decode_timeout_header("3S") == 3s);
    CHECK(resil::decode_timeout_header("250m") == 250ms);
    CHECK(resil::decode_timeout_header("7u") == 7us);
    CHECK(resil::decode_timeout_header("9n") == 9ns);
    CHECK(resil::decode_timeout_header("0n") == 0ns);
    CHECK(resil::decode_timeout_header("0H") == 0ns);
    CHECK(resil::decode_timeout_header("00000001S") == 1s);  // leading zeros, 8 digits
    CHECK(resil::decode_timeout_header("99999999n") == 99'999'999ns);
    CHECK(resil::decode_timeout_header("99999999M") == std::chrono::minutes{99'999'999});
    static_assert(resil::decode_timeout_header("150m") == 150ms);
}

TEST_CASE("timeout header: hours past int64 nanoseconds saturate to duration::max()") {
    CHECK(resil::decode_timeout_header("2562047H") == std::chrono::hours{2'562'047});  // still fits
    CHECK(resil::decode_timeout_header("2562048H") == duration::max());
    CHECK(resil::decode_timeout_header("99999999H") == duration::max());
    // ...which a deadline reads as "none".
    CHECK_FALSE(resil::deadline::after(*resil::decode_timeout_header("99999999H")).is_set());
}

TEST_CASE("timeout header: malformed values decode to nothing") {
    using namespace std::string_view_literals;
    const std::vector<std::string_view> malformed{
        ""sv,           "n"sv,           "S"sv,         "1"sv,          "10"sv,         "12345678"sv,
        "123456789S"sv, "000000000n"sv,  "+1S"sv,       "-1S"sv,        " 1S"sv,        "1S "sv,
        "1 S"sv,        "\t1S"sv,        "1S\r\n"sv,    "1s"sv,         "1h"sv,         "1U"sv,
        "1N"sv,         "1x"sv,          "1SS"sv,       "1mS"sv,        "1ms"sv,        "Sm"sv,
        "1.5S"sv,       "1e3m"sv,        "0x1S"sv,      "1,000m"sv,     "1_000m"sv,     "1'000m"sv,
        "1\0S"sv,       "1S\0"sv,        "\0"sv,        "\xef\xbc\x91S"sv /* fullwidth 1 */,
        "1\xc2\xb5"sv /* 1µ */,          "\xd9\xa3S"sv /* Arabic-Indic 3 */,  "one S"sv,   "S1"sv,
        "mm"sv,         "1 "sv,          "1\n"sv,       "99999999999H"sv, "1-S"sv,     "1+S"sv,
        "inf H"sv,      "NaNn"sv,        "1/2S"sv,      "١S"sv,
    };
    for (const auto text : malformed) {
        INFO("\"" << std::string(text) << "\" (" << text.size() << " bytes)");
        CHECK_FALSE(resil::decode_timeout_header(text).has_value());
    }
}
