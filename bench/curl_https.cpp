// The libcurl adapter over TLS, against a local nginx serving HTTPS with a
// certificate made by `openssl` at start-up (in a temporary directory,
// removed at exit):
//
// kept-alive   GETs over one kept-alive HTTPS connection
//   raw_libcurl            a plain easy-handle loop (curl_easy_perform) with the same
//                          options (CA file, NOSIGNAL, connect and total limits), the baseline
//   resil_client_reused    resil::curl::client::perform(req, ctx, out) with the timeout triad
// new connections   one GET on a new TLS connection each time
//   new_client/no_cache         a new client (a new easy handle) per connection:
//                               a full handshake each time, as N threads' first requests
//   new_client/shared_cache     the same, the clients sharing one resil::curl::shared_cache:
//                               each resumes the TLS session stored by an earlier one
//   one_client/no_session_reuse one client, connections never reused (CURLOPT_FORBID_REUSE)
//                               and its session cache off (CURLOPT_SSL_SESSIONID_CACHE 0)
//   one_client/session_reuse    the same client with libcurl's own session cache (its default)
//
// Each runs in 9 interleaved rounds, so load drifting on a shared machine
// hurts every kind alike; the summary gives medians over rounds and the
// ratios. Latencies: every request timed with steady_clock into a buffer
// reserved before the loop; after it the samples are sorted and p50/p99 are
// the nearest-rank samples at floor(p * (n - 1)); "steady" is the rate
// without each run's slowest 1 %.
//
// Skips with a message when nginx or openssl is missing.
#include "latency_rounds.hpp"

#include <cstdio>

#if RESIL_BENCH_HAVE_CURL

#include <curl/curl.h>

#include <resil/curl.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "../tests/support/tls_files.hpp"

using namespace std::chrono_literals;
using resil_bench::steady;

namespace {

std::unique_ptr<resil_test::tls_files> tls;
std::unique_ptr<resil_test::tls_nginx> nginx;
std::string url;
constexpr int rounds = 9;
// Each new connection leaves a socket in TIME_WAIT for a minute: short runs
// keep the whole benchmark far below the ephemeral port range.
constexpr double new_connection_seconds = 0.2;

// Per kind, the figures of each round (bench/latency_rounds.hpp).
resil_bench::round_results results{rounds};
using resil_bench::latencies;

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

// The test certificate, trusted through the raw handle hook; optionally
// more raw options for the new-connection kinds.
resil::curl::client_options trusting(std::shared_ptr<resil::curl::shared_cache> cache = nullptr,
                                     bool forbid_reuse = false, bool session_cache = true) {
    resil::curl::client_options o;
    o.shared = std::move(cache);
    const std::string ca = tls->path("ca.pem");
    o.configure_handle = [ca, forbid_reuse, session_cache](CURL* e) {
        curl_easy_setopt(e, CURLOPT_CAINFO, ca.c_str());
        if (forbid_reuse) curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
        if (!session_cache) curl_easy_setopt(e, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    };
    return o;
}

void raw_libcurl(benchmark::State& state, std::size_t round) {
    CURL* easy = curl_easy_init();
    std::string body;
    body.reserve(64);
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CAINFO, tls->path("ca.pem").c_str());
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
    curl_easy_perform(easy);  // connects outside the measurement, as the other side does
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

void resil_client_reused(benchmark::State& state, std::size_t round) {
    resil::curl::client http(trusting());
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);  // connects; the response's buffers grow to fit
    if (!r.ok()) {
        state.SkipWithError("resil client: the first request failed");
        return;
    }
    results.time_calls(state, "resil_client_reused", round, "resil client: the request failed", [&] {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        http.perform(req, ctx, r);
        benchmark::DoNotOptimize(r.body().data());
        return r.ok();
    });
}

// A new client per connection, with or without a cache shared by all of them.
void new_client(benchmark::State& state, std::size_t round, bool shared) {
    const auto cache = shared ? std::make_shared<resil::curl::shared_cache>() : nullptr;
    const auto options = trusting(cache);
    const auto req = resil::curl::request::get(url);
    if (shared) (void)resil::curl::client(options).perform(req);  // stores the first session
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        resil::curl::client http(options);
        const auto r = http.perform(req);
        lat.add(steady::now() - t0);
        if (!r.ok() || r.timings().reused_connection) {
            state.SkipWithError("new client: the request failed or reused a connection");
            break;
        }
    }
    results.record(state, shared ? "new_client/shared_cache" : "new_client/no_cache", round, lat,
                   steady::now() - started, before);
}

// One client whose every request opens a new connection, resuming its own
// last TLS session or not.
void one_client(benchmark::State& state, std::size_t round, bool session_reuse) {
    resil::curl::client http(trusting(nullptr, true, session_reuse));
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);
    results.time_calls(state, session_reuse ? "one_client/session_reuse" : "one_client/no_session_reuse", round,
                       "one client: the request failed or reused a connection", [&] {
                           http.perform(req, r);
                           return r.ok() && !r.timings().reused_connection;
                       });
}
}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        tls = std::make_unique<resil_test::tls_files>();
        nginx = std::make_unique<resil_test::tls_nginx>(*tls, R"(location /ok { return 200 "hello\n"; })");
    } catch (const std::exception& e) {
        std::printf("bench_curl_https: skipped: %s\n", e.what());
        return 0;
    }
    url = nginx->https_url("/ok");
    for (std::size_t round = 0; round < rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round + 1);
        benchmark::RegisterBenchmark(("kept_alive/baseline_raw_libcurl" + suffix).c_str(), raw_libcurl, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("kept_alive/resil_client_reused" + suffix).c_str(), resil_client_reused, round)
            ->UseRealTime();
        const auto connections = [&](const char* name, auto fn, bool variant) {
            benchmark::RegisterBenchmark(("new_connection/" + std::string(name) + suffix).c_str(), fn, round, variant)
                ->UseRealTime()
                ->MinTime(new_connection_seconds);
        };
        connections("baseline_new_client_no_cache", new_client, false);
        connections("resil_new_client_shared_cache", new_client, true);
        connections("resil_one_client_no_session_reuse", one_client, false);
        connections("resil_one_client_session_reuse", one_client, true);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    results.print("HTTPS GET to a local nginx, one kept-alive connection", "req/s", "raw_libcurl",
                {"raw_libcurl", "resil_client_reused"});
    results.print("HTTPS GET on a new TLS connection each time", "conn/s", "new_client/no_cache",
                {"new_client/no_cache", "new_client/shared_cache", "one_client/no_session_reuse",
                 "one_client/session_reuse"});
    nginx.reset();
    tls.reset();
    return 0;
}

#else  // no libcurl: nothing to compare

int main() {
    std::printf("bench_curl_https: skipped: libcurl was not found at configure time\n");
    return 0;
}

#endif
