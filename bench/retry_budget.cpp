// The retry budget's cost per call: the deposit every first attempt makes,
// and a deposit followed by a withdrawal (a call that is retried once),
// uncontended and with 2 threads on one shared budget. Side by side with
// the same budget written plainly behind one std::mutex, with one clock
// read (a deposit needs a time), and with one clock read plus one atomic
// add on a shared counter (the floor of any deposit that counts in one
// shared word).
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/clock.hpp>
#include <resil/retry_budget.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>

namespace {

// The baseline: the same rules (10 slots over the window, `ratio` of the
// requests plus a reserve, deposits and withdrawals expiring with their
// slot), the straightforward way: every call takes one lock.
class mutex_retry_budget {
public:
    explicit mutex_retry_budget(resil::retry_budget_options o)
        : options_(o), slot_(o.window / 10),
          reserve_(static_cast<std::int64_t>(std::floor(o.min_per_second * std::chrono::duration<double>(o.window).count()))) {}

    void deposit(resil::time_point now) {
        std::lock_guard lock(mutex_);
        ++current(now).requests;
    }
    bool try_withdraw(resil::time_point now) {
        std::lock_guard lock(mutex_);
        auto& s = current(now);
        std::uint64_t requests = 0;
        std::uint64_t retries = 0;
        for (const auto& x : slots_) {
            if (s.epoch - x.epoch >= 10) continue;
            requests += x.requests;
            retries += x.retries;
        }
        const auto allowed = static_cast<std::int64_t>(std::floor(options_.ratio * static_cast<double>(requests))) + reserve_;
        if (static_cast<std::int64_t>(retries) >= allowed) return false;
        ++s.retries;
        return true;
    }

private:
    struct slot {
        std::int64_t epoch = -100;
        std::uint64_t requests = 0;
        std::uint64_t retries = 0;
    };
    slot& current(resil::time_point now) {
        const auto epoch = now.time_since_epoch() / slot_;
        auto& s = slots_[static_cast<std::size_t>(epoch % 10)];
        if (s.epoch != epoch) s = {epoch, 0, 0};
        return s;
    }

    resil::retry_budget_options options_;
    resil::duration slot_;
    std::int64_t reserve_;
    std::mutex mutex_;
    std::array<slot, 10> slots_{};
};

// One budget per benchmark, shared by its threads: 10 % (for withdrawals,
// every request earns a retry, so each iteration's withdrawal is granted),
// over a short window (50 ms, slots of 5 ms), so that a slot holds far fewer
// than 2^20 requests: a count that saturates is no longer written, which
// would hide the cost being measured.
const resil::retry_budget_options deposit_options{.window = std::chrono::milliseconds{50}};
const resil::retry_budget_options withdraw_options{.ratio = 1.0, .window = std::chrono::milliseconds{50}};

resil::retry_budget deposit_budget{deposit_options};
resil::retry_budget withdraw_budget{withdraw_options};
mutex_retry_budget deposit_mutex{deposit_options};
mutex_retry_budget withdraw_mutex{withdraw_options};

void clock_now(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) benchmark::DoNotOptimize(clock.now());
    resil_bench::report_allocations(state, before);
}

std::atomic<std::uint64_t> shared_counter{0};
void clock_now_and_atomic_add(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) {
        benchmark::DoNotOptimize(clock.now());
        shared_counter.fetch_add(1, std::memory_order_relaxed);
    }
    resil_bench::report_allocations(state, before);
}

template <class Budget>
void deposits(benchmark::State& state, Budget& budget) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) budget.deposit(clock.now());
    resil_bench::report_allocations(state, before);
}

template <class Budget>
void deposits_and_withdrawals(benchmark::State& state, Budget& budget) {
    const auto before = resil_bench::allocations.load();
    resil::steady_clock clock;
    for (auto _ : state) {
        const auto now = clock.now();
        budget.deposit(now);
        benchmark::DoNotOptimize(budget.try_withdraw(now));
    }
    resil_bench::report_allocations(state, before);
}

void budget_deposit(benchmark::State& s) { deposits(s, deposit_budget); }
void mutex_budget_deposit(benchmark::State& s) { deposits(s, deposit_mutex); }
void budget_withdraw(benchmark::State& s) { deposits_and_withdrawals(s, withdraw_budget); }
void mutex_budget_withdraw(benchmark::State& s) { deposits_and_withdrawals(s, withdraw_mutex); }

}  // namespace

BENCHMARK(clock_now)->Name("deposit/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(clock_now_and_atomic_add)->Name("deposit/baseline_clock_read_atomic_add")->Threads(1)->Threads(2);
BENCHMARK(mutex_budget_deposit)->Name("deposit/baseline_mutex")->Threads(1)->Threads(2);
BENCHMARK(budget_deposit)->Name("deposit/resil")->Threads(1)->Threads(2);

BENCHMARK(clock_now)->Name("withdraw/baseline_clock_read")->Threads(1)->Threads(2);
BENCHMARK(mutex_budget_withdraw)->Name("withdraw/baseline_mutex")->Threads(1)->Threads(2);
BENCHMARK(budget_withdraw)->Name("withdraw/resil")->Threads(1)->Threads(2);

BENCHMARK_MAIN();
