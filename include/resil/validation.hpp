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
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

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
    [[nodiscard]] std::string message() const { return "`" + field + "` " + requirement; }

    /// The same error, for a field of a nested options type called `outer`.
    [[nodiscard]] invalid_option within(std::string_view outer) const {
        return {std::string(outer) + "." + field, requirement};
    }
};

/// What `validate()` returns: nothing when every field is valid.
using validation_result = std::optional<invalid_option>;

/// Throws std::invalid_argument("<owner>: `field` must be ..., got X") when
/// `result` names an invalid field.
inline void throw_if_invalid(std::string_view owner, const validation_result& result) {
    if (result) throw std::invalid_argument(std::string(owner) + ": " + result->message());
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

/// A value as a validation message shows it.
template <class T>
[[nodiscard]] std::string format_option_value(const T& v) {
    if constexpr (std::same_as<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::integral<T>) {
        return std::to_string(v);
    } else if constexpr (std::floating_point<T>) {
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", static_cast<double>(v));
        // The shortest form that reads back the same: 0.1, not 0.10000000000000001.
        for (int digits = 1; digits <= 17; ++digits) {
            char shorter[32];
            std::snprintf(shorter, sizeof shorter, "%.*g", digits, static_cast<double>(v));
            if (std::strtod(shorter, nullptr) == static_cast<double>(v)) return tidy_exponent(shorter);
        }
        return tidy_exponent(text);
    } else {
        return format_duration(v);
    }
}

/// "`field` must be in [lo, hi], got v" when v is outside [lo, hi].
template <class T>
[[nodiscard]] validation_result check_in_range(std::string_view field, const T& v, const T& lo, const T& hi) {
    if (v >= lo && v <= hi) return std::nullopt;
    return invalid_option{std::string(field), "must be in [" + format_option_value(lo) + ", " +
                                                  format_option_value(hi) + "], got " + format_option_value(v)};
}

/// "`field` must be at least lo, got v" when v < lo.
template <class T>
[[nodiscard]] validation_result check_at_least(std::string_view field, const T& v, const T& lo) {
    if (v >= lo) return std::nullopt;
    return invalid_option{std::string(field), "must be at least " + format_option_value(lo) + ", got " +
                                                  format_option_value(v)};
}

/// "`field` must be <what>, got v" when `ok` is false.
template <class T>
[[nodiscard]] validation_result check_that(bool ok, std::string_view field, std::string_view what, const T& v) {
    if (ok) return std::nullopt;
    return invalid_option{std::string(field), "must be " + std::string(what) + ", got " + format_option_value(v)};
}

}  // namespace detail
}  // namespace resil
