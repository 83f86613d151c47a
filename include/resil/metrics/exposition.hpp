// resil/metrics/exposition.hpp — the families and series resil's metrics
// export, built once for every exporter: the Prometheus text
// (prometheus_text.hpp), the prometheus-cpp collectable (resil/prometheus.hpp)
// and anything else that walks them. Same names, labels and values in
// each, because each writes this list.
//
//   for (const auto& family : resil::metric_families({inventory, payments}))
//       for (const auto& series : family.series) ...   // labels: dependency first
//
// A family is written when at least one dependency has the part it belongs
// to (metrics::part: declared, hooked or seen); a dependency without the
// part has no series in it. Building reads the metrics' atomics (and, under
// the rare-event lock, the per-endpoint table and the watched balancer and
// limiter) and allocates: an export's cost, never a call's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../clock.hpp"
#include "../detail/platform.hpp"
#include "../metrics.hpp"  // (which includes prometheus_text.hpp: written once this file is done, below)
#include "../outcome.hpp"

namespace resil {

/// A family's Prometheus type.
enum class metric_type : std::uint8_t { counter, gauge, histogram };

/// One series of a family: its labels (the dependency's first) and its value.
struct metric_series {
    /// Label names and values, the dependency's first.
    std::vector<std::pair<std::string, std::string>> labels;
    std::uint64_t count = 0;  ///< a counter or gauge of whole numbers
    std::optional<double> real{};  ///< instead of count: a value in seconds
    std::optional<histogram_snapshot> histogram{};  ///< a histogram's buckets and sum
};

/// One family: HELP and TYPE once, then its series.
struct metric_family {
    /// The family's name (resil_...).
    std::string_view name;
    /// Its HELP text.
    std::string_view help;
    /// Its TYPE.
    metric_type type = metric_type::counter;
    /// Its series, one per label set.
    std::vector<metric_series> series;
};

/// What metric_families builds.
struct metric_families_options {
    std::string_view key = "dependency";    ///< the label naming each metrics object
    bool latencies = true;                  ///< the duration histograms
    std::optional<time_point> now{};        ///< count current open periods up to it
};

namespace detail {

/// Every family resil may export, in the order written; the tests and the
/// operator files (ops/) check names against this list.
inline constexpr std::string_view family_names[] = {
    "resil_calls_total",
    "resil_successes_total",
    "resil_failures_total",
    "resil_attempts_total",
    "resil_deadlines_exceeded_total",
    "resil_rejections_total",
    "resil_fallbacks_total",
    "resil_retries_total",
    "resil_retries_after_server_hint_total",
    "resil_retries_exhausted_total",
    "resil_budget_refusals_total",
    "resil_limit_increases_total",
    "resil_limit_decreases_total",
    "resil_pace_changes_total",
    "resil_quota_store_failures_total",
    "resil_quota_decisions_total",
    "resil_quota_store_connected",
    "resil_breaker_open",
    "resil_breaker_transitions_total",
    "resil_breaker_open_seconds_total",
    "resil_endpoint_picks_total",
    "resil_endpoint_ejections_total",
    "resil_endpoint_returns_total",
    "resil_endpoint_ejected",
    "resil_hedges_total",
    "resil_attempt_duration_seconds",
    "resil_call_duration_seconds",
};

#if RESIL_DETAIL_BODIES
/// One dependency's figures, as read for an export.
struct dependency_figures {
    std::string name;
    metrics::part parts = metrics::part::none;
    metrics_snapshot counts;
    latency_snapshot latencies;
    hedge_counts hedges;
    std::optional<quota_reading> quota;
    std::vector<endpoint_metrics> endpoints;
    circuit_state breaker = circuit_state::closed;

    static dependency_figures of(const metrics& m, const metric_families_options& o) {
        dependency_figures f;
        f.name = m.name();
        f.parts = m.parts();
        f.counts = o.now ? m.snapshot(*o.now) : m.snapshot();
        if (o.latencies) f.latencies = m.latencies();
        f.hedges = m.hedges();
        f.quota = m.quota();
        f.endpoints = m.endpoints(o.now);
        f.breaker = m.breaker_state();
        return f;
    }
};

class family_builder {
public:
    family_builder(std::vector<dependency_figures> deps, const metric_families_options& o)
        : options_(o), figures_(std::move(deps)) {
        for (std::size_t i = 0; i < figures_.size(); ++i)
            for (std::size_t k = 0; k < i; ++k)
                if (figures_[k].name == figures_[i].name)
                    throw std::invalid_argument("resil: two metrics objects are named \"" + figures_[i].name +
                                                "\"; their series would collide");
    }

