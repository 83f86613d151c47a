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
#include "bench_support.hpp"

#include <cstdio>

#if RESIL_BENCH_HAVE_CURL

#include <curl/curl.h>

#include <resil/curl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../tests/support/tls_files.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

std::unique_ptr<resil_test::tls_files> tls;
std::unique_ptr<resil_test::tls_nginx> nginx;
std::string url;
constexpr int rounds = 9;
// Each new connection leaves a socket in TIME_WAIT for a minute: short runs
// keep the whole benchmark far below the ephemeral port range.
constexpr double new_connection_seconds = 0.2;

struct figures {
    double per_second = 0;
    double steady_per_second = 0;
    double p50_us = 0;
    double p99_us = 0;
};
std::map<std::string, std::vector<figures>> results;

class latencies {
public:
    latencies() { samples_.reserve(capacity); }
    void add(steady::duration d) {
        if (samples_.size() < capacity) samples_.push_back(d.count());
    }
    void finish() { std::sort(samples_.begin(), samples_.end()); }
    /// The nearest-rank sample at floor(p * (n - 1)), in microseconds.
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

void report(benchmark::State& state, const std::string& kind, std::size_t round, latencies& lat,
            steady::duration elapsed, std::uint64_t allocations_before) {
    figures f;
    f.per_second = static_cast<double>(state.iterations()) / std::chrono::duration<double>(elapsed).count();
    lat.finish();
    f.steady_per_second = lat.steady_rate();
    f.p50_us = lat.percentile_us(0.50);
    f.p99_us = lat.percentile_us(0.99);
    state.counters["per_s"] = f.per_second;
    state.counters["steady_per_s"] = f.steady_per_second;
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

void resil_client_reused(benchmark::State& state, std::size_t round) {
    resil::curl::client http(trusting());
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);  // connects; the response's buffers grow to fit
    if (!r.ok()) {
        state.SkipWithError("resil client: the first request failed");
        return;
    }
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
            state.SkipWithError("resil client: the request failed");
            break;
        }
        benchmark::DoNotOptimize(r.body().data());
    }
    report(state, "resil_client_reused", round, lat, steady::now() - started, before);
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
    report(state, shared ? "new_client/shared_cache" : "new_client/no_cache", round, lat, steady::now() - started,
           before);
}

// One client whose every request opens a new connection, resuming its own
// last TLS session or not.
void one_client(benchmark::State& state, std::size_t round, bool session_reuse) {
    resil::curl::client http(trusting(nullptr, true, session_reuse));
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);
    latencies lat;
    const auto before = resil_bench::allocations.load();
    const auto started = steady::now();
    for (auto _ : state) {
        const auto t0 = steady::now();
        http.perform(req, r);
        lat.add(steady::now() - t0);
        if (!r.ok() || r.timings().reused_connection) {
            state.SkipWithError("one client: the request failed or reused a connection");
            break;
        }
    }
    report(state, session_reuse ? "one_client/session_reuse" : "one_client/no_session_reuse", round, lat,
           steady::now() - started, before);
}

figures median(const std::vector<figures>& runs) {
    figures m;
    if (runs.empty()) return m;
    auto mid = [&runs](auto field) {
        std::vector<double> v;
        for (const auto& r : runs) v.push_back(r.*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    m.per_second = mid(&figures::per_second);
    m.steady_per_second = mid(&figures::steady_per_second);
    m.p50_us = mid(&figures::p50_us);
    m.p99_us = mid(&figures::p99_us);
    return m;
}

void print_group(const char* title, const char* unit, const char* baseline, std::initializer_list<const char*> kinds) {
    const auto base = results.find(baseline);
    if (base == results.end()) return;
    const auto b = median(base->second);
    std::printf("\n%s; medians of %d interleaved rounds, ratios to %s\n", title, rounds, baseline);
    std::printf("(steady: without each run's slowest 1 %%, mostly other processes' time slices)\n");
    std::printf("  %-28s %9s %6s %9s %6s %9s %9s %6s\n", "", unit, "ratio", "steady", "ratio", "p50 (us)", "p99 (us)",
                "ratio");
    for (const char* kind : kinds) {
        const auto it = results.find(kind);
        if (it == results.end()) continue;
        const auto f = median(it->second);
        std::printf("  %-28s %9.0f %6.3f %9.0f %6.3f %9.1f %9.1f %6.3f\n", kind, f.per_second,
                    f.per_second / b.per_second, f.steady_per_second, f.steady_per_second / b.steady_per_second,
                    f.p50_us, f.p99_us, f.p99_us / b.p99_us);
    }
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
    print_group("HTTPS GET to a local nginx, one kept-alive connection", "req/s", "raw_libcurl",
                {"raw_libcurl", "resil_client_reused"});
    print_group("HTTPS GET on a new TLS connection each time", "conn/s", "new_client/no_cache",
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
