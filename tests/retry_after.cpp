#include <resil/retry_after.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using std::chrono::seconds;
using std::chrono::sys_seconds;
using std::chrono::system_clock;

namespace {

constexpr sys_seconds utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    using namespace std::chrono;
    return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

template <class Duration>
constexpr system_clock::time_point at(std::chrono::sys_time<Duration> instant) {
    return std::chrono::time_point_cast<system_clock::duration>(instant);
}

// The instant RFC 9110 uses in its examples, in all three forms.
constexpr std::string_view imf_date = "Sun, 06 Nov 1994 08:49:37 GMT";
constexpr std::string_view rfc850_date = "Sunday, 06-Nov-94 08:49:37 GMT";
constexpr std::string_view asctime_date = "Sun Nov  6 08:49:37 1994";
constexpr sys_seconds classic = utc(1994, 11, 6, 8, 49, 37);

// A deterministic generator (splitmix64), so any failing input reproduces.
struct splitmix64 {
    std::uint64_t state;
    std::uint64_t operator()() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>((*this)() % n); }
};

// Whatever the input, a value is within [0, retry_after_max].
bool in_range(std::optional<seconds> delay) {
    return !delay || (*delay >= 0s && *delay <= resil::retry_after_max);
}

}  // namespace

// Compile-time: the parser is constexpr, so these are proven by the compiler.
static_assert(resil::parse_retry_after("120", system_clock::time_point{}) == 120s);
static_assert(resil::parse_http_date(imf_date, system_clock::time_point{}) == classic);
static_assert(!resil::parse_retry_after("-5", system_clock::time_point{}));

TEST_CASE("retry-after: delay-seconds is read as whole seconds") {
    const auto now = at(utc(2026, 3, 1));
    CHECK(resil::parse_retry_after("0", now) == 0s);
    CHECK(resil::parse_retry_after("1", now) == 1s);
    CHECK(resil::parse_retry_after("120", now) == 120s);
    CHECK(resil::parse_retry_after("000120", now) == 120s);
    CHECK(resil::parse_retry_after("00000000000000000000000000007", now) == 7s);
    CHECK(resil::parse_retry_after(" 120", now) == 120s);
    CHECK(resil::parse_retry_after("120 \t", now) == 120s);
    CHECK(resil::parse_retry_after("\t 2 \t", now) == 2s);
}

TEST_CASE("retry-after: huge delay-seconds saturate at 2^31 s and never overflow") {
    const auto now = at(utc(2026, 3, 1));
    CHECK(resil::retry_after_max == seconds{std::int64_t{1} << 31});
    CHECK(resil::parse_retry_after("2147483647", now) == seconds{2147483647});
    CHECK(resil::parse_retry_after("2147483648", now) == resil::retry_after_max);
    CHECK(resil::parse_retry_after("2147483649", now) == resil::retry_after_max);
    CHECK(resil::parse_retry_after("9223372036854775807", now) == resil::retry_after_max);   // 2^63 - 1
    CHECK(resil::parse_retry_after("9223372036854775808", now) == resil::retry_after_max);   // 2^63
    CHECK(resil::parse_retry_after("18446744073709551616", now) == resil::retry_after_max);  // 2^64
    CHECK(resil::parse_retry_after("99999999999999999999999", now) == resil::retry_after_max);
    const std::string ten_thousand_nines(10000, '9');
    CHECK(resil::parse_retry_after(ten_thousand_nines, now) == resil::retry_after_max);
    // Saturation does not stop validation: a bad byte after many digits still rejects.
    CHECK_FALSE(resil::parse_retry_after(ten_thousand_nines + "x", now));
}

