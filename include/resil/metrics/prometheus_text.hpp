// resil/metrics/prometheus_text.hpp — resil's metrics in the Prometheus text
// exposition format (version 0.0.4), for a service that serves /metrics
// itself. resil/metrics.hpp includes it; into a prometheus-cpp registry
// instead: resil/prometheus.hpp; as JSON: resil/json/metrics.hpp.
//
//   http_respond(resil::prometheus_text({inventory, payments}));
//   // resil_rejections_total{dependency="inventory",reason="circuit_open"} 12
//   // resil_attempt_duration_seconds_bucket{dependency="payments",le="0.25"} 97
//   resil::write_prometheus(body, {inventory, payments});  // appends to a string reused across scrapes
//
// Each family's HELP and TYPE once, then one series per dependency: the
// counters of detail::counter_families (which the prometheus-cpp collectable
// walks too), the breaker's transitions and time open, and the latency
// histograms. Writing reads the metrics' atomics (snapshot(), latencies())
// and allocates the text; nothing on the recording path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../clock.hpp"
#include "../metrics.hpp"
#include "../outcome.hpp"

namespace resil {

namespace detail {

/// One exported counter family of a metrics_snapshot: a plain counter
/// (`count`) or one series per reason but "none" (`by_reason`). The
/// Prometheus writers (text here, prometheus.hpp's collectable) walk this one
/// list, followed by the breaker's transitions and time open.
struct counter_family {
    std::string_view name;
    std::string_view help;
    std::uint64_t metrics_snapshot::*count = nullptr;
    reason_counts metrics_snapshot::*by_reason = nullptr;
};
inline const std::array<counter_family, 17> counter_families{{
    {"resil_calls_total", "Calls that ended.", &metrics_snapshot::calls, nullptr},
    {"resil_successes_total", "Calls that succeeded without a fallback.", &metrics_snapshot::successes, nullptr},
    {"resil_failures_total", "Calls that failed, before any fallback, by reason.", nullptr, &metrics_snapshot::failures},
    {"resil_attempts_total", "Attempts that ran the callable.", &metrics_snapshot::attempts, nullptr},
    {"resil_retries_total", "Retries scheduled.", &metrics_snapshot::retries, nullptr},
    {"resil_retries_after_server_hint_total", "Retries whose delay the server's Retry-After set.",
     &metrics_snapshot::retries_after_server_hint, nullptr},
    {"resil_retries_exhausted_total", "Calls whose every allowed attempt failed.", &metrics_snapshot::retries_exhausted,
     nullptr},
    {"resil_budget_refusals_total", "Retries the retry budget refused.", &metrics_snapshot::budget_refusals, nullptr},
    {"resil_deadlines_exceeded_total", "Calls that ran out of time.", &metrics_snapshot::deadlines_exceeded, nullptr},
    {"resil_rejections_total", "Calls refused by a policy before an attempt, by reason.", nullptr,
     &metrics_snapshot::rejections},
    {"resil_fallbacks_total", "Fallbacks used, by the reason of the failure.", nullptr, &metrics_snapshot::fallbacks},
    {"resil_limit_increases_total", "Times an adaptive concurrency limit rose.", &metrics_snapshot::limit_increases,
     nullptr},
    {"resil_limit_decreases_total", "Times an adaptive concurrency limit fell.", &metrics_snapshot::limit_decreases,
     nullptr},
    {"resil_pace_changes_total", "Times a paced bucket changed its pace or paused for a quota's reset.",
     &metrics_snapshot::pace_changes, nullptr},
    {"resil_quota_store_failures_total",
     "Decisions a shared quota's store (Redis) could not make; its failure policy decided.",
     &metrics_snapshot::quota_store_failures, nullptr},
    {"resil_endpoint_ejections_total", "Times a balancer ejected an endpoint as an outlier.",
     &metrics_snapshot::endpoint_ejections, nullptr},
    {"resil_endpoint_returns_total", "Times an ejected endpoint returned to its balancer's picks.",
     &metrics_snapshot::endpoint_returns, nullptr},
}};
inline constexpr std::string_view transitions_family = "resil_breaker_transitions_total";
inline constexpr std::string_view transitions_help = "Circuit breaker state changes, by the state entered.";
inline constexpr std::string_view open_seconds_family = "resil_breaker_open_seconds_total";
inline constexpr std::string_view open_seconds_help = "Time the circuit breaker spent open, in seconds.";
inline constexpr std::string_view attempt_duration_family = "resil_attempt_duration_seconds";
inline constexpr std::string_view attempt_duration_help = "How long attempts ran the callable, in seconds.";
inline constexpr std::string_view call_duration_family = "resil_call_duration_seconds";
inline constexpr std::string_view call_duration_help =
    "How long whole calls took, waits between attempts included, in seconds.";

/// The text writer, over snapshots: what metrics::prometheus() and
/// write_prometheus() share.
struct prometheus_text_writer {
    // One dependency's figures.
    struct labelled {
        std::string_view name;
        const metrics_snapshot* counts;
        const latency_snapshot* latencies;  // null when not written
    };

