// resil/json.hpp — policy options from JSON and back (nlohmann/json), so
// operators tune a dependency's pipeline in a file instead of a rebuild.
//
//   // triton.json: {"deadline": "250ms", "retry": {"max_attempts": 3}, "circuit_breaker": {"open_for": "30s"}}
//   auto cfg = resil::json::load_config("triton.json");     // throws resil::json::config_error
//   resil::circuit_breaker breaker{cfg.circuit_breaker.value_or(resil::circuit_breaker_options{})};
//   auto pipe = resil::pipeline(resil::deadline_policy{cfg.deadline.value_or(250ms)},
//                               resil::retry_policy{cfg.retry.value_or(resil::retry_options{})},
//                               std::ref(breaker));
//
//   nlohmann::json j = resil::json::write(breaker.options());    // {"mode": "time_window", ...}
//   auto back = resil::json::read<resil::circuit_breaker_options>(j, "circuit_breaker");
//
// Durations are strings with a unit ("250ms", "1.5s", "2m", "100us", "1h"; see
// json/duration.hpp); bare numbers are refused, since their unit would be a
// guess. Reading is strict: an unknown key (a typo), a wrong type, a value out
// of the range the policy's constructor accepts, a duplicate key — each is a
// config_error naming the JSON path and the reason
// ("retry.max_attempts: must be >= 1, got 0"). A missing key takes the
// documented default. Writing gives every key (null for "no limit" and
// "unset") in the documented order, and reading it back gives the same
// options. docs/observability.md lists every key with its type, default and
// range.
//
// Needs the resil::json CMake target (nlohmann_json 3.9 or later).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "circuit_breaker.hpp"
#include "backoff.hpp"
#include "clock.hpp"
#include "concurrency_limit.hpp"
#include "deadline_policy.hpp"
#include "detail/gcra.hpp"
#include "json/duration.hpp"
#include "outcome.hpp"
#include "retry.hpp"
#include "retry_budget.hpp"
#include "timeouts.hpp"
#include "token_bucket.hpp"

namespace resil::json {

/// A configuration that cannot be used: where (a JSON path such as
/// `retry.backoff.cap` or `circuit_breaker.failure_verdicts[1]`, empty for
/// the document itself) and why. what() is "path: reason", prefixed with the
/// file name when read by load_config().
class config_error : public std::invalid_argument {
public:
    config_error(std::string path, std::string reason, std::string source = {})
        : std::invalid_argument(compose(source, path, reason)),
          path_(std::move(path)),
          reason_(std::move(reason)),
          source_(std::move(source)) {}

    /// The JSON path of the offending value; empty for the whole document.
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// What is wrong with it, e.g. "must be >= 1, got 0".
    [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
    /// The file it came from (load_config), or empty.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }

private:
    static std::string compose(const std::string& source, const std::string& path, const std::string& reason) {
        std::string out;
        if (!source.empty()) out += source + ": ";
        if (!path.empty()) out += path + ": ";
        return out + reason;
    }
    std::string path_;
    std::string reason_;
    std::string source_;
};

/// Every option of a dependency's pipeline, each optional: a section absent
/// from the file is empty here (the caller picks its own default or leaves
/// the policy out). JSON keys are the member names.
struct pipeline_config {
    std::optional<duration> deadline{};                             ///< "deadline": "250ms"
    std::optional<resil::timeouts> timeouts{};                      ///< "timeouts": {...}
    std::optional<retry_options> retry{};                           ///< "retry": {...} (budget pointer unset)
    std::optional<retry_budget_options> retry_budget{};             ///< "retry_budget": {...}
    std::optional<circuit_breaker_options> circuit_breaker{};       ///< "circuit_breaker": {...} (no callback)
    std::optional<token_bucket_options> token_bucket{};             ///< "token_bucket": {...}
    std::optional<concurrency_limit_options> concurrency_limit{};   ///< "concurrency_limit": {...}
};

namespace detail {

template <class T>
inline constexpr bool dependent_false = false;

/// `path.key`, or `path["key with spaces"]` when the key is not an identifier.
inline std::string join(std::string_view path, std::string_view key) {
    bool identifier = !key.empty() && !(key[0] >= '0' && key[0] <= '9');
    for (char c : key)
        identifier = identifier && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    if (identifier) return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
    return std::string(path) + "[" + nlohmann::json(std::string(key)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "]";
}

inline std::string join(std::string_view path, std::size_t index) {
    return std::string(path) + "[" + std::to_string(index) + "]";
}

/// A value as a message shows it: scalars as JSON text (shortened), containers by kind.
template <class Json>
std::string shown(const Json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array";
    auto text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.size() > 48) text = text.substr(0, 45) + "...";
    return text;
}

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            std::size_t best = diagonal + cost;
            if (above + 1 < best) best = above + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// The keys of one JSON object, checked against the ones it may have.
template <class Json>
class object_reader {
public:
    object_reader(const Json& j, std::string path, std::initializer_list<std::string_view> known)
        : j_(j), path_(std::move(path)) {
        if (!j.is_object()) throw config_error(path_, "must be an object, got " + shown(j));
        for (auto it = j.begin(); it != j.end(); ++it) {
            bool ok = false;
            for (auto k : known) ok = ok || k == it.key();
            if (!ok) throw config_error(join(path_, it.key()), unknown_key(it.key(), known));
        }
    }

