// The key-affinity policies (ring_hash, maglev, rendezvous): a pick for a
// key and the lease's release, over 4, 16 and 100 endpoints, with and
// without the load bound, side by side with one clock read
// (resil::steady_clock) in the same run; and, once each, the figures the
// policies are chosen by: keys remapped when one of N endpoints leaves, and
// the peak load in flight ÷ the average on a Zipf key distribution.
//
// Names follow bench/README.md: <group>/resil and <group>/baseline_<what>.
// The figures are counters of one-iteration benchmarks (exact: fixed keys,
// fixed draws), the same as tests/balancer_affinity.cpp checks.
#include "bench_support.hpp"

#include <resil/balancer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace {

using resil::affinity_key;
using resil::balancing_policy;

std::vector<resil::endpoint> replicas(int n) {
    std::vector<resil::endpoint> out;
    for (int i = 0; i < n; ++i) out.push_back({.address = "10.0.0." + std::to_string(i) + ":8080"});
    return out;
}

/// 4096 keys' hashes, walked in turn by the picks.
const std::vector<affinity_key>& keys() {
    static const auto k = [] {
        std::vector<affinity_key> out;
        for (int i = 0; i < 4096; ++i) out.emplace_back("user-" + std::to_string(i * 7919));
        return out;
    }();
    return k;
}

template <balancing_policy P>
void pick(benchmark::State& state) {
    const auto n = static_cast<int>(state.range(0));
    const double factor = state.range(1) != 0 ? 1.25 : 0.0;
    resil::balancer lb{replicas(n), {.policy = P, .affinity = {.load_bound_factor = factor}}};
    const auto now = resil::steady_clock{}.now();
    const auto& k = keys();
    std::size_t i = 0;
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto lease = lb.pick(now, k[i++ & 4095]);
        benchmark::DoNotOptimize(lease);
    }
    resil_bench::report_allocations(state, before);
}

/// The same with the key's text hashed in the loop (XXH64 of 9-10 bytes).
void pick_hashing(benchmark::State& state) {
    resil::balancer lb{replicas(16), {.policy = balancing_policy::maglev}};
    const auto now = resil::steady_clock{}.now();
    std::vector<std::string> text;
    for (int i = 0; i < 4096; ++i) text.push_back("user-" + std::to_string(i * 7919));
    std::size_t i = 0;
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto lease = lb.pick(now, affinity_key{text[i++ & 4095]});
        benchmark::DoNotOptimize(lease);
    }
    resil_bench::report_allocations(state, before);
}

