// Fuzz harness: the deadline propagation header (grpc-timeout),
// resil::decode_timeout_header and resil::encode_timeout_header.
//
// Properties, for every input:
// - decode accepts exactly the grammar 1*8DIGIT ("H" / "M" / "S" / "m" / "u"
//   / "n") (checked against an independent reading) and never gives a
//   negative duration;
// - the decoded value is digits × unit, saturated at duration::max();
// - encode(decoded) is at most 9 characters, decodes again, never to more
//   than it was given (rounding down), and encoding is stable:
//   decode(encode(decode(encode(d)))) == decode(encode(d));
// - the same for the first 8 bytes read as a duration (any int64 count).
#include <resil/deadline.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "fuzz_check.hpp"

namespace {

// grpc-timeout per PROTOCOL-HTTP2.md, read independently of the library.
std::optional<resil::duration> reference_decode(std::string_view text) {
    if (text.size() < 2 || text.size() > 9) return std::nullopt;
    std::int64_t value = 0;  // at most 8 digits
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
        if (text[i] < '0' || text[i] > '9') return std::nullopt;
        value = value * 10 + (text[i] - '0');
    }
    std::int64_t unit = 0;
    switch (text.back()) {
        case 'H': unit = 3'600'000'000'000; break;
        case 'M': unit = 60'000'000'000; break;
        case 'S': unit = 1'000'000'000; break;
        case 'm': unit = 1'000'000; break;
        case 'u': unit = 1'000; break;
        case 'n': unit = 1; break;
        default: return std::nullopt;
    }
    constexpr auto max = std::numeric_limits<resil::duration::rep>::max();
    return resil::duration{value > max / unit ? max : value * unit};
}

void check_encoding(resil::duration d) {
    const auto text = resil::encode_timeout_header(d);
    FUZZ_CHECK(text.size >= 2 && text.size <= 9);
    const auto back = resil::decode_timeout_header(text.view());
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(*back >= resil::duration::zero());
    if (d <= resil::duration::zero()) {
        FUZZ_CHECK(text.view() == "0n");
        return;
    }
    FUZZ_CHECK(*back <= d);  // the next hop never gets more time than is left
    // Rounded down by less than one unit of the encoding.
    const char unit = text.view().back();
    const std::int64_t unit_ns = unit == 'n' ? 1 : unit == 'u' ? 1'000 : unit == 'm' ? 1'000'000
                               : unit == 'S' ? 1'000'000'000 : unit == 'M' ? 60'000'000'000 : 3'600'000'000'000;
    FUZZ_CHECK((d - *back).count() < unit_ns);
    // Stable in value (not always in text: 1666666H is back as 99999960M,
    // the finest unit that fits 8 digits).
    FUZZ_CHECK(resil::decode_timeout_header(resil::encode_timeout_header(*back).view()) == back);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = resil_fuzz::text_of(data, size);
    const auto decoded = resil::decode_timeout_header(text);
    FUZZ_CHECK(decoded == reference_decode(text));
    if (decoded) {
        FUZZ_CHECK(*decoded >= resil::duration::zero());
        check_encoding(*decoded);
    }
    if (size >= 8) {
        std::int64_t count = 0;
        std::memcpy(&count, data, 8);
        check_encoding(resil::duration{count});
    }
    return 0;
}
