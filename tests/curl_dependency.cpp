// resil::http::dependency (resil/http/dependency.hpp), blocking face: one
// object per dependency composing the balancer, retries with keys and a
// budget, breakers (per endpoint and whole), limits, pacing, a local quota
// and timeouts, against real servers on 127.0.0.1.
#include <resil/http/dependency.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/payment_provider.hpp"

using namespace std::chrono_literals;
using resil::http::dependency;
using resil::http::dependency_options;
using resil_test::action;
using resil_test::fault_server;
using resil_test::payment_provider;

namespace {

dependency_options one_endpoint(const fault_server& s, std::string name = "inventory") {
    dependency_options o;
    o.name = std::move(name);
    o.endpoints = {{.address = s.url("")}};
    o.retry.backoff = resil::full_jitter{1ms, 5ms};
    return o;
}

template <class F>
std::string thrown_by(F f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "nothing thrown";
}

std::string message_of(const dependency_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : std::string{};
}

}  // namespace

TEST_CASE("dependency: a reply's status, body, header fields, attempts, endpoint and rate-limit reading") {
    fault_server s;
    s.on("/v1/items", {action::respond(503, "busy"),
                       action::respond(200, "items", {{"ETag", "\"v7\""}, {"RateLimit-Limit", "100"},
                                                      {"RateLimit-Remaining", "42"}, {"RateLimit-Reset", "30"}})});
    dependency inventory{one_endpoint(s)};
    const auto r = inventory.get("/v1/items", {{"Accept", "text/plain"}});
    REQUIRE(r);
    CHECK(r.status() == 200);
    CHECK(r.body() == "items");
    CHECK(r.header("etag") == "\"v7\"");
    CHECK(!r.header("Location"));
    CHECK(r.attempts() == 2);
    CHECK(r.endpoint() == s.url(""));
    CHECK(r.transport() == "completed");
    CHECK(r.rate_limit().remaining == 42);
    CHECK(r.rate_limit().limit == 100);
    CHECK(s.requests("/v1/items").at(1).header("Accept") == "text/plain");
    const auto m = inventory.metrics().snapshot();
    CHECK(inventory.metrics().name() == "inventory");
    CHECK(m.calls == 1);
    CHECK(m.attempts == 2);
}

TEST_CASE("dependency: a retry goes to another replica; the reply says which answered") {
    fault_server a, b;
    a.on("/v1/items", {action::respond(503, "a busy")});
    b.on("/v1/items", {action::respond(200, "from b")});
    dependency_options o;
    o.name = "inventory";
    o.endpoints = {{.address = a.url("")}, {.address = b.url("")}};
    o.balancing.policy = resil::balancing_policy::round_robin;
    o.retry.backoff = resil::full_jitter{1ms, 5ms};
    dependency inventory{o};
    for (int i = 0; i < 4; ++i) {
        const auto r = inventory.get("/v1/items");
        REQUIRE(r);
        CHECK(r.body() == "from b");
        CHECK(r.endpoint() == b.url(""));
        CHECK(r.attempts() <= 2);
    }
    CHECK(b.requests("/v1/items").size() == 4);
}

