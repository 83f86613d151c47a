// resil/metrics.hpp — counters and latency histograms for what a pipeline
// did, readable at any time as a snapshot, exportable in the Prometheus text
// format (resil/metrics/prometheus_text.hpp, included here; as JSON:
// resil/json/metrics.hpp; into a prometheus::Registry: resil/prometheus.hpp).
//
//   resil::metrics inventory{"inventory"};                      // one per dependency
//   breaker_options.on_state_change = inventory.breaker_hook(); // transitions, time open
//   auto pipe = resil::pipeline(...).with_listener(std::ref(inventory));
//   ...
//   auto s = inventory.snapshot();    // s.calls, s.rejections[reason::circuit_open], ...
//   auto l = inventory.latencies();   // l.attempt: a histogram of attempt durations
//   http_respond(resil::prometheus_text({inventory, payments}));
//   // resil_rejections_total{dependency="inventory",reason="circuit_open"} 12
//   // resil_attempt_duration_seconds_bucket{dependency="payments",le="0.25"} 97
//
// A metrics object is a listener (see events.hpp): every counter is a relaxed
// atomic, so it is thread-safe and cheap (no lock, no allocation per event),
// and one object may serve several pipelines. The counters and histograms
// that calls write are per-thread stripes (detail/stripes.hpp), which reads
// (snapshot(), latencies(), the exports) add up: threads sharing one metrics
// object do not write one cache line on every event. Memory: 768 bytes per
// stripe (default_stripe_count(): this machine's hardware threads, rounded up
// to a power of two, at most 64), allocated at construction. Each event is counted once where
// it happens: a rejection by the breaker counts as one rejection however many
// policies it passes through. It asks its pipelines for attempt durations
// (times_attempts: two clock reads per attempt) and keeps them in a histogram
// with the fixed buckets of latency_bucket_bounds.
//
// Breaker transitions are counted through the breaker's own hook, not the
// pipeline listener: a breaker changes state for all its callers (and on
// reset() or isolate(), outside any call), and a pipeline also forwards the
// transitions its calls cause, so counting both would count them twice.
// A balancer's ejections and returns come through its hooks too
// (`on_ejected = std::ref(m)`, `on_returned = std::ref(m)`).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "clock.hpp"
#include "detail/stripes.hpp"
#include "events.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"

