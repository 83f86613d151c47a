// resil/json/fields.hpp — the one list of each options type's JSON keys:
// a table of {key, member} that the reader (json/read.hpp) and the writer
// (json/write.hpp) both walk, in the documented order. The ranges are not
// here: they live in each type's validate(), which the reader calls.
//
//   fields<retry_budget_options>::list  // {"ratio", &ratio}, {"min_per_second", ...}, {"window", ...}
//
// A key's JSON form follows its member's type (numbers, booleans, strings,
// durations as text, verdict and reason sets and enumerations by name, a
// backoff as an object, an options type with a table of its own as a nested
// object, null for an empty optional one) unless the entry names another
// codec: as_limit (a timeout, null for "no limit") or as_section (a
// pipeline_config section, read and validated as its own type).
//
// This header holds the tables of the pipeline_config sections and of the
// deadline; the other policies' are beside their headers' weight, each
// included by resil/json.hpp: json/adaptive.hpp (paced_bucket,
// adaptive_limit, adaptive_throttle), json/hedge.hpp, json/fallback.hpp,
// json/balancing.hpp (balancer, outlier detection, health checks) and
// json/redis.hpp (the Redis limiter's options; standard library only).
#pragma once

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../backoff.hpp"
#include "../circuit_breaker/options.hpp"
#include "../concurrency_limit.hpp"
#include "../deadline_policy.hpp"
#include "../policy_checklist.hpp"
#include "../retry.hpp"
#include "../retry_budget.hpp"
#include "../timeouts.hpp"
#include "../token_bucket.hpp"
#include "../validation.hpp"
#include "pipeline_config.hpp"

