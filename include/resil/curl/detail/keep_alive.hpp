// resil/curl/detail/keep_alive.hpp — the idle limit a server announces for
// a kept-alive HTTP/1.1 connection: the `timeout` parameter of its
// Keep-Alive field (RFC 2068 §19.7.1.1, kept by Apache, Node.js, Tomcat, and
// nginx with a second keepalive_timeout argument).
//
//   Keep-Alive: timeout=5, max=1000     → 5 (seconds)
//
// The field is hop-by-hop and names no unit but seconds; HTTP/2 forbids it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "text.hpp"

namespace resil::curl::detail {

/// The longest idle limit taken from a server, in seconds (a day): a larger
/// one (or a number too long to read) means "a day", which is as good as
/// "never" for choosing a connection.
inline constexpr std::int32_t longest_keep_alive_timeout = 86'400;

/// The `timeout` parameter of a Keep-Alive field value, in whole seconds
/// (at most longest_keep_alive_timeout); nothing when the field has none,
/// or its value is not a decimal number (quotes and OWS allowed).
[[nodiscard]] constexpr std::optional<std::int32_t> keep_alive_timeout(std::string_view value) noexcept {
    while (!value.empty()) {
        const auto comma = value.find(',');
        const auto item = trim_ows(value.substr(0, comma));
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || !iequals(trim_ows(item.substr(0, eq)), "timeout")) continue;
        auto number = trim_ows(item.substr(eq + 1));
        if (number.size() >= 2 && number.front() == '"' && number.back() == '"')
            number = number.substr(1, number.size() - 2);
        const auto seconds = resil::detail::parse_digits(number, longest_keep_alive_timeout);
        if (!seconds) return std::nullopt;
        return static_cast<std::int32_t>(*seconds);
    }
    return std::nullopt;
}

}  // namespace resil::curl::detail
