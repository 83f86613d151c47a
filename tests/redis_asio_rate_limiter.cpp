// resil/redis/asio_rate_limiter.hpp against a real redis-server: the
// asynchronous path decides as the blocking one at the same Redis instants
// (directly and as a policy of resil::asio::pipeline, events included),
// shares the limiter's lease, fallback and counters, recovers from NOSCRIPT,
// fails open or closed when Redis is down, ends every decision within its
// timeouts and the caller's deadline when Redis is frozen, and never blocks
// the thread running the io_context.
#include <resil/policy_checklist.hpp>
#include <resil/redis/asio_rate_limiter.hpp>

#include <resil/asio.hpp>
#include <resil/deadline.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/redis.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catch.hpp"
#include "support/redis_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::async_rate_limiter;
static_assert(resil::policy_checklist<async_rate_limiter>);  // resil/policy_checklist.hpp, as the blocking one
using resil::redis::decided_by;
using resil::redis::failure_policy;
using resil::redis::rate_limit_result;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using redis_time = resil::redis::detail::rate_limiter_access;
using async_redis_time = resil::redis::detail::async_rate_limiter_access;

namespace {

resil_test::redis_server& server() {
    static resil_test::redis_server redis;
    return redis;
}

rate_limiter_options options_for(const resil_test::redis_server& redis, const std::string& key, double rate = 50,
                                 std::int64_t burst = 100) {
    rate_limiter_options o;
    o.reconnect_backoff = 20ms;
    o.reconnect_backoff_max = 100ms;
    o.rate = rate;
    o.burst = burst;
    o.port = redis.port();
    o.key = key;
    o.connect_timeout = 500ms;  // generous: a loaded machine, sanitizers
    o.reply_timeout = 500ms;
    o.connections = 2;
    return o;
}

// Runs `a` on `io` until it completes (the limiter's connection keeps a
// read waiting, so io.run() would not return), at most `bound`.
template <class T>
T await_in(asio::io_context& io, asio::awaitable<T> a, std::chrono::milliseconds bound = 20s) {
    std::optional<T> out;
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(
        io,
        [&, a = std::move(a)]() mutable -> asio::awaitable<void> {
            out.emplace(co_await std::move(a));
        },
        [&](std::exception_ptr e) {
            error = e;
            done = true;
        });
    const auto end = std::chrono::steady_clock::now() + bound;
    while (!done && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_one_for(10ms);
    }
    if (!done) throw std::runtime_error("the awaited operation did not complete in time");
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

// Asks until Redis decides, as resil_test::redis_decides does for the blocking limiter.
bool async_redis_decides(asio::io_context& io, const async_rate_limiter& l) {
    const auto end = std::chrono::steady_clock::now() + 20s;
    for (;;) {
        if (await_in(io, l.async_try_acquire()).source == decided_by::redis) return true;
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(2ms);
    }
}


// A Redis instant (µs since the script's epoch) far from any real TIME.
constexpr std::int64_t t0_us = 1'000'000'000'000;

// One line per event a policy decides, durations to the nanosecond (or
// only whether there is one: a fallback bucket's waits are real time).
struct recorder {
    std::vector<std::string>* lines;
    bool exact_waits = true;
    void operator()(const resil::events::rejected& e) const {
        lines->push_back("rejected " + std::string(resil::to_string(e.reason)) +
                         (e.retry_after ? exact_waits ? " " + std::to_string(e.retry_after->count()) + "ns" : " (wait)"
                                        : ""));
    }
    void operator()(const resil::events::quota_store_failed& e) const {
        lines->push_back(std::string("quota_store_failed ") + (e.fail_open ? "open" : "closed") +
                         (e.admitted ? " admitted" : " refused"));
    }
    void operator()(const resil::events::attempt_started& e) const {
        lines->push_back("attempt_started " + std::to_string(e.attempt));
    }
    void operator()(const resil::events::call_finished& e) const {
        lines->push_back("call_finished " + std::string(resil::to_string(e.reason)) + " attempts " +
                         std::to_string(e.attempts));
    }
};

// Freezes Redis (SIGSTOP) for a scope: thawed however the test ends.
struct frozen {
    resil_test::redis_server& redis;
    explicit frozen(resil_test::redis_server& r) : redis(r) { redis.freeze(); }
    ~frozen() { redis.thaw(); }
    frozen(const frozen&) = delete;
    frozen& operator=(const frozen&) = delete;
};

// A timer on the io_context firing every millisecond while `running`: the
// longest gap between two firings says how long the thread was held.
struct ticker {
    asio::io_context& io;
    bool running = true;
    std::chrono::steady_clock::duration longest{};
    int ticks = 0;
    explicit ticker(asio::io_context& i) : io(i) {
        asio::co_spawn(io, loop(), asio::detached);
    }
    asio::awaitable<void> loop() {
        asio::steady_timer timer{io};
        auto last = std::chrono::steady_clock::now();
        while (running) {
            timer.expires_after(1ms);
            co_await timer.async_wait(asio::use_awaitable);
            const auto now = std::chrono::steady_clock::now();
            longest = std::max(longest, now - last);
            last = now;
            ++ticks;
        }
    }
    void reset() {
        longest = {};
        ticks = 0;
    }
};

// Runs `io` until `done` or `bound`.
template <class Done>
void run_until(asio::io_context& io, Done done, std::chrono::milliseconds bound = 20s) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_one_for(10ms);
    }
    REQUIRE(done());
}

