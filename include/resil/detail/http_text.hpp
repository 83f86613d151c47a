// resil/detail/http_text.hpp — the character classes and small readers every
// HTTP field parser of resil shares: DIGIT, ALPHA, tchar and token, OWS
// (RFC 9110 §5.6), field-value bytes, ASCII case folding, and 1*DIGIT read
// with saturation. Retry-After and HTTP-dates (retry_after.hpp), the
// rate-limit fields (rate_limit.hpp, with detail/structured_fields.hpp and
// detail/decimal_duration.hpp), the Idempotency-Key field, SSE's `retry`
// (sse.hpp) and the libcurl adapter's field capture (curl/detail/) read
// through these.
//
// Locale-free (<cctype> consults the global locale), allocation-free,
// noexcept; constexpr but for the two word-at-a-time scans.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace resil::detail {

[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
[[nodiscard]] constexpr bool is_lcalpha(char c) noexcept { return c >= 'a' && c <= 'z'; }
[[nodiscard]] constexpr bool is_alpha(char c) noexcept { return is_lcalpha(c) || (c >= 'A' && c <= 'Z'); }

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// ASCII case-insensitive equality (field names, methods, URL schemes).
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

/// RFC 9110 §5.6.2 tchar, as a table: field names are checked byte by byte
/// on every response line.
inline constexpr auto tchar_table = [] {
    std::array<bool, 256> table{};
    for (int c = '0'; c <= '9'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~")) table[static_cast<unsigned char>(c)] = true;
    return table;
}();

[[nodiscard]] constexpr bool is_tchar(char c) noexcept { return tchar_table[static_cast<unsigned char>(c)]; }

/// RFC 9110 token: one or more tchar.
[[nodiscard]] constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (const char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

/// OWS of RFC 9110 §5.6.3: SP or HTAB.
[[nodiscard]] constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

[[nodiscard]] constexpr std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

/// A control character other than HTAB: what a field value may not contain
/// (CR and LF above all — they would let a value inject a header or a request).
[[nodiscard]] constexpr bool is_forbidden_in_value(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7F;
}

/// Whether `s` holds a CR or a NUL: eight bytes at a time, as every
/// received header line is checked for them.
[[nodiscard]] inline bool holds_cr_or_nul(std::string_view s) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101;
    constexpr std::uint64_t highs = 0x8080808080808080;
    constexpr std::uint64_t crs = 0x0D * ones;
    // Non-zero exactly when some byte of `w` is zero (which byte it flags
    // may be off; whether there is one is not).
    const auto zero_byte = [](std::uint64_t w) noexcept { return (w - ones) & ~w & highs; };
    const auto word = [&](std::size_t at) noexcept {
        std::uint64_t w;
        std::memcpy(&w, s.data() + at, sizeof w);
        return w;
    };
    if (s.size() < 8) {
        for (const char c : s)
            if (c == '\r' || c == '\0') return true;
        return false;
    }
    for (std::size_t at = 0;; at += 8) {
        if (at + 8 > s.size()) at = s.size() - 8;  // the last word overlaps the one before
        const std::uint64_t w = word(at);
        if (zero_byte(w) | zero_byte(w ^ crs)) return true;
        if (at + 8 == s.size()) return false;
    }
}

/// Whether `name`, a token (tchar only), is `lower` in any letter case,
/// where `lower` is lower-case letters, digits and '-'. From 8 to 16 bytes,
/// two word compares: setting bit 0x20 lower-cases a letter and keeps a
/// digit or '-', and turns no other tchar into one of those.
[[nodiscard]] inline bool token_iequals_lower(std::string_view name, std::string_view lower) noexcept {
    if (name.size() != lower.size()) return false;
    if (lower.size() < 8 || lower.size() > 16) return iequals(name, lower);
    constexpr std::uint64_t case_bits = 0x2020202020202020;
    const auto word = [](std::string_view v, std::size_t at) noexcept {
        std::uint64_t w;
        std::memcpy(&w, v.data() + at, sizeof w);
        return w;
    };
    const std::size_t last = lower.size() - 8;
    return (word(name, 0) | case_bits) == word(lower, 0) && (word(name, last) | case_bits) == word(lower, last);
}

/// The run of ASCII digits at the front of a text: its value, saturated at
/// the cap it was read with, and its length (0: the text does not start
/// with a digit).
struct digits_value {
    std::int64_t value = 0;
    std::size_t length = 0;
};

/// Reads the digits at the front of `text`, any number of them: the value
/// is min(the number written, cap), never an overflow. `cap` >= 9.
/// Hand-written rather than std::from_chars: it saturates instead of
/// failing on a long number, and is constexpr in C++20.
[[nodiscard]] constexpr digits_value read_digits(std::string_view text, std::int64_t cap) noexcept {
    // While value <= safe, value * 10 + 9 <= cap: the common path is one
    // compare per digit. Past `safe` at most one more digit fits under the
    // cap (value * 10 >= cap - 8, and 10 * (cap - 8) > cap).
    const std::int64_t safe = (cap - 9) / 10;
    const char* const p = text.data();
    const std::size_t size = text.size();
    std::size_t i = 0;
    std::int64_t value = 0;
    for (; i < size && is_digit(p[i]); ++i) {
        if (value > safe) break;
        value = value * 10 + (p[i] - '0');
    }
    if (i < size && is_digit(p[i])) {
        const std::int64_t digit = p[i++] - '0';
        value = value <= (cap - digit) / 10 ? value * 10 + digit : cap;
        if (i < size && is_digit(p[i])) {
            value = cap;
            while (i < size && is_digit(p[i])) ++i;
        }
    }
    return {value, i};
}

/// `text` as 1*DIGIT and nothing else, saturated at `cap` (>= 9); nothing
/// when it is empty or holds another byte.
[[nodiscard]] constexpr std::optional<std::int64_t> parse_digits(std::string_view text, std::int64_t cap) noexcept {
    const auto digits = read_digits(text, cap);
    if (digits.length == 0 || digits.length != text.size()) return std::nullopt;
    return digits.value;
}

}  // namespace resil::detail
