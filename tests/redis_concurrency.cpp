// resil/redis/rate_limiter.hpp under threads: eight threads with a limiter
// (and a connection) each, then eight threads sharing one limiter's pool of
// fewer connections, then leases refilled concurrently: the totals are exact.
// Runs under TSan in CI.
#include <resil/deadline.hpp>
#include <resil/redis.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using redis_time = resil::redis::detail::rate_limiter_access;

namespace {

resil_test::redis_server& server() {
    static resil_test::redis_server redis;
    return redis;
}

rate_limiter_options options_for(const std::string& key, int connections) {
    rate_limiter_options o;
    o.rate = 1;  // with every request at one Redis instant, nothing refills
    o.burst = 1000;
    o.port = server().port();
    o.key = key;
    o.connections = connections;
    o.connect_timeout = 2s;  // generous: TSan, a loaded machine
    o.reply_timeout = 2s;
    o.on_failure = resil::redis::failure_policy::fail_closed;  // a failure shows, never hides as a grant
    return o;
}

constexpr std::int64_t now_us = 5'000'000'000'000;
constexpr int threads_n = 8;
constexpr int per_thread = 200;

}  // namespace

TEST_CASE("redis limiter: 8 threads with their own connection share 1000 permits -> exactly 1000 granted") {
    std::vector<std::unique_ptr<rate_limiter>> limiters;
    for (int t = 0; t < threads_n; ++t) limiters.push_back(std::make_unique<rate_limiter>(options_for("threads-own", 1)));
    std::atomic<int> granted{0}, rejected{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const auto r = redis_time::try_acquire_at(*limiters[static_cast<std::size_t>(t)], now_us);
                if (r.source != decided_by::redis) ++other;
                else if (r) ++granted;
                else ++rejected;
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(other.load() == 0);
    CHECK(granted.load() == 1000);
    CHECK(rejected.load() == threads_n * per_thread - 1000);
    std::uint64_t counted = 0, trips = 0;
    for (auto& l : limiters) {
        counted += l->metrics().granted;
        trips += l->metrics().round_trips;
        CHECK(l->metrics().connects == 1);  // each its own connection, opened once
    }
    CHECK(counted == 1000);
    CHECK(trips == threads_n * per_thread);
}

TEST_CASE("redis limiter: 8 threads share one limiter with 3 connections -> exact totals, connections reused") {
    rate_limiter limiter{options_for("threads-shared", 3)};
    std::atomic<int> granted{0}, rejected{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) {
                const auto r = redis_time::try_acquire_at(limiter, now_us, 1 + i % 2);  // weights 1 and 2
                if (r.source != decided_by::redis) ++other;
                else if (r) granted += 1 + i % 2;
                else ++rejected;
            }
        });
    }
    for (auto& th : threads) th.join();
    CAPTURE(limiter.last_error());
    CHECK(other.load() == 0);
    // Weights 1 and 2 against 1000 permits: 999 or 1000 taken (a last odd
    // permit can be left when only weight-2 requests come after it).
    CHECK(granted.load() >= 999);
    CHECK(granted.load() <= 1000);
    CHECK(limiter.metrics().connects <= 3);
    CHECK(limiter.metrics().round_trips == threads_n * per_thread);
    CHECK(server().command({"GET", limiter.redis_key()}) != "(nil)");
}

TEST_CASE("redis limiter: leases refilled by 8 threads at once never hand out more than was taken from Redis") {
    auto o = options_for("threads-lease", 2);
    o.lease = 10;
    rate_limiter limiter{o};
    std::atomic<int> granted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i)
                if (redis_time::try_acquire_at(limiter, now_us)) ++granted;
        });
    }
    for (auto& th : threads) th.join();
    const auto m = limiter.metrics();
    CAPTURE(granted.load(), m.round_trips, m.lease_grants);
    // Everything granted came from the 1000 permits; at most lease − 1 of
    // them may still sit unspent in the lease.
    CHECK(granted.load() <= 1000);
    CHECK(granted.load() >= 1000 - 9);
    CHECK(m.lease_grants > 0);
    CHECK(m.granted == static_cast<std::uint64_t>(granted.load()));
}

TEST_CASE("redis limiter: a decision allocates nothing of its own (hiredis's buffers use malloc)") {
    rate_limiter limiter{options_for("allocations", 1)};
    auto o = options_for("allocations-lease", 1);
    o.lease = 10;
    rate_limiter leasing{o};
    REQUIRE(limiter.try_acquire());  // connects and loads the script: allocates
    REQUIRE(leasing.try_acquire());
    const auto before = resil_test::allocations.load();
    for (int i = 0; i < 100; ++i) {
        REQUIRE(limiter.try_acquire().source == decided_by::redis);
        REQUIRE(leasing.try_acquire());
        REQUIRE(limiter.try_acquire(resil::deadline::after(1s)));
        REQUIRE(limiter.try_acquire_for("another-tenant"));
    }
    if (resil_test::counting_allocations) CHECK(resil_test::allocations.load() - before == 0);
}

TEST_CASE("redis limiter: SCRIPT FLUSH while 4 threads decide -> each reloads and succeeds; no decision fails") {
    auto o = options_for("threads-flush", 4);
    o.rate = 1e6;  // every decision a grant: any failure would show
    o.burst = 1'000'000;
    rate_limiter limiter{o};
    REQUIRE(limiter.try_acquire());
    std::atomic<bool> done{false};
    std::atomic<int> not_granted{0}, decisions{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            while (!done.load()) {
                const auto r = limiter.try_acquire();
                if (!r || r.source != decided_by::redis) ++not_granted;
                ++decisions;
            }
        });
    }
    int flushes = 0;
    for (; flushes < 20; ++flushes) {
        std::this_thread::sleep_for(5ms);
        REQUIRE(server().command({"SCRIPT", "FLUSH"}) == "OK");
    }
    std::this_thread::sleep_for(5ms);
    done = true;
    for (auto& th : threads) th.join();
    const auto m = limiter.metrics();
    CAPTURE(decisions.load(), m.script_loads, limiter.last_error());
    CHECK(not_granted.load() == 0);
    CHECK(m.store_failures == 0);
    CHECK(m.script_loads >= 1);
    CHECK(m.script_loads <= static_cast<std::uint64_t>(flushes) * 4);  // at most once per connection per flush
    CHECK(decisions.load() > 40);
}