    std::vector<metric_family> build() {
        using part = metrics::part;
        counter("resil_calls_total", "Calls that ended.", {}, [](const figures& f) { return f.counts.calls; });
        counter("resil_successes_total", "Calls that succeeded without a fallback.", {},
                [](const figures& f) { return f.counts.successes; });
        by_reason("resil_failures_total", "Calls that failed, before any fallback, by reason.",
                  &metrics_snapshot::failures, part::none, false);
        counter("resil_attempts_total", "Attempts that ran the callable.", {},
                [](const figures& f) { return f.counts.attempts; });
        counter("resil_deadlines_exceeded_total", "Calls that ran out of time.", {},
                [](const figures& f) { return f.counts.deadlines_exceeded; });
        by_reason("resil_rejections_total", "Calls refused by a policy before an attempt, by reason.",
                  &metrics_snapshot::rejections, part::none, true);
        by_reason("resil_fallbacks_total", "Fallbacks used, by the reason of the failure.",
                  &metrics_snapshot::fallbacks, part::fallback, false);
        counter("resil_retries_total", "Retries scheduled.", part::retry,
                [](const figures& f) { return f.counts.retries; });
        counter("resil_retries_after_server_hint_total", "Retries whose delay the server's Retry-After set.",
                part::retry, [](const figures& f) { return f.counts.retries_after_server_hint; });
        counter("resil_retries_exhausted_total", "Calls whose every allowed attempt failed.", part::retry,
                [](const figures& f) { return f.counts.retries_exhausted; });
        counter("resil_budget_refusals_total", "Retries the retry budget refused.", part::retry,
                [](const figures& f) { return f.counts.budget_refusals; });
        counter("resil_limit_increases_total", "Times an adaptive concurrency limit rose.", part::adaptive_limiting,
                [](const figures& f) { return f.counts.limit_increases; });
        counter("resil_limit_decreases_total", "Times an adaptive concurrency limit fell.", part::adaptive_limiting,
                [](const figures& f) { return f.counts.limit_decreases; });
        counter("resil_pace_changes_total", "Times a paced bucket changed its pace or paused for a quota's reset.",
                part::pacing, [](const figures& f) { return f.counts.pace_changes; });
        counter("resil_quota_store_failures_total",
                "Decisions a shared quota's store (Redis) could not make; its failure policy decided.", part::quota,
                [](const figures& f) { return f.counts.quota_store_failures; });
        quota();
        breaker();
        endpoints();
        hedges();
        if (options_.latencies) {
            histogram("resil_attempt_duration_seconds", "How long attempts ran the callable, in seconds.",
                      [](const figures& f) { return f.latencies.attempt; });
            histogram("resil_call_duration_seconds",
                      "How long whole calls took, waits between attempts included, in seconds.",
                      [](const figures& f) { return f.latencies.call; });
        }
        return std::move(out_);
    }

private:
    using figures = dependency_figures;
    using labels = std::vector<std::pair<std::string, std::string>>;

    labels dep(std::size_t i) const { return {{std::string(options_.key), figures_[i].name}}; }
    static labels with(labels l, std::string name, std::string value) {
        l.emplace_back(std::move(name), std::move(value));
        return l;
    }
    metric_family& family(std::string_view name, std::string_view help, metric_type type) {
        out_.push_back({name, help, type, {}});
        return out_.back();
    }
    void drop_if_empty() {
        if (!out_.empty() && out_.back().series.empty()) out_.pop_back();
    }
    void add(metric_family& f, labels l, std::uint64_t v) { f.series.push_back({std::move(l), v, std::nullopt, std::nullopt}); }
    void add_real(metric_family& f, labels l, double v) { f.series.push_back({std::move(l), 0, v, std::nullopt}); }

