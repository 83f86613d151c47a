// The backend call, resilient: a GET and a keyed POST through
//   plan B → deadline → retry (with a budget) → circuit breaker → timeouts → libcurl
// printing every attempt, retry, breaker change and fallback.
//
//   example_http_client http://127.0.0.1:PORT
//
// Run it against examples/fault_server.cpp (scripts/demo.sh starts both),
// whose scripted misbehaviour shows: a 503 retried, a POST that timed out
// retried with the same Idempotency-Key, an unkeyed one not retried, a
// Retry-After honoured or — when it does not fit the deadline — plan B at
// once, and a breaker opening, rejecting, probing and closing again.
#include <resil/circuit_breaker.hpp>
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

using namespace std::chrono_literals;

// ---- The backend call: the part to copy ------------------------------------

// Plan B: a cheap answer that does not depend on what failed. Copies share
// their counters, so a fallback that hides an outage still shows on a graph.
inline auto cached_answer() {
    return resil::fallback_policy{[](const resil::outcome<resil::curl::response>&) {
        return resil::curl::response::from_parts(200, {}, "cached answer\n");
    }};
}

// One pipeline per dependency and deadline. The budget and the breaker are
// shared state: they live as long as the service, one per dependency.
template <class PlanB, class Listener>
auto backend_pipeline(const PlanB& plan_b, resil::duration deadline, resil::retry_budget& budget,
                      resil::circuit_breaker& breaker, Listener listener) {
    return resil::pipeline(plan_b,                               // counted, by reason
                           resil::deadline_policy{deadline},     // the whole call, all attempts
                           resil::retry_policy{{.max_attempts = 3,
                                                .backoff = resil::full_jitter{50ms, 400ms},
                                                .budget = &budget}},
                           std::ref(breaker),                    // each attempt counts
                           resil::timeout_policy{{.connect = 100ms, .read = 300ms, .total = 500ms}})
        .with_listener(std::move(listener));
}

// ---- What the demo prints ---------------------------------------------------