std::string show(const rate_limit_result& r) {
    return std::string(resil::redis::to_string(r.status)) + " wait " + std::to_string(r.wait.count()) +
           "ns retry_after " + std::to_string(r.retry_after.count()) + "s " +
           std::string(resil::redis::to_string(r.source)) + " remaining " + std::to_string(r.remaining) + " reset " +
           std::to_string(r.reset.count()) + "ns";
}

}  // namespace

TEST_CASE("redis asio limiter: a first decision connects, loads the script and is Redis's") {
    asio::io_context io;
    rate_limiter limiter{options_for(server(), "asio-first", 10, 3)};
    async_rate_limiter async_limiter{limiter, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    const auto r = await_in(io, async_limiter.async_try_acquire());
    CHECK(r.granted());
    CHECK(r.source == decided_by::redis);
    CHECK(r.remaining == 1);
    const auto m = limiter.metrics();
    CHECK(m.connects == 1);
    CHECK(m.round_trips == 2);
}

TEST_CASE("redis asio limiter: decides as the blocking limiter at the same Redis instants, weights, waits, remaining and reset included") {
    for (const auto& [rate, burst] : {std::pair{7.0, std::int64_t{10}}, std::pair{12'345.0, std::int64_t{50}}}) {
        INFO("rate " << rate << " burst " << burst);
        asio::io_context io;
        auto o = options_for(server(), "asio-same-blocking-" + std::to_string(burst), rate, burst);
        o.reply_timeout = 2s;  // Redis decides every one of them, even on a loaded machine
        o.connect_timeout = 2s;
        rate_limiter blocking{o};
        o.key = "asio-same-async-" + std::to_string(burst);
        rate_limiter shared{o};
        async_rate_limiter async_limiter{shared, io.get_executor()};
        std::uint64_t state = 0x9e3779b97f4a7c15u;
        const auto next = [&](std::uint64_t bound) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            return state % bound;
        };
        std::int64_t t = t0_us;
        int granted = 0, rejected = 0, exceeding = 0;
        for (int i = 0; i < 400; ++i) {
            if (next(5) != 0) t += static_cast<std::int64_t>(next(static_cast<std::uint64_t>(3e6 / rate)));
            std::int64_t n = 1 + static_cast<std::int64_t>(next(4));
            if (i % 97 == 5) n = burst + 1;  // exceeds_burst, answered without Redis
            if (i % 89 == 7) n = 0;
            const auto b = redis_time::try_acquire_at(blocking, t, n);
            const auto a = await_in(io, async_redis_time::try_acquire_at(async_limiter, t, n));
            INFO("step " << i << " at " << t << " us, n = " << n);
            INFO("blocking " << show(b));
            INFO("async    " << show(a));
            REQUIRE(a == b);
            if (n > 0 && n <= burst) REQUIRE(a.source == decided_by::redis);
            granted += a.granted() ? 1 : 0;
            rejected += a.status == rate_limit_status::rejected ? 1 : 0;
            exceeding += a.status == rate_limit_status::exceeds_burst ? 1 : 0;
        }
        CHECK(granted > 50);
        CHECK(rejected > 50);
        CHECK(exceeding == 5);
        CHECK(shared.metrics().round_trips == blocking.metrics().round_trips);
        CHECK(shared.metrics().store_failures == 0);
    }
}

TEST_CASE("redis asio limiter: a tenant's quota (try_acquire_for) decides as the blocking one; a bad key throws before anything is awaited") {
    asio::io_context io;
    rate_limiter blocking{options_for(server(), "asio-tenants-blocking", 10, 3)};
    rate_limiter shared{options_for(server(), "asio-tenants-async", 10, 3)};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    redis_time::fix_redis_time(blocking, t0_us);
    redis_time::fix_redis_time(shared, t0_us);
    for (int i = 0; i < 5; ++i) {
        // The same tenant names, under each limiter's prefix: one quota each side.
        const auto b = blocking.try_acquire_for("b-tenant-" + std::to_string(i % 2));
        const auto a = await_in(io, async_limiter.async_try_acquire_for("a-tenant-" + std::to_string(i % 2)));
        INFO("blocking " << show(b) << "; async " << show(a));
        CHECK(a == b);
    }
    CHECK(server().command({"EXISTS", "resil:rl:{a-tenant-0}"}) == "1");
    CHECK_THROWS_WITH(async_limiter.async_try_acquire_for("a b"), Catch::Contains("`key` must be"));
    CHECK_THROWS_AS(async_limiter.async_acquire_for("", resil::deadline::after(1s)), std::invalid_argument);
    // A negative weight throws when awaited, as the blocking call throws.
    CHECK_THROWS_AS(await_in(io, async_limiter.async_try_acquire(-1)), std::invalid_argument);
}

TEST_CASE("redis asio limiter: in resil::asio::pipeline it emits the blocking pipeline's events at the same Redis instants") {
    asio::io_context io;
    rate_limiter blocking{options_for(server(), "asio-pipeline-blocking", 10, 3)};
    rate_limiter shared{options_for(server(), "asio-pipeline-async", 10, 3)};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    std::vector<std::string> blocking_lines, async_lines;
    const auto blocking_pipe =
        resil::pipeline(resil::deadline_policy{10s}, std::ref(blocking)).with_listener(recorder{&blocking_lines});
    const auto async_pipe =
        resil::asio::pipeline(resil::deadline_policy{10s}, std::ref(async_limiter)).with_listener(recorder{&async_lines});
    int calls = 0;
    // Two calls at a time, 60 ms apart on Redis's time line: the burst of
    // 3 goes, then one of each two but at 180 ms (a permit per 100 ms).
    for (int i = 0; i < 12; ++i) {
        const std::int64_t at = t0_us + (i / 2) * 60'000;
        redis_time::fix_redis_time(blocking, at);
        redis_time::fix_redis_time(shared, at);
        const auto b = blocking_pipe([&] { return ++calls; }, resil::always_success);
        blocking_lines.push_back("outcome " + std::string(resil::to_string(b.reason())));
        const auto a = await_in(io, async_pipe([&]() -> asio::awaitable<int> { co_return ++calls; },
                                               resil::always_success));
        async_lines.push_back("outcome " + std::string(resil::to_string(a.reason())));
        if (!a.ok() && a.retry_after()) async_lines.back() += " " + std::to_string(a.retry_after()->count()) + "ns";
        if (!b.ok() && b.retry_after()) blocking_lines.back() += " " + std::to_string(b.retry_after()->count()) + "ns";
    }
    CHECK(async_lines == blocking_lines);
    CHECK(std::count(async_lines.begin(), async_lines.end(), "outcome none") == 6);
    CHECK(std::count_if(async_lines.begin(), async_lines.end(), [](const std::string& l) {
              return l.starts_with("rejected rate_limited ");
          }) == 6);
    CHECK(calls == 12);
    CHECK(shared.metrics().round_trips == 12);
}

TEST_CASE("redis asio limiter: with max_wait the pipeline call waits for its reserved permit on a timer, within its deadline") {
    asio::io_context io;
    auto o = options_for(server(), "asio-pipeline-pacing", 10, 1);
    o.max_wait = 500ms;
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));  // the permit is taken: the next comes in 100 ms
    ticker tick{io};
    std::vector<std::string> lines;
    const auto paced = resil::asio::pipeline(std::ref(async_limiter)).with_listener(recorder{&lines});
    int calls = 0;
    const auto call = [&]() -> asio::awaitable<int> { co_return ++calls; };
    tick.reset();
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(await_in(io, paced(call, resil::always_success)).ok());
    CHECK(resil_test::since(t0) >= 50ms);
    CHECK(calls == 1);
    CHECK(tick.ticks > 10);  // the io_context kept running while the call waited
    CHECK(tick.longest < 50ms);
    // ...never past the call's deadline: rejected at once, as the blocking pipeline.
    const auto tight = resil::asio::pipeline(resil::deadline_policy{30ms}, std::ref(async_limiter))
                           .with_listener(recorder{&lines});
    const auto t1 = std::chrono::steady_clock::now();
    const auto out = await_in(io, tight(call, resil::always_success));
    CHECK(out.reason() == resil::reason::rate_limited);
    CHECK(resil_test::since(t1) < 30ms + resil_test::slack);
    CHECK(calls == 1);
    CHECK(lines.back().starts_with("call_finished rate_limited"));
    tick.running = false;
}

