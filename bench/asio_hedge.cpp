// What resil::asio::hedged costs per call around an awaitable that is ready
// at once, against co_await of that awaitable alone, in one coroutine on one
// io_context: the call's shared state, one spawned copy, the hedge's timer
// set and cancelled; and a call whose hedge fires at once (delay 0) while
// copy 0 waits: two copies, the first cancelled. allocs/op counts every operator new (see
// asio_pipeline.cpp). Around a network call (tens of microseconds and more)
// this is the cost of hedging it at all.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "asio_bench_support.hpp"

#include <resil/asio/hedge.hpp>
#include <resil/hedge.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>

#include <chrono>
#include <system_error>
#include <type_traits>

using namespace std::chrono_literals;

using resil_bench::no_op;
using resil_bench::ready;
using resil_bench::run_in_coroutine;

static void await_ready_alone(benchmark::State& state) {
    run_in_coroutine(state, [](int i) { return ready(i); });
}
BENCHMARK(await_ready_alone)->Name("hedged_ready/baseline_co_await");

static void hedged_no_copy(benchmark::State& state) {
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 1s}};
    resil::context ctx;
    ctx.mark_idempotent();
    run_in_coroutine(state, [&](int i) {
        return resil::asio::hedged(hedge, ctx, [i](resil::context& c) {
            c.mark_repeatable(true);  // as a client does
            return ready(i);
        }, resil::always_success);
    });
}
BENCHMARK(hedged_no_copy)->Name("hedged_ready/resil_hedged_answered_before_the_delay");

// Copy 0 parks on a timer; the hedge (delay 0) starts copy 1, which answers
// at once and wins; copy 0 is cancelled. hedges/op and cancelled/op show it.
static void hedged_one_copy(benchmark::State& state) {
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 0s}};
    resil::context ctx;
    ctx.mark_idempotent();
    long hedges = 0;
    long cancelled = 0;
    auto count = [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, resil::events::hedge_started>) ++hedges;
        if constexpr (std::is_same_v<E, resil::events::hedge_cancelled>) ++cancelled;
    };
    run_in_coroutine(state, [&](int i) {
        return resil::asio::hedged(
            hedge, ctx,
            [i, copy = 0](resil::context& c) mutable -> ::asio::awaitable<int> {
                c.mark_repeatable(true);  // as a client does
                if (copy++ == 0) {
                    ::asio::steady_timer parked(co_await ::asio::this_coro::executor, 1h);
                    std::error_code ec;
                    co_await parked.async_wait(::asio::redirect_error(::asio::use_awaitable, ec));
                }
                co_return no_op(i);
            },
            resil::always_success, count);
    });
    state.counters["hedges/op"] = benchmark::Counter(static_cast<double>(hedges), benchmark::Counter::kAvgIterations);
    state.counters["cancelled/op"] =
        benchmark::Counter(static_cast<double>(cancelled), benchmark::Counter::kAvgIterations);
}
BENCHMARK(hedged_one_copy)->Name("hedged_ready/resil_hedged_delay_0");

BENCHMARK_MAIN();
