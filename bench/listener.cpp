// What listening costs per call, on a pipeline of fallback → deadline →
// retry (budget) → breaker → timeout around a callable that succeeds at once:
//
//   no_listener              the default: every emission compiles away
//   noop_listener            a struct handling every event with an empty body
//   noop_listener_timed      the same, asking for attempt durations
//   metrics_listener         resil::metrics counting (relaxed atomics)
//
// An event costs nothing until its handler does something, so a no-op
// listener costs what no listener costs. A listener that asks for attempt
// durations (times_attempts) makes the pipeline read the clock before and
// after each attempt: that is the price of the two reads. Compare each line
// with no_listener; direct_call is the floor.
//
// The `_shared` rows run 1 and 2 threads on one dependency (one metrics
// object, budget and breaker): with 2 threads, what their shared state costs
// when two cores call at once. The `events` group feeds the metrics object
// the three events of a successful call directly, 1 and 2 threads, next to
// one atomic add per event on a counter both threads share.
#include "bench_support.hpp"

#include <resil/circuit_breaker.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/events.hpp>
#include <resil/fallback.hpp>
#include <resil/metrics.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

using namespace std::chrono_literals;
namespace events = resil::events;

namespace {

// The callable: opaque enough that the compiler cannot delete the call.
int no_op(int x) {
    benchmark::DoNotOptimize(x);
    return x;
}

struct noop_listener {
    void operator()(const events::attempt_started&) const noexcept {}
    void operator()(const events::attempt_finished&) const noexcept {}
    void operator()(const events::retry_scheduled&) const noexcept {}
    void operator()(const events::retries_exhausted&) const noexcept {}
    void operator()(const events::budget_refused&) const noexcept {}
    void operator()(const events::breaker_state_changed&) const noexcept {}
    void operator()(const events::rejected&) const noexcept {}
    void operator()(const events::fallback_used&) const noexcept {}
    void operator()(const events::call_finished&) const noexcept {}
    void operator()(const events::deadline_exceeded&) const noexcept {}
};

// The same empty handlers, asking for attempt durations.
struct noop_listener_timed : noop_listener {
    static constexpr bool times_attempts = true;
};

static_assert(resil::listens_to<noop_listener, events::attempt_finished>);
static_assert(resil::listener_times_attempts<noop_listener_timed>);
static_assert(!resil::listener_times_attempts<noop_listener>);

// Shared state of one dependency, as a service holds it.
struct dependency {
    resil::metrics metrics{"bench"};
    resil::retry_budget budget;
    resil::circuit_breaker breaker{{.on_state_change = metrics.breaker_hook()}};

    auto pipeline() {
        return resil::pipeline(resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                               resil::retry_policy{{.budget = &budget}}, std::ref(breaker),
                               resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    }
};

template <class Pipeline>
void run(benchmark::State& state, const Pipeline& pipe) {
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) {
        ++i;
        benchmark::DoNotOptimize(pipe([i] { return no_op(i); }, resil::always_success).value());
    }
    resil_bench::report_allocations(state, before);
}

}  // namespace

static void direct_call(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    int i = 0;
    for (auto _ : state) benchmark::DoNotOptimize(no_op(++i));
    resil_bench::report_allocations(state, before);
}

static void no_listener(benchmark::State& state) {
    dependency dep;
    run(state, dep.pipeline());
}
BENCHMARK(no_listener)->Name("call/baseline_no_listener");  // first: the ratio to compare by
BENCHMARK(direct_call)->Name("call/baseline_direct");

static void noop_listener_all_events(benchmark::State& state) {
    dependency dep;
    run(state, dep.pipeline().with_listener(noop_listener{}));
}
BENCHMARK(noop_listener_all_events)->Name("call/resil_noop_listener");

static void noop_listener_timing_attempts(benchmark::State& state) {
    dependency dep;
    run(state, dep.pipeline().with_listener(noop_listener_timed{}));
}
BENCHMARK(noop_listener_timing_attempts)->Name("call/resil_noop_listener_timing_attempts");

static void metrics_listener(benchmark::State& state) {
    dependency dep;
    run(state, dep.pipeline().with_listener(std::ref(dep.metrics)));
    state.counters["calls_counted"] = static_cast<double>(dep.metrics.snapshot().calls);
}
BENCHMARK(metrics_listener)->Name("call/resil_metrics_listener");

// Two threads sharing one metrics object (and breaker and budget): the cost
// of its counters' cache lines moving between cores.
static void metrics_listener_shared_2_threads(benchmark::State& state) {
    static dependency dep;
    static const auto pipe = dep.pipeline().with_listener(std::ref(dep.metrics));
    run(state, pipe);
}
BENCHMARK(metrics_listener_shared_2_threads)->Name("call/resil_metrics_listener_shared")->Threads(1)->Threads(2);

static void no_listener_shared_2_threads(benchmark::State& state) {
    static dependency dep;
    static const auto pipe = dep.pipeline();
    run(state, pipe);
}
BENCHMARK(no_listener_shared_2_threads)->Name("call/baseline_no_listener_shared")->Threads(1)->Threads(2);

// The events of one successful call, straight into one shared metrics object.
static void metrics_events(benchmark::State& state) {
    static resil::metrics m{"events"};
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        m(events::attempt_started{.attempt = 1});
        m(events::attempt_finished{.attempt = 1, .verdict = resil::verdict::success, .elapsed = 3ms});
        m(events::call_finished{.reason = resil::reason::none, .attempts = 1, .elapsed = 3ms});
    }
    resil_bench::report_allocations(state, before);
}

// The floor of counting those events in shared words: one atomic add each.
static std::atomic<std::uint64_t> shared_event_counts[3];
static void shared_atomic_adds(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state)
        for (auto& c : shared_event_counts) c.fetch_add(1, std::memory_order_relaxed);
    resil_bench::report_allocations(state, before);
}
BENCHMARK(shared_atomic_adds)->Name("events/baseline_shared_atomic_adds")->Threads(1)->Threads(2);
BENCHMARK(metrics_events)->Name("events/resil_metrics")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
