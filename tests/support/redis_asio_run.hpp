// tests/support/redis_asio_run.hpp — a run of decisions of an
// async_rate_limiter across a failover, for the Asio limiter's cluster and
// Sentinel tests: `callers` coroutines on the runner's loop, each asking as
// fast as it can (1 ms apart) with a deadline of its own, counting grants
// and decisions, the longest call, and when Redis decided again after
// kill_now() (a decision Redis made that began after it).
//
//   resil_test::redis_asio_run run(runner, quota, 300ms);
//   std::this_thread::sleep_for(1500ms);
//   run.kill_now(); cluster.kill_port(owner);
//   run.wait_back(30s); ...; run.stop();
#pragma once

#include <resil/redis/asio_rate_limiter.hpp>

#include <asio/co_spawn.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "asio_runner.hpp"
#include "redis_run_tally.hpp"

namespace resil_test {

/// Asks `quota` on `runner`'s loop until Redis decides (the first decisions
/// may fall back on a loaded machine), for up to `bound`: whether it did.
[[nodiscard]] inline bool redis_decides_async(asio_runner& runner, const resil::redis::async_rate_limiter& quota,
                                              std::chrono::milliseconds bound = std::chrono::seconds{20}) {
    const auto end = std::chrono::steady_clock::now() + bound;
    for (;;) {
        if (runner.get(quota.async_try_acquire()).source == resil::redis::decided_by::redis) return true;
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
}

class redis_asio_run : public run_tally {
public:
    redis_asio_run(asio_runner& runner, const resil::redis::async_rate_limiter& quota,
                   std::chrono::milliseconds deadline, int callers = 2)
        : quota_(quota), deadline_(deadline), callers_(callers), t0_(clock::now()) {
        for (int i = 0; i < callers; ++i)
            asio::co_spawn(runner.io(), caller(), [this](std::exception_ptr) { ended_.fetch_add(1); });
    }
    redis_asio_run(const redis_asio_run&) = delete;
    redis_asio_run& operator=(const redis_asio_run&) = delete;
    ~redis_asio_run() { stop(); }

    /// From now on, a decision Redis makes counts as "back".
    void kill_now() {
        killed_ = clock::now();
        mark_kill(killed_);
    }
    /// Waits until Redis decided again after kill_now(), at most `bound`: whether it did.
    bool wait_back(std::chrono::seconds bound) const {
        while (back_ns() == 0 && clock::now() - killed_ < bound) std::this_thread::sleep_for(std::chrono::milliseconds{10});
        return back_ns() != 0;
    }
    /// Ends the run (waits for the callers, 10 s at most); its length in seconds.
    double stop() {
        stop_.store(true);
        const auto end = clock::now() + std::chrono::seconds{10};
        while (ended_.load() < callers_ && clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds{2});
        if (length_s_ == 0) length_s_ = std::chrono::duration<double>(clock::now() - t0_).count();
        return length_s_;
    }

    /// Seconds from kill_now() to Redis deciding again.
    [[nodiscard]] double back_after_s() const noexcept {
        return static_cast<double>(back_ns() - killed_ns()) / 1e9;
    }
    [[nodiscard]] bool ended() const noexcept { return ended_.load() == callers_; }

private:
    asio::awaitable<void> caller() {
        asio::steady_timer pause(co_await asio::this_coro::executor);
        while (!stop_.load()) {
            const auto start = clock::now();
            const auto r = co_await quota_.async_try_acquire(resil::deadline::after(deadline_));
            record(start, r);
            pause.expires_after(std::chrono::milliseconds{1});
            co_await pause.async_wait(asio::use_awaitable);
        }
    }

    const resil::redis::async_rate_limiter& quota_;
    std::chrono::milliseconds deadline_;
    int callers_;
    clock::time_point t0_;
    clock::time_point killed_{};
    std::atomic<bool> stop_{false};
    std::atomic<int> ended_{0};
    double length_s_ = 0;
};

}  // namespace resil_test
