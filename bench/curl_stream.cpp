// Streamed bodies: ~1 MB of completion-style Server-Sent Events from a local
// nginx over one kept-alive connection, read through
//   raw_libcurl                 curl_easy_perform, a write callback counting bytes (the baseline)
//   raw_libcurl_string_lines    the same, splitting events with std::string (+=, find, substr):
//                               what a client without resil starts with
//   resil_perform_reused        client::perform into a reused response (the body kept)
//   resil_stream                client::stream with first-byte and idle limits, a sink counting bytes
//   resil_stream_sse            client::stream + sse_stream, counting events
// in 5 interleaved rounds (raw, ..., raw, ...), so load that drifts hurts all
// alike; the summary gives the median MB/s over rounds and the ratio to raw
// libcurl, and each row its allocations per call.
//
// The benchmark starts nginx itself (tests/support/nginx_server.hpp) and skips
// with a message when nginx is not installed.
#include "bench_support.hpp"

#include <cstdio>

#if RESIL_BENCH_HAVE_CURL

#include <curl/curl.h>

#include <resil/curl.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../tests/support/nginx_server.hpp"

using namespace std::chrono_literals;

namespace {

constexpr int rounds = 5;
constexpr std::size_t event_count = 20000;
constexpr std::string_view event_text = "data: {\"choices\":[{\"delta\":{\"content\":\"token\"}}]}\n\n";
constexpr std::size_t body_size = event_count * event_text.size();

std::unique_ptr<resil_test::nginx_server> nginx;
std::string url;
std::map<std::string, std::vector<double>> mb_per_second;  // per kind, per round


struct raw_counter {
    std::size_t bytes = 0;
};
std::size_t count_bytes(char*, std::size_t size, std::size_t count, void* user) {
    static_cast<raw_counter*>(user)->bytes += size * count;
    return size * count;
}

// The hand-written event splitter of bench/sse.cpp's baseline, fed by libcurl.
struct string_lines {
    std::string buffer;
    std::string data;
    std::size_t events = 0;
    void feed(std::string_view chunk) {
        buffer += chunk;
        std::size_t start = 0;
        for (std::size_t eol; (eol = buffer.find('\n', start)) != std::string::npos; start = eol + 1) {
            std::string line = buffer.substr(start, eol - start);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) {
                if (!data.empty()) ++events;
                data.clear();
            } else if (line.rfind("data:", 0) == 0) {
                data += line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
            }
        }
        buffer.erase(0, start);
    }
};
std::size_t split_lines(char* p, std::size_t size, std::size_t count, void* user) {
    static_cast<string_lines*>(user)->feed(std::string_view(p, size * count));
    return size * count;
}

template <class Body>
void timed(benchmark::State& state, const std::string& kind, int round, Body&& one_call) {
    const auto before = resil_bench::allocations.load();
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        if (!one_call()) {
            state.SkipWithError((kind + ": the transfer failed").c_str());
            return;
        }
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
    const auto bytes = static_cast<double>(state.iterations()) * static_cast<double>(body_size);
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    resil_bench::report_allocations(state, before);
    // The last run of a benchmark function is the one Google Benchmark reports.
    auto& slot = mb_per_second[kind];
    if (slot.size() <= static_cast<std::size_t>(round)) slot.resize(static_cast<std::size_t>(round) + 1);
    slot[static_cast<std::size_t>(round)] = bytes / 1e6 / elapsed.count();
}

template <class Sink>
CURL* raw_handle(Sink* sink, curl_write_callback write) {
    CURL* easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, sink);
    return easy;
}

void raw_libcurl(benchmark::State& state, int round) {
    raw_counter counter;
    CURL* easy = raw_handle(&counter, &count_bytes);
    curl_easy_perform(easy);  // connect outside the measurement, as the others do
    timed(state, "raw_libcurl", round, [&] {
        counter.bytes = 0;
        return curl_easy_perform(easy) == CURLE_OK && counter.bytes == body_size;
    });
    curl_easy_cleanup(easy);
}

