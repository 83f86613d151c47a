// resil/detail/http_text.hpp and resil/detail/decimal_duration.hpp: the
// character classes, OWS and saturated digits every field parser shares, and
// the one decimal-duration grammar, checked against plain references.
#include <resil/detail/decimal_duration.hpp>
#include <resil/detail/http_text.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "catch.hpp"

namespace rd = resil::detail;

namespace {

// min(the number `digits` writes, cap), by comparing digit strings: no
// arithmetic that could itself overflow.
std::int64_t reference_saturated(std::string_view digits, std::int64_t cap) {
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    const std::string top = std::to_string(cap);
    if (digits.size() > top.size() || (digits.size() == top.size() && digits > std::string_view(top))) return cap;
    std::int64_t v = 0;
    for (const char c : digits) v = v * 10 + (c - '0');
    return v;
}

}  // namespace

TEST_CASE("http text: tchar, token, OWS and field-value bytes, byte by byte") {
    const std::string_view specials = "!#$%&'*+-.^_`|~";
    for (int b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        const bool alpha = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        const bool digit = b >= '0' && b <= '9';
        INFO(b);
        CHECK(rd::is_digit(c) == digit);
        CHECK(rd::is_alpha(c) == alpha);
        CHECK(rd::is_lcalpha(c) == (b >= 'a' && b <= 'z'));
        CHECK(rd::is_tchar(c) == (alpha || digit || specials.find(c) != std::string_view::npos));
        CHECK(rd::is_ows(c) == (b == ' ' || b == '\t'));
        CHECK(rd::is_forbidden_in_value(c) == ((b < 0x20 && b != '\t') || b == 0x7F));
        CHECK(rd::ascii_lower(c) == (b >= 'A' && b <= 'Z' ? static_cast<char>(b + 32) : c));
    }
    CHECK(rd::is_token("Retry-After"));
    CHECK_FALSE(rd::is_token(""));
    CHECK_FALSE(rd::is_token("Retry After"));
    CHECK_FALSE(rd::is_token("a:b"));
    CHECK(rd::trim_ows(" \t 12 \t") == "12");
    CHECK(rd::trim_ows("\t \t").empty());
    CHECK(rd::trim_ows("a b") == "a b");
    CHECK(rd::trim_ows("\r1\n") == "\r1\n");  // CR and LF are not OWS
    CHECK(rd::iequals("X-RateLimit-Reset", "x-ratelimit-RESET"));
    CHECK_FALSE(rd::iequals("x-ratelimit-reset", "x-ratelimit-rese"));
    CHECK_FALSE(rd::iequals("[", "{"));  // 0x5B and 0x7B differ by the case bit but are not letters
}

TEST_CASE("http text: digits saturate at the cap, however many, never overflowing") {
    const std::int64_t caps[] = {9, 10, 86'400, std::int64_t{1} << 31, 999'999'999'999'999, std::int64_t{1} << 62,
                                 std::numeric_limits<std::int64_t>::max()};
    for (const auto cap : caps) {
        const std::string top = std::to_string(cap);
        // Around the cap: one below, the cap, one above (as digit strings),
        // the cap with a digit more, and long runs.
        std::string below = top;
        for (auto i = below.size(); i-- > 0;) {
            if (below[i] != '0') {
                --below[i];
                break;
            }
            below[i] = '9';
        }
        std::string above = top;
        for (auto i = above.size();;) {
            if (i-- == 0) {
                above.insert(above.begin(), '1');
                break;
            }
            if (above[i] != '9') {
                ++above[i];
                break;
            }
            above[i] = '0';
        }
        for (const std::string& digits : {std::string("0"), std::string("7"), std::string("000123"), below, top, above,
                                          top + "0", top + "9", std::string(19, '9'), std::string(20, '9'),
                                          std::string(400, '9'), "0000" + top, std::string(25, '0') + "1"}) {
            INFO(cap << " " << digits);
            const auto read = rd::read_digits(digits + "x5", cap);
            CHECK(read.length == digits.size());
            CHECK(read.value == reference_saturated(digits, cap));
            CHECK(rd::parse_digits(digits, cap) == reference_saturated(digits, cap));
        }
    }
    CHECK(rd::read_digits("", 100).length == 0);
    CHECK(rd::read_digits("x1", 100).length == 0);
    for (const char* bad : {"", " 1", "1 ", "+1", "-1", "1.0", "1e3", "0x1"}) {
        INFO(bad);
        CHECK_FALSE(rd::parse_digits(bad, 1000));
    }
    static_assert(rd::parse_digits("2147483649", std::int64_t{1} << 31) == std::int64_t{1} << 31);
}