TEST_CASE("redis asio limiter: acquire reserves in Redis and waits on a timer, never past the deadline; a stop or a cancellation ends the wait") {
    asio::io_context io;
    rate_limiter shared{options_for(server(), "asio-acquire", 10, 1)};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    ticker tick{io};
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = await_in(io, async_limiter.async_acquire(resil::deadline::after(2s)));
    CHECK(r.granted());
    CHECK(r.source == decided_by::redis);
    CHECK(r.wait >= 50ms);
    CHECK(resil_test::since(t0) >= 50ms);
    CHECK(tick.ticks > 10);
    // The permit exists only in 100 ms: a 30 ms deadline is rejected at once.
    const auto t1 = std::chrono::steady_clock::now();
    const auto late = await_in(io, async_limiter.async_acquire(resil::deadline::after(30ms)));
    CHECK(late.status == rate_limit_status::rejected);
    CHECK(late.wait > 30ms);
    CHECK(resil_test::since(t1) < 30ms + resil_test::slack);
    // A stop token fired during the wait: cancelled, the reservation forfeited.
    std::stop_source stop;
    asio::steady_timer fire{io};
    fire.expires_after(20ms);
    fire.async_wait([&](const std::error_code&) { stop.request_stop(); });
    const auto t2 = std::chrono::steady_clock::now();
    const auto cancelled = await_in(io, async_limiter.async_acquire(resil::deadline::after(5s), 1, stop.get_token()));
    CHECK(cancelled.status == rate_limit_status::cancelled);
    CHECK(resil_test::since(t2) < 100ms + resil_test::slack);
    // A stop already requested: nothing asked.
    const auto before = shared.metrics().round_trips;
    CHECK(await_in(io, async_limiter.async_acquire(resil::deadline::after(5s), 1, stop.get_token())).status ==
          rate_limit_status::cancelled);
    CHECK(shared.metrics().round_trips == before);
    tick.running = false;
}

