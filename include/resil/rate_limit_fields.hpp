// resil/rate_limit_fields.hpp — what a server says about its rate limits, and how
// long it asks a client to wait: the IETF RateLimit fields in each of their
// drafts' shapes, the X-RateLimit-* family and its vendor variants, the
// duration and timestamp resets some APIs send, and retry-after-ms, next to
// Retry-After.
//
//   auto lookup = [&](std::string_view name) { return r.header(name); };   // any letter case
//   resil::rate_limit_info q = resil::read_rate_limit(lookup, now);
//   if (q.exhausted() && q.reset) log("quota back in", *q.reset);
//   if (auto p = resil::pushback_from(lookup, now)) wait(p->wait);   // Retry-After first
//
// Forms read (`rate_limit_form`):
//   RateLimit: "default";r=0;t=30           ietf: draft-ietf-httpapi-ratelimit-headers-08
//   RateLimit-Policy: "default";q=100;w=60    and later, Structured Field lists (RFC 9651);
//                                            `t` is delay-seconds
//   RateLimit: limit=100, remaining=0, reset=5   ietf_dictionary: draft 07, a Structured
//   RateLimit-Policy: 100;w=60                   Field Dictionary (express-rate-limit's
//                                                "draft-7"); the policy matched by quota
//   RateLimit-Limit: 100                     ietf_legacy: drafts 00 to 06, Structured Field
//   RateLimit-Remaining: 0                   integers (RateLimit-Policy as in draft 07);
//   RateLimit-Reset: 30                      the reset heuristic below (GitLab sends Unix
//                                            time in this field)
//   X-RateLimit-Limit: 5000                  x_ratelimit: GitHub, Reddit, many others;
//   X-RateLimit-Remaining: 0                 digits (a fraction, Reddit's "0.0", rounded
//   X-RateLimit-Reset: 1717171717            down); the reset through the heuristic
//   x-rate-limit-remaining: 0                x_rate_limit: X's API, the same values
//   x-rate-limit-reset: 1705420800
//   x-ratelimit-remaining-requests: 0        x_ratelimit_split: OpenAI and similar, requests
//   x-ratelimit-reset-requests: 6m0s         and tokens; a Go duration ("6m0s", "1.5s")
//   anthropic-ratelimit-tokens-remaining: 0  anthropic: requests, tokens, input-tokens,
//   anthropic-ratelimit-tokens-reset:        output-tokens; the reset an RFC 3339 time
//       2025-08-21T12:40:59Z
//
// The most restrictive quota wins: of every member of a RateLimit field (on
// every line it was sent on), and of every form present in the response.
// One that says what remains beats one that does not; an exhausted one
// (remaining 0) beats any other, and among exhausted ones the later known
// reset (every one must be restored before a request passes); among the
// others, one that says a reset after now (a pace) beats one that does not,
// and of those the slower pace — remaining ÷ time to the reset: 2 left for
// 9 s binds more than 2 left for 1 s — wins; of the rest, the lower
// remaining. On a tie the first read stays, in the order above.
// Counts in different units (requests, tokens) are compared as they are:
// the fields do not say what a request costs.
//
// The reset heuristic (X-RateLimit-Reset, x-rate-limit-reset,
// RateLimit-Reset): a number N at or above 10^12 is milliseconds since the
// Unix epoch (10^12 ms is September 2001; as seconds it would be the year
// 33658); at or above 10^9 it is seconds since the epoch (10^9 s is also
// September 2001; as a delay it would be 31 years), as GitHub and X document
// and octokit reads it; below 10^9 it is delay-seconds, as the IETF drafts
// and Reddit define it. A number of any magnitude that reads as a time
// already past is a reset of zero.
//
// Malformed values are ignored, never guessed: a field that does not parse is
// as if absent (draft: "Malformed RateLimit header fields MUST be ignored";
// a RateLimit field with one malformed line is ignored whole), and every
// duration is capped at retry_after_max (2^31 s), so no value makes anyone
// sleep for years; whether a wait fits the deadline is the retry policy's
// decision.
//
// pushback_from's precedence, first match wins:
//   1. Retry-After (RFC 9110; the draft says it MUST take precedence)
//   2. retry-after-ms (a millisecond Retry-After; Azure OpenAI, OpenAI's SDKs)
//   3. the reset of an exhausted quota (remaining 0)
// then raised to pushback_options::floor (50 ms by default), so that a
// "Retry-After: 0" from an overloaded server is not a hot loop.
//
// Transport-agnostic: every function takes a header lookup, any callable
// `std::optional<std::string_view>(std::string_view name)` that finds the
// first field of that name in any letter case and does not throw; one that
// can also be called with (name, index) for the index-th field line of that
// name (header_lookup_lines) lets RateLimit and RateLimit-Policy be read
// from every line they were sent on (up to rate_limit_max_lines), else from
// the first. The other families are read from the first field of each name.
// Pure functions of their arguments: no allocation, no exceptions, no
// locale, constexpr; thread-safe.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "enum_name.hpp"
#include "detail/decimal_duration.hpp"
#include "detail/http_text.hpp"
#include "detail/platform.hpp"
#include "detail/rfc3339.hpp"
#include "detail/structured_fields.hpp"
#include "clock.hpp"
#include "retry_after.hpp"
#include "validation.hpp"