TEST_CASE("decimal durations: one grammar for a decimal and a component") {
    std::string_view text = "12.50s rest";
    const auto n = rd::take_decimal(text);
    REQUIRE(n);
    CHECK(n->whole == "12");
    CHECK(n->fraction == "50");
    CHECK(n->has_point);
    CHECK(text == "s rest");
    for (const char* bad : {"", ".5", "x1", "-1", "+1"}) {
        std::string_view t = bad;
        INFO(bad);
        CHECK_FALSE(rd::take_decimal(t));
        CHECK(t == bad);  // left as it was
    }
    std::string_view point_alone = "5.s";
    CHECK_FALSE(rd::take_decimal(point_alone));

    std::string_view go = "1h2m3.5s";
    std::string units;
    while (!go.empty()) {
        const auto c = rd::take_duration_component(go, false);
        REQUIRE(c);
        units += std::string(c->unit->name) + "/";
    }
    CHECK(units == "h/m/s/");
    for (const char* name : {"h", "m", "s", "ms", "us", "ns"}) {
        INFO(name);
        REQUIRE(rd::find_duration_unit(name, false));
        CHECK(rd::find_duration_unit(name, false)->name == name);
    }
    // Go's micro signs only where asked for; nothing else is a unit.
    CHECK(rd::find_duration_unit("\xC2\xB5s", true) == rd::find_duration_unit("us", false));
    CHECK(rd::find_duration_unit("\xCE\xBCs", true) == rd::find_duration_unit("us", false));
    CHECK_FALSE(rd::find_duration_unit("\xC2\xB5s", false));
    for (const char* bad : {"", "S", "sec", "d", "hs", " s", "s "}) {
        INFO(bad);
        CHECK_FALSE(rd::find_duration_unit(bad, true));
    }
    std::string_view unknown_unit = "5d";
    CHECK_FALSE(rd::take_duration_component(unknown_unit, true));
    CHECK(unknown_unit == "5d");
}

TEST_CASE("decimal durations: the saturated reading keeps the fraction to the nanosecond") {
    const auto ms = rd::parse_decimal(" 1500.123456789 ", 1'000'000);
    REQUIRE(ms);
    CHECK(ms->whole == 1500);
    CHECK(ms->fraction_ns == 123'456);  // digits finer than a nanosecond dropped
    CHECK(ms->has_fraction);
    const auto whole = rd::parse_decimal("42", 1'000'000'000);
    REQUIRE(whole);
    CHECK(whole->whole == 42);
    CHECK_FALSE(whole->has_fraction);
    const auto point_zero = rd::parse_decimal("42.0", 1'000'000'000);
    REQUIRE(point_zero);
    CHECK(point_zero->fraction_ns == 0);
    CHECK(point_zero->has_fraction);
    // The whole part: exact up to decimal_whole_max (19 digits and more), then saturated.
    CHECK(rd::parse_decimal("1500000000000000000", 1)->whole == 1'500'000'000'000'000'000);
    CHECK(rd::parse_decimal(std::to_string(rd::decimal_whole_max), 1)->whole == rd::decimal_whole_max);
    CHECK(rd::parse_decimal(std::string(30, '9'), 1)->whole == rd::decimal_whole_max);
    for (const char* bad : {"", " ", "1.", ".5", "1..5", "1.5.5", "-1", "+1", "1e3", "1 5", "5ms"}) {
        INFO(bad);
        CHECK_FALSE(rd::parse_decimal(bad, 1'000'000));
    }
}
