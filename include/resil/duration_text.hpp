// resil/duration_text.hpp — durations as text, for configuration files and
// messages:
// "250ms", "1.5s", "2m", "100us", "1h", "10ns". Exact both ways: the text is
// read with decimal arithmetic (no floating point), and written in the
// shortest form that reads back to the same count.
//
//   auto d = resil::parse_duration("1.5s");            // 1'500'000'000 ns
//   auto t = resil::parse_duration<std::chrono::milliseconds>("250ms");
//   resil::format_duration(std::chrono::milliseconds{1500});   // "1.5s"
//   resil::format_duration(std::chrono::milliseconds{250});    // "250ms"
//
// Grammar: digits, optionally '.' and more digits, then a unit among ns, us,
// ms, s, m (minutes) and h (detail/decimal_duration.hpp: the grammar the
// rate-limit fields' durations are read with too). No sign, no spaces, no
// exponent, no bare numbers: a configuration value always says its unit.
// Uses the standard library only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ratio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "detail/decimal_duration.hpp"
#include "detail/platform.hpp"
#include "enum_name.hpp"

// g++ 12 at -O3 reports std::string operations on these digit strings as
// overlapping copies of 2^63 bytes (GCC bug 105329, a -Wrestrict false
// positive inside libstdc++); the warning is silenced here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace resil {

/// Why a duration text was refused.
enum class duration_text_error : std::uint8_t {
    none,
    syntax,        ///< not digits[.digits]unit
    too_precise,   ///< finer than the target type can hold ("1.5ms" as milliseconds, "0.5ns")
    out_of_range,  ///< more than the target type can hold (about 292 years in nanoseconds)
};

/// The result of parsing a duration text: the duration, or why not. Used
/// as std::expected is: `*r` or `r.value()` is the duration, `r.error()` why
/// there is none.
///
///   auto d = resil::parse_duration("250ms").value();            // throws on bad text
///   auto t = resil::parse_duration(text).value_or(std::chrono::seconds{1});
///   if (auto r = resil::parse_duration(text)) use(*r); else log(to_string(r.error()));
///
/// (Before resil 0.2 the duration was an optional data member, `.value`,
/// and the error one `.error`; a data member and a function cannot share a
/// name, so `r.value == d` and `*r.value` are now `r == d` and `*r`, and
/// `r.error` is `r.error()`: the old spellings fail to compile, at the call.)
template <class Duration>
class duration_text_result {
public:
    /// A duration read.
    constexpr duration_text_result(Duration d) noexcept : value_(d) {}  // NOLINT(google-explicit-constructor)
    /// A text refused, and why (not duration_text_error::none).
    constexpr duration_text_result(duration_text_error why) noexcept : error_(why) {}  // NOLINT

    /// True when a duration was read.
    [[nodiscard]] constexpr bool has_value() const noexcept { return error_ == duration_text_error::none; }
    /// has_value().
    constexpr explicit operator bool() const noexcept { return has_value(); }
    /// The duration; only when has_value().
    [[nodiscard]] constexpr Duration operator*() const noexcept { return value_; }
    /// The duration; throws std::invalid_argument saying why there is none.
    [[nodiscard]] Duration value() const {
        if (!has_value()) throw_refused();
        return value_;
    }
    /// The duration, or `fallback` when the text was refused.
    [[nodiscard]] constexpr Duration value_or(Duration fallback) const noexcept {
        return has_value() ? value_ : fallback;
    }
    /// Why the text was refused; duration_text_error::none when it was read.
    [[nodiscard]] constexpr duration_text_error error() const noexcept { return error_; }

    /// A result equals a duration when it holds that duration.
    [[nodiscard]] friend constexpr bool operator==(const duration_text_result& r, Duration d) noexcept {
        return r.has_value() && r.value_ == d;
    }
    /// Same duration, or same refusal.
    friend constexpr bool operator==(const duration_text_result&, const duration_text_result&) = default;

private:
    [[noreturn]] void throw_refused() const;

    Duration value_{};
    duration_text_error error_ = duration_text_error::none;
};

namespace detail {

/// log10 of the duration type's tick in nanoseconds: 0 for nanoseconds, 6
/// for milliseconds, 9 for seconds.
template <class Duration>
constexpr int tick_exponent() {
    using period = typename Duration::period;
    static_assert(period::num == 1 && std::giga::num % period::den == 0,
                  "resil: durations must tick in ns, us, ms or s (a power of ten of a second)");
    int e = 9;
    for (auto den = period::den; den > 1; den /= 10) --e;
    return e;
}

/// digits × small, on a decimal digit string (most significant first).
inline std::string multiply_digits(const std::string& digits, unsigned small) {
    std::string out(digits.size(), '0');
    unsigned carry = 0;
    for (std::size_t i = digits.size(); i-- > 0;) {
        const unsigned v = static_cast<unsigned>(digits[i] - '0') * small + carry;
        out[i] = static_cast<char>('0' + v % 10);
        carry = v / 10;
    }
    while (carry > 0) {
        out.insert(out.begin(), static_cast<char>('0' + carry % 10));
        carry /= 10;
    }
    return out;
}

inline void strip_leading_zeros(std::string& digits) {
    const auto first = digits.find_first_not_of('0');
    digits.erase(0, first == std::string::npos ? digits.size() - 1 : first);
}

}  // namespace detail