    /// The value at `key`, or null when it is absent.
    [[nodiscard]] const Json* find(std::string_view key) const {
        const auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }
    [[nodiscard]] std::string path(std::string_view key) const { return join(path_, key); }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    static std::string unknown_key(std::string_view key, std::initializer_list<std::string_view> known) {
        std::string list;
        std::string_view closest;
        std::size_t best = std::numeric_limits<std::size_t>::max();
        for (auto k : known) {
            list += list.empty() ? "" : ", ";
            list += k;
            const auto d = edit_distance(key, k);
            if (d < best) {
                best = d;
                closest = k;
            }
        }
        std::string why = "unknown key";
        if (best <= 2 || best * 3 <= key.size())
            why += "; did you mean \"" + std::string(closest) + "\"?";
        return why + " (expected one of: " + list + ")";
    }

    const Json& j_;
    std::string path_;
};

// ---- scalars ----

template <class Json>
std::uint64_t read_unsigned(const Json& v, const std::string& path, std::uint64_t min, std::uint64_t max) {
    if (!v.is_number_integer()) throw config_error(path, "must be an integer, got " + shown(v));
    if (!v.is_number_unsigned() && v.template get<std::int64_t>() < 0)
        throw config_error(path, "must be >= " + std::to_string(min) + ", got " + shown(v));
    const auto n = v.is_number_unsigned() ? v.template get<std::uint64_t>()
                                          : static_cast<std::uint64_t>(v.template get<std::int64_t>());
    if (n < min) throw config_error(path, "must be >= " + std::to_string(min) + ", got " + shown(v));
    if (n > max) throw config_error(path, "must be <= " + std::to_string(max) + ", got " + shown(v));
    return n;
}

template <class Json>
double read_number(const Json& v, const std::string& path) {
    if (!v.is_number()) throw config_error(path, "must be a number, got " + shown(v));
    return v.template get<double>();
}

template <class Json>
bool read_bool(const Json& v, const std::string& path) {
    if (!v.is_boolean()) throw config_error(path, "must be true or false, got " + shown(v));
    return v.template get<bool>();
}

template <class Json>
std::string read_string(const Json& v, const std::string& path, std::string_view what) {
    if (!v.is_string()) throw config_error(path, "must be " + std::string(what) + ", got " + shown(v));
    return v.template get<std::string>();
}

template <class Duration>
std::string_view tick_name() {
    constexpr int e = tick_exponent<Duration>();
    if constexpr (e == 0) return "nanoseconds";
    else if constexpr (e == 3) return "microseconds";
    else if constexpr (e == 6) return "milliseconds";
    else if constexpr (e == 9) return "seconds";
    else return "ticks";
}

template <class Duration, class Json>
Duration read_duration(const Json& v, const std::string& path) {
    constexpr std::string_view form = R"(a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h))";
    if (!v.is_string()) {
        if (v.is_number())
            throw config_error(path, "must be a duration string with its unit, such as \"" + shown(v) +
                                         "ms\" or \"" + shown(v) + "s\", got the bare number " + shown(v));
        throw config_error(path, "must be " + std::string(form) + ", got " + shown(v));
    }
    const auto text = v.template get<std::string>();
    const auto parsed = parse_duration<Duration>(text);
    switch (parsed.error) {
        case duration_text_error::none: return *parsed.value;
        case duration_text_error::syntax: break;
        case duration_text_error::too_precise:
            throw config_error(path, "must be a whole number of " + std::string(tick_name<Duration>()) + ", got " + shown(v));
        case duration_text_error::out_of_range:
            throw config_error(path, "is too long (at most " + format_duration(Duration::max()) + "), got " + shown(v));
    }
    throw config_error(path, "must be " + std::string(form) + ", got " + shown(v));
}

template <class Duration>
std::string quoted(Duration d) {
    // Appended piece by piece: `"\"" + std::string` trips g++ 12's -Wrestrict
    // false positive at -O3 (GCC bug 105329).
    std::string out(1, '"');
    out += format_duration(d);
    out += '"';
    return out;
}

/// A duration in [lo, hi], both inclusive.
template <class Duration, class Json>
Duration read_duration_in(const Json& v, const std::string& path, Duration lo, Duration hi) {
    const auto d = read_duration<Duration>(v, path);
    if (d < lo || d > hi)
        throw config_error(path, "must be in [" + format_duration(lo) + ", " + format_duration(hi) + "], got " + shown(v));
    return d;
}

template <class Duration, class Json>
Duration read_positive_duration(const Json& v, const std::string& path) {
    const auto d = read_duration<Duration>(v, path);
    if (d <= Duration::zero()) throw config_error(path, "must be positive, got " + shown(v));
    return d;
}

inline std::optional<verdict> parse_verdict(std::string_view name) noexcept {
    for (auto v : {verdict::success, verdict::retryable, verdict::permanent, verdict::ambiguous})
        if (to_string(v) == name) return v;
    return std::nullopt;
}

/// The set of the verdicts flagged in `members` (indexed by verdict).
inline verdict_set make_verdict_set(const bool (&members)[4]) noexcept {
    verdict list[4]{};
    std::size_t n = 0;
    for (unsigned i = 0; i < 4; ++i)
        if (members[i]) list[n++] = static_cast<verdict>(i);
    switch (n) {
        case 0: return verdict_set{};
        case 1: return verdict_set{list[0]};
        case 2: return verdict_set{list[0], list[1]};
        case 3: return verdict_set{list[0], list[1], list[2]};
        default: return verdict_set{list[0], list[1], list[2], list[3]};
    }
}

template <class Json>
verdict_set read_verdicts(const Json& v, const std::string& path, bool allow_success) {
    if (!v.is_array())
        throw config_error(path, "must be an array of verdicts such as [\"retryable\", \"ambiguous\"], got " + shown(v));
    bool members[4] = {false, false, false, false};
    std::size_t index = 0;
    for (const auto& item : v) {
        const auto at = join(path, index++);
        const auto name = read_string(item, at, "a verdict name");
        const auto parsed = parse_verdict(name);
        if (!parsed || (!allow_success && *parsed == verdict::success))
            throw config_error(at, std::string("must be one of ") + (allow_success ? "\"success\", " : "") +
                                       "\"retryable\", \"permanent\", \"ambiguous\", got " + shown(item));
        auto& member = members[static_cast<unsigned>(*parsed)];
        if (member) throw config_error(at, shown(item) + " is listed twice");
        member = true;
    }
    return make_verdict_set(members);
}

template <class Json>
Json write_verdicts(verdict_set set) {
    Json out = Json::array();
    for (auto v : {verdict::success, verdict::retryable, verdict::permanent, verdict::ambiguous})
        if (set.contains(v)) out.push_back(std::string(to_string(v)));
    return out;
}

/// The constructor's message without its "resil::xyz: " prefix.
inline std::string without_prefix(const std::string& message) {
    if (message.rfind("resil::", 0) == 0) {
        const auto colon = message.find(": ");
        if (colon != std::string::npos) return message.substr(colon + 2);
    }
    return message;
}

/// Runs the policy's own validation as a last check, reporting at `path`:
/// the reader can never accept options the constructor would refuse.
template <class Construct>
void check_with_constructor(const std::string& path, Construct construct) {
    try {
        construct();
    } catch (const std::invalid_argument& e) {
        throw config_error(path, without_prefix(e.what()));
    }
}

inline std::optional<breaker_mode> parse_breaker_mode(std::string_view name) noexcept {
    for (auto m : {breaker_mode::time_window, breaker_mode::count_window, breaker_mode::consecutive_failures})
        if (to_string(m) == name) return m;
    return std::nullopt;
}

// ---- one reader per options type ----

template <class Json>
duration read_deadline(const Json& j, const std::string& path) {
    constexpr auto lo = deadline_policy_options::min_budget;
    constexpr auto hi = deadline_policy_options::max_budget;
    const auto d = read_positive_duration<duration>(j, path);
    if (d < lo || d > hi)
        throw config_error(path, "must be in [" + format_duration(lo) + ", " + format_duration(hi) + "], got " + shown(j));
    check_with_constructor(path, [&] { (void)deadline_policy{d}; });
    return d;
}

template <class Json>
resil::timeouts read_timeouts(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"connect", "read", "total"});
    resil::timeouts t;
    auto field = [&](std::string_view key, std::chrono::milliseconds& out) {
        const auto* v = r.find(key);
        if (v == nullptr || v->is_null()) return;  // no limit
        out = read_positive_duration<std::chrono::milliseconds>(*v, r.path(key));
    };
    field("connect", t.connect);
    field("read", t.read);
    field("total", t.total);
    if (auto why = t.invalid_reason()) throw config_error(path, std::string(*why));
    return t;
}

template <class Json>
resil::backoff read_backoff(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"kind", "base", "cap", "multiplier"});
    auto kind = backoff_kind::full_jitter;
    if (const auto* v = r.find("kind")) {
        const auto name = read_string(*v, r.path("kind"), "a backoff kind");
        const auto parsed = parse_backoff_kind(name);
        if (!parsed)
            throw config_error(r.path("kind"),
                               "must be one of \"exponential\", \"full_jitter\", \"equal_jitter\", "
                               "\"decorrelated_jitter\", got " + shown(*v));
        kind = *parsed;
    }
    const full_jitter defaults{};
    duration base = defaults.base;
    duration cap = defaults.cap;
    double multiplier = defaults.multiplier;
    if (const auto* v = r.find("base")) base = read_positive_duration<duration>(*v, r.path("base"));
    if (const auto* v = r.find("cap")) {
        cap = read_duration<duration>(*v, r.path("cap"));
        if (cap < base)
            throw config_error(r.path("cap"), "must be at least the base (" + format_duration(base) + "), got " + shown(*v));
    } else if (cap < base) {
        throw config_error(r.path("base"), "must be at most the cap (" + format_duration(cap) + ", the default), got " +
                                               quoted(base));
    }
    if (const auto* v = r.find("multiplier")) {
        if (kind == backoff_kind::decorrelated_jitter)
            throw config_error(r.path("multiplier"),
                               "decorrelated_jitter has no multiplier (it grows from the previous delay, up to 3 times it)");
        multiplier = read_number(*v, r.path("multiplier"));
        if (!(multiplier >= 1.0 && multiplier <= std::numeric_limits<double>::max()))
            throw config_error(r.path("multiplier"), "must be finite and >= 1, got " + shown(*v));
    }
    resil::backoff b;
    switch (kind) {
        case backoff_kind::exponential: b = exponential_backoff{base, cap, multiplier}; break;
        case backoff_kind::full_jitter: b = full_jitter{base, cap, multiplier}; break;
        case backoff_kind::equal_jitter: b = equal_jitter{base, cap, multiplier}; break;
        case backoff_kind::decorrelated_jitter: b = decorrelated_jitter{base, cap}; break;
    }
    if (auto why = b.invalid_reason()) throw config_error(path, std::string(*why));
    return b;
}

