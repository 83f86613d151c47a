// resil::http::client (resil/http.hpp) against a real server on 127.0.0.1:
// it retries, keys and times out as the hand-built pipeline it stands for
// (deadline → retry + budget → breaker → timeouts around resil::curl::client),
// opens its breaker, validates its options in the policies' words, and is
// shared by threads.
#include <resil/circuit_breaker.hpp>
#include <resil/curl.hpp>
#include <resil/http.hpp>
#include <resil/resil.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using resil_test::action;

namespace {

// Short waits so that the test stays fast; everything else as the defaults.
resil::http::client_options quick_options() {
    resil::http::client_options o;
    o.deadline = 2s;
    o.retry.backoff_base = 1ms;
    o.retry.backoff_cap = 5ms;
    return o;
}

}  // namespace

TEST_CASE("http::client: a GET is retried on 503 until it succeeds, as the pipeline it wraps") {
    resil_test::fault_server server;
    server.on("/facade", {action::respond(503), action::respond(503), action::respond(200, "stock")});
    server.on("/pipeline", {action::respond(503), action::respond(503), action::respond(200, "stock")});

    resil::http::client http{quick_options()};
    const auto out = http.get(server.url("/facade"));
    REQUIRE(out);
    CHECK(out.reason() == resil::reason::none);
    CHECK(out.status() == 200);
    CHECK(out.body() == "stock");
    CHECK(out.attempts() == 3);
    CHECK(out.transport() == "completed");

    // The same call through the pipeline built by hand.
    resil::retry_budget budget;
    resil::circuit_breaker breaker;
    resil::curl::client curl;
    auto pipe = resil::pipeline(resil::deadline_policy{2s},
                                resil::retry_policy{{.backoff = resil::full_jitter{1ms, 5ms}, .budget = &budget}},
                                std::ref(breaker), resil::timeout_policy{resil::timeouts{}});
    const auto by_hand = pipe([&](resil::context& ctx) { return curl.perform(resil::curl::request::get(server.url("/pipeline")), ctx); });
    REQUIRE(by_hand.ok());
    CHECK(server.requests("/facade").size() == server.requests("/pipeline").size());
    CHECK(server.requests("/facade").size() == 3);
}

TEST_CASE("http::client: a POST carries one idempotency key on every attempt, so it is retried") {
    resil_test::fault_server server;
    server.on("/charges", {action::respond(503), action::close_after_request(), action::respond(201, "done")});

    resil::http::client http{quick_options()};
    const auto out = http.post(server.url("/charges"), R"({"cents":500})", {{"Content-Type", "application/json"}});
    REQUIRE(out);
    CHECK(out.status() == 201);
    CHECK(out.attempts() == 3);

    const auto seen = server.requests("/charges");
    REQUIRE(seen.size() == 3);
    const auto key = seen[0].header("Idempotency-Key");
    REQUIRE(key.has_value());
    CHECK(key->size() > 30);
    for (const auto& r : seen) {
        CHECK(r.method == "POST");
        CHECK(r.body == R"({"cents":500})");
        CHECK(r.header("Content-Type") == std::optional<std::string>("application/json"));
        CHECK(r.header("Idempotency-Key") == key);
    }

    SECTION("headers made at run time: a vector of them") {
        std::vector<resil::http::header> headers{{"Content-Type", "text/plain"}};
        const std::string tenant = "tenant-" + std::to_string(42);
        headers.push_back({"X-Tenant", tenant});
        const auto again = http.post(server.url("/charges"), "x", headers);
        CHECK(again);
        const auto last = server.requests("/charges").back();
        CHECK(last.header("Content-Type") == std::optional<std::string>("text/plain"));
        CHECK(last.header("X-Tenant") == std::optional<std::string>("tenant-42"));
        CHECK(last.header("Idempotency-Key").has_value());
        const std::array<resil::http::header, 1> accept{{{"Accept", "text/plain"}}};
        CHECK(http.get(server.url("/charges"), accept));
        CHECK(server.requests("/charges").back().header("Accept") == std::optional<std::string>("text/plain"));
    }

    SECTION("the key's header is an option") {
        auto o = quick_options();
        o.idempotency_key_header = "X-Request-Key";
        resil::http::client renamed{o};
        const auto again = renamed.post(server.url("/charges"), "x");
        CHECK(again);
        CHECK(server.requests("/charges").back().header("X-Request-Key").has_value());
        CHECK_FALSE(server.requests("/charges").back().header("Idempotency-Key").has_value());
    }
}

