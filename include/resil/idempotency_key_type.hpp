// resil/idempotency_key_type.hpp — the idempotency key as a value (parse,
// compare, format, hash) without its generator: what a context stores and
// what a server checks. Making keys (idempotency_key::v4(), ::v7()) needs the
// CSPRNG and lives in resil/idempotency_key.hpp; include that where keys are
// made (the curl client does). Keeping the two apart lets resil/context.hpp
// and resil/pipeline.hpp stay free of the OS entropy headers.
//
//   auto seen = resil::idempotency_key::parse(header_value);   // no generator needed
//   if (!seen) return bad_request("Idempotency-Key must be a UUID");
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "detail/http_text.hpp"

namespace resil {

/// The 36 characters of a key's canonical text (8-4-4-4-12 lowercase hex) in a
/// fixed buffer, NUL-terminated: a value type that never allocates.
class key_text {
public:
    /// Characters in the text: 36.
    static constexpr std::size_t size = 36;

    /// The 36 characters.
    [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars_.data(), size}; }
    /// NUL-terminated, for C APIs such as libcurl's header lists.
    [[nodiscard]] constexpr const char* c_str() const noexcept { return chars_.data(); }
    constexpr operator std::string_view() const noexcept { return view(); }

    /// Equal when the texts are.
    friend constexpr bool operator==(const key_text& a, const key_text& b) noexcept { return a.view() == b.view(); }

private:
    friend class idempotency_key;
    std::array<char, size + 1> chars_{};
};

namespace detail {

/// Each character's value as a hex digit (either case), or 0x10 if it is not one.
inline constexpr std::array<std::uint8_t, 256> hex_digit_values = [] {
    std::array<std::uint8_t, 256> values{};
    for (auto& v : values) v = 0x10;
    for (unsigned d = 0; d < 10; ++d) values['0' + d] = static_cast<std::uint8_t>(d);
    for (unsigned d = 0; d < 6; ++d) {
        values['a' + d] = static_cast<std::uint8_t>(10 + d);
        values['A' + d] = static_cast<std::uint8_t>(10 + d);
    }
    return values;
}();

/// The two lowercase hex digits of every byte value, one table load per byte.
inline constexpr std::array<char, 512> hex_digit_pairs = [] {
    constexpr std::string_view digits = "0123456789abcdef";
    std::array<char, 512> pairs{};
    for (std::size_t b = 0; b < 256; ++b) {
        pairs[2 * b] = digits[b >> 4];
        pairs[2 * b + 1] = digits[b & 0x0Fu];
    }
    return pairs;
}();

/// Makes v4 and v7 keys from the CSPRNG; defined in resil/idempotency_key.hpp,
/// so that holding, parsing and comparing keys needs no OS header. Key
/// generation is a template hook: only code that makes a key instantiates it.
struct key_generator;

/// Whether the generator's definition has been seen (checked where a key is
/// made, at the end of the file, so the include may come later).
template <class G>
constexpr bool generator_defined() noexcept {
    return requires { sizeof(G); };
}

}  // namespace detail

/// A 128-bit RFC 9562 UUID used as an idempotency key. Regular value type:
/// 16 bytes, trivially copyable, ordered by its bytes (the order of creation
/// for v7 keys of one process), hashable (std::hash). The factories v4() and
/// v7() may be called from any thread at once; a key is immutable.
/// Which one: v4 by default (nothing leaks); v7 when the server stores keys in
/// an index that benefits from time order.
/// A default-constructed key is the nil UUID (all zero bits): a placeholder
/// meaning "no key", which `parse` and `from_bytes` never return.
class idempotency_key {
public:
    /// The 16 bytes of a key (RFC 9562 layout).
    using bytes_type = std::array<std::uint8_t, 16>;

    /// Length of the canonical text form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    static constexpr std::size_t text_size = key_text::size;
    /// The HTTP header that carries the key (draft-ietf-httpapi-idempotency-key-header).
    static constexpr std::string_view header_name = "Idempotency-Key";

    /// The nil UUID.
    constexpr idempotency_key() noexcept = default;

    /// A random (version 4) key: 122 bits from the CSPRNG. Thread-safe, no
    /// lock, no allocation. Throws std::system_error only if the OS has no
    /// entropy to give (see resil/detail/csprng.hpp). The generator is in
    /// resil/idempotency_key.hpp: include it where keys are made.
    template <class Generator = detail::key_generator>
    [[nodiscard]] static idempotency_key v4() {
        if constexpr (detail::generator_defined<Generator>()) {
            return Generator::v4();
        } else {
            static_assert(detail::generator_defined<Generator>(),
                          "resil: making an idempotency key needs its generator: #include <resil/idempotency_key.hpp> "
                          "(or <resil/resil.hpp>) in this file");
            return idempotency_key{};
        }
    }

    /// A time-ordered (version 7) key: 48-bit big-endian Unix milliseconds from
    /// std::chrono::system_clock, a 16-bit counter (rand_a and the top 4 bits of
    /// rand_b; random start in each new millisecond), and 58 random bits.
    /// Strictly increasing within the process across all threads, also when the
    /// system clock steps back (the last timestamp is kept until the clock
    /// passes it) or more than ~32768 keys are made in one millisecond (the
    /// timestamp runs ahead a little). Thread-safe: one relaxed CAS on a shared
    /// word; no lock, no allocation. Throws std::system_error as v4() does.
    /// The generator is in resil/idempotency_key.hpp.
    template <class Generator = detail::key_generator>
    [[nodiscard]] static idempotency_key v7() {
        if constexpr (detail::generator_defined<Generator>()) {
            return Generator::v7();
        } else {
            static_assert(detail::generator_defined<Generator>(),
                          "resil: making an idempotency key needs its generator: #include <resil/idempotency_key.hpp> "
                          "(or <resil/resil.hpp>) in this file");
            return idempotency_key{};
        }
    }