/// Reads a duration text into `Duration` (resil::duration, i.e. nanoseconds,
/// by default; milliseconds for the timeout triad). Exact: a value the type
/// cannot hold exactly is refused, never rounded. Does not throw.
template <class Duration = std::chrono::nanoseconds>
[[nodiscard]] duration_text_result<Duration> parse_duration(std::string_view text) {
    using rep = typename Duration::rep;
    static_assert(std::is_signed_v<rep> && sizeof(rep) == 8, "resil::json: durations must count in int64");
    constexpr int target = detail::tick_exponent<Duration>();
    const duration_text_result<Duration> syntax{duration_text_error::syntax};

    // The grammar of detail/decimal_duration.hpp, one component and nothing
    // after it; the value is worked out exactly below, on digit strings.
    std::string_view rest = text;
    const auto component = detail::take_duration_component(rest, false);
    if (!component || !rest.empty()) return syntax;
    const detail::duration_unit* chosen = component->unit;
    std::string whole(component->number.whole);
    std::string fraction(component->number.fraction);

    // value = digits × 10^-fraction_digits × factor × 10^exponent ns
    //       = digits × factor × 10^(exponent − fraction_digits − target) ticks.
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    detail::strip_leading_zeros(whole);
    // Bounds that keep the digit strings short; anything past them is out of
    // range (whole part) or finer than a nanosecond (fraction) anyway.
    if (whole.size() > 24) return duration_text_error::out_of_range;
    if (fraction.size() > 24) return duration_text_error::too_precise;
    std::string digits = whole + fraction;
    detail::strip_leading_zeros(digits);
    digits = detail::multiply_digits(digits, chosen->factor);
    const int shift = chosen->exponent - static_cast<int>(fraction.size()) - target;
    if (shift >= 0) {
        if (digits != "0") digits.append(static_cast<std::size_t>(shift), '0');
    } else {
        const auto drop = static_cast<std::size_t>(-shift);
        if (digits.size() <= drop) {
            if (digits.find_first_not_of('0') != std::string::npos)
                return duration_text_error::too_precise;
            digits = "0";
        } else {
            if (digits.find_first_not_of('0', digits.size() - drop) != std::string::npos)
                return duration_text_error::too_precise;
            digits.resize(digits.size() - drop);
        }
    }
    detail::strip_leading_zeros(digits);
    const std::string max = std::to_string(std::numeric_limits<rep>::max());
    if (digits.size() > max.size() || (digits.size() == max.size() && digits > max))
        return duration_text_error::out_of_range;
    rep count = 0;
    for (char c : digits) count = count * 10 + (c - '0');
    return Duration{count};
}

