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
#include "latency_rounds.hpp"

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

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "../tests/support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil_bench::steady;

namespace {

std::unique_ptr<resil_test::nginx_server> nginx;
std::string url;
constexpr int rounds = 9;

// Per kind, the figures of each round (bench/latency_rounds.hpp).
resil_bench::round_results results{rounds};
using resil_bench::latencies;

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
    results.time_calls(state, "raw_libcurl", round, "raw libcurl: the request failed", [&] {
        body.clear();
        long status = 0;
        const CURLcode rc = curl_easy_perform(easy);
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        benchmark::DoNotOptimize(body.data());
        return rc == CURLE_OK && status == 200;
    });
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
    results.record(state, "resil_client", round, lat, steady::now() - started, before);
}

void resil_client_reused(benchmark::State& state, std::size_t round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);  // connects; the response's buffers grow to fit
    results.time_calls(state, "resil_client_reused", round, "resil client, reused response: the request failed", [&] {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        http.perform(req, ctx, r);
        benchmark::DoNotOptimize(r.body().data());
        return r.ok();
    });
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
    results.record(state, "resil_pipeline", round, lat, steady::now() - started, before);
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
    results.record(state, "resil_pipeline_recycled", round, lat, steady::now() - started, before);
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
    results.print("GET to a local nginx, one kept-alive connection", "req/s", "raw_libcurl",
                  {"raw_libcurl", "resil_client", "resil_client_reused", "resil_pipeline", "resil_pipeline_recycled"});
    nginx.reset();
    return 0;
}

#else  // no libcurl: nothing to compare

int main() {
    std::printf("bench_curl_adapter: skipped: libcurl was not found at configure time\n");
    return 0;
}

#endif
