// resil/validation.hpp — what every options type's `validate()` returns: the
// field that is wrong, what it must be, and what it was, in one form.
//
//   if (auto bad = options.validate()) log(bad->message());
//   // "`window` must be in [10ms, 24h], got 5ms"
//
// Each options type has one `validate()` (its only copy of its ranges, kept
// as named constants on the type); its policy's constructor throws from it
// (resil::throw_if_invalid), and the JSON loader maps `field` to the JSON
// path ("breaker.window: must be in [10ms, 24h], got \"5ms\"").
#pragma once

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "detail/platform.hpp"
#include "duration_text.hpp"

namespace resil {

/// One invalid field of an options type.
struct invalid_option {
    /// The field's name as written in the options type; nested fields are
    /// joined with '.' ("backoff.cap").
    std::string field;
    /// What it must be and what it was: "must be in [1, 1000], got 0".
    std::string requirement;

    /// "`field` must be ..., got X".
    [[nodiscard]] std::string message() const;

    /// The same error, for a field of a nested options type called `outer`.
    [[nodiscard]] invalid_option within(std::string_view outer) const;
};

namespace detail {

/// The parts, joined: one allocation, and far less code at each message than
/// a chain of std::string operator+.
[[nodiscard]] RESIL_DETAIL_NOINLINE inline std::string concat(std::initializer_list<std::string_view> parts) {
    std::size_t size = 0;
    for (auto p : parts) size += p.size();
    std::string out;
    out.reserve(size);
    for (auto p : parts) out += p;
    return out;
}

}  // namespace detail

inline std::string invalid_option::message() const { return detail::concat({"`", field, "` ", requirement}); }

inline invalid_option invalid_option::within(std::string_view outer) const {
    return {detail::concat({outer, ".", field}), requirement};
}

/// What `validate()` returns: nothing when every field is valid.
using validation_result = std::optional<invalid_option>;

namespace detail {

/// Throws what throw_if_invalid() promises. Out of line and cold: every
/// policy's constructor calls throw_if_invalid(), and the message is built
/// only on the error path.
[[noreturn]] RESIL_DETAIL_COLD inline void throw_invalid(std::string_view owner, const invalid_option& bad) {
    throw std::invalid_argument(concat({owner, ": ", bad.message()}));
}

}  // namespace detail

/// Throws std::invalid_argument("<owner>: `field` must be ..., got X") when
/// `result` names an invalid field.
inline void throw_if_invalid(std::string_view owner, const validation_result& result) {
    if (result) detail::throw_invalid(owner, *result);
}

namespace detail {

/// A duration as messages and configuration files write it: the shortest
/// exact text ("24h", "10ms", "1.5s"; resil/duration_text.hpp).
template <class Rep, class Period>
[[nodiscard]] std::string format_duration(std::chrono::duration<Rep, Period> d) {
    return resil::format_duration(d);
}

/// "1e+09" as people write it: "1e9" ("2.5e-05" → "2.5e-5").
[[nodiscard]] inline std::string tidy_exponent(std::string text) {
    const auto e = text.find('e');
    if (e == std::string::npos) return text;
    std::size_t at = e + 1;
    if (at < text.size() && text[at] == '+') text.erase(at, 1);
    else if (at < text.size() && text[at] == '-') ++at;
    while (at + 1 < text.size() && text[at] == '0') text.erase(at, 1);
    return text;
}

/// A value a validation message shows, before it is written: the checks
/// below are templates over the field's type, but the text is built by one
/// non-template function, so each options type's validate() compiles to
/// comparisons and calls rather than its own copy of the string work.
struct option_value {
    enum class form : std::uint8_t { boolean, integer, real, duration };
    form shown = form::integer;
    bool negative = false;
    std::uint64_t magnitude = 0;       ///< integer, boolean (0 or 1), or duration ticks
    double real = 0;
    int tick_exponent = 0;             ///< a duration's tick as log10 of itself in ns, when a power of ten
    std::int64_t seconds_per_tick = 0; ///< or its length in seconds (minutes: 60)
};

/// A double as the message shows it: the shortest form that reads back the
/// same (0.1, not 0.10000000000000001), or nan, inf, -inf.
[[nodiscard]] RESIL_DETAIL_NOINLINE inline std::string format_real(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    for (int digits = 1; digits <= 17; ++digits) {
        char shorter[32];
        std::snprintf(shorter, sizeof shorter, "%.*g", digits, v);
        if (std::strtod(shorter, nullptr) == v) return tidy_exponent(shorter);
    }
    return tidy_exponent(text);
}

/// The text of a value, for every type the checks take.
[[nodiscard]] RESIL_DETAIL_NOINLINE inline std::string format_option_value(const option_value& v) {
    switch (v.shown) {
        case option_value::form::boolean: return v.magnitude != 0 ? "true" : "false";
        case option_value::form::real: return format_real(v.real);
        case option_value::form::duration:
            if (v.seconds_per_tick == 0) return format_duration_ticks(v.negative, v.magnitude, v.tick_exponent);
            return format_seconds_multiple(
                static_cast<std::int64_t>(v.negative ? std::uint64_t{0} - v.magnitude : v.magnitude),
                v.seconds_per_tick);
        case option_value::form::integer: break;
    }
    char digits[24];
    std::size_t first = sizeof digits;
    auto rest = v.magnitude;
    do {
        digits[--first] = static_cast<char>('0' + rest % 10);
        rest /= 10;
    } while (rest != 0);
    if (v.negative) digits[--first] = '-';
    return std::string(digits + first, sizeof digits - first);
}

/// `v` as the message will show it.
template <class T>
[[nodiscard]] option_value to_option_value(const T& v) {
    option_value out;
    if constexpr (std::same_as<T, bool>) {
        out.shown = option_value::form::boolean;
        out.magnitude = v ? 1 : 0;
    } else if constexpr (std::integral<T>) {
        if constexpr (std::is_signed_v<T>) out.negative = v < 0;
        // Two's complement negation in the unsigned type: exact for the minimum too.
        using U = std::make_unsigned_t<T>;
        const auto bits = static_cast<U>(v);
        out.magnitude = out.negative ? std::uint64_t{static_cast<U>(U{0} - bits)} : std::uint64_t{bits};
    } else if constexpr (std::floating_point<T>) {
        out.shown = option_value::form::real;
        out.real = static_cast<double>(v);
    } else {
        using period = typename T::period;
        out.shown = option_value::form::duration;
        if constexpr (period::den == 1 && period::num > 1) {
            out.seconds_per_tick = static_cast<std::int64_t>(period::num);
        } else {
            out.tick_exponent = tick_exponent<T>();
        }
        const auto count = static_cast<std::int64_t>(v.count());
        out.negative = count < 0;
        out.magnitude = out.negative ? std::uint64_t{0} - static_cast<std::uint64_t>(count)
                                     : static_cast<std::uint64_t>(count);
    }
    return out;
}

/// A value as a validation message shows it.
template <class T>
[[nodiscard]] std::string format_option_value(const T& v) {
    return format_option_value(to_option_value(v));
}

/// The error of each check below, written out of line: the error path only.
[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option out_of_range(std::string_view field,
                                                                         const option_value& v,
                                                                         const option_value& lo,
                                                                         const option_value& hi) {
    return invalid_option{std::string(field), concat({"must be in [", format_option_value(lo), ", ",
                                                      format_option_value(hi), "], got ", format_option_value(v)})};
}

[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option below_minimum(std::string_view field,
                                                                          const option_value& v,
                                                                          const option_value& lo) {
    return invalid_option{std::string(field),
                          concat({"must be at least ", format_option_value(lo), ", got ", format_option_value(v)})};
}

[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option not_as_required(std::string_view field,
                                                                            std::string_view what,
                                                                            const option_value& v) {
    return invalid_option{std::string(field), concat({"must be ", what, ", got ", format_option_value(v)})};
}

/// "`field` must be in [lo, hi], got v" when v is outside [lo, hi].
template <class T>
[[nodiscard]] validation_result check_in_range(std::string_view field, const T& v, const T& lo, const T& hi) {
    if (v >= lo && v <= hi) return std::nullopt;
    return out_of_range(field, to_option_value(v), to_option_value(lo), to_option_value(hi));
}

/// "`field` must be at least lo, got v" when v < lo.
template <class T>
[[nodiscard]] validation_result check_at_least(std::string_view field, const T& v, const T& lo) {
    if (v >= lo) return std::nullopt;
    return below_minimum(field, to_option_value(v), to_option_value(lo));
}

/// "`field` must be <what>, got v" when `ok` is false.
template <class T>
[[nodiscard]] validation_result check_that(bool ok, std::string_view field, std::string_view what, const T& v) {
    if (ok) return std::nullopt;
    return not_as_required(field, what, to_option_value(v));
}

/// check_that with a requirement of several parts ("at most max_wait (",
/// format_duration(max_wait), ")"), joined out of line only when the check
/// fails, so no std::string `+` chain is instantiated in the caller.
[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option not_as_required(std::string_view field,
                                                                    std::initializer_list<std::string_view> what,
                                                                    const option_value& v) {
    return not_as_required(field, concat(what), v);
}

template <class T>
[[nodiscard]] validation_result check_that(bool ok, std::string_view field,
                                           std::initializer_list<std::string_view> what, const T& v) {
    if (ok) return std::nullopt;
    return not_as_required(field, what, to_option_value(v));
}

}  // namespace detail
}  // namespace resil
