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
// Each family's HELP and TYPE once, then one series per dependency that has
// the family's part (resil/metrics/exposition.hpp builds the list, which the
// prometheus-cpp collectable writes too). Writing reads the metrics' atomics
// and allocates the text; nothing on the recording path.
// (No #pragma once: resil/metrics.hpp and metrics/exposition.hpp include
// each other's parts; the body is written once, after exposition.hpp's, by
// the guard below, whichever of the three headers a file includes first.)

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
#include "../detail/platform.hpp"
#include "../metrics.hpp"
#include "../outcome.hpp"
#include "exposition.hpp"

#if defined(RESIL_DETAIL_EXPOSITION_READY) && !defined(RESIL_METRICS_PROMETHEUS_TEXT_BODY)
#define RESIL_METRICS_PROMETHEUS_TEXT_BODY

namespace resil {

#if RESIL_DETAIL_BODIES
namespace detail {

/// The text writer, over metric_families.
struct prometheus_text_writer {
    static void write(std::string& out, const std::vector<metric_family>& families) {
        for (const auto& f : families) {
            header(out, f.name, f.help,
                   f.type == metric_type::counter ? "counter" : f.type == metric_type::gauge ? "gauge" : "histogram");
            for (const auto& s : f.series) {
                const std::string labels = label_text(s.labels);
                if (s.histogram) {
                    histogram(out, f.name, labels, *s.histogram);
                } else if (s.real) {
                    line(out, f.name, labels, seconds(*s.real));
                } else {
                    line(out, f.name, labels, std::to_string(s.count));
                }
            }
        }
    }

    static std::string label_text(const std::vector<std::pair<std::string, std::string>>& labels) {
        std::string out;
        for (const auto& [name, value] : labels) {
            if (!out.empty()) out += ',';
            out += name;
            out += "=\"";
            out += escape_label(value);
            out += '"';
        }
        return out;
    }
    static void histogram(std::string& out, std::string_view metric, const std::string& label,
                          const histogram_snapshot& h) {
        const std::string bucket = std::string(metric) + "_bucket";
        for (std::size_t i = 0; i < histogram_snapshot::bucket_count; ++i) {
            const auto le = i < latency_bucket_bounds.size() ? number(latency_bucket_bounds[i]) : std::string("+Inf");
            line(out, bucket, label + ",le=\"" + le + "\"", std::to_string(h.cumulative(i)));
        }
        line(out, std::string(metric) + "_sum", label, seconds(std::chrono::duration<double>(h.sum).count()));
        line(out, std::string(metric) + "_count", label, std::to_string(h.count()));
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
    static void line(std::string& out, std::string_view metric, const std::string& labels, const std::string& v) {
        out += metric;
        out += '{';
        out += labels;
        out += "} ";
        out += v;
        out += '\n';
    }
    static std::string seconds(double s) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.9f", s);
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
#endif  // RESIL_DETAIL_BODIES

/// Appends the Prometheus text (version 0.0.4) of several dependencies'
/// metrics to `out` (reuse one string across scrapes): each family's HELP
/// and TYPE once, then one series per dependency that has the family's part
/// (metrics::part), labelled dependency="<its name()>" (escaped as the
/// format requires) and, for an endpoint's series, endpoint="<address>";
/// the latency histograms (resil_attempt_duration_seconds,
/// resil_call_duration_seconds) for every dependency. With `now`, each
/// breaker's current open period counts up to it. Names must differ: a
/// repeated name throws std::invalid_argument, since its series would collide.
RESIL_DECL void write_prometheus(std::string& out, std::span<const std::reference_wrapper<const metrics>> deps,
                                 std::optional<time_point> now = std::nullopt);

/// write_prometheus() from a braced list: `write_prometheus(out, {inventory,
/// payments})`.
RESIL_DECL void write_prometheus(std::string& out, std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                 std::optional<time_point> now = std::nullopt);

/// The Prometheus text of several dependencies' metrics at once, as
/// write_prometheus writes it.
///
///   out += resil::prometheus_text({inventory, payments});
[[nodiscard]] RESIL_DECL std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps);
/// The Prometheus text of `deps` (write_prometheus() into a new string).
[[nodiscard]] RESIL_DECL std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps);
/// The same, counting each breaker's current open period up to `now`.
[[nodiscard]] RESIL_DECL std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps,
                                                     time_point now);
/// The Prometheus text of `deps`, the time open so far counted up to `now`.
[[nodiscard]] RESIL_DECL std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                                     time_point now);

// With RESIL_SEPARATE_COMPILATION the writer is compiled once
// (resil/separate_compilation.hpp); header-only, here.
#if RESIL_DETAIL_BODIES
RESIL_DECL void write_prometheus(std::string& out, std::span<const std::reference_wrapper<const metrics>> deps,
                                 std::optional<time_point> now) {
    metric_families_options o;
    o.now = now;
    detail::prometheus_text_writer::write(out, metric_families(deps, o));
}
RESIL_DECL void write_prometheus(std::string& out, std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                 std::optional<time_point> now) {
    write_prometheus(out, std::span<const std::reference_wrapper<const metrics>>(deps.begin(), deps.size()), now);
}
RESIL_DECL std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps) {
    std::string out;
    write_prometheus(out, deps);
    return out;
}
RESIL_DECL std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps) {
    std::string out;
    write_prometheus(out, deps);
    return out;
}
RESIL_DECL std::string prometheus_text(std::span<const std::reference_wrapper<const metrics>> deps, time_point now) {
    std::string out;
    write_prometheus(out, deps, now);
    return out;
}
RESIL_DECL std::string prometheus_text(std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                       time_point now) {
    std::string out;
    write_prometheus(out, deps, now);
    return out;
}

// metrics' own text (declared in the class, in resil/metrics.hpp): the
// counter families, labelled policy="<name>", no histograms. From a bare
// snapshot every part it counts is taken as present.
RESIL_DECL std::string metrics::to_prometheus(const metrics_snapshot& s, std::string_view name) {
    detail::dependency_figures f;
    f.name = std::string(name);
    f.parts = part::retry | part::breaker | part::adaptive_limiting | part::pacing | part::quota | part::fallback;
    f.counts = s;
    std::vector<detail::dependency_figures> one;
    one.push_back(std::move(f));
    std::string out;
    detail::prometheus_text_writer::write(out, detail::family_builder{std::move(one), {"policy", false, {}}}.build());
    return out;
}
RESIL_DECL std::string metrics::prometheus() const {
    std::string out;
    detail::prometheus_text_writer::write(out, metric_families({*this}, {"policy", false, {}}));
    return out;
}
RESIL_DECL std::string metrics::prometheus(time_point now) const {
    std::string out;
    detail::prometheus_text_writer::write(out, metric_families({*this}, {"policy", false, now}));
    return out;
}
#endif  // RESIL_DETAIL_BODIES

}  // namespace resil

#endif  // RESIL_METRICS_PROMETHEUS_TEXT_BODY