    // A family of one series per dependency that has `needs` (none: every one).
    template <class Get>
    void counter(std::string_view name, std::string_view help, metrics::part needs, Get get,
                 metric_type type = metric_type::counter) {
        auto& f = family(name, help, type);
        for (std::size_t i = 0; i < figures_.size(); ++i)
            if (needs == metrics::part::none || has(figures_[i].parts, needs)) add(f, dep(i), get(figures_[i]));
        drop_if_empty();
    }
    // By reason, for a dependency that has `needs` (none: every one): the
    // reasons of its parts (those a policy refuses with, for rejections), and
    // any reason counted, so nothing is hidden.
    void by_reason(std::string_view name, std::string_view help, reason_counts metrics_snapshot::*member,
                   metrics::part needs, bool rejections) {
        auto& f = family(name, help, metric_type::counter);
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            const auto& counts = figures_[i].counts.*member;
            const bool has_part = needs == metrics::part::none || has(figures_[i].parts, needs);
            for (std::size_t r = 1; r < reason_count; ++r) {
                const auto why = static_cast<reason>(r);
                const bool expected = has_part && metrics::reason_belongs(why, figures_[i].parts) &&
                                      (!rejections || metrics::reason_rejects(why));
                if (!expected && counts.by_reason[r] == 0) continue;
                add(f, with(dep(i), "reason", std::string(to_string(why))), counts.by_reason[r]);
            }
        }
        drop_if_empty();
    }
    void quota() {
        static constexpr std::string_view sources[] = {"redis", "lease", "local_fallback", "refused"};
        auto& d = family("resil_quota_decisions_total",
                         "Decisions of a shared quota's limiter, by who made them: Redis, a lease, the local "
                         "fallback bucket (fail open), or a refusal (fail closed).",
                         metric_type::counter);
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            const auto& q = figures_[i].quota;
            if (!q) continue;
            const std::uint64_t values[] = {q->redis, q->lease, q->local_fallback, q->refused};
            for (std::size_t k = 0; k < 4; ++k) add(d, with(dep(i), "source", std::string(sources[k])), values[k]);
        }
        drop_if_empty();
        auto& c = family("resil_quota_store_connected",
                         "1 while the shared quota's store (Redis) answers, 0 while its limiter decides without it.",
                         metric_type::gauge);
        for (std::size_t i = 0; i < figures_.size(); ++i)
            if (figures_[i].quota) add(c, dep(i), figures_[i].quota->connected ? 1 : 0);
        drop_if_empty();
    }
    void breaker() {
        using part = metrics::part;
        auto& open = family("resil_breaker_open",
                            "1 while the circuit breaker is open or half-open, else 0; per endpoint for a breaker per "
                            "endpoint.",
                            metric_type::gauge);
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            if (has(figures_[i].parts, part::breaker))
                add(open, dep(i), figures_[i].breaker != circuit_state::closed ? 1 : 0);
            for (const auto& e : figures_[i].endpoints)
                if (e.breaker)
                    add(open, with(dep(i), "endpoint", e.address), *e.breaker != circuit_state::closed ? 1 : 0);
        }
        drop_if_empty();
        auto& t = family("resil_breaker_transitions_total", "Circuit breaker state changes, by the state entered.",
                         metric_type::counter);
        auto three = [&](const labels& l, std::uint64_t o, std::uint64_t h, std::uint64_t c) {
            add(t, with(l, "to", "open"), o);
            add(t, with(l, "to", "half_open"), h);
            add(t, with(l, "to", "closed"), c);
        };
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            const auto& f = figures_[i];
            if (has(f.parts, part::breaker))
                three(dep(i), f.counts.breaker_opened, f.counts.breaker_half_opened, f.counts.breaker_closed);
            for (const auto& e : f.endpoints)
                if (e.breaker)
                    three(with(dep(i), "endpoint", e.address), e.breaker_opened, e.breaker_half_opened,
                          e.breaker_closed);
        }
        drop_if_empty();
        auto& s = family("resil_breaker_open_seconds_total", "Time the circuit breaker spent open, in seconds.",
                         metric_type::counter);
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            const auto& f = figures_[i];
            if (has(f.parts, part::breaker)) add_real(s, dep(i), seconds(f.counts.time_open));
            for (const auto& e : f.endpoints)
                if (e.breaker) add_real(s, with(dep(i), "endpoint", e.address), seconds(e.time_open));
        }
        drop_if_empty();
    }
    void endpoints() {
        auto per_endpoint = [&](std::string_view name, std::string_view help, metric_type type, auto get) {
            auto& f = family(name, help, type);
            for (std::size_t i = 0; i < figures_.size(); ++i) {
                if (!has(figures_[i].parts, metrics::part::balancing)) continue;
                for (const auto& e : figures_[i].endpoints)
                    if (const std::optional<std::uint64_t> v = get(e))
                        add(f, with(dep(i), "endpoint", e.address), *v);
            }
            drop_if_empty();
        };
        per_endpoint("resil_endpoint_picks_total", "Times the balancer picked the endpoint.", metric_type::counter,
                     [](const endpoint_metrics& e) { return e.picks; });
        per_endpoint("resil_endpoint_ejections_total", "Times a balancer ejected the endpoint as an outlier.",
                     metric_type::counter,
                     [](const endpoint_metrics& e) { return std::optional<std::uint64_t>{e.ejections}; });
        per_endpoint("resil_endpoint_returns_total", "Times the ejected endpoint returned to its balancer's picks.",
                     metric_type::counter,
                     [](const endpoint_metrics& e) { return std::optional<std::uint64_t>{e.returns}; });
        per_endpoint("resil_endpoint_ejected", "1 while the endpoint is ejected, else 0.", metric_type::gauge,
                     [](const endpoint_metrics& e) { return std::optional<std::uint64_t>{e.ejected ? 1U : 0U}; });
    }
    void hedges() {
        auto& f = family("resil_hedges_total",
                         "Hedges by event: extra copies started, calls a hedge answered (won), copies cancelled "
                         "because another answered first, copies the retry budget refused.",
                         metric_type::counter);
        for (std::size_t i = 0; i < figures_.size(); ++i) {
            if (!has(figures_[i].parts, metrics::part::hedging)) continue;
            const auto& h = figures_[i].hedges;
            add(f, with(dep(i), "event", "started"), h.started);
            add(f, with(dep(i), "event", "won"), h.won);
            add(f, with(dep(i), "event", "cancelled"), h.cancelled);
            add(f, with(dep(i), "event", "refused"), h.refused);
        }
        drop_if_empty();
    }
    template <class Get>
    void histogram(std::string_view name, std::string_view help, Get get) {
        auto& f = family(name, help, metric_type::histogram);
        for (std::size_t i = 0; i < figures_.size(); ++i)
            f.series.push_back({dep(i), 0, std::nullopt, get(figures_[i])});
        drop_if_empty();
    }
    static double seconds(duration d) { return std::chrono::duration<double>(d).count(); }

    metric_families_options options_;
    std::vector<figures> figures_;
    std::vector<metric_family> out_;
};

