// The libcurl adapter's cost: GETs to a local nginx over one kept-alive
// connection, through
//   raw_libcurl               a plain easy-handle loop (curl_easy_perform), the baseline
//   resil_client              resil::curl::client::perform with a context and the timeout
//                             triad, a new response each time
//   resil_client_reused       the same, filling one response again and again
//                             (perform(req, ctx, out)): no allocation per request
//   resil_pipeline            the client inside deadline -> retry (budget) -> breaker -> timeouts
//   resil_pipeline_recycled   the same, each response given back (client::recycle)
// Each runs in 9 interleaved rounds (raw, client, ..., raw, ...), so a
// machine whose load drifts hurts all of them alike and a burst of load
// spoils a few rounds, not a whole side; the summary at the end gives the
// medians over rounds and the ratios to raw libcurl: requests/s and p99.
//
// The benchmark starts nginx itself (tests/support/nginx_server.hpp) and skips
// with a message when nginx is not installed.
#include "bench_support.hpp"

#include <cstdio>

#if RESIL_BENCH_HAVE_CURL

#include <curl/curl.h>

#include <resil/circuit_breaker.hpp>
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../tests/support/nginx_server.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

std::unique_ptr<resil_test::nginx_server> nginx;
std::string url;
constexpr int rounds = 9;

struct figures {
    double requests_per_second = 0;
    double steady_per_second = 0;
    double p50_us = 0;
    double p99_us = 0;
};
// Per kind, the figures of each round's reported run (the last call of a
// benchmark function is the one Google Benchmark reports).
std::map<std::string, std::vector<figures>> results;

// Per-request latencies of one run; the buffer is reserved before the loop
// so recording allocates nothing.
class latencies {
public:
    latencies() { samples_.reserve(capacity); }
    void add(steady::duration d) {
        if (samples_.size() < capacity) samples_.push_back(d.count());
    }
    /// Sorts the samples; call once, after the loop, before the readings below.
    void finish() { std::sort(samples_.begin(), samples_.end()); }
    [[nodiscard]] double percentile_us(double p) const {
        if (samples_.empty()) return 0;
        const auto at = static_cast<std::size_t>(p * static_cast<double>(samples_.size() - 1));
        return static_cast<double>(samples_[at]) / 1000.0;
    }
    /// Requests per second one after another, leaving out the slowest 1 %:
    /// on a shared machine those are mostly other processes' time slices.
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

void report(benchmark::State& state, const std::string& kind, std::size_t round, latencies& lat, steady::duration elapsed,
            std::uint64_t allocations_before) {
    figures f;
    f.requests_per_second = static_cast<double>(state.iterations()) / std::chrono::duration<double>(elapsed).count();
    lat.finish();
    f.steady_per_second = lat.steady_rate();
    f.p50_us = lat.percentile_us(0.50);
    f.p99_us = lat.percentile_us(0.99);
    state.counters["req/s"] = f.requests_per_second;
    state.counters["steady_req/s"] = f.steady_per_second;
    state.counters["p50_us"] = f.p50_us;
    state.counters["p99_us"] = f.p99_us;
    auto& slot = results[kind];
    if (slot.size() <= round) slot.resize(round + 1);
    slot[round] = f;
    resil_bench::report_allocations(state, allocations_before);
}

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

void raw_libcurl(benchmark::State& state, std::size_t round) {
    CURL* easy = curl_easy_init();
    std::string body;
    body.reserve(64);
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    curl_easy_perform(easy);  // connect outside the measurement, as the others do
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        body.clear();
        long status = 0;
        const CURLcode rc = curl_easy_perform(easy);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        lat.add(steady::now() - t0);
        if (rc != CURLE_OK || status != 200) {
            state.SkipWithError("raw libcurl: the request failed");
            break;
        }
        benchmark::DoNotOptimize(body.data());
    }
    report(state, "raw_libcurl", round, lat, steady::now() - started, before);
    curl_easy_cleanup(easy);
}

void resil_client(benchmark::State& state, std::size_t round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    (void)http.perform(req);
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        const auto r = http.perform(req, ctx);
        lat.add(steady::now() - t0);
        if (!r.ok()) {
            state.SkipWithError("resil client: the request failed");
            break;
        }
        benchmark::DoNotOptimize(r.body().data());
    }
    report(state, "resil_client", round, lat, steady::now() - started, before);
}

void resil_client_reused(benchmark::State& state, std::size_t round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);  // connects; the response's buffers grow to fit
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        http.perform(req, ctx, r);
        lat.add(steady::now() - t0);
        if (!r.ok()) {
            state.SkipWithError("resil client, reused response: the request failed");
            break;
        }
        benchmark::DoNotOptimize(r.body().data());
    }
    report(state, "resil_client_reused", round, lat, steady::now() - started, before);
}