namespace detail {

/// Room for any duration text: 20 digits of a count, up to 9 zeros or 2
/// more digits as the unit shifts the decimal point, '.', the unit, a '-'.
inline constexpr std::size_t duration_text_room = 40;

/// `magnitude` ticks of 10^source ns written in `unit` ("1.5s" for 1500 ms in
/// seconds) at `out`; returns its length, or 0 when that is not a
/// terminating decimal or its whole part would be 0. Plain digits in a
/// buffer: this runs only for messages and configuration files, but every
/// translation unit that validates options compiles it.
inline std::size_t format_in_unit(std::uint64_t magnitude, int source, const duration_unit& unit, char* out) {
    // count × 10^source / (factor × 10^exponent): divide by the factor (a
    // terminating decimal has at most 2 more digits for 36 = 4 × 9), then
    // move the decimal point.
    char digits[duration_text_room];
    std::size_t n = 0;
    std::uint64_t quotient = magnitude / unit.factor;
    do {
        digits[n++] = static_cast<char>('0' + quotient % 10);
        quotient /= 10;
    } while (quotient != 0);
    for (std::size_t i = 0, j = n - 1; i < j; ++i, --j) {
        const char c = digits[i];
        digits[i] = digits[j];
        digits[j] = c;
    }
    auto rest = magnitude % unit.factor;
    std::ptrdiff_t point = static_cast<std::ptrdiff_t>(n);  // digits before the decimal point
    for (int i = 0; i < 2 && rest != 0; ++i) {
        rest *= 10;
        digits[n++] = static_cast<char>('0' + rest / unit.factor);
        rest %= unit.factor;
    }
    if (rest != 0) return 0;  // not a terminating decimal in this unit
    point += source - unit.exponent;  // to the right when the unit is smaller than the tick
    while (static_cast<std::ptrdiff_t>(n) < point) digits[n++] = '0';
    while (n > 0 && static_cast<std::ptrdiff_t>(n) > point && digits[n - 1] == '0') --n;  // "1.50" → "1.5"
    std::ptrdiff_t first = 0;
    while (first < point && digits[first] == '0') ++first;  // leading zeros of the whole part
    if (first >= point) return 0;  // "0.25s": prefer "250ms"
    std::size_t length = 0;
    for (auto i = first; i < static_cast<std::ptrdiff_t>(n); ++i) {
        if (i == point) out[length++] = '.';
        out[length++] = digits[i];
    }
    for (char c : unit.name) out[length++] = c;
    return length;
}

/// format_duration's work for a tick that is a power of ten of a second
/// (`source` is log10 of the tick in ns: 0 for ns, 6 for ms, 9 for s), on
/// the count's sign and magnitude. One copy for every duration type: the
/// templates below only take the count apart.
[[nodiscard]] RESIL_DETAIL_NOINLINE inline std::string format_duration_ticks(bool negative, std::uint64_t magnitude,
                                                                     int source) {
    if (magnitude == 0) return "0s";
    char best[duration_text_room];
    best[0] = '-';
    std::size_t best_length = 0;  // after the sign
    for (const auto& each : detail::duration_units) {
        char text[duration_text_room];
        const auto length = format_in_unit(magnitude, source, each, text);
        if (length != 0 && (best_length == 0 || length < best_length)) {
            for (std::size_t i = 0; i < length; ++i) best[i + 1] = text[i];
            best_length = length;
        }
    }
    return negative ? std::string(best, best_length + 1) : std::string(best + 1, best_length);
}

/// format_duration of `n` ticks of `per` seconds each (minutes, hours),
/// written through seconds.
[[nodiscard]] RESIL_DETAIL_NOINLINE inline std::string format_seconds_multiple(std::int64_t n, std::int64_t per) {
    if (n > std::numeric_limits<std::int64_t>::max() / per || n < std::numeric_limits<std::int64_t>::min() / per)
        return std::to_string(n) + " x " + std::to_string(per) + "s";  // beyond any count of seconds
    const std::int64_t seconds = n * per;
    const auto magnitude = seconds < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(seconds)
                                       : static_cast<std::uint64_t>(seconds);
    return format_duration_ticks(seconds < 0, magnitude, 9);
}

// format_duration for ticks that are a power of ten of a second.
template <class Rep, class Period>
[[nodiscard]] std::string format_decimal_duration(std::chrono::duration<Rep, Period> d) {
    constexpr int source = detail::tick_exponent<std::chrono::duration<Rep, Period>>();
    const auto count = d.count();
    using magnitude_type = std::make_unsigned_t<Rep>;
    const auto magnitude = count < 0 ? magnitude_type(0) - static_cast<magnitude_type>(count)
                                     : static_cast<magnitude_type>(count);
    return format_duration_ticks(count < 0, static_cast<std::uint64_t>(magnitude), source);
}

}  // namespace detail

/// Writes `d` in the shortest text that parse_duration reads back exactly,
/// with a whole part of at least 1 ("250ms", not "0.25s"); on a tie the larger
/// unit wins ("1.5s", "90s", "2m", "36h", "100us", "1ns"). Zero is "0s"; a
/// negative duration gets a leading '-' (which parse_duration refuses: no
/// option takes a negative duration).
/// Minutes, hours and other whole-second ticks are written through seconds.
template <class Rep, class Period>
[[nodiscard]] std::string format_duration(std::chrono::duration<Rep, Period> d) {
    if constexpr (Period::den == 1 && Period::num > 1) {
        return detail::format_seconds_multiple(static_cast<std::int64_t>(d.count()),
                                               static_cast<std::int64_t>(Period::num));
    } else {
        return detail::format_decimal_duration(d);
    }
}

/// The name of a duration_text_error, for messages.
[[nodiscard]] constexpr enum_name to_string(duration_text_error e) noexcept {
    switch (e) {
        case duration_text_error::none: return "none";
        case duration_text_error::syntax: return "syntax";
        case duration_text_error::too_precise: return "too_precise";
        case duration_text_error::out_of_range: return "out_of_range";
    }
    return "unknown";
}

template <class Duration>
void duration_text_result<Duration>::throw_refused() const {
    std::string message = "resil::parse_duration: the text ";
    std::string_view why;
    switch (error_) {
        case duration_text_error::none:
        case duration_text_error::syntax:
            why = "must be digits, optionally a fraction, and a unit (ns, us, ms, s, m, h), such as \"250ms\"";
            break;
        case duration_text_error::too_precise: why = "is finer than the duration type holds"; break;
        case duration_text_error::out_of_range: why = "is longer than the duration type holds"; break;
    }
    message += why;
    throw std::invalid_argument(message);
}

}  // namespace resil

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
