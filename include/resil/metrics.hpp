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
//
// Wiring one dependency (what an object owning a dependency does, once):
//
//   resil::metrics m{"payments"};                          // labels dependency="payments"
//   m.declare(resil::metrics::part::retry | resil::metrics::part::fallback);  // no hook: declared,
//                                                           // so their series exist from the first scrape
//   breaker_options.on_state_change = m.breaker_hook();    // a breaker for the whole dependency
//   lb_options.endpoint_breaker->on_state_change = m.endpoint_breaker_hook();  // or one per endpoint
//   lb_options.on_ejected = std::ref(m);  lb_options.on_returned = std::ref(m);
//   resil::balancer lb{endpoints, lb_options};
//   m.watch_balancer(lb);          // picks per endpoint, read at export; series of removed endpoints dropped
//   m.watch_quota(redis_limiter);  // Redis limiter: decisions by source, connection state
//   auto pipe = resil::pipeline(...).with_listener(std::ref(m));  // calls, attempts, rejections, ...
//   resil::asio::hedged(..., std::ref(m));  // hedges: started, won, cancelled, refused
//   http_respond(resil::prometheus_text({m, inventory, pricing}));  // the same families as
//   // resil::prometheus::make_collectable({...}) and resil::json::to_json(m) (metrics/exposition.hpp)
//
// Only the parts a dependency has are exported (metrics::part): a part is
// known once declared (declare()), hooked (breaker_hook(),
// endpoint_breaker_hook(), watch_balancer(), watch_quota()) or seen (its
// first event: a retry, a hedge, a limit or pace change, a store failure,
// an ejection, a fallback). By-reason series follow the parts (circuit_open
// with a breaker, no_endpoint with a balancer, ...) plus any reason counted.
// Endpoint series (labelled endpoint="<address>") are kept under a lock
// taken on rare events only (ejection, return, an endpoint breaker's
// transition) and at export; at most max_endpoint_series of them (a
// balancer's largest set), the events of further addresses counted under
// endpoint="other"; with a watched balancer, those of endpoints that left
// its set are dropped at the next export.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "balancer/endpoint.hpp"
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

/// Hedges of a dependency (events::hedge_started, hedge_won, hedge_cancelled,
/// hedge_refused, as a hedged driver's listener tells them).
struct hedge_counts {
    std::uint64_t started = 0;    ///< extra copies started
    std::uint64_t won = 0;        ///< calls a hedge (not the first attempt) answered
    std::uint64_t cancelled = 0;  ///< copies cancelled because another answered first (first attempts too)
    std::uint64_t refused = 0;    ///< extra copies the retry budget refused

    /// Field-by-field equality.
    friend bool operator==(const hedge_counts&, const hedge_counts&) = default;
};

/// A shared quota's limiter (resil::redis::rate_limiter), read at export
/// time from the limiter a metrics object watches (metrics::watch_quota).
struct quota_reading {
    std::uint64_t redis = 0;           ///< decisions Redis made (round trips answered)
    std::uint64_t lease = 0;           ///< grants spent from a lease, decided locally
    std::uint64_t local_fallback = 0;  ///< decisions of the local fallback bucket while Redis could not decide (fail open)
    std::uint64_t refused = 0;         ///< calls refused because Redis could not decide (fail closed)
    bool connected = true;             ///< false while the last round trip failed and Redis is left alone

    /// Field-by-field equality.
    friend bool operator==(const quota_reading&, const quota_reading&) = default;
};

/// One endpoint's figures in a metrics object (metrics::endpoints()).
struct endpoint_metrics {
    /// The endpoint's address (endpoint::address), its `endpoint` label.
    std::string address;
    std::optional<std::uint64_t> picks{};  ///< from a watched balancer (metrics::watch_balancer) only
    std::uint64_t ejections = 0;           ///< events::endpoint_ejected
    std::uint64_t returns = 0;             ///< events::endpoint_returned
    bool ejected = false;                  ///< ejected and not returned yet
    /// Its circuit breaker's state, once its hook (metrics::endpoint_breaker_hook()) told one.
    std::optional<circuit_state> breaker{};
    std::uint64_t breaker_opened = 0;       ///< its breaker's transitions into open
    std::uint64_t breaker_half_opened = 0;  ///< into half-open
    std::uint64_t breaker_closed = 0;       ///< into closed
    duration time_open{};  ///< as metrics_snapshot::time_open, for this endpoint's breaker

    /// Field-by-field equality.
    friend bool operator==(const endpoint_metrics&, const endpoint_metrics&) = default;
};

