// resil/metrics.hpp — counters for what a pipeline did, readable at any time,
// exportable as JSON and in the Prometheus text format.
//
//   resil::metrics triton{"triton"};                       // one per dependency
//   breaker_options.on_state_change = triton.breaker_hook(); // transitions, time open
//   auto pipe = resil::pipeline(...).with_listener(std::ref(triton));
//   ...
//   auto s = triton.snapshot();        // s.calls, s.rejections[reason::circuit_open], ...
//   http_respond(triton.prometheus()); // resil_rejections_total{policy="triton",reason="circuit_open"} 12
//
// A metrics object is a listener (see events.hpp): every counter is a relaxed
// atomic, so it is thread-safe and cheap, and one object may serve several
// pipelines. Each event is counted once where it happens: a rejection by the
// breaker counts as one rejection however many policies it passes through.
//
// Breaker transitions are counted through the breaker's own hook, not the
// pipeline listener: a breaker changes state for all its callers (and on
// reset() or isolate(), outside any call), and a pipeline also forwards the
// transitions its calls cause, so counting both would count them twice.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "clock.hpp"
#include "events.hpp"
#include "outcome.hpp"

namespace resil {

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
    std::uint64_t breaker_half_opened = 0;
    std::uint64_t breaker_closed = 0;     ///< transitions back to closed
    /// Total time the breaker spent open: the open periods that ended, plus,
    /// for snapshot(now), the current one up to `now`.
    duration time_open{};

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

    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    // The listener: one handler per event kind.
    void operator()(const events::attempt_started&) noexcept { add(attempts_); }
    void operator()(const events::retry_scheduled& e) noexcept {
        add(retries_);
        if (e.from_retry_after) add(retries_after_hint_);
    }
    void operator()(const events::retries_exhausted&) noexcept { add(retries_exhausted_); }
    void operator()(const events::budget_refused&) noexcept { add(budget_refusals_); }
    void operator()(const events::deadline_exceeded&) noexcept { add(deadlines_exceeded_); }
    void operator()(const events::rejected& e) noexcept { add(rejections_[index(e.reason)]); }
    void operator()(const events::fallback_used& e) noexcept { add(fallbacks_[index(e.reason)]); }
    void operator()(const events::call_finished& e) noexcept {
        add(calls_);
        if (e.reason == reason::none)
            add(successes_);
        else
            add(failures_[index(e.reason)]);
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
    struct breaker_hook_type {
        metrics* owner;
        void operator()(const events::breaker_state_changed& e) const noexcept { owner->record_transition(e); }
    };
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

    /// The counters in the Prometheus text exposition format (version 0.0.4).
    [[nodiscard]] std::string prometheus() const { return to_prometheus(snapshot(), name_); }
    /// The same, counting the current open period up to `now` (see snapshot(now)).
    [[nodiscard]] std::string prometheus(time_point now) const { return to_prometheus(snapshot(now), name_); }
    /// The counters as one JSON object.
    [[nodiscard]] std::string json() const { return to_json(snapshot(), name_); }
    [[nodiscard]] std::string json(time_point now) const { return to_json(snapshot(now), name_); }

    /// Formats a snapshot in the Prometheus text format; `name` is the policy label.
    static std::string to_prometheus(const metrics_snapshot& s, std::string_view name) {
        std::string out;
        const std::string label = "policy=\"" + escape_label(name) + "\"";
        auto counter = [&](std::string_view metric, std::string_view help, std::uint64_t v) {
            header(out, metric, help);
            sample(out, metric, label, v);
        };
        auto by_reason = [&](std::string_view metric, std::string_view help, const reason_counts& c) {
            header(out, metric, help);
            for (std::size_t i = 1; i < reason_count; ++i) {
                const auto r = static_cast<reason>(i);
                sample(out, metric, label + ",reason=\"" + std::string(to_string(r)) + "\"", c[r]);
            }
        };
        counter("resil_calls_total", "Calls that ended.", s.calls);
        counter("resil_successes_total", "Calls that succeeded without a fallback.", s.successes);
        by_reason("resil_failures_total", "Calls that failed, before any fallback, by reason.", s.failures);
        counter("resil_attempts_total", "Attempts that ran the callable.", s.attempts);
        counter("resil_retries_total", "Retries scheduled.", s.retries);
        counter("resil_retries_after_server_hint_total", "Retries whose delay the server's Retry-After set.",
                s.retries_after_server_hint);
        counter("resil_retries_exhausted_total", "Calls whose every allowed attempt failed.", s.retries_exhausted);
        counter("resil_budget_refusals_total", "Retries the retry budget refused.", s.budget_refusals);
        counter("resil_deadlines_exceeded_total", "Calls that ran out of time.", s.deadlines_exceeded);
        by_reason("resil_rejections_total", "Calls refused by a policy before an attempt, by reason.", s.rejections);
        by_reason("resil_fallbacks_total", "Fallbacks used, by the reason of the failure.", s.fallbacks);
        header(out, "resil_breaker_transitions_total", "Circuit breaker state changes, by the state entered.");
        sample(out, "resil_breaker_transitions_total", label + ",to=\"open\"", s.breaker_opened);
        sample(out, "resil_breaker_transitions_total", label + ",to=\"half_open\"", s.breaker_half_opened);
        sample(out, "resil_breaker_transitions_total", label + ",to=\"closed\"", s.breaker_closed);
        header(out, "resil_breaker_open_seconds_total", "Time the circuit breaker spent open, in seconds.");
        out += "resil_breaker_open_seconds_total{" + label + "} " + seconds(s.time_open) + "\n";
        return out;
    }

    /// Formats a snapshot as a JSON object.
    static std::string to_json(const metrics_snapshot& s, std::string_view name) {
        std::string out = "{\"policy\":\"" + escape_json(name) + "\"";
        auto field = [&](std::string_view key, std::uint64_t v) {
            out += ",\"";
            out += key;
            out += "\":" + std::to_string(v);
        };
        auto by_reason = [&](std::string_view key, const reason_counts& c) {
            out += ",\"";
            out += key;
            out += "\":{";
            bool first = true;
            for (std::size_t i = 1; i < reason_count; ++i) {
                out += first ? "\"" : ",\"";
                first = false;
                out += to_string(static_cast<reason>(i));
                out += "\":" + std::to_string(c.by_reason[i]);
            }
            out += "}";
        };
        field("calls", s.calls);
        field("successes", s.successes);
        by_reason("failures", s.failures);
        field("attempts", s.attempts);
        field("retries", s.retries);
        field("retries_after_server_hint", s.retries_after_server_hint);
        field("retries_exhausted", s.retries_exhausted);
        field("budget_refusals", s.budget_refusals);
        field("deadlines_exceeded", s.deadlines_exceeded);
        by_reason("rejections", s.rejections);
        by_reason("fallbacks", s.fallbacks);
        field("breaker_opened", s.breaker_opened);
        field("breaker_half_opened", s.breaker_half_opened);
        field("breaker_closed", s.breaker_closed);
        out += ",\"breaker_open_seconds\":" + seconds(s.time_open) + "}";
        return out;
    }

private:
    using counter = std::atomic<std::uint64_t>;

    [[nodiscard]] metrics_snapshot snapshot_impl(std::optional<time_point> now) const noexcept {
        metrics_snapshot s;
        s.calls = load(calls_);
        s.successes = load(successes_);
        s.attempts = load(attempts_);
        s.retries = load(retries_);
        s.retries_after_server_hint = load(retries_after_hint_);
        s.retries_exhausted = load(retries_exhausted_);
        s.budget_refusals = load(budget_refusals_);
        s.deadlines_exceeded = load(deadlines_exceeded_);
        for (std::size_t i = 0; i < reason_count; ++i) {
            s.failures.by_reason[i] = load(failures_[i]);
            s.rejections.by_reason[i] = load(rejections_[i]);
            s.fallbacks.by_reason[i] = load(fallbacks_[i]);
        }
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

    static void header(std::string& out, std::string_view metric, std::string_view help) {
        out += "# HELP ";
        out += metric;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += metric;
        out += " counter\n";
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
    static std::string escape_json(std::string_view v) {
        std::string out;
        for (char c : v) {
            const auto u = static_cast<unsigned char>(c);
            if (c == '\\' || c == '"') {
                out += '\\';
                out += c;
            } else if (u < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", u);
                out += buf;
            } else {
                out += c;
            }
        }
        return out;
    }

    std::string name_;
    counter calls_{0}, successes_{0}, attempts_{0}, retries_{0}, retries_after_hint_{0}, retries_exhausted_{0},
        budget_refusals_{0}, deadlines_exceeded_{0}, opened_{0}, half_opened_{0}, closed_{0};
    std::array<counter, reason_count> failures_{}, rejections_{}, fallbacks_{};
    static constexpr duration::rep not_open = std::numeric_limits<duration::rep>::min();
    std::atomic<duration::rep> open_since_{not_open};
    std::atomic<duration::rep> time_open_{0};
};

}  // namespace resil