template <class Json>
retry_options read_retry(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"max_attempts", "backoff", "retry_on", "max_wait", "tell_callers_dont_retry"});
    retry_options o;
    if (const auto* v = r.find("max_attempts"))
        o.max_attempts = static_cast<std::uint32_t>(read_unsigned(*v, r.path("max_attempts"), 1, 100));
    if (const auto* v = r.find("backoff")) o.backoff = read_backoff(*v, r.path("backoff"));
    if (const auto* v = r.find("retry_on")) o.retry_on = read_verdicts(*v, r.path("retry_on"), true);
    if (const auto* v = r.find("max_wait")) o.max_wait = read_positive_duration<duration>(*v, r.path("max_wait"));
    if (const auto* v = r.find("tell_callers_dont_retry"))
        o.tell_callers_dont_retry = read_bool(*v, r.path("tell_callers_dont_retry"));
    if (o.backoff.cap() > o.max_wait)
        throw config_error(r.path("backoff") + ".cap", "must not exceed max_wait (" + format_duration(o.max_wait) +
                                                           "), got " + format_duration(o.backoff.cap()));
    check_with_constructor(path, [&] { (void)retry_policy{o}; });
    return o;
}

template <class Json>
retry_budget_options read_retry_budget(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"ratio", "min_per_second", "window"});
    retry_budget_options o;
    if (const auto* v = r.find("ratio")) {
        o.ratio = read_number(*v, r.path("ratio"));
        if (!(o.ratio >= 0.0 && o.ratio <= 1.0)) throw config_error(r.path("ratio"), "must be in [0, 1], got " + shown(*v));
    }
    if (const auto* v = r.find("min_per_second"))
        o.min_per_second = static_cast<std::uint32_t>(read_unsigned(*v, r.path("min_per_second"), 0, 1'000'000));
    if (const auto* v = r.find("window"))
        o.window = read_duration_in<duration>(*v, r.path("window"), std::chrono::milliseconds{10}, std::chrono::hours{24});
    check_with_constructor(path, [&] { (void)retry_budget{o}; });
    return o;
}

