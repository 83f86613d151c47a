// resil/detail/breaker_modes.hpp — the circuit breaker's three ways of
// deciding to open, behind one interface, so that the state machine
// (resil/circuit_breaker.hpp) never asks which mode it runs:
//
//   time_window_mode        failure ratio over the last `window` of time
//   count_window_mode       failure ratio over the last `window_calls` calls
//   consecutive_failures_mode   `consecutive_failures` failures in a row
//
// Each has the same members (the breaker_window_mode concept):
//
//   record(failed, generation, now)  counts a result of closed period
//                                    `generation`; returns the counts to
//                                    judge when it was a failure (only a
//                                    failure can open), nothing otherwise
//   opens(counts)                    the decision: do these counts open it?
//   stamp(generation)                starts the window of closed period
//                                    `generation`, empty (results of
//                                    earlier ones no longer count in it)
//   lifetime() / window(generation, now)   what metrics() shows
//
// `now` is a callable returning the time; only the time window calls it, so
// the other modes read no clock. The breaker holds one of them in a
// std::variant; its hot path (time window, no slow-call rule) reaches the
// time window directly, without a dispatch.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <optional>

#include "../circuit_breaker/options.hpp"
#include "../clock.hpp"
#include "rolling_window.hpp"

namespace resil::detail {

/// The ratio rule of both window modes: at least `min_calls` calls, and
/// failures strictly above `failure_ratio` of them.
struct failure_ratio_rule {
    std::uint32_t min_calls;
    double failure_ratio;

    [[nodiscard]] bool exceeded(window_counts c) const noexcept {
        return c.calls >= min_calls && static_cast<double>(c.failures) > failure_ratio * static_cast<double>(c.calls);
    }
};

/// Failure ratio over the last `window` of time (detail::rolling_time_window).
class time_window_mode {
public:
    // Allocates the window's stripes (detail/stripes.hpp), once.
    explicit time_window_mode(const circuit_breaker_options& o)
        : window_(o.window), rule_{o.min_calls, o.failure_ratio} {}

    template <class Now>
    std::optional<window_counts> record(bool failed, std::uint64_t generation, Now&& now) noexcept {
        const time_point t = now();
        // In the window of this closed period only: if a change of state ran
        // since the caller read `generation`, the record stays out of the
        // fresh window.
        window_.record(t, failed, generation);
        if (!failed) [[likely]]
            return std::nullopt;
        return totals(t, generation);
    }
    [[nodiscard]] bool opens(window_counts c) const noexcept { return rule_.exceeded(c); }
    /// Whether the window has moved past the bucket of `t` (see
    /// rolling_time_window::behind).
    [[nodiscard]] bool behind(time_point t, std::uint64_t generation) const noexcept {
        return window_.behind(t, generation);
    }
    /// Empties the shared rings; a ring written alone is emptied by its
    /// owner at its first record in the new generation, and not counted
    /// until then (rolling_time_window::begin_generation). The generation
    /// is the mode interface's; this mode's rings learn it from records.
    void begin_generation(std::uint64_t /*generation*/) noexcept { window_.begin_generation(); }
    [[nodiscard]] window_counts lifetime() const noexcept { return window_.lifetime(); }
    template <class Now>
    [[nodiscard]] window_counts window(std::uint64_t generation, Now&& now) const noexcept {
        return window_.totals(now(), generation);
    }

private:
    window_counts totals(time_point t, std::uint64_t generation) const noexcept {
        return window_.totals(t, generation);
    }

    rolling_time_window window_;
    failure_ratio_rule rule_;
};

/// Failure ratio over the last `window_calls` calls (detail::rolling_count_window).
class count_window_mode {
public:
    explicit count_window_mode(const circuit_breaker_options& o)
        : window_(o.window_calls), rule_{o.min_calls, o.failure_ratio} {}

    template <class Now>
    std::optional<window_counts> record(bool failed, std::uint64_t generation, Now&& /*now*/) noexcept {
        // In this closed period's window only (zeros if a change of state has
        // already cleared it for the next one).
        const auto counts = window_.record(failed, generation);
        if (!failed) return std::nullopt;
        failures_.fetch_add(1, std::memory_order_relaxed);
        return counts;
    }
    [[nodiscard]] bool opens(window_counts c) const noexcept { return rule_.exceeded(c); }
    void begin_generation(std::uint64_t generation) noexcept { window_.clear(generation); }
    [[nodiscard]] window_counts lifetime() const noexcept {
        return {window_.lifetime_calls(), failures_.load(std::memory_order_relaxed)};
    }
    template <class Now>
    [[nodiscard]] window_counts window(std::uint64_t /*generation*/, Now&& /*now*/) const noexcept {
        return window_.totals();
    }

private:
    rolling_count_window window_;
    failure_ratio_rule rule_;
    std::atomic<std::uint64_t> failures_{0};  // lifetime failures
};

/// `consecutive_failures` failures in a row (detail::failure_run).
class consecutive_failures_mode {
public:
    // Allocates the call counter's stripes, once.
    explicit consecutive_failures_mode(const circuit_breaker_options& o) : limit_(o.consecutive_failures) {}

    template <class Now>
    std::optional<window_counts> record(bool failed, std::uint64_t generation, Now&& /*now*/) noexcept {
        calls_.add();
        if (!failed) {
            // Writes only when there is a run to end: successes then share the line.
            run_.record(false, generation);
            return std::nullopt;
        }
        failures_.fetch_add(1, std::memory_order_relaxed);
        const std::uint64_t run = run_.record(true, generation);
        return window_counts{run, run};
    }
    [[nodiscard]] bool opens(window_counts c) const noexcept { return c.failures >= limit_; }
    void begin_generation(std::uint64_t generation) noexcept { run_.clear(generation); }
    [[nodiscard]] window_counts lifetime() const noexcept {
        return {calls_.total(), failures_.load(std::memory_order_relaxed)};
    }
    template <class Now>
    [[nodiscard]] window_counts window(std::uint64_t /*generation*/, Now&& /*now*/) const noexcept {
        const std::uint64_t run = run_.current();
        return {run, run};
    }

private:
    failure_run run_;                         // consecutive failures so far
    std::uint32_t limit_;
    striped_counter calls_;                   // lifetime calls
    std::atomic<std::uint64_t> failures_{0};  // lifetime failures
};

/// What the breaker's state machine asks of a mode.
template <class M>
concept breaker_window_mode =
    std::constructible_from<M, const circuit_breaker_options&> &&
    requires(M& m, const M& cm, bool failed, std::uint64_t generation, time_point (*now)(), window_counts c) {
        { m.record(failed, generation, now) } noexcept -> std::same_as<std::optional<window_counts>>;
        { cm.opens(c) } noexcept -> std::same_as<bool>;
        { m.begin_generation(generation) } noexcept;
        { cm.lifetime() } noexcept -> std::same_as<window_counts>;
        { cm.window(generation, now) } noexcept -> std::same_as<window_counts>;
    };

static_assert(breaker_window_mode<time_window_mode>);
static_assert(breaker_window_mode<count_window_mode>);
static_assert(breaker_window_mode<consecutive_failures_mode>);
static_assert(circuit_breaker_options::max_window_calls <= rolling_count_window::max_size);

}  // namespace resil::detail
