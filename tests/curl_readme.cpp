// The README's ten-line examples (resil::http::client, and the pipeline it
// stands for), compiled and run as written, so the first code a user copies
// cannot rot. Nothing listens on 127.0.0.1:1: every
// attempt is refused before anything is sent, so it is retried (even a POST
// would be) until attempts run out.
#include <resil/curl.hpp>
#include <resil/http.hpp>
#include <resil/resil.hpp>

#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;

TEST_CASE("README: the ten-line example") {
    const std::string url = "http://127.0.0.1:1/catalog";
    resil::reason plan_b_reason = resil::reason::none;
    auto show_plan_b = [&](resil::reason r) { plan_b_reason = r; };

    // --- as in README.md ---
    resil::retry_budget budget;                                   // one per dependency: retries ≤ 10 % of calls
    resil::circuit_breaker breaker;                               // > 50 % failures in 10 s → open for 30 s
    resil::curl::client http;                                     // one per thread; keeps connections alive
    auto pipe = resil::pipeline(resil::deadline_policy{250ms},    // the whole call, every attempt included
                                resil::retry_policy{{.budget = &budget}},   // 3 attempts, full jitter, Retry-After
                                std::ref(breaker),
                                resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    auto out = pipe([&](resil::context& ctx) { return http.perform(resil::curl::request::get(url), ctx); });
    if (!out) show_plan_b(out.reason());                          // "circuit_open", "retries_exhausted", ...
    // ---

    REQUIRE_FALSE(out.ok());
    REQUIRE(out.has_value());
    CHECK_FALSE(out->may_have_reached_server());
    CHECK(out.verdict() == resil::verdict::retryable);
    // Three refused attempts, or fewer if the jittered waits ran into the
    // 250 ms deadline first (the next wait would not fit, or no time was
    // left): either way plan B, for a stated reason.
    CHECK((plan_b_reason == resil::reason::retries_exhausted || plan_b_reason == resil::reason::backoff_exceeds_deadline ||
           plan_b_reason == resil::reason::deadline_exceeded));
    CHECK(breaker.metrics().calls >= 1);
}

TEST_CASE("README: the ten-line example through resil::http::client") {
    const std::string url = "http://127.0.0.1:1/catalog";
    resil::reason plan_b_reason = resil::reason::none;
    auto show_plan_b = [&](resil::reason r) { plan_b_reason = r; };

    // --- as in README.md ---
    resil::http::client catalog{{                                     // one per dependency, shared by every thread
        .deadline = 250ms,                                            // the whole call, every attempt included
        .timeouts = {.connect = 20ms, .read = 100ms, .total = 150ms}, // each attempt, within the deadline
        .retry = {.max_attempts = 3},                                 // full jitter, Retry-After; budget: retries ≤ 10 % of calls
        .circuit_breaker = {.failure_ratio = 0.5},                    // > 50 % failures in 10 s → open for 30 s
    }};
    auto out = catalog.get(url);                                      // post(url, body): one idempotency key for every attempt
    if (!out) show_plan_b(out.reason());                              // resil::reason::circuit_open, retries_exhausted, ...
    // ---

    REQUIRE_FALSE(out);
    CHECK(out.attempts() >= 1);
    CHECK(out.attempts() <= 3);
    // Refused (at once on an idle machine), or, with the README's 20 ms
    // connect limit, timed out when the machine is too loaded to see the
    // refusal in time: never sent either way.
    CHECK((out.transport() == "connect_failed" || out.transport() == "connect_timeout"));
    CHECK(out.status() == 0);
    // As the pipeline's: attempts ran out, or the jittered waits ran into
    // the deadline first.
    CHECK((plan_b_reason == resil::reason::retries_exhausted || plan_b_reason == resil::reason::backoff_exceeds_deadline ||
           plan_b_reason == resil::reason::deadline_exceeded));
}