/// Counters of one dependency's calls; a listener for its pipelines and the
/// state-change hook of its breaker. Thread-safe: every member may be called
/// from any number of threads at once. Not copyable (it is shared state:
/// pass std::ref(m) to with_listener).
class metrics {
public:
    /// `name` labels every exported sample (dependency="name"): name the dependency.
    explicit metrics(std::string name = "default") : name_(std::move(name)) {}
    metrics(const metrics&) = delete;
    metrics& operator=(const metrics&) = delete;

    /// The dependency's name: the label of its exported samples.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// The parts a dependency may have. The exports write a part's series
    /// only once the metrics object knows the dependency has it: declared
    /// (declare()), hooked (breaker_hook(), watch_balancer(), ...) or seen
    /// (its first event). A by-reason series appears for the reasons of the
    /// parts it knows, and for any reason counted.
    enum class part : std::uint32_t {
        none = 0,
        retry = 1U << 0,              ///< retries, budget refusals; reasons of the retry
        breaker = 1U << 1,            ///< one breaker for the whole dependency; circuit_open
        endpoint_breakers = 1U << 2,  ///< a breaker per endpoint; circuit_open
        rate_limiting = 1U << 3,      ///< a token bucket (rate_limited)
        load_shedding = 1U << 4,      ///< shed
        adaptive_limiting = 1U << 5,  ///< limit changes; shed
        adaptive_throttling = 1U << 6,  ///< throttled
        pacing = 1U << 7,             ///< pace changes; rate_limited
        quota = 1U << 8,              ///< a shared quota (Redis); rate_limited, quota_unavailable
        balancing = 1U << 9,          ///< endpoints: ejections, returns, picks; no_endpoint
        hedging = 1U << 10,           ///< hedges
        fallback = 1U << 11,          ///< a plan B: fallbacks by reason
        fault_injection = 1U << 12,   ///< faults injected on purpose (resil/fault_injection.hpp); injected_fault
    };
    /// Both sets of parts.
    friend constexpr part operator|(part a, part b) noexcept {
        return static_cast<part>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
    }
    /// Whether `set` holds any of `p`.
    friend constexpr bool has(part set, part p) noexcept {
        return (static_cast<std::uint32_t>(set) & static_cast<std::uint32_t>(p)) != 0;
    }

    /// Declares parts the dependency has, so their series are exported from
    /// the first scrape (at zero, so rate() and alerts work before anything
    /// happened). Thread-safe; parts are never undeclared.
    void declare(part p) noexcept { parts_.fetch_or(static_cast<std::uint32_t>(p), std::memory_order_relaxed); }
    /// The parts known so far.
    [[nodiscard]] part parts() const noexcept { return static_cast<part>(parts_.load(std::memory_order_relaxed)); }

