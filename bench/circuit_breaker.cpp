// The circuit breaker's cost per call, closed (admit + record a success) and
// open (a rejection), uncontended and with 2 threads, side by side with the
// same breaker written plainly behind one std::mutex, and with one clock
// read, the floor of anything that keeps a time window. (The coarse clock's
// own read is in bench_clock.)
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/circuit_breaker.hpp>
#include <resil/coarse_clock.hpp>
#include <resil/pipeline.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

using namespace std::chrono_literals;

namespace {

// The baseline: the same rules (10-bucket time window, failure ratio with
// min_calls, open_for, exactly N half-open probes, probe timeout), the
// straightforward way: every call takes one lock.
template <class Clock>
class mutex_breaker {
public:
    struct permit {
        bool admitted = false;
        bool probe = false;
        std::uint64_t generation = 0;
        std::optional<resil::duration> retry_after{};
        explicit operator bool() const noexcept { return admitted; }
    };

    explicit mutex_breaker(resil::circuit_breaker_options o = {}) : options_(std::move(o)), bucket_(options_.window / 10) {
        if (options_.probe_timeout == resil::duration::zero()) options_.probe_timeout = options_.open_for;
    }

    permit try_acquire() {
        std::lock_guard lock(mutex_);
        if (state_ == resil::circuit_state::closed) return {true, false, generation_, {}};
        const auto now = clock_.now();
        if (state_ == resil::circuit_state::open) {
            if (now < until_) return reject(until_ - now);
            change(resil::circuit_state::half_open);
            until_ = now + options_.probe_timeout;
        }
        if (admitted_ < options_.half_open_probes) {
            ++admitted_;
            return {true, true, generation_, {}};
        }
        if (now < until_) return reject(until_ - now);
        change(resil::circuit_state::open);
        until_ = now + options_.open_for;
        return reject(options_.open_for);
    }

    void record(const permit& p, resil::verdict v) {
        if (!p.admitted) return;
        const bool failed = options_.failure_verdicts.contains(v);
        const auto now = clock_.now();
        std::lock_guard lock(mutex_);
        if (p.generation != generation_) return;
        if (p.probe) {
            if (failed) {
                change(resil::circuit_state::open);
                until_ = now + options_.open_for;
            } else if (++succeeded_ == options_.half_open_probes) {
                change(resil::circuit_state::closed);
                buckets_ = {};
            }
            return;
        }
        const auto epoch = now.time_since_epoch() / bucket_;
        auto& b = buckets_[static_cast<std::size_t>(epoch % 10)];
        if (b.epoch != epoch) b = {epoch, 0, 0};
        ++b.calls;
        if (!failed) return;
        ++b.failures;
        std::uint64_t calls = 0;
        std::uint64_t failures = 0;
        for (const auto& x : buckets_)
            if (epoch - x.epoch < 10) {
                calls += x.calls;
                failures += x.failures;
            }
        if (calls >= options_.min_calls &&
            static_cast<double>(failures) > options_.failure_ratio * static_cast<double>(calls)) {
            change(resil::circuit_state::open);
            until_ = now + options_.open_for;
        }
    }

private:
    struct bucket {
        std::int64_t epoch = -100;
        std::uint64_t calls = 0;
        std::uint64_t failures = 0;
    };
    permit reject(resil::duration wait) {
        ++rejections_;
        return {false, false, generation_, wait};
    }
    void change(resil::circuit_state to) {
        state_ = to;
        ++generation_;
        admitted_ = succeeded_ = 0;
    }

