// What the pipeline costs per call on a callable that succeeds at once,
// against calling the callable directly. A pipeline with a deadline must read
// the clock, so steady_clock::now() is here as the floor.
#include "bench_support.hpp"

#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>

#include <chrono>

using namespace std::chrono_literals;

namespace {

// The callable: opaque enough that the compiler cannot delete the call.
int no_op(int x) {
    benchmark::DoNotOptimize(x);
    return x;
}

template <class Body>
void run(benchmark::State& state, Body body) {
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) benchmark::DoNotOptimize(body(++i));
    resil_bench::report_allocations(state, before);
}

}  // namespace

static void clock_read_floor(benchmark::State& state) {
    resil::steady_clock clock;
    run(state, [&](int) { return clock.now(); });
}
BENCHMARK(clock_read_floor);

static void direct_call(benchmark::State& state) {
    run(state, [](int i) { return no_op(i); });
}
BENCHMARK(direct_call);

static void retry_policy_alone(benchmark::State& state) {
    auto pipe = resil::pipeline(resil::retry_policy{});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success{}).value(); });
}
BENCHMARK(retry_policy_alone);

static void retry_budget_alone(benchmark::State& state) {
    resil::retry_budget budget;
    resil::steady_clock clock;
    run(state, [&](int i) {
        budget.deposit(clock.now());
        return no_op(i);
    });
}
BENCHMARK(retry_budget_alone);

static void retry_with_budget(benchmark::State& state) {
    resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success{}).value(); });
}
BENCHMARK(retry_with_budget);

static void deadline_retry_budget_fallback(benchmark::State& state) {
    resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                                resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success{}).value(); });
}
BENCHMARK(deadline_retry_budget_fallback);

// Shared budget, two threads: the cost of contention on its current slot.
static void retry_with_budget_2_threads(benchmark::State& state) {
    static resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success{}).value(); });
}
BENCHMARK(retry_with_budget_2_threads)->Threads(2);

BENCHMARK_MAIN();