TEST_CASE("redis asio limiter: NOSCRIPT after SCRIPT FLUSH -> EVAL runs the script and caches it again; no decision fails") {
    asio::io_context io;
    rate_limiter shared{options_for(server(), "asio-noscript", 50, 1000)};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    const auto before = shared.metrics();
    CHECK(server().command({"SCRIPT", "FLUSH"}) == "OK");
    const auto r = await_in(io, async_limiter.async_try_acquire());
    CHECK(r.source == decided_by::redis);
    auto m = shared.metrics();
    CHECK(m.script_loads == before.script_loads + 1);
    CHECK(m.round_trips == before.round_trips + 1);
    CHECK(m.store_failures == before.store_failures);
    CHECK(m.connects == before.connects);  // the same connection
    // EVAL cached it again: EVALSHA works without another load.
    CHECK(await_in(io, async_limiter.async_try_acquire()).source == decided_by::redis);
    CHECK(shared.metrics().script_loads == m.script_loads);

    // Flushed under 200 decisions in flight on the connection: each
    // recovers. (Their EVALs, 5 KB each, are more than the socket takes at
    // once: the rest of a write waits for the socket.)
    CHECK(server().command({"SCRIPT", "FLUSH"}) == "OK");
    int done = 0, from_redis = 0;
    for (int i = 0; i < 200; ++i)
        asio::co_spawn(io, async_limiter.async_try_acquire(), [&](std::exception_ptr e, rate_limit_result x) {
            ++done;
            from_redis += !e && x.source == decided_by::redis ? 1 : 0;
        });
    run_until(io, [&] { return done == 200; });
    CHECK(from_redis == 200);
    m = shared.metrics();
    CHECK(m.script_loads > before.script_loads + 1);
    CHECK(m.store_failures == before.store_failures);
}

