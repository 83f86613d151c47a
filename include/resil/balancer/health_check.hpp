// resil/balancer/health_check.hpp — active health checks: a probe (e.g.
// GET /readyz) per endpoint every interval; an endpoint failing
// `unhealthy_threshold` probes in a row leaves the balancer's set until it
// passes `healthy_threshold` in a row.
//
//   resil::health_checker checker{lb, [&](const std::string& address, resil::duration timeout) {
//       return client.get(address + "/readyz", timeout).status() == 200;   // bound the probe by `timeout`
//   }, {.interval = 15s, .timeout = 2s, .unhealthy_threshold = 2}};
//   resil::health_check_thread thread{checker};      // or call checker.run_once() from a loop of yours
//
// The checker is driven by the caller: run_once() probes every endpoint
// that is due and returns when the next one is; run(stop) loops on it,
// sleeping on the checker's clock; health_check_thread runs run() on a
// std::jthread it owns. Probes run one after another on that thread, so a
// round over N endpoints takes up to N × timeout (probes of the last ones
// start late when that exceeds the interval: pick interval ≥ N × timeout,
// or split a large set over several checkers). A stop requested during a
// round is seen between two probes: stopping waits for the probe under way
// only, at most one timeout when the probe honours its timeout.
//
// A probe is given its timeout and must return within it (pass it to the
// HTTP client as the transfer's limit); a probe that returns later than its
// timeout counts as a failure whatever it answered, and so does a probe that
// throws. The checker reads its own clock, so tests drive it with
// resil::testing::manual_clock.
//
// Active and passive health combine: an endpoint is out while either says
// so; panic mode and failover count both.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "../clock.hpp"
#include "../events.hpp"  // events::endpoint_health_changed
#include "../validation.hpp"
#include "balancer.hpp"

namespace resil {

/// Options of a health checker: how often each endpoint is probed, how long a
/// probe may take, and how many probes in a row take it out of the balancer's
/// set or bring it back. The defaults are the documented ones.
struct health_check_options {
    /// Between two probes of one endpoint (seed: 15–30 s).
    duration interval = std::chrono::seconds{15};
    /// The longest a probe may take, at most `interval`.
    duration timeout = std::chrono::seconds{2};
    /// Failed probes in a row that take an endpoint out.
    std::uint32_t unhealthy_threshold = 2;
    /// Passed probes in a row that bring it back.
    std::uint32_t healthy_threshold = 2;

    ///@{
    /// The bounds validate() checks: min_interval and max_interval bound
    /// `interval` (and `timeout`), max_threshold both thresholds.
    static constexpr duration min_interval = std::chrono::milliseconds{10};
    static constexpr duration max_interval = std::chrono::hours{1};
    static constexpr std::uint32_t max_threshold = 100;
    ///@}

    /// The first field out of its range, with what it must be and what it was;
    /// nothing when every field is valid. The checker's constructor throws it.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_in_range("interval", interval, min_interval, max_interval)) return bad;
        if (auto bad = detail::check_in_range("timeout", timeout, duration{std::chrono::milliseconds{1}}, interval))
            return bad;
        if (auto bad = detail::check_in_range("unhealthy_threshold", unhealthy_threshold, std::uint32_t{1}, max_threshold))
            return bad;
        return detail::check_in_range("healthy_threshold", healthy_threshold, std::uint32_t{1}, max_threshold);
    }
    /// Field-by-field equality.
    friend bool operator==(const health_check_options&, const health_check_options&) = default;
};

/// What a health checker has done since construction; a snapshot (each
/// count read relaxed, on its own).
struct health_check_metrics {
    std::uint64_t probes = 0;          ///< probes run
    std::uint64_t failed_probes = 0;   ///< of those, failed (false, thrown, or later than the timeout)
    std::uint64_t taken_out = 0;       ///< endpoints taken out of the set (unhealthy_threshold failures in a row)
    std::uint64_t brought_back = 0;    ///< endpoints brought back (healthy_threshold passes in a row)

    /// Field-by-field equality.
    friend bool operator==(const health_check_metrics&, const health_check_metrics&) = default;
};

/// The checker (banner above). Not copyable; the balancer must outlive it.
template <clock Clock = steady_clock>
class basic_health_checker {
public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// Answers whether the endpoint at `address` is ready, within `timeout`.
    using probe_type = std::function<bool(const std::string& address, duration timeout)>;
    /// Told of every change of an endpoint's health, on the checker's thread;
    /// must not throw.
    using listener_type = std::function<void(const events::endpoint_health_changed&)>;

    /// Throws std::invalid_argument when options.validate() names a field, or
    /// when `probe` is empty.
    basic_health_checker(const balancer& lb, probe_type probe, health_check_options options = {}, Clock clock = {},
                         listener_type on_change = {})
        : lb_(lb), probe_(std::move(probe)), options_(options), clock_(std::move(clock)),
          on_change_(std::move(on_change)) {
        throw_if_invalid("resil::health_checker", options_.validate());
        if (!probe_) throw std::invalid_argument("resil::health_checker: `probe` must be a callable, got none");
    }
    basic_health_checker(const basic_health_checker&) = delete;
    basic_health_checker& operator=(const basic_health_checker&) = delete;