    /// The reasons whose by-reason series are exported for `parts`: failed,
    /// deadline_exceeded and cancelled always, the others with the part that
    /// causes them (no_endpoint with a balancer, circuit_open with a breaker, ...).
    [[nodiscard]] static constexpr bool reason_belongs(reason r, part parts) noexcept {
        switch (r) {
            case reason::none: return false;
            case reason::failed:
            case reason::deadline_exceeded:
            case reason::cancelled: return true;
            case reason::unsafe_to_retry:
            case reason::dont_retry:
            case reason::retries_exhausted:
            case reason::budget_exhausted:
            case reason::retry_after_exceeds_deadline:
            case reason::backoff_exceeds_deadline: return has(parts, part::retry);
            case reason::circuit_open: return has(parts, part::breaker | part::endpoint_breakers);
            case reason::rate_limited: return has(parts, part::rate_limiting | part::pacing | part::quota);
            case reason::shed: return has(parts, part::load_shedding | part::adaptive_limiting);
            case reason::quota_unavailable: return has(parts, part::quota);
            case reason::throttled: return has(parts, part::adaptive_throttling);
            case reason::no_endpoint:
            case reason::no_endpoint_in_scope: return has(parts, part::balancing);
            case reason::injected_fault: return has(parts, part::fault_injection);
        }
        return true;
    }
    /// Whether a policy may refuse a call for `r` before an attempt
    /// (events::rejected): the retry's reasons and `failed` end calls, never
    /// refuse them, so resil_rejections_total has no series for them.
    [[nodiscard]] static constexpr bool reason_rejects(reason r) noexcept {
        switch (r) {
            case reason::deadline_exceeded:
            case reason::cancelled:
            case reason::circuit_open:
            case reason::rate_limited:
            case reason::shed:
            case reason::quota_unavailable:
            case reason::throttled:
            case reason::no_endpoint:
            case reason::no_endpoint_in_scope: return true;
            default: return false;
        }
    }

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
        note(part::retry);
        auto& c = local();
        add(c.retries);
        if (e.from_retry_after) add(c.retries_after_hint);
    }
    void operator()(const events::retries_exhausted&) noexcept {
        note(part::retry);
        add(local().retries_exhausted);
    }
    void operator()(const events::budget_refused&) noexcept {
        note(part::retry);
        add(local().budget_refusals);
    }
    void operator()(const events::deadline_exceeded&) noexcept { add(local().deadlines_exceeded); }
    void operator()(const events::rejected& e) noexcept { add(local().rejections[index(e.reason)]); }
    void operator()(const events::fallback_used& e) noexcept {
        note(part::fallback);
        add(local().fallbacks[index(e.reason)]);
    }
    void operator()(const events::limit_changed& e) noexcept {
        note(part::adaptive_limiting);
        if (e.to != e.from) add(e.to > e.from ? local().limit_increases : local().limit_decreases);
    }
    void operator()(const events::pace_changed&) noexcept {
        note(part::pacing);
        add(local().pace_changes);
    }
    void operator()(const events::quota_store_failed&) noexcept {
        note(part::quota);
        add(local().quota_store_failures);
    }
    /// Hedges, from a hedged driver's listener (resil::asio::hedged): rare
    /// (past the hedge delay), counted in shared words, not per thread.
    void operator()(const events::hedge_started&) noexcept { hedge_event(hedges_started_); }
    void operator()(const events::hedge_won&) noexcept { hedge_event(hedges_won_); }
    void operator()(const events::hedge_cancelled&) noexcept { hedge_event(hedges_cancelled_); }
    void operator()(const events::hedge_refused&) noexcept { hedge_event(hedges_refused_); }
    /// A fault injected on purpose: its calls' injected_fault series appear.
    /// An injected failure stands in for the attempt, which never starts:
    /// resil_attempts_total does not count it (outcome::attempts() does).
    void operator()(const events::fault_injected&) noexcept { note(part::fault_injection); }
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
    /// Counted per endpoint (by address) too, under a lock: ejections are
    /// rare. The first event of an address not seen before allocates its entry.
    void operator()(const events::endpoint_ejected& e) noexcept {
        note(part::balancing);
        add(endpoint_ejections_);
        with_endpoint(e.address, [](endpoint_entry& x) {
            ++x.ejections;
            x.ejected = true;
        });
    }
    /// An ejected endpoint came back: counted in endpoint_returns, and per endpoint.
    void operator()(const events::endpoint_returned& e) noexcept {
        note(part::balancing);
        add(endpoint_returns_);
        with_endpoint(e.address, [](endpoint_entry& x) {
            ++x.returns;
            x.ejected = false;
        });
    }
    /// Not a pipeline event for metrics: count transitions with breaker_hook().
    /// (Deleted, so a pipeline listening through std::ref(metrics) skips the
    /// transitions it forwards, and `on_state_change = std::ref(m)` does not
    /// compile instead of counting every transition twice.)
    void operator()(const events::breaker_state_changed&) = delete;

    /// The breaker's hook: `options.on_state_change = m.breaker_hook()`.
    /// Counts transitions by the state entered and the time spent open (from
    /// the events' `at`). Holds a pointer: `*this` must outlive the breaker.
    /// One breaker per metrics object: the time open pairs its transitions.
    /// A transition naming an endpoint (events::breaker_state_changed::endpoint,
    /// as a balancer's endpoint breakers tell them) is counted for that
    /// endpoint instead, as endpoint_breaker_hook() does.
    struct breaker_hook_type {
        /// The metrics object it counts into.
        metrics* owner;
        /// Counts one transition (record_transition()).
        void operator()(const events::breaker_state_changed& e) const noexcept { owner->record_transition(e); }
    };
    /// The hook for a breaker's on_state_change: counts its transitions here.
    /// `*this` must outlive the breaker.
    [[nodiscard]] breaker_hook_type breaker_hook() noexcept {
        declare(part::breaker);
        return {this};
    }
    /// The hook of a balancer's breakers per endpoint:
    /// `balancer_options.endpoint_breaker->on_state_change = m.endpoint_breaker_hook()`.
    /// Counts each endpoint's transitions and time open apart (labelled
    /// endpoint="<address>"), under a lock (transitions are rare). Holds a
    /// pointer: `*this` must outlive the balancer.
    [[nodiscard]] breaker_hook_type endpoint_breaker_hook() noexcept {
        declare(part::endpoint_breakers);
        return {this};
    }

    /// Records one breaker transition (what the hooks call): the
    /// dependency's breaker's, or an endpoint's when the event names one.
    void record_transition(const events::breaker_state_changed& e) noexcept {
        if (!e.endpoint.empty()) {
            note(part::endpoint_breakers);
            with_endpoint(e.endpoint, [&e](endpoint_entry& x) { x.breaker.record(e); });
            return;
        }
        note(part::breaker);
        breaker_state_.record(e);
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

    /// The state of the dependency's breaker as its hook last told it
    /// (the latest by generation); closed before any transition.
    [[nodiscard]] circuit_state breaker_state() const noexcept { return breaker_state_.state(); }

    /// Hedges counted so far.
    [[nodiscard]] hedge_counts hedges() const noexcept {
        return {load(hedges_started_), load(hedges_won_), load(hedges_cancelled_), load(hedges_refused_)};
    }

    /// Reads picks per endpoint from `lb` (a resil::balancer) at each
    /// export, instead of counting them again, and drops the series of
    /// endpoints that left its set (so the endpoint series are at most its
    /// set). Declares part::balancing. `lb` must outlive this object (or
    /// until watch_balancer is called again). Call before exporting from
    /// other threads.
    template <class Balancer>
        requires requires(const Balancer& b) { b.picks().front().address; }
    void watch_balancer(const Balancer& lb) {
        declare(part::balancing);
        const std::lock_guard lock(endpoints_mutex_);
        picks_reader_ = [&lb](std::vector<std::pair<std::string, std::uint64_t>>& out) {
            for (const auto& p : lb.picks()) out.emplace_back(p.address, p.picks);
        };
    }

    /// Reads a shared quota's limiter (resil::redis::rate_limiter, its
    /// metrics() and redis_down()) at each export: decisions by source and
    /// the connection state. Declares part::quota. `limiter` must outlive
    /// this object. Call before exporting from other threads.
    template <class Limiter>
        requires requires(const Limiter& l) {
            l.metrics().round_trips;
            l.metrics().lease_grants;
            l.metrics().fail_open_admitted;
            l.metrics().fail_open_rejected;
            l.metrics().fail_closed_rejected;
            { l.redis_down() } -> std::convertible_to<bool>;
        }
    void watch_quota(const Limiter& limiter) {
        declare(part::quota);
        const std::lock_guard lock(endpoints_mutex_);
        quota_reader_ = [&limiter] {
            const auto m = limiter.metrics();
            return quota_reading{m.round_trips, m.lease_grants, m.fail_open_admitted + m.fail_open_rejected,
                                 m.fail_closed_rejected, !limiter.redis_down()};
        };
    }
    /// The watched limiter's figures now; none without watch_quota().
    [[nodiscard]] std::optional<quota_reading> quota() const {
        const std::lock_guard lock(endpoints_mutex_);
        if (!quota_reader_) return std::nullopt;
        return quota_reader_();
    }

    /// Endpoints known to this object (from events, endpoint breakers, and
    /// the watched balancer's set), in the order first seen; with `now`,
    /// each open breaker's time open counts up to it. Allocates: for
    /// exporters. Memory: at most max_endpoint_series entries; the events of
    /// further addresses are counted under the address "other". With a
    /// watched balancer, endpoints that left its set are dropped here.
    [[nodiscard]] std::vector<endpoint_metrics> endpoints(std::optional<time_point> now = std::nullopt) const {
        std::vector<std::pair<std::string, std::uint64_t>> picks;
        const std::lock_guard lock(endpoints_mutex_);
        if (picks_reader_) {
            picks_reader_(picks);
            std::erase_if(endpoints_, [&picks](const endpoint_entry& x) {
                for (const auto& p : picks)
                    if (p.first == x.address) return false;
                return true;
            });
            for (const auto& p : picks) (void)find_or_add(p.first);
        }
        std::vector<endpoint_metrics> out;
        out.reserve(endpoints_.size());
        for (const auto& x : endpoints_) {
            endpoint_metrics m{x.address, std::nullopt, x.ejections, x.returns, x.ejected};
            if (picks_reader_)
                for (const auto& p : picks)
                    if (p.first == x.address) m.picks = p.second;
            if (x.breaker.told) {
                m.breaker = x.breaker.last;
                m.breaker_opened = x.breaker.opened;
                m.breaker_half_opened = x.breaker.half_opened;
                m.breaker_closed = x.breaker.closed;
                m.time_open = duration{x.breaker.time_open};
                if (now && x.breaker.open_since != not_open && now->time_since_epoch().count() > x.breaker.open_since)
                    m.time_open += duration{now->time_since_epoch().count() - x.breaker.open_since};
            }
            out.push_back(std::move(m));
        }
        return out;
    }

    /// Endpoint entries kept at most (then "other"): a balancer's largest set.
    static constexpr std::size_t max_endpoint_series = endpoint::max_endpoints;

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

    // A part seen: a shared word read on every event of that kind, written
    // once (so threads share its cache line without taking turns owning it).
    void note(part p) noexcept {
        const auto bit = static_cast<std::uint32_t>(p);
        if ((parts_.load(std::memory_order_relaxed) & bit) == 0) parts_.fetch_or(bit, std::memory_order_relaxed);
    }
    void hedge_event(counter& c) noexcept {
        note(part::hedging);
        add(c);
    }

    // One breaker's transitions as its events tell them, kept under the
    // endpoints' lock (an endpoint's) or in atomics (the dependency's state).
    struct breaker_counts {
        bool told = false;
        circuit_state last = circuit_state::closed;
        std::uint64_t generation = 0;
        std::uint64_t opened = 0, half_opened = 0, closed = 0;
        duration::rep open_since = std::numeric_limits<duration::rep>::min();
        duration::rep time_open = 0;
        void record(const events::breaker_state_changed& e) noexcept {
            told = true;
            if (e.generation >= generation) {
                generation = e.generation;
                last = e.to;
            }
            (e.to == circuit_state::open ? opened : e.to == circuit_state::half_open ? half_opened : closed) += 1;
            const auto at = e.at.time_since_epoch().count();
            if (e.from == circuit_state::open && e.to != circuit_state::open) {
                if (open_since != not_open && at > open_since) time_open += at - open_since;
                open_since = not_open;
            }
            if (e.to == circuit_state::open && open_since == not_open) open_since = at;
        }
    };
    // The dependency's breaker's state: generation * 4 + state, kept when newer.
    struct breaker_state_word {
        std::atomic<std::uint64_t> word{0};
        void record(const events::breaker_state_changed& e) noexcept {
            const std::uint64_t fresh = e.generation * 4 + static_cast<std::uint64_t>(e.to);
            auto seen = word.load(std::memory_order_relaxed);
            while (fresh / 4 >= seen / 4 && !word.compare_exchange_weak(seen, fresh, std::memory_order_relaxed)) {
            }
        }
        [[nodiscard]] circuit_state state() const noexcept {
            return static_cast<circuit_state>(word.load(std::memory_order_relaxed) % 4);
        }
    };
    struct endpoint_entry {
        /// The endpoint's address (endpoint::address), its `endpoint` label.
        std::string address;
        std::uint64_t ejections = 0, returns = 0;
        bool ejected = false;
        breaker_counts breaker{};
    };
    // The entry of `address` (or "other" once the table is full); the caller holds the lock.
    endpoint_entry& find_or_add(std::string_view address) const {
        for (auto& x : endpoints_)
            if (x.address == address) return x;
        if (endpoints_.size() >= max_endpoint_series) {
            for (auto& x : endpoints_)
                if (x.address == "other") return x;
            address = "other";  // the one entry past the cap
        }
        endpoints_.push_back(endpoint_entry{std::string(address)});
        return endpoints_.back();
    }
    template <class F>
    void with_endpoint(std::string_view address, F&& f) noexcept {
        try {
            const std::lock_guard lock(endpoints_mutex_);
            f(find_or_add(address));
        } catch (...) {
            // Out of memory for a new entry: the dependency's totals still count it.
        }
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
    counter hedges_started_{0}, hedges_won_{0}, hedges_cancelled_{0}, hedges_refused_{0};  // past the delay only
    std::atomic<std::uint32_t> parts_{0};
    breaker_state_word breaker_state_{};
    // Per endpoint, and the readers of a watched balancer and limiter:
    // written on rare events and at setup, read by exports.
    mutable std::mutex endpoints_mutex_;
    mutable std::vector<endpoint_entry> endpoints_;
    std::function<void(std::vector<std::pair<std::string, std::uint64_t>>&)> picks_reader_;
    std::function<quota_reading()> quota_reader_;
    static constexpr duration::rep not_open = std::numeric_limits<duration::rep>::min();
    std::atomic<duration::rep> open_since_{not_open};
    std::atomic<duration::rep> time_open_{0};
};

}  // namespace resil

// The Prometheus text writer: m.prometheus(), prometheus_text() and
// write_prometheus(), as users of this header have always had them.
#include "metrics/prometheus_text.hpp"