TEST_CASE("redis asio limiter: leases are the limiter's: one round trip per 10 decisions, spent by blocking and asynchronous callers alike") {
    asio::io_context io;
    auto o = options_for(server(), "asio-lease", 50, 100);
    o.lease = 10;
    o.lease_ttl = 60s;  // never expires during the test
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    redis_time::fix_redis_time(shared, t0_us);
    const auto first = await_in(io, async_limiter.async_try_acquire());
    CHECK(first.source == decided_by::redis);
    CHECK(first.remaining == 99);  // 90 in Redis + 9 leased
    CHECK(shared.metrics().round_trips == 1);
    for (int i = 0; i < 4; ++i) {
        const auto r = await_in(io, async_limiter.async_try_acquire());
        CHECK(r.source == decided_by::lease);
        CHECK(r.remaining == 98 - i);
    }
    for (int i = 0; i < 5; ++i) CHECK(shared.try_acquire().source == decided_by::lease);
    CHECK(shared.metrics().round_trips == 1);
    CHECK(await_in(io, async_limiter.async_try_acquire()).source == decided_by::redis);  // refilled
    const auto m = shared.metrics();
    CHECK(m.round_trips == 2);
    CHECK(m.lease_grants == 9);
    CHECK(m.granted == 11);
    // Redis holds 100 − 20 (two leases of 10), at the same instant.
    CHECK(redis_time::try_acquire_at(shared, t0_us, 81).status == rate_limit_status::rejected);
    CHECK(redis_time::try_acquire_at(shared, t0_us, 80).source == decided_by::redis);
}

TEST_CASE("redis asio limiter: 300 decisions in flight on one connection share a quota of 100 exactly; blocking threads share it too") {
    asio::io_context io;
    auto o = options_for(server(), "asio-shared-quota", 1, 150);
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    redis_time::fix_redis_time(shared, t0_us);  // one instant: nothing refills
    std::atomic<int> granted{0};
    std::atomic<int> done{0};
    for (int i = 0; i < 300; ++i)
        asio::co_spawn(io, async_limiter.async_try_acquire(), [&](std::exception_ptr e, rate_limit_result r) {
            if (!e && r.granted()) granted.fetch_add(1);
            ++done;
        });
    // Two threads run the io_context while two more decide blocking.
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) threads.emplace_back([&] { io.run(); });
    std::atomic<int> blocking_granted{0};
    for (int i = 0; i < 2; ++i)
        threads.emplace_back([&] {
            for (int k = 0; k < 50; ++k)
                if (shared.try_acquire()) blocking_granted.fetch_add(1);
        });
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (done.load() < 300 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    for (std::size_t i = 2; i < threads.size(); ++i) threads[i].join();
    io.stop();
    threads[0].join();
    threads[1].join();
    REQUIRE(done.load() == 300);
    CHECK(granted.load() + blocking_granted.load() == 150);
    const auto m = shared.metrics();
    CHECK(m.store_failures == 0);
    CHECK(m.round_trips == 400);
    CHECK(m.connects <= 3);  // the async connection, and the pool's two
}

TEST_CASE("redis asio limiter: a connection the server closed while idle is opened again within the decision; no failure") {
    asio::io_context io;
    rate_limiter shared{options_for(server(), "asio-idle-closed")};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    const auto before = shared.metrics();
    CHECK(server().command({"CLIENT", "KILL", "TYPE", "normal"}) != "0");
    const auto r = await_in(io, async_limiter.async_try_acquire());
    CHECK(r.source == decided_by::redis);
    const auto m = shared.metrics();
    CHECK(m.connects == before.connects + 1);
    CHECK(m.store_failures == before.store_failures);
    CHECK_FALSE(shared.redis_down());
}

TEST_CASE("redis asio limiter: a deadline already passed is no_time, not a failure; in the pipeline, deadline_exceeded") {
    asio::io_context io;
    rate_limiter shared{options_for(server(), "asio-no-time")};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    const auto r = await_in(io, async_limiter.async_try_acquire(resil::deadline::at(resil::steady_clock{}.now() - 1ms)));
    CHECK(r.status == rate_limit_status::no_time);
    CHECK(r.source == decided_by::none);
    CHECK(shared.metrics().no_time == 1);
    CHECK(shared.metrics().store_failures == 0);
    CHECK(shared.metrics().connects == 0);
}

namespace {

// Calls through a blocking and an asynchronous pipeline, one after the
// other, each with its own limiter: the lines of both listeners.
struct both_pipelines {
    asio::io_context& io;
    const rate_limiter& blocking;
    const async_rate_limiter& async_limiter;
    bool exact_waits = true;
    std::vector<std::string> blocking_lines{}, async_lines{};

    void call() {
        const auto b_pipe = resil::pipeline(std::ref(blocking)).with_listener(recorder{&blocking_lines, exact_waits});
        const auto a_pipe =
            resil::asio::pipeline(std::ref(async_limiter)).with_listener(recorder{&async_lines, exact_waits});
        const auto b = b_pipe([] { return 1; }, resil::always_success);
        blocking_lines.push_back("outcome " + std::string(resil::to_string(b.reason())));
        const auto a = await_in(io, a_pipe([]() -> asio::awaitable<int> { co_return 1; }, resil::always_success));
        async_lines.push_back("outcome " + std::string(resil::to_string(a.reason())));
    }
};

}  // namespace

