// resil/detail/http_date.hpp — the HTTP-date grammar (RFC 9110 §5.6.7) and the
// proleptic Gregorian arithmetic under it. Internals of resil/retry_after.hpp:
// users call resil::parse_http_date and resil::parse_retry_after instead.
//
// Everything here is constexpr and noexcept, reads only the string_view it is
// given, and never touches the C library's time functions (mktime, timegm,
// strptime), the locale or the TZ environment: the same bytes give the same
// instant on every machine.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "http_text.hpp"

namespace resil::detail {

[[nodiscard]] constexpr bool is_leap_year(std::int64_t year) noexcept {
    return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

/// Days in `month` (1..12) of `year`; 0 for a month out of range.
[[nodiscard]] constexpr unsigned days_in_month(std::int64_t year, unsigned month) noexcept {
    constexpr std::array<unsigned, 12> days{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12) return 0;
    if (month == 2 && is_leap_year(year)) return 29;
    return days[month - 1];
}

/// Days from 1970-01-01 to a valid proleptic Gregorian date (Howard Hinnant's
/// days_from_civil, on 64-bit years so no year the parser can produce overflows).
[[nodiscard]] constexpr std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) noexcept {
    if (month <= 2) --year;  // count years from March, so the leap day ends a year
    const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
    const auto year_of_era = static_cast<std::uint64_t>(year - era * 400);                     // [0, 399]
    const std::uint64_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;  // [0, 365]
    const std::uint64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + static_cast<std::int64_t>(day_of_era) - 719468;
}

/// The proleptic Gregorian year holding day `days` since 1970-01-01 (the year
/// part of Hinnant's civil_from_days). Valid for |days| below 2^60.
[[nodiscard]] constexpr std::int64_t year_from_days(std::int64_t days) noexcept {
    days += 719468;
    const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const auto day_of_era = static_cast<std::uint64_t>(days - era * 146097);  // [0, 146096]
    const std::uint64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;  // [0, 399]
    const std::uint64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const std::uint64_t shifted_month = (5 * day_of_year + 2) / 153;  // 0 = March
    const std::int64_t year = static_cast<std::int64_t>(year_of_era) + era * 400;
    return shifted_month >= 10 ? year + 1 : year;  // January and February close the shifted year
}

/// The one year with last two digits `two_digits` in
/// [reference_year - 49, reference_year + 50]. The window slides with the
/// clock rather than snapping to the current century: with a clock late in
/// 2099, "00" is the coming year 2100, not one 99 years gone. The year
/// reference_year + 50 is only a first guess; see rfc850_year.
[[nodiscard]] constexpr std::int64_t expand_two_digit_year(unsigned two_digits, std::int64_t reference_year) noexcept {
    const std::int64_t lowest = reference_year - 49;
    const std::int64_t offset = ((static_cast<std::int64_t>(two_digits) - lowest) % 100 + 100) % 100;
    return lowest + offset;
}

/// Reads the fixed-layout HTTP-date forms left to right. Every read checks
/// bounds first; a failed read leaves the cursor failed, so a parse is a plain
/// sequence of reads followed by one check.
class date_cursor {
public:
    constexpr explicit date_cursor(std::string_view text) noexcept : text_(text) {}

    /// True when every read succeeded and the whole text was consumed.
    [[nodiscard]] constexpr bool finished() const noexcept { return ok_ && pos_ == text_.size(); }
    [[nodiscard]] constexpr bool ok() const noexcept { return ok_; }

    constexpr void literal(std::string_view expected) noexcept {
        if (ok_ && text_.substr(pos_).starts_with(expected)) {
            pos_ += expected.size();
        } else {
            ok_ = false;
        }
    }

    /// Exactly `count` decimal digits (count ≤ 4, so no overflow).
    constexpr unsigned digits(std::size_t count) noexcept {
        unsigned value = 0;
        if (!ok_ || text_.size() - pos_ < count) {
            ok_ = false;
            return 0;
        }
        for (std::size_t i = 0; i < count; ++i) {
            const char c = text_[pos_ + i];
            if (!is_digit(c)) {
                ok_ = false;
                return 0;
            }
            value = value * 10 + static_cast<unsigned>(c - '0');
        }
        pos_ += count;
        return value;
    }

    /// The next byte, or NUL at the end or after a failed read.
    [[nodiscard]] constexpr char peek() const noexcept { return ok_ && pos_ < text_.size() ? text_[pos_] : '\0'; }

