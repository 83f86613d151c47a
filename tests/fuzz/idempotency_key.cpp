// Fuzz harness: resil::idempotency_key::parse (the server side of the
// Idempotency-Key header) and from_bytes.
//
// Properties, for every input:
// - parse accepts exactly the canonical 8-4-4-4-12 hex form (either case)
//   with the RFC 9562 variant and a version from 1 to 8, checked against an
//   independent reading;
// - a parsed key formats as the input in lower case, and that text parses
//   back to the same key (parse → format → parse);
// - never the nil key; version() is the version nibble;
// - the first 16 bytes through from_bytes: a key exactly when the variant
//   and version are valid, and its text parses back to it;
// - parse_field (the field's value as clients send it) gives parse's key of
//   the text without its surrounding spaces or tabs and one pair of double
//   quotes, and nothing else.
#include <resil/idempotency_key.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"

namespace {

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// RFC 9562 §4 text form plus the key's own rules, read independently.
std::optional<std::array<std::uint8_t, 16>> reference_parse(std::string_view text) {
    if (text.size() != 36) return std::nullopt;
    std::array<std::uint8_t, 16> bytes{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-') return std::nullopt;
            ++i;
            continue;
        }
        const int high = hex(text[i]);
        const int low = hex(text[i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        bytes[n++] = static_cast<std::uint8_t>(high * 16 + low);
        i += 2;
    }
    const int version = bytes[6] >> 4;
    if ((bytes[8] >> 6) != 2 || version < 1 || version > 8) return std::nullopt;
    return bytes;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
    return out;
}

void check_key(const resil::idempotency_key& key) {
    FUZZ_CHECK(!key.is_nil());
    FUZZ_CHECK(key.version() >= 1 && key.version() <= 8);
    const auto text = key.text();
    FUZZ_CHECK(text.view().size() == resil::idempotency_key::text_size);
    FUZZ_CHECK(text.c_str()[resil::idempotency_key::text_size] == '\0');
    FUZZ_CHECK(lower(text.view()) == text.view());
    const auto again = resil::idempotency_key::parse(text.view());
    FUZZ_CHECK(again && *again == key);
    FUZZ_CHECK(key.to_string() == text.view());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = resil_fuzz::text_of(data, size);
    const auto key = resil::idempotency_key::parse(text);
    const auto expected = reference_parse(text);
    FUZZ_CHECK(key.has_value() == expected.has_value());
    if (key) {
        FUZZ_CHECK(key->bytes() == *expected);
        FUZZ_CHECK(key->text().view() == lower(text));
        check_key(*key);
    }
    {
        std::string_view inner = text;
        while (!inner.empty() && (inner.front() == ' ' || inner.front() == '\t')) inner.remove_prefix(1);
        while (!inner.empty() && (inner.back() == ' ' || inner.back() == '\t')) inner.remove_suffix(1);
        if (inner.size() >= 2 && inner.front() == '"' && inner.back() == '"') inner = inner.substr(1, inner.size() - 2);
        const auto field = resil::idempotency_key::parse_field(text);
        const auto reference = reference_parse(inner);
        FUZZ_CHECK(field.has_value() == reference.has_value());
        if (field) FUZZ_CHECK(field->bytes() == *reference);
    }
    if (size >= 16) {
        std::array<std::uint8_t, 16> bytes{};
        std::copy_n(data, 16, bytes.begin());
        const auto from = resil::idempotency_key::from_bytes(bytes);
        const int version = bytes[6] >> 4;
        FUZZ_CHECK(from.has_value() == ((bytes[8] >> 6) == 2 && version >= 1 && version <= 8));
        if (from) {
            FUZZ_CHECK(from->bytes() == bytes);
            check_key(*from);
        }
    }
    return 0;
}
