// The README's ten-line example as a user's translation unit: what
// scripts/compile_time.sh times against baseline_curl_retry_loop.cpp.
#include <resil/resil.hpp>
#include <resil/curl.hpp>

#include <string>

using namespace std::chrono_literals;

void show_plan_b(resil::reason why);

void fetch_catalog(const std::string& url) {
    resil::retry_budget budget;                                   // one per dependency: retries ≤ 10 % of calls
    resil::circuit_breaker breaker;                               // > 50 % failures in 10 s → open for 30 s
    resil::curl::client http;                                     // one per thread; keeps connections alive
    auto pipe = resil::pipeline(resil::deadline_policy{250ms},    // the whole call, every attempt included
                                resil::retry_policy{{.budget = &budget}},   // 3 attempts, full jitter, Retry-After
                                std::ref(breaker),
                                resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    auto out = pipe([&](resil::context& ctx) { return http.perform(resil::curl::request::get(url), ctx); });
    if (!out) show_plan_b(out.reason());                          // "circuit_open", "retries_exhausted", ...
}
