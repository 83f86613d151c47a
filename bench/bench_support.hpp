// Shared by resil's benchmarks: a counting global operator new, so each
// benchmark reports allocations per operation next to its time.
// Include from exactly one translation unit per benchmark binary (each
// bench/<name>.cpp is its own binary).
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace resil_bench {
inline std::atomic<std::uint64_t> allocations{0};

/// Reports allocations per iteration as the counter "allocs/op"; call once at
/// the end of a benchmark body, with the count read before its loop.
inline void report_allocations(benchmark::State& state, std::uint64_t before) {
    const auto n = allocations.load(std::memory_order_relaxed) - before;
    state.counters["allocs/op"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kAvgIterations);
}
}  // namespace resil_bench

// The replaceable allocation functions. g++ flags free() in a replaced
// operator delete as mismatched; here it is the matching malloc by design.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
    resil_bench::allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc{};
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return ::operator new(n);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