namespace resil {

/// The upper bounds of the latency histograms' buckets, Prometheus-style: a
/// duration d is counted in the first bucket with d <= bound, or in the last
/// (+Inf) bucket past 10 s. Fixed, so histograms of different dependencies
/// and processes aggregate. 1 ms ... 10 s in 1-2.5-5 steps.
inline constexpr std::array<duration, 13> latency_bucket_bounds{
    std::chrono::microseconds{1'000},     std::chrono::microseconds{2'500},     std::chrono::microseconds{5'000},
    std::chrono::microseconds{10'000},    std::chrono::microseconds{25'000},    std::chrono::microseconds{50'000},
    std::chrono::microseconds{100'000},   std::chrono::microseconds{250'000},   std::chrono::microseconds{500'000},
    std::chrono::microseconds{1'000'000}, std::chrono::microseconds{2'500'000}, std::chrono::microseconds{5'000'000},
    std::chrono::microseconds{10'000'000}};

/// A copy of a latency histogram: the count of each bucket (not cumulative;
/// the last is +Inf) and the sum of the durations recorded.
struct histogram_snapshot {
    /// The buckets: one per bound of latency_bucket_bounds, plus +Inf.
    static constexpr std::size_t bucket_count = latency_bucket_bounds.size() + 1;
    /// Latencies counted in each bucket (not cumulative).
    std::array<std::uint64_t, bucket_count> buckets{};
    /// The sum of the latencies counted.
    duration sum{};

    /// Durations recorded (the sum of the buckets).
    [[nodiscard]] std::uint64_t count() const noexcept {
        std::uint64_t n = 0;
        for (auto b : buckets) n += b;
        return n;
    }
    /// Durations <= latency_bucket_bounds[i] (i == bounds' size: all of them),
    /// as Prometheus' `le` buckets count.
    [[nodiscard]] std::uint64_t cumulative(std::size_t i) const noexcept {
        std::uint64_t n = 0;
        for (std::size_t k = 0; k <= i && k < bucket_count; ++k) n += buckets[k];
        return n;
    }

    /// Field-by-field equality.
    friend bool operator==(const histogram_snapshot&, const histogram_snapshot&) = default;
};

/// A metrics object's latency histograms.
struct latency_snapshot {
    /// How long each attempt ran the callable, from events::attempt_finished.
    histogram_snapshot attempt;
    /// How long each whole call took, waits between attempts included, from
    /// events::call_finished.
    histogram_snapshot call;

    /// Field-by-field equality.
    friend bool operator==(const latency_snapshot&, const latency_snapshot&) = default;
};

namespace detail {

/// A histogram with latency_bucket_bounds: relaxed atomics, no lock, no
/// allocation; record() is a short scan and two fetch_adds. (A metrics
/// object holds one per stripe of threads; add_to() sums them.)
class latency_histogram {
public:
    void record(duration d) noexcept {
        if (d < duration::zero()) d = duration::zero();
        std::size_t i = 0;
        while (i < latency_bucket_bounds.size() && d > latency_bucket_bounds[i]) ++i;
        buckets_[i].fetch_add(1, std::memory_order_relaxed);
        sum_.fetch_add(d.count(), std::memory_order_relaxed);
    }
    /// Adds this histogram's counts and sum to `s`.
    void add_to(histogram_snapshot& s) const noexcept {
        for (std::size_t i = 0; i < buckets_.size(); ++i) s.buckets[i] += buckets_[i].load(std::memory_order_relaxed);
        s.sum += duration{sum_.load(std::memory_order_relaxed)};
    }
    [[nodiscard]] histogram_snapshot snapshot() const noexcept {
        histogram_snapshot s;
        add_to(s);
        return s;
    }

private:
    std::array<std::atomic<std::uint64_t>, histogram_snapshot::bucket_count> buckets_{};
    std::atomic<duration::rep> sum_{0};
};

}  // namespace detail

/// A consistent-enough copy of a metrics object's counters (each counter is
/// read atomically; the set is not one atomic snapshot).
struct metrics_snapshot {
    std::uint64_t calls = 0;              ///< calls that ended
    std::uint64_t successes = 0;          ///< calls that succeeded without a fallback
    reason_counts failures{};             ///< calls that failed (before any fallback), by reason
    std::uint64_t attempts = 0;           ///< attempts that ran the callable
    std::uint64_t retries = 0;            ///< retries scheduled
    std::uint64_t retries_after_server_hint = 0;  ///< of which the server's Retry-After set the delay
    std::uint64_t retries_exhausted = 0;  ///< calls whose every allowed attempt failed
    std::uint64_t budget_refusals = 0;    ///< retries the budget refused
    std::uint64_t deadlines_exceeded = 0; ///< calls that ran out of time
    reason_counts rejections{};           ///< calls refused by a policy before an attempt, by reason
    reason_counts fallbacks{};            ///< fallbacks used, by the reason of the failure
    std::uint64_t breaker_opened = 0;     ///< transitions into open
    /// Transitions into half-open.
    std::uint64_t breaker_half_opened = 0;
    std::uint64_t breaker_closed = 0;     ///< transitions back to closed
    /// Total time the breaker spent open: the open periods that ended, plus,
    /// for snapshot(now), the current one up to `now`.
    duration time_open{};
    std::uint64_t limit_increases = 0;    ///< an adaptive limit rose (events::limit_changed)
    std::uint64_t limit_decreases = 0;    ///< an adaptive limit fell
    std::uint64_t pace_changes = 0;       ///< a paced bucket changed its pace or paused (events::pace_changed)
    /// Decisions a shared quota's store (Redis) could not make, whatever its
    /// failure policy then did (events::quota_store_failed): failing open,
    /// the outage shows here and nowhere else among these counts.
    std::uint64_t quota_store_failures = 0;
    std::uint64_t endpoint_ejections = 0; ///< a balancer ejected an endpoint (events::endpoint_ejected)
    std::uint64_t endpoint_returns = 0;   ///< an ejected endpoint came back (events::endpoint_returned)

    /// Field-by-field equality.
    friend bool operator==(const metrics_snapshot&, const metrics_snapshot&) = default;
};

/// Counters of one dependency's calls; a listener for its pipelines and the
/// state-change hook of its breaker. Thread-safe: every member may be called
/// from any number of threads at once. Not copyable (it is shared state:
/// pass std::ref(m) to with_listener).
class metrics {
public:
    /// `name` labels every exported sample (policy="name"): name the dependency.
    explicit metrics(std::string name = "default") : name_(std::move(name)) {}
    metrics(const metrics&) = delete;
    metrics& operator=(const metrics&) = delete;

    /// The dependency's name: the label of its exported samples.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// Asks pipelines for attempt durations (events::attempt_finished::elapsed),
    /// which feed latencies().attempt. A listener forwarding events to a
    /// metrics object should ask for them too, or every attempt reads 0.
    static constexpr bool times_attempts = true;

    // The listener: one handler per event kind, each writing the calling
    // thread's stripe.
    ///@{
    /// The listener: one handler per event kind, each counting into the calling
    /// thread's stripe (wait-free).
    void operator()(const events::attempt_started&) noexcept { add(local().attempts); }
    void operator()(const events::attempt_finished& e) noexcept { local().attempt_latency.record(e.elapsed); }
    void operator()(const events::retry_scheduled& e) noexcept {
        auto& c = local();
        add(c.retries);
        if (e.from_retry_after) add(c.retries_after_hint);
    }
    void operator()(const events::retries_exhausted&) noexcept { add(local().retries_exhausted); }
    void operator()(const events::budget_refused&) noexcept { add(local().budget_refusals); }
    void operator()(const events::deadline_exceeded&) noexcept { add(local().deadlines_exceeded); }
    void operator()(const events::rejected& e) noexcept { add(local().rejections[index(e.reason)]); }
    void operator()(const events::fallback_used& e) noexcept { add(local().fallbacks[index(e.reason)]); }
    void operator()(const events::limit_changed& e) noexcept {
        if (e.to != e.from) add(e.to > e.from ? local().limit_increases : local().limit_decreases);
    }
    void operator()(const events::pace_changed&) noexcept { add(local().pace_changes); }
    void operator()(const events::quota_store_failed&) noexcept { add(local().quota_store_failures); }
    void operator()(const events::call_finished& e) noexcept {
        auto& c = local();
        c.call_latency.record(e.elapsed);
        add(c.calls);
        if (e.reason == reason::none)
            add(c.successes);
        else
            add(c.failures[index(e.reason)]);
    }
    ///@}
    /// A balancer's ejections and returns, rare and not pipeline events: they
    /// reach a metrics object through the balancer's hooks,
    /// `options.on_ejected = std::ref(m); options.on_returned = std::ref(m);`
    /// (a reference: `m` must outlive the balancer).
    void operator()(const events::endpoint_ejected&) noexcept { add(endpoint_ejections_); }
    /// An ejected endpoint came back: counted in endpoint_returns.
    void operator()(const events::endpoint_returned&) noexcept { add(endpoint_returns_); }
    /// Not a pipeline event for metrics: count transitions with breaker_hook().
    /// (Deleted, so a pipeline listening through std::ref(metrics) skips the
    /// transitions it forwards, and `on_state_change = std::ref(m)` does not
    /// compile instead of counting every transition twice.)
    void operator()(const events::breaker_state_changed&) = delete;

    /// The breaker's hook: `options.on_state_change = m.breaker_hook()`.
    /// Counts transitions by the state entered and the time spent open (from
    /// the events' `at`). Holds a pointer: `*this` must outlive the breaker.
    /// One breaker per metrics object: the time open pairs its transitions.
    struct breaker_hook_type {
        /// The metrics object it counts into.
        metrics* owner;
        /// Counts one transition (record_transition()).
        void operator()(const events::breaker_state_changed& e) const noexcept { owner->record_transition(e); }
    };
    /// The hook for a breaker's on_state_change: counts its transitions here.
    /// `*this` must outlive the breaker.
    [[nodiscard]] breaker_hook_type breaker_hook() noexcept { return {this}; }

    /// Records one breaker transition (what breaker_hook() calls).
    void record_transition(const events::breaker_state_changed& e) noexcept {
        const auto at = e.at.time_since_epoch().count();
        if (e.to == circuit_state::open) {
            add(opened_);
        } else if (e.to == circuit_state::half_open) {
            add(half_opened_);
        } else {
            add(closed_);
        }
        if (e.from == circuit_state::open && e.to != circuit_state::open) {
            const auto since = open_since_.exchange(not_open, std::memory_order_relaxed);
            if (since != not_open && at > since) time_open_.fetch_add(at - since, std::memory_order_relaxed);
        }
        if (e.to == circuit_state::open) {
            // Keep the earliest start when an open state is entered again
            // without leaving it (isolate() while open).
            auto expected = not_open;
            open_since_.compare_exchange_strong(expected, at, std::memory_order_relaxed);
        }
    }

    /// The counters now. time_open holds the open periods that ended.
    [[nodiscard]] metrics_snapshot snapshot() const noexcept { return snapshot_impl(std::nullopt); }
    /// The counters, with time_open including the current open period up to
    /// `now` (a reading of the breaker's clock).
    [[nodiscard]] metrics_snapshot snapshot(time_point now) const noexcept { return snapshot_impl(now); }

    /// The latency histograms now (the stripes added up).
    [[nodiscard]] latency_snapshot latencies() const noexcept {
        latency_snapshot l;
        for (std::size_t i = 0; i < stripes_.size(); ++i) {
            stripes_[i].attempt_latency.add_to(l.attempt);
            stripes_[i].call_latency.add_to(l.call);
        }
        return l;
    }

    /// The counters in the Prometheus text exposition format (version 0.0.4),
    /// labelled policy="name()". For one dependency alone: the text of several
    /// cannot be concatenated (each repeats HELP and TYPE), and it holds no
    /// histograms; prometheus_text({a, b, ...}) writes both for all of them.
    /// (Written by resil/metrics/prometheus_text.hpp.)
    [[nodiscard]] std::string prometheus() const;
    /// The same, counting the current open period up to `now` (see snapshot(now)).
    [[nodiscard]] std::string prometheus(time_point now) const;

    /// Formats a snapshot in the Prometheus text format; `name` is the policy label.
    [[nodiscard]] static std::string to_prometheus(const metrics_snapshot& s, std::string_view name);

private:
    using counter = std::atomic<std::uint64_t>;

    [[nodiscard]] metrics_snapshot snapshot_impl(std::optional<time_point> now) const noexcept {
        metrics_snapshot s;
        for (std::size_t k = 0; k < stripes_.size(); ++k) {
            const auto& c = stripes_[k];
            s.calls += load(c.calls);
            s.successes += load(c.successes);
            s.attempts += load(c.attempts);
            s.retries += load(c.retries);
            s.retries_after_server_hint += load(c.retries_after_hint);
            s.retries_exhausted += load(c.retries_exhausted);
            s.budget_refusals += load(c.budget_refusals);
            s.deadlines_exceeded += load(c.deadlines_exceeded);
            s.limit_increases += load(c.limit_increases);
            s.limit_decreases += load(c.limit_decreases);
            s.pace_changes += load(c.pace_changes);
            s.quota_store_failures += load(c.quota_store_failures);
            for (std::size_t i = 0; i < reason_count; ++i) {
                s.failures.by_reason[i] += load(c.failures[i]);
                s.rejections.by_reason[i] += load(c.rejections[i]);
                s.fallbacks.by_reason[i] += load(c.fallbacks[i]);
            }
        }
        s.endpoint_ejections = load(endpoint_ejections_);
        s.endpoint_returns = load(endpoint_returns_);
        s.breaker_opened = load(opened_);
        s.breaker_half_opened = load(half_opened_);
        s.breaker_closed = load(closed_);
        s.time_open = duration{time_open_.load(std::memory_order_relaxed)};
        if (now) {
            const auto since = open_since_.load(std::memory_order_relaxed);
            const auto t = now->time_since_epoch().count();
            if (since != not_open && t > since) s.time_open += duration{t - since};
        }
        return s;
    }

    static void add(counter& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
    static std::uint64_t load(const counter& c) noexcept { return c.load(std::memory_order_relaxed); }
    static std::size_t index(reason r) noexcept {
        const auto i = static_cast<std::size_t>(r);
        return i < reason_count ? i : 0;
    }

    // What calls write, one copy per stripe of threads: 92 words (736
    // bytes). Limit and pace changes too: Gradient2 may move its limit on
    // most calls.
    struct call_counters {
        counter calls{0}, successes{0}, attempts{0}, retries{0}, retries_after_hint{0}, retries_exhausted{0},
            budget_refusals{0}, deadlines_exceeded{0}, limit_increases{0}, limit_decreases{0}, pace_changes{0},
            quota_store_failures{0};
        std::array<counter, reason_count> failures{}, rejections{}, fallbacks{};
        detail::latency_histogram attempt_latency;
        detail::latency_histogram call_latency;
    };
    static_assert(sizeof(call_counters) == (12 + 3 * reason_count + 30) * sizeof(counter));
    call_counters& local() noexcept { return stripes_.local(); }

    std::string name_;
    detail::stripes<call_counters> stripes_;
    // Breaker transitions: written on changes of state, not per call.
    counter opened_{0}, half_opened_{0}, closed_{0};
    counter endpoint_ejections_{0}, endpoint_returns_{0};  // rare: not striped
    static constexpr duration::rep not_open = std::numeric_limits<duration::rep>::min();
    std::atomic<duration::rep> open_since_{not_open};
    std::atomic<duration::rep> time_open_{0};
};

}  // namespace resil

// The Prometheus text writer: m.prometheus(), prometheus_text() and
// write_prometheus(), as users of this header have always had them.
#include "metrics/prometheus_text.hpp"
