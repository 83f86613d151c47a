// resil/testing/manual_clock.hpp — a clock that moves only when told to, for
// testing code that uses resil's policies.
//
//   resil::testing::manual_clock clock;            // starts at time_point{} + 1h
//   auto breaker = resil::circuit_breaker{opts, clock};
//   clock.advance(30s);                             // the breaker's open time passes
//
// `sleep_for(d)` advances virtual time by `d` at once and returns (and
// `sleep_until(t)` moves it to exactly `t`), so a retry
// loop with seconds of backoff runs in microseconds. Copies share one time
// line, so hand copies to the code under test and keep one to drive it.
// Thread-safe: now(), advance() and sleep_for() may race from any threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "../clock.hpp"

namespace resil::testing {

/// A clock that moves only when told to: sleep_for() and sleep_until() advance
/// it at once, so retry loops with seconds of backoff run in microseconds.
/// Copies share one time line: give copies to the code under test, keep one to
/// drive it. Thread-safe.
class manual_clock {
public:
    /// Starts one hour after the epoch, so `now() - 1min` stays a valid instant.
    manual_clock() : manual_clock(time_point{} + std::chrono::hours{1}) {}
    /// A clock starting at `start`.
    explicit manual_clock(time_point start) : state_(std::make_shared<state>()) {
        state_->now.store(start.time_since_epoch().count(), std::memory_order_relaxed);
    }

    /// The virtual time now.
    [[nodiscard]] time_point now() const noexcept {
        return time_point{duration{state_->now.load(std::memory_order_acquire)}};
    }

    /// Moves time forward by `d` (a negative `d` is ignored: time never runs back).
    void advance(duration d) const noexcept {
        if (d > duration::zero()) state_->now.fetch_add(d.count(), std::memory_order_acq_rel);
    }

    /// Moves time forward to `t`; an earlier `t` is ignored.
    void advance_to(time_point t) const noexcept {
        auto current = state_->now.load(std::memory_order_acquire);
        const auto target = t.time_since_epoch().count();
        while (current < target &&
               !state_->now.compare_exchange_weak(current, target, std::memory_order_acq_rel)) {
        }
    }

    /// Advances time by `d` at once. Returns false, without advancing, when
    /// `stop` was already requested. Records the sleep for sleeps()/slept().
    bool sleep_for(duration d, std::stop_token stop = {}) const noexcept {
        if (stop.stop_requested()) return false;
        state_->sleeps.fetch_add(1, std::memory_order_relaxed);
        if (d > duration::zero()) {
            state_->slept.fetch_add(d.count(), std::memory_order_relaxed);
            advance(d);
        }
        return true;
    }

    /// Advances time to exactly `t` at once (an earlier `t` leaves it as it
    /// is). Returns false, without advancing, when `stop` was already
    /// requested. Recorded for sleeps()/slept() like sleep_for.
    bool sleep_until(time_point t, std::stop_token stop = {}) const noexcept {
        if (stop.stop_requested()) return false;
        state_->sleeps.fetch_add(1, std::memory_order_relaxed);
        const auto d = t - now();
        if (d > duration::zero()) state_->slept.fetch_add(d.count(), std::memory_order_relaxed);
        advance_to(t);
        return true;
    }

    /// How many times sleep_for or sleep_until advanced the clock, and by how much in all.
    [[nodiscard]] std::int64_t sleeps() const noexcept { return state_->sleeps.load(std::memory_order_relaxed); }
    /// Total time slept through sleep_for() and sleep_until().
    [[nodiscard]] duration slept() const noexcept { return duration{state_->slept.load(std::memory_order_relaxed)}; }

    /// Copies of one clock are equal: they share one time line (see
    /// resil::same_time_line), so a breaker built on a copy uses the
    /// pipeline's readings.
    friend bool operator==(const manual_clock& a, const manual_clock& b) noexcept { return a.state_ == b.state_; }

private:
    struct state {
        std::atomic<std::int64_t> now{0};
        std::atomic<std::int64_t> sleeps{0};
        std::atomic<std::int64_t> slept{0};
    };
    std::shared_ptr<state> state_;
};

static_assert(clock<manual_clock>);

}  // namespace resil::testing
