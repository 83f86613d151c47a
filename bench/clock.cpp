// The floor every time-aware policy stands on: one read of the clock, through
// resil::steady_clock and resil::coarse_steady_clock next to a direct
// std::chrono::steady_clock::now().
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/clock.hpp>
#include <resil/coarse_clock.hpp>

#include <chrono>

namespace {

template <class Clock>
void read_clock(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    Clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

void std_steady_clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
    resil_bench::report_allocations(state, before);
}

}  // namespace

BENCHMARK(std_steady_clock_now)->Name("clock_read/baseline_std_steady_clock");
BENCHMARK(read_clock<resil::steady_clock>)->Name("clock_read/resil_steady_clock");
// Stale by up to one scheduler tick; what a breaker's or budget's window may use.
BENCHMARK(read_clock<resil::coarse_steady_clock>)->Name("clock_read/resil_coarse_steady_clock");

BENCHMARK_MAIN();