TEST_CASE("dependency: primary and backup providers, keyed POSTs charged at most once, failover past an open breaker") {
    payment_provider primary{"primary"};
    payment_provider backup{"backup"};
    dependency_options o;
    o.name = "payments";
    o.endpoints = {{.address = primary.url(""), .idempotency_scope = "provider-a"},
                   {.address = backup.url(""), .priority = 1, .idempotency_scope = "provider-b"}};
    o.balancing.endpoint_breaker = resil::circuit_breaker_options{
        .mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 2, .open_for = 60s};
    o.balancing.outlier.consecutive_failures = 0;  // the breaker alone takes the primary out
    o.retry = {.max_attempts = 3, .backoff = resil::full_jitter{1ms, 5ms}};
    dependency payments{o};

    auto r = payments.post("/charge", "amount=100");
    REQUIRE(r);
    CHECK(r.endpoint() == primary.url(""));
    CHECK(primary.total_charges() == 1);

    // Dying after charging: the POST may have been processed there; its
    // key stays in provider-a's scope, and the backup never sees it.
    primary.die_on_next_request(payment_provider::death::after_charging);
    r = payments.post("/charge", "amount=100");
    CHECK(!r);
    // Honest reasons: the primary may have acted and is not there to finish.
    CHECK((r.reason() == resil::reason::no_endpoint_in_scope || r.reason() == resil::reason::retries_exhausted));
    CHECK(primary.total_charges() == 2);
    CHECK(backup.total_charges() == 0);

    // Refused connections (never sent): failover to the backup, one charge.
    primary.kill();
    for (int i = 0; i < 5; ++i) {
        r = payments.post("/charge", "amount=100");
        REQUIRE(r);
        CHECK(r.endpoint() == backup.url(""));
        CHECK(r.body() == "backup charged");
    }
    CHECK(backup.total_charges() == 5);
    CHECK(primary.total_charges() == 2);
    // The primary's breaker opened (counted in the dependency's metrics);
    // the calls after it went straight to the backup.
    // Its transitions are the primary's, not the dependency's (which has no
    // breaker of its own): labelled with its address.
    CHECK(payments.metrics().snapshot().breaker_opened == 0);
    const auto per_endpoint = payments.metrics().endpoints();
    const auto primary_figures = std::find_if(per_endpoint.begin(), per_endpoint.end(),
                                              [&](const auto& e) { return e.address == primary.url(""); });
    REQUIRE(primary_figures != per_endpoint.end());
    CHECK(primary_figures->breaker_opened == 1);
    CHECK(primary_figures->breaker == resil::circuit_state::open);
    CHECK(primary_figures->picks.value_or(0) >= 2);
    const auto text = resil::prometheus_text({payments.metrics()});
    CHECK(text.find("resil_hedges_total") == std::string::npos);  // no hedging: no hedge series
    CHECK(text.find("endpoint=\"" + primary.url("") + "\"") != std::string::npos);
    const auto status = payments.balancer().status(resil::steady_clock{}.now());
    REQUIRE(status.size() == 2);
    CHECK(status[0].breaker == resil::circuit_state::open);
    CHECK(r.attempts() == 1);
}

TEST_CASE("dependency: the whole dependency's breaker opens and then answers at once, without an attempt") {
    fault_server s;
    s.on("/", {action::respond(500)});
    auto o = one_endpoint(s);
    o.retry.max_attempts = 1;
    o.circuit_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                       .consecutive_failures = 2, .open_for = 60s};
    o.balancing.outlier.consecutive_failures = 0;
    dependency d{o};
    CHECK(d.get("/").status() == 500);
    CHECK(d.get("/").status() == 500);
    const auto r = d.get("/");
    CHECK(r.reason() == resil::reason::circuit_open);
    CHECK(r.attempts() == 0);
    CHECK(r.endpoint().empty());
    CHECK(s.requests("/").size() == 2);
    const auto m = d.metrics().snapshot();
    CHECK(m.breaker_opened == 1);
    CHECK(m.rejections[resil::reason::circuit_open] == 1);
}

TEST_CASE("dependency: a concurrency limit sheds the call beyond it") {
    fault_server s;
    s.on("/slow", {action::respond_at_gate("go", 200, "slow")});
    auto o = one_endpoint(s);
    o.concurrency_limit = resil::concurrency_limit_options{.max_in_flight = 1};
    dependency d{o};
    auto first = std::async(std::launch::async, [&] { return d.get("/slow"); });
    // Wait until the first call is at the server.
    for (int i = 0; i < 2000 && s.requests("/slow").empty(); ++i) std::this_thread::sleep_for(5ms);
    REQUIRE(s.requests("/slow").size() == 1);
    const auto second = d.get("/slow");
    CHECK(second.reason() == resil::reason::shed);
    CHECK(second.attempts() == 0);
    s.open_gate("go");
    CHECK(first.get().body() == "slow");
}