template <class Json>
circuit_breaker_options read_circuit_breaker(const Json& j, const std::string& path) {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    const object_reader<Json> r(j, path,
                                {"mode", "failure_ratio", "window", "window_calls", "min_calls", "consecutive_failures",
                                 "slow_call_threshold", "open_for", "half_open_probes", "probe_timeout",
                                 "failure_verdicts"});
    circuit_breaker_options o;
    if (const auto* v = r.find("mode")) {
        const auto parsed = parse_breaker_mode(read_string(*v, r.path("mode"), "a breaker mode"));
        if (!parsed)
            throw config_error(r.path("mode"),
                               "must be one of \"time_window\", \"count_window\", \"consecutive_failures\", got " + shown(*v));
        o.mode = *parsed;
    }
    if (const auto* v = r.find("failure_ratio")) {
        o.failure_ratio = read_number(*v, r.path("failure_ratio"));
        if (!(o.failure_ratio >= 0.0 && o.failure_ratio < 1.0))
            throw config_error(r.path("failure_ratio"),
                               "must be in [0, 1) (the breaker opens when the ratio is strictly above it), got " + shown(*v));
    }
    if (const auto* v = r.find("window"))
        o.window = read_duration_in<duration>(*v, r.path("window"), milliseconds{10}, hours{24});
    if (const auto* v = r.find("window_calls"))
        o.window_calls = static_cast<std::uint32_t>(read_unsigned(*v, r.path("window_calls"), 1, 1'000'000));
    if (const auto* v = r.find("min_calls"))
        o.min_calls = static_cast<std::uint32_t>(read_unsigned(*v, r.path("min_calls"), 1, 0xFFFF'FFFFu));
    if (o.mode == breaker_mode::count_window && o.min_calls > o.window_calls)
        throw config_error(r.path(r.find("min_calls") ? "min_calls" : "window_calls"),
                           "min_calls (" + std::to_string(o.min_calls) + ") must not exceed window_calls (" +
                               std::to_string(o.window_calls) + ") in count_window mode, or the breaker could never open");
    if (const auto* v = r.find("consecutive_failures"))
        o.consecutive_failures = static_cast<std::uint32_t>(read_unsigned(*v, r.path("consecutive_failures"), 1, 1'000'000));
    if (const auto* v = r.find("slow_call_threshold"); v != nullptr && !v->is_null())
        o.slow_call_threshold = read_positive_duration<duration>(*v, r.path("slow_call_threshold"));
    if (const auto* v = r.find("open_for"))
        o.open_for = read_duration_in<duration>(*v, r.path("open_for"), milliseconds{1}, hours{24});
    if (const auto* v = r.find("half_open_probes"))
        o.half_open_probes = static_cast<std::uint32_t>(read_unsigned(*v, r.path("half_open_probes"), 1, 1000));
    if (const auto* v = r.find("probe_timeout")) {
        o.probe_timeout = read_duration<duration>(*v, r.path("probe_timeout"));
        if (o.probe_timeout != duration::zero() && (o.probe_timeout < milliseconds{1} || o.probe_timeout > hours{24}))
            throw config_error(r.path("probe_timeout"),
                               "must be \"0s\" (the same as open_for) or in [1ms, 24h], got " + shown(*v));
    }
    if (const auto* v = r.find("failure_verdicts"))
        o.failure_verdicts = read_verdicts(*v, r.path("failure_verdicts"), false);
    check_with_constructor(path, [&] { (void)basic_circuit_breaker<steady_clock>{o}; });
    return o;
}

template <class Json>
token_bucket_options read_token_bucket(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"rate", "burst", "max_wait"});
    token_bucket_options o;
    if (const auto* v = r.find("rate")) {
        o.rate = read_number(*v, r.path("rate"));
        if (!(o.rate >= resil::detail::gcra::min_rate && o.rate <= resil::detail::gcra::max_rate))
            throw config_error(r.path("rate"), "must be in [0.001, 1e9] tokens per second, got " + shown(*v));
    }
    if (const auto* v = r.find("burst"))
        o.burst = static_cast<std::int64_t>(
            read_unsigned(*v, r.path("burst"), 1, static_cast<std::uint64_t>(resil::detail::gcra::max_burst)));
    if (!resil::detail::gcra::valid(o.rate, o.burst))
        throw config_error(r.path(r.find("burst") ? "burst" : "rate"),
                           "burst / rate (the time to refill an empty bucket) must be at most 1e9 s, got burst " +
                               std::to_string(o.burst) + " at rate " + nlohmann::json(o.rate).dump());
    if (const auto* v = r.find("max_wait")) {
        o.max_wait = read_duration<duration>(*v, r.path("max_wait"));
        if (o.max_wait < duration::zero()) throw config_error(r.path("max_wait"), "must not be negative, got " + shown(*v));
    }
    check_with_constructor(path, [&] { (void)basic_token_bucket<steady_clock>{o}; });
    return o;
}