TEST_CASE("retry-after: the three HTTP-date forms of one instant give the same delay") {
    const auto now = at(classic - 90s);
    CHECK(resil::parse_http_date(imf_date, now) == classic);
    CHECK(resil::parse_http_date(rfc850_date, now) == classic);
    CHECK(resil::parse_http_date(asctime_date, now) == classic);
    CHECK(resil::parse_retry_after(imf_date, now) == 90s);
    CHECK(resil::parse_retry_after(rfc850_date, now) == 90s);
    CHECK(resil::parse_retry_after(asctime_date, now) == 90s);
    // asctime_date also allows a two-digit day, and any day above 9 has one.
    CHECK(resil::parse_http_date("Sun Nov 06 08:49:37 1994", now) == classic);
    CHECK(resil::parse_http_date("Wed Nov 16 08:49:37 1994", now) == utc(1994, 11, 16, 8, 49, 37));
}

TEST_CASE("retry-after: every month name and day name is recognised") {
    constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const auto now = at(utc(2026, 1, 1));
    for (unsigned m = 1; m <= 12; ++m) {
        const std::string value = "Mon, 01 " + std::string{months[m - 1]} + " 2024 12:00:00 GMT";
        CHECK(resil::parse_http_date(value, now) == utc(2024, m, 1, 12));
    }
    for (std::string_view name : {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}) {
        CHECK(resil::parse_http_date(std::string{name} + ", 06 Nov 1994 08:49:37 GMT", now) == classic);
        CHECK(resil::parse_http_date(std::string{name} + " Nov  6 08:49:37 1994", now) == classic);
    }
    for (std::string_view name : {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}) {
        CHECK(resil::parse_http_date(std::string{name} + ", 06-Nov-94 08:49:37 GMT", now) == classic);
    }
}

