// How resil::redis::rate_limiter waits for a reply: a blocking read bounded
// by SO_RCVTIMEO while even its latest possible end is before the reply's
// deadline, then poll() with the exact time left. A reply that comes after
// that read timed out is still taken; a reply that never comes ends the
// decision at its timeout, not a scheduler tick or 12.5 % later.
#include <resil/redis.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/redis_server.hpp"
#include "support/stall.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::failure_policy;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using clock_type = std::chrono::steady_clock;

namespace {

rate_limiter_options options_for(const resil_test::redis_server& redis, const std::string& key,
                                 std::chrono::milliseconds reply_timeout) {
    rate_limiter_options o;
    o.rate = 1000;
    o.burst = 1000;
    o.port = redis.port();
    o.key = key;
    o.on_failure = failure_policy::fail_closed;
    o.connect_timeout = 200ms;
    o.reply_timeout = reply_timeout;
    o.reconnect_backoff = 1ms;  // nearly every call probes, and waits on Redis
    o.reconnect_backoff_max = 1ms;
    o.connections = 1;
    return o;
}

std::chrono::microseconds percentile(std::vector<std::chrono::microseconds> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

// One poll() wake-up and the code around it (docs/redis_rate_limiter.md).
constexpr auto wake_slack = 2ms;

}  // namespace

TEST_CASE("redis limiter: a reply later than the blocking read's SO_RCVTIMEO is still awaited and taken") {
    resil_test::redis_server redis;
    // 1 s: the blocking read gives up after ~0.88 s (219 ticks of 4 ms), and
    // the reply comes at ~0.93 s, after it and before the timeout.
    rate_limiter limiter{options_for(redis, "late-reply", 1000ms)};
    REQUIRE(resil_test::redis_decides(limiter));
    const auto failures_before = limiter.metrics().store_failures;
    redis.freeze();
    std::thread thaw([&] {
        std::this_thread::sleep_for(930ms);
        redis.thaw();
    });
    const auto t0 = clock_type::now();
    const auto r = limiter.try_acquire();
    const auto took = resil_test::since(t0);
    thaw.join();
    CAPTURE(took, limiter.last_error());
    CHECK(r.status == rate_limit_status::granted);
    CHECK(r.source == decided_by::redis);
    CHECK(took >= 900ms);
    CHECK(limiter.metrics().store_failures == failures_before);
}

TEST_CASE("redis limiter: Redis frozen -> a decision without a deadline ends at reply_timeout, not a tick later") {
    resil_test::redis_server redis;
    int idle_pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, idle_pair) == 0);
    // 500 ms is 125 ticks of 4 ms: the timer wheel's 32 ms steps, where a
    // read set to the whole timeout would end up to 32 ms late.
    for (const auto d : {20ms, 100ms, 500ms}) {
        rate_limiter limiter{options_for(redis, "frozen-" + std::to_string(d.count()), d)};
        // Redis answers before it is frozen: asked until it does (a loaded
        // machine can take longer than a 20 ms reply timeout).
        REQUIRE(resil_test::redis_decides(limiter));
        redis.freeze();
        // Beside each decision, a bare poll() of the same length on an idle
        // socket: how late the kernel wakes a waiting thread now.
        // `ran` is each decision's time less what the machine held the
        // thread back (resil_test::stall_meter): the worst case is judged on
        // it, the percentiles (beside the bare poll()) on the wall time.
        std::vector<std::chrono::microseconds> took, ran, bare;
        for (int i = 0; i < (d < 100ms ? 30 : d < 500ms ? 10 : 6); ++i) {
            std::this_thread::sleep_for(2ms);  // past the backoff: this call probes
            const resil_test::stall_meter stalled;
            const auto t0 = clock_type::now();
            const auto r = limiter.try_acquire();
            took.push_back(resil_test::since<std::chrono::microseconds>(t0));
            ran.push_back(took.back() - stalled.elapsed());
            CHECK(r.status == rate_limit_status::unavailable);
            const auto t1 = clock_type::now();
            pollfd idle{idle_pair[0], POLLIN, 0};
            CHECK(::poll(&idle, 1, static_cast<int>(d.count())) == 0);
            bare.push_back(resil_test::since<std::chrono::microseconds>(t1));
        }
        redis.thaw();
        CAPTURE(d, percentile(took, 0.0), percentile(took, 0.5), percentile(took, 0.9), percentile(took, 1.0),
                percentile(ran, 1.0), percentile(bare, 0.5), percentile(bare, 0.9), limiter.last_error());
        // Each probe connects (the kernel accepts for the frozen server) and
        // waits for SCRIPT LOAD's reply: the whole reply timeout, never less
        // (a blocking read that timed out early hands over to poll())...
        CHECK(percentile(took, 0.0) >= d);
        // ...and not later than a bare poll() of that length, but for one
        // wake-up (the 90th percentile allows a late scheduler tick, 4 ms).
        CHECK(percentile(took, 0.5) <= percentile(bare, 0.5) + wake_slack);
        CHECK(percentile(took, 0.9) <= percentile(bare, 0.9) + wake_slack + 4ms);
        CHECK(percentile(ran, 1.0) <= d + resil_test::slack);
    }
    ::close(idle_pair[0]);
    ::close(idle_pair[1]);
}
