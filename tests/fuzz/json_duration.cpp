// Fuzz harness: duration texts of configuration files,
// resil::json::parse_duration and format_duration (json/duration.hpp).
//
// Properties, for every input:
// - parse_duration never throws and gives a value or a reason, never both;
// - a value is never negative, and formats to a text that parses back to it
//   (as nanoseconds, milliseconds and seconds);
// - the first 8 bytes as a count of nanoseconds (any non-negative int64)
//   format to a text that parses back exactly.
#include <resil/json/duration.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"

namespace {

template <class Duration>
void check_text(std::string_view text) {
    namespace rj = resil::json;
    const auto parsed = rj::parse_duration<Duration>(text);
    FUZZ_CHECK(parsed.has_value() == (parsed.error() == rj::duration_text_error::none));
    if (!parsed) return;
    FUZZ_CHECK(*parsed >= Duration::zero());
    const auto written = rj::format_duration(*parsed);
    const auto back = rj::parse_duration<Duration>(written);
    FUZZ_CHECK(back && *back == *parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = resil_fuzz::text_of(data, size);
    check_text<std::chrono::nanoseconds>(text);
    check_text<std::chrono::milliseconds>(text);
    check_text<std::chrono::seconds>(text);
    if (size >= 8) {
        std::int64_t count = 0;
        std::memcpy(&count, data, 8);
        if (count < 0) count = -(count + 1);  // every non-negative count, INT64_MAX included
        const std::chrono::nanoseconds d{count};
        const auto written = resil::json::format_duration(d);
        const auto back = resil::json::parse_duration(written);
        FUZZ_CHECK(back && *back == d);
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d);
        const auto back_ms = resil::json::parse_duration<std::chrono::milliseconds>(resil::json::format_duration(ms));
        FUZZ_CHECK(back_ms && *back_ms == ms);
    }
    return 0;
}
