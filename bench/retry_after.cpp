// Retry-After parsing: resil::parse_retry_after side by side with what libcurl
// does with the same header values (RESIL_BENCH_HAVE_CURL): strtoll for
// delay-seconds, curl_getdate() for the three HTTP-date forms.
//
// Every input goes through an opaque pointer each iteration, so neither
// parser can be folded to a constant. Before timing, each benchmark checks
// that the two sides agree on the delay. "allocs/op" counts operator new;
// libcurl's C allocations, if any, are not visible to it.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group (here, one per form).
#include "bench_support.hpp"

#include <resil/retry_after.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#if RESIL_BENCH_HAVE_CURL
#include <curl/curl.h>
#endif

namespace {

using namespace std::chrono;

// One instant, fixed so that runs compare: 2026-03-01 12:00:00.250 UTC.
const system_clock::time_point bench_now =
    time_point_cast<system_clock::duration>(sys_days{year{2026} / 3 / 1} + 12h + 250ms);

// The same future instant (2031-01-01 00:00:00 UTC) in the three forms.
constexpr std::string_view seconds_value = "120";
constexpr std::string_view imf_value = "Wed, 01 Jan 2031 00:00:00 GMT";
constexpr std::string_view rfc850_value = "Wednesday, 01-Jan-31 00:00:00 GMT";
constexpr std::string_view asctime_value = "Wed Jan  1 00:00:00 2031";

// Hides the input from the optimizer; all inputs above are NUL-terminated
// literals, as curl_getdate needs.
std::string_view opaque(std::string_view value) {
    const char* data = value.data();
    benchmark::DoNotOptimize(data);
    return {data, value.size()};
}

void resil_parse(benchmark::State& state, std::string_view value) {
    if (!resil::parse_retry_after(value, bench_now)) {
        state.SkipWithError("resil rejected the input");
        return;
    }
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto delay = resil::parse_retry_after(opaque(value), bench_now);
        benchmark::DoNotOptimize(delay);
    }
    resil_bench::report_allocations(state, before);
}

void resil_seconds(benchmark::State& state) { resil_parse(state, seconds_value); }
void resil_imf_fixdate(benchmark::State& state) { resil_parse(state, imf_value); }
void resil_rfc850(benchmark::State& state) { resil_parse(state, rfc850_value); }
void resil_asctime(benchmark::State& state) { resil_parse(state, asctime_value); }

#if RESIL_BENCH_HAVE_CURL
const std::int64_t bench_now_time_t = floor<seconds>(bench_now).time_since_epoch().count();

// libcurl's own Retry-After handling: a decimal number first, a date when
// that yields zero; a date becomes "date - now".
std::int64_t curl_style_delay(const char* value) {
    std::int64_t delay = std::strtoll(value, nullptr, 10);
    if (delay == 0) {
        const std::int64_t date = curl_getdate(value, nullptr);
        if (date != -1) delay = date > bench_now_time_t ? date - bench_now_time_t : 0;
    }
    return delay;
}

void curl_parse(benchmark::State& state, std::string_view value) {
    const auto ours = resil::parse_retry_after(value, bench_now);
    if (!ours || ours->count() != curl_style_delay(value.data())) {
        state.SkipWithError("libcurl and resil disagree on the input");
        return;
    }
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        auto delay = curl_style_delay(opaque(value).data());
        benchmark::DoNotOptimize(delay);
    }
    resil_bench::report_allocations(state, before);
}

void curl_strtoll_seconds(benchmark::State& state) { curl_parse(state, seconds_value); }
void curl_getdate_imf_fixdate(benchmark::State& state) { curl_parse(state, imf_value); }
void curl_getdate_rfc850(benchmark::State& state) { curl_parse(state, rfc850_value); }
void curl_getdate_asctime(benchmark::State& state) { curl_parse(state, asctime_value); }
#endif

}  // namespace

// Side by side, form by form.
BENCHMARK(resil_seconds)->Name("seconds/resil");
#if RESIL_BENCH_HAVE_CURL
BENCHMARK(curl_strtoll_seconds)->Name("seconds/baseline_curl_strtoll");
#endif
BENCHMARK(resil_imf_fixdate)->Name("imf_fixdate/resil");
#if RESIL_BENCH_HAVE_CURL
BENCHMARK(curl_getdate_imf_fixdate)->Name("imf_fixdate/baseline_curl_getdate");
#endif
BENCHMARK(resil_rfc850)->Name("rfc850/resil");
#if RESIL_BENCH_HAVE_CURL
BENCHMARK(curl_getdate_rfc850)->Name("rfc850/baseline_curl_getdate");
#endif
BENCHMARK(resil_asctime)->Name("asctime/resil");
#if RESIL_BENCH_HAVE_CURL
BENCHMARK(curl_getdate_asctime)->Name("asctime/baseline_curl_getdate");
#endif

BENCHMARK_MAIN();
