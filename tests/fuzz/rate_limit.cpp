// Fuzz harness: resil::read_rate_limit, resil::pushback_from and the value
// parsers of resil/rate_limit.hpp.
//
// Input: 8 bytes choosing `now` (seconds within ±250 years of 1970 plus a
// fraction), then header fields, one per line, "Name: value" (a line without
// a colon is skipped). Properties, for every input:
// - nothing throws (all are noexcept: a throw would terminate);
// - every duration is within [0, retry_after_max], every count within
//   [0, rate_limit_count_max]; a form of none has no member set;
// - OWS around every value changes nothing;
// - the pushback is at least the floor; Retry-After, when it parses, is the
//   pushback (raised to the floor), else retry-after-ms; a quota pushback is
//   an exhausted quota's reset;
// - a Go duration, retry-after-ms and a reset are capped, and the reset of a
//   delay below 10^9 seconds does not depend on `now`.
#include <resil/rate_limit.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"

namespace {

using resil::duration;
using std::chrono::system_clock;

struct lookup {
    const std::vector<std::pair<std::string, std::string>>* fields;
    std::optional<std::string_view> operator()(std::string_view name) const noexcept {
        for (const auto& [n, v] : *fields) {
            if (n.size() != name.size()) continue;
            bool same = true;
            for (std::size_t i = 0; i < n.size() && same; ++i) {
                const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
                same = lower(n[i]) == lower(name[i]);
            }
            if (same) return std::string_view(v);
        }
        return std::nullopt;
    }
};

bool in_range(const std::optional<duration>& d) {
    return !d || (*d >= duration::zero() && *d <= resil::retry_after_max);
}
bool in_range(const std::optional<std::int64_t>& n) { return !n || (*n >= 0 && *n <= resil::rate_limit_count_max); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8) return 0;
    std::uint64_t bits = 0;
    std::memcpy(&bits, data, 8);
    constexpr std::int64_t span = 250LL * 366 * 86400;
    const auto whole = static_cast<std::int64_t>(bits % static_cast<std::uint64_t>(2 * span + 1)) - span;
    const auto fraction = static_cast<std::int64_t>((bits >> 40) % 1'000'000'000);
    const auto now = system_clock::time_point{} + std::chrono::duration_cast<system_clock::duration>(
                                                      std::chrono::seconds{whole} + std::chrono::nanoseconds{fraction});
    const std::string_view text = resil_fuzz::text_of(data + 8, size - 8);

    std::vector<std::pair<std::string, std::string>> fields, padded;
    for (std::size_t at = 0; at <= text.size();) {
        auto end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        const auto line = text.substr(at, end - at);
        at = end + 1;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        auto value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        fields.emplace_back(std::string(line.substr(0, colon)), std::string(value));
        padded.emplace_back(std::string(line.substr(0, colon)), " \t" + std::string(value) + "\t ");
    }

    const auto info = resil::read_rate_limit(lookup{&fields}, now);
    FUZZ_CHECK(in_range(info.limit) && in_range(info.remaining) && in_range(info.reset) && in_range(info.window));
    if (info.form == resil::rate_limit_form::none) FUZZ_CHECK(info == resil::rate_limit_info{});
    if (info.window) FUZZ_CHECK(info.form == resil::rate_limit_form::ietf && *info.window > duration::zero());
    FUZZ_CHECK(resil::read_rate_limit(lookup{&padded}, now) == info);

    const resil::pushback_options options{};
    const auto p = resil::pushback_from(lookup{&fields}, now, options);
    FUZZ_CHECK(resil::pushback_from(lookup{&padded}, now, options) == p);
    const auto floored = [&](duration d) { return d < options.floor ? options.floor : d; };
    const lookup find{&fields};
    const auto retry_after = find("Retry-After") ? resil::parse_retry_after(*find("Retry-After"), now) : std::nullopt;
    const auto ms = find("retry-after-ms") ? resil::parse_retry_after_ms(*find("retry-after-ms")) : std::nullopt;
    if (retry_after) {
        FUZZ_CHECK(p && p->source == resil::pushback_source::retry_after && p->wait == floored(*retry_after));
    } else if (ms) {
        FUZZ_CHECK(p && p->source == resil::pushback_source::retry_after_ms && p->wait == floored(*ms));
    } else if (info.exhausted() && info.reset) {
        FUZZ_CHECK(p && p->source == resil::pushback_source::quota_reset && p->wait == floored(*info.reset));
    } else {
        FUZZ_CHECK(!p);
    }
    if (p) FUZZ_CHECK(p->wait >= options.floor && p->wait <= resil::retry_after_max);

    // Each value through each parser.
    for (const auto& [name, value] : fields) {
        const auto d = resil::parse_reset_duration(value);
        const auto m = resil::parse_retry_after_ms(value);
        const auto r = resil::parse_rate_limit_reset(value, now);
        FUZZ_CHECK(in_range(d) && in_range(m) && in_range(r));
        const std::string pad = " " + value + "\t";
        FUZZ_CHECK(resil::parse_reset_duration(pad) == d);
        FUZZ_CHECK(resil::parse_retry_after_ms(pad) == m);
        FUZZ_CHECK(resil::parse_rate_limit_reset(pad, now) == r);
        // Digits only: retry-after-ms is the number of milliseconds, and a
        // delay below 10^9 s reads the same at any moment.
        if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
            FUZZ_CHECK(m.has_value() && r.has_value());
            if (value.size() <= 9)  // below 10^9
                FUZZ_CHECK(r == resil::parse_rate_limit_reset(value, system_clock::time_point{}));
        }
        // A Go duration's digits alone are not one ("0" aside).
        if (d && value != "0") FUZZ_CHECK(value.find_first_not_of("0123456789.") != std::string::npos);
    }
    return 0;
}
