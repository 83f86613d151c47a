// resil/curl/detail/text.hpp — the text checks of the libcurl adapter's
// request validation and response parsing: resil's HTTP text layer
// (resil/detail/http_text.hpp) brought into resil::curl::detail, and what
// only the adapter needs (the pushback field's milliseconds, user text
// quoted in error messages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../../detail/http_text.hpp"
#include "../../detail/platform.hpp"

namespace resil::curl::detail {

// The HTTP text layer (resil/detail/http_text.hpp), under the names the
// adapter's code uses.
using resil::detail::ascii_lower;
using resil::detail::holds_cr_or_nul;
using resil::detail::iequals;
using resil::detail::is_forbidden_in_value;
using resil::detail::is_ows;
using resil::detail::is_tchar;
using resil::detail::is_token;
using resil::detail::tchar_table;
using resil::detail::token_iequals_lower;
using resil::detail::trim_ows;

/// Parses an optionally negative decimal integer of milliseconds (a pushback
/// hint such as grpc-retry-pushback-ms). Saturates at ±2^31 ms; anything but
/// an optional '-' followed by digits (OWS around allowed) gives nothing.
[[nodiscard]] constexpr std::optional<std::int64_t> parse_milliseconds(std::string_view text) noexcept {
    text = trim_ows(text);
    bool negative = false;
    if (!text.empty() && text.front() == '-') {
        negative = true;
        text.remove_prefix(1);
    }
    const auto value = resil::detail::parse_digits(text, std::int64_t{1} << 31);
    if (!value) return std::nullopt;
    return negative ? -*value : *value;
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