TEST_CASE("dependency: pacing follows the server's RateLimit fields; a local quota refuses beyond its burst") {
    SECTION("pacing") {
        fault_server s;
        s.on("/", {action::respond(200, "ok", {{"RateLimit-Limit", "10"}, {"RateLimit-Remaining", "0"},
                                              {"RateLimit-Reset", "50"}})});
        auto o = one_endpoint(s);
        o.pacing = resil::paced_bucket_options{.rate = 100, .burst = 5, .max_wait = 10ms};
        dependency d{o};
        CHECK(d.get("/"));
        const auto r = d.get("/");  // nothing left for 50 s: no token within max_wait
        CHECK(r.reason() == resil::reason::rate_limited);
        CHECK(r.attempts() == 0);
        CHECK(s.requests("/").size() == 1);
        CHECK(d.metrics().snapshot().pace_changes >= 1);
    }
    SECTION("local quota") {
        fault_server s;
        s.on("/", {action::respond(200, "ok")});
        auto o = one_endpoint(s);
        o.quota = resil::token_bucket_options{.rate = 0.01, .burst = 2};
        dependency d{o};
        CHECK(d.get("/"));
        CHECK(d.get("/"));
        const auto r = d.get("/");
        CHECK(r.reason() == resil::reason::rate_limited);
        CHECK(s.requests("/").size() == 2);
    }
}

TEST_CASE("dependency: replace_endpoints during calls keeps the rest, and the calls go to the new set") {
    fault_server a, b;
    a.on("/", {action::respond(200, "a")});
    b.on("/", {action::respond(200, "b")});
    dependency_options o;
    o.name = "inventory";
    o.endpoints = {{.address = a.url("")}};
    o.circuit_breaker = resil::circuit_breaker_options{};
    dependency d{o};
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0}, calls{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 3; ++t)
        callers.emplace_back([&] {
            while (!stop) {
                if (!d.get("/")) ++failures;
                ++calls;
            }
        });
    for (int i = 0; i < 2000 && calls < 20; ++i) std::this_thread::sleep_for(1ms);
    d.replace_endpoints({{.address = a.url("")}, {.address = b.url("")}});
    d.replace_endpoints({{.address = b.url("")}});
    const int at_switch = calls;
    for (int i = 0; i < 2000 && calls < at_switch + 20; ++i) std::this_thread::sleep_for(1ms);
    stop = true;
    for (auto& t : callers) t.join();
    CHECK(failures == 0);
    CHECK(d.get("/").body() == "b");
    CHECK(d.metrics().snapshot().calls == static_cast<std::uint64_t>(calls) + 1);
    CHECK(d.balancer().metrics().replacements == 2);
    CHECK_THAT(thrown_by([&] { d.replace_endpoints({{.address = "ftp://x"}}); }),
               Catch::Matchers::StartsWith("resil::http::dependency: `endpoints[0].address` must be"));
    CHECK_THAT(thrown_by([&] { d.replace_endpoints({}); }),
               Catch::Matchers::StartsWith("resil::http::dependency: `endpoints` must name at least one endpoint"));
    CHECK(d.get("/").body() == "b");  // a refused list changed nothing
}

