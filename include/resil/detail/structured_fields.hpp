// resil/detail/structured_fields.hpp — a Structured Field Values parser
// (RFC 9651), as much as resil's header readers need: bare items of every
// kind, parameters, inner lists (skipped) and dictionary members, driven by
// the caller over a List or a Dictionary. Integers are read by value;
// strings and tokens as their raw text; the other kinds by kind only.
// Internals of resil/rate_limit.hpp (the RateLimit and RateLimit-Policy
// fields, and the drafts' Structured Field integers).
//
//   sf_parser p(value);                 // OWS around the value is ignored
//   bool failed = false;
//   do {
//       const auto item = p.bare_item();
//       if (!item || !p.parameters([&](std::string_view key, const sf_bare_item& v) { ... })) return malformed;
//   } while (p.next_member(failed));
//   if (failed) return malformed;
//
// Constexpr, noexcept, allocation-free; every failure is final (the field
// is malformed and is ignored whole, as RFC 9651 §4.2 asks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "http_text.hpp"

namespace resil::detail {

/// One bare item of a Structured Field (RFC 9651 §3.3), as much of it as the
/// rate-limit fields need: integers by value, strings and tokens as their
/// raw text (a string's escapes are left in place), the rest by kind only.
/// `inner_list` stands for a dictionary member's inner list, skipped.
struct sf_bare_item {
    enum class kind : std::uint8_t {
        integer, decimal, string, token, byte_sequence, boolean, date, display_string, inner_list
    };
    kind type = kind::integer;
    std::int64_t integer = 0;
    std::string_view text{};

    [[nodiscard]] constexpr bool non_negative_integer() const noexcept { return type == kind::integer && integer >= 0; }
};

/// A Structured Field parser over one field value, after RFC 9651 §4.2, for
/// lists and items of bare items with parameters. Every failure is final:
/// the field is malformed and its caller ignores it.
class sf_parser {
public:
    constexpr explicit sf_parser(std::string_view value) noexcept : s_(trim_ows(value)) {}

    [[nodiscard]] constexpr bool at_end() const noexcept { return i_ == s_.size(); }
    [[nodiscard]] constexpr bool next_is(char c) const noexcept { return i_ < s_.size() && s_[i_] == c; }

    /// §4.2.3.1: a bare item.
    [[nodiscard]] constexpr std::optional<sf_bare_item> bare_item() noexcept {
        if (at_end()) return std::nullopt;
        const char c = s_[i_];
        if (c == '-' || is_digit(c)) return number();
        if (c == '"') return string();
        if (c == '*' || is_alpha(c)) return token();
        if (c == ':') return byte_sequence();
        if (c == '?') return boolean();
        if (c == '@') return date();
        if (c == '%') return display_string();
        return std::nullopt;
    }

    /// §4.2.3.2: parameters, each handed to `on(key, value)`; a later key
    /// overwrites an earlier one (the callee keeps the last).
    template <class OnParameter>
    [[nodiscard]] constexpr bool parameters(OnParameter&& on) noexcept {
        while (next_is(';')) {
            ++i_;
            while (next_is(' ')) ++i_;
            const auto key = this->key();
            if (!key) return false;
            sf_bare_item value{sf_bare_item::kind::boolean, 1, {}};
            if (next_is('=')) {
                ++i_;
                const auto v = bare_item();
                if (!v) return false;
                value = *v;
            }
            on(*key, value);
        }
        return true;
    }

    /// §4.2.1.2: an inner list with its items' parameters, all ignored.
    [[nodiscard]] constexpr bool skip_inner_list() noexcept {
        if (!next_is('(')) return false;
        ++i_;
        for (;;) {
            while (next_is(' ')) ++i_;
            if (next_is(')')) {
                ++i_;
                return true;
            }
            if (!bare_item() || !parameters([](std::string_view, const sf_bare_item&) {})) return false;
            if (!next_is(' ') && !next_is(')')) return false;
        }
    }

    /// §4.2.2: one dictionary member: its key, then "=" and an item or an
    /// inner list (whose members are skipped: `value` is then of kind
    /// inner_list), or no "=" and the Boolean true; parameters ignored.
    [[nodiscard]] constexpr bool dictionary_member(std::string_view& key, sf_bare_item& value) noexcept {
        const auto name = this->key();
        if (!name) return false;
        key = *name;
        value = sf_bare_item{sf_bare_item::kind::boolean, 1, {}};
        if (next_is('=')) {
            ++i_;
            if (next_is('(')) {
                if (!skip_inner_list()) return false;
                value = sf_bare_item{sf_bare_item::kind::inner_list, 0, {}};
            } else {
                const auto item = bare_item();
                if (!item) return false;
                value = *item;
            }
        }
        return parameters([](std::string_view, const sf_bare_item&) {});
    }

