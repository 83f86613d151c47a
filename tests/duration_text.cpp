// resil/duration_text.hpp: durations as configuration files and messages write them.
#include <resil/duration_text.hpp>

#include <chrono>
#include <initializer_list>
#include <stdexcept>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration_text_error;
using resil::format_duration;
using resil::parse_duration;

TEST_CASE("duration text: the shortest exact text, read back to the same count") {
    CHECK(format_duration(0ns) == "0s");
    CHECK(format_duration(250ms) == "250ms");
    CHECK(format_duration(1500ms) == "1.5s");
    CHECK(format_duration(90s) == "90s");
    CHECK(format_duration(2min) == "2m");
    CHECK(format_duration(36h) == "36h");
    CHECK(format_duration(-250ms) == "-250ms");
    CHECK(format_duration(-1500ms) == "-1.5s");
    CHECK(format_duration(1250ms) == "1.25s");
    CHECK(format_duration(1500us) == "1.5ms");
    CHECK(format_duration(90min) == "90m");
    CHECK(format_duration(std::chrono::hours::max()).ends_with(" x 3600s"));  // more seconds than any count holds
    for (const std::chrono::nanoseconds d : std::initializer_list<std::chrono::nanoseconds>{1ns, 999ns, 1us, 1500us, 10ms, 1s, 61s, 59min, 24h}) {
        const auto text = format_duration(d);
        CAPTURE(text);
        CHECK(parse_duration(text) == d);
    }
}

TEST_CASE("duration text: a unit is required, and what a type cannot hold is refused with its reason") {
    CHECK(parse_duration("1.5s") == 1500ms);
    CHECK(parse_duration<std::chrono::milliseconds>("250ms") == 250ms);
    CHECK(parse_duration("250").error() == duration_text_error::syntax);
    CHECK(parse_duration("-1s").error() == duration_text_error::syntax);
    CHECK(parse_duration(" 1s").error() == duration_text_error::syntax);
    CHECK(parse_duration<std::chrono::milliseconds>("1.5ms").error() == duration_text_error::too_precise);
    CHECK(parse_duration("300y").error() == duration_text_error::syntax);
    CHECK(parse_duration("99999999999h").error() == duration_text_error::out_of_range);
    CHECK_FALSE(parse_duration("1x"));
}

TEST_CASE("duration text: the result is the duration itself, as std::expected holds one") {
    const std::chrono::nanoseconds d = parse_duration("250ms").value();
    CHECK(d == 250ms);
    CHECK(*parse_duration<std::chrono::milliseconds>("2s") == 2000ms);
    CHECK(parse_duration("1.5s").has_value());
    CHECK(parse_duration("bad").value_or(1s) == 1s);
    CHECK(parse_duration("3m").value_or(1s) == 3min);
    CHECK(parse_duration("1s").error() == duration_text_error::none);
    CHECK_FALSE(parse_duration("250") == std::chrono::nanoseconds{250});  // refused: equal to no duration
    CHECK_THROWS_WITH(parse_duration("250").value(),
                      R"(resil::parse_duration: the text must be digits, optionally a fraction, and a unit )"
                      R"((ns, us, ms, s, m, h), such as "250ms")");
    CHECK_THROWS_AS(parse_duration<std::chrono::milliseconds>("1.5ms").value(), std::invalid_argument);
    static_assert(*resil::duration_text_result<std::chrono::seconds>(std::chrono::seconds{3}) == 3s);
}