TEST_CASE("dependency_options::validate names the field from the root") {
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = "http://127.0.0.1:1"}};
    CHECK(message_of(o).empty());
    {
        auto bad = o;
        bad.name = "Pricing API";
        CHECK(message_of(bad) == "`name` must be 1 to 64 characters of [a-z0-9_-], got \"Pricing API\"");
    }
    {
        auto bad = o;
        bad.endpoints.push_back({.address = "nowhere"});
        CHECK(message_of(bad).starts_with("`endpoints[1].address` must be an http:// or https:// URL"));
    }
    {
        auto bad = o;
        bad.endpoints.clear();
        CHECK(message_of(bad).starts_with("`endpoints` must name at least one endpoint, got none"));
    }
    {
        auto bad = o;
        bad.retry.max_attempts = 0;
        CHECK(message_of(bad) == "`retry.max_attempts` must be in [1, 100], got 0");
    }
    {
        auto bad = o;
        bad.concurrency_limit = resil::concurrency_limit_options{};
        bad.adaptive_limit = resil::adaptive_limit_options{};
        CHECK(message_of(bad).starts_with("`adaptive_limit` must be absent while concurrency_limit is given"));
    }
    {
        auto bad = o;
        bad.health_check = resil::http::health_check_settings{.path = "healthz"};
        CHECK(message_of(bad).starts_with("`health_check.path` must start with '/' and hold no space"));
    }
    {
        auto bad = o;
        bad.balancing.outlier.max_ejection_share = 2;
        CHECK(message_of(bad).starts_with("`balancing.outlier.max_ejection_share` must be in [0, 1]"));
    }
    {
        auto bad = o;
        bad.faults = resil::fault_injection_options{.enabled = true, .abort = {.probability = 1.5}};
        CHECK(message_of(bad) == "`faults.abort.probability` must be in [0, 1], got 1.5");
    }
    {
        auto bad = o;
        bad.retry.max_attempts = 0;
        CHECK(thrown_by([&] { dependency d{bad}; }) ==
              "resil::http::dependency: `retry.max_attempts` must be in [1, 100], got 0");
    }
}

TEST_CASE("dependency: a shared quota without resil/http/redis_quota.hpp is an error at construction") {
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = "http://127.0.0.1:1"}};
    o.shared_quota = resil::redis::rate_limiter_options{.key = "pricing"};
    CHECK_THAT(thrown_by([&] { dependency d{o}; }),
               Catch::Matchers::StartsWith("resil::http::dependency: `shared_quota` needs the Redis quota: include "
                                           "<resil/http/redis_quota.hpp>"));
}

TEST_CASE("dependency: faults injected at 100 % run the breaker path (and the caller's plan B) without reaching the server") {
    fault_server s;
    s.on("/", {action::respond(200, "ok")});
    auto o = one_endpoint(s);
    o.retry.max_attempts = 2;
    o.retry_budget.reset();
    o.circuit_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                       .consecutive_failures = 2, .open_for = 60s};
    o.faults = resil::fault_injection_options{.enabled = true, .abort = {.probability = 1.0}};
    dependency d{o};
    // Both attempts fail on purpose, judged retryable as a real 503 would
    // be: retried, then the breaker has seen two failures in a row.
    const auto first = d.get("/");
    CHECK(first.reason() == resil::reason::retries_exhausted);
    CHECK(first.attempts() == 0);  // nothing was sent
    const auto second = d.get("/");  // the caller's plan B from here on
    CHECK(second.reason() == resil::reason::circuit_open);
    CHECK(s.requests("/").empty());
    const auto m = d.metrics().snapshot();
    CHECK(m.retries == 1);
    CHECK(m.breaker_opened == 1);
    CHECK(m.failures[resil::reason::retries_exhausted] == 1);
    CHECK(m.rejections[resil::reason::circuit_open] == 1);
}

TEST_CASE("dependency: tagged faults hit only the calls carrying the tag") {
    fault_server s;
    s.on("/", {action::respond(200, "ok")});
    auto o = one_endpoint(s);
    o.retry.max_attempts = 1;
    o.faults = resil::fault_injection_options{
        .enabled = true, .tag = "chaos", .abort = {.probability = 1.0, .verdict = resil::verdict::permanent}};
    dependency d{o};
    CHECK(d.get("/"));
    const auto tagged = d.perform({.path = "/", .fault_tag = "chaos"});
    CHECK(tagged.reason() == resil::reason::injected_fault);
    CHECK(tagged.attempts() == 0);
    CHECK(d.perform({.path = "/", .fault_tag = "other"}));
    CHECK(s.requests("/").size() == 2);
    SECTION("disabled faults inject nothing, tagged or not") {
        auto off = one_endpoint(s, "off");
        off.faults = resil::fault_injection_options{.tag = "chaos", .abort = {.probability = 1.0}};
        dependency quiet{off};
        CHECK(quiet.perform({.path = "/", .fault_tag = "chaos"}));
    }
}
