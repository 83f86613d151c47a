// The README's ten-line example through resil::http::client (resil/http.hpp)
// as a user's translation unit: what scripts/compile_time.sh times against
// baseline_curl_retry_loop.cpp. With RESIL_SEPARATE_COMPILATION the file
// parses the client's declarations only; its definitions are compiled once,
// in separate_source.cpp.
#include <resil/http.hpp>

#include <string>

using namespace std::chrono_literals;

void show_plan_b(resil::reason why);

void fetch_catalog(const std::string& url) {
    static resil::http::client catalog{{                              // one per dependency, shared by every thread
        .deadline = 250ms,                                            // the whole call, every attempt included
        .timeouts = {.connect = 20ms, .read = 100ms, .total = 150ms}, // each attempt, within the deadline
        .retry = {.max_attempts = 3},                                 // full jitter, Retry-After; budget: retries ≤ 10 % of calls
        .circuit_breaker = {.failure_ratio = 0.5},                    // > 50 % failures in 10 s → open for 30 s
    }};
    auto out = catalog.get(url);                                      // a POST carries an idempotency key: safe to retry
    if (!out) show_plan_b(out.reason());                              // "circuit_open", "retries_exhausted", ...
}