    // Every counter family (and with_latencies, every histogram), each HELP
    // and TYPE once, then one sample per dependency (label `key`="name"), by
    // reason or state where it has them.
    static void write_families(std::string& out, std::string_view key, std::span<const labelled> deps,
                               bool with_latencies) {
        std::vector<std::string> labels;
        labels.reserve(deps.size());
        for (const auto& d : deps) labels.push_back(std::string(key) + "=\"" + escape_label(d.name) + "\"");
        for (const auto& family : counter_families) {
            header(out, family.name, family.help, "counter");
            for (std::size_t i = 0; i < deps.size(); ++i) {
                if (family.count) {
                    sample(out, family.name, labels[i], deps[i].counts->*family.count);
                    continue;
                }
                for (std::size_t r = 1; r < reason_count; ++r)
                    sample(out, family.name,
                           labels[i] + ",reason=\"" + std::string(to_string(static_cast<reason>(r))) + "\"",
                           (deps[i].counts->*family.by_reason).by_reason[r]);
            }
        }
        header(out, transitions_family, transitions_help, "counter");
        for (std::size_t i = 0; i < deps.size(); ++i) {
            const auto& c = *deps[i].counts;
            sample(out, transitions_family, labels[i] + ",to=\"open\"", c.breaker_opened);
            sample(out, transitions_family, labels[i] + ",to=\"half_open\"", c.breaker_half_opened);
            sample(out, transitions_family, labels[i] + ",to=\"closed\"", c.breaker_closed);
        }
        header(out, open_seconds_family, open_seconds_help, "counter");
        for (std::size_t i = 0; i < deps.size(); ++i) {
            out += open_seconds_family;
            out += "{" + labels[i] + "} " + seconds(deps[i].counts->time_open) + "\n";
        }

        if (!with_latencies) return;
        header(out, attempt_duration_family, attempt_duration_help, "histogram");
        for (std::size_t i = 0; i < deps.size(); ++i)
            histogram(out, attempt_duration_family, labels[i], deps[i].latencies->attempt);
        header(out, call_duration_family, call_duration_help, "histogram");
        for (std::size_t i = 0; i < deps.size(); ++i)
            histogram(out, call_duration_family, labels[i], deps[i].latencies->call);
    }

    static void histogram(std::string& out, std::string_view metric, const std::string& label,
                          const histogram_snapshot& h) {
        const std::string bucket = std::string(metric) + "_bucket";
        for (std::size_t i = 0; i < histogram_snapshot::bucket_count; ++i) {
            const auto le = i < latency_bucket_bounds.size() ? number(latency_bucket_bounds[i]) : std::string("+Inf");
            sample(out, bucket, label + ",le=\"" + le + "\"", h.cumulative(i));
        }
        out += metric;
        out += "_sum{" + label + "} " + seconds(h.sum) + "\n";
        sample(out, std::string(metric) + "_count", label, h.count());
    }