TEST_CASE("redis asio limiter: Redis killed -> fail closed rejects with quota_unavailable, the blocking pipeline's events; back once Redis is") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-down-closed");
    o.on_failure = failure_policy::fail_closed;
    rate_limiter blocking{o};
    o.key = "asio-down-closed-async";
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    REQUIRE(resil_test::redis_decides(blocking));
    redis.kill();
    const auto r = await_in(io, async_limiter.async_try_acquire());
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(r.source == decided_by::fallback);
    CHECK(r.remaining == 0);
    CHECK(shared.redis_down());
    CHECK_FALSE(shared.last_error().empty());
    both_pipelines pipes{io, blocking, async_limiter};
    for (int i = 0; i < 3; ++i) pipes.call();
    CHECK(pipes.async_lines == pipes.blocking_lines);
    CHECK(pipes.async_lines.at(0) == "quota_store_failed closed refused");
    CHECK(pipes.async_lines.at(1) == "rejected quota_unavailable");
    CHECK(pipes.async_lines.at(3) == "outcome quota_unavailable");
    const auto m = shared.metrics();
    CHECK(m.store_failures == 4);
    CHECK(m.fail_closed_rejected == 4);
    CHECK(m.granted == 0 + 1);  // the one async_redis_decides took
    redis.restart();
    CHECK(async_redis_decides(io, async_limiter));
    CHECK_FALSE(shared.redis_down());
}

TEST_CASE("redis asio limiter: Redis killed -> fail open admits through the local bucket only, the blocking pipeline's events") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-down-open", 100, 20);
    o.expected_pods = 4;  // fail open at 25/s, burst 5
    rate_limiter blocking{o};
    o.key = "asio-down-open-async";
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    redis.kill();
    both_pipelines pipes{io, blocking, async_limiter};
    pipes.exact_waits = false;
    for (int i = 0; i < 6; ++i) pipes.call();
    CHECK(pipes.async_lines == pipes.blocking_lines);
    const auto admitted = std::count(pipes.async_lines.begin(), pipes.async_lines.end(),
                                     std::string("quota_store_failed open admitted"));
    CHECK(admitted >= 5);  // the local burst (and what 25/s refills meanwhile)
    CHECK(admitted < 6);
    CHECK(std::count(pipes.async_lines.begin(), pipes.async_lines.end(), std::string("rejected rate_limited (wait)")) ==
          6 - admitted);
    const auto r = await_in(io, async_limiter.async_try_acquire(5));
    CHECK(r.source == decided_by::fallback);
    CHECK(r.status == rate_limit_status::rejected);
    const auto over = await_in(io, async_limiter.async_try_acquire(6));  // above the local burst: no wait helps
    CHECK(over.status == rate_limit_status::exceeds_burst);
    const auto m = shared.metrics();
    CHECK(m.fail_open_admitted == static_cast<std::uint64_t>(admitted));
    CHECK(m.store_failures == 8);
    // Waiting for a local token, failing open: the fallback bucket's
    // reservation, awaited on a timer.
    const auto waited = await_in(io, async_limiter.async_acquire(resil::deadline::after(2s)));
    CHECK(waited.granted());
    CHECK(waited.source == decided_by::fallback);
    CHECK(waited.wait > 0ms);
}

TEST_CASE("redis asio limiter: Redis frozen -> decisions end at reply_timeout, and the io_context's thread is never held") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-frozen");
    o.connect_timeout = 1s;
    o.reply_timeout = 1s;  // long enough that a held thread shows, whatever the load
    o.expected_pods = 4;
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    o.key = "asio-frozen-blocking";
    rate_limiter blocking{o};
    REQUIRE(async_redis_decides(io, async_limiter));
    REQUIRE(resil_test::redis_decides(blocking));
    ticker tick{io};
    {
        frozen f{redis};
        tick.reset();
        std::vector<std::chrono::steady_clock::duration> took;
        std::vector<rate_limit_result> results;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 3; ++i)
            asio::co_spawn(io, async_limiter.async_try_acquire(), [&](std::exception_ptr, rate_limit_result r) {
                took.push_back(std::chrono::steady_clock::now() - t0);
                results.push_back(r);
            });
        run_until(io, [&] { return results.size() == 3; });
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(results[i].source == decided_by::fallback);
            CHECK(results[i].granted());
            CHECK(took[i] >= 900ms);
            CHECK(took[i] < 1s + resil_test::slack);
        }
        CHECK(tick.ticks > 100);
        CHECK(tick.longest < 500ms);  // half the reply timeout: no wait held the thread
        CHECK(shared.last_error() == "no reply from Redis within the timeout");
        CHECK(shared.redis_down());

        // The check can fail: the blocking limiter, on the same thread, holds it.
        tick.reset();
        bool blocked_done = false;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                CHECK(blocking.try_acquire().source == decided_by::fallback);
                blocked_done = true;
                co_return;
            },
            asio::detached);
        run_until(io, [&] { return blocked_done; });
        const int seen = tick.ticks;
        run_until(io, [&] { return tick.ticks >= seen + 2; });  // the firing it held up
        CHECK(tick.longest >= 900ms);
    }
    tick.running = false;
}

