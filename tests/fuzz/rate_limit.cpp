// Fuzz harness: resil::read_rate_limit, resil::pushback_from and the value
// parsers of resil/rate_limit_fields.hpp.
//
// Input: 8 bytes choosing `now` (seconds within ±250 years of 1970 plus a
// fraction), then header fields, one per line, "Name: value" (a line without
// a colon is skipped; a name may come on several lines). Properties, for
// every input:
// - nothing throws (all are noexcept: a throw would terminate);
// - every duration is within [0, retry_after_max], every count within
//   [0, rate_limit_count_max]; a form of none has no member set; a window
//   only from an IETF form;
// - OWS around every value changes nothing;
// - the whole response reads as its most restrictive family read alone:
//   none is more restrictive than it, it is exhausted exactly when one is,
//   and then its reset is at least every exhausted one's; a lookup that sees
//   only first lines reads the same when no name repeats;
// - the pushback is at least the floor; Retry-After, when it parses, is the
//   pushback (raised to the floor), else retry-after-ms; a quota pushback is
//   an exhausted quota's reset;
// - a Go duration, retry-after-ms, an RFC 3339 reset and a reset are
//   capped, and the reset of a delay below 10^9 seconds does not depend on
//   `now`.
#include <resil/rate_limit_fields.hpp>

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

bool same_name(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

using field_list = std::vector<std::pair<std::string, std::string>>;

// Every line of a name (a header_lookup_lines), or, with `family`, only the
// names of that family of fields (as if the response had sent no others).
struct lookup {
    const field_list* fields;
    const std::vector<std::string_view>* family = nullptr;
    std::optional<std::string_view> operator()(std::string_view name, std::size_t index = 0) const noexcept {
        if (family) {
            bool in = false;
            for (const auto f : *family) in = in || same_name(f, name);
            if (!in) return std::nullopt;
        }
        for (const auto& [n, v] : *fields)
            if (same_name(n, name) && index-- == 0) return std::string_view(v);
        return std::nullopt;
    }
};

// The first line of a name only (a plain header_lookup).
struct first_line_lookup {
    const field_list* fields;
    std::optional<std::string_view> operator()(std::string_view name) const noexcept { return lookup{fields}(name); }
};

// The families read_rate_limit reads, each by the names of its fields.
const std::vector<std::vector<std::string_view>> families = {
    {"RateLimit", "RateLimit-Policy"},
    {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"},
    {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
    {"x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset"},
    {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
     "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
    {"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
     "anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining",
     "anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-input-tokens-limit",
     "anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset",
     "anthropic-ratelimit-output-tokens-limit", "anthropic-ratelimit-output-tokens-remaining",
     "anthropic-ratelimit-output-tokens-reset"},
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

    field_list fields, padded;
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

    using resil::rate_limit_form;
    const auto info = resil::read_rate_limit(lookup{&fields}, now);
    FUZZ_CHECK(in_range(info.limit) && in_range(info.remaining) && in_range(info.reset) && in_range(info.window));
    if (info.form == rate_limit_form::none) FUZZ_CHECK(info == resil::rate_limit_info{});
    if (info.window)
        FUZZ_CHECK((info.form == rate_limit_form::ietf || info.form == rate_limit_form::ietf_dictionary ||
                    info.form == rate_limit_form::ietf_legacy) &&
                   *info.window > duration::zero());
    FUZZ_CHECK(resil::read_rate_limit(lookup{&padded}, now) == info);

    // The most restrictive family wins, whatever else the response holds.
    bool any_exhausted = false;
    for (const auto& family : families) {
        const auto alone = resil::read_rate_limit(lookup{&fields, &family}, now);
        if (!alone.present()) continue;
        FUZZ_CHECK(info.present());
        FUZZ_CHECK(!resil::detail::more_restrictive(alone, info));
        if (alone.exhausted()) {
            any_exhausted = true;
            FUZZ_CHECK(info.exhausted());
            if (alone.reset) FUZZ_CHECK(info.reset && *info.reset >= *alone.reset);
        }
    }
    FUZZ_CHECK(info.exhausted() == any_exhausted);
    bool repeats = false;
    for (std::size_t i = 0; i < fields.size() && !repeats; ++i)
        for (std::size_t j = i + 1; j < fields.size() && !repeats; ++j) repeats = same_name(fields[i].first, fields[j].first);
    if (!repeats) FUZZ_CHECK(resil::read_rate_limit(first_line_lookup{&fields}, now) == info);

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
        const auto t = resil::parse_reset_timestamp(value, now);
        FUZZ_CHECK(in_range(d) && in_range(m) && in_range(r) && in_range(t));
        const std::string pad = " " + value + "\t";
        FUZZ_CHECK(resil::parse_reset_duration(pad) == d);
        FUZZ_CHECK(resil::parse_retry_after_ms(pad) == m);
        FUZZ_CHECK(resil::parse_rate_limit_reset(pad, now) == r);
        FUZZ_CHECK(resil::parse_reset_timestamp(pad, now) == t);
        // An RFC 3339 time is a date, a "T", a time and a zone: at least 20 bytes.
        if (t) FUZZ_CHECK(value.size() >= 20 && (value[10] == 'T' || value[10] == 't'));
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