TEST_CASE("http::client: each call has its own key; without keys a POST reaches the server at most once") {
    resil_test::fault_server server;
    server.on("/orders", {action::respond(201, "a"), action::respond(201, "b")});
    server.on("/once", {action::close_after_request()});

    resil::http::client keyed{quick_options()};
    REQUIRE(keyed.post(server.url("/orders"), "x"));
    REQUIRE(keyed.post(server.url("/orders"), "x"));
    const auto orders = server.requests("/orders");
    REQUIRE(orders.size() == 2);
    REQUIRE(orders[0].header("Idempotency-Key").has_value());
    CHECK(orders[0].header("Idempotency-Key") != orders[1].header("Idempotency-Key"));

    auto o = quick_options();
    o.idempotency_key = resil::http::key_header_format::none;
    resil::http::client unkeyed{o};
    // The server reads the request and closes without a reply: it may have
    // acted on it, and without a key nothing makes a repeat safe.
    const auto out = unkeyed.post(server.url("/once"), "x");
    REQUIRE_FALSE(out);
    CHECK(out.reason() == resil::reason::unsafe_to_retry);
    CHECK(out.attempts() == 1);
    const auto seen = server.requests("/once");
    REQUIRE(seen.size() == 1);
    CHECK_FALSE(seen[0].header("Idempotency-Key").has_value());
}

TEST_CASE("http::client: a POST without a body still says Content-Length: 0; a GET sends none") {
    resil_test::fault_server server;
    server.on("/empty", {action::respond(200), action::respond(200)});
    resil::http::client http{quick_options()};
    REQUIRE(http.post(server.url("/empty"), ""));
    REQUIRE(http.get(server.url("/empty")));
    const auto seen = server.requests("/empty");
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].header("Content-Length") == std::optional<std::string>("0"));
    CHECK(seen[1].method == "GET");
    CHECK_FALSE(seen[1].header("Content-Length").has_value());
}

TEST_CASE("http::client: a silent server ends each attempt at the read timeout and the call at its deadline") {
    resil_test::fault_server server;
    server.on("/slow", {action::hang()});

    auto o = quick_options();
    o.deadline = 400ms;
    o.timeouts = {.connect = 100ms, .read = 50ms, .total = 150ms};
    resil::http::client http{o};
    const auto start = std::chrono::steady_clock::now();
    const auto out = http.get(server.url("/slow"));
    const auto took = std::chrono::steady_clock::now() - start;

    REQUIRE_FALSE(out);
    CHECK(out.reason() == resil::reason::retries_exhausted);
    CHECK(out.attempts() == 3);
    CHECK(out.status() == 0);
    CHECK(out.transport() == "read_timeout");
    CHECK(server.requests("/slow").size() == 3);
    CHECK(took >= 150ms);  // three attempts of at least 50 ms each
    CHECK(took < 400ms + 200ms);
}

TEST_CASE("http::client: any non-idempotent method is keyed, so its ambiguous failures are retried under one key") {
    resil_test::fault_server server;
    server.on("/append", {action::close_after_request()});

    resil::http::client http{quick_options()};
    // The server reads each request and closes without a reply: it may have
    // acted on it, which only the key makes safe to repeat.
    const auto out = http.perform("PATCH", server.url("/append"), "x");
    REQUIRE_FALSE(out);
    CHECK(out.attempts() == 3);
    const auto seen = server.requests("/append");
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].header("Idempotency-Key") == seen[2].header("Idempotency-Key"));
}

TEST_CASE("http::client: the breaker opens after failures and refuses calls before any attempt") {
    resil_test::fault_server server;
    server.on("/down", {action::respond(500)});

    auto o = quick_options();
    o.retry.max_attempts = 1;
    o.circuit_breaker.min_calls = 4;
    o.circuit_breaker.open_for = 10s;
    resil::http::client http{o};
    for (int i = 0; i < 4; ++i) {
        const auto out = http.get(server.url("/down"));
        CHECK_FALSE(out);
        CHECK(out.status() == 500);
        CHECK(out.attempts() == 1);
    }
    const auto refused = http.get(server.url("/down"));
    CHECK(refused.reason() == resil::reason::circuit_open);
    CHECK(refused.attempts() == 0);
    CHECK(refused.transport().empty());
    CHECK(server.requests("/down").size() == 4);

    SECTION("without a breaker every call is sent") {
        o.circuit_breaker.enabled = false;
        resil::http::client open{o};
        for (int i = 0; i < 6; ++i) CHECK(open.get(server.url("/down")).attempts() == 1);
        CHECK(server.requests("/down").size() == 10);
    }
}