void clock_read(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

/// Share of 10^5 keys that move when the endpoint in the middle of N leaves.
template <balancing_policy P>
void remapped(benchmark::State& state) {
    const auto n = static_cast<int>(state.range(0));
    constexpr int count = 100000;
    double moved = 0, others = 0;
    for (auto _ : state) {
        auto list = replicas(n);
        resil::balancer lb{list, {.policy = P}};
        std::vector<std::string> home;
        for (int k = 0; k < count; ++k) home.push_back(lb.pick(resil::time_point{}, affinity_key{k}).address());
        const auto leaving = list[static_cast<std::size_t>(n / 2)].address;
        list.erase(list.begin() + n / 2);
        lb.replace(list);
        int m = 0, o = 0;
        for (int k = 0; k < count; ++k)
            if (lb.pick(resil::time_point{}, affinity_key{k}).address() != home[static_cast<std::size_t>(k)]) {
                ++m;
                if (home[static_cast<std::size_t>(k)] != leaving) ++o;
            }
        moved = 100.0 * m / count;
        others = 100.0 * o / count;
    }
    state.counters["moved_%"] = moved;
    state.counters["1/N_%"] = 100.0 / n;
    state.counters["others_moved_%"] = others;
}

/// Zipf (s = 1.1, 10^5 keys) calls, 160 in flight over 16 endpoints, 10^5
/// calls: the most calls in flight on one endpoint ÷ the average (10).
template <balancing_policy P>
void zipf_load(benchmark::State& state) {
    const double factor = state.range(0) != 0 ? 1.25 : 0.0;
    constexpr int n = 16, count = 100000, calls = 100000, window = 160;
    std::vector<double> cdf(count);
    double sum = 0;
    for (int r = 0; r < count; ++r) cdf[static_cast<std::size_t>(r)] = (sum += 1.0 / std::pow(r + 1.0, 1.1));
    for (auto& c : cdf) c /= sum;
    double ratio = 0, calls_ratio = 0;
    for (auto _ : state) {
        resil::balancer lb{replicas(n), {.policy = P, .affinity = {.load_bound_factor = factor}}};
        std::uint64_t x = 1;
        std::deque<resil::endpoint_lease> in_flight;
        std::vector<std::uint32_t> on(n);  // calls in flight per endpoint, by lease index
        std::uint32_t peak = 0;
        for (int i = 0; i < calls; ++i) {
            if (in_flight.size() == window) {
                --on[in_flight.front().index()];
                in_flight.pop_front();
            }
            auto z = (x += 0x9E3779B97F4A7C15ULL);  // splitmix64
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
            z ^= z >> 31;
            const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
            const auto rank = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
            in_flight.push_back(lb.pick(resil::time_point{}, affinity_key{static_cast<std::uint64_t>(rank)}));
            ++on[in_flight.back().index()];
            if (i < window) continue;
            peak = std::max(peak, *std::max_element(on.begin(), on.end()));
        }
        ratio = peak / (static_cast<double>(window) / n);
        std::uint64_t top = 0;
        for (const auto& e : lb.picks()) top = std::max(top, e.picks);
        calls_ratio = static_cast<double>(top) / (static_cast<double>(calls) / n);
    }
    state.counters["peak_in_flight/avg"] = ratio;
    state.counters["busiest_calls/avg"] = calls_ratio;
}

}  // namespace

// Pick cost: args {N, bounded}.
#define RESIL_BENCH_KEYED(group, policy)                                                                              \
    BENCHMARK(clock_read)->Name(group "/baseline_clock_read");                                                       \
    BENCHMARK(pick<policy>)->Name(group "/resil")->ArgNames({"N", "bound"})->Args({4, 0})->Args({16, 0})->Args(       \
        {100, 0})->Args({16, 1})->Args({100, 1})

RESIL_BENCH_KEYED("ring_hash", balancing_policy::ring_hash);
RESIL_BENCH_KEYED("maglev", balancing_policy::maglev);
RESIL_BENCH_KEYED("rendezvous", balancing_policy::rendezvous);
BENCHMARK(clock_read)->Name("maglev_hashing_key/baseline_clock_read");
BENCHMARK(pick_hashing)->Name("maglev_hashing_key/resil");

BENCHMARK(remapped<balancing_policy::ring_hash>)->Name("remapped/ring_hash")->ArgName("N")->Arg(4)->Arg(16)->Arg(100)->Iterations(1);
BENCHMARK(remapped<balancing_policy::maglev>)->Name("remapped/maglev")->ArgName("N")->Arg(4)->Arg(16)->Arg(100)->Iterations(1);
BENCHMARK(remapped<balancing_policy::rendezvous>)->Name("remapped/rendezvous")->ArgName("N")->Arg(4)->Arg(16)->Arg(100)->Iterations(1);
BENCHMARK(zipf_load<balancing_policy::ring_hash>)->Name("zipf_load/ring_hash")->ArgName("bound")->Arg(0)->Arg(1)->Iterations(1);
BENCHMARK(zipf_load<balancing_policy::maglev>)->Name("zipf_load/maglev")->ArgName("bound")->Arg(0)->Arg(1)->Iterations(1);
BENCHMARK(zipf_load<balancing_policy::rendezvous>)->Name("zipf_load/rendezvous")->ArgName("bound")->Arg(0)->Arg(1)->Iterations(1);

BENCHMARK_MAIN();
