// One breaker, budget and limit serving a blocking thread and asynchronous
// callers at once (run under TSan in CI): every call is counted once, by the
// same shared state, whichever pipeline made it.
#include <resil/asio.hpp>
#include <resil/resil.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;

namespace {

resil::verdict judge(int status) { return status >= 500 ? resil::verdict::retryable : resil::verdict::success; }

}  // namespace

TEST_CASE("asio shared state: one breaker, budget and limit serve a blocking thread and async callers at once") {
    // Counting calls in a window that never decides: every result lands in it.
    resil::circuit_breaker breaker{{.failure_ratio = 0.99, .window = 60s, .min_calls = 100000}};
    resil::retry_budget budget{{.ratio = 0.5, .min_per_second = 1000}};
    resil::concurrency_limit limit{{.max_in_flight = 1000}};
    const resil::retry_options retries{.max_attempts = 2, .backoff = resil::full_jitter{10us, 20us}, .budget = &budget};

    auto blocking = resil::pipeline(resil::retry_policy{retries}, std::ref(breaker), std::ref(limit));
    auto async = resil::asio::pipeline(resil::retry_policy{retries}, std::ref(breaker), std::ref(limit));

    constexpr int blocking_calls = 400;
    constexpr int async_tasks = 8;
    constexpr int calls_per_task = 50;
    std::atomic<std::uint64_t> attempts{0};
    std::atomic<int> async_done{0};

    std::thread sync_thread([&] {
        for (int i = 0; i < blocking_calls; ++i) {
            auto out = blocking([&] { return attempts.fetch_add(1) % 3 == 0 ? 503 : 200; }, judge);
            (void)out;
        }
    });
    ::asio::io_context io;
    for (int t = 0; t < async_tasks; ++t) {
        ::asio::co_spawn(
            io,
            [&]() -> ::asio::awaitable<void> {
                for (int i = 0; i < calls_per_task; ++i) {
                    auto out = co_await async(
                        [&]() -> ::asio::awaitable<int> {
                            // A turn of the loop between attempts: tasks interleave.
                            co_await ::asio::post(co_await ::asio::this_coro::executor, ::asio::use_awaitable);
                            co_return attempts.fetch_add(1) % 3 == 0 ? 503 : 200;
                        },
                        judge);
                    (void)out;
                }
                async_done.fetch_add(1);
            },
            ::asio::detached);
    }
    std::thread async_thread([&] { io.run(); });
    sync_thread.join();
    async_thread.join();

    CHECK(async_done.load() == async_tasks);
    const auto m = breaker.metrics();
    // Each attempt was recorded once by the one breaker, whichever pipeline ran it.
    CHECK(m.calls == attempts.load());
    CHECK(m.state == resil::circuit_state::closed);
    CHECK(limit.in_flight() == 0);
    CHECK(limit.admitted() == attempts.load());
}

TEST_CASE("asio shared state: a breaker opened by blocking callers rejects async callers at once") {
    resil::circuit_breaker breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3,
                                    .open_for = 30s}};
    auto blocking = resil::pipeline(std::ref(breaker));
    auto async = resil::asio::pipeline(std::ref(breaker));
    std::thread opener([&] {
        for (int i = 0; i < 3; ++i) (void)blocking([] { return 503; }, judge);
    });
    opener.join();
    REQUIRE(breaker.state() == resil::circuit_state::open);

    ::asio::io_context io;
    int ran = 0;
    std::optional<resil::outcome<int>> out;
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            out.emplace(co_await async(
                [&]() -> ::asio::awaitable<int> {
                    ++ran;
                    co_return 200;
                },
                judge));
        },
        ::asio::detached);
    io.run();
    REQUIRE(out);
    CHECK(out->reason() == resil::reason::circuit_open);
    CHECK(out->retry_after().has_value());
    CHECK(ran == 0);
}

TEST_CASE("asio shared state: waiting for a token holds no thread: other work runs meanwhile") {
    // One token every 50 ms; the second call waits for it on a timer.
    resil::token_bucket bucket{{.rate = 20, .burst = 1, .max_wait = 1s}};
    auto async = resil::asio::pipeline(std::ref(bucket));
    ::asio::io_context io;
    int other_work = 0;
    std::vector<resil::outcome<int>> outs;
    std::chrono::steady_clock::duration waited{};
    int ticks_during_wait = 0;
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            auto answer = []() -> ::asio::awaitable<int> { co_return 200; };
            outs.push_back(co_await async(answer, judge));
            const auto t0 = std::chrono::steady_clock::now();
            const int ticks_before = other_work;
            outs.push_back(co_await async(answer, judge));
            waited = std::chrono::steady_clock::now() - t0;
            ticks_during_wait = other_work - ticks_before;
        },
        ::asio::detached);
    // Meanwhile, on the same single thread: ticks every millisecond.
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            ::asio::steady_timer tick{co_await ::asio::this_coro::executor};
            for (int i = 0; i < 20; ++i) {
                tick.expires_after(1ms);
                co_await tick.async_wait(::asio::use_awaitable);
                ++other_work;
            }
        },
        ::asio::detached);
    io.run();
    REQUIRE(outs.size() == 2);
    CHECK(outs[0].ok());
    CHECK(outs[1].ok());
    CHECK(waited >= 40ms);  // the token exists 50 ms after the first (less what the first call took)
    CHECK(waited < 2s);
    CHECK(other_work == 20);
    CHECK(ticks_during_wait >= 10);  // the one thread ran other work while the call waited
}
