// Shared by the benchmarks that compare kinds of HTTP calls in interleaved
// rounds (bench_curl_adapter, bench_curl_https): per-request latencies of one
// run, the figures of each round, and a summary of medians over the rounds
// with each kind's ratio to a baseline kind.
//
//   results.time_calls(state, "raw_libcurl", round, "the request failed", [&] { return get() == 200; });
//   // or, when some of each iteration must stay untimed, a loop of your own:
//   resil_bench::latencies lat;                       // reserved before the loop
//   for (auto _ : state) { const auto t0 = steady::now(); call(); lat.add(steady::now() - t0); tidy(); }
//   results.record(state, "resil_client", round, lat, steady::now() - started, allocations_before);
//   ...
//   results.print("GET to a local nginx", "req/s", "raw_libcurl", {"raw_libcurl", "resil_client"});
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace resil_bench {

using steady = std::chrono::steady_clock;

/// Per-request latencies of one run; the buffer is reserved up front, so
/// recording allocates nothing.
class latencies {
public:
    latencies() { samples_.reserve(capacity); }
    void add(steady::duration d) {
        if (samples_.size() < capacity) samples_.push_back(d.count());
    }
    /// Sorts the samples; call once, after the loop, before the readings below.
    void finish() { std::sort(samples_.begin(), samples_.end()); }
    /// The nearest-rank sample at floor(p * (n - 1)), in microseconds.
    [[nodiscard]] double percentile_us(double p) const {
        if (samples_.empty()) return 0;
        const auto at = static_cast<std::size_t>(p * static_cast<double>(samples_.size() - 1));
        return static_cast<double>(samples_[at]) / 1000.0;
    }
    /// Calls per second one after another, leaving out the slowest 1 %: on a
    /// shared machine those are mostly other processes' time slices.
    [[nodiscard]] double steady_rate() const {
        const auto kept = samples_.size() - samples_.size() / 100;
        if (kept == 0) return 0;
        double sum = 0;
        for (std::size_t i = 0; i < kept; ++i) sum += static_cast<double>(samples_[i]);
        return 1e9 * static_cast<double>(kept) / sum;
    }

private:
    static constexpr std::size_t capacity = std::size_t{1} << 20;
    std::vector<steady::rep> samples_;
};

/// What one run of a kind came to.
struct round_figures {
    double per_second = 0;
    double steady_per_second = 0;
    double p50_us = 0;
    double p99_us = 0;
};

/// The figures of every kind in every round, and their summary.
class round_results {
public:
    explicit round_results(int rounds) : rounds_(rounds) {}

    /// Reports a run as Google Benchmark counters (per_s, steady_per_s,
    /// p50_us, p99_us, allocs/op) and keeps it as `kind`'s figures for
    /// `round`: the last run of a benchmark function is the one reported.
    void record(benchmark::State& state, const std::string& kind, std::size_t round, latencies& lat,
                steady::duration elapsed, std::uint64_t allocations_before) {
        round_figures f;
        f.per_second = static_cast<double>(state.iterations()) / std::chrono::duration<double>(elapsed).count();
        lat.finish();
        f.steady_per_second = lat.steady_rate();
        f.p50_us = lat.percentile_us(0.50);
        f.p99_us = lat.percentile_us(0.99);
        state.counters["per_s"] = f.per_second;
        state.counters["steady_per_s"] = f.steady_per_second;
        state.counters["p50_us"] = f.p50_us;
        state.counters["p99_us"] = f.p99_us;
        auto& slot = runs_[kind];
        if (slot.size() <= round) slot.resize(round + 1);
        slot[round] = f;
        report_allocations(state, allocations_before);
    }

    /// Times `call` once per iteration (all of it: keep work that must not
    /// count outside it) and records the run as `kind`. `call` returns false
    /// when the request failed, which ends the run with `failure`.
    template <class Call>
    void time_calls(benchmark::State& state, const std::string& kind, std::size_t round, const char* failure,
                    Call&& call) {
        latencies lat;
        const auto before = allocations.load();
        const auto started = steady::now();
        for (auto _ : state) {
            const auto t0 = steady::now();
            const bool ok = call();
            lat.add(steady::now() - t0);
            if (!ok) {
                state.SkipWithError(failure);
                break;
            }
        }
        record(state, kind, round, lat, steady::now() - started, before);
    }

    /// Each figure's median over `kind`'s rounds (all zero when it never ran).
    [[nodiscard]] round_figures median(const std::string& kind) const {
        round_figures m;
        const auto it = runs_.find(kind);
        if (it == runs_.end() || it->second.empty()) return m;
        const auto& runs = it->second;
        const auto mid = [&runs](double round_figures::*field) {
            std::vector<double> v;
            for (const auto& r : runs) v.push_back(r.*field);
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        m.per_second = mid(&round_figures::per_second);
        m.steady_per_second = mid(&round_figures::steady_per_second);
        m.p50_us = mid(&round_figures::p50_us);
        m.p99_us = mid(&round_figures::p99_us);
        return m;
    }

    /// `kind`'s figures in each round it ran (empty when it never did).
    [[nodiscard]] std::vector<round_figures> rounds_of(const std::string& kind) const {
        const auto it = runs_.find(kind);
        return it == runs_.end() ? std::vector<round_figures>{} : it->second;
    }

    /// Prints the medians of `kinds` with their ratios to `baseline`'s;
    /// nothing when the baseline did not run (a filtered run).
    void print(const char* title, const char* unit, const std::string& baseline,
               std::initializer_list<const char*> kinds) const {
        if (runs_.find(baseline) == runs_.end()) return;
        const auto b = median(baseline);
        std::printf("\n%s; medians of %d interleaved rounds, ratios to %s\n", title, rounds_, baseline.c_str());
        std::printf("(steady: without each run's slowest 1 %%, mostly other processes' time slices)\n");
        std::printf("  %-28s %9s %6s %9s %6s %9s %9s %6s\n", "", unit, "ratio", "steady", "ratio", "p50 (us)",
                    "p99 (us)", "ratio");
        for (const char* kind : kinds) {
            if (runs_.find(kind) == runs_.end()) continue;
            const auto f = median(kind);
            std::printf("  %-28s %9.0f %6.3f %9.0f %6.3f %9.1f %9.1f %6.3f\n", kind, f.per_second,
                        f.per_second / b.per_second, f.steady_per_second, f.steady_per_second / b.steady_per_second,
                        f.p50_us, f.p99_us, f.p99_us / b.p99_us);
        }
    }

private:
    int rounds_;
    std::map<std::string, std::vector<round_figures>> runs_;
};

}  // namespace resil_bench