TEST_CASE("redis asio limiter: Redis frozen -> a deadline shorter than the timeouts ends the decision; the first such cut is forgiven") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-frozen-deadline");
    o.reply_timeout = 1s;
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    frozen f{redis};
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = await_in(io, async_limiter.async_try_acquire(resil::deadline::after(100ms)));
    CHECK(resil_test::since(t0) < 100ms + resil_test::slack);
    CHECK(r.source == decided_by::fallback);
    CHECK_FALSE(shared.redis_down());  // a tight deadline does not prove Redis slow
    const auto t1 = std::chrono::steady_clock::now();
    const auto again = await_in(io, async_limiter.async_try_acquire(resil::deadline::after(100ms)));
    CHECK(resil_test::since(t1) < 100ms + resil_test::slack);
    CHECK(again.source == decided_by::fallback);
    CHECK(shared.redis_down());  // a second before any answer is a failure
    // Left alone for the backoff: decided locally at once.
    const auto t2 = std::chrono::steady_clock::now();
    CHECK(await_in(io, async_limiter.async_try_acquire(resil::deadline::after(100ms))).source == decided_by::fallback);
    CHECK(resil_test::since(t2) < resil_test::slack);
}

TEST_CASE("redis asio limiter: a first decision while Redis is frozen ends when opening does (SCRIPT LOAD unanswered)") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-frozen-open");
    o.connect_timeout = 200ms;
    o.reply_timeout = 300ms;
    o.on_failure = failure_policy::fail_closed;
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    frozen f{redis};  // the kernel still accepts the connection
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = await_in(io, async_limiter.async_try_acquire());
    const auto took = resil_test::since(t0);
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(took >= 250ms);
    CHECK(took < 500ms + resil_test::slack);  // within the connect and one reply
    CHECK(shared.last_error() == "no reply from Redis within the timeout");
    CHECK(shared.metrics().connects == 1);
}

TEST_CASE("redis asio limiter: a host name is resolved off the io_context's thread, within connect_timeout") {
    asio::io_context io;
    auto o = options_for(server(), "asio-host-name");
    o.host = "localhost";  // ::1 may come first and be refused at once: the next address is tried
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    CHECK(shared.metrics().store_failures == 0);

    // A name that does not resolve: a store failure naming it, within
    // connect_timeout, the thread free meanwhile.
    o.host = "no-such-host.invalid";
    o.key = "asio-host-name-invalid";
    o.connect_timeout = 300ms;
    o.on_failure = failure_policy::fail_closed;
    rate_limiter unresolved{o};
    async_rate_limiter async_unresolved{unresolved, io.get_executor()};
    ticker tick{io};
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = await_in(io, async_unresolved.async_try_acquire());
    CHECK(resil_test::since(t0) < 300ms + resil_test::slack);
    CHECK(r.status == rate_limit_status::unavailable);
    INFO(unresolved.last_error());
    CHECK(unresolved.last_error().find("resolving no-such-host.invalid") != std::string::npos);
    CHECK(tick.longest < 100ms);
    tick.running = false;
}

namespace docs_example {
struct reply {
    int status = 200;
    std::chrono::seconds retry_after{};
};
reply make_reply(int status, std::chrono::seconds retry_after = {}) { return {status, retry_after}; }
asio::awaitable<reply> call_llm() { co_return reply{}; }
}  // namespace docs_example

