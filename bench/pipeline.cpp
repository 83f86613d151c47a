// What the pipeline costs per call on a callable that succeeds at once,
// against calling the callable directly. A pipeline with a deadline must read
// the clock, so steady_clock::now() is here as the floor.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/circuit_breaker.hpp>
#include <resil/coarse_clock.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <chrono>
#include <functional>

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
BENCHMARK(clock_read_floor)->Name("call/baseline_clock_read")->Threads(1)->Threads(2);

static void direct_call(benchmark::State& state) {
    run(state, [](int i) { return no_op(i); });
}
BENCHMARK(direct_call)->Name("call/baseline_direct")->Threads(1)->Threads(2);

static void retry_policy_alone(benchmark::State& state) {
    auto pipe = resil::pipeline(resil::retry_policy{});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(retry_policy_alone)->Name("call/resil_retry");

// The budget's bookkeeping by hand, without a pipeline: one deposit (with its
// clock read) per call.
static void retry_budget_alone(benchmark::State& state) {
    resil::retry_budget budget;
    resil::steady_clock clock;
    run(state, [&](int i) {
        budget.deposit(clock.now());
        return no_op(i);
    });
}
BENCHMARK(retry_budget_alone)->Name("call/resil_budget_deposit");

static void retry_with_budget(benchmark::State& state) {
    resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(retry_with_budget)->Name("call/resil_retry_budget");

static void deadline_retry_budget_fallback(benchmark::State& state) {
    resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                                resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(deadline_retry_budget_fallback)->Name("call/resil_fallback_deadline_retry_budget");

// Shared budget, two threads: the cost of contention on its current slot.
static void retry_with_shared_budget(benchmark::State& state) {
    static resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(retry_with_shared_budget)->Name("call/resil_retry_shared_budget")->Threads(2);

// The pipeline a service puts around each call: fallback → deadline →
// retry (budget) → breaker → timeout, sharing one budget and one breaker
// between its threads as a service does. On the steady clock the policies
// share one reading per call; on the coarse clock (pipeline and breaker
// both) that reading costs a few nanoseconds.
namespace {
template <class Clock>
struct dependency {
    resil::retry_budget budget;
    resil::basic_circuit_breaker<Clock> breaker;
    auto pipeline() {
        return resil::pipeline(Clock{}, resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                               resil::retry_policy{{.budget = &budget}}, std::ref(breaker),
                               resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    }
};
}  // namespace

static void five_clock_read(benchmark::State& state) {
    resil::steady_clock clock;
    run(state, [&](int) { return clock.now(); });
}
BENCHMARK(five_clock_read)->Name("five_policies/baseline_clock_read")->Threads(1)->Threads(2);

static void five_coarse_clock_read(benchmark::State& state) {
    resil::coarse_steady_clock clock;
    run(state, [&](int) { return clock.now(); });
}
BENCHMARK(five_coarse_clock_read)->Name("five_policies/baseline_coarse_clock_read")->Threads(1)->Threads(2);

static void five_policies(benchmark::State& state) {
    static dependency<resil::steady_clock> dep;  // shared by the benchmark's threads
    const auto pipe = dep.pipeline();
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(five_policies)->Name("five_policies/resil")->Threads(1)->Threads(2);

static void five_policies_coarse(benchmark::State& state) {
    static dependency<resil::coarse_steady_clock> dep;
    const auto pipe = dep.pipeline();
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(five_policies_coarse)->Name("five_policies/resil_coarse_clock")->Threads(1)->Threads(2);

static void three_policies(benchmark::State& state) {
    static resil::retry_budget budget;
    const auto pipe = resil::pipeline(resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                                      resil::retry_policy{{.budget = &budget}});
    run(state, [&](int i) { return pipe([i] { return no_op(i); }, resil::always_success).value(); });
}
BENCHMARK(three_policies)->Name("five_policies/resil_without_breaker_timeout")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
