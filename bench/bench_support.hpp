// Shared by resil's benchmarks: a counting global operator new, so each
// benchmark reports allocations per operation next to its time.
// Include from exactly one translation unit per benchmark binary (each
// bench/<name>.cpp is its own binary).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "../tests/support/allocation_counter.hpp"

namespace resil_bench {
using resil_test::allocations;

/// Reports allocations per iteration as the counter "allocs/op"; call once at
/// the end of a benchmark body, with the count read before its loop.
inline void report_allocations(benchmark::State& state, std::uint64_t before) {
    const auto n = allocations.load(std::memory_order_relaxed) - before;
    state.counters["allocs/op"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kAvgIterations);
}
}  // namespace resil_bench