TEST_CASE("http::client: the retry budget stops retries once spent; disabled, it does not") {
    resil_test::fault_server server;
    server.on("/flaky", {action::respond(503)});

    auto o = quick_options();
    o.circuit_breaker.enabled = false;
    // No share of the calls, and a reserve of min_per_second × window = 1 retry.
    o.retry_budget = {.enabled = true, .ratio = 0.0, .min_per_second = 1, .window = 1s};
    resil::http::client budgeted{o};
    const auto first = budgeted.get(server.url("/flaky"));
    CHECK(first.attempts() == 2);  // the reserve's one retry, then the budget is empty
    CHECK(first.reason() == resil::reason::budget_exhausted);

    o.retry_budget.enabled = false;
    resil::http::client unbudgeted{o};
    CHECK(unbudgeted.get(server.url("/flaky")).attempts() == 3);
}

TEST_CASE("http::client: options are validated by the policies they become, named as client_options names them") {
    auto check = [](resil::http::client_options o, const std::string& message) {
        CHECK(o.validate() == message);
        try {
            resil::http::client c{o};
            FAIL("no exception for " << message);
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()) == "resil::http::client: " + message);
        }
    };
    CHECK(resil::http::client_options{}.validate().empty());
    resil::http::client_options o;
    o.retry.max_attempts = 0;
    check(o, "`retry.max_attempts` must be in [1, 100], got 0");
    o = {};
    o.deadline = 0ms;
    check(o, "`deadline` must be in [1ms, 24h], got 0s");
    o = {};
    o.retry.backoff_base = 0ms;
    check(o, resil::retry_options{.backoff = resil::full_jitter{0ms, 1s}}.validate()->requirement.insert(0, "`retry.backoff_base` "));
    o = {};
    o.timeouts.read = 0ms;
    check(o, "`timeouts.read` must be at least 1ms, got 0s");
    o = {};
    o.retry_budget.ratio = 2.0;
    check(o, "`retry_budget.ratio` " + resil::retry_budget_options{.ratio = 2.0}.validate()->requirement);
    o.retry_budget.enabled = false;  // a disabled policy is not checked
    CHECK(o.validate().empty());
    o = {};
    o.circuit_breaker.half_open_probes = 0;
    check(o, "`circuit_breaker.half_open_probes` " +
                 resil::circuit_breaker_options{.half_open_probes = 0}.validate()->requirement);
    // Durations too long for nanoseconds are refused, never overflowed.
    for (auto huge : {std::chrono::milliseconds::max(), std::chrono::milliseconds::min()}) {
        o = {};
        o.deadline = huge;
        CHECK_FALSE(o.validate().empty());
        CHECK_THROWS_AS(resil::http::client{o}, std::invalid_argument);
        o = {};
        o.retry.backoff_cap = huge;
        CHECK_FALSE(o.validate().empty());
        o = {};
        o.circuit_breaker.open_for = huge;
        CHECK(o.validate().starts_with("`circuit_breaker.open_for` must be"));
        o = {};
        o.retry_budget.window = huge;
        CHECK(o.validate().starts_with("`retry_budget.window` must be"));
    }
    o = {};
    o.idempotency_key_header = "Bad Header";
    check(o, R"(`idempotency_key_header` must be an HTTP token, got "Bad Header")");
    o = {};
    o.idempotency_key = static_cast<resil::http::key_header_format>(7);
    check(o, "`idempotency_key` must be quoted, unquoted or none, got 7");
}

