// The floor every time-aware policy stands on: one read of the clock.
#include "bench_support.hpp"

#include <resil/clock.hpp>

#include <chrono>

static void steady_clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(steady_clock_now);

static void std_steady_clock_now(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(std_steady_clock_now);

BENCHMARK_MAIN();
