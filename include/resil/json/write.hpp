// resil/json/write.hpp — options to JSON: every key of the type's table
// (json/fields.hpp) in the documented order, durations in their shortest
// exact form, null for "no limit" and "unset"; reading the result back
// (json/read.hpp) gives the same options.
//
//   nlohmann::json j = resil::json::write(breaker.options());   // {"mode": "time_window", ...}
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "../backoff.hpp"
#include "../circuit_breaker/options.hpp"
#include "../clock.hpp"
#include "../outcome.hpp"
#include "../timeouts.hpp"
#include "duration.hpp"
#include "fields.hpp"
#include "pipeline_config.hpp"

namespace resil::json {

template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(duration d);
template <class Json = nlohmann::ordered_json>
[[nodiscard]] Json write(const resil::backoff& b);
template <class Json = nlohmann::ordered_json, class T>
    requires detail::options_type<T>
[[nodiscard]] Json write(const T& options);

namespace detail {

template <class Json>
Json write_verdicts(verdict_set set) {
    Json out = Json::array();
    for (auto v : {verdict::success, verdict::retryable, verdict::permanent, verdict::ambiguous})
        if (set.contains(v)) out.push_back(std::string(to_string(v)));
    return out;
}

template <class Json>
Json write_reasons(reason_set set) {
    Json out = Json::array();
    for (std::size_t r = 0; r < reason_count; ++r)
        if (set.contains(static_cast<reason>(r))) out.push_back(std::string(to_string(static_cast<reason>(r))));
    return out;
}

template <class T, class Json>
void write_fields(Json& j, const T& options);

/// `value` at `key` of `j`, by its codec (json/fields.hpp) and its type.
template <class Codec, class Json, class Member>
void write_as(Json& j, std::string_view key, const Member& value) {
    const auto at = [&]() -> Json& { return j[std::string(key)]; };
    if constexpr (std::is_same_v<Codec, as_section>) {
        if (value) at() = write<Json>(*value);  // an empty section is left out
    } else if constexpr (std::is_same_v<Codec, as_limit>) {
        at() = value == resil::timeouts::no_limit ? Json(nullptr) : Json(format_duration(value));
    } else if constexpr (std::is_same_v<Codec, as_secret>) {
        (void)at;  // never written (json/fields.hpp, as_secret)
        (void)value;
    } else if constexpr (std::is_arithmetic_v<Member>) {
        at() = value;
    } else if constexpr (is_chrono_duration<Member>) {
        at() = format_duration(value);
    } else if constexpr (is_optional_duration<Member>) {
        at() = value ? Json(format_duration(*value)) : Json(nullptr);
    } else if constexpr (std::is_same_v<Member, std::string>) {
        at() = value;
    } else if constexpr (std::is_same_v<Member, verdict_set>) {
        at() = write_verdicts<Json>(value);
    } else if constexpr (std::is_same_v<Member, reason_set>) {
        at() = write_reasons<Json>(value);
    } else if constexpr (named_enum<Member>) {
        at() = std::string(enum_name(value));
    } else if constexpr (std::is_same_v<Member, resil::backoff>) {
        at() = write<Json>(value);
    } else if constexpr (is_vector<Member>) {
        Json list = Json::array();
        for (const auto& item : value) {
            if constexpr (std::is_same_v<typename Member::value_type, std::string>) {
                list.push_back(item);
            } else {
                Json nested = Json::object();
                write_fields(nested, item);
                list.push_back(std::move(nested));
            }
        }
        at() = std::move(list);
    } else if constexpr (options_type<Member>) {
        Json nested = Json::object();
        write_fields(nested, value);
        at() = std::move(nested);
    } else if constexpr (is_optional<Member>) {
        static_assert(options_type<typename Member::value_type>, "resil::json: no JSON form for this member's type");
        if (value) {
            Json nested = Json::object();
            write_fields(nested, *value);
            at() = std::move(nested);
        } else {
            at() = nullptr;
        }
    } else {
        static_assert(sizeof(Member) == 0, "resil::json: no JSON form for this member's type");
    }
}

/// Every key of T's table into `j`, in order.
template <class T, class Json>
void write_fields(Json& j, const T& options) {
    fields<T>::list.apply([&](const auto&... f) {
        const auto one = [&](const auto& field) {
            using entry = std::remove_cvref_t<decltype(field)>;
            write_as<typename entry::codec>(j, field.name, options.*field.member);
        };
        (one(f), ...);
    });
}

}  // namespace detail

/// A deadline (or any duration option) as its text, e.g. "250ms".
template <class Json>
Json write(duration d) {
    return Json(format_duration(d));
}

/// {"kind", "base", "cap", "multiplier"}; no multiplier for decorrelated_jitter.
template <class Json>
Json write(const resil::backoff& b) {
    Json j = Json::object();
    j["kind"] = std::string(backoff_kind_name(b.kind()));
    std::visit([&](const auto& s) { detail::write_fields(j, s); }, b.strategy());
    return j;
}

/// Every key of an options type (any type read<T> takes, json/read.hpp;
/// code is left out: retry_options' and hedge_options' budget pointers,
/// circuit_breaker_options' on_state_change, balancer_options' hooks), or
/// the sections of a pipeline_config that are set, in the documented order.
template <class Json, class T>
    requires detail::options_type<T>
Json write(const T& options) {
    Json j = Json::object();
    detail::write_fields(j, options);
    return j;
}

}  // namespace resil::json
