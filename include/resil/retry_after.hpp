// resil/retry_after.hpp — how long a server asked us to wait: the Retry-After
// header (RFC 9110 §10.2.3), delay-seconds or an HTTP-date, as a duration.
//
//   using namespace std::chrono;
//   auto now = system_clock::now();
//   resil::parse_retry_after("120", now);                            // 120s
//   resil::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now);  // 0s: already past
//   resil::parse_retry_after("-5", now);                             // nullopt: malformed
//
// An empty optional means "the server said nothing usable": fall back to the
// backoff formula. A value is never negative and never above retry_after_max,
// so garbage can make nobody sleep for years; whether a wait fits the deadline
// is the retry policy's decision, not the parser's.
//
// Pure functions of their arguments: no allocation, no exceptions, no locale,
// no time zone (no mktime/timegm/strptime), constexpr. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "detail/http_date.hpp"
#include "detail/http_text.hpp"

namespace resil {

/// Largest delay the parser reports; larger values saturate to it. 2^31 s
/// (about 68 years) is the bound RFC 9111 §1.2.2 sets for delta-seconds.
/// Converted to resil::duration (nanoseconds) it is ≈ 2.1e18 ns: no overflow.
inline constexpr std::chrono::seconds retry_after_max{2147483648LL};

/// Parses an HTTP-date (RFC 9110 §5.6.7) in any of its three forms:
///   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
///   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
///   asctime      "Sun Nov  6 08:49:37 1994"   (day padded with a space, or 2 digits)
/// Returns the instant in UTC, or an empty optional when `value` is malformed.
///
/// - Exactly the RFC grammar: single spaces, two-digit fields, "GMT" where the
///   form has it. Day and month names are case-sensitive, as the RFC says
///   ("sun", "NOV", "gmt" are rejected).
/// - The day-name must be a valid name for the form (short for IMF-fixdate and
///   asctime, long for RFC 850) but is not checked against the date.
/// - Fields are range-checked: day within its month (29 Feb only in leap years:
///   2000 yes, 1900 no), hour ≤ 23, minute ≤ 59, second ≤ 60. A leap second
///   (:60) is accepted and read as :59, since Unix time has no 60th second.
/// - RFC 850's two-digit year is the one year with those digits that puts the
///   date no more than 50 years after `now` (in UTC) and less than 50 years
///   before it: a date that would be more than 50 years ahead is in the
///   previous century. The whole date counts, not just its year: with now =
///   2026-06-15 12:00:00, "15-Jun-76 12:00:00" is 2076 and "15-Jun-76
///   12:00:01" is 1976; "99" is 1999 and "00" is 2000. With now in 2060, "99"
///   is 2099. `now` is read for nothing else.
/// - Optional whitespace (SP, HTAB) around the value is ignored.
[[nodiscard]] constexpr std::optional<std::chrono::sys_seconds> parse_http_date(
    std::string_view value, std::chrono::system_clock::time_point now) noexcept {
    return detail::parse_http_date_exact(detail::trim_ows(value), now);
}

/// Parses a Retry-After field value relative to `now` (RFC 9110 §10.2.3).
///
/// - delay-seconds: one or more ASCII digits and nothing else (leading zeros
///   are fine). Signs, fractions, exponents, inner spaces and trailing bytes
///   ("+5", "-5", "1.5", "120abc", "1 2") are malformed. Values above
///   retry_after_max saturate to it, however many digits they have.
/// - HTTP-date: as parse_http_date. A date at or before `now` gives 0 s; a
///   later one gives the difference rounded up to whole seconds (`now` may
///   carry fractions of a second), capped at retry_after_max.
/// - Optional whitespace (SP, HTAB) around the value is ignored; an empty or
///   blank value is malformed.
///
/// Returns an empty optional for anything malformed. Never allocates; linear
/// in the length of `value`.
[[nodiscard]] constexpr std::optional<std::chrono::seconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) noexcept {
    const std::string_view text = detail::trim_ows(value);
    if (text.empty()) return std::nullopt;
    if (detail::is_digit(text.front())) {
        // Saturated, so any number of digits is safe.
        const auto seconds = detail::parse_digits(text, retry_after_max.count());
        if (!seconds) return std::nullopt;
        return std::chrono::seconds{*seconds};
    }
    const auto date = detail::parse_http_date_exact(text, now);
    if (!date) return std::nullopt;
    return detail::seconds_until(*date, now, retry_after_max);
}

}  // namespace resil
