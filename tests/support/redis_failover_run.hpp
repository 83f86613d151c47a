// tests/support/redis_failover_run.hpp — a run of decisions of a blocking
// resil::redis::rate_limiter across a failover, for the Cluster and
// Sentinel tests (redis_asio_run.hpp is its Asio twin), and the checks every
// failover run makes: `callers` threads, each asking as fast as it can (1 ms
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
#include <cstdint>
#include <thread>
#include <vector>

#include "../catch.hpp"
#include "timing.hpp"

namespace resil_test {

class redis_failover_run {
public:
    using clock = std::chrono::steady_clock;

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
        killed_ns_.store(ns(clock::now()));
        kill();
        killed_ = clock::now();
    }
    /// Waits until Redis decided again after kill(), at most `bound` from
    /// its end: whether it did.
    bool wait_back(std::chrono::seconds bound) const {
        while (back_ns_.load() == 0 && clock::now() - killed_ < bound)
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        return back_ns_.load() != 0;
    }
    /// Ends the run (joins the callers); its length in seconds.
    double stop() {
        stop_.store(true);
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        if (length_s_ == 0) length_s_ = std::chrono::duration<double>(clock::now() - t0_).count();
        return length_s_;
    }

    [[nodiscard]] std::int64_t granted() const noexcept { return granted_.load(); }
    [[nodiscard]] std::int64_t decisions() const noexcept { return decisions_.load(); }
    [[nodiscard]] std::chrono::microseconds longest_call() const noexcept {
        return std::chrono::microseconds{longest_us_.load()};
    }
    /// Seconds from the end of kill() to Redis deciding again.
    [[nodiscard]] double back_after_s() const noexcept {
        return static_cast<double>(back_ns_.load() - ns(killed_)) / 1e9;
    }

private:
    static std::int64_t ns(clock::time_point t) noexcept { return t.time_since_epoch().count(); }

    void caller() {
        while (!stop_.load()) {
            const auto start = clock::now();
            const auto r = limiter_.try_acquire(resil::deadline::after(deadline_));
            const auto took = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start).count();
            decisions_.fetch_add(1);
            if (r.granted()) granted_.fetch_add(1);
            std::int64_t seen = longest_us_.load();
            while (took > seen && !longest_us_.compare_exchange_weak(seen, took)) {
            }
            // Back: a decision Redis made that began after the kill.
            const auto killed = killed_ns_.load();
            if (killed != 0 && ns(start) > killed && r.source == resil::redis::decided_by::redis) {
                std::int64_t none = 0;
                back_ns_.compare_exchange_strong(none, ns(clock::now()));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        }
    }

    const resil::redis::rate_limiter& limiter_;
    std::chrono::milliseconds deadline_;
    clock::time_point t0_;
    clock::time_point killed_{};
    std::atomic<bool> stop_{false};
    std::atomic<std::int64_t> granted_{0}, decisions_{0}, longest_us_{0}, killed_ns_{0}, back_ns_{0};
    double length_s_ = 0;
    std::vector<std::thread> threads_;  // last: started once every member is
};

/// The checks of a failover run `run` (redis_failover_run or
/// redis_asio_run) of `t` seconds with the options `o`, `m` the limiter's
/// metrics after it: the documented bound, r·t + B plus what the dead
/// primary granted but had not replicated (r·λ with the bucket empty, λ the
/// replication lag: 1 s allowed, loopback lags by ~1 ms); no call past its
/// `deadline` (+ slack); back within 30 s; the outage seen; the topology
/// read again after it.
template <class Run>
void check_failover(const resil::redis::rate_limiter_options& o, const Run& run, double t,
                    const resil::redis::rate_limiter_metrics& m, std::chrono::milliseconds deadline) {
    const double lambda = 1.0;
    const double bound = o.rate * t + static_cast<double>(o.burst) + o.rate * lambda;
    CHECK(static_cast<double>(run.granted()) <= bound);
    CHECK(run.longest_call() <= deadline + slack);
    CHECK(run.back_after_s() < 30.0);
    CHECK(m.store_failures > 0);  // the outage was seen
    CHECK(m.map_refreshes >= 2);  // the map (or the primary) read again after it
}

}  // namespace resil_test