    /// Moves past one byte (peek() said which).
    constexpr void skip() noexcept {
        if (ok_ && pos_ < text_.size()) {
            ++pos_;
        } else {
            ok_ = false;
        }
    }

    /// Fails the read from here on: a byte peek() showed is not one that fits.
    constexpr void fail() noexcept { ok_ = false; }

    /// One of `names` (case-sensitive, as RFC 9110 §5.6.7 requires); returns
    /// its index plus one, or 0 and fails. Names must not prefix one another.
    template <std::size_t N>
    constexpr unsigned one_of(const std::array<std::string_view, N>& names) noexcept {
        if (ok_) {
            const auto rest = text_.substr(pos_);
            for (std::size_t i = 0; i < N; ++i) {
                if (rest.starts_with(names[i])) {
                    pos_ += names[i].size();
                    return static_cast<unsigned>(i + 1);
                }
            }
        }
        ok_ = false;
        return 0;
    }

private:
    std::string_view text_;
    std::size_t pos_ = 0;
    bool ok_ = true;
};

inline constexpr std::array<std::string_view, 7> short_day_names{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
inline constexpr std::array<std::string_view, 7> long_day_names{"Monday", "Tuesday",  "Wednesday", "Thursday",
                                                                "Friday", "Saturday", "Sunday"};
inline constexpr std::array<std::string_view, 12> month_names{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct civil_time {
    std::int64_t year = 0;
    unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

/// True when `a`'s month, day and time of day come after `b`'s (years ignored).
[[nodiscard]] constexpr bool later_in_year(const civil_time& a, const civil_time& b) noexcept {
    if (a.month != b.month) return a.month > b.month;
    if (a.day != b.day) return a.day > b.day;
    if (a.hour != b.hour) return a.hour > b.hour;
    if (a.minute != b.minute) return a.minute > b.minute;
    return a.second > b.second;
}

/// RFC 9110 §5.6.7: an rfc850-date whose two-digit year "appears to be more
/// than 50 years in the future" is in the past century. `t` holds the date's
/// fields (its year unset) and `now` the clock in UTC; the comparison is on
/// the full date, not the year alone: with now at 2026-06-15 12:00:00,
/// "15-Jun-76 12:00:00" is 2076 (exactly 50 years ahead) and
/// "15-Jun-76 12:00:01" is 1976. Comparing fields rather than adding 50 years
/// to `now` keeps 29 February (now + 50 years may not have one) exact.
[[nodiscard]] constexpr std::int64_t rfc850_year(unsigned two_digits, const civil_time& t,
                                                 const civil_time& now) noexcept {
    const std::int64_t year = expand_two_digit_year(two_digits, now.year);
    return year == now.year + 50 && later_in_year(t, now) ? year - 100 : year;
}

// time-of-day = hour ":" minute ":" second
constexpr void read_time_of_day(date_cursor& in, civil_time& t) noexcept {
    t.hour = in.digits(2);
    in.literal(":");
    t.minute = in.digits(2);
    in.literal(":");
    t.second = in.digits(2);
}

// IMF-fixdate = day-name "," SP day SP month SP year SP time-of-day SP "GMT"
//   e.g. "Sun, 06 Nov 1994 08:49:37 GMT"
[[nodiscard]] constexpr std::optional<civil_time> read_imf_fixdate(std::string_view text) noexcept {
    date_cursor in{text};
    civil_time t;
    in.one_of(short_day_names);
    in.literal(", ");
    t.day = in.digits(2);
    in.literal(" ");
    t.month = in.one_of(month_names);
    in.literal(" ");
    t.year = in.digits(4);
    in.literal(" ");
    read_time_of_day(in, t);
    in.literal(" GMT");
    if (!in.finished()) return std::nullopt;
    return t;
}

// rfc850-date = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP "GMT"
//   e.g. "Sunday, 06-Nov-94 08:49:37 GMT"
[[nodiscard]] constexpr std::optional<civil_time> read_rfc850_date(std::string_view text,
                                                                   const civil_time& now) noexcept {
    date_cursor in{text};
    civil_time t;
    in.one_of(long_day_names);
    in.literal(", ");
    t.day = in.digits(2);
    in.literal("-");
    t.month = in.one_of(month_names);
    in.literal("-");
    const unsigned two_digit_year = in.digits(2);
    in.literal(" ");
    read_time_of_day(in, t);
    in.literal(" GMT");
    if (!in.finished()) return std::nullopt;
    t.year = rfc850_year(two_digit_year, t, now);
    return t;
}

// asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
//   e.g. "Sun Nov  6 08:49:37 1994"
[[nodiscard]] constexpr std::optional<civil_time> read_asctime_date(std::string_view text) noexcept {
    date_cursor in{text};
    civil_time t;
    in.one_of(short_day_names);
    in.literal(" ");
    t.month = in.one_of(month_names);
    in.literal(" ");
    if (in.ok() && text.size() > 8 && text[8] == ' ') {  // the space-padded day
        in.literal(" ");
        t.day = in.digits(1);
    } else {
        t.day = in.digits(2);
    }
    in.literal(" ");
    read_time_of_day(in, t);
    in.literal(" ");
    t.year = in.digits(4);
    if (!in.finished()) return std::nullopt;
    return t;
}

/// Seconds since the Unix epoch of a syntactically read date, or empty when a
/// field is out of range: day beyond its month (leap years per the Gregorian
/// rule), hour > 23, minute > 59, second > 60. A leap second (60) counts as 59,
/// since the Unix time line has no 60th second. The day-name is not checked
/// against the date: it adds no information, and RFC 9110 only asks recipients
/// to recover the instant.
[[nodiscard]] constexpr std::optional<std::chrono::sys_seconds> to_sys_seconds(const civil_time& t) noexcept {
    if (t.day < 1 || t.day > days_in_month(t.year, t.month)) return std::nullopt;
    if (t.hour > 23 || t.minute > 59 || t.second > 60) return std::nullopt;
    const unsigned second = t.second == 60 ? 59 : t.second;
    const std::int64_t days = days_from_civil(t.year, t.month, t.day);
    return std::chrono::sys_seconds{std::chrono::seconds{days * 86400 + t.hour * 3600 + t.minute * 60 + second}};
}

/// `now` as UTC calendar fields, whole seconds (fractions dropped).
[[nodiscard]] constexpr civil_time utc_civil_of(std::chrono::system_clock::time_point now) noexcept {
    const auto day = std::chrono::floor<std::chrono::days>(now);
    const std::int64_t days = static_cast<std::int64_t>(day.time_since_epoch().count());
    const auto second_of_day =
        static_cast<unsigned>(std::chrono::floor<std::chrono::seconds>(now - day).count());  // [0, 86399]
    civil_time t;
    t.year = year_from_days(days);
    const std::int64_t day_of_year = days - days_from_civil(t.year, 1, 1);  // [0, 365]
    unsigned month = 1;
    std::int64_t rest = day_of_year;
    while (month < 12 && rest >= static_cast<std::int64_t>(days_in_month(t.year, month))) {
        rest -= days_in_month(t.year, month);
        ++month;
    }
    t.month = month;
    t.day = static_cast<unsigned>(rest) + 1;
    t.hour = second_of_day / 3600;
    t.minute = second_of_day / 60 % 60;
    t.second = second_of_day % 60;
    return t;
}

/// Any of the three forms, exactly (no surrounding whitespace). The first
/// bytes pick the form: "Sun," IMF-fixdate, "Sun " asctime, else RFC 850.
[[nodiscard]] constexpr std::optional<std::chrono::sys_seconds> parse_http_date_exact(
    std::string_view text, std::chrono::system_clock::time_point now) noexcept {
    std::optional<civil_time> fields;
    if (text.size() > 3 && text[3] == ',') {
        fields = read_imf_fixdate(text);
    } else if (text.size() > 3 && text[3] == ' ') {
        fields = read_asctime_date(text);
    } else {
        fields = read_rfc850_date(text, utc_civil_of(now));
    }
    if (!fields) return std::nullopt;
    return to_sys_seconds(*fields);
}

/// Whole seconds from `now` until `when`, rounded up; zero when `when` is not
/// after `now`. Computed on seconds, never on `now`'s finer ticks, so a date
/// centuries away cannot overflow a nanosecond count. With `now` = s + f
/// (s whole, 0 ≤ f < 1), ceil(when - s - f) = when - s for whole `when`.
[[nodiscard]] constexpr std::chrono::seconds seconds_until(std::chrono::sys_seconds when,
                                                           std::chrono::system_clock::time_point now,
                                                           std::chrono::seconds cap) noexcept {
    const auto whole_now = std::chrono::floor<std::chrono::seconds>(now);
    const auto difference = when - whole_now;  // both within ±10^12 s: no overflow
    if (difference <= std::chrono::seconds::zero()) return std::chrono::seconds::zero();
    return difference < cap ? difference : cap;
}

}  // namespace resil::detail
