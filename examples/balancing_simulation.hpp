// The balancing simulation: Poisson arrivals over replicas that each serve
// one request at a time from a FIFO queue, one request in ten ten times as
// long as the rest, every request sent where resil::balancer picks. What it
// measures is each request's queueing wait (arrival to the start of its
// service) and its latency (arrival to completion).
//
// Each request holds its lease from arrival to completion, so a replica's
// calls in flight are its queue plus the one in service — what a client
// counts for the requests it has sent and not yet seen answered. Leases end
// in time order, each before any arrival at or after its completion, so
// least outstanding, P2C and peak EWMA see what they would see live.
//
// The arrivals and sizes come from one engine and the picks from another:
// every picker faces the very same requests, and only its choices differ.
//
// Shared by examples/balancing_simulation.cpp (which prints the table and
// draws the plot) and the tests (which check its figures).
#pragma once

#include <resil/balancer.hpp>
#include <resil/jitter.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace balancing_simulation {

using namespace std::chrono_literals;

struct setup {
    std::size_t requests = 100'000;
    std::uint32_t replicas = 4;
    double rate = 150.0;         ///< arrivals per second, Poisson
    double heavy_share = 0.1;    ///< the share of requests taking `heavy` rather than `light`
    resil::duration light = 10ms;
    resil::duration heavy = 100ms;
    std::uint64_t seed = 7;
};

/// The pickers compared, in the order of the table.
constexpr std::array policies{resil::balancing_policy::round_robin, resil::balancing_policy::random,
                              resil::balancing_policy::least_outstanding,
                              resil::balancing_policy::power_of_two_choices, resil::balancing_policy::peak_ewma};

struct result {
    resil::balancing_policy policy{};
    std::vector<resil::duration> waits;      ///< each request's queueing wait, in arrival order
    std::vector<resil::duration> latencies;  ///< each request's wait plus service, in arrival order
    std::vector<std::size_t> per_replica;    ///< requests each replica served
};

/// The value at floor(n × percent / 100) once sorted: the definition the
/// reference figures were computed with (p50 of 100,000 is the 50,001st
/// smallest value, p99 the 99,001st).
[[nodiscard]] inline resil::duration percentile(std::vector<resil::duration> values, std::size_t percent) {
    if (values.empty()) return resil::duration::zero();
    const auto k = std::min(values.size() - 1, values.size() * percent / 100);
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

[[nodiscard]] inline double milliseconds(resil::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// One run of `s.requests` requests with `policy`.
[[nodiscard]] inline result simulate(resil::balancing_policy policy, const setup& s = {}) {
    if (s.replicas == 0 || s.requests == 0 || !(s.rate > 0.0) || !(s.heavy_share >= 0.0 && s.heavy_share <= 1.0))
        throw std::invalid_argument("balancing_simulation: replicas, requests and rate must be positive, "
                                    "heavy_share in [0, 1]");
    std::vector<resil::endpoint> replicas;
    for (std::uint32_t i = 0; i < s.replicas; ++i) replicas.push_back({.address = "replica-" + std::to_string(i) + ":8080"});
    // Every request succeeds: passive health never ejects a slow replica here.
    resil::balancer lb{replicas, {.policy = policy, .outlier = {.consecutive_failures = 0}}};

    resil::jitter_engine workload{s.seed};
    resil::jitter_engine picks{~s.seed};
    const resil::time_point start = resil::time_point{} + 1h;

    // Each replica's queue, first come first served: the completion time and
    // the lease of every request queued or in service there, in order.
    struct queued {
        resil::time_point done;
        resil::endpoint_lease lease;
    };
    std::vector<std::deque<queued>> queues(s.replicas);  // after lb: released before it goes
    std::vector<resil::time_point> free_at(s.replicas, start);

    result r;
    r.policy = policy;
    r.waits.reserve(s.requests);
    r.latencies.reserve(s.requests);
    r.per_replica.assign(s.replicas, 0);
    // Finishes, earliest first, every request done by `t`.
    auto finish_until = [&](resil::time_point t) {
        for (;;) {
            std::deque<queued>* first = nullptr;
            for (auto& q : queues)
                if (!q.empty() && q.front().done <= t && (first == nullptr || q.front().done < first->front().done))
                    first = &q;
            if (first == nullptr) return;
            first->front().lease.record_and_end(first->front().done, resil::endpoint_result::success);
            first->pop_front();
        }
    };

    resil::time_point now = start;
    for (std::size_t i = 0; i < s.requests; ++i) {
        // Exponential gaps (inverse transform), in whole nanoseconds.
        const double gap_s = -std::log1p(-resil::unit_interval(workload)) / s.rate;
        now += resil::duration{static_cast<resil::duration::rep>(std::llround(gap_s * 1e9))};
        const auto service = resil::unit_interval(workload) < s.heavy_share ? s.heavy : s.light;
        finish_until(now);  // a request finished by now is no longer in flight

        auto lease = lb.pick(now, picks);
        if (!lease) throw std::logic_error("balancing_simulation: the balancer found no replica");
        const auto replica = lease.index();
        const auto begins = std::max(now, free_at[replica]);
        free_at[replica] = begins + service;
        queues[replica].push_back({free_at[replica], std::move(lease)});
        r.waits.push_back(begins - now);
        r.latencies.push_back(free_at[replica] - now);
        ++r.per_replica[replica];
    }
    finish_until(resil::time_point::max());
    return r;
}

}  // namespace balancing_simulation
