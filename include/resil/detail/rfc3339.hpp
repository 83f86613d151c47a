// resil/detail/rfc3339.hpp — an RFC 3339 date-time (§5.6) as an instant:
// "2025-08-21T12:40:59Z", "2025-08-21T14:40:59.250+02:00". Internals of
// resil/rate_limit_fields.hpp, which reads the resets Anthropic's API sends in this
// form (resil::parse_reset_timestamp).
//
// Constexpr and noexcept, on the string_view only: no C library time
// functions, no locale, no time zone database (the offset is in the text).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "http_date.hpp"

namespace resil::detail {

/// An instant: whole seconds since the Unix epoch, and nanoseconds into the
/// next second when the text had a fraction.
struct rfc3339_instant {
    std::int64_t seconds = 0;
    std::int64_t nanoseconds = 0;  ///< in [0, 10^9)
    bool has_fraction = false;
};

/// Exactly one date-time, nothing around it:
///   date-time      = full-date "T" full-time
///   full-date      = 4DIGIT "-" 2DIGIT "-" 2DIGIT
///   full-time      = 2DIGIT ":" 2DIGIT ":" 2DIGIT [ "." 1*DIGIT ] time-offset
///   time-offset    = "Z" / ( "+" / "-" ) 2DIGIT ":" 2DIGIT
/// "T" and "Z" in either letter case (§5.6, NOTE); fields range-checked as
/// HTTP-dates are (a leap second :60 reads as :59); fraction digits past
/// nanoseconds are dropped. "-00:00" (offset unknown) is read as UTC.
[[nodiscard]] constexpr std::optional<rfc3339_instant> parse_rfc3339_exact(std::string_view text) noexcept {
    date_cursor in{text};
    civil_time t;
    t.year = in.digits(4);
    in.literal("-");
    t.month = in.digits(2);
    in.literal("-");
    t.day = in.digits(2);
    if (in.peek() == 'T' || in.peek() == 't') {
        in.skip();
    } else {
        in.fail();
    }
    read_time_of_day(in, t);
    rfc3339_instant out;
    if (in.peek() == '.') {
        in.skip();
        if (!is_digit(in.peek())) in.fail();
        std::int64_t scale = 100'000'000;  // what the next digit is worth, in ns
        while (is_digit(in.peek())) {
            out.nanoseconds += static_cast<std::int64_t>(in.digits(1)) * scale;
            scale /= 10;  // 0 past the ninth digit: the rest is dropped
        }
        out.has_fraction = true;
    }
    std::int64_t offset_seconds = 0;
    const char zone = in.peek();
    if (zone == 'Z' || zone == 'z') {
        in.skip();
    } else if (zone == '+' || zone == '-') {
        in.skip();
        const unsigned hours = in.digits(2);
        in.literal(":");
        const unsigned minutes = in.digits(2);
        if (hours > 23 || minutes > 59) return std::nullopt;
        offset_seconds = (zone == '-' ? -1 : 1) * static_cast<std::int64_t>(hours * 3600 + minutes * 60);
    } else {
        in.fail();
    }
    if (!in.finished()) return std::nullopt;
    const auto local = to_sys_seconds(t);
    if (!local) return std::nullopt;
    // "12:00+02:00" is 10:00 UTC.
    out.seconds = local->time_since_epoch().count() - offset_seconds;
    return out;
}

}  // namespace resil::detail
