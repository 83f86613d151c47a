// The concurrency limit's cost per call (admit + release), next to the
// textbook baseline: a std::mutex around the in-flight count and the
// counters. Run with 1 and 2 threads on one shared limit.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/concurrency_limit.hpp>
#include <resil/pipeline.hpp>

#include <cstdint>
#include <functional>
#include <mutex>

namespace {

class mutex_concurrency_limit {
public:
    explicit mutex_concurrency_limit(std::uint32_t limit) : limit_(limit) {}

    bool try_acquire() {
        std::lock_guard lock(mutex_);
        if (in_flight_ >= limit_) {
            ++shed_;
            return false;
        }
        ++in_flight_;
        ++admitted_;
        return true;
    }
    void release() {
        std::lock_guard lock(mutex_);
        --in_flight_;
    }

private:
    std::mutex mutex_;
    std::uint32_t limit_;
    std::uint32_t in_flight_ = 0;
    std::uint64_t admitted_ = 0;
    std::uint64_t shed_ = 0;
};

// Large enough that no thread is ever shed: each iteration admits and releases.
constexpr std::uint32_t roomy = 1024;

resil::concurrency_limit& shared_limit() {
    static resil::concurrency_limit limit{{.max_in_flight = roomy}};
    return limit;
}
mutex_concurrency_limit& shared_mutex_limit() {
    static mutex_concurrency_limit limit{roomy};
    return limit;
}

// A limit of one, taken once and never released: every call is shed.
resil::concurrency_limit& full_limit() {
    static resil::concurrency_limit limit{{.max_in_flight = 1}};
    static auto held = limit.try_acquire();
    benchmark::DoNotOptimize(held);
    return limit;
}
mutex_concurrency_limit& full_mutex_limit() {
    static mutex_concurrency_limit limit{1};
    static const bool held = limit.try_acquire();
    benchmark::DoNotOptimize(held);
    return limit;
}

}  // namespace

static void concurrency_limit_acquire_release(benchmark::State& state) {
    auto& limit = shared_limit();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto permit = limit.try_acquire();
        benchmark::DoNotOptimize(permit);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(concurrency_limit_acquire_release)->Name("admitted/resil")->Threads(1)->Threads(2);

// The mutex baseline's loop, for a limit with room (admitted) or a full one (shed).
static void run_mutex_limit(benchmark::State& state, mutex_concurrency_limit& limit) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        const bool admitted = limit.try_acquire();
        benchmark::DoNotOptimize(admitted);
        if (admitted) limit.release();
    }
    resil_bench::report_allocations(state, before);
}

static void baseline_mutex_limit_acquire_release(benchmark::State& state) { run_mutex_limit(state, shared_mutex_limit()); }
BENCHMARK(baseline_mutex_limit_acquire_release)->Name("admitted/baseline_mutex")->Threads(1)->Threads(2);

// Through a pipeline holding the limit by std::ref, around a trivial call.
static void concurrency_limit_in_pipeline(benchmark::State& state) {
    auto& limit = shared_limit();
    const auto pipe = resil::pipeline(std::ref(limit));
    const auto before = resil_bench::allocations.load();
    int x = 0;
    for (auto _ : state) benchmark::DoNotOptimize(pipe([&] { return ++x; }, resil::always_success));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(concurrency_limit_in_pipeline)->Name("admitted/resil_pipeline");

// A full limit: the shed path, which must stay cheap under overload.
static void baseline_mutex_limit_shed(benchmark::State& state) { run_mutex_limit(state, full_mutex_limit()); }
BENCHMARK(baseline_mutex_limit_shed)->Name("shed/baseline_mutex")->Threads(1)->Threads(2);

static void concurrency_limit_shed(benchmark::State& state) {
    auto& limit = full_limit();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto permit = limit.try_acquire();
        benchmark::DoNotOptimize(permit);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(concurrency_limit_shed)->Name("shed/resil")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