namespace {

long long ms(resil::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }
double ms_fraction(resil::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct printer {
    void operator()(const resil::events::retry_scheduled& e) const {
        std::printf("      retry in %lld ms (%s)\n", ms(e.delay),
                    e.from_retry_after ? "the server's Retry-After" : "full-jitter backoff");
    }
    void operator()(const resil::events::breaker_state_changed& e) const {
        std::printf("      breaker: %s -> %s (%.0f%% of %llu calls in the window failed)\n",
                    std::string(resil::to_string(e.from)).c_str(), std::string(resil::to_string(e.to)).c_str(),
                    e.failure_ratio * 100.0, static_cast<unsigned long long>(e.calls_in_window));
    }
    void operator()(const resil::events::rejected& e) const {
        std::printf("      rejected at once: %s", std::string(resil::to_string(e.reason)).c_str());
        if (e.retry_after) std::printf(" (next probe in %lld ms)", ms(*e.retry_after));
        std::printf("\n");
    }
    void operator()(const resil::events::budget_refused&) const { std::printf("      the retry budget refused a retry\n"); }
    void operator()(const resil::events::fallback_used& e) const {
        std::printf("      plan B, because: %s\n", std::string(resil::to_string(e.reason)).c_str());
    }
};

void print_attempt(const resil::context& ctx, const resil::curl::response& r) {
    const auto verdict = resil::curl::classify(r).verdict;
    std::printf("    attempt %u: ", ctx.attempt());
    if (r.completed())
        std::printf("HTTP %d", r.status());
    else
        std::printf("%s, %s", std::string(resil::curl::to_string(r.transport())).c_str(),
                    r.may_have_reached_server() ? "may have reached the server" : "never sent");
    std::printf(" -> %s (%.1f ms)\n", std::string(resil::to_string(verdict)).c_str(), ms_fraction(r.timings().total));
}

template <class Outcome>
void print_result(const Outcome& out) {
    if (out.from_fallback())
        std::printf("  => plan B (%s): %s", std::string(resil::to_string(out.fallback_reason())).c_str(),
                    out->body().c_str());
    else if (out.ok())
        std::printf("  => HTTP %d: %s", out->status(), out->body().c_str());
    else
        std::printf("  => failed: %s\n", std::string(resil::to_string(out.reason())).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // line by line, interleaved with the server's log
    const std::string base = argc > 1 ? argv[1] : "http://127.0.0.1:8080";
    using resil::curl::request;

    // One client per thread; it keeps connections alive between calls.
    resil::curl::client http({.propagate_deadline = true});
    resil::curl::client unkeyed({.idempotency_key = resil::curl::key_header_format::none, .propagate_deadline = true});

    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 10}};
    const resil::circuit_breaker_options breaker_options{
        .failure_ratio = 0.5, .window = 10s, .min_calls = 4, .open_for = 1500ms, .half_open_probes = 1};
    resil::circuit_breaker catalog_breaker{breaker_options};
    resil::circuit_breaker orders_breaker{breaker_options};
    resil::circuit_breaker quota_breaker{breaker_options};
    resil::circuit_breaker recommendations_breaker{breaker_options};
    const auto plan_b = cached_answer();

    // Each attempt goes through `client` and is printed.
    auto attempt = [](resil::curl::client& client, const request& req) {
        return [&client, &req](resil::context& ctx) {
            auto r = client.perform(req, ctx);
            print_attempt(ctx, r);
            return r;
        };
    };

    std::printf("\n1. GET /catalog: the server answers 503 once -> retried, success on attempt 2\n");
    {
        const auto pipe = backend_pipeline(plan_b, 800ms, budget, catalog_breaker, printer{});
        const auto get = request::get(base + "/catalog");
        print_result(pipe(attempt(http, get)));
    }

    std::printf("\n2. POST /orders with an Idempotency-Key: the first attempt times out after the server\n"
                "   read it -> ambiguous, but keyed: retried, with the same key\n");
    {
        const auto pipe = backend_pipeline(plan_b, 1500ms, budget, orders_breaker, printer{});
        const auto post = request::post(base + "/orders", R"({"sku":"A-42","qty":1})")
                              .add_header("Content-Type", "application/json");
        print_result(pipe(attempt(http, post)));
    }

    std::printf("\n3. POST /payments without a key: the same timeout is NOT retried (it may have been charged)\n");
    {
        const auto pipe = backend_pipeline(plan_b, 1500ms, budget, orders_breaker, printer{});
        const auto post = request::post(base + "/payments", R"({"cents":500})")
                              .add_header("Content-Type", "application/json");
        print_result(pipe(attempt(unkeyed, post)));
    }

    std::printf("\n4. GET /quota: 429 with Retry-After: 1 and a 3 s deadline -> waits the second, then succeeds\n");
    {
        const auto pipe = backend_pipeline(plan_b, 3s, budget, quota_breaker, printer{});
        const auto get = request::get(base + "/quota");
        const auto t0 = std::chrono::steady_clock::now();
        const auto out = pipe(attempt(http, get));
        print_result(out);
        std::printf("     (took %lld ms)\n", ms(std::chrono::steady_clock::now() - t0));
    }

    std::printf("\n5. GET /quota: 429 with Retry-After: 1 but a 300 ms deadline -> no wait, plan B at once\n");
    {
        const auto pipe = backend_pipeline(plan_b, 300ms, budget, quota_breaker, printer{});
        const auto get = request::get(base + "/quota");
        const auto t0 = std::chrono::steady_clock::now();
        const auto out = pipe(attempt(http, get));
        print_result(out);
        std::printf("     (took %lld ms)\n", ms(std::chrono::steady_clock::now() - t0));
    }

    std::printf("\n6. GET /recommendations: the dependency is down -> the breaker opens and answers plan B\n"
                "   at once; after 1.5 s one probe finds it recovered and closes it\n");
    {
        const auto pipe = backend_pipeline(plan_b, 1500ms, budget, recommendations_breaker, printer{});
        const auto get = request::get(base + "/recommendations");
        for (int call = 1; call <= 4; ++call) {
            std::printf("  call %d\n", call);
            print_result(pipe(attempt(http, get)));
        }
        std::printf("  ... 1.6 s later\n");
        std::this_thread::sleep_for(1600ms);
        std::printf("  call 5\n");
        print_result(pipe(attempt(http, get)));
    }

    std::printf("\nPlan B was used %llu times:", static_cast<unsigned long long>(plan_b.metrics().total()));
    for (std::size_t i = 0; i < resil::reason_count; ++i) {
        const auto why = static_cast<resil::reason>(i);
        if (const auto n = plan_b.count(why)) std::printf(" %s %llu;", std::string(resil::to_string(why)).c_str(), static_cast<unsigned long long>(n));
    }
    std::printf("\n");
    return 0;
}
