// resil/curl/detail/text.hpp — small, allocation-free text checks shared by
// the request validation and the response parsing of the libcurl adapter.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "../../detail/platform.hpp"

namespace resil::curl::detail {

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// ASCII case-insensitive equality (HTTP field names, methods' schemes).
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

/// RFC 9110 §5.6.2 tchar, as a table: header names are checked byte by byte
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

/// A control character other than HTAB: what a field value may not contain
/// (CR and LF above all — they would let a value inject a header or a request).
[[nodiscard]] constexpr bool is_forbidden_in_value(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7F;
}

[[nodiscard]] constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

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

[[nodiscard]] constexpr std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

/// Parses an optionally negative decimal integer of milliseconds (a pushback
/// hint such as grpc-retry-pushback-ms). Saturates at ±2^31 ms; anything but
/// an optional '-' followed by digits (OWS around allowed) gives nothing.
/// Hand-written rather than std::from_chars: it saturates instead of failing
/// on a long number, and stays constexpr in C++20.
[[nodiscard]] constexpr std::optional<std::int64_t> parse_milliseconds(std::string_view text) noexcept {
    text = trim_ows(text);
    bool negative = false;
    if (!text.empty() && text.front() == '-') {
        negative = true;
        text.remove_prefix(1);
    }
    if (text.empty()) return std::nullopt;
    constexpr std::int64_t cap = std::int64_t{1} << 31;
    std::int64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        if (value < cap) value = value * 10 + (c - '0');
    }
    if (value > cap) value = cap;
    return negative ? -value : value;
}

/// Shortens user text quoted in an error message so a huge URL cannot make a
/// huge exception, and shows control characters as \xNN so the message
/// itself cannot carry a line break.
/// Only error paths call it: out of line and cold.
[[nodiscard]] RESIL_DETAIL_COLD inline std::string quote_for_error(std::string_view s) {
    constexpr std::size_t limit = 120;
    std::string out = "\"";
    std::size_t shown = 0;
    for (const char c : s) {
        if (shown++ == limit) {
            out += "...";
            break;
        }
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 0x0F];
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

}  // namespace resil::curl::detail
