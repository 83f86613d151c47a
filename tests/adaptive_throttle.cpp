#include <resil/adaptive_throttle.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::load_signal;
using resil::testing::manual_clock;
using throttle_t = resil::basic_adaptive_throttle<manual_clock>;

namespace {

std::string error_of(const resil::adaptive_throttle_options& o) {
    try {
        throttle_t t{o};
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

constexpr double always_admit = 0.999999;  // above any probability reached below

}  // namespace

TEST_CASE("adaptive throttle options: K < 1, a zero window are errors") {
    CHECK(resil::adaptive_throttle_options{}.validate() == std::nullopt);
    CHECK(error_of({.k = 0.5}) == "resil::adaptive_throttle: `k` must be in [1, 1000], got 0.5");
    CHECK(error_of({.window = resil::duration::zero()}) ==
          "resil::adaptive_throttle: `window` must be in [10ms, 24h], got 0s");
    CHECK_FALSE(error_of({.k = std::numeric_limits<double>::quiet_NaN()}).empty());
    CHECK(error_of({.k = 1001}) == "resil::adaptive_throttle: `k` must be in [1, 1000], got 1001");
    CHECK_FALSE(error_of({.k = std::numeric_limits<double>::infinity()}).empty());
    CHECK(error_of({.k = 1.0}).empty());
    CHECK(error_of({.window = -1s}) == "resil::adaptive_throttle: `window` must be in [10ms, 24h], got -1s");
    CHECK(error_of({.window = 9ms}) == "resil::adaptive_throttle: `window` must be in [10ms, 24h], got 9ms");
    CHECK(error_of({.window = std::chrono::hours{25}}) == "resil::adaptive_throttle: `window` must be in [10ms, 24h], got 25h");
    CHECK(error_of({.window = 10ms}).empty());
}

TEST_CASE("throttle probability: the SRE formula on known counts") {
    CHECK(resil::throttle_probability(100, 30, 2.0) == Approx(40.0 / 101.0));
    CHECK(resil::throttle_probability(100, 30, 2.0) == Approx(0.396).margin(0.0005));
    CHECK(resil::throttle_probability(100, 50, 2.0) == 0.0);
    CHECK(resil::throttle_probability(100, 100, 1.0) == 0.0);
    CHECK(resil::throttle_probability(0, 0, 2.0) == 0.0);
    CHECK(resil::throttle_probability(1000, 0, 2.0) == Approx(1000.0 / 1001.0));  // below 1: one call in 1001 goes
}

TEST_CASE("adaptive throttle: 100 requests, 30 accepts, K = 2 -> 0.396; local rejections count as requests") {
    manual_clock clock;
    throttle_t t{{}, clock};
    for (int i = 0; i < 100; ++i) {
        auto ticket = t.try_acquire(clock.now(), always_admit);
        REQUIRE(ticket);
        t.record(std::move(ticket), i < 30 ? load_signal::accepted : load_signal::overload, clock.now());
    }
    CHECK(t.counts(clock.now()).requests == 100);
    CHECK(t.counts(clock.now()).accepts == 30);
    CHECK(t.rejection_probability(clock.now()) == Approx(0.396).margin(0.0005));
    // Decisions use the probability as of at most window / 100 (1.2 s) ago: the
    // first call computed 0, so a call at the same instant is still admitted.
    CHECK(t.try_acquire(clock.now(), 0.0).admitted());
    t.record(t.try_acquire(clock.now(), 0.0), load_signal::ignored, clock.now());
    clock.advance(1200ms);
    // u below the probability: rejected locally, and counted as a request not accepted.
    CHECK_FALSE(t.try_acquire(clock.now(), 0.395).admitted());
    CHECK(t.rejection_probability(clock.now()) == Approx(41.0 / 102.0));
    CHECK(t.try_acquire(clock.now(), 0.41).admitted());  // above it: admitted
    CHECK(t.metrics().throttled == 1);
    CHECK(t.metrics().requests == 101);
    // The counts leave the window: after 2 minutes nothing is throttled.
    clock.advance(2min + 12s - 1200ms);
    CHECK(t.counts(clock.now()).requests == 0);
    CHECK(t.rejection_probability(clock.now()) == 0.0);
    CHECK(t.try_acquire(clock.now(), 0.0).admitted());
}

TEST_CASE("adaptive throttle: ignored answers and dropped tickets count nothing") {
    manual_clock clock;
    throttle_t t{{.k = 1.0}, clock};
    t.record(t.try_acquire(clock.now(), 0.5), load_signal::ignored, clock.now());
    { [[maybe_unused]] auto dropped = t.try_acquire(clock.now(), 0.5); }
    CHECK(t.counts(clock.now()).requests == 0);
}

TEST_CASE("adaptive throttle pipeline policy: the load sent settles near K x accepts, not the offered load") {
    manual_clock clock;
    throttle_t t{{.k = 2.0, .window = 10s}, clock};
    std::vector<resil::events::rejected> rejections;
    struct listener {
        std::vector<resil::events::rejected>* seen;
        void operator()(const resil::events::rejected& e) const { seen->push_back(e); }
    };
    const auto pipe = resil::pipeline(clock, std::ref(t)).with_listener(listener{&rejections});
    const auto by_status = [](int s) { return s == 503 ? resil::verdict::retryable : resil::verdict::success; };
    // 100 calls a second for 60 s; the dependency accepts 20 a second and answers 503 to the rest.
    int sent_last_30s = 0, accepted_last_30s = 0, throttled = 0, sent = 0;
    for (int second = 0; second < 60; ++second) {
        int accepted_this_second = 0;
        for (int i = 0; i < 100; ++i) {
            bool reached = false;
            const auto out = pipe([&] {
                reached = true;
                return ++accepted_this_second <= 20 ? 200 : 503;
            }, by_status);
            if (out.reason() == resil::reason::throttled) ++throttled;
            if (reached) {
                ++sent;
                if (second >= 30) ++sent_last_30s;
                if (second >= 30 && out.ok()) ++accepted_last_30s;
            }
            clock.advance(10ms);
        }
    }
    CHECK(throttled == static_cast<int>(rejections.size()));
    CHECK(throttled + sent == 6000);
    CHECK(accepted_last_30s == 600);  // the dependency's whole capacity is still used
    // About K x accepts = 40 a second reach the dependency, not the 100 offered.
    CHECK(sent_last_30s > 30 * 36);
    CHECK(sent_last_30s < 30 * 46);
}

TEST_CASE("adaptive throttle: threads count with exact totals") {
    manual_clock clock;
    throttle_t t{{.k = 1.0}, clock, 4};
    constexpr int threads = 4, calls = 5000;
    std::atomic<int> admitted{0};
    std::vector<std::thread> pool;
    for (int n = 0; n < threads; ++n) {
        pool.emplace_back([&, n] {
            for (int i = 0; i < calls; ++i) {
                auto ticket = t.try_acquire(clock.now());
                if (!ticket) continue;
                admitted.fetch_add(1);
                t.record(std::move(ticket), (i + n) % 2 == 0 ? load_signal::accepted : load_signal::overload, clock.now());
            }
        });
    }
    for (auto& th : pool) th.join();
    const auto m = t.metrics();
    CHECK(m.requests == threads * calls);
    CHECK(m.throttled + static_cast<std::uint64_t>(admitted.load()) == threads * calls);
    CHECK(t.counts(clock.now()).requests == threads * calls);
}
