// What hedging adds to every call: recording the attempt's latency in the
// tracker the p95 is learnt from, and asking the hedge for its delay,
// uncontended and with 2 threads on one shared tracker. Side by side with a
// clock read (each call pays one anyway), and with the same histogram kept
// plainly behind one std::mutex.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/clock.hpp>
#include <resil/hedge.hpp>
#include <resil/latency_tracker.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace {

using namespace std::chrono_literals;

// The baseline: one histogram of the same buckets, four slots of a quarter
// window, behind one lock.
class mutex_latency_histogram {
public:
    void record(resil::time_point now, resil::duration latency) {
        const auto epoch = static_cast<std::uint64_t>(now.time_since_epoch() / 2500ms);
        std::lock_guard lock(mutex_);
        auto& s = slots_[epoch % 4];
        if (s.epoch != epoch) s = {epoch, {}};
        ++s.counts[resil::latency_tracker::bucket_of(latency)];
    }

private:
    struct slot {
        std::uint64_t epoch = ~std::uint64_t{0};
        std::array<std::uint32_t, resil::latency_tracker::buckets> counts{};
    };
    std::mutex mutex_;
    std::array<slot, 4> slots_{};
};

resil::latency_tracker tracker{10s};
mutex_latency_histogram locked;
resil::hedge_policy adaptive{{.percentile = 0.95}};
resil::hedge_policy fixed{{.delay = 20ms}};

// A latency that varies a little from call to call, as real ones do, so
// that the counts written are spread over a few buckets.
resil::duration latency_of(std::uint64_t i) { return 1ms + std::chrono::microseconds{(i * 37) % 400}; }

void clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

template <class Histogram>
void records(benchmark::State& state, Histogram& h) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    std::uint64_t i = 0;
    for (auto _ : state) h.record(clock.now(), latency_of(++i));
    resil_bench::report_allocations(state, before);
}

void tracker_record(benchmark::State& s) { records(s, tracker); }
void mutex_record(benchmark::State& s) { records(s, locked); }

// A call's hedge bookkeeping: its delay asked before it starts, its latency
// recorded when it ends.
void hedge_call(benchmark::State& state, const resil::hedge_policy& h) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    std::uint64_t i = 0;
    for (auto _ : state) {
        const auto now = clock.now();
        benchmark::DoNotOptimize(h.delay(now));
        h.record(now, latency_of(++i));
    }
    resil_bench::report_allocations(state, before);
}
void hedge_adaptive(benchmark::State& s) { hedge_call(s, adaptive); }
void hedge_fixed(benchmark::State& s) { hedge_call(s, fixed); }

}  // namespace

BENCHMARK(clock_now)->Name("record/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(mutex_record)->Name("record/baseline_mutex")->Threads(1)->Threads(2);
BENCHMARK(tracker_record)->Name("record/resil")->Threads(1)->Threads(2);

BENCHMARK(clock_now)->Name("call/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(hedge_fixed)->Name("call/resil_fixed_delay")->Threads(1)->Threads(2);
BENCHMARK(hedge_adaptive)->Name("call/resil_p95_delay")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
