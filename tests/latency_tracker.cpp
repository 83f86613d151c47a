#include <resil/latency_tracker.hpp>
#include <resil/testing/manual_clock.hpp>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::latency_tracker;
using resil::testing::manual_clock;

namespace {
// Within the histogram's resolution: the middle of a bucket is at most
// 1/16 (6.25 %) of the latency away, plus the 1024 ns unit below 8 units.
bool close_to(duration got, duration want) {
    const auto diff = got > want ? got - want : want - got;
    return diff <= want / 16 + duration{1024};
}
}  // namespace

TEST_CASE("latency tracker: every bucket reports a latency it holds, and buckets follow each other") {
    for (std::size_t b = 0; b < latency_tracker::buckets; ++b) {
        INFO("bucket " << b);
        CHECK(latency_tracker::bucket_of(latency_tracker::middle_of(b)) == b);
        if (b > 0) CHECK(latency_tracker::middle_of(b) > latency_tracker::middle_of(b - 1));
    }
    for (const duration d : std::initializer_list<duration>{duration{0}, duration{1500}, 1ms, 3ms + 7us, 200ms, 1s, 90s}) {
        INFO(d.count() << " ns");
        CHECK(close_to(latency_tracker::middle_of(latency_tracker::bucket_of(d)), d));
    }
    // Out of range: below zero counts as zero, beyond 137 s as the last bucket.
    CHECK(latency_tracker::bucket_of(-5s) == 0);
    CHECK(latency_tracker::bucket_of(duration::max()) == latency_tracker::buckets - 1);
    CHECK(latency_tracker::bucket_of(24h) == latency_tracker::buckets - 1);
}

TEST_CASE("latency tracker: the p95 of 95 fast answers and 5 slow ones") {
    manual_clock clock;
    latency_tracker t{10s, 1};
    CHECK_FALSE(t.percentile(clock.now(), 0.95).has_value());
    for (int i = 0; i < 95; ++i) t.record(clock.now(), 1ms);
    for (int i = 0; i < 5; ++i) t.record(clock.now(), 200ms);
    const auto p95 = t.estimate(clock.now(), 0.95);
    CHECK(p95.samples == 100);
    CHECK(close_to(p95.value, 1ms));
    CHECK(close_to(t.estimate(clock.now(), 0.96).value, 200ms));
    CHECK(close_to(*t.percentile(clock.now(), 1.0), 200ms));
    CHECK(close_to(*t.percentile(clock.now(), 0.01), 1ms));
}

TEST_CASE("latency tracker: a uniform spread gives its percentiles") {
    manual_clock clock;
    latency_tracker t{10s, 2};
    for (int ms = 1; ms <= 1000; ++ms) t.record(clock.now(), std::chrono::milliseconds{ms});
    CHECK(close_to(*t.percentile(clock.now(), 0.5), 500ms));
    CHECK(close_to(*t.percentile(clock.now(), 0.95), 950ms));
    CHECK(close_to(*t.percentile(clock.now(), 0.99), 990ms));
}

TEST_CASE("latency tracker: samples leave with the window, a quarter at a time") {
    manual_clock clock;
    latency_tracker t{4s, 1};  // slots of 1 s
    t.record(clock.now(), 100ms);
    clock.advance(1s);
    t.record(clock.now(), 2ms);
    CHECK(t.estimate(clock.now(), 1.0).samples == 2);
    clock.advance(2500ms);  // 3.5 s: both still in the current slot and the three before it
    CHECK(t.estimate(clock.now(), 1.0).samples == 2);
    clock.advance(500ms);  // 4 s: the slot of the first sample is four slots back
    const auto e = t.estimate(clock.now(), 1.0);
    CHECK(e.samples == 1);
    CHECK(close_to(e.value, 2ms));
    clock.advance(1s);
    CHECK(t.estimate(clock.now(), 1.0).samples == 0);
    // A slot used again starts from zero.
    t.record(clock.now(), 7ms);
    CHECK(t.estimate(clock.now(), 1.0).samples == 1);
    CHECK(close_to(*t.percentile(clock.now(), 0.5), 7ms));
}

TEST_CASE("latency tracker: a reading older than a slot's current use is dropped, not counted in the wrong slot") {
    manual_clock clock;
    latency_tracker t{4s, 1};
    const auto early = clock.now();
    clock.advance(4s);  // the same slot, four slots later
    t.record(clock.now(), 1ms);
    t.record(early, 300ms);
    const auto e = t.estimate(clock.now(), 1.0);
    CHECK(e.samples == 1);
    CHECK(close_to(e.value, 1ms));
}

TEST_CASE("latency tracker: a fraction outside (0, 1] is no percentile") {
    manual_clock clock;
    latency_tracker t{10s, 1};
    t.record(clock.now(), 1ms);
    CHECK(t.estimate(clock.now(), 0.0).samples == 0);
    CHECK(t.estimate(clock.now(), 1.5).samples == 0);
    CHECK(t.estimate(clock.now(), -1.0).samples == 0);
    CHECK_FALSE(t.percentile(clock.now(), std::numeric_limits<double>::quiet_NaN()).has_value());
}

TEST_CASE("latency tracker: a window outside [100ms, 1h] is refused with its reason") {
    CHECK_THROWS_WITH(latency_tracker{50ms}, "resil::latency_tracker: `window` must be in [100ms, 1h], got 50ms");
    CHECK_THROWS_AS(latency_tracker{2h}, std::invalid_argument);
    CHECK_NOTHROW(latency_tracker{100ms});
}

TEST_CASE("latency tracker: threads recording at once lose nothing within a slot") {
    manual_clock clock;
    latency_tracker t{10s};
    constexpr int per_thread = 20000;
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            for (int n = 0; n < per_thread; ++n) t.record(clock.now(), std::chrono::milliseconds{1 + i});
        });
    for (auto& th : threads) th.join();
    const auto e = t.estimate(clock.now(), 1.0);
    CHECK(e.samples == 4 * per_thread);
    CHECK(close_to(e.value, 4ms));
    CHECK(close_to(*t.percentile(clock.now(), 0.25), 1ms));
}

TEST_CASE("latency tracker: memory is the stripes', bounded whatever the thread count") {
    latency_tracker one{10s, 1};
    latency_tracker many{10s, 1024};
    CHECK(one.bytes() < 4096);
    CHECK(many.bytes() <= latency_tracker::max_stripes * one.bytes());
}
