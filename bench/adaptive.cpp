// The adaptive policies' cost per call, next to one clock read and to the
// same algorithm behind one std::mutex: the AIMD and Gradient2 limits
// (admit + complete), SRE throttling (decide + record) and the paced bucket
// (a grant). The decision cores take the caller's clock reading, as the
// pipelines give them, so each figure is the policy's own work, to compare
// with what one clock read costs. Run with 1 and 2 threads on one shared
// object.
//
// The mutex baselines run the very same objects, each call under one lock:
// the same algorithm, serialized (the uncontended atomics inside cost a few
// ns on 1 thread; what 2 threads show is the lock's hand-over).
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/adaptive_limit.hpp>
#include <resil/adaptive_throttle.hpp>
#include <resil/clock.hpp>
#include <resil/jitter.hpp>
#include <resil/paced_bucket.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace {

using namespace std::chrono_literals;

// One call of each policy at the caller's reading `now`.
//
// The limits learn only from calls admitted while at least half the limit is
// in flight: 8 permits stay held, so each call (the 9th or 10th in flight of
// a limit in [10, 18]) is one the limit learns from. Below max: one call in
// 64 is an overload, so the limit keeps being cut and rising again (every
// success counts towards the round, in the thread's stripe and in batches in
// the shared word, or moves Gradient2's estimate: a compare-and-swap each).
// At max: only successes, the limit stays at 18,
// where a full round (AIMD) or an estimate at max_limit (Gradient2) writes
// nothing shared.
template <resil::adaptive_algorithm Algorithm, bool AtMax>
struct limit_call {
    static constexpr int held = 8;
    static resil::adaptive_limit& limit() {
        static resil::adaptive_limit l{{.algorithm = Algorithm, .initial_limit = AtMax ? 18u : 10u,
                                        .min_limit = 10, .max_limit = 18}};
        static std::vector<resil::adaptive_limit::permit> kept = [] {
            std::vector<resil::adaptive_limit::permit> v;
            for (int i = 0; i < held; ++i) v.push_back(l.try_acquire());
            return v;
        }();
        return l;
    }
    static void run(resil::time_point& now) {
        thread_local unsigned calls = 0;
        auto& l = limit();
        auto p = l.try_acquire(now);
        const auto s = !AtMax && ++calls % 64 == 0 ? resil::load_signal::overload : resil::load_signal::accepted;
        benchmark::DoNotOptimize(l.complete(std::move(p), s, now + 5ms));
    }
};
using aimd_call = limit_call<resil::adaptive_algorithm::aimd, false>;
using aimd_at_max_call = limit_call<resil::adaptive_algorithm::aimd, true>;
using gradient2_call = limit_call<resil::adaptive_algorithm::gradient2, false>;
using gradient2_at_max_call = limit_call<resil::adaptive_algorithm::gradient2, true>;

struct throttle_call {
    static resil::adaptive_throttle& throttle() {
        static resil::adaptive_throttle t{};
        return t;
    }
    // Time moves 4 us per call: the cached probability is recomputed every
    // 1.2 s of it (window / 100), every 300,000 calls, as in real use.
    static void run(resil::time_point& now) {
        now += 4us;
        auto& t = throttle();
        auto ticket = t.try_acquire(now);
        t.record(std::move(ticket), resil::load_signal::accepted, now);
    }
};

struct paced_call {
    static resil::paced_bucket& bucket() {
        static resil::paced_bucket b{{.rate = 1e6, .burst = 1'000'000, .max_rate = 1e6}};
        return b;
    }
    // Time moves 4 us per call and thread (a quarter of the bucket's 1e6
    // tokens a second): on 1 thread every call is a grant (the
    // compare-and-swap). With 2 threads each advances its own copy of the
    // time line; while they stay within 250,000 calls of each other (the
    // burst's 1 s) every call is still a grant.
    static void run(resil::time_point& now) {
        now += 4us;
        benchmark::DoNotOptimize(bucket().try_acquire(now));
    }
};

std::mutex& lock_for_baseline() {
    static std::mutex m;
    return m;
}

// The time line the calls see, in the loop never read from a clock (the loop
// measures the policy, not the clock): each run starts where the previous
// runs left it, so the shared objects never see time go backwards from one
// run (or repetition) to the next.
std::atomic<resil::time_point::rep>& time_line() {
    static std::atomic<resil::time_point::rep> t{resil::steady_clock{}.now().time_since_epoch().count()};
    return t;
}
resil::time_point start_of_run() { return resil::time_point{resil::duration{time_line().load()}}; }
void end_of_run(resil::time_point now) {
    auto seen = time_line().load();
    while (seen < now.time_since_epoch().count() &&
           !time_line().compare_exchange_weak(seen, now.time_since_epoch().count())) {
    }
}

template <class Call>
void resil_policy(benchmark::State& state) {
    auto now = start_of_run();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) Call::run(now);
    resil_bench::report_allocations(state, before);
    end_of_run(now);
}

template <class Call>
void baseline_mutex(benchmark::State& state) {
    auto now = start_of_run();
    auto& m = lock_for_baseline();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        std::lock_guard lock(m);
        Call::run(now);
    }
    resil_bench::report_allocations(state, before);
    end_of_run(now);
}

void baseline_clock_read(benchmark::State& state) {
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
}

}  // namespace

BENCHMARK(baseline_clock_read)->Name("aimd/baseline_clock_read");
BENCHMARK(resil_policy<aimd_call>)->Name("aimd/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<aimd_call>)->Name("aimd/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK(baseline_clock_read)->Name("aimd_at_max/baseline_clock_read");
BENCHMARK(resil_policy<aimd_at_max_call>)->Name("aimd_at_max/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<aimd_at_max_call>)->Name("aimd_at_max/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK(baseline_clock_read)->Name("gradient2/baseline_clock_read");
BENCHMARK(resil_policy<gradient2_call>)->Name("gradient2/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<gradient2_call>)->Name("gradient2/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK(baseline_clock_read)->Name("gradient2_at_max/baseline_clock_read");
BENCHMARK(resil_policy<gradient2_at_max_call>)->Name("gradient2_at_max/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<gradient2_at_max_call>)->Name("gradient2_at_max/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK(baseline_clock_read)->Name("throttle/baseline_clock_read");
BENCHMARK(resil_policy<throttle_call>)->Name("throttle/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<throttle_call>)->Name("throttle/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK(baseline_clock_read)->Name("paced/baseline_clock_read");
BENCHMARK(resil_policy<paced_call>)->Name("paced/resil")->Threads(1)->Threads(2);
BENCHMARK(baseline_mutex<paced_call>)->Name("paced/baseline_mutex")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