    /// §4.2.1: after a list member, either the end or a comma and another
    /// member. Returns false at the end; `failed` when neither follows.
    [[nodiscard]] constexpr bool next_member(bool& failed) noexcept {
        while (!at_end() && is_ows(s_[i_])) ++i_;
        if (at_end()) return false;
        if (s_[i_] != ',') {
            failed = true;
            return false;
        }
        ++i_;
        while (!at_end() && is_ows(s_[i_])) ++i_;
        if (at_end()) failed = true;  // a trailing comma
        return !failed;
    }

private:
    [[nodiscard]] constexpr std::optional<std::string_view> key() noexcept {
        const std::size_t start = i_;
        if (at_end() || !(is_lcalpha(s_[i_]) || s_[i_] == '*')) return std::nullopt;
        while (!at_end()) {
            const char c = s_[i_];
            if (!(is_lcalpha(c) || is_digit(c) || c == '_' || c == '-' || c == '.' || c == '*')) break;
            ++i_;
        }
        return s_.substr(start, i_ - start);
    }

    // §4.2.4: at most 15 digits for an integer; 12 before and 3 after the
    // point for a decimal.
    [[nodiscard]] constexpr std::optional<sf_bare_item> number() noexcept {
        bool negative = false;
        if (next_is('-')) {
            negative = true;
            ++i_;
        }
        if (at_end() || !is_digit(s_[i_])) return std::nullopt;
        std::int64_t value = 0;
        std::size_t digits = 0;
        while (!at_end() && is_digit(s_[i_])) {
            if (++digits > 15) return std::nullopt;
            value = value * 10 + (s_[i_++] - '0');
        }
        if (!next_is('.')) return sf_bare_item{sf_bare_item::kind::integer, negative ? -value : value, {}};
        if (digits > 12) return std::nullopt;
        ++i_;
        std::size_t fraction = 0;
        while (!at_end() && is_digit(s_[i_])) {
            if (++fraction > 3) return std::nullopt;
            ++i_;
        }
        if (fraction == 0) return std::nullopt;
        return sf_bare_item{sf_bare_item::kind::decimal, 0, {}};
    }

    // §4.2.5: printable ASCII; only \" and \\ escaped.
    [[nodiscard]] constexpr std::optional<sf_bare_item> string() noexcept {
        const std::size_t start = ++i_;
        while (!at_end()) {
            const char c = s_[i_];
            if (c == '\\') {
                ++i_;
                if (at_end() || (s_[i_] != '"' && s_[i_] != '\\')) return std::nullopt;
            } else if (c == '"') {
                const auto text = s_.substr(start, i_ - start);
                ++i_;
                return sf_bare_item{sf_bare_item::kind::string, 0, text};
            } else if (c < 0x20 || c > 0x7E) {  // char may be signed: bytes over 0x7F are negative
                return std::nullopt;
            }
            ++i_;
        }
        return std::nullopt;  // unterminated
    }

    // §4.2.6
    [[nodiscard]] constexpr std::optional<sf_bare_item> token() noexcept {
        const std::size_t start = i_++;
        while (!at_end() && (is_tchar(s_[i_]) || s_[i_] == ':' || s_[i_] == '/')) ++i_;
        return sf_bare_item{sf_bare_item::kind::token, 0, s_.substr(start, i_ - start)};
    }

    // §4.2.7: base64 characters between colons.
    [[nodiscard]] constexpr std::optional<sf_bare_item> byte_sequence() noexcept {
        ++i_;
        while (!at_end() && s_[i_] != ':') {
            const char c = s_[i_];
            if (!(is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=')) return std::nullopt;
            ++i_;
        }
        if (at_end()) return std::nullopt;
        ++i_;
        return sf_bare_item{sf_bare_item::kind::byte_sequence, 0, {}};
    }

    // §4.2.8
    [[nodiscard]] constexpr std::optional<sf_bare_item> boolean() noexcept {
        ++i_;
        if (!next_is('0') && !next_is('1')) return std::nullopt;
        const std::int64_t value = s_[i_++] - '0';
        return sf_bare_item{sf_bare_item::kind::boolean, value, {}};
    }

    // §4.2.9: '@' and an integer.
    [[nodiscard]] constexpr std::optional<sf_bare_item> date() noexcept {
        ++i_;
        const auto n = number();
        if (!n || n->type != sf_bare_item::kind::integer) return std::nullopt;
        return sf_bare_item{sf_bare_item::kind::date, n->integer, {}};
    }

    // §4.2.10: %"..." with lowercase %xx escapes. The decoded bytes are not
    // checked for UTF-8: no rate-limit parameter is a display string.
    [[nodiscard]] constexpr std::optional<sf_bare_item> display_string() noexcept {
        ++i_;
        if (!next_is('"')) return std::nullopt;
        ++i_;
        const auto is_lower_hex = [](char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); };
        while (!at_end()) {
            const char c = s_[i_];
            if (c < 0x20 || c > 0x7E) return std::nullopt;
            if (c == '"') {
                ++i_;
                return sf_bare_item{sf_bare_item::kind::display_string, 0, {}};
            }
            if (c == '%') {
                if (s_.size() - i_ < 3 || !is_lower_hex(s_[i_ + 1]) || !is_lower_hex(s_[i_ + 2])) return std::nullopt;
                i_ += 2;
            }
            ++i_;
        }
        return std::nullopt;
    }

    std::string_view s_;
    std::size_t i_ = 0;
};

}  // namespace resil::detail