TEST_CASE("http::client: its defaults are the policies' defaults") {
    const resil::http::client_options o;
    const resil::retry_options retry;
    CHECK(o.retry.max_attempts == retry.max_attempts);
    CHECK(resil::backoff{resil::full_jitter{o.retry.backoff_base, o.retry.backoff_cap}} == retry.backoff);
    CHECK(o.retry.max_wait == retry.max_wait);
    const resil::retry_budget_options budget;
    CHECK(o.retry_budget.ratio == budget.ratio);
    CHECK(o.retry_budget.min_per_second == budget.min_per_second);
    CHECK(o.retry_budget.window == budget.window);
    const resil::circuit_breaker_options breaker;
    CHECK(o.circuit_breaker.failure_ratio == breaker.failure_ratio);
    CHECK(o.circuit_breaker.window == breaker.window);
    CHECK(o.circuit_breaker.min_calls == breaker.min_calls);
    CHECK(o.circuit_breaker.open_for == breaker.open_for);
    CHECK(o.circuit_breaker.half_open_probes == breaker.half_open_probes);
    const resil::timeouts timeouts;
    CHECK(o.timeouts.connect == timeouts.connect);
    CHECK(o.timeouts.read == timeouts.read);
    CHECK(o.timeouts.total == timeouts.total);
    CHECK(o.idempotency_key_header == resil::curl::client_options{}.idempotency_key_header);
    CHECK(static_cast<int>(o.idempotency_key) == static_cast<int>(resil::curl::client_options{}.idempotency_key));
    const resil::curl::client_options transport;
    CHECK(o.transport.http_version == transport.http_version);
    CHECK(o.transport.redirects.max == transport.redirects.max);
    CHECK(o.transport.tls.ca_file == transport.tls.ca_file);
    CHECK(o.transport.proxy.url == transport.proxy.url);
}

TEST_CASE("http::client: bad requests are refused before any I/O; a moved-from client says so") {
    resil_test::fault_server server;
    server.on("/x", {action::respond(200)});
    resil::http::client http{quick_options()};
    CHECK_THROWS_AS(http.get("ftp://example.com/"), std::invalid_argument);
    CHECK_THROWS_AS(http.perform("GE T", server.url("/x"), ""), std::invalid_argument);
    CHECK_THROWS_AS(http.get(server.url("/x"), {{"X-Bad", "a\r\nb"}}), std::invalid_argument);
    CHECK(server.requests("/x").empty());

    resil::http::client moved{std::move(http)};
    CHECK(moved.get(server.url("/x")));
    CHECK_THROWS_AS(http.get(server.url("/x")), std::logic_error);  // NOLINT(bugprone-use-after-move): on purpose
    CHECK_THROWS_AS((void)http.options(), std::logic_error);         // NOLINT(bugprone-use-after-move): on purpose
    http = std::move(moved);
    CHECK(http.get(server.url("/x")));
    CHECK(http.options().deadline == 2s);
}

TEST_CASE("http::client: one client shared by threads; each call borrows a libcurl client") {
    resil_test::fault_server server;
    server.on("/item", {action::respond_after(5ms, 200, "ok")});
    resil::http::client http{quick_options()};

    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 10; ++i) {
                if (http.get(server.url("/item"))) ok.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(ok.load() == 40);
    CHECK(server.requests("/item").size() == 40);
}

TEST_CASE("http::client: a server of a private CA is reached with transport.tls; without the CA it is refused") {
    resil_test::tls_files pki;
    resil_test::tls_nginx nginx{pki, R"(location / { add_header X-Served tls; return 200 "private\n"; })"};
    resil::http::client_options o;
    o.retry.max_attempts = 1;
    o.transport.tls.ca_file = pki.path("ca.pem");
    o.transport.http_version = resil::curl::http_version::http1_1;
    resil::http::client trusting{o};
    const auto r = trusting.get(nginx.https_url("/"));
    REQUIRE(r);
    CHECK(r.body() == "private\n");
    CHECK(r.header("x-served") == "tls");  // the same resil::http::response as a dependency's: header fields too
    CHECK(trusting.options().transport.tls.ca_file == pki.path("ca.pem"));

    resil::http::client_options plain;
    plain.retry.max_attempts = 1;
    resil::http::client system_trust{plain};
    const auto refused = system_trust.get(nginx.https_url("/"));
    CHECK_FALSE(refused);
    CHECK(refused.status() == 0);
    CHECK(refused.transport() != "completed");  // the handshake failed: no response at all

    auto missing = o;
    missing.transport.tls.ca_file = pki.path("no-such-ca.pem");
    CHECK(missing.validate().starts_with("`transport.tls.ca_file` must be a readable file, got"));
    CHECK_THROWS_WITH(resil::http::client{missing},
                      Catch::Matchers::StartsWith("resil::http::client: `transport.tls.ca_file` must be a readable file"));
}
