// resil/json/read.hpp — options from JSON, strictly: resil::json::read<T>.
//
//   auto retry = resil::json::read<resil::retry_options>(j["retry"], "retry");
//   // {"max_attempts": 0} → config_error "retry.max_attempts: must be in [1, 100], got 0"
//
// The reader checks the shape (an unknown key, with "did you mean", a wrong
// type, a duration without its unit, a verdict listed twice) and leaves the
// ranges to the type's own validate(): it reads every key of the type's table
// (json/fields.hpp), calls validate() on the result and reports the field it
// names at its JSON path ("backoff.cap" inside "retry" → "retry.backoff.cap"),
// showing the value as the file wrote it. It can never accept options the
// policy's constructor would refuse. A missing key takes the documented
// default. Every failure is a config_error.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../backoff.hpp"
#include "../circuit_breaker/options.hpp"
#include "../clock.hpp"
#include "../deadline_policy.hpp"
#include "../outcome.hpp"
#include "../timeouts.hpp"
#include "../validation.hpp"
#include "duration.hpp"
#include "error.hpp"
#include "fields.hpp"
#include "pipeline_config.hpp"

namespace resil::json {

namespace detail {

template <class T>
inline constexpr bool dependent_false = false;

/// A value as a message shows it: scalars as JSON text (shortened), containers by kind.
template <class Json>
std::string shown(const Json& v) {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "an array";
    auto text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.size() > 48) {
        text.resize(45);
        text += "...";
    }
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

/// "unknown key; did you mean "x"? (expected one of: a, b, c)".
inline std::string unknown_key(std::string_view key, std::span<const std::string_view> known) {
    std::string list;
    std::string_view closest;
    std::size_t best = std::numeric_limits<std::size_t>::max();
    for (auto k : known) {
        if (!list.empty()) list += ", ";
        list += k;
        const auto d = edit_distance(key, k);
        if (d < best) {
            best = d;
            closest = k;
        }
    }
    std::string why = "unknown key";
    if (best <= 2 || best * 3 <= key.size()) why += concat({"; did you mean \"", closest, "\"?"});
    return concat({why, " (expected one of: ", list, ")"});
}

/// The keys of one JSON object, checked against the ones it may have.
template <class Json>
class object_reader {
public:
    object_reader(const Json& j, std::string path, std::span<const std::string_view> known)
        : j_(j), path_(std::move(path)) {
        if (!j.is_object()) fail(path_, concat({"must be an object, got ", shown(j)}));
        for (auto it = j.begin(); it != j.end(); ++it) {
            bool ok = false;
            for (auto k : known) ok = ok || k == it.key();
            if (!ok) fail(join(path_, it.key()), unknown_key(it.key(), known));
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
    const Json& j_;
    std::string path_;
};

/// What one read<T> carries along: an integer too large (or negative) for
/// its member is read as the nearest value the member holds, and reported
/// only if validate() accepts that value (else validate()'s own message,
/// which names the real range, is the better one).
struct read_state {
    std::optional<config_error> unrepresentable{};
};

// ---- scalars ----

template <class Int, class Json>
Int read_integer(const Json& v, const std::string& path, read_state& state) {
    using limits = std::numeric_limits<Int>;
    if (!v.is_number_integer()) fail(path, concat({"must be an integer, got ", shown(v)}));
    const auto note = [&](std::string_view bound, Int limit) {
        if (!state.unrepresentable)
            state.unrepresentable.emplace(path, concat({"must be ", bound, " ", std::to_string(limit), ", got ", shown(v)}));
        return limit;
    };
    if (v.is_number_unsigned()) {
        const auto n = v.template get<std::uint64_t>();
        return std::in_range<Int>(n) ? static_cast<Int>(n) : note("at most", limits::max());
    }
    const auto n = v.template get<std::int64_t>();
    if (std::cmp_less(n, limits::min())) return note("at least", limits::min());
    if (std::cmp_greater(n, limits::max())) return note("at most", limits::max());
    return static_cast<Int>(n);
}

template <class Json>
double read_number(const Json& v, const std::string& path) {
    if (!v.is_number()) fail(path, concat({"must be a number, got ", shown(v)}));
    return v.template get<double>();
}

template <class Json>
bool read_bool(const Json& v, const std::string& path) {
    if (!v.is_boolean()) fail(path, concat({"must be true or false, got ", shown(v)}));
    return v.template get<bool>();
}

template <class Json>
std::string read_string(const Json& v, const std::string& path, std::string_view what) {
    if (!v.is_string()) fail(path, concat({"must be ", what, ", got ", shown(v)}));
    return v.template get<std::string>();
}

template <class Duration>
constexpr std::string_view tick_name() {
    constexpr int e = tick_exponent<Duration>();
    if constexpr (e == 0) return "nanoseconds";
    else if constexpr (e == 3) return "microseconds";
    else if constexpr (e == 6) return "milliseconds";
    else if constexpr (e == 9) return "seconds";
    else return "ticks";
}

/// A duration string with its unit; any value the type holds (the range is validate()'s).
template <class Duration, class Json>
Duration read_duration(const Json& v, const std::string& path) {
    constexpr std::string_view form = R"(a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h))";
    if (!v.is_string()) {
        const auto text = shown(v);
        if (v.is_number())
            fail(path, concat({"must be a duration string with its unit, such as \"", text, "ms\" or \"", text,
                                          "s\", got the bare number ", text}));
        fail(path, concat({"must be ", form, ", got ", text}));
    }
    const auto parsed = parse_duration<Duration>(v.template get<std::string>());
    switch (parsed.error()) {
        case duration_text_error::none: return *parsed;
        case duration_text_error::syntax: break;
        case duration_text_error::too_precise:
            fail(path, concat({"must be a whole number of ", tick_name<Duration>(), ", got ", shown(v)}));
        case duration_text_error::out_of_range:
            fail(path, concat({"is too long (at most ", format_duration(Duration::max()), "), got ", shown(v)}));
    }
    fail(path, concat({"must be ", form, ", got ", shown(v)}));
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

/// An array of verdict names, each once (which ones a policy accepts is its validate()'s).
template <class Json>
verdict_set read_verdicts(const Json& v, const std::string& path) {
    if (!v.is_array())
        fail(path, concat({"must be an array of verdicts such as [\"retryable\", \"ambiguous\"], got ", shown(v)}));
    bool members[4] = {false, false, false, false};
    std::size_t index = 0;
    for (const auto& item : v) {
        const auto at = join(path, index++);
        const auto parsed = parse_verdict(read_string(item, at, "a verdict name"));
        if (!parsed)
            fail(at, concat({R"(must be one of "success", "retryable", "permanent", "ambiguous", got )",
                                        shown(item)}));
        auto& member = members[static_cast<unsigned>(*parsed)];
        if (member) fail(at, concat({shown(item), " is listed twice"}));
        member = true;
    }
    return make_verdict_set(members);
}

/// An enumeration by name (json/fields.hpp's enumerators<E>):
/// "must be one of "a", "b", got "c"".
template <named_enum E, class Json>
E read_enum(const Json& v, const std::string& path) {
    const auto name = read_string(v, path, enumerators<E>::what);
    for (auto e : enumerators<E>::values)
        if (enum_name(e) == name) return e;
    std::string names;
    for (auto e : enumerators<E>::values) {
        if (!names.empty()) names += ", ";
        names += concat({"\"", enum_name(e), "\""});
    }
    fail(path, concat({"must be one of ", names, ", got ", shown(v)}));
}

/// An array of reason names, each once (which ones a policy accepts is its validate()'s).
template <class Json>
reason_set read_reasons(const Json& v, const std::string& path) {
    if (!v.is_array())
        fail(path, concat({"must be an array of reasons such as [\"circuit_open\", \"shed\"], got ", shown(v)}));
    bool members[reason_count] = {};
    std::size_t index = 0;
    for (const auto& item : v) {
        const auto at = join(path, index++);
        const auto name = read_string(item, at, "a reason name");
        std::size_t found = reason_count;
        for (std::size_t r = 0; r < reason_count; ++r)
            if (to_string(static_cast<reason>(r)) == name) found = r;
        if (found == reason_count) {
            std::string names;
            for (std::size_t r = 0; r < reason_count; ++r) {
                if (!names.empty()) names += ", ";
                names += concat({"\"", to_string(static_cast<reason>(r)), "\""});
            }
            fail(at, concat({"must be one of ", names, ", got ", shown(item)}));
        }
        if (members[found]) fail(at, concat({shown(item), " is listed twice"}));
        members[found] = true;
    }
    reason_set out;
    for (std::size_t r = 0; r < reason_count; ++r)
        if (members[r]) out = out.with(static_cast<reason>(r));
    return out;
}

// ---- the key table, walked ----

template <class T, class Json>
T read_checked(const Json& j, const std::string& path, T out = T{});

template <class Json>
resil::backoff read_backoff(const Json& j, const std::string& path, read_state& state);

template <class T, class Json>
void read_fields(const object_reader<Json>& r, T& out, read_state& state);

/// One value, by its codec (json/fields.hpp) and its member's type.
template <class Codec, class Member, class Json>
void read_as(const Json& v, const std::string& path, Member& out, read_state& state) {
    if constexpr (std::is_same_v<Codec, as_section>) {
        out = read_checked<typename Member::value_type>(v, path);
    } else if constexpr (std::is_same_v<Codec, as_limit>) {
        out = v.is_null() ? resil::timeouts::no_limit : read_duration<Member>(v, path);
    } else if constexpr (std::is_same_v<Codec, as_secret>) {
        static_assert(std::is_same_v<Member, std::string>, "resil::json: a secret is a string");
        out = read_string(v, path, "a string");
    } else if constexpr (std::is_same_v<Member, bool>) {
        out = read_bool(v, path);
    } else if constexpr (std::is_integral_v<Member>) {
        out = read_integer<Member>(v, path, state);
    } else if constexpr (std::is_floating_point_v<Member>) {
        out = read_number(v, path);
    } else if constexpr (std::is_same_v<Member, duration>) {
        out = read_duration<duration>(v, path);
    } else if constexpr (is_optional_duration<Member>) {
        using D = typename Member::value_type;
        out = v.is_null() ? std::nullopt : std::optional<D>(read_duration<D>(v, path));
    } else if constexpr (is_chrono_duration<Member>) {
        out = read_duration<Member>(v, path);  // another tick than resil::duration's (whole milliseconds)
    } else if constexpr (std::is_same_v<Member, std::string>) {
        out = read_string(v, path, "a string");
    } else if constexpr (std::is_same_v<Member, verdict_set>) {
        out = read_verdicts(v, path);
    } else if constexpr (std::is_same_v<Member, reason_set>) {
        out = read_reasons(v, path);
    } else if constexpr (named_enum<Member>) {
        out = read_enum<Member>(v, path);
    } else if constexpr (std::is_same_v<Member, resil::backoff>) {
        out = read_backoff(v, path, state);
    } else if constexpr (is_vector<Member>) {
        // A list: of strings, or of objects of an options type (checked by
        // the owner's validate(), which names them "list[i].field").
        using E = typename Member::value_type;
        static_assert(std::is_same_v<E, std::string> || options_type<E>, "resil::json: no JSON form for this list");
        if (!v.is_array()) {
            if constexpr (std::is_same_v<E, std::string>)
                fail(path, concat({"must be an array of strings, got ", shown(v)}));
            else
                fail(path, concat({"must be an array of objects, got ", shown(v)}));
        }
        Member list;
        list.reserve(v.size());
        std::size_t index = 0;
        for (const auto& item : v) {
            const auto at = join(path, index++);
            if constexpr (std::is_same_v<E, std::string>) {
                list.push_back(read_string(item, at, "a string"));
            } else {
                E each{};
                read_fields(object_reader<Json>(item, at, key_names<E>()), each, state);
                list.push_back(std::move(each));
            }
        }
        out = std::move(list);
    } else if constexpr (options_type<Member>) {
        // A nested options type: its keys, checked as its owner's are; its
        // ranges by the owner's validate(), which names them "outer.field".
        read_fields(object_reader<Json>(v, path, key_names<Member>()), out, state);
    } else if constexpr (is_optional<Member>) {
        static_assert(options_type<typename Member::value_type>, "resil::json: no JSON form for this member's type");
        if (v.is_null()) {
            out.reset();
        } else {
            // From the member's own value when it has one (an optional
            // engaged by default, or seeded by a service file's shared section).
            auto nested = out ? *out : typename Member::value_type{};
            read_fields(object_reader<Json>(v, path, key_names<typename Member::value_type>()), nested, state);
            out = std::move(nested);
        }
    } else {
        static_assert(dependent_false<Member>, "resil::json: no JSON form for this member's type");
    }
}

/// Every key of T's table that `r` holds, into `out`; the others keep their defaults.
template <class T, class Json>
void read_fields(const object_reader<Json>& r, T& out, read_state& state) {
    fields<T>::list.apply([&](const auto&... f) {
        const auto one = [&](const auto& field) {
            using entry = std::remove_cvref_t<decltype(field)>;
            if (const auto* v = r.find(field.name))
                read_as<typename entry::codec>(*v, r.path(field.name), out.*field.member, state);
        };
        (one(f), ...);
    });
}

template <class Json>
resil::backoff read_backoff(const Json& j, const std::string& path, read_state& state) {
    const object_reader<Json> r(j, path, backoff_keys);
    auto kind = backoff_kind::full_jitter;
    if (const auto* v = r.find("kind")) {
        const auto parsed = parse_backoff_kind(read_string(*v, r.path("kind"), "a backoff kind"));
        if (!parsed)
            fail(r.path("kind"), concat({R"(must be one of "exponential", "full_jitter", "equal_jitter", )"
                                                    R"("decorrelated_jitter", got )",
                                                    shown(*v)}));
        kind = *parsed;
    }
    if (kind == backoff_kind::decorrelated_jitter && r.find("multiplier") != nullptr)
        fail(r.path("multiplier"),
                           "decorrelated_jitter has no multiplier (it grows from the previous delay, up to 3 times it)");
    const auto strategy = [&](auto s) -> resil::backoff {
        read_fields(r, s, state);
        return s;
    };
    switch (kind) {
        case backoff_kind::exponential: return strategy(exponential_backoff{});
        case backoff_kind::full_jitter: return strategy(full_jitter{});
        case backoff_kind::equal_jitter: return strategy(equal_jitter{});
        case backoff_kind::decorrelated_jitter: break;
    }
    return strategy(decorrelated_jitter{});
}

/// The field validate() named, at its JSON path under `path` ("backoff.cap"
/// under "retry" is "retry.backoff.cap"; an empty field is `path` itself),
/// with validate()'s requirement; its "got" shows the value as the file wrote
/// it when the file has it (else as validate() rendered the default).
template <class Json>
[[noreturn]] void throw_invalid(const Json& j, std::string path, const invalid_option& bad) {
    const Json* at = &j;
    std::string_view rest = bad.field;
    while (!rest.empty()) {
        // "name", "name[2]" or "[2]" (a list's item: "endpoints[1].weight").
        const auto end = rest.find_first_of(".[");
        const auto name = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
        if (!name.empty()) {
            path = join(path, name);
            if (at != nullptr && at->is_object()) {
                const auto it = at->find(name);
                at = it == at->end() ? nullptr : &*it;
            } else {
                at = nullptr;
            }
        }
        while (rest.starts_with('[')) {
            const auto close = rest.find(']');
            std::size_t index = 0;
            bool digits = close != std::string_view::npos && close > 1;
            for (std::size_t i = 1; digits && i < close; ++i) {
                digits = rest[i] >= '0' && rest[i] <= '9' && index < std::size_t{1} << 40;
                index = index * 10 + static_cast<std::size_t>(rest[i] - '0');
            }
            if (!digits) break;  // not an index: left as it is, below
            path = join(path, index);
            at = at != nullptr && at->is_array() && index < at->size() ? &(*at)[index] : nullptr;
            rest.remove_prefix(close + 1);
        }
        if (rest.starts_with('.')) {
            rest.remove_prefix(1);
        } else if (!rest.empty()) {
            // Text the walk does not know: named as it is, with no value to show.
            path = concat({path, rest.starts_with('[') ? "" : ".", rest});
            at = nullptr;
            break;
        }
    }
    std::string reason = bad.requirement;
    constexpr std::string_view got = ", got ";
    const auto value_at = reason.rfind(got);
    if (at != nullptr && !at->is_structured() && value_at != std::string::npos) {
        reason.resize(value_at + got.size());
        reason += shown(*at);
    }
    fail(path, std::move(reason));
}

/// T read from `j` over `out` (the keys `j` lacks keep its values) and
/// checked (see the banner).
template <class T, class Json>
T read_checked(const Json& j, const std::string& path, T out) {
    if constexpr (std::is_same_v<T, duration>) {
        // A deadline: deadline_policy_options' budget.
        (void)out;
        const auto budget = read_duration<duration>(j, path);
        if (auto bad = deadline_policy_options{.budget = budget}.validate())
            throw_invalid(j, path, invalid_option{{}, bad->requirement});
        return budget;
    } else {
        read_state state;
        if constexpr (std::is_same_v<T, resil::backoff>) {
            out = read_backoff(j, path, state);
        } else {
            const object_reader<Json> r(j, path, key_names<T>());
            read_fields(r, out, state);
        }
        if constexpr (has_checker<T>) {
            if (auto bad = checker<T>::check(out)) throw_invalid(j, path, *bad);
        } else if constexpr (requires { out.validate(); }) {
            if (auto bad = out.validate()) throw_invalid(j, path, *bad);
        }
        if (state.unrepresentable) throw *state.unrepresentable;
        return out;
    }
}

template <class T>
inline constexpr bool readable = std::is_same_v<T, duration> || std::is_same_v<T, resil::backoff> || options_type<T>;

}  // namespace detail

/// Reads `T` from `j`, strictly (see the banner); `path` names `j` in error
/// messages ("retry" gives "retry.max_attempts: ..."). T is resil::duration
/// (a deadline), resil::backoff, or an options type with a key table:
/// resil::timeouts, retry_options, retry_budget_options,
/// circuit_breaker_options, token_bucket_options, concurrency_limit_options,
/// deadline_policy_options, pipeline_config (json/fields.hpp);
/// paced_bucket_options, adaptive_limit_options, adaptive_throttle_options
/// (json/adaptive.hpp); hedge_options (json/hedge.hpp); fallback_options
/// (json/fallback.hpp); balancer_options, outlier_detection_options,
/// endpoint, health_check_options (json/balancing.hpp);
/// redis::rate_limiter_options (json/redis.hpp); pushback_options
/// (json/pushback.hpp); sse::reader_options (json/sse.hpp); and, with
/// libcurl's headers, curl::client_options and the types it holds
/// (json/curl.hpp), http::dependency_options and http::health_check_settings
/// (json/dependency.hpp). Throws config_error.
template <class T, class Json>
[[nodiscard]] T read(const Json& j, std::string_view path = {}) {
    static_assert(detail::readable<T>, "resil::json::read: no reader for this type");
    return detail::read_checked<T>(j, std::string(path));
}

}  // namespace resil::json