    resil::circuit_breaker_options options_;
    resil::duration bucket_;
    Clock clock_{};
    std::mutex mutex_;
    resil::circuit_state state_ = resil::circuit_state::closed;
    std::uint64_t generation_ = 0;
    resil::time_point until_{};
    std::uint32_t admitted_ = 0;
    std::uint32_t succeeded_ = 0;
    std::uint64_t rejections_ = 0;
    std::array<bucket, 10> buckets_{};
};

// One breaker per benchmark, shared by its threads. The open ones are
// tripped once and stay open for a day.
const resil::circuit_breaker_options closed_options{.min_calls = 20};
const resil::circuit_breaker_options open_options{.min_calls = 1, .open_for = 24h};

template <class Breaker>
Breaker& tripped(Breaker& b) {
    auto p = b.try_acquire();
    b.record(p, resil::verdict::retryable);
    return b;
}

resil::basic_circuit_breaker<resil::steady_clock> closed_breaker{closed_options};
resil::basic_circuit_breaker<resil::coarse_steady_clock> closed_coarse_breaker{closed_options};
resil::basic_circuit_breaker<resil::steady_clock> open_breaker_storage{open_options};
auto& open_breaker = tripped(open_breaker_storage);
resil::basic_circuit_breaker<resil::coarse_steady_clock> open_coarse_storage{open_options};
auto& open_coarse_breaker = tripped(open_coarse_storage);
mutex_breaker<resil::steady_clock> closed_mutex{closed_options};
mutex_breaker<resil::steady_clock> open_mutex_storage{open_options};
auto& open_mutex = tripped(open_mutex_storage);
resil::basic_circuit_breaker<resil::steady_clock> pipeline_breaker{closed_options};

template <class Clock>
void clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    Clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

template <class Breaker>
void closed_call(benchmark::State& state, Breaker& breaker) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto p = breaker.try_acquire();
        benchmark::DoNotOptimize(p);
        breaker.record(p, resil::verdict::success);
    }
    resil_bench::report_allocations(state, before);
}

template <class Breaker>
void open_call(benchmark::State& state, Breaker& breaker) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto p = breaker.try_acquire();
        benchmark::DoNotOptimize(p);
    }
    resil_bench::report_allocations(state, before);
}

// The floor of any shared time window: one clock read and one atomic
// read-modify-write per call. (The clock read is ordered after the previous
// locked instruction, so the two costs add up rather than overlap.)
std::atomic<std::uint64_t> shared_counter{0};
void steady_clock_now_and_atomic_add(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) {
        benchmark::DoNotOptimize(clock.now());
        shared_counter.fetch_add(1, std::memory_order_relaxed);
    }
    resil_bench::report_allocations(state, before);
}

void steady_clock_now(benchmark::State& s) { clock_now<resil::steady_clock>(s); }
void breaker_closed(benchmark::State& s) { closed_call(s, closed_breaker); }
void breaker_closed_coarse(benchmark::State& s) { closed_call(s, closed_coarse_breaker); }
void mutex_breaker_closed(benchmark::State& s) { closed_call(s, closed_mutex); }
void breaker_open(benchmark::State& s) { open_call(s, open_breaker); }
void breaker_open_coarse(benchmark::State& s) { open_call(s, open_coarse_breaker); }
void mutex_breaker_open(benchmark::State& s) { open_call(s, open_mutex); }

// The breaker as a pipeline policy around a trivial callable.
void pipeline_breaker_closed(benchmark::State& state) {
    const auto pipe = resil::pipeline(std::ref(pipeline_breaker));
    const auto before = resil_bench::allocations.load();
    int n = 0;
    for (auto _ : state) {
        auto out = pipe([&n] { return ++n; }, resil::always_success);
        benchmark::DoNotOptimize(out);
    }
    resil_bench::report_allocations(state, before);
}

}  // namespace

// Each group with 1 and 2 threads on one shared breaker; the floors too, so
// every row has its baselines at the same thread count.
BENCHMARK(steady_clock_now)->Name("closed/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(steady_clock_now_and_atomic_add)->Name("closed/baseline_clock_read_atomic_add")->Threads(1)->Threads(2);
BENCHMARK(mutex_breaker_closed)->Name("closed/baseline_mutex")->Threads(1)->Threads(2);
BENCHMARK(breaker_closed)->Name("closed/resil")->Threads(1)->Threads(2);
BENCHMARK(breaker_closed_coarse)->Name("closed/resil_coarse_clock")->Threads(1)->Threads(2);
BENCHMARK(pipeline_breaker_closed)->Name("closed/resil_pipeline");

BENCHMARK(steady_clock_now)->Name("open/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(mutex_breaker_open)->Name("open/baseline_mutex")->Threads(1)->Threads(2);
BENCHMARK(breaker_open)->Name("open/resil")->Threads(1)->Threads(2);
BENCHMARK(breaker_open_coarse)->Name("open/resil_coarse_clock")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
