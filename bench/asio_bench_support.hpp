// What the Asio benchmarks share: an awaitable that is ready at once around an
// opaque call, and a benchmark loop run inside one coroutine on one io_context,
// with every allocation counted. Include it first: the macro below must come
// before any Asio header.
#pragma once

// Asio takes the memory of frames and handlers from std::aligned_alloc where
// it can, which the counting operator new does not see: without it, Asio
// falls back to operator new, and every allocation is counted.
#define ASIO_DISABLE_STD_ALIGNED_ALLOC 1

#include "bench_support.hpp"

#include <resil/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

namespace resil_bench {

// The dependency: opaque enough that the compiler cannot delete the call.
inline int no_op(int x) {
    benchmark::DoNotOptimize(x);
    return x;
}

inline ::asio::awaitable<int> ready(int x) { co_return no_op(x); }

// Runs the benchmark loop inside one coroutine: each iteration awaits body(i).
// The io_context is run by this thread alone (hint 1: hedged() needs no strand).
template <class Body>
void run_in_coroutine(benchmark::State& state, Body body) {
    ::asio::io_context io{1};
    const auto before = allocations.load();
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            int i = 0;
            for (auto _ : state) benchmark::DoNotOptimize(co_await body(++i));
        },
        ::asio::detached);
    io.run();
    report_allocations(state, before);
}

}  // namespace resil_bench
