// resil/detail/decimal_duration.hpp — the one grammar of decimal durations,
// read by every parser of resil that takes one:
//
//   decimal   = 1*DIGIT [ "." 1*DIGIT ]
//   component = decimal unit              unit = "h" / "m" / "s" / "ms" / "us" / "ns"
//                                         ("µs", "μs" too where Go's durations are read)
//
// - resil::parse_duration (duration_text.hpp): one component, for
//   configuration; exact, or refused (digit-string arithmetic there).
// - resil::parse_reset_duration (rate_limit.hpp): one or more components, as
//   Go writes durations ("1h2m3.5s", OpenAI's resets); saturated.
// - retry-after-ms and the Unix-time resets (rate_limit.hpp): a bare decimal
//   in a unit the field names; saturated.
//
// The saturated reading (decimal_value) keeps the whole part up to 2^62 (far
// past any duration resil reads: 2^31 s is 2.1e18 ns) and the fraction in
// nanoseconds of the unit, digits past that precision dropped.
//
// Constexpr, noexcept, allocation-free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "http_text.hpp"

namespace resil::detail {

/// A unit: its name and its length in nanoseconds, also as factor ×
/// 10^exponent (a minute is 6 × 10^10 ns, an hour 36 × 10^11 ns), so that
/// exact conversions are a small multiplication or division of digits.
struct duration_unit {
    std::string_view name;
    unsigned factor;
    int exponent;
    std::int64_t nanoseconds;
};

// Largest first: format_duration prefers the larger unit on a tie.
inline constexpr std::array<duration_unit, 6> duration_units{{
    {"h", 36, 11, 3'600'000'000'000},
    {"m", 6, 10, 60'000'000'000},
    {"s", 1, 9, 1'000'000'000},
    {"ms", 1, 6, 1'000'000},
    {"us", 1, 3, 1'000},
    {"ns", 1, 0, 1},
}};

static_assert([] {
    for (const auto& u : duration_units) {
        std::int64_t ns = u.factor;
        for (int i = 0; i < u.exponent; ++i) ns *= 10;
        if (ns != u.nanoseconds) return false;
    }
    return true;
}());

/// The unit named `name`, or null. With `micro_signs`, "µs" (U+00B5 MICRO
/// SIGN) and "μs" (U+03BC GREEK SMALL LETTER MU) are microseconds too, as
/// Go writes them.
[[nodiscard]] constexpr const duration_unit* find_duration_unit(std::string_view name, bool micro_signs) noexcept {
    for (const auto& u : duration_units)
        if (u.name == name) return &u;
    if (micro_signs && (name == "\xC2\xB5s" || name == "\xCE\xBCs")) return &duration_units[4];
    return nullptr;
}

/// Where the whole part of a decimal saturates: above any duration resil
/// reads in any unit, and far enough below 2^63 that a clock reading can be
/// subtracted from it.
inline constexpr std::int64_t decimal_whole_max = std::int64_t{1} << 62;

/// The digits of a decimal, as written, and its whole part read on the way.
struct decimal_text {
    std::string_view whole;     ///< 1*DIGIT
    std::string_view fraction;  ///< the digits after the point; empty when there is none
    bool has_point = false;
    std::int64_t whole_value = 0;  ///< `whole`, saturated at decimal_whole_max
};

/// Reads the decimal at the front of `text` and removes it from `text`;
/// nothing (and `text` unchanged) when `text` does not start with one.
[[nodiscard]] constexpr std::optional<decimal_text> take_decimal(std::string_view& text) noexcept {
    // Views built from pointers, not substr(): no bounds checks to throw
    // from on a path that runs per field.
    const auto digits = read_digits(text, decimal_whole_max);
    std::size_t i = digits.length;
    if (i == 0) return std::nullopt;
    const char* const p = text.data();
    const std::size_t size = text.size();
    decimal_text out{std::string_view(p, i), {}, false, digits.value};
    if (i < size && p[i] == '.') {
        const std::size_t start = ++i;
        while (i < size && is_digit(p[i])) ++i;
        if (i == start) return std::nullopt;
        out.fraction = std::string_view(p + start, i - start);
        out.has_point = true;
    }
    text = std::string_view(p + i, size - i);
    return out;
}

/// One component: a decimal and its unit.
struct duration_component {
    decimal_text number;
    const duration_unit* unit = nullptr;
};

/// Reads the component at the front of `text` and removes it: the decimal,
/// then its unit, the bytes up to the next digit or '.' (or the end). Nothing
/// when there is no decimal or the unit is not one of find_duration_unit's.
[[nodiscard]] constexpr std::optional<duration_component> take_duration_component(std::string_view& text,
                                                                                  bool micro_signs) noexcept {
    std::string_view rest = text;
    const auto number = take_decimal(rest);
    if (!number) return std::nullopt;
    std::size_t i = 0;
    while (i < rest.size() && !is_digit(rest[i]) && rest[i] != '.') ++i;
    const auto* unit = find_duration_unit(std::string_view(rest.data(), i), micro_signs);
    if (unit == nullptr) return std::nullopt;
    text = std::string_view(rest.data() + i, rest.size() - i);
    return duration_component{*number, unit};
}

/// A decimal read with saturation: the whole part (at most
/// decimal_whole_max) and the fraction in nanoseconds of a unit.
struct decimal_number {
    std::int64_t whole = 0;
    std::int64_t fraction_ns = 0;  ///< in [0, unit_ns)
    bool has_fraction = false;
};

/// `n` in units of `unit_ns` nanoseconds: the whole part saturated at
/// decimal_whole_max, the fraction in nanoseconds (digits finer than one
/// dropped).
[[nodiscard]] constexpr decimal_number decimal_value(const decimal_text& n, std::int64_t unit_ns) noexcept {
    decimal_number out;
    out.whole = n.whole_value;
    out.has_fraction = n.has_point;
    std::int64_t scale = unit_ns;  // what the next digit is worth, times 10
    for (const char c : n.fraction) {
        scale /= 10;
        out.fraction_ns += (c - '0') * scale;
    }
    return out;
}

/// A whole field value that is one decimal (OWS around), in units of
/// `unit_ns` nanoseconds: "1500.5" as milliseconds. No sign, no exponent, no
/// digit-less side.
[[nodiscard]] constexpr std::optional<decimal_number> parse_decimal(std::string_view value,
                                                                    std::int64_t unit_ns) noexcept {
    auto text = trim_ows(value);
    const auto n = take_decimal(text);
    if (!n || !text.empty()) return std::nullopt;
    return decimal_value(*n, unit_ns);
}

}  // namespace resil::detail