    /// Probes every endpoint of the current set that is due (a new endpoint
    /// at once), one after another; returns when the next probe is due, or
    /// after the probe under way once `stop` is requested.
    time_point run_once(std::stop_token stop = {}) {
        std::lock_guard lock(mutex_);
        const auto addresses = lb_.addresses();
        // Forget endpoints that left the set.
        for (auto it = state_.begin(); it != state_.end();) {
            bool listed = false;
            for (const auto& a : addresses) listed = listed || a == it->first;
            it = listed ? std::next(it) : state_.erase(it);
        }
        for (const auto& address : addresses) {
            if (stop.stop_requested()) break;
            auto& st = state_[address];
            const auto start = clock_.now();
            if (st.due != time_point{} && start < st.due) continue;
            bool passed = false;
            try {
                passed = probe_(address, options_.timeout);
            } catch (...) {  // NOLINT(bugprone-empty-catch): a throwing probe is a failed probe
                passed = false;
            }
            const auto end = clock_.now();
            if (end - start > options_.timeout) passed = false;  // an answer too late is no answer
            probes_.fetch_add(1, std::memory_order_relaxed);
            if (!passed) failed_probes_.fetch_add(1, std::memory_order_relaxed);
            // The next probe one interval after this one was due, or after now when far behind.
            st.due = (st.due == time_point{} || st.due + options_.interval <= end) ? end + options_.interval
                                                                                   : st.due + options_.interval;
            record_probe(address, st, passed, end);
            // Said after every probe, not only on a change: an endpoint that
            // left the set and came back starts healthy in the balancer.
            detail::balancer_health_access::set_checked_health(lb_, address, st.healthy);
        }
        time_point next = time_point::max();
        for (const auto& [address, st] : state_) next = std::min(next, st.due);
        return next == time_point::max() ? clock_.now() + options_.interval : next;
    }

    /// Runs run_once() and sleeps on the clock until the next probe is due,
    /// until `stop` is requested.
    void run(std::stop_token stop) {
        while (!stop.stop_requested()) {
            const auto next = run_once(stop);
            if (!resil::sleep_until(clock_, next, stop)) return;
        }
    }

    /// The options it was built with.
    [[nodiscard]] const health_check_options& options() const noexcept { return options_; }
    /// The clock probes are timed and scheduled on.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// Probes and changes of health since construction; may be read while
    /// the checker runs.
    [[nodiscard]] health_check_metrics metrics() const noexcept {
        return {probes_.load(std::memory_order_relaxed), failed_probes_.load(std::memory_order_relaxed),
                taken_out_.load(std::memory_order_relaxed), brought_back_.load(std::memory_order_relaxed)};
    }

private:
    struct probe_state {
        time_point due{};
        std::uint32_t failures = 0;  ///< in a row
        std::uint32_t passes = 0;    ///< in a row
        bool healthy = true;
    };

    void record_probe(const std::string& address, probe_state& st, bool passed, time_point now) {
        if (passed) {
            st.failures = 0;
            ++st.passes;
            if (!st.healthy && st.passes >= options_.healthy_threshold) change(address, st, true, st.passes, now);
        } else {
            st.passes = 0;
            ++st.failures;
            if (st.healthy && st.failures >= options_.unhealthy_threshold) change(address, st, false, st.failures, now);
        }
    }
    void change(const std::string& address, probe_state& st, bool healthy, std::uint32_t run, time_point now) {
        st.healthy = healthy;
        (healthy ? brought_back_ : taken_out_).fetch_add(1, std::memory_order_relaxed);
        if (on_change_) on_change_({address, healthy, run, now});
    }

    const balancer& lb_;
    probe_type probe_;
    health_check_options options_;
    Clock clock_;
    listener_type on_change_;
    std::mutex mutex_;
    std::map<std::string, probe_state, std::less<>> state_;
    std::atomic<std::uint64_t> probes_{0};
    std::atomic<std::uint64_t> failed_probes_{0};
    std::atomic<std::uint64_t> taken_out_{0};
    std::atomic<std::uint64_t> brought_back_{0};
};

/// A health checker on resil::steady_clock.
using health_checker = basic_health_checker<>;

/// Runs a checker's run() on a thread of its own, stopped and joined on
/// destruction (or stop()): that waits for the probe under way, if any.
template <clock Clock = steady_clock>
class basic_health_check_thread {
public:
    /// Starts a thread running `checker.run()` until stop() or destruction. The
    /// checker must outlive it.
    explicit basic_health_check_thread(basic_health_checker<Clock>& checker)
        : thread_([&checker](std::stop_token stop) { checker.run(std::move(stop)); }) {}
    /// Stops the thread and waits for it: a probe under way finishes first.
    /// Also done by the destructor.
    void stop() noexcept {
        thread_.request_stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    std::jthread thread_;
};

/// A health check thread on resil::steady_clock.
using health_check_thread = basic_health_check_thread<>;

}  // namespace resil