template <class Json>
concurrency_limit_options read_concurrency_limit(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path, {"max_in_flight"});
    concurrency_limit_options o;
    if (const auto* v = r.find("max_in_flight"))
        o.max_in_flight = static_cast<std::uint32_t>(read_unsigned(*v, r.path("max_in_flight"), 1, 0xFFFF'FFFFu));
    check_with_constructor(path, [&] { (void)concurrency_limit{o}; });
    return o;
}

template <class Json>
pipeline_config read_pipeline(const Json& j, const std::string& path) {
    const object_reader<Json> r(j, path,
                                {"deadline", "timeouts", "retry", "retry_budget", "circuit_breaker", "token_bucket",
                                 "concurrency_limit"});
    pipeline_config c;
    if (const auto* v = r.find("deadline")) c.deadline = read_deadline(*v, r.path("deadline"));
    if (const auto* v = r.find("timeouts")) c.timeouts = read_timeouts(*v, r.path("timeouts"));
    if (const auto* v = r.find("retry")) c.retry = read_retry(*v, r.path("retry"));
    if (const auto* v = r.find("retry_budget")) c.retry_budget = read_retry_budget(*v, r.path("retry_budget"));
    if (const auto* v = r.find("circuit_breaker")) c.circuit_breaker = read_circuit_breaker(*v, r.path("circuit_breaker"));
    if (const auto* v = r.find("token_bucket")) c.token_bucket = read_token_bucket(*v, r.path("token_bucket"));
    if (const auto* v = r.find("concurrency_limit"))
        c.concurrency_limit = read_concurrency_limit(*v, r.path("concurrency_limit"));
    return c;
}

// ---- writers ----

template <class Json, class Duration>
Json write_limit(Duration d) {
    if (d == resil::timeouts::no_limit) return Json(nullptr);
    return Json(format_duration(d));
}

}  // namespace detail

