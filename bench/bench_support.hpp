// Shared by resil's benchmarks: a counting global operator new, so each
// benchmark reports allocations per operation next to its time.
// Include from exactly one translation unit per benchmark binary (each
// bench/<name>.cpp is its own binary).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../tests/support/allocation_counter.hpp"

namespace resil_bench {
using resil_test::allocations;

/// Reports allocations per iteration as the counter "allocs/op"; call once at
/// the end of a benchmark body, with the count read before its loop.
inline void report_allocations(benchmark::State& state, std::uint64_t before) {
    const auto n = allocations.load(std::memory_order_relaxed) - before;
    state.counters["allocs/op"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kAvgIterations);
}

/// The median of `v`: the mean of the two middle values for an even count; 0 when empty.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t half = v.size() / 2;
    return v.size() % 2 == 1 ? v[half] : (v[half - 1] + v[half]) / 2;
}

/// The value of nearest rank round(p × (n − 1)) in `v` sorted, for p in
/// [0, 1] (quartiles, percentiles of repeated ratios); 0 when empty.
inline double quantile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1) + 0.5)];
}
}  // namespace resil_bench
