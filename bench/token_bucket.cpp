// The token bucket's per-call cost, next to its floor (one read of the
// steady clock, which every time-based limiter needs), to the textbook
// baseline (a std::mutex around a floating-point token count and the time of
// the last refill), and to the algorithm of Folly's TokenBucket::consume,
// written here (baseline_folly_style): one atomic double, the instant the
// bucket was last empty, which answers only yes or no where resil also
// returns the exact wait and the Retry-After. Run with 1 and 2 threads on
// one shared bucket.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/clock.hpp>
#include <resil/pipeline.hpp>
#include <resil/token_bucket.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>

namespace {

// The straightforward mutex bucket: refill by elapsed time, then take.
class mutex_token_bucket {
public:
    mutex_token_bucket(double rate, double burst)
        : rate_(rate), burst_(burst), tokens_(burst), last_(std::chrono::steady_clock::now()) {}

    bool try_acquire() {
        const auto now = std::chrono::steady_clock::now();  // outside the lock, as a careful author would
        std::lock_guard lock(mutex_);
        if (now > last_) {
            tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
            last_ = now;
        }
        if (tokens_ < 1.0) return false;
        tokens_ -= 1.0;
        return true;
    }

private:
    std::mutex mutex_;
    double rate_, burst_, tokens_;
    std::chrono::steady_clock::time_point last_;
};

// Folly's TokenBucket algorithm (folly/TokenBucket.h, consume()), written
// from its description: the state is the time at which the bucket was empty
// ("zero time", in seconds as a double); the tokens at `now` are
// min((now - zero) * rate, burst); a grant moves the zero time forward by
// compare-and-swap; a refusal writes nothing and says only "no". The clock
// is read as Folly's default one is: steady_clock, in double seconds.
class folly_style_token_bucket {
public:
    folly_style_token_bucket(double rate, double burst) : rate_(rate), burst_(burst), zero_time_(now() - burst / rate) {}

    static double now() noexcept {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }

    bool consume(double n) noexcept { return consume(n, now()); }
    bool consume(double n, double at) noexcept {
        double zero = zero_time_.load(std::memory_order_relaxed);
        for (;;) {
            const double tokens = std::min((at - zero) * rate_, burst_);
            if (tokens < n) return false;
            const double next = at - (tokens - n) / rate_;
            if (zero_time_.compare_exchange_weak(zero, next, std::memory_order_relaxed)) return true;
        }
    }

private:
    double rate_, burst_;
    std::atomic<double> zero_time_;
};

// Rates far above the call rate: every call is granted, so each iteration
// is one full grant (load, decide, compare-and-swap).
constexpr double always_rate = 1e9;
constexpr std::int64_t always_burst = 1'000'000'000'000;

resil::token_bucket& shared_bucket() {
    static resil::token_bucket bucket{{.rate = always_rate, .burst = always_burst}};
    return bucket;
}
mutex_token_bucket& shared_mutex_bucket() {
    static mutex_token_bucket bucket{always_rate, static_cast<double>(always_burst)};
    return bucket;
}
folly_style_token_bucket& shared_folly_style_bucket() {
    static folly_style_token_bucket bucket{always_rate, static_cast<double>(always_burst)};
    return bucket;
}

// Rates far below the call rate, drained once: every call is refused.
constexpr double never_rate = 1e-3;
resil::token_bucket& empty_bucket() {
    static resil::token_bucket bucket{{.rate = never_rate, .burst = 1}};
    static const bool drained = bucket.try_acquire().granted();
    benchmark::DoNotOptimize(drained);
    return bucket;
}
// The same at 7 tokens a second, a rate that does not divide 1e9: the wait
// is then computed by multiplication with the rate's reciprocal and checked
// (at 1e-3, a unit is exactly a nanosecond and no conversion is needed).
resil::token_bucket& empty_odd_rate_bucket() {
    static resil::token_bucket bucket{{.rate = 7, .burst = 1}};
    static const bool drained = bucket.try_acquire().granted();
    benchmark::DoNotOptimize(drained);
    return bucket;
}
mutex_token_bucket& empty_mutex_bucket() {
    static mutex_token_bucket bucket{never_rate, 1.0};
    static const bool drained = bucket.try_acquire();
    benchmark::DoNotOptimize(drained);
    return bucket;
}
folly_style_token_bucket& empty_folly_style_bucket() {
    static folly_style_token_bucket bucket{never_rate, 1.0};
    static const bool drained = bucket.consume(1.0);
    benchmark::DoNotOptimize(drained);
    return bucket;
}

}  // namespace

static void floor_steady_clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(floor_steady_clock_now)->Name("granted/baseline_clock_read")->Threads(1)->Threads(2);

static void token_bucket_try_acquire(benchmark::State& state) {
    auto& bucket = shared_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_try_acquire)->Name("granted/resil")->Threads(1)->Threads(2);

static void baseline_mutex_bucket_try_acquire(benchmark::State& state) {
    auto& bucket = shared_mutex_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_mutex_bucket_try_acquire)->Name("granted/baseline_mutex")->Threads(1)->Threads(2);

static void baseline_folly_style_consume(benchmark::State& state) {
    auto& bucket = shared_folly_style_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.consume(1.0));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_folly_style_consume)->Name("granted/baseline_folly_style")->Threads(1)->Threads(2);

// The pure decision with the clock read hoisted: what the bucket adds to the floor.
static void token_bucket_try_acquire_given_now(benchmark::State& state) {
    auto& bucket = shared_bucket();
    const auto now = resil::steady_clock{}.now();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire(now));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_try_acquire_given_now)->Name("granted/resil_given_now");

// Through a pipeline holding the bucket by std::ref, around a trivial call.
static void token_bucket_in_pipeline(benchmark::State& state) {
    auto& bucket = shared_bucket();
    const auto pipe = resil::pipeline(std::ref(bucket));
    const auto before = resil_bench::allocations.load();
    int x = 0;
    for (auto _ : state) benchmark::DoNotOptimize(pipe([&] { return ++x; }, resil::always_success));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_in_pipeline)->Name("granted/resil_pipeline");

// The rejection path: an empty bucket computes the wait and Retry-After.
BENCHMARK(floor_steady_clock_now)->Name("rejected/baseline_clock_read")->Threads(1)->Threads(2);

static void baseline_mutex_bucket_rejected(benchmark::State& state) {
    auto& bucket = empty_mutex_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_mutex_bucket_rejected)->Name("rejected/baseline_mutex")->Threads(1)->Threads(2);

static void baseline_folly_style_rejected(benchmark::State& state) {
    auto& bucket = empty_folly_style_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.consume(1.0));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(baseline_folly_style_rejected)->Name("rejected/baseline_folly_style")->Threads(1)->Threads(2);

static void token_bucket_try_acquire_rejected(benchmark::State& state) {
    auto& bucket = empty_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_try_acquire_rejected)->Name("rejected/resil")->Threads(1)->Threads(2);

static void token_bucket_rejected_odd_rate(benchmark::State& state) {
    auto& bucket = empty_odd_rate_bucket();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_rejected_odd_rate)->Name("rejected/resil_odd_rate")->Threads(1)->Threads(2);

// The rejection with the clock read hoisted: the decision, the exact wait and
// the Retry-After, which is what resil adds to the floor.
static void token_bucket_rejected_given_now(benchmark::State& state) {
    auto& bucket = empty_bucket();
    const auto now = resil::steady_clock{}.now();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(bucket.try_acquire(now));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(token_bucket_rejected_given_now)->Name("rejected/resil_given_now");

BENCHMARK_MAIN();