/// Reads `T` from `j`, strictly (see the banner); `path` names `j` in error
/// messages ("retry" gives "retry.max_attempts: ..."). T is one of
/// resil::duration (a deadline), resil::timeouts, resil::backoff,
/// retry_options, retry_budget_options, circuit_breaker_options,
/// token_bucket_options, concurrency_limit_options, pipeline_config.
/// Throws config_error.
template <class T, class Json>
[[nodiscard]] T read(const Json& j, std::string_view path = {}) {
    const std::string p(path);
    if constexpr (std::is_same_v<T, duration>) return detail::read_deadline(j, p);
    else if constexpr (std::is_same_v<T, resil::timeouts>) return detail::read_timeouts(j, p);
    else if constexpr (std::is_same_v<T, resil::backoff>) return detail::read_backoff(j, p);
    else if constexpr (std::is_same_v<T, retry_options>) return detail::read_retry(j, p);
    else if constexpr (std::is_same_v<T, retry_budget_options>) return detail::read_retry_budget(j, p);
    else if constexpr (std::is_same_v<T, circuit_breaker_options>) return detail::read_circuit_breaker(j, p);
    else if constexpr (std::is_same_v<T, token_bucket_options>) return detail::read_token_bucket(j, p);
    else if constexpr (std::is_same_v<T, concurrency_limit_options>) return detail::read_concurrency_limit(j, p);
    else if constexpr (std::is_same_v<T, pipeline_config>) return detail::read_pipeline(j, p);
    else static_assert(detail::dependent_false<T>, "resil::json::read: no reader for this type");
}

