// resil/prometheus.hpp — resil's metrics for services that already use the
// Prometheus C++ client (prometheus-cpp; CMake target resil::prometheus).
//
//   resil::metrics inventory{"inventory"}, payments{"payments"};
//   prometheus::Exposer exposer{"0.0.0.0:9464"};
//   auto registry = std::make_shared<prometheus::Registry>();   // the service's own metrics
//   exposer.RegisterCollectable(registry);
//   auto resil_metrics = resil::prometheus::make_collectable({inventory, payments});
//   exposer.RegisterCollectable(resil_metrics);                 // keep resil_metrics alive
//
// A collectable, not prometheus-cpp counters kept in step: on each scrape it
// reads resil's own atomics (the families and labels of
// resil::prometheus_text, from the one list both write:
// resil/metrics/exposition.hpp), so nothing is counted twice and the recording path
// stays resil's (relaxed atomics, no lock). prometheus-cpp's Registry takes
// only families it builds itself; register this next to it, with the Exposer
// (or Gateway), or serialize both: `TextSerializer{}.Serialize(out, families)`.
// The metrics objects must outlive the collectable.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics.hpp"
#include "metrics/exposition.hpp"  // metric_families: the families the text writes too

namespace resil::prometheus {

/// A prometheus::Collectable over several dependencies' metrics objects.
/// Thread-safe: Collect() only reads the metrics' atomics.
class collectable final : public ::prometheus::Collectable {
public:
    /// Names must differ (their series would collide): throws std::invalid_argument.
    explicit collectable(std::vector<std::reference_wrapper<const metrics>> deps) : deps_(std::move(deps)) {
        for (std::size_t i = 0; i < deps_.size(); ++i)
            for (std::size_t k = 0; k < i; ++k)
                if (deps_[k].get().name() == deps_[i].get().name())
                    throw std::invalid_argument("resil::prometheus::collectable: two metrics objects are named \"" +
                                                deps_[i].get().name() + "\"; their series would collide");
    }
    /// The same, from a braced list: `{inventory, payments}`.
    collectable(std::initializer_list<std::reference_wrapper<const metrics>> deps)
        : collectable(std::vector<std::reference_wrapper<const metrics>>(deps)) {}

    /// One MetricFamily per resil family (metric_families: those of the
    /// text, with the same labels), one metric per series.
    [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override {
        std::vector<::prometheus::MetricFamily> out;
        for (const auto& family : metric_families(deps_)) {
            ::prometheus::MetricFamily f;
            f.name = std::string(family.name);
            f.help = std::string(family.help);
            f.type = family.type == metric_type::counter ? ::prometheus::MetricType::Counter
                     : family.type == metric_type::gauge ? ::prometheus::MetricType::Gauge
                                                         : ::prometheus::MetricType::Histogram;
            for (const auto& series : family.series) {
                ::prometheus::ClientMetric c;
                for (const auto& [name, value] : series.labels) c.label.push_back({name, value});
                const double v = series.real ? *series.real : static_cast<double>(series.count);
                if (series.histogram) {
                    histogram(c.histogram, *series.histogram);
                } else if (family.type == metric_type::gauge) {
                    c.gauge.value = v;
                } else {
                    c.counter.value = v;
                }
                f.metric.push_back(std::move(c));
            }
            out.push_back(std::move(f));
        }
        return out;
    }

private:
    static void histogram(::prometheus::ClientMetric::Histogram& c, const histogram_snapshot& h) {
        c.sample_count = h.count();
        c.sample_sum = std::chrono::duration<double>(h.sum).count();
        for (std::size_t i = 0; i < histogram_snapshot::bucket_count; ++i) {
            const double bound = i < latency_bucket_bounds.size()
                                     ? std::chrono::duration<double>(latency_bucket_bounds[i]).count()
                                     : std::numeric_limits<double>::infinity();
            c.bucket.push_back({h.cumulative(i), bound});
        }
    }

    std::vector<std::reference_wrapper<const metrics>> deps_;
};

/// A shared collectable, as prometheus::Exposer::RegisterCollectable takes it
/// (it holds a weak_ptr: keep the returned pointer alive).
[[nodiscard]] inline std::shared_ptr<collectable> make_collectable(
    std::initializer_list<std::reference_wrapper<const metrics>> deps) {
    return std::make_shared<collectable>(deps);
}
/// A collectable over `deps`, shared, ready for an Exposer's
/// RegisterCollectable(). Throws std::invalid_argument when two are named
/// alike.
[[nodiscard]] inline std::shared_ptr<collectable> make_collectable(
    std::vector<std::reference_wrapper<const metrics>> deps) {
    return std::make_shared<collectable>(std::move(deps));
}

}  // namespace resil::prometheus