#endif  // RESIL_DETAIL_BODIES

}  // namespace detail

/// The families and series of several dependencies' metrics (the
/// Prometheus text, the prometheus-cpp collectable and the JSON all write
/// these). Names must differ: a repeated one throws std::invalid_argument.
[[nodiscard]] RESIL_DECL std::vector<metric_family> metric_families(
    std::span<const std::reference_wrapper<const metrics>> deps, const metric_families_options& options = {});
/// The same, for a braced list of metrics objects: metric_families({inventory, payments}).
[[nodiscard]] RESIL_DECL std::vector<metric_family> metric_families(
    std::initializer_list<std::reference_wrapper<const metrics>> deps, const metric_families_options& options = {});

#if RESIL_DETAIL_BODIES
RESIL_DECL std::vector<metric_family> metric_families(std::span<const std::reference_wrapper<const metrics>> deps,
                                                      const metric_families_options& options) {
    std::vector<detail::dependency_figures> figures;
    figures.reserve(deps.size());
    for (const metrics& m : deps) figures.push_back(detail::dependency_figures::of(m, options));
    return detail::family_builder{std::move(figures), options}.build();
}
RESIL_DECL std::vector<metric_family> metric_families(std::initializer_list<std::reference_wrapper<const metrics>> deps,
                                                      const metric_families_options& options) {
    return metric_families(std::span<const std::reference_wrapper<const metrics>>(deps.begin(), deps.size()), options);
}
#endif

}  // namespace resil

// The text writer, which walks these families.
#define RESIL_DETAIL_EXPOSITION_READY
#include "prometheus_text.hpp"