/// A deadline (or any duration option) as its text, e.g. "250ms".
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(duration d) {
    return Json(format_duration(d));
}

/// {"connect", "read", "total"}; null for no_limit.
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const resil::timeouts& t) {
    Json j = Json::object();
    j["connect"] = detail::write_limit<Json>(t.connect);
    j["read"] = detail::write_limit<Json>(t.read);
    j["total"] = detail::write_limit<Json>(t.total);
    return j;
}

/// {"kind", "base", "cap", "multiplier"}; no multiplier for decorrelated_jitter.
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const resil::backoff& b) {
    Json j = Json::object();
    j["kind"] = std::string(backoff_kind_name(b.kind()));
    j["base"] = format_duration(b.base());
    j["cap"] = format_duration(b.cap());
    if (b.kind() != backoff_kind::decorrelated_jitter) j["multiplier"] = b.multiplier();
    return j;
}

/// Every retry option but the budget pointer (configure the budget itself
/// under "retry_budget").
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const retry_options& o) {
    Json j = Json::object();
    j["max_attempts"] = o.max_attempts;
    j["backoff"] = write<Json>(o.backoff);
    j["retry_on"] = detail::write_verdicts<Json>(o.retry_on);
    j["max_wait"] = format_duration(o.max_wait);
    j["tell_callers_dont_retry"] = o.tell_callers_dont_retry;
    return j;
}

template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const retry_budget_options& o) {
    Json j = Json::object();
    j["ratio"] = o.ratio;
    j["min_per_second"] = o.min_per_second;
    j["window"] = format_duration(o.window);
    return j;
}

/// Every breaker option but on_state_change (code, not configuration).
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const circuit_breaker_options& o) {
    Json j = Json::object();
    j["mode"] = std::string(to_string(o.mode));
    j["failure_ratio"] = o.failure_ratio;
    j["window"] = format_duration(o.window);
    j["window_calls"] = o.window_calls;
    j["min_calls"] = o.min_calls;
    j["consecutive_failures"] = o.consecutive_failures;
    j["slow_call_threshold"] = o.slow_call_threshold ? Json(format_duration(*o.slow_call_threshold)) : Json(nullptr);
    j["open_for"] = format_duration(o.open_for);
    j["half_open_probes"] = o.half_open_probes;
    j["probe_timeout"] = format_duration(o.probe_timeout);
    j["failure_verdicts"] = detail::write_verdicts<Json>(o.failure_verdicts);
    return j;
}

template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const token_bucket_options& o) {
    Json j = Json::object();
    j["rate"] = o.rate;
    j["burst"] = o.burst;
    j["max_wait"] = format_duration(o.max_wait);
    return j;
}

template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const concurrency_limit_options& o) {
    Json j = Json::object();
    j["max_in_flight"] = o.max_in_flight;
    return j;
}

/// The sections that are set, in the documented order.
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const pipeline_config& c) {
    Json j = Json::object();
    if (c.deadline) j["deadline"] = write<Json>(*c.deadline);
    if (c.timeouts) j["timeouts"] = write<Json>(*c.timeouts);
    if (c.retry) j["retry"] = write<Json>(*c.retry);
    if (c.retry_budget) j["retry_budget"] = write<Json>(*c.retry_budget);
    if (c.circuit_breaker) j["circuit_breaker"] = write<Json>(*c.circuit_breaker);
    if (c.token_bucket) j["token_bucket"] = write<Json>(*c.token_bucket);
    if (c.concurrency_limit) j["concurrency_limit"] = write<Json>(*c.concurrency_limit);
    return j;
}

