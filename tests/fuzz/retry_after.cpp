// Fuzz harness: resil::parse_retry_after and resil::parse_http_date.
//
// Input: 8 bytes choosing `now` (seconds within ±250 years of 1970 plus a
// fraction), then the header value. Properties, for every input:
// - neither parser throws (both are noexcept: a throw would terminate);
// - a delay is within [0, retry_after_max];
// - delay-seconds (digits only, OWS around) is the number, saturated;
// - a parsed HTTP-date gives the delay when - floor(now), clamped;
// - OWS around the value changes nothing;
// - a parsed date is a valid calendar date, and formatting it as an
//   IMF-fixdate parses back to the same instant;
// - an RFC 850 date lies no later than now + 50 years and no earlier than
//   now - 50 years (RFC 9110 §5.6.7), checked with std::chrono's calendar
//   (exactly now - 50 years only for a leap second, which reads as :59).
#include <resil/retry_after.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"

namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;
using std::chrono::system_clock;

std::string imf_fixdate(sys_seconds t) {
    using namespace std::chrono;
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss hms{t - day};
    const weekday wd{day};
    static constexpr std::array<const char*, 7> names{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr std::array<const char*, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%s, %02u %s %04d %02d:%02d:%02d GMT", names[wd.c_encoding()],
                  static_cast<unsigned>(ymd.day()), months[static_cast<unsigned>(ymd.month()) - 1],
                  static_cast<int>(ymd.year()), static_cast<int>(hms.hours().count()),
                  static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()));
    return buffer;
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

// The (year, month, day, time) of `t` + `years` years, as one comparable number
// that needs no valid date (29 February plus 50 years stays "2-29").
std::int64_t calendar_key(sys_seconds t, int years) {
    using namespace std::chrono;
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const auto second_of_day = (t - day).count();
    return ((static_cast<std::int64_t>(static_cast<int>(ymd.year()) + years) * 16 +
             static_cast<unsigned>(ymd.month())) * 32 + static_cast<unsigned>(ymd.day())) * 86400 + second_of_day;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8) return 0;
    std::uint64_t bits = 0;
    std::memcpy(&bits, data, 8);
    // Within ±250 years of 1970, so now + 50 years still fits system_clock's
    // nanoseconds (±292 years) wherever the standard library counts in them.
    constexpr std::int64_t span = 250LL * 366 * 86400;
    const auto whole = static_cast<std::int64_t>(bits % static_cast<std::uint64_t>(2 * span + 1)) - span;
    const auto fraction = static_cast<std::int64_t>((bits >> 40) % 1'000'000'000);
    const auto now = system_clock::time_point{} +
                     std::chrono::duration_cast<system_clock::duration>(seconds{whole} + std::chrono::nanoseconds{fraction});
    const std::string_view value = resil_fuzz::text_of(data + 8, size - 8);

    const auto delay = resil::parse_retry_after(value, now);
    const auto date = resil::parse_http_date(value, now);
    if (delay) FUZZ_CHECK(*delay >= seconds::zero() && *delay <= resil::retry_after_max);

    const auto text = trimmed(value);
    const bool all_digits = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    if (all_digits) {
        std::int64_t expected = 0;
        for (const char c : text) {
            expected = expected * 10 + (c - '0');
            if (expected >= resil::retry_after_max.count()) {
                expected = resil::retry_after_max.count();
                break;
            }
        }
        FUZZ_CHECK(delay && delay->count() == expected);
        FUZZ_CHECK(!date);
    } else {
        FUZZ_CHECK(delay.has_value() == date.has_value());
    }

    // OWS around the value is ignored.
    const std::string padded = " \t" + std::string(value) + "\t ";
    FUZZ_CHECK(resil::parse_retry_after(padded, now) == delay);
    FUZZ_CHECK(resil::parse_http_date(padded, now) == date);

    if (date) {
        const auto whole_now = std::chrono::floor<seconds>(now);
        auto expected = *date - whole_now;
        if (expected < seconds::zero()) expected = seconds::zero();
        if (expected > resil::retry_after_max) expected = resil::retry_after_max;
        FUZZ_CHECK(delay && *delay == expected);

        // The same instant, written as an IMF-fixdate, reads back (years 0..9999).
        const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(*date)};
        FUZZ_CHECK(ymd.ok());
        const std::string imf = imf_fixdate(*date);
        FUZZ_CHECK(resil::parse_http_date(imf, now) == date);

        // RFC 850 (a long day name, so not ',' or ' ' at offset 3): the
        // two-digit year puts the date in [now - 50 y, now + 50 y].
        if (text.size() > 3 && text[3] != ',' && text[3] != ' ') {
            const auto at = calendar_key(*date, 0);
            FUZZ_CHECK(at <= calendar_key(whole_now, 50));
            FUZZ_CHECK(at >= calendar_key(whole_now, -50));
        }
    }
    return 0;
}
