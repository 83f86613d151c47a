// resil/json/metrics.hpp — resil's metrics as nlohmann::json, for logs and
// status pages (the core's metrics.hpp stays free of nlohmann).
//
//   resil::metrics inventory{"inventory"};
//   ...
//   log(resil::json::to_json(inventory).dump());
//   // {"attempt_duration_seconds":{"buckets":[{"count":0,"le":0.001},...],"count":12,"sum":6.11},
//   //  "attempts":12,"breaker_open_seconds":30.0,...,"policy":"inventory",...}
//   nlohmann::json j = inventory.snapshot();  // the counters alone, no name
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "../clock.hpp"
#include "../detail/platform.hpp"
#include "../metrics.hpp"
#include "../outcome.hpp"

namespace resil::json {

// Every function here is a template on the JSON type (nlohmann::json unless
// told otherwise, and called as before: to_json(m)) only so that including
// the header instantiates nothing until one is called.

namespace detail {

inline double seconds(duration d) { return std::chrono::duration<double>(d).count(); }

template <class Json = nlohmann::json>
Json by_reason(const reason_counts& c) {
    auto out = Json::object();
    for (std::size_t i = 1; i < reason_count; ++i) out[std::string(to_string(static_cast<reason>(i)))] = c.by_reason[i];
    return out;
}

}  // namespace detail

/// A snapshot's counters as one JSON object: calls, successes, failures (by
/// reason), attempts, retries, retries_after_server_hint, retries_exhausted,
/// budget_refusals, deadlines_exceeded, rejections and fallbacks (by reason,
/// every reason but "none"), breaker_opened, breaker_half_opened,
/// breaker_closed, breaker_open_seconds (a number of seconds),
/// limit_increases, limit_decreases, pace_changes, quota_store_failures,
/// endpoint_ejections, endpoint_returns.
template <class Json = nlohmann::json>
[[nodiscard]] Json to_json(const metrics_snapshot& s) {
    return {{"calls", s.calls},
            {"successes", s.successes},
            {"failures", detail::by_reason<Json>(s.failures)},
            {"attempts", s.attempts},
            {"retries", s.retries},
            {"retries_after_server_hint", s.retries_after_server_hint},
            {"retries_exhausted", s.retries_exhausted},
            {"budget_refusals", s.budget_refusals},
            {"deadlines_exceeded", s.deadlines_exceeded},
            {"rejections", detail::by_reason<Json>(s.rejections)},
            {"fallbacks", detail::by_reason<Json>(s.fallbacks)},
            {"breaker_opened", s.breaker_opened},
            {"breaker_half_opened", s.breaker_half_opened},
            {"breaker_closed", s.breaker_closed},
            {"breaker_open_seconds", detail::seconds(s.time_open)},
            {"limit_increases", s.limit_increases},
            {"limit_decreases", s.limit_decreases},
            {"pace_changes", s.pace_changes},
            {"quota_store_failures", s.quota_store_failures},
            {"endpoint_ejections", s.endpoint_ejections},
            {"endpoint_returns", s.endpoint_returns}};
}

/// The same, with "policy": `name` (the keys metrics::json() wrote).
template <class Json = nlohmann::json>
[[nodiscard]] Json to_json(const metrics_snapshot& s, std::string_view name) {
    auto out = to_json<Json>(s);
    out["policy"] = name;
    return out;
}

/// A histogram: {"buckets": [{"le": 0.001, "count": n}, ..., {"le": "+Inf",
/// "count": n}], "sum": seconds, "count": n}. Bucket counts are cumulative,
/// as in Prometheus; "le" is in seconds.
template <class Json = nlohmann::json>
[[nodiscard]] Json to_json(const histogram_snapshot& h) {
    auto buckets = Json::array();
    for (std::size_t i = 0; i < histogram_snapshot::bucket_count; ++i) {
        Json le = "+Inf";
        if (i < latency_bucket_bounds.size()) le = detail::seconds(latency_bucket_bounds[i]);
        buckets.push_back({{"le", std::move(le)}, {"count", h.cumulative(i)}});
    }
    return {{"buckets", std::move(buckets)}, {"sum", detail::seconds(h.sum)}, {"count", h.count()}};
}

namespace detail {

/// The parts of a metrics object its exports follow: the breaker's state,
/// hedges, the endpoints and the quota, each only when the dependency has
/// that part (as the Prometheus families).
template <class Json>
void add_parts(Json& out, const metrics& m, std::optional<time_point> now) {
    using part = metrics::part;
    const auto parts = m.parts();
    if (has(parts, part::breaker)) out["breaker_state"] = std::string(to_string(m.breaker_state()));
    if (has(parts, part::hedging)) {
        const auto h = m.hedges();
        out["hedges"] = Json{{"started", h.started}, {"won", h.won}, {"cancelled", h.cancelled}, {"refused", h.refused}};
    }
    if (const auto q = m.quota())
        out["quota"] = Json{{"decisions", Json{{"redis", q->redis},
                                                {"lease", q->lease},
                                                {"local_fallback", q->local_fallback},
                                                {"refused", q->refused}}},
                            {"connected", q->connected}};
    if (has(parts, part::balancing) || has(parts, part::endpoint_breakers)) {
        Json list = Json::array();
        for (const auto& e : m.endpoints(now)) {
            Json one{{"endpoint", e.address}, {"ejections", e.ejections}, {"returns", e.returns},
                     {"ejected", e.ejected}};
            if (e.picks) one["picks"] = *e.picks;
            if (e.breaker) {
                one["breaker_state"] = std::string(to_string(*e.breaker));
                one["breaker_opened"] = e.breaker_opened;
                one["breaker_half_opened"] = e.breaker_half_opened;
                one["breaker_closed"] = e.breaker_closed;
                one["breaker_open_seconds"] = seconds(e.time_open);
            }
            list.push_back(std::move(one));
        }
        out["endpoints"] = std::move(list);
    }
}

}  // namespace detail

/// A metrics object now: to_json(m.snapshot(), m.name()) plus its latency
/// histograms, "attempt_duration_seconds" and "call_duration_seconds", and
/// the parts the dependency has (metrics::part), as the Prometheus
/// families have them: "breaker_state" (with a breaker), "hedges"
/// (started, won, cancelled, refused), "quota" (decisions by source:
/// redis, lease, local_fallback, refused; connected) and "endpoints" (an
/// array: endpoint, picks from a watched balancer, ejections, returns,
/// ejected, and its breaker's state, transitions and open seconds).
template <class Json = nlohmann::json>
[[nodiscard]] Json to_json(const metrics& m) {
    auto out = to_json<Json>(m.snapshot(), m.name());
    const auto latencies = m.latencies();
    out["attempt_duration_seconds"] = to_json<Json>(latencies.attempt);
    out["call_duration_seconds"] = to_json<Json>(latencies.call);
    detail::add_parts(out, m, std::nullopt);
    return out;
}

/// The same, counting the breakers' current open periods up to `now`.
template <class Json = nlohmann::json>
[[nodiscard]] Json to_json(const metrics& m, time_point now) {
    auto out = to_json<Json>(m.snapshot(now), m.name());
    const auto latencies = m.latencies();
    out["attempt_duration_seconds"] = to_json<Json>(latencies.attempt);
    out["call_duration_seconds"] = to_json<Json>(latencies.call);
    detail::add_parts(out, m, now);
    return out;
}

}  // namespace resil::json

// A metrics object's JSON is compiled once with RESIL_SEPARATE_COMPILATION
// (resil/json/separate_compilation.hpp).
#if RESIL_DETAIL_EXTERN_TEMPLATES
extern template nlohmann::json resil::json::to_json<nlohmann::json>(const resil::metrics&);
extern template nlohmann::json resil::json::to_json<nlohmann::json>(const resil::metrics&, resil::time_point);
#endif

// nlohmann's own conversions: `nlohmann::json j = m.snapshot();`.
namespace nlohmann {
template <>
struct adl_serializer<::resil::metrics_snapshot> {
    template <class Json>
    static void to_json(Json& j, const ::resil::metrics_snapshot& s) {
        j = ::resil::json::to_json(s);
    }
};
template <>
struct adl_serializer<::resil::histogram_snapshot> {
    template <class Json>
    static void to_json(Json& j, const ::resil::histogram_snapshot& h) {
        j = ::resil::json::to_json(h);
    }
};
}  // namespace nlohmann