TEST_CASE("retry-after: a date at or before now gives zero") {
    CHECK(resil::parse_retry_after(imf_date, at(classic)) == 0s);
    CHECK(resil::parse_retry_after(imf_date, at(classic + 1s)) == 0s);
    CHECK(resil::parse_retry_after(imf_date, at(classic + 1ns)) == 0s);
    CHECK(resil::parse_retry_after(imf_date, at(utc(2026, 3, 1))) == 0s);
    CHECK(resil::parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT", at(utc(2026, 3, 1))) == 0s);
}

TEST_CASE("retry-after: a sub-second now rounds the delay up") {
    CHECK(resil::parse_retry_after(imf_date, at(classic - 10s + 300ms)) == 10s);  // 9.7 s → 10 s
    CHECK(resil::parse_retry_after(imf_date, at(classic - 1ns)) == 1s);
    CHECK(resil::parse_retry_after(imf_date, at(classic - 1s)) == 1s);
    CHECK(resil::parse_retry_after(imf_date, at(classic - 1s - 1ns)) == 2s);
    CHECK(resil::parse_retry_after(imf_date, at(classic - 999ms)) == 1s);
}

TEST_CASE("retry-after: a date far ahead saturates at retry_after_max") {
    const auto now = at(utc(2026, 3, 1));
    CHECK(resil::parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now) == resil::retry_after_max);
    CHECK(resil::parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT", now) == utc(9999, 12, 31, 23, 59, 59));
    // Just below and just above the cap.
    const auto below = utc(2026, 3, 1) + resil::retry_after_max - 1s;
    const auto below_ymd = std::chrono::year_month_day{std::chrono::floor<std::chrono::days>(below)};
    REQUIRE(below_ymd == std::chrono::year{2094} / 3 / 19);  // 2^31 s ≈ 68 years
    const auto below_time = std::chrono::hh_mm_ss{below - std::chrono::floor<std::chrono::days>(below)};
    REQUIRE(below_time.hours() == 3h);
    REQUIRE(below_time.minutes() == 14min);
    REQUIRE(below_time.seconds() == 7s);
    CHECK(resil::parse_retry_after("Fri, 19 Mar 2094 03:14:07 GMT", now) == resil::retry_after_max - 1s);
    CHECK(resil::parse_retry_after("Fri, 19 Mar 2094 03:14:08 GMT", now) == resil::retry_after_max);
    CHECK(resil::parse_retry_after("Fri, 19 Mar 2094 03:14:09 GMT", now) == resil::retry_after_max);
}

TEST_CASE("retry-after: leap days follow the Gregorian rule") {
    const auto now = at(utc(2026, 3, 1));
    CHECK(resil::parse_http_date("Tue, 29 Feb 2000 00:00:00 GMT", now) == utc(2000, 2, 29));
    CHECK(resil::parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT", now) == utc(2024, 2, 29));
    CHECK_FALSE(resil::parse_http_date("Thu, 29 Feb 1900 00:00:00 GMT", now));  // divisible by 100
    CHECK_FALSE(resil::parse_http_date("Wed, 29 Feb 2023 00:00:00 GMT", now));
    CHECK_FALSE(resil::parse_http_date("Tue Feb 29 00:00:00 2023", now));
    CHECK_FALSE(resil::parse_http_date("Wednesday, 29-Feb-23 00:00:00 GMT", now));
    CHECK(resil::parse_http_date("Thursday, 29-Feb-24 00:00:00 GMT", now) == utc(2024, 2, 29));
    CHECK_FALSE(resil::parse_http_date("Thu, 30 Feb 2024 00:00:00 GMT", now));
    // The last day of every month is accepted and the next one is not.
    constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    constexpr std::array<unsigned, 12> last{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (std::size_t m = 0; m < 12; ++m) {
        const auto date = [&](unsigned d) {
            return "Mon, " + std::to_string(d) + " " + std::string{months[m]} + " 2025 00:00:00 GMT";
        };
        CHECK(resil::parse_http_date(date(last[m]), now) == utc(2025, static_cast<unsigned>(m + 1), last[m]));
        CHECK_FALSE(resil::parse_http_date(date(last[m] + 1), now));
    }
}

TEST_CASE("retry-after: a leap second is read as :59") {
    const auto now = at(utc(2016, 12, 31, 23, 59, 0));
    CHECK(resil::parse_http_date("Sat, 31 Dec 2016 23:59:60 GMT", now) == utc(2016, 12, 31, 23, 59, 59));
    CHECK(resil::parse_retry_after("Sat, 31 Dec 2016 23:59:60 GMT", now) == 59s);
    CHECK_FALSE(resil::parse_http_date("Sat, 31 Dec 2016 23:59:61 GMT", now));
}

TEST_CASE("retry-after: RFC 850 two-digit years stay within 50 years of now") {
    SECTION("now in 2026: 00 is 2000, 99 is 1999, the flip falls between 76 and 77") {
        const auto now = at(utc(2026, 6, 15));
        CHECK(resil::parse_http_date("Saturday, 01-Jan-00 00:00:00 GMT", now) == utc(2000, 1, 1));
        CHECK(resil::parse_http_date("Friday, 31-Dec-99 23:59:59 GMT", now) == utc(1999, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Thursday, 01-Jan-26 00:00:00 GMT", now) == utc(2026, 1, 1));
        CHECK(resil::parse_http_date("Wednesday, 01-Jan-76 00:00:00 GMT", now) == utc(2076, 1, 1));  // +50
        CHECK(resil::parse_http_date("Saturday, 01-Jan-77 00:00:00 GMT", now) == utc(1977, 1, 1));   // +51 → past
        CHECK(resil::parse_retry_after("Friday, 31-Dec-99 23:59:59 GMT", now) == 0s);
    }
    SECTION("now in 2060: 99 is 2099 (39 years ahead), the flip falls between 10 and 11") {
        const auto now = at(utc(2060, 6, 15));
        CHECK(resil::parse_http_date("Thursday, 31-Dec-99 23:59:59 GMT", now) == utc(2099, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Wednesday, 01-Jan-10 00:00:00 GMT", now) == utc(2110, 1, 1));  // +50
        CHECK(resil::parse_http_date("Saturday, 01-Jan-11 00:00:00 GMT", now) == utc(2011, 1, 1));   // +51 → past
        CHECK(resil::parse_http_date("Thursday, 01-Jan-60 00:00:00 GMT", now) == utc(2060, 1, 1));
    }
    SECTION("late in 2099, 00 is the coming year, not a century ago") {
        const auto now = at(utc(2099, 12, 31, 23, 59, 50));
        CHECK(resil::parse_http_date("Friday, 01-Jan-00 00:00:00 GMT", now) == utc(2100, 1, 1));
        CHECK(resil::parse_retry_after("Friday, 01-Jan-00 00:00:00 GMT", now) == 10s);
    }
    SECTION("the year of now is taken in UTC, before the epoch too") {
        const auto now = at(utc(1969, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Tuesday, 01-Jan-19 00:00:00 GMT", now) == utc(2019, 1, 1));  // 1969 + 50
        CHECK(resil::parse_http_date("Thursday, 01-Jan-20 00:00:00 GMT", now) == utc(1920, 1, 1));
    }
}

TEST_CASE("retry-after: an RFC 850 date is in the past century once it is more than 50 years ahead, to the second") {
    SECTION("the boundary is now + 50 years to the second, not the year now + 50") {
        const auto now = at(utc(2026, 6, 15, 12, 0, 0));
        CHECK(resil::parse_http_date("Monday, 15-Jun-76 11:59:59 GMT", now) == utc(2076, 6, 15, 11, 59, 59));
        CHECK(resil::parse_http_date("Monday, 15-Jun-76 12:00:00 GMT", now) == utc(2076, 6, 15, 12, 0, 0));  // exactly +50 y
        CHECK(resil::parse_http_date("Monday, 15-Jun-76 12:00:01 GMT", now) == utc(1976, 6, 15, 12, 0, 1));  // 1 s beyond
        CHECK(resil::parse_http_date("Tuesday, 16-Jun-76 00:00:00 GMT", now) == utc(1976, 6, 16));
        CHECK(resil::parse_http_date("Thursday, 31-Dec-76 23:59:59 GMT", now) == utc(1976, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Sunday, 14-Jun-76 23:59:59 GMT", now) == utc(2076, 6, 14, 23, 59, 59));
        CHECK(resil::parse_http_date("Wednesday, 01-Jan-76 00:00:00 GMT", now) == utc(2076, 1, 1));
        CHECK(resil::parse_retry_after("Monday, 15-Jun-76 12:00:01 GMT", now) == 0s);  // long past
    }
    SECTION("a fraction of a second in now counts: the date must be strictly beyond now + 50 years") {
        const auto now = at(utc(2026, 6, 15, 12, 0, 0)) + 500ms;
        CHECK(resil::parse_http_date("Monday, 15-Jun-76 12:00:00 GMT", now) == utc(2076, 6, 15, 12, 0, 0));
        CHECK(resil::parse_http_date("Monday, 15-Jun-76 12:00:01 GMT", now) == utc(1976, 6, 15, 12, 0, 1));
    }
    SECTION("at the turn of a year") {
        const auto now = at(utc(2026, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Thursday, 31-Dec-76 23:59:59 GMT", now) == utc(2076, 12, 31, 23, 59, 59));
        CHECK(resil::parse_http_date("Thursday, 31-Dec-76 23:59:60 GMT", now) == utc(1976, 12, 31, 23, 59, 59));  // leap second
        CHECK(resil::parse_http_date("Friday, 01-Jan-77 00:00:00 GMT", now) == utc(1977, 1, 1));
        const auto new_year = at(utc(2027, 1, 1));
        CHECK(resil::parse_http_date("Friday, 01-Jan-77 00:00:00 GMT", new_year) == utc(2077, 1, 1));
        CHECK(resil::parse_http_date("Friday, 01-Jan-77 00:00:01 GMT", new_year) == utc(1977, 1, 1, 0, 0, 1));
    }
    SECTION("on 29 February, 50 years later has none: 28 February is ahead of it, 1 March beyond") {
        const auto now = at(utc(2028, 2, 29, 6, 0, 0));
        CHECK(resil::parse_http_date("Monday, 28-Feb-78 23:59:59 GMT", now) == utc(2078, 2, 28, 23, 59, 59));
        CHECK(resil::parse_http_date("Tuesday, 01-Mar-78 00:00:00 GMT", now) == utc(1978, 3, 1));
    }
}

TEST_CASE("retry-after: the weekday name is not checked against the date") {
    const auto now = at(utc(2026, 3, 1));
    // 6 Nov 1994 was a Sunday; a wrong but valid name does not change the instant.
    CHECK(resil::parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT", now) == classic);
    CHECK(resil::parse_http_date("Friday, 06-Nov-94 08:49:37 GMT", now) == classic);
    CHECK(resil::parse_http_date("Wed Nov  6 08:49:37 1994", now) == classic);
}

TEST_CASE("retry-after: malformed values are rejected") {
    const auto now = at(utc(2026, 3, 1));
    constexpr std::string_view malformed[] = {
        // empty and blank
        "", " ", "\t", " \t ",
        // delay-seconds: signs, fractions, exponents, inner spaces, garbage
        "+5", "-5", "-0", "+0", "1.5", "1.", ".5", "1,5", "120abc", "abc120", "1 2", "12 0",
        "0x10", "1e3", "12s", "12\n", "\n12", "12\r", "12\r\n", "\v12", "12\f",
        "\xef\xbc\x91\xef\xbc\x92",  // full-width "12"
        "\xd9\xa1\xd9\xa2",          // Arabic-Indic "12"
        "5, 6", "∞", "NaN", "inf", "null", "\"120\"", "'5'",
        // IMF-fixdate: case
        "sun, 06 Nov 1994 08:49:37 GMT", "SUN, 06 Nov 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 NOV 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 gmt", "Sun, 06 Nov 1994 08:49:37 Gmt",
        // IMF-fixdate: zone
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000", "Sun, 06 Nov 1994 08:49:37 Z",
        "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 GMT+1", "Sun, 06 Nov 1994 08:49:37 GMTx",
        // IMF-fixdate: layout
        "Sun 06 Nov 1994 08:49:37 GMT", "Sun,06 Nov 1994 08:49:37 GMT", "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 01994 08:49:37 GMT",
        "Sun, 06-Nov-1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 08.49.37 GMT", "Sun, 06 Nov 1994 08:49:37  GMT", "Sun, 06 Nov 1994\t08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT GMT", "Sun, 06 November 1994 08:49:37 GMT", "06 Nov 1994 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT", "Sux, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT",
        "Sun, 0x Nov 1994 08:49:37 GMT", "Sun, 06 Nov 199x 08:49:37 GMT", "Sun, +6 Nov 1994 08:49:37 GMT",
        // IMF-fixdate: ranges
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 32 Dec 1994 08:49:37 GMT",
        "Sun, 99 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 99:99:99 GMT",
        // RFC 850
        "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sunday, 06 Nov 94 08:49:37 GMT",
        "sunday, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37", "Sunday, 06-Nov-94 08:49:37 UTC",
        "Sunday, 6-Nov-94 08:49:37 GMT", "Sunday 06-Nov-94 08:49:37 GMT", "Sundy, 06-Nov-94 08:49:37 GMT",
        "Sunday, 31-Apr-94 08:49:37 GMT", "Sunday, 06-Nov-9 08:49:37 GMT", "Sunday,06-Nov-94 08:49:37 GMT",
        // asctime_date
        "Sun Nov 6 08:49:37 1994", "Sun Nov   6 08:49:37 1994", "Sun Nov  6 08:49:37 94", "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Nov  6 08:49:37", "Sunday Nov  6 08:49:37 1994", "sun Nov  6 08:49:37 1994", "Sun nov  6 08:49:37 1994",
        "Sun Nov  0 08:49:37 1994", "Sun Nov 31 08:49:37 1994", "Sun Nov\t 6 08:49:37 1994", "Sun Nov  6  08:49:37 1994",
        "Sun Nov  x 08:49:37 1994", "Sun  Nov  6 08:49:37 1994", "Sun, Nov  6 08:49:37 1994",
        // other shapes a server might send
        "1994-11-06T08:49:37Z", "Sun, 06 Nov 1994 08:49:37 GMT, 120",
    };
    for (const std::string_view value : malformed) {
        INFO("value: \"" << std::string{value} << '"');
        CHECK_FALSE(resil::parse_retry_after(value, now));
        CHECK_FALSE(resil::parse_http_date(value, now));
    }
}

TEST_CASE("retry-after: an embedded NUL byte is malformed, not a terminator") {
    const auto now = at(utc(2026, 3, 1));
    using namespace std::string_view_literals;
    CHECK_FALSE(resil::parse_retry_after("12\0"sv, now));
    CHECK_FALSE(resil::parse_retry_after("12\0" "34"sv, now));
    CHECK_FALSE(resil::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT\0"sv, now));
    CHECK_FALSE(resil::parse_retry_after("Sun, 06 Nov 1994\0 08:49:37 GMT"sv, now));
}

TEST_CASE("retry-after: surrounding whitespace is trimmed around dates too") {
    const auto now = at(classic - 5s);
    CHECK(resil::parse_retry_after(" \tSun, 06 Nov 1994 08:49:37 GMT\t ", now) == 5s);
    CHECK(resil::parse_http_date("  Sun Nov  6 08:49:37 1994 ", now) == classic);
    CHECK(resil::parse_http_date("\tSunday, 06-Nov-94 08:49:37 GMT", now) == classic);
}

TEST_CASE("retry-after: the time zone of the process does not matter") {
    const auto now = at(classic - 90s);
    const auto before_imf = resil::parse_retry_after(imf_date, now);
    const auto before_850 = resil::parse_http_date(rfc850_date, now);
    const auto before_asc = resil::parse_http_date(asctime_date, now);
    REQUIRE(before_imf == 90s);

    const char* saved = std::getenv("TZ");
    const std::string previous = saved ? saved : "";
    // POSIX rule strings need no zone database: UTC-14 and UTC+12, both with
    // daylight saving, far from UTC in either direction.
    for (const char* zone : {"LINT-14", "AoE12ADT,M3.2.0,M11.1.0", "NZST-12NZDT,M9.5.0,M4.1.0/3"}) {
        INFO("TZ=" << zone);
        REQUIRE(::setenv("TZ", zone, 1) == 0);
        ::tzset();
        // The zone is really in force: local and UTC views of one instant differ.
        const std::time_t probe = 0;
        std::tm local{};
        std::tm universal{};
        REQUIRE(::localtime_r(&probe, &local) != nullptr);
        REQUIRE(::gmtime_r(&probe, &universal) != nullptr);
        REQUIRE(local.tm_hour != universal.tm_hour);

        CHECK(resil::parse_retry_after(imf_date, now) == before_imf);
        CHECK(resil::parse_http_date(rfc850_date, now) == before_850);
        CHECK(resil::parse_http_date(asctime_date, now) == before_asc);
        CHECK(resil::parse_http_date("Sunday, 27-Mar-61 01:30:00 GMT", at(utc(2026, 1, 1))) == utc(2061, 3, 27, 1, 30));
    }
    if (saved) {
        ::setenv("TZ", previous.c_str(), 1);
    } else {
        ::unsetenv("TZ");
    }
    ::tzset();
}

TEST_CASE("retry-after: the calendar arithmetic agrees with std::chrono") {
    using namespace std::chrono;
    // Every day from 1600 to 2400 and the first of every month from year 0 to 9999.
    for (auto d = sys_days{year{1600} / 1 / 1}; d < sys_days{year{2400} / 1 / 1}; d += days{1}) {
        const year_month_day ymd{d};
        const auto y = static_cast<int>(ymd.year());
        const auto count = static_cast<std::int64_t>(d.time_since_epoch().count());
        if (resil::detail::days_from_civil(y, static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day())) !=
                count ||
            resil::detail::year_from_days(count) != y) {
            FAIL("calendar mismatch at " << y << '-' << static_cast<unsigned>(ymd.month()) << '-'
                                         << static_cast<unsigned>(ymd.day()));
        }
    }
    for (int y = 0; y <= 9999; ++y) {
        for (unsigned m = 1; m <= 12; ++m) {
            const sys_days d{year{y} / month{m} / day{1}};
            const auto count = static_cast<std::int64_t>(d.time_since_epoch().count());
            if (resil::detail::days_from_civil(y, m, 1) != count || resil::detail::year_from_days(count) != y ||
                resil::detail::year_from_days(count - 1) != (m == 1 ? y - 1 : y) ||
                resil::detail::days_in_month(y, m) !=
                    static_cast<unsigned>(year_month_day_last{year{y} / month{m} / last}.day())) {
                FAIL("calendar mismatch at " << y << '-' << m);
            }
        }
    }
    CHECK(resil::detail::days_from_civil(1970, 1, 1) == 0);
    CHECK(resil::detail::year_from_days(-1) == 1969);
}

TEST_CASE("retry-after: every truncation of a valid value is rejected or still valid") {
    const auto now = at(utc(2026, 3, 1));
    for (const std::string_view value : {imf_date, rfc850_date, asctime_date}) {
        for (std::size_t n = 0; n < value.size(); ++n) {
            const auto prefix = value.substr(0, n);
            INFO("prefix: \"" << std::string{prefix} << '"');
            CHECK_FALSE(resil::parse_retry_after(prefix, now));
            CHECK_FALSE(resil::parse_http_date(prefix, now));
            // A truncated copy with no bytes after it, so ASan sees any over-read.
            const std::vector<char> exact(prefix.begin(), prefix.end());
            CHECK_FALSE(resil::parse_retry_after(std::string_view{exact.data(), exact.size()}, now));
        }
    }
}

TEST_CASE("retry-after: random and mutated inputs never crash and stay in range") {
    const auto now = at(utc(2026, 3, 1, 12, 0, 0) + 250ms);
    splitmix64 rng{0x5eed};
    constexpr std::string_view alphabet = "0123456789 \t,:-SunMonTueWedThuFriSatJanFebMarAprMayJunJulAugSepOctNov"
                                          "DecGMTdayesrni";
    constexpr std::array<std::string_view, 6> valid{
        imf_date, rfc850_date, asctime_date, "Fri, 31 Dec 9999 23:59:59 GMT", "Tuesday, 29-Feb-00 00:00:00 GMT", "4294967296"};
    std::size_t accepted = 0;
    for (int round = 0; round < 100000; ++round) {
        std::vector<char> bytes;
        switch (rng.below(3)) {
            case 0: {  // arbitrary bytes
                bytes.resize(rng.below(40));
                for (auto& b : bytes) b = static_cast<char>(rng() & 0xff);
                break;
            }
            case 1: {  // bytes from the grammar's own alphabet
                bytes.resize(rng.below(40));
                for (auto& b : bytes) b = alphabet[rng.below(alphabet.size())];
                break;
            }
            default: {  // a valid value with a few bytes changed, and maybe cut short
                const auto base = valid[rng.below(valid.size())];
                bytes.assign(base.begin(), base.end());
                const auto edits = 1 + rng.below(3);
                for (std::size_t e = 0; e < edits; ++e) {
                    const char replacement =
                        rng.below(2) == 0 ? static_cast<char>(rng() & 0xff) : alphabet[rng.below(alphabet.size())];
                    bytes[rng.below(bytes.size())] = replacement;
                }
                if (rng.below(4) == 0) bytes.resize(rng.below(bytes.size() + 1));
                break;
            }
        }
        const std::string_view value{bytes.data(), bytes.size()};
        const auto delay = resil::parse_retry_after(value, now);
        const auto date = resil::parse_http_date(value, now);
        if (delay) ++accepted;
        INFO("round " << round);
        REQUIRE(in_range(delay));
        // A value that parses as a date gives the delay computed from that date.
        if (date) {
            const auto expected = *date <= sys_seconds{utc(2026, 3, 1, 12)}
                                      ? 0s
                                      : std::min(*date - utc(2026, 3, 1, 12), resil::retry_after_max);
            REQUIRE(delay == expected);
        }
        // Trimming is the only whitespace tolerance: padding changes nothing.
        const std::string padded = " \t" + std::string{value} + "\t ";
        REQUIRE(resil::parse_retry_after(padded, now) == delay);
    }
    // The mutations keep some inputs valid, so the checks above saw values too.
    CHECK(accepted > 100);
}