/// Parses JSON text like nlohmann::json::parse, but refuses a key given
/// twice in one object (nlohmann keeps the last silently, so a pasted
/// duplicate would override a setting unnoticed). Throws config_error for
/// malformed text too, with nlohmann's line and column.
template <class Json = nlohmann::json>
[[nodiscard]] Json parse(std::string_view text) {
    struct frame {
        bool array = false;
        std::size_t index = 0;        // arrays: elements so far
        std::string key;              // objects: the current key
        std::vector<std::string> keys;
    };
    std::vector<frame> stack;
    const auto path_of = [&stack](std::size_t depth) {
        std::string p;
        for (std::size_t i = 0; i < depth; ++i)
            p = stack[i].array ? detail::join(p, stack[i].index) : detail::join(p, stack[i].key);
        return p;
    };
    const auto element_done = [&stack] {
        if (!stack.empty() && stack.back().array) ++stack.back().index;
    };
    typename Json::parser_callback_t callback = [&](int, nlohmann::detail::parse_event_t event, Json& parsed) {
        using event_t = nlohmann::detail::parse_event_t;
        switch (event) {
            case event_t::object_start: stack.push_back(frame{false, 0, {}, {}}); break;
            case event_t::array_start: stack.push_back(frame{true, 0, {}, {}}); break;
            case event_t::key: {
                auto& top = stack.back();
                auto key = parsed.template get<std::string>();
                for (const auto& k : top.keys)
                    if (k == key)
                        throw config_error(detail::join(path_of(stack.size() - 1), key),
                                           "key given twice in one object (the last would silently win)");
                top.keys.push_back(key);
                top.key = std::move(key);
                break;
            }
            case event_t::object_end:
            case event_t::array_end:
                stack.pop_back();
                element_done();
                break;
            case event_t::value: element_done(); break;
        }
        return true;
    };
    const auto without_id = [](const nlohmann::json::exception& e) {
        std::string what = e.what();
        if (what.rfind("[json.exception.", 0) == 0) {
            const auto close = what.find("] ");
            if (close != std::string::npos) what.erase(0, close + 2);
        }
        return what;
    };
    try {
        return Json::parse(text.begin(), text.end(), callback);
    } catch (const nlohmann::json::parse_error& e) {
        throw config_error({}, without_id(e));  // names the line and column
    } catch (const nlohmann::json::out_of_range& e) {
        // A number beyond a double (1e400, -1e400): the lexer has read it, so
        // the innermost container's key or index is the number's own.
        std::string reason = without_id(e);
        const auto quote = reason.find('\'');
        if (e.id == 406 && quote != std::string::npos && reason.size() > quote + 1 && reason.back() == '\'')
            reason = "must be a number a double can hold (magnitude at most 1.8e308), got " +
                     reason.substr(quote + 1, reason.size() - quote - 2);
        throw config_error(path_of(stack.size()), reason);
    } catch (const nlohmann::json::exception& e) {
        // Anything else nlohmann may add: still a config_error, with the path so far.
        throw config_error(path_of(stack.size()), without_id(e));
    }
}

/// Parses `text` (see parse()) and reads a pipeline_config from it.
[[nodiscard]] inline pipeline_config parse_config(std::string_view text) {
    return read<pipeline_config>(parse<nlohmann::json>(text));
}

/// Reads a pipeline_config from a file. Errors carry the file name in
/// source() and what().
[[nodiscard]] inline pipeline_config load_config(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw config_error({}, "cannot open the file", file.string());
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw config_error({}, "cannot read the file", file.string());
    try {
        return parse_config(text.str());
    } catch (const config_error& e) {
        throw config_error(e.path(), e.reason(), file.string());
    }
}

}  // namespace resil::json

// nlohmann's conversions, so `j.get<resil::retry_options>()` and
// `nlohmann::json j = options;` work too (strict reading; no path prefix).
namespace nlohmann {
#define RESIL_JSON_SERIALIZER(type)                                                   \
    template <>                                                                       \
    struct adl_serializer<type> {                                                     \
        template <class Json>                                                         \
        static void to_json(Json& j, const type& value) {                            \
            j = ::resil::json::write<Json>(value);                                    \
        }                                                                             \
        template <class Json>                                                         \
        static void from_json(const Json& j, type& value) {                          \
            value = ::resil::json::read<type>(j);                                     \
        }                                                                             \
    };
RESIL_JSON_SERIALIZER(::resil::timeouts)
RESIL_JSON_SERIALIZER(::resil::backoff)
RESIL_JSON_SERIALIZER(::resil::retry_options)
RESIL_JSON_SERIALIZER(::resil::retry_budget_options)
RESIL_JSON_SERIALIZER(::resil::circuit_breaker_options)
RESIL_JSON_SERIALIZER(::resil::token_bucket_options)
RESIL_JSON_SERIALIZER(::resil::concurrency_limit_options)
RESIL_JSON_SERIALIZER(::resil::json::pipeline_config)
#undef RESIL_JSON_SERIALIZER
}  // namespace nlohmann