namespace resil::json::detail {

/// By the member's type.
struct as_value {};
/// A timeout: a duration in whole milliseconds, null for timeouts::no_limit.
struct as_limit {};
/// A pipeline_config section: absent leaves it empty; present is read and
/// validated as its own type.
struct as_section {};
/// A secret (a key's passphrase, a proxy's password): read as a string,
/// never written (write() leaves the key out), so configuration shown in a
/// log or a status page cannot leak it.
struct as_secret {};

/// One JSON key and the member it holds.
template <class Owner, class Member, class Codec>
struct field {
    using owner_type = Owner;
    using member_type = Member;
    using codec = Codec;
    std::string_view name;
    Member Owner::*member;
};

template <class Codec = as_value, class Owner, class Member>
constexpr field<Owner, Member, Codec> key(std::string_view name, Member Owner::*member) noexcept {
    return {name, member};
}

template <std::size_t I, class F>
struct field_slot {
    F field;
};
template <class Indices, class... F>
struct field_slots;
template <std::size_t... I, class... F>
struct field_slots<std::index_sequence<I...>, F...> : field_slot<I, F>... {
    constexpr explicit field_slots(F... f) : field_slot<I, F>{f}... {}
    /// fn(field...), in table order.
    template <class Fn>
    constexpr decltype(auto) apply(Fn&& fn) const {
        return std::forward<Fn>(fn)(static_cast<const field_slot<I, F>&>(*this).field...);
    }
};

/// A table's keys, in order: a flat list rather than a std::tuple, whose
/// recursive layout and constrained constructors cost far more to compile
/// for the 20-odd keys of the larger tables (and a table is instantiated in
/// every file that reads or writes its type).
template <class... F>
struct field_list : field_slots<std::index_sequence_for<F...>, F...> {
    static constexpr std::size_t size = sizeof...(F);
    constexpr field_list(F... f) : field_slots<std::index_sequence_for<F...>, F...>(f...) {}  // NOLINT: implicit on purpose
};
template <class... F>
field_list(F...) -> field_list<F...>;

/// The table of T's keys; no primary definition, so a type without one is
/// neither read nor written field by field.
template <class T>
struct fields;

template <class T>
concept has_fields = requires { fields<T>::list; };

/// The values of an enumeration read and written by name, and what the
/// message calls one ("a breaker mode"); no primary definition. The names
/// are to_string's, unless the table lists its own in `names` (one per
/// value, in order: where to_string is prose, "TLS 1.2", the file says
/// "tls1_2").
template <class E>
struct enumerators;

template <class E>
concept named_enum = std::is_enum_v<E> && requires {
    enumerators<E>::values;
    enumerators<E>::what;
};

/// E's name in a JSON file.
template <named_enum E>
constexpr std::string_view enum_name(E e) noexcept {
    if constexpr (requires { enumerators<E>::names; }) {
        static_assert(enumerators<E>::names.size() == enumerators<E>::values.size(), "one name per value");
        for (std::size_t i = 0; i < enumerators<E>::values.size(); ++i)
            if (enumerators<E>::values[i] == e) return enumerators<E>::names[i];
        return "unknown";
    } else {
        return to_string(e);
    }
}

/// How read<T> checks a T it has read, when not by T's own validate(): a
/// specialization has `static validation_result check(const T&)`, naming
/// the field from T as validate() does (resil::endpoint, which is checked as
/// a list, has one). No primary definition.
template <class T>
struct checker;

template <class T>
concept has_checker = requires(const T& t) {
    { checker<T>::check(t) } -> std::same_as<validation_result>;
};

template <>
struct enumerators<breaker_mode> {
    static constexpr std::string_view what = "a breaker mode";
    static constexpr std::array values{breaker_mode::time_window, breaker_mode::count_window,
                                       breaker_mode::consecutive_failures};
};

template <>
struct fields<resil::timeouts> {
    using T = resil::timeouts;
    static constexpr auto list = field_list{key<as_limit>("connect", &T::connect), key<as_limit>("read", &T::read),
                                            key<as_limit>("total", &T::total)};
};

/// exponential_backoff, full_jitter and equal_jitter; with "kind" in front,
/// these are also the keys a backoff object may have.
template <class Draw>
struct fields<exponential_strategy<Draw>> {
    using T = exponential_strategy<Draw>;
    static constexpr auto list = field_list{key("base", &T::base), key("cap", &T::cap), key("multiplier", &T::multiplier)};
};

template <>
struct fields<decorrelated_jitter> {
    using T = decorrelated_jitter;
    static constexpr auto list = field_list{key("base", &T::base), key("cap", &T::cap)};
};

/// Every retry option but the budget pointer (code, not configuration).
template <>
struct fields<retry_options> {
    using T = retry_options;
    static constexpr auto list =
        field_list{key("max_attempts", &T::max_attempts), key("backoff", &T::backoff), key("retry_on", &T::retry_on),
                   key("max_wait", &T::max_wait), key("tell_callers_dont_retry", &T::tell_callers_dont_retry)};
};

template <>
struct fields<retry_budget_options> {
    using T = retry_budget_options;
    static constexpr auto list =
        field_list{key("ratio", &T::ratio), key("min_per_second", &T::min_per_second), key("window", &T::window)};
};

/// Every breaker option but on_state_change (code, not configuration).
template <>
struct fields<circuit_breaker_options> {
    using T = circuit_breaker_options;
    static constexpr auto list = field_list{
        key("mode", &T::mode),
        key("failure_ratio", &T::failure_ratio),
        key("window", &T::window),
        key("window_calls", &T::window_calls),
        key("min_calls", &T::min_calls),
        key("consecutive_failures", &T::consecutive_failures),
        key("slow_call_threshold", &T::slow_call_threshold),
        key("open_for", &T::open_for),
        key("half_open_probes", &T::half_open_probes),
        key("probe_timeout", &T::probe_timeout),
        key("failure_verdicts", &T::failure_verdicts),
    };
};

template <>
struct fields<token_bucket_options> {
    using T = token_bucket_options;
    static constexpr auto list = field_list{key("rate", &T::rate), key("burst", &T::burst), key("max_wait", &T::max_wait)};
};

template <>
struct fields<concurrency_limit_options> {
    using T = concurrency_limit_options;
    static constexpr auto list = field_list{key("max_in_flight", &T::max_in_flight)};
};

/// A deadline_policy's options: its one key. (The pipeline_config's
/// "deadline" section is the budget alone, as a duration.)
template <>
struct fields<deadline_policy_options> {
    using T = deadline_policy_options;
    static constexpr auto list = field_list{key("budget", &T::budget)};
};

template <>
struct fields<pipeline_config> {
    using T = pipeline_config;
    static constexpr auto list = field_list{
        key<as_section>("deadline", &T::deadline),
        key<as_section>("timeouts", &T::timeouts),
        key<as_section>("retry", &T::retry),
        key<as_section>("retry_budget", &T::retry_budget),
        key<as_section>("circuit_breaker", &T::circuit_breaker),
        key<as_section>("token_bucket", &T::token_bucket),
        key<as_section>("concurrency_limit", &T::concurrency_limit),
    };
};

/// A backoff strategy: in JSON only inside a backoff object, after its "kind".
template <class T>
concept backoff_strategy = std::is_constructible_v<resil::backoff, T> && !std::is_same_v<T, resil::backoff>;

/// An options type read and written as one JSON object of its table's keys.
template <class T>
concept options_type = has_fields<T> && !backoff_strategy<T>;

template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;

template <class T>
inline constexpr bool is_chrono_duration = false;
template <class Rep, class Period>
inline constexpr bool is_chrono_duration<std::chrono::duration<Rep, Period>> = true;

template <class T>
inline constexpr bool is_optional_duration = false;
template <class Rep, class Period>
inline constexpr bool is_optional_duration<std::optional<std::chrono::duration<Rep, Period>>> = true;

template <class T>
inline constexpr bool is_vector = false;
template <class T, class A>
inline constexpr bool is_vector<std::vector<T, A>> = true;

/// T's keys in order, optionally after `before` (a backoff's "kind").
template <class T, std::size_t N = 0>
constexpr auto key_names(std::array<std::string_view, N> before = {}) noexcept {
    return fields<T>::list.apply([&](const auto&... f) {
        std::array<std::string_view, N + sizeof...(f)> out{};
        std::size_t i = 0;
        for (auto name : before) out[i++] = name;
        ((out[i++] = f.name), ...);
        return out;
    });
}

/// The keys of a backoff object: its kind, then the strategies' fields.
inline constexpr auto backoff_keys = key_names<exponential_backoff>(std::array<std::string_view, 1>{"kind"});

}  // namespace resil::json::detail

namespace resil::json {

/// A policy whose options resil::json reads (read<options_of_t<P>>) and
/// writes, with the JSON path in every error: item 5 of
/// resil/policy_checklist.hpp. Holds once the header with its table is
/// included (resil/json.hpp includes them all).
template <class P>
concept configurable = detail::options_type<options_of_t<P>>;

}  // namespace resil::json