void resil_pipeline(benchmark::State& state, std::size_t round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    resil::retry_budget budget;
    resil::circuit_breaker breaker;
    const auto pipe = resil::pipeline(resil::deadline_policy{1s}, resil::retry_policy{{.budget = &budget}},
                                      std::ref(breaker), resil::timeout_policy{{.connect = 1s, .read = 1s, .total = 2s}});
    (void)http.perform(req);
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        const auto out = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
        lat.add(steady::now() - t0);
        if (!out.ok()) {
            state.SkipWithError("resil pipeline: the request failed");
            break;
        }
        benchmark::DoNotOptimize(out->body().data());
    }
    report(state, "resil_pipeline", round, lat, steady::now() - started, before);
}

void resil_pipeline_recycled(benchmark::State& state, std::size_t round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    resil::retry_budget budget;
    resil::circuit_breaker breaker;
    const auto pipe = resil::pipeline(resil::deadline_policy{1s}, resil::retry_policy{{.budget = &budget}},
                                      std::ref(breaker), resil::timeout_policy{{.connect = 1s, .read = 1s, .total = 2s}});
    http.recycle(http.perform(req));
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        auto out = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
        lat.add(steady::now() - t0);
        if (!out.ok()) {
            state.SkipWithError("resil pipeline, recycled responses: the request failed");
            break;
        }
        benchmark::DoNotOptimize(out->body().data());
        http.recycle(std::move(*out));
    }
    report(state, "resil_pipeline_recycled", round, lat, steady::now() - started, before);
}

figures median(std::vector<figures> runs) {
    figures m;
    if (runs.empty()) return m;
    auto mid = [&runs](auto field) {
        std::vector<double> v;
        for (const auto& r : runs) v.push_back(r.*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    m.requests_per_second = mid(&figures::requests_per_second);
    m.steady_per_second = mid(&figures::steady_per_second);
    m.p50_us = mid(&figures::p50_us);
    m.p99_us = mid(&figures::p99_us);
    return m;
}

void print_summary() {
    if (results.find("raw_libcurl") == results.end()) return;
    const auto raw = median(results["raw_libcurl"]);
    std::printf("\nGET to a local nginx, one kept-alive connection; medians of %d interleaved rounds\n", rounds);
    std::printf("(steady: without each run's slowest 1 %%, mostly other processes' time slices)\n");
    std::printf("  %-23s %9s %6s %12s %6s %9s %9s %6s\n", "", "req/s", "ratio", "steady req/s", "ratio", "p50 (us)",
                "p99 (us)", "ratio");
    for (const char* kind :
         {"raw_libcurl", "resil_client", "resil_client_reused", "resil_pipeline", "resil_pipeline_recycled"}) {
        const auto it = results.find(kind);
        if (it == results.end()) continue;
        const auto f = median(it->second);
        std::printf("  %-23s %9.0f %6.3f %12.0f %6.3f %9.1f %9.1f %6.3f\n", kind, f.requests_per_second,
                    f.requests_per_second / raw.requests_per_second, f.steady_per_second,
                    f.steady_per_second / raw.steady_per_second, f.p50_us, f.p99_us, f.p99_us / raw.p99_us);
    }
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        nginx = std::make_unique<resil_test::nginx_server>(R"(location /ok { return 200 "hello\n"; })");
    } catch (const std::exception& e) {
        std::printf("bench_curl_adapter: skipped: %s\n", e.what());
        return 0;
    }
    url = nginx->url("/ok");
    for (std::size_t round = 0; round < rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round + 1);
        benchmark::RegisterBenchmark(("get/baseline_raw_libcurl" + suffix).c_str(), raw_libcurl, round)->UseRealTime();
        benchmark::RegisterBenchmark(("get/resil_client" + suffix).c_str(), resil_client, round)->UseRealTime();
        benchmark::RegisterBenchmark(("get/resil_client_reused" + suffix).c_str(), resil_client_reused, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("get/resil_pipeline" + suffix).c_str(), resil_pipeline, round)->UseRealTime();
        benchmark::RegisterBenchmark(("get/resil_pipeline_recycled" + suffix).c_str(), resil_pipeline_recycled, round)
            ->UseRealTime();
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    print_summary();
    nginx.reset();
    return 0;
}

#else  // no libcurl: nothing to compare

int main() {
    std::printf("bench_curl_adapter: skipped: libcurl was not found at configure time\n");
    return 0;
}

#endif
