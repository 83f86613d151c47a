// resil/redis/detail/health.hpp — whether a limiter may ask Redis now: after
// a failure Redis is left alone for a backoff (doubling, jittered), then the
// one caller that moves the next retry forward probes while the others keep
// deciding locally. Shared by the blocking and the asynchronous path, so a
// limiter's callers of both kinds back off together.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "../../clock.hpp"

namespace resil::redis::detail {

[[nodiscard]] inline std::int64_t steady_ns() noexcept { return steady_clock{}.now().time_since_epoch().count(); }

/// Thread-safe; lock-free but for the last error's text.
class health {
public:
    health(std::chrono::milliseconds backoff, std::chrono::milliseconds backoff_max) noexcept
        : backoff_(backoff), backoff_max_(backoff_max) {}

    /// May this call talk to Redis? Yes when it is up; when it is down, only
    /// the first caller after the backoff (which pushes the next probe away),
    /// and `probe` says it is that caller.
    bool may_ask(bool& probe) const noexcept {
        auto at = retry_at_ns_.load(std::memory_order_acquire);
        if (at == 0) return true;
        const auto now = steady_ns();
        if (now < at) return false;
        const auto next = now + next_backoff(streak_.load(std::memory_order_relaxed) + 1).count();
        probe = retry_at_ns_.compare_exchange_strong(at, next, std::memory_order_acq_rel);
        return probe;
    }

    // Only the failure that starts an outage (moves retry_at_ns_ from 0) and
    // each failed probe raise the streak: the calls that were in flight when
    // Redis stalled fail together, and counting each of them would push the
    // backoff to its maximum after one short stall.
    void mark_down(bool probe, std::string error) const {
        failures_.fetch_add(1, std::memory_order_acq_rel);
        auto at = retry_at_ns_.load(std::memory_order_acquire);
        if (at == 0) {
            if (retry_at_ns_.compare_exchange_strong(at, steady_ns() + next_backoff(1).count(),
                                                     std::memory_order_acq_rel))
                streak_.store(1, std::memory_order_relaxed);
        } else if (probe) {
            const auto streak = streak_.fetch_add(1, std::memory_order_relaxed) + 1;
            retry_at_ns_.store(steady_ns() + next_backoff(streak).count(), std::memory_order_release);
        }
        remember(std::move(error));
    }

    // A reply (or connect) that timed out only because the caller's deadline
    // cut its wait below the option: not proof that Redis is slow, so the
    // first is forgiven. A second before any answer is a failure: a frozen
    // Redis must not cost every short-deadline caller a new connection and
    // its whole deadline.
    void mark_cut_short(bool probe, std::string error) const {
        if (probe || retry_at_ns_.load(std::memory_order_acquire) != 0 ||
            cut_short_.fetch_add(1, std::memory_order_relaxed) != 0)
            mark_down(probe, std::move(error));
        else
            remember(std::move(error));
    }

    void mark_up() const noexcept {
        if (cut_short_.load(std::memory_order_relaxed) != 0) cut_short_.store(0, std::memory_order_relaxed);
        if (retry_at_ns_.load(std::memory_order_relaxed) != 0) {
            streak_.store(0, std::memory_order_relaxed);
            retry_at_ns_.store(0, std::memory_order_release);
        }
    }

    void remember(std::string error) const {
        std::lock_guard<std::mutex> lock(error_mutex_);
        last_error_ = std::move(error);
    }

    [[nodiscard]] std::string last_error() const {
        std::lock_guard<std::mutex> lock(error_mutex_);
        return last_error_;
    }

    /// Whether the last round trip failed and Redis is being left alone.
    [[nodiscard]] bool down() const noexcept { return retry_at_ns_.load(std::memory_order_relaxed) != 0; }

    /// Failures ever: a connection opened before the latest one is closed
    /// before its next use (its peer may be gone, or a late reply waiting).
    [[nodiscard]] std::uint64_t epoch() const noexcept { return failures_.load(std::memory_order_acquire); }

private:
    std::chrono::nanoseconds next_backoff(std::uint64_t failures) const noexcept {
        const auto base = std::chrono::duration_cast<std::chrono::nanoseconds>(backoff_).count();
        const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(backoff_max_).count();
        std::int64_t d = base;
        for (std::uint64_t i = 1; i < failures && d < cap; ++i) d *= 2;
        if (d > cap) d = cap;
        // Jitter in [d/2, d]: pods that lost Redis together do not come back together.
        thread_local std::uint64_t state = static_cast<std::uint64_t>(steady_ns()) ^
                                           std::hash<std::thread::id>{}(std::this_thread::get_id());
        state += 0x9e3779b97f4a7c15u;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        const auto half = static_cast<std::uint64_t>(d / 2);
        return std::chrono::nanoseconds{static_cast<std::int64_t>(half + (half ? z % (half + 1) : 0))};
    }

    std::chrono::milliseconds backoff_;
    std::chrono::milliseconds backoff_max_;
    // Redis is left alone until this steady instant (ns); 0: it is up.
    mutable std::atomic<std::int64_t> retry_at_ns_{0};
    // Failures ever (the epoch that retires connections opened before the
    // latest one) and failures in a row (the backoff's exponent).
    mutable std::atomic<std::uint64_t> failures_{0};
    mutable std::atomic<std::uint64_t> streak_{0};
    // Timeouts cut short by callers' deadlines since the last answer.
    mutable std::atomic<std::uint32_t> cut_short_{0};
    mutable std::mutex error_mutex_;
    mutable std::string last_error_;
};

}  // namespace resil::redis::detail