void raw_libcurl_string_lines(benchmark::State& state, int round) {
    string_lines lines;
    CURL* easy = raw_handle(&lines, &split_lines);
    curl_easy_perform(easy);
    timed(state, "raw_libcurl_string_lines", round, [&] {
        lines.events = 0;
        return curl_easy_perform(easy) == CURLE_OK && lines.events == event_count;
    });
    curl_easy_cleanup(easy);
}

void resil_perform_reused(benchmark::State& state, int round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    auto r = http.perform(req);
    timed(state, "resil_perform_reused", round, [&] {
        resil::context ctx;
        return http.perform(req, ctx, r).ok() && r.body().size() == body_size;
    });
}

void resil_stream(benchmark::State& state, int round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    std::size_t bytes = 0;
    auto sink = [&bytes](std::string_view chunk) {
        bytes += chunk.size();
        return resil::curl::stream_action::next;
    };
    auto r = http.perform(req);
    timed(state, "resil_stream", round, [&] {
        resil::context ctx;
        bytes = 0;
        return http.stream(req, ctx, r, sink, {.first_byte = 1s, .idle = 1s}).ok() && bytes == body_size;
    });
}

void resil_stream_sse(benchmark::State& state, int round) {
    resil::curl::client http;
    const auto req = resil::curl::request::get(url);
    std::size_t events = 0;
    resil::curl::sse_stream sse([&events](const resil::sse::event& e) { events += e.data.empty() ? 0 : 1; });
    auto r = http.perform(req);
    timed(state, "resil_stream_sse", round, [&] {
        resil::context ctx;
        events = 0;
        return http.stream(req, ctx, r, sse, {.first_byte = 1s, .idle = 1s}).ok() && events == event_count;
    });
}

void print_summary() {
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    if (mb_per_second.find("raw_libcurl") == mb_per_second.end()) return;
    const double raw = median(mb_per_second["raw_libcurl"]);
    std::printf("\n~%zu kB of events from a local nginx, one kept-alive connection; medians of %d interleaved rounds\n",
                body_size / 1000, rounds);
    std::printf("  %-26s %9s %6s\n", "", "MB/s", "ratio");
    for (const char* kind :
         {"raw_libcurl", "raw_libcurl_string_lines", "resil_perform_reused", "resil_stream", "resil_stream_sse"}) {
        const auto it = mb_per_second.find(kind);
        if (it == mb_per_second.end()) continue;
        const double f = median(it->second);
        std::printf("  %-26s %9.0f %6.3f\n", kind, f, f / raw);
    }
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        nginx = std::make_unique<resil_test::nginx_server>(
            "location /events { default_type text/event-stream; echo_duplicate " + std::to_string(event_count) + " '" +
            std::string(event_text.substr(0, event_text.size() - 2)) + "\\n\\n'; }");
    } catch (const std::exception& e) {
        std::printf("bench_curl_stream: skipped: %s\n", e.what());
        return 0;
    }
    url = nginx->url("/events");
    for (int round = 0; round < rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round + 1);
        benchmark::RegisterBenchmark(("stream/baseline_raw_libcurl" + suffix).c_str(), raw_libcurl, round)->UseRealTime();
        benchmark::RegisterBenchmark(("stream/baseline_raw_libcurl_string_lines" + suffix).c_str(),
                                     raw_libcurl_string_lines, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("stream/resil_perform_reused" + suffix).c_str(), resil_perform_reused, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("stream/resil_stream" + suffix).c_str(), resil_stream, round)->UseRealTime();
        benchmark::RegisterBenchmark(("stream/resil_stream_sse" + suffix).c_str(), resil_stream_sse, round)
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
    std::printf("bench_curl_stream: skipped: libcurl was not found at configure time\n");
    return 0;
}

#endif
