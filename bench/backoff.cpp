// Backoff delay computation, per strategy, next to the usual hand-written
// version: std::pow for the ceiling and std::uniform_real_distribution over
// std::mt19937_64 for the jitter. Retry numbers cycle through 1..8 so the
// ceiling is not folded into a constant.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/backoff.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

using namespace std::chrono_literals;

namespace {

std::uint64_t next_retry(std::uint64_t& counter) { return (counter++ & 7U) + 1U; }

template <class Strategy>
void strategy_delay(benchmark::State& state, Strategy strategy) {
    const auto before = resil_bench::allocations.load();
    resil::jitter_engine rng{42};
    std::uint64_t counter = 0;
    resil::duration previous{0};
    for (auto _ : state) {
        previous = strategy.delay(next_retry(counter), previous, rng);
        benchmark::DoNotOptimize(previous);
    }
    resil_bench::report_allocations(state, before);
}

}  // namespace

static void backoff_ceiling_doubling(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t counter = 0;
    resil::duration base = 100ms, cap = 10s;
    double multiplier = 2.0;
    benchmark::DoNotOptimize(base);
    benchmark::DoNotOptimize(cap);
    benchmark::DoNotOptimize(multiplier);
    for (auto _ : state) benchmark::DoNotOptimize(resil::backoff_ceiling(base, cap, multiplier, next_retry(counter)));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(backoff_ceiling_doubling)->Name("ceiling/resil_doubling");

static void backoff_ceiling_huge_retry(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t retry = std::numeric_limits<std::uint64_t>::max();
    resil::duration base = 100ms, cap = 10s;
    double multiplier = 1.5;
    benchmark::DoNotOptimize(base);
    benchmark::DoNotOptimize(multiplier);
    for (auto _ : state) {
        benchmark::DoNotOptimize(retry);
        benchmark::DoNotOptimize(resil::backoff_ceiling(base, cap, multiplier, retry));
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(backoff_ceiling_huge_retry)->Name("ceiling/resil_huge_retry");

// Baselines: the ceiling as usually written, min(cap, base * pow(m, n)) in
// doubles, with the multiplier a literal 2 (the compiler may use exp2) and a
// run-time value (as resil's is).
static void baseline_ceiling_std_pow_literal_2(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t counter = 0;
    double base_ms = 100.0, cap_ms = 10'000.0;
    benchmark::DoNotOptimize(base_ms);
    for (auto _ : state) {
        const auto n = static_cast<double>(next_retry(counter));
        benchmark::DoNotOptimize(std::min(cap_ms, base_ms * std::pow(2.0, n)));
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_ceiling_std_pow_literal_2)->Name("ceiling/baseline_std_pow_literal_2");

static void baseline_ceiling_std_pow_runtime_multiplier(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t counter = 0;
    double base_ms = 100.0, cap_ms = 10'000.0, multiplier = 2.0;
    benchmark::DoNotOptimize(base_ms);
    benchmark::DoNotOptimize(multiplier);
    for (auto _ : state) {
        const auto n = static_cast<double>(next_retry(counter));
        benchmark::DoNotOptimize(std::min(cap_ms, base_ms * std::pow(multiplier, n)));
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_ceiling_std_pow_runtime_multiplier)->Name("ceiling/baseline_std_pow_runtime_multiplier");

static void exponential_delay(benchmark::State& state) { strategy_delay(state, resil::exponential_backoff{}); }
BENCHMARK(exponential_delay)->Name("delay/resil_exponential");
static void full_jitter_delay(benchmark::State& state) { strategy_delay(state, resil::full_jitter{}); }
BENCHMARK(full_jitter_delay)->Name("delay/resil_full_jitter");
static void equal_jitter_delay(benchmark::State& state) { strategy_delay(state, resil::equal_jitter{}); }
BENCHMARK(equal_jitter_delay)->Name("delay/resil_equal_jitter");
static void decorrelated_jitter_delay(benchmark::State& state) { strategy_delay(state, resil::decorrelated_jitter{}); }
BENCHMARK(decorrelated_jitter_delay)->Name("delay/resil_decorrelated_jitter");

// The run-time strategy (a switch over the kind), as options hold it.
static void backoff_runtime_full_jitter_delay(benchmark::State& state) {
    resil::backoff chosen = resil::full_jitter{};
    benchmark::DoNotOptimize(chosen);
    strategy_delay(state, chosen);
}
BENCHMARK(backoff_runtime_full_jitter_delay)->Name("delay/resil_runtime_full_jitter");

static void backoff_runtime_decorrelated_delay(benchmark::State& state) {
    resil::backoff chosen = resil::decorrelated_jitter{};
    benchmark::DoNotOptimize(chosen);
    strategy_delay(state, chosen);
}
BENCHMARK(backoff_runtime_decorrelated_delay)->Name("delay/resil_runtime_decorrelated_jitter");

// Baseline: full jitter as usually hand-written with <random>.
static void baseline_full_jitter_mt19937_64_uniform_real(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::mt19937_64 rng{42};
    std::uint64_t counter = 0;
    double base_ms = 100.0, cap_ms = 1'000.0;
    benchmark::DoNotOptimize(base_ms);
    for (auto _ : state) {
        const auto n = static_cast<double>(next_retry(counter));
        const double ceiling = std::min(cap_ms, base_ms * std::pow(2.0, n));
        std::uniform_real_distribution<double> jitter(0.0, ceiling);
        benchmark::DoNotOptimize(std::chrono::duration<double, std::milli>(jitter(rng)));
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_full_jitter_mt19937_64_uniform_real)->Name("delay/baseline_full_jitter_mt19937_64_uniform_real");

// The random sources alone.
static void jitter_engine_unit_interval(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::jitter_engine rng{42};
    for (auto _ : state) benchmark::DoNotOptimize(resil::unit_interval(rng));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(jitter_engine_unit_interval)->Name("unit_interval/resil_jitter_engine");

static void baseline_mt19937_64_uniform_real(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::mt19937_64 rng{42};
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (auto _ : state) benchmark::DoNotOptimize(unit(rng));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_mt19937_64_uniform_real)->Name("unit_interval/baseline_mt19937_64_uniform_real");

static void jitter_engine_bits(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::jitter_engine rng{42};
    for (auto _ : state) benchmark::DoNotOptimize(rng());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(jitter_engine_bits)->Name("random_bits/resil_jitter_engine");

static void baseline_mt19937_64_bits(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::mt19937_64 rng{42};
    for (auto _ : state) benchmark::DoNotOptimize(rng());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_mt19937_64_bits)->Name("random_bits/baseline_mt19937_64");

static void jitter_engine_construct(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t seed = 1;
    for (auto _ : state) {
        resil::jitter_engine rng{seed++};
        benchmark::DoNotOptimize(rng);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(jitter_engine_construct)->Name("construct/resil_jitter_engine");

static void baseline_mt19937_64_construct(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    std::uint64_t seed = 1;
    for (auto _ : state) {
        std::mt19937_64 rng{seed++};
        benchmark::DoNotOptimize(rng);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_mt19937_64_construct)->Name("construct/baseline_mt19937_64");

BENCHMARK_MAIN();
