// The retry-storm simulation: 1,000 clients fail together at t = 0 against a
// server that serves 50 requests per 10 ms window and refuses the rest; each
// client retries up to 3 times. The waits come from resil's own retry policy
// (retry_policy::decide), so what this shows is what the library does.
//
// Shared by examples/retry_storm.cpp (which prints the table) and the tests
// (which check its numbers).
#pragma once

#include <resil/backoff.hpp>
#include <resil/retry.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

namespace retry_storm {

using namespace std::chrono_literals;

struct result {
    int served = 0;
    int gave_up = 0;
    int peak = 0;      ///< most attempts arriving in one 10 ms window
    int attempts = 0;  ///< attempts that reached the server after the first failure
};

struct setup {
    int clients = 1000;
    int per_window = 50;  ///< requests the server serves per window
    resil::duration window = 10ms;
    resil::duration base = 100ms;
    int retries = 3;
};

/// Runs the simulation with full jitter (or with none: plain exponential
/// backoff, every client waiting the same) drawing from `seed`.
inline result simulate(bool jitter, std::uint64_t seed, setup s = {}) {
    // A cap far above the longest wait (base × 2³): the formula alone decides.
    const resil::backoff backoff = jitter ? resil::backoff{resil::full_jitter{s.base, 1h}}
                                          : resil::backoff{resil::exponential_backoff{s.base, 1h}};
    const resil::retry_policy policy{{.max_attempts = static_cast<std::uint32_t>(s.retries + 1),
                                      .backoff = backoff,
                                      .max_wait = 2h}};
    resil::jitter_engine rng{seed};

    // (time, client, attempt): the next attempt in time first, ties by client.
    using event = std::tuple<resil::duration, int, std::uint32_t>;
    std::priority_queue<event, std::vector<event>, std::greater<>> pending;
    auto schedule_retry = [&](resil::duration now, int client, std::uint32_t failed) {
        const auto d = policy.decide({.attempt = failed, .result = resil::verdict::retryable}, rng);
        if (!d.retry) return false;
        pending.emplace(now + d.delay, client, failed + 1);
        return true;
    };
    for (int c = 0; c < s.clients; ++c) schedule_retry(0ns, c, 1);  // everyone failed at t = 0

    std::map<std::int64_t, int> arrivals;  // window index -> attempts arriving in it
    result r;
    while (!pending.empty()) {
        const auto [t, client, attempt] = pending.top();
        pending.pop();
        const int n = ++arrivals[t / s.window];
        ++r.attempts;
        if (n <= s.per_window)
            ++r.served;
        else if (!schedule_retry(t, client, attempt))
            ++r.gave_up;
    }
    for (const auto& [w, n] : arrivals) r.peak = std::max(r.peak, n);
    return r;
}

}  // namespace retry_storm