namespace resil {

/// Which fields a rate_limit_info was read from.
enum class rate_limit_form : std::uint8_t {
    none,              ///< no rate-limit field was present and well formed
    ietf,              ///< RateLimit (and RateLimit-Policy) as lists of named policies: the draft from version 08
    ietf_legacy,       ///< RateLimit-Limit / -Remaining / -Reset: the draft's versions 00 to 06
    x_ratelimit,       ///< X-RateLimit-Limit / -Remaining / -Reset
    x_ratelimit_split, ///< x-ratelimit-{limit,remaining,reset}-{requests,tokens}, resets as durations
    ietf_dictionary,   ///< RateLimit: limit=, remaining=, reset= (and RateLimit-Policy): the draft's version 07
    x_rate_limit,      ///< x-rate-limit-limit / -remaining / -reset (X's API)
    anthropic,         ///< anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*, RFC 3339 resets
};

/// The form's name, e.g. "ietf".
[[nodiscard]] constexpr enum_name to_string(rate_limit_form f) noexcept {
    switch (f) {
        case rate_limit_form::none: return "none";
        case rate_limit_form::ietf: return "ietf";
        case rate_limit_form::ietf_legacy: return "ietf_legacy";
        case rate_limit_form::x_ratelimit: return "x_ratelimit";
        case rate_limit_form::x_ratelimit_split: return "x_ratelimit_split";
        case rate_limit_form::ietf_dictionary: return "ietf_dictionary";
        case rate_limit_form::x_rate_limit: return "x_rate_limit";
        case rate_limit_form::anthropic: return "anthropic";
    }
    return "unknown";
}

/// Largest count reported; larger ones saturate to it. The largest Structured
/// Field integer (15 digits), used for every form alike.
inline constexpr std::int64_t rate_limit_count_max = 999'999'999'999'999;

/// The quota a response describes. Every member is empty unless its field
/// was present and well formed.
struct rate_limit_info {
    /// Which family of fields described it; none when no field was read.
    rate_limit_form form = rate_limit_form::none;
    /// The quota of the window (RateLimit-Policy's `q` for the IETF form, when
    /// the policy named by RateLimit is there).
    std::optional<std::int64_t> limit{};
    /// What is left of it; a fraction (Reddit's "0.0") is rounded down.
    std::optional<std::int64_t> remaining{};
    /// Time from `now` until the quota is restored, at most retry_after_max.
    std::optional<duration> reset{};
    /// The policy's window (RateLimit-Policy's `w`; the IETF forms only).
    std::optional<duration> window{};

    /// Nothing is left: a request now would be throttled.
    [[nodiscard]] constexpr bool exhausted() const noexcept { return remaining && *remaining == 0; }
    /// True when some rate-limit field was read.
    [[nodiscard]] constexpr bool present() const noexcept { return form != rate_limit_form::none; }
    /// Field-by-field equality.
    friend constexpr bool operator==(const rate_limit_info&, const rate_limit_info&) = default;
};

/// A callable finding the first header field named `name`, in any letter case.
template <class F>
concept header_lookup = std::invocable<const F&, std::string_view> &&
                        std::convertible_to<std::invoke_result_t<const F&, std::string_view>,
                                            std::optional<std::string_view>>;

/// A header_lookup that also finds the field line of a name at `index`
/// (0: the first, as lookup(name)), so that a RateLimit field sent on several
/// lines is read whole. resil::curl::response is read through one.
template <class F>
concept header_lookup_lines =
    header_lookup<F> && std::invocable<const F&, std::string_view, std::size_t> &&
    std::convertible_to<std::invoke_result_t<const F&, std::string_view, std::size_t>, std::optional<std::string_view>>;

/// The field lines of one name read at most: a RateLimit field on more lines
/// is read from its first 16 (a bound on the work a response can ask for).
inline constexpr std::size_t rate_limit_max_lines = 16;

/// The lowest wait pushback_from returns, by default.
inline constexpr duration default_pushback_floor = std::chrono::milliseconds{50};

/// Options of pushback_from.
struct pushback_options {
    /// Bounds of floor: none, up to a minute.
    static constexpr duration min_floor = duration::zero();
    /// The largest `floor` validate() accepts.
    static constexpr duration max_floor = std::chrono::minutes{1};
    /// Every wait is at least this long: "Retry-After: 0" waits 50 ms by
    /// default instead of retrying at once. Max attempts and the deadline
    /// still bound the retries. In [0, 1 min]; default 50 ms.
    duration floor = default_pushback_floor;

