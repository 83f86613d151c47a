// What the asynchronous pipeline (resil/asio) costs per call around an
// awaitable that is ready at once, against co_await of that awaitable alone,
// both in one coroutine on one io_context. allocs/op counts every operator
// new: a coroutine frame comes from Asio's per-thread recycling cache
// (ASIO_RECYCLING_ALLOCATOR_CACHE_SIZE frames, default 2), so a call whose
// frames outnumber the cache allocates the rest.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.

#include "asio_bench_support.hpp"

#include <resil/circuit_breaker.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <chrono>
#include <functional>

using namespace std::chrono_literals;

using resil_bench::no_op;
using resil_bench::ready;
using resil_bench::run_in_coroutine;

static void await_ready_alone(benchmark::State& state) {
    run_in_coroutine(state, [](int i) { return ready(i); });
}
BENCHMARK(await_ready_alone)->Name("await_ready/baseline_co_await");

static void retry_alone(benchmark::State& state) {
    auto pipe = resil::asio::pipeline(resil::retry_policy{});
    run_in_coroutine(state, [&](int i) { return pipe([i] { return ready(i); }, resil::always_success); });
}
BENCHMARK(retry_alone)->Name("await_ready/resil_retry");

static void retry_breaker_timeout(benchmark::State& state) {
    resil::circuit_breaker breaker;
    auto pipe = resil::asio::pipeline(resil::retry_policy{}, std::ref(breaker), resil::timeout_policy{{.total = 1s}});
    run_in_coroutine(state, [&](int i) { return pipe([i] { return ready(i); }, resil::always_success); });
}
BENCHMARK(retry_breaker_timeout)->Name("await_ready/resil_retry_breaker_timeout");

// The same three policies in the blocking pipeline around a plain call, for scale.
static void blocking_retry_breaker_timeout(benchmark::State& state) {
    resil::circuit_breaker breaker;
    auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(breaker), resil::timeout_policy{{.total = 1s}});
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) {
        ++i;
        benchmark::DoNotOptimize(pipe([i] { return no_op(i); }, resil::always_success).value());
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(blocking_retry_breaker_timeout)->Name("await_ready/baseline_blocking_pipeline_plain_call");

// A whole call through a completion token (a callback): async_call spawns the
// call's coroutine, against co_spawn of the ready awaitable with a callback.
static void spawned_alone(benchmark::State& state) {
    ::asio::io_context io;
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) {
        ::asio::co_spawn(io, ready(++i), [](std::exception_ptr, int v) { benchmark::DoNotOptimize(v); });
        io.restart();
        io.run();
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(spawned_alone)->Name("callback/baseline_co_spawn");

static void spawned_pipeline(benchmark::State& state) {
    ::asio::io_context io;
    resil::circuit_breaker breaker;
    auto pipe = resil::asio::pipeline(resil::retry_policy{}, std::ref(breaker), resil::timeout_policy{{.total = 1s}});
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) {
        ++i;
        resil::asio::async_call(pipe, io.get_executor(), [i] { return ready(i); }, resil::always_success,
                                [](std::exception_ptr, resil::outcome<int> out) { benchmark::DoNotOptimize(*out); });
        io.restart();
        io.run();
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(spawned_pipeline)->Name("callback/resil_async_call_retry_breaker_timeout");

BENCHMARK_MAIN();
