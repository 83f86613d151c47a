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
// reads resil's own atomics (the same families and labels as
// resil::prometheus_text: dependency="<name>", the counters and the attempt
// latency histogram), so nothing is counted twice and the recording path
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
#include "metrics/prometheus_text.hpp"  // detail::counter_families: the same families as the text

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

    /// One MetricFamily per resil family, one metric per dependency (and
    /// reason or state where a family has them).
    [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override {
        std::vector<metrics_snapshot> counts;
        std::vector<latency_snapshot> latencies;
        counts.reserve(deps_.size());
        latencies.reserve(deps_.size());
        for (const metrics& m : deps_) {
            counts.push_back(m.snapshot());
            latencies.push_back(m.latencies());
        }
        std::vector<::prometheus::MetricFamily> out;
        out.reserve(detail::counter_families.size() + 3);
        for (const auto& family : detail::counter_families) {
            auto& f = add(out, family.name, family.help, ::prometheus::MetricType::Counter);
            for (std::size_t i = 0; i < deps_.size(); ++i) {
                if (family.count) {
                    counter(f, deps_[i], {}, static_cast<double>(counts[i].*family.count));
                    continue;
                }
                for (std::size_t r = 1; r < reason_count; ++r)
                    counter(f, deps_[i], {"reason", std::string(to_string(static_cast<reason>(r)))},
                            static_cast<double>((counts[i].*family.by_reason).by_reason[r]));
            }
        }
        auto& transitions = add(out, detail::transitions_family, detail::transitions_help,
                                ::prometheus::MetricType::Counter);
        for (std::size_t i = 0; i < deps_.size(); ++i) {
            counter(transitions, deps_[i], {"to", "open"}, static_cast<double>(counts[i].breaker_opened));
            counter(transitions, deps_[i], {"to", "half_open"}, static_cast<double>(counts[i].breaker_half_opened));
            counter(transitions, deps_[i], {"to", "closed"}, static_cast<double>(counts[i].breaker_closed));
        }
        auto& open = add(out, detail::open_seconds_family, detail::open_seconds_help, ::prometheus::MetricType::Counter);
        for (std::size_t i = 0; i < deps_.size(); ++i)
            counter(open, deps_[i], {}, std::chrono::duration<double>(counts[i].time_open).count());
        auto& attempts = add(out, detail::attempt_duration_family, detail::attempt_duration_help,
                             ::prometheus::MetricType::Histogram);
        for (std::size_t i = 0; i < deps_.size(); ++i) histogram(attempts, deps_[i], latencies[i].attempt);
        auto& calls = add(out, detail::call_duration_family, detail::call_duration_help,
                          ::prometheus::MetricType::Histogram);
        for (std::size_t i = 0; i < deps_.size(); ++i) histogram(calls, deps_[i], latencies[i].call);
        return out;
    }

private:
    static ::prometheus::MetricFamily& add(std::vector<::prometheus::MetricFamily>& out, std::string_view name,
                                           std::string_view help, ::prometheus::MetricType type) {
        ::prometheus::MetricFamily f;
        f.name = std::string(name);
        f.help = std::string(help);
        f.type = type;
        out.push_back(std::move(f));
        return out.back();
    }
    static ::prometheus::ClientMetric& metric(::prometheus::MetricFamily& f, const metrics& m,
                                              ::prometheus::ClientMetric::Label extra) {
        ::prometheus::ClientMetric c;
        c.label.push_back({"dependency", m.name()});
        if (!extra.name.empty()) c.label.push_back(std::move(extra));
        f.metric.push_back(std::move(c));
        return f.metric.back();
    }
    static void counter(::prometheus::MetricFamily& f, const metrics& m, ::prometheus::ClientMetric::Label extra,
                        double value) {
        metric(f, m, std::move(extra)).counter.value = value;
    }
    static void histogram(::prometheus::MetricFamily& f, const metrics& m, const histogram_snapshot& h) {
        auto& c = metric(f, m, {}).histogram;
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