    /// The first invalid field, if any.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result pushback_options::validate() const {
    return detail::check_in_range("floor", floor, min_floor, max_floor);
}
#endif

/// Where a pushback came from.
enum class pushback_source : std::uint8_t {
    retry_after,     ///< Retry-After
    retry_after_ms,  ///< retry-after-ms
    quota_reset,     ///< the reset of an exhausted quota (rate_limit_info::reset)
};

/// The source's name, e.g. "retry_after".
[[nodiscard]] constexpr enum_name to_string(pushback_source s) noexcept {
    switch (s) {
        case pushback_source::retry_after: return "retry_after";
        case pushback_source::retry_after_ms: return "retry_after_ms";
        case pushback_source::quota_reset: return "quota_reset";
    }
    return "unknown";
}

/// How long the server asked the client to wait, and which field said so.
struct pushback {
    /// How long to wait, from when the response arrived.
    duration wait{};
    /// The field that said so.
    pushback_source source = pushback_source::retry_after;
    /// Field-by-field equality.
    friend constexpr bool operator==(const pushback&, const pushback&) = default;
};

namespace detail {

inline constexpr std::int64_t ns_per_second = 1'000'000'000;
inline constexpr std::int64_t rate_limit_cap_ns = retry_after_max.count() * ns_per_second;  // ≈ 2.1e18

/// A field that is one Structured Field item holding a non-negative integer
/// (parameters allowed and ignored), or, with `first_of_list`, a list whose
/// first member is one (the other members well formed).
[[nodiscard]] constexpr std::optional<std::int64_t> sf_count(std::string_view value, bool first_of_list) noexcept {
    sf_parser p(value);
    const auto item = p.bare_item();
    if (!item || !item->non_negative_integer()) return std::nullopt;
    const auto ignore = [](std::string_view, const sf_bare_item&) {};
    if (!p.parameters(ignore)) return std::nullopt;
    bool failed = false;
    if (!first_of_list) return p.at_end() ? std::optional{item->integer} : std::nullopt;
    while (p.next_member(failed)) {
        if (p.next_is('(') ? !p.skip_inner_list() : !p.bare_item()) return std::nullopt;
        if (!p.parameters(ignore)) return std::nullopt;
    }
    return failed ? std::nullopt : std::optional{item->integer};
}

/// ASCII digits (OWS around), saturated at rate_limit_count_max, with an
/// optional fraction ("599.0": Reddit) that is dropped: a count is rounded
/// down, so less than one whole request left reads as none left.
[[nodiscard]] constexpr std::optional<std::int64_t> plain_count(std::string_view value) noexcept {
    auto text = trim_ows(value);
    const auto n = take_decimal(text);
    if (!n || !text.empty()) return std::nullopt;
    return n->whole_value < rate_limit_count_max ? n->whole_value : rate_limit_count_max;
}

[[nodiscard]] constexpr duration capped_ns(std::int64_t ns) noexcept {
    return duration{ns < 0 ? 0 : (ns < rate_limit_cap_ns ? ns : rate_limit_cap_ns)};
}

/// Non-negative whole seconds as a duration, capped before multiplying.
[[nodiscard]] constexpr duration capped_seconds(std::int64_t s) noexcept {
    return s > retry_after_max.count() ? capped_ns(rate_limit_cap_ns) : capped_ns(s * ns_per_second);
}

/// The time from `now` until `n` whole seconds (or, `in_ms`, milliseconds)
/// since the Unix epoch plus its fraction: zero when already past; a whole
/// number rounded up to whole units; at most the cap. `n.whole` within
/// ±10^18.
[[nodiscard]] constexpr duration until_epoch_units(const decimal_number& n, bool in_ms,
                                                   std::chrono::system_clock::time_point now) noexcept {
    using std::chrono::milliseconds;
    using std::chrono::nanoseconds;
    using std::chrono::seconds;
    const std::int64_t unit_ns = in_ms ? 1'000'000 : ns_per_second;
    // Whole units first, in units, so that no count of nanoseconds since the
    // epoch is ever formed from the server's number: it may be far away.
    const std::int64_t now_units = in_ms ? std::chrono::floor<milliseconds>(now).time_since_epoch().count()
                                         : std::chrono::floor<seconds>(now).time_since_epoch().count();
    const std::int64_t units = n.whole - now_units;  // both below 10^18 in magnitude
    if (units < 0) return duration::zero();
    if (units > rate_limit_cap_ns / unit_ns) return capped_ns(rate_limit_cap_ns);
    const auto now_floor = in_ms ? std::chrono::time_point_cast<nanoseconds>(std::chrono::floor<milliseconds>(now))
                                 : std::chrono::time_point_cast<nanoseconds>(std::chrono::floor<seconds>(now));
    const std::int64_t into_unit = (std::chrono::time_point_cast<nanoseconds>(now) - now_floor).count();
    // A whole number: rounded up to whole units, as Retry-After's date is,
    // so the wait ends at or after the reset, never just before it.
    if (!n.has_fraction) return capped_ns(units * unit_ns);
    return capped_ns(units * unit_ns + n.fraction_ns - into_unit);
}

/// The reset heuristic (see the banner) for `n` whole units plus a fraction.
[[nodiscard]] constexpr duration reset_from_number(const decimal_number& n,
                                                   std::chrono::system_clock::time_point now) noexcept {
    if (n.whole < 1'000'000'000) return capped_ns(n.whole * ns_per_second + n.fraction_ns);  // delay-seconds
    return until_epoch_units(n, n.whole >= 1'000'000'000'000, now);
}

/// a·b < c·d for unsigned 64-bit factors, exactly (128-bit products from
/// 32-bit halves: no 128-bit type needed).
[[nodiscard]] constexpr bool product_less(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) noexcept {
    struct wide {
        std::uint64_t high, low;
    };
    const auto multiply = [](std::uint64_t x, std::uint64_t y) {
        constexpr std::uint64_t half = 0xFFFF'FFFF;
        const std::uint64_t low_low = (x & half) * (y & half), low_high = (x & half) * (y >> 32);
        const std::uint64_t high_low = (x >> 32) * (y & half), high_high = (x >> 32) * (y >> 32);
        const std::uint64_t middle = (low_low >> 32) + (low_high & half) + (high_low & half);
        return wide{high_high + (low_high >> 32) + (high_low >> 32) + (middle >> 32), (middle << 32) | (low_low & half)};
    };
    const wide left = multiply(a, b), right = multiply(c, d);
    return left.high != right.high ? left.high < right.high : left.low < right.low;
}

/// Whether quota `a` is more restrictive than `b` (the banner's rule):
/// 1. one that says what remains over one that does not;
/// 2. an exhausted one (remaining 0) over any other; among exhausted ones, a
///    known reset over an unknown one, then the later reset (every one must
///    be restored before a request passes);
/// 3. among the others, one with a reset after now (it says a pace) over
///    one without; among those, the slower pace (remaining ÷ time to the
///    reset, compared exactly); among the rest, the lower remaining.
/// A strict weak order, so the most restrictive of several does not depend
/// on the order they are read in; false on a tie (the one read first stays).
[[nodiscard]] constexpr bool more_restrictive(const rate_limit_info& a, const rate_limit_info& b) noexcept {
    if (a.remaining.has_value() != b.remaining.has_value()) return a.remaining.has_value();
    if (!a.remaining) return false;
    const std::int64_t left_a = *a.remaining, left_b = *b.remaining;
    if ((left_a == 0) != (left_b == 0)) return left_a == 0;
    if (left_a == 0) return a.reset && (!b.reset || *a.reset > *b.reset);
    const bool paced_a = a.reset && a.reset->count() > 0, paced_b = b.reset && b.reset->count() > 0;
    if (paced_a != paced_b) return paced_a;
    if (!paced_a) return left_a < left_b;
    // left_a / reset_a < left_b / reset_b, without dividing.
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    return product_less(u(left_a), u(b.reset->count()), u(left_b), u(a.reset->count()));
}

/// Keeps in `best` the more restrictive of it and `candidate`.
constexpr void keep_most_restrictive(std::optional<rate_limit_info>& best,
                                     const std::optional<rate_limit_info>& candidate) noexcept {
    if (candidate && (!best || more_restrictive(*candidate, *best))) best = candidate;
}

/// The field line of `name` at `index` (0: the first); past the first only
/// when the lookup can find more (header_lookup_lines).
template <class Lookup>
[[nodiscard]] constexpr std::optional<std::string_view> field_line(const Lookup& lookup, std::string_view name,
                                                                   std::size_t index) noexcept {
    if constexpr (header_lookup_lines<Lookup>) {
        return std::optional<std::string_view>(lookup(name, index));
    } else {
        if (index != 0) return std::nullopt;
        return std::optional<std::string_view>(lookup(name));
    }
}

/// The quota one RateLimit line names, with the name of its policy (the list
/// form; empty for the dictionary form).
struct ietf_quota {
    rate_limit_info info;
    std::string_view policy_name{};
};

/// One RateLimit line in the list form of draft 08 and later: its most
/// restrictive member.
[[nodiscard]] constexpr std::optional<ietf_quota> read_ietf_list(std::string_view line) noexcept {
    sf_parser p(line);
    bool failed = false;
    std::optional<ietf_quota> best;
    do {
        // Each member: a policy's name (a String), r (REQUIRED, a
        // non-negative Integer), t (optional, a non-negative Integer).
        const auto name = p.bare_item();
        if (!name || name->type != sf_bare_item::kind::string) return std::nullopt;
        std::optional<sf_bare_item> r, t;
        const bool ok = p.parameters([&](std::string_view key, const sf_bare_item& v) {
            if (key == "r") r = v;
            if (key == "t") t = v;
        });
        if (!ok || !r || !r->non_negative_integer() || (t && !t->non_negative_integer())) return std::nullopt;
        ietf_quota q{rate_limit_info{rate_limit_form::ietf}, name->text};
        q.info.remaining = r->integer;
        if (t) q.info.reset = capped_seconds(t->integer);
        if (!best || more_restrictive(q.info, best->info)) best = q;
    } while (p.next_member(failed));
    if (failed) return std::nullopt;
    return best;
}

/// One RateLimit line in draft 07's dictionary form: limit (REQUIRED),
/// remaining (optional), reset (REQUIRED, delay-seconds), each a
/// non-negative Integer; other keys and every parameter ignored; a key given
/// twice keeps its last value (RFC 9651 §4.2.2).
[[nodiscard]] constexpr std::optional<rate_limit_info> read_ietf_dictionary(std::string_view line) noexcept {
    sf_parser p(line);
    bool failed = false;
    std::optional<sf_bare_item> limit, remaining, reset;
    do {
        std::string_view key;
        sf_bare_item value;
        if (!p.dictionary_member(key, value)) return std::nullopt;
        if (key == "limit") limit = value;
        if (key == "remaining") remaining = value;
        if (key == "reset") reset = value;
    } while (p.next_member(failed));
    if (failed || !limit || !limit->non_negative_integer() || !reset || !reset->non_negative_integer() ||
        (remaining && !remaining->non_negative_integer()))
        return std::nullopt;
    rate_limit_info info{rate_limit_form::ietf_dictionary};
    info.limit = limit->integer;
    if (remaining) info.remaining = remaining->integer;
    info.reset = capped_seconds(reset->integer);
    return info;
}

/// RateLimit-Policy in the list form of draft 08 and later: the limit (`q`)
/// and window (`w`) of the first policy named `name`, into `info`. A
/// malformed line leaves `info` as it was: the field is ignored as a whole.
template <class Lookup>
constexpr void read_named_policy(const Lookup& lookup, std::string_view name, rate_limit_info& info) noexcept {
    std::optional<std::int64_t> limit;
    std::optional<duration> window;
    for (std::size_t i = 0; i < rate_limit_max_lines; ++i) {
        const auto line = field_line(lookup, "RateLimit-Policy", i);
        if (!line) break;
        // A quota policy: its name (a String), q (REQUIRED, a non-negative
        // Integer), w (optional, a positive Integer).
        sf_parser q(*line);
        bool failed = false;
        do {
            const auto policy = q.bare_item();
            std::optional<sf_bare_item> quota, w;
            const bool ok = policy && q.parameters([&](std::string_view key, const sf_bare_item& v) {
                if (key == "q") quota = v;
                if (key == "w") w = v;
            });
            if (!ok || policy->type != sf_bare_item::kind::string || !quota || !quota->non_negative_integer() ||
                (w && (!w->non_negative_integer() || w->integer == 0)))
                return;
            if (policy->text == name && !limit) {  // the first policy of that name
                limit = quota->integer;
                if (w) window = capped_seconds(w->integer);
            }
        } while (q.next_member(failed));
        if (failed) return;
    }
    info.limit = limit;
    info.window = window;
}

/// RateLimit-Policy in the form of drafts 03 to 07 (`100;w=60, 1000;w=3600`:
/// Integers, each with `w` REQUIRED, a positive Integer): the window of the
/// first policy whose quota is `info.limit`, into `info` ("two quota policies
/// MUST NOT be associated with the same quota units value"). A malformed
/// line leaves `info` as it was.
template <class Lookup>
constexpr void read_quota_policy(const Lookup& lookup, rate_limit_info& info) noexcept {
    if (!info.limit) return;
    std::optional<duration> window;
    for (std::size_t i = 0; i < rate_limit_max_lines; ++i) {
        const auto line = field_line(lookup, "RateLimit-Policy", i);
        if (!line) break;
        sf_parser q(*line);
        bool failed = false;
        do {
            const auto quota = q.bare_item();
            std::optional<sf_bare_item> w;
            const bool ok = quota && q.parameters([&](std::string_view key, const sf_bare_item& v) {
                if (key == "w") w = v;
            });
            if (!ok || !quota->non_negative_integer() || !w || !w->non_negative_integer() || w->integer == 0) return;
            if (quota->integer == *info.limit && !window) window = capped_seconds(w->integer);
        } while (q.next_member(failed));
        if (failed) return;
    }
    info.window = window;
}

/// The RateLimit field, every line of it (up to rate_limit_max_lines), each
/// line in the list form (draft 08 and later) or the dictionary form (draft
/// 07): the most restrictive quota of all, with its policy. One malformed
/// line and the field is ignored as a whole.
template <class Lookup>
[[nodiscard]] constexpr std::optional<rate_limit_info> read_ietf(const Lookup& lookup) noexcept {
    std::optional<ietf_quota> best;
    for (std::size_t i = 0; i < rate_limit_max_lines; ++i) {
        const auto line = field_line(lookup, "RateLimit", i);
        if (!line) break;
        auto q = read_ietf_list(*line);
        if (!q) {
            const auto dictionary = read_ietf_dictionary(*line);
            if (!dictionary) return std::nullopt;
            q = ietf_quota{*dictionary};
        }
        if (!best || more_restrictive(q->info, best->info)) best = q;
    }
    if (!best) return std::nullopt;
    if (best->info.form == rate_limit_form::ietf) {
        read_named_policy(lookup, best->policy_name, best->info);
    } else {
        read_quota_policy(lookup, best->info);
    }
    return best->info;
}

/// Limit, remaining and reset from three fields, each read by its parser;
/// nothing when none of them is well formed.
template <class ReadCount, class ReadReset>
[[nodiscard]] constexpr std::optional<rate_limit_info> read_triple(rate_limit_form form,
                                                                   std::optional<std::string_view> limit,
                                                                   std::optional<std::string_view> remaining,
                                                                   std::optional<std::string_view> reset,
                                                                   ReadCount read_count, ReadReset read_reset,
                                                                   bool limit_is_list) noexcept {
    rate_limit_info info{form};
    if (limit) info.limit = read_count(*limit, limit_is_list);
    if (remaining) info.remaining = read_count(*remaining, false);
    if (reset) info.reset = read_reset(*reset);
    if (!info.limit && !info.remaining && !info.reset) return std::nullopt;
    return info;
}

/// The names of one quota's three fields.
struct quota_field_names {
    std::string_view limit, remaining, reset;
};

/// OpenAI's requests and tokens.
inline constexpr quota_field_names openai_quotas[] = {
    {"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"},
    {"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
};

/// Anthropic's four quotas.
inline constexpr quota_field_names anthropic_quotas[] = {
    {"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
     "anthropic-ratelimit-requests-reset"},
    {"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset"},
    {"anthropic-ratelimit-input-tokens-limit", "anthropic-ratelimit-input-tokens-remaining",
     "anthropic-ratelimit-input-tokens-reset"},
    {"anthropic-ratelimit-output-tokens-limit", "anthropic-ratelimit-output-tokens-remaining",
     "anthropic-ratelimit-output-tokens-reset"},
};

/// A header_lookup_lines over an object with `header(name)` and, where it
/// has one, `header(name, index)` (resil::curl::response), both returning
/// std::optional<std::string_view>.
template <class Fields>
struct fields_lookup {
    const Fields* fields;
    constexpr std::optional<std::string_view> operator()(std::string_view name) const {
        return fields->header(name);
    }
    constexpr std::optional<std::string_view> operator()(std::string_view name, std::size_t index) const
        requires requires(const Fields& f, std::string_view n, std::size_t i) {
            { f.header(n, i) } -> std::convertible_to<std::optional<std::string_view>>;
        }
    {
        return fields->header(name, index);
    }
};

}  // namespace detail

/// Parses a Go-style duration ("6m0s", "20ms", "1.5s", "1h2m3.5s", "0"), as
/// OpenAI's x-ratelimit-reset-requests and -tokens send it: one or more
/// components, each digits with an optional fraction and a unit (ns, us, µs,
/// ms, s, m, h). No sign (a wait is never negative), no space inside, no
/// unit-less number but "0". Saturates at retry_after_max; fractions past
/// nanoseconds are dropped. OWS around is ignored.
[[nodiscard]] constexpr std::optional<duration> parse_reset_duration(std::string_view value) noexcept {
    auto text = detail::trim_ows(value);
    if (text == "0") return duration::zero();
    if (text.empty()) return std::nullopt;
    std::int64_t total = 0;
    while (!text.empty()) {
        const auto component = detail::take_duration_component(text, true);
        if (!component) return std::nullopt;
        const std::int64_t unit_ns = component->unit->nanoseconds;
        const auto n = detail::decimal_value(component->number, unit_ns);
        // Saturating: the whole part alone may exceed the cap by far.
        const std::int64_t room = detail::rate_limit_cap_ns - total;
        if (n.whole > room / unit_ns) return detail::capped_ns(detail::rate_limit_cap_ns);
        total += n.whole * unit_ns;
        total = n.fraction_ns > detail::rate_limit_cap_ns - total ? detail::rate_limit_cap_ns : total + n.fraction_ns;
    }
    return detail::capped_ns(total);
}

/// Parses retry-after-ms: milliseconds, digits with an optional fraction
/// ("250", "1500.5"). Signs, exponents and anything else are malformed.
/// Saturates at retry_after_max. OWS around is ignored.
[[nodiscard]] constexpr std::optional<duration> parse_retry_after_ms(std::string_view value) noexcept {
    constexpr std::int64_t ns_per_ms = 1'000'000;
    const auto n = detail::parse_decimal(value, ns_per_ms);
    if (!n) return std::nullopt;
    if (n->whole > detail::rate_limit_cap_ns / ns_per_ms) return detail::capped_ns(detail::rate_limit_cap_ns);
    return detail::capped_ns(n->whole * ns_per_ms + n->fraction_ns);
}

/// Parses an X-RateLimit-Reset (or an old RateLimit-Reset) value, digits
/// with an optional fraction, through the reset heuristic of the banner:
/// ≥ 10^12 milliseconds since the epoch, ≥ 10^9 seconds since the epoch,
/// else delay-seconds. A time already past gives zero; a whole number of
/// epoch units is rounded up to whole units. At most retry_after_max.
[[nodiscard]] constexpr std::optional<duration> parse_rate_limit_reset(
    std::string_view value, std::chrono::system_clock::time_point now) noexcept {
    // The fraction's precision is that of the unit: read it in nanoseconds of
    // a second first, then of a millisecond when the number turns out to be one.
    auto n = detail::parse_decimal(value, detail::ns_per_second);
    if (!n) return std::nullopt;
    if (n->whole >= 1'000'000'000'000) n = detail::parse_decimal(value, 1'000'000);
    return detail::reset_from_number(*n, now);
}

/// Parses an RFC 3339 date-time ("2025-08-21T12:40:59Z",
/// "2025-08-21T14:40:59.5+02:00"), as Anthropic's anthropic-ratelimit-*-reset
/// sends it, into the time from `now` until then: zero when already past; a
/// time in whole seconds is rounded up to whole seconds, as Retry-After's
/// HTTP-date is, so the wait never ends just before the reset; at most
/// retry_after_max. "T" and "Z" in either case; OWS around is ignored.
[[nodiscard]] constexpr std::optional<duration> parse_reset_timestamp(
    std::string_view value, std::chrono::system_clock::time_point now) noexcept {
    const auto instant = detail::parse_rfc3339_exact(detail::trim_ows(value));
    if (!instant) return std::nullopt;
    return detail::until_epoch_units({instant->seconds, instant->nanoseconds, instant->has_fraction}, false, now);
}

/// Reads the rate-limit fields of one response: every form of the banner
/// that is present and well formed, and of them the most restrictive quota
/// (see the banner). `now` is the moment the response arrived: Unix-time and
/// RFC 3339 resets are measured from it. With a header_lookup_lines, a
/// RateLimit or RateLimit-Policy field on several lines is read whole.
template <header_lookup Lookup>
[[nodiscard]] constexpr rate_limit_info read_rate_limit(const Lookup& lookup,
                                                        std::chrono::system_clock::time_point now) noexcept {
    const auto find = [&](std::string_view name) -> std::optional<std::string_view> { return lookup(name); };
    std::optional<rate_limit_info> best;
    detail::keep_most_restrictive(best, detail::read_ietf(lookup));

    const auto sf_count_of = [](std::string_view v, bool list) { return detail::sf_count(v, list); };
    const auto plain_count_of = [](std::string_view v, bool) { return detail::plain_count(v); };
    const auto reset = [now](std::string_view v) -> std::optional<duration> {
        return parse_rate_limit_reset(v, now);
    };
    const auto sf_reset = [now](std::string_view v) -> std::optional<duration> {
        const auto n = detail::sf_count(v, false);
        if (!n) return std::nullopt;
        return detail::reset_from_number({*n, 0, false}, now);
    };
    auto legacy = detail::read_triple(rate_limit_form::ietf_legacy, find("RateLimit-Limit"), find("RateLimit-Remaining"),
                                      find("RateLimit-Reset"), sf_count_of, sf_reset, true);
    if (legacy) detail::read_quota_policy(lookup, *legacy);  // drafts 03 to 06 send one
    detail::keep_most_restrictive(best, legacy);
    detail::keep_most_restrictive(
        best, detail::read_triple(rate_limit_form::x_ratelimit, find("X-RateLimit-Limit"), find("X-RateLimit-Remaining"),
                                  find("X-RateLimit-Reset"), plain_count_of, reset, false));
    detail::keep_most_restrictive(
        best, detail::read_triple(rate_limit_form::x_rate_limit, find("x-rate-limit-limit"),
                                  find("x-rate-limit-remaining"), find("x-rate-limit-reset"), plain_count_of, reset,
                                  false));
    const auto duration_reset = [](std::string_view v) { return parse_reset_duration(v); };
    for (const auto& names : detail::openai_quotas)
        detail::keep_most_restrictive(
            best, detail::read_triple(rate_limit_form::x_ratelimit_split, find(names.limit), find(names.remaining),
                                      find(names.reset), plain_count_of, duration_reset, false));
    const auto timestamp_reset = [now](std::string_view v) { return parse_reset_timestamp(v, now); };
    for (const auto& names : detail::anthropic_quotas)
        detail::keep_most_restrictive(
            best, detail::read_triple(rate_limit_form::anthropic, find(names.limit), find(names.remaining),
                                      find(names.reset), plain_count_of, timestamp_reset, false));
    return best.value_or(rate_limit_info{});
}

/// How long the server asked the client to wait before another request, by
/// the precedence of the banner (Retry-After, retry-after-ms, the reset of an
/// exhausted quota), raised to options.floor; nothing when no field says.
/// `now`: the moment the response arrived.
template <header_lookup Lookup>
[[nodiscard]] constexpr std::optional<pushback> pushback_from(const Lookup& lookup,
                                                              std::chrono::system_clock::time_point now,
                                                              const pushback_options& options = {}) noexcept {
    const auto floored = [&](duration wait, pushback_source source) {
        return pushback{wait < options.floor ? options.floor : wait, source};
    };
    if (const auto value = std::optional<std::string_view>(lookup("Retry-After")))
        if (const auto wait = parse_retry_after(*value, now)) return floored(*wait, pushback_source::retry_after);
    if (const auto value = std::optional<std::string_view>(lookup("retry-after-ms")))
        if (const auto wait = parse_retry_after_ms(*value)) return floored(*wait, pushback_source::retry_after_ms);
    const auto quota = read_rate_limit(lookup, now);
    if (quota.exhausted() && quota.reset) return floored(*quota.reset, pushback_source::quota_reset);
    return std::nullopt;
}

}  // namespace resil
