// tests/support/redis_run_tally.hpp — what a run of a Redis limiter's
// decisions across a failover counts (grants, decisions, the longest call,
// when Redis decided again after the kill), shared by the blocking run
// (redis_failover_run.hpp) and the Asio one (redis_asio_run.hpp), and the
// checks and summary every failover test makes of it.
#pragma once

#include <resil/redis.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>

#include "../catch.hpp"
#include "timing.hpp"

namespace resil_test {

class run_tally {
public:
    using clock = std::chrono::steady_clock;

    [[nodiscard]] std::int64_t granted() const noexcept { return granted_.load(); }
    [[nodiscard]] std::int64_t decisions() const noexcept { return decisions_.load(); }
    [[nodiscard]] std::chrono::microseconds longest_call() const noexcept {
        return std::chrono::microseconds{longest_us_.load()};
    }

protected:
    static std::int64_t ns(clock::time_point t) noexcept { return t.time_since_epoch().count(); }

    /// From `at` on, a decision Redis makes that begins later counts as "back".
    void mark_kill(clock::time_point at) noexcept { killed_ns_.store(ns(at)); }
    [[nodiscard]] std::int64_t killed_ns() const noexcept { return killed_ns_.load(); }
    /// When Redis first decided after mark_kill(); 0 until it has.
    [[nodiscard]] std::int64_t back_ns() const noexcept { return back_ns_.load(); }

    /// One decision `r`, asked at `start`: counted (from any thread).
    void record(clock::time_point start, const resil::redis::rate_limit_result& r) noexcept {
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
    }

private:
    std::atomic<std::int64_t> granted_{0}, decisions_{0}, longest_us_{0}, killed_ns_{0}, back_ns_{0};
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

/// A failover run's summary for the test's output: where `limiter` is back
/// and how soon, what it granted of its decisions against r·t + B, its
/// longest call.
template <class Run>
[[nodiscard]] std::string failover_summary(const resil::redis::rate_limiter& limiter, const Run& run, double t,
                                           const resil::redis::rate_limiter_options& o) {
    std::ostringstream out;
    out << "back on " << limiter.current_node() << " " << run.back_after_s() << " s after the kill; "
        << run.granted() << " granted of " << run.decisions() << " decisions in " << t
        << " s (r·t + B = " << o.rate * t + static_cast<double>(o.burst) << "); longest call "
        << static_cast<double>(run.longest_call().count()) / 1000.0 << " ms";
    return out.str();
}

}  // namespace resil_test