    /// The key with these bytes, if they form a valid key: RFC 9562 variant
    /// (bits 10) and a version from 1 to 8. Keys minted by other generators
    /// (v1, v6, ...) are accepted; nil, max and non-RFC UUIDs are not.
    [[nodiscard]] static constexpr std::optional<idempotency_key> from_bytes(const bytes_type& bytes) noexcept {
        const int v = bytes[6] >> 4;
        if ((bytes[8] & 0xC0u) != 0x80u || v < 1 || v > 8) return std::nullopt;
        idempotency_key key;
        key.bytes_ = bytes;
        return key;
    }

    /// Parses the canonical text form: exactly 36 characters, hyphens at
    /// offsets 8, 13, 18 and 23, hex digits (either case) elsewhere, and a
    /// valid key per `from_bytes`. No braces, no "urn:uuid:", no whitespace.
    /// Empty for anything else; never throws.
    [[nodiscard]] static constexpr std::optional<idempotency_key> parse(std::string_view text) noexcept {
        if (text.size() != text_size) return std::nullopt;
        if (text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-') return std::nullopt;
        bytes_type bytes{};
        unsigned invalid = 0;  // one branch for all 32 digits, not one per digit
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            const unsigned high = hex_value(text[text_offsets[i]]);
            const unsigned low = hex_value(text[text_offsets[i] + 1]);
            invalid |= (high | low) & 0x10u;
            bytes[i] = static_cast<std::uint8_t>(high << 4 | (low & 0x0Fu));
        }
        if (invalid != 0) return std::nullopt;
        return from_bytes(bytes);
    }

    /// Parses an Idempotency-Key field's value as clients send it: the
    /// structured-field string of the IETF draft ("\"…\"", what resil's
    /// clients send by default) or the bare canonical text, either with
    /// spaces or tabs around it; the key inside as `parse` reads it. Empty
    /// for anything else; never throws.
    [[nodiscard]] static constexpr std::optional<idempotency_key> parse_field(std::string_view value) noexcept {
        value = detail::trim_ows(value);
        if (value.size() == text_size + 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, text_size);
        return parse(value);
    }

    /// The 16 bytes in network (big-endian) order, as RFC 9562 lays them out.
    [[nodiscard]] constexpr const bytes_type& bytes() const noexcept { return bytes_; }

    /// The version field: 4 or 7 for generated keys, 0 for the nil key.
    [[nodiscard]] constexpr int version() const noexcept { return bytes_[6] >> 4; }

    /// True for the nil key (all zero bytes), what a default-constructed key
    /// holds.
    [[nodiscard]] constexpr bool is_nil() const noexcept { return *this == idempotency_key{}; }

    /// Writes exactly 36 lowercase characters (no NUL) to `out`; returns `out + 36`.
    constexpr char* format_to(char* out) const noexcept {
        for (std::size_t i = 0; i < bytes_.size(); ++i) {
            out[text_offsets[i]] = detail::hex_digit_pairs[2u * bytes_[i]];
            out[text_offsets[i] + 1] = detail::hex_digit_pairs[2u * bytes_[i] + 1];
        }
        out[8] = out[13] = out[18] = out[23] = '-';
        return out + text_size;
    }

    /// The canonical text in a fixed buffer; no allocation.
    [[nodiscard]] constexpr key_text text() const noexcept {
        key_text text;
        format_to(text.chars_.data());
        return text;
    }

    /// The canonical text as a std::string (allocates; prefer `text()`).
    [[nodiscard]] std::string to_string() const { return std::string(text().view()); }

    /// Byte order: for v7 keys of one process, the order of creation.
    friend constexpr auto operator<=>(const idempotency_key&, const idempotency_key&) noexcept = default;

private:
    friend struct detail::key_generator;

    /// Where each byte's two digits sit in the text: 8-4-4-4-12 with hyphens.
    static constexpr std::array<std::uint8_t, 16> text_offsets{0,  2,  4,  6,  9,  11, 14, 16,
                                                               19, 21, 24, 26, 28, 30, 32, 34};

    /// A hex digit's value, or 0x10 for anything else.
    [[nodiscard]] static constexpr unsigned hex_value(char c) noexcept {
        return detail::hex_digit_values[static_cast<unsigned char>(c)];
    }

    bytes_type bytes_{};
};

}  // namespace resil

/// Hashes a key for unordered containers. The bytes are already uniform (v4)
/// or end in 58 random bits (v7), so folding the two halves is enough. Not a
/// keyed hash: a server indexing keys chosen by untrusted clients, who could
/// pick colliding ones, should use a keyed hash (SipHash) or an ordered map.
template <>
struct std::hash<resil::idempotency_key> {
    std::size_t operator()(const resil::idempotency_key& key) const noexcept {
        std::uint64_t high = 0;
        std::uint64_t low = 0;
        for (std::size_t i = 0; i < 8; ++i) {
            high = high << 8 | key.bytes()[i];
            low = low << 8 | key.bytes()[8 + i];
        }
        return static_cast<std::size_t>(high * 0x9E3779B97F4A7C15ull ^ low);
    }
};