    static void header(std::string& out, std::string_view metric, std::string_view help, std::string_view type) {
        out += "# HELP ";
        out += metric;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += metric;
        out += ' ';
        out += type;
        out += '\n';
    }
    static void sample(std::string& out, std::string_view metric, const std::string& labels, std::uint64_t v) {
        out += metric;
        out += '{';
        out += labels;
        out += "} ";
        out += std::to_string(v);
        out += '\n';
    }
    static std::string seconds(duration d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9f", std::chrono::duration<double>(d).count());
        return buf;
    }
    // A bucket bound in seconds, as short as it is exact (0.001, 2.5, 10).
    static std::string number(duration d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", std::chrono::duration<double>(d).count());
        return buf;
    }
    // Prometheus label values escape backslash, double quote and newline.
    static std::string escape_label(std::string_view v) {
        std::string out;
        for (char c : v) {
            if (c == '\\' || c == '"') out += '\\';
            if (c == '\n') {
                out += "\\n";
                continue;
            }
            out += c;
        }
        return out;
    }
};

}  // namespace detail

/// Appends the Prometheus text (version 0.0.4) of several dependencies'
/// metrics to `out` (reuse one string across scrapes): each family's HELP
/// and TYPE once, then one series per dependency, labelled
/// dependency="<its name()>" (escaped as the format requires); the counters
/// of metrics::prometheus() and the latency histograms
/// (resil_attempt_duration_seconds, resil_call_duration_seconds). With
/// `now`, each breaker's current open period counts up to it. Names must
/// differ: a repeated name throws std::invalid_argument, since its series
/// would collide.
inline void write_prometheus(std::string& out, std::span<const std::reference_wrapper<const metrics>> deps,
                             std::optional<time_point> now = std::nullopt) {
    std::vector<metrics_snapshot> counts;
    std::vector<latency_snapshot> latencies;
    std::vector<detail::prometheus_text_writer::labelled> labelled;
    counts.reserve(deps.size());
    latencies.reserve(deps.size());
    labelled.reserve(deps.size());
    for (std::size_t i = 0; i < deps.size(); ++i) {
        const metrics& m = deps[i];
        for (std::size_t k = 0; k < i; ++k)
            if (deps[k].get().name() == m.name())
                throw std::invalid_argument("resil::write_prometheus: two metrics objects are named \"" + m.name() +
                                            "\"; their series would collide");
        counts.push_back(now ? m.snapshot(*now) : m.snapshot());
        latencies.push_back(m.latencies());
    }
    for (std::size_t i = 0; i < deps.size(); ++i)
        labelled.push_back({deps[i].get().name(), &counts[i], &latencies[i]});
    detail::prometheus_text_writer::write_families(out, "dependency", labelled, true);
}

/// write_prometheus() from a braced list: `write_prometheus(out, {inventory,
/// payments})`.
inline void write_prometheus(std::string& out, std::initializer_list<std::reference_wrapper<const metrics>> deps,
                             std::optional<time_point> now = std::nullopt) {
    write_prometheus(out, std::span<const std::reference_wrapper<const metrics>>(deps.begin(), deps.size()), now);
}

/// The Prometheus text of several dependencies' metrics at once, as
/// write_prometheus writes it.
///
///   out += resil::prometheus_text({inventory, payments});
[[nodiscard]] inline std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps) {
    std::string out;
    write_prometheus(out, deps);
    return out;
}
/// The Prometheus text of `deps` (write_prometheus() into a new string).
[[nodiscard]] inline std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps) {
    std::string out;
    write_prometheus(out, deps);
    return out;
}
/// The same, counting each breaker's current open period up to `now`.
[[nodiscard]] inline std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps,
                                                 time_point now) {
    std::string out;
    write_prometheus(out, deps, now);
    return out;
}
/// The Prometheus text of `deps`, the time open so far counted up to `now`.
[[nodiscard]] inline std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                                 time_point now) {
    std::string out;
    write_prometheus(out, deps, now);
    return out;
}

// metrics' own text (declared in the class, in resil/metrics.hpp).
inline std::string metrics::to_prometheus(const metrics_snapshot& s, std::string_view name) {
    std::string out;
    const detail::prometheus_text_writer::labelled one{name, &s, nullptr};
    detail::prometheus_text_writer::write_families(
        out, "policy", std::span<const detail::prometheus_text_writer::labelled>(&one, 1), false);
    return out;
}
inline std::string metrics::prometheus() const { return to_prometheus(snapshot(), name_); }
inline std::string metrics::prometheus(time_point now) const { return to_prometheus(snapshot(now), name_); }

}  // namespace resil
