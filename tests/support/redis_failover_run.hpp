// tests/support/redis_failover_run.hpp — a run of decisions of a blocking
// resil::redis::rate_limiter across a failover, for the Cluster and
// Sentinel tests (redis_asio_run.hpp is its Asio twin): `callers` threads, each asking as fast as it can (1 ms
// apart) with a deadline of its own, counting grants and decisions, the
// longest call, and when Redis decided again after the kill (a decision
// Redis made that began after it).
//
//   resil_test::redis_failover_run run(limiter, 300ms);
//   std::this_thread::sleep_for(1500ms);
//   run.kill([&] { cluster.kill_port(owner); });
//   REQUIRE(run.wait_back(30s)); ...; const double t = run.stop();
//   resil_test::check_failover(o, run, t, limiter.metrics(), 300ms);
#pragma once

#include <resil/redis.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "redis_run_tally.hpp"

namespace resil_test {

class redis_failover_run : public run_tally {
public:
    redis_failover_run(const resil::redis::rate_limiter& limiter, std::chrono::milliseconds deadline, int callers = 2)
        : limiter_(limiter), deadline_(deadline), t0_(clock::now()) {
        for (int i = 0; i < callers; ++i) threads_.emplace_back([this] { caller(); });
    }
    redis_failover_run(const redis_failover_run&) = delete;
    redis_failover_run& operator=(const redis_failover_run&) = delete;
    ~redis_failover_run() { stop(); }

    /// Runs `kill` (the crash); a decision Redis makes that began after the
    /// call counts as "back", and back_after_s() counts from its end.
    template <class Kill>
    void kill(Kill&& kill) {
        mark_kill(clock::now());
        kill();
        killed_ = clock::now();
    }
    /// Waits until Redis decided again after kill(), at most `bound` from
    /// its end: whether it did.
    bool wait_back(std::chrono::seconds bound) const {
        while (back_ns() == 0 && clock::now() - killed_ < bound)
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        return back_ns() != 0;
    }
    /// Ends the run (joins the callers); its length in seconds.
    double stop() {
        stop_.store(true);
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        if (length_s_ == 0) length_s_ = std::chrono::duration<double>(clock::now() - t0_).count();
        return length_s_;
    }

    /// Seconds from the end of kill() to Redis deciding again.
    [[nodiscard]] double back_after_s() const noexcept {
        return static_cast<double>(back_ns() - ns(killed_)) / 1e9;
    }

private:
    void caller() {
        while (!stop_.load()) {
            const auto start = clock::now();
            const auto r = limiter_.try_acquire(resil::deadline::after(deadline_));
            record(start, r);
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        }
    }

    const resil::redis::rate_limiter& limiter_;
    std::chrono::milliseconds deadline_;
    clock::time_point t0_;
    clock::time_point killed_{};
    std::atomic<bool> stop_{false};
    double length_s_ = 0;
    std::vector<std::thread> threads_;  // last: started once every member is
};

}  // namespace resil_test