TEST_CASE("redis asio limiter: docs/redis_rate_limiter.md, On Asio: the example, as written") {
    using namespace docs_example;
    asio::io_context io;
    resil::redis::rate_limiter llm_quota{{.rate = 50, .burst = 100, .host = "127.0.0.1", .port = server().port(),
                                          .key = "docs-llm-api", .expected_pods = 10}};
    resil::redis::async_rate_limiter async_quota{llm_quota, io.get_executor()};
    const std::int64_t estimated_tokens = 30;
    int called = 0;
    auto handle = [&]() -> asio::awaitable<reply> {
        if (auto r = co_await async_quota.async_try_acquire(); !r) co_return make_reply(429, r.retry_after);
        if (co_await async_quota.async_acquire(resil::deadline::after(2s), estimated_tokens)) {
            ++called;
            co_return co_await call_llm();
        }
        co_return make_reply(503);
    };
    CHECK(await_in(io, handle()).status == 200);
    CHECK(called == 1);
    auto pipe = resil::asio::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{}, std::ref(async_quota));
    const auto out = await_in(io, pipe([&](resil::context&) { return call_llm(); },
                                       [](const reply& r) { return r.status == 200 ? resil::verdict::success
                                                                                   : resil::verdict::retryable; }));
    CHECK(out.ok());
    CHECK(llm_quota.metrics().granted == 3);
    CHECK(async_quota.metrics().granted == 3);
}

TEST_CASE("redis asio limiter: decisions queued while Redis is frozen (within the reply timeout) are all Redis's once it thaws") {
    resil_test::redis_server redis;
    asio::io_context io;
    auto o = options_for(redis, "asio-full-socket", 1e6, 1'000'000'000);
    o.reply_timeout = 10s;  // the freeze is no failure
    rate_limiter shared{o};
    async_rate_limiter async_limiter{shared, io.get_executor()};
    REQUIRE(async_redis_decides(io, async_limiter));
    constexpr int in_flight = 1000;
    const std::string tenant(200, 't');  // a long key: about 350 bytes a command
    int done = 0, from_redis = 0;
    {
        frozen f{redis};
        for (int i = 0; i < in_flight; ++i)
            asio::co_spawn(io, async_limiter.async_try_acquire_for(tenant),
                           [&](std::exception_ptr e, rate_limit_result x) {
                               ++done;
                               from_redis += !e && x.source == decided_by::redis ? 1 : 0;
                           });
        const auto end = std::chrono::steady_clock::now() + 300ms;
        while (std::chrono::steady_clock::now() < end) {
            io.restart();
            io.run_one_for(10ms);
        }
        CHECK(done == 0);
    }
    run_until(io, [&] { return done == in_flight; }, 60s);
    CHECK(from_redis == in_flight);
    CHECK(shared.metrics().store_failures == 0);
}

TEST_CASE("redis asio adapter: a command larger than the socket takes is written in parts, as the peer reads") {
    // A listener whose connection reads nothing at first, with a small
    // receive buffer: the socket takes a part of an 8 MB command at once.
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener >= 0);
    const int small = 4096;
    ::setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 1) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);

    asio::io_context io;
    const auto strand = asio::make_strand(io.get_executor());
    redisAsyncContext* ac = redisAsyncConnect("127.0.0.1", ntohs(addr.sin_port));
    REQUIRE(ac != nullptr);
    REQUIRE(ac->err == 0);
    static bool connected = false;
    connected = false;
    asio::post(strand, [&] {
        resil::redis::detail::asio_adapter::attach(ac, strand);
        redisAsyncSetConnectCallback(ac, [](const redisAsyncContext*, int status) { connected = status == REDIS_OK; });
    });
    run_until(io, [&] { return connected; });
    const int peer = ::accept(listener, nullptr, nullptr);
    REQUIRE(peer >= 0);

    const std::string value(8 << 20, 'v');
    const std::string encoded = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
    bool queued = false;
    asio::post(strand, [&] {
        resil::redis::detail::asio_adapter::hold_writes(ac);
        queued = redisAsyncCommand(ac, nullptr, nullptr, "SET k %b", value.data(), value.size()) == REDIS_OK;
        resil::redis::detail::asio_adapter::write_held(ac);
    });
    run_until(io, [&] { return queued; });
    // The peer reads everything, while this thread runs the io_context.
    std::atomic<std::size_t> received{0};
    std::string head;
    std::thread reader([&] {
        char buf[64 * 1024];
        while (received.load() < encoded.size()) {
            const auto n = ::recv(peer, buf, sizeof buf, 0);
            if (n <= 0) break;
            if (head.size() < 64) head.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), 64 - head.size()));
            received.fetch_add(static_cast<std::size_t>(n));
        }
    });
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (received.load() < encoded.size() && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_one_for(10ms);
    }
    ::shutdown(peer, SHUT_RDWR);
    reader.join();
    CHECK(received.load() == encoded.size());
    CHECK(head == encoded.substr(0, 64));
    bool freed = false;
    asio::post(strand, [&] {
        redisAsyncFree(ac);
        freed = true;
    });
    run_until(io, [&] { return freed; });
    ::close(peer);
    ::close(listener);
}
