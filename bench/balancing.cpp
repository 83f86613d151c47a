// A balancer's pick (and the lease's release) per policy over 4 endpoints,
// with 1 and 2 threads sharing one balancer, side by side with the same
// picker behind one std::mutex, and with one clock read. The pick is given
// a time reading (as a pipeline passes its own), so no clock is read inside.
//
// Names follow bench/README.md: <group>/resil and <group>/baseline_<what>,
// compared within a group. The floor/ group has baselines only: what any
// lock-free picker counting calls in flight pays, and what a lock adds.
#include "bench_support.hpp"

#include <resil/balancer.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace {

const std::vector<resil::endpoint> replicas{{.address = "10.0.0.1:80"}, {.address = "10.0.0.2:80"},
                                            {.address = "10.0.0.3:80"}, {.address = "10.0.0.4:80"}};

resil::balancer& shared(resil::balancing_policy p) {
    static resil::balancer rr{replicas, {.policy = resil::balancing_policy::round_robin}};
    static resil::balancer random{replicas, {.policy = resil::balancing_policy::random}};
    static resil::balancer least{replicas, {.policy = resil::balancing_policy::least_outstanding}};
    static resil::balancer p2c{replicas, {.policy = resil::balancing_policy::power_of_two_choices}};
    static resil::balancer ewma{replicas, {.policy = resil::balancing_policy::peak_ewma}};
    switch (p) {
        case resil::balancing_policy::round_robin: return rr;
        case resil::balancing_policy::random: return random;
        case resil::balancing_policy::least_outstanding: return least;
        case resil::balancing_policy::power_of_two_choices: return p2c;
        case resil::balancing_policy::peak_ewma: break;
        case resil::balancing_policy::ring_hash:
        case resil::balancing_policy::maglev:
        case resil::balancing_policy::rendezvous: break;  // measured with their keys by bench_affinity
    }
    return ewma;
}

std::mutex picks_mutex;

template <resil::balancing_policy P, bool Locked>
void pick(benchmark::State& state) {
    auto& lb = shared(P);
    const auto now = resil::steady_clock{}.now();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        if constexpr (Locked) {
            std::lock_guard lock(picks_mutex);
            auto lease = lb.pick(now);
            benchmark::DoNotOptimize(lease);
        } else {
            auto lease = lb.pick(now);
            benchmark::DoNotOptimize(lease);
        }
    }
    resil_bench::report_allocations(state, before);
}

// The floor of any lock-free picker that balances on calls in flight: the
// chosen endpoint's count goes up at the pick and down at the release, one
// atomic read-modify-write each, whatever else the pick does.
alignas(128) std::atomic<std::uint32_t> in_flight{0};
void in_flight_pair(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        in_flight.fetch_add(1, std::memory_order_relaxed);
        benchmark::ClobberMemory();
        in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
    resil_bench::report_allocations(state, before);
}

// What the locked picker adds to a pick: an empty critical section.
void lock_unlock(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        std::lock_guard lock(picks_mutex);
        benchmark::ClobberMemory();
    }
    resil_bench::report_allocations(state, before);
}

void clock_read(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

using resil::balancing_policy;

}  // namespace

// Once, not per policy, on 1 thread: there the locked picker costs a pick
// plus lock_unlock, so a pick at most 0.5x of it must cost at most
// lock_unlock, and in_flight_pair is already most of that.
BENCHMARK(in_flight_pair)->Name("floor/baseline_in_flight_pair");
BENCHMARK(lock_unlock)->Name("floor/baseline_lock_unlock");

#define RESIL_BENCH_POLICY(group, policy)                                                                    \
    BENCHMARK(clock_read)->Name(group "/baseline_clock_read")->Threads(1)->Threads(2);                       \
    BENCHMARK(pick<policy, true>)->Name(group "/baseline_mutex")->Threads(1)->Threads(2);                    \
    BENCHMARK(pick<policy, false>)->Name(group "/resil")->Threads(1)->Threads(2)

RESIL_BENCH_POLICY("round_robin", balancing_policy::round_robin);
RESIL_BENCH_POLICY("random", balancing_policy::random);
RESIL_BENCH_POLICY("least_outstanding", balancing_policy::least_outstanding);
RESIL_BENCH_POLICY("p2c", balancing_policy::power_of_two_choices);
RESIL_BENCH_POLICY("peak_ewma", balancing_policy::peak_ewma);

BENCHMARK_MAIN();
