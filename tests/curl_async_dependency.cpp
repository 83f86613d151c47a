// resil::http::async_dependency (resil/http/async_dependency.hpp): the Asio
// face of a dependency, over the same balancer, breakers, limits, quota and
// metrics as its blocking calls, hedging for repeatable requests; real
// servers on 127.0.0.1.
#include <resil/http/async_dependency.hpp>

#include <asio/bind_allocator.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/payment_provider.hpp"

using namespace std::chrono_literals;
using resil::http::dependency;
using resil::http::dependency_options;
using resil::http::response;
using resil_test::action;
using resil_test::fault_server;
using resil_test::payment_provider;

namespace {

// Runs `n` calls of `face` at once on `io`, each with a callback.
std::vector<response> run_calls(::asio::io_context& io, resil::http::async_dependency& face,
                                std::vector<resil::http::request> requests) {
    std::vector<response> out(requests.size());
    std::size_t done = 0;
    for (std::size_t i = 0; i < requests.size(); ++i)
        face.async_perform(requests[i], [&, i](std::exception_ptr e, response r) {
            REQUIRE(!e);
            out[i] = std::move(r);
            ++done;
        });
    io.run();
    io.restart();
    REQUIRE(done == requests.size());
    return out;
}

// An allocator that counts what it hands out and takes back.
template <class T>
struct counting_allocator {
    using value_type = T;
    std::size_t* allocated;
    std::size_t* freed;
    counting_allocator(std::size_t* a, std::size_t* f) noexcept : allocated(a), freed(f) {}
    template <class U>
    counting_allocator(const counting_allocator<U>& o) noexcept : allocated(o.allocated), freed(o.freed) {}
    T* allocate(std::size_t n) {
        ++*allocated;
        return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        ++*freed;
        std::allocator<T>{}.deallocate(p, n);
    }
    template <class U>
    bool operator==(const counting_allocator<U>& o) const noexcept {
        return allocated == o.allocated;
    }
};

}  // namespace

TEST_CASE("async dependency: every policy configured, a retry to another replica, the reply's parts") {
    fault_server a, b;
    a.on("/v1/prices", {action::respond(503, "a busy")});
    b.on("/v1/prices", {action::respond(200, "42", {{"RateLimit-Limit", "100"}, {"RateLimit-Remaining", "60"},
                                                     {"RateLimit-Reset", "30"}})});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = a.url("")}, {.address = b.url("")}};
    o.balancing.policy = resil::balancing_policy::round_robin;
    o.balancing.endpoint_breaker = resil::circuit_breaker_options{};
    o.retry.backoff = resil::full_jitter{1ms, 5ms};
    o.timeouts = {.connect = 1s, .total = 5s};
    o.circuit_breaker = resil::circuit_breaker_options{};
    o.concurrency_limit = resil::concurrency_limit_options{.max_in_flight = 8};
    o.pacing = resil::paced_bucket_options{.rate = 1000, .burst = 100, .max_wait = 1s};
    o.quota = resil::token_bucket_options{.rate = 1000, .burst = 100};
    dependency pricing{o};
    ::asio::io_context io{1};
    auto face = pricing.on(io);
    const auto replies = run_calls(io, face, std::vector<resil::http::request>(4, {.path = "/v1/prices"}));
    for (const auto& r : replies) {
        REQUIRE(r);
        CHECK(r.body() == "42");
        CHECK(r.endpoint() == b.url(""));
        CHECK(r.attempts() <= 2);
        CHECK(r.rate_limit().remaining == 60);
    }
    // The blocking face shares the state: the same metrics, the same balancer.
    CHECK(pricing.get("/v1/prices").body() == "42");
    const auto m = pricing.metrics().snapshot();
    CHECK(m.calls == 5);
    CHECK(m.successes == 5);
    CHECK(m.attempts >= 6);
}

TEST_CASE("async dependency: a quota and a breaker shared with the blocking face refuse on Asio too") {
    fault_server s;
    s.on("/", {action::respond(500)});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    o.retry.max_attempts = 1;
    o.balancing.outlier.consecutive_failures = 0;
    o.circuit_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                       .consecutive_failures = 2, .open_for = 60s};
    dependency d{o};
    CHECK(d.get("/").status() == 500);  // blocking
    ::asio::io_context io{1};
    auto face = d.on(io);
    auto first = run_calls(io, face, {{.path = "/"}});
    CHECK(first[0].status() == 500);  // the second failure in a row: the breaker opens
    auto second = run_calls(io, face, {{.path = "/"}});
    CHECK(second[0].reason() == resil::reason::circuit_open);
    CHECK(second[0].attempts() == 0);
    CHECK(d.get("/").reason() == resil::reason::circuit_open);
    CHECK(s.requests("/").size() == 2);

    fault_server q;
    q.on("/", {action::respond(200)});
    dependency_options qo;
    qo.name = "quota";
    qo.endpoints = {{.address = q.url("")}};
    qo.quota = resil::token_bucket_options{.rate = 0.01, .burst = 2};
    dependency limited{qo};
    CHECK(limited.get("/"));
    auto qface = limited.on(io);
    auto replies = run_calls(io, qface, {{.path = "/"}, {.path = "/"}});
    CHECK(static_cast<bool>(replies[0]) != static_cast<bool>(replies[1]));  // one token left for two calls
    CHECK(q.requests("/").size() == 2);
}

TEST_CASE("async dependency: a slow replica is hedged to another for a GET; a POST is never copied") {
    fault_server slow, fast;
    slow.on("/v1/prices", {action::respond_after(3000ms, 200, "slow")});
    fast.on("/v1/prices", {action::respond(200, "fast")});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = slow.url("")}, {.address = fast.url("")}};
    o.balancing.policy = resil::balancing_policy::round_robin;
    o.hedge = resil::hedge_options{.max_hedges = 1, .delay = 50ms};
    o.retry.max_attempts = 1;
    dependency d{o};
    ::asio::io_context io{1};
    auto face = d.on(io);
    // Round robin starts at the slow replica: the hedge wins at the other.
    auto r = run_calls(io, face, {{.path = "/v1/prices"}});
    REQUIRE(r[0]);
    CHECK(r[0].body() == "fast");
    CHECK(r[0].attempts() == 2);
    CHECK(slow.requests("/v1/prices").size() == 1);
    CHECK(fast.requests("/v1/prices").size() == 1);
    // The hedge is counted in the dependency's metrics (the Asio face hands
    // the hedged driver its listener).
    const auto hedges = d.metrics().hedges();
    CHECK(hedges.started == 1);
    CHECK(hedges.won == 1);

    // A keyed POST is repeatable, but the pick goes on: make the next POST
    // start at the slow one and check the copies carry the same key.
    fast.on("/v1/quotes", {action::respond(200, "quoted")});
    slow.on("/v1/quotes", {action::respond_after(3000ms, 200, "slow quote")});
    auto p = run_calls(io, face, {{.method = "POST", .path = "/v1/quotes", .body = "x"}});
    REQUIRE(p[0]);
    const auto at_slow = slow.requests("/v1/quotes"), at_fast = fast.requests("/v1/quotes");
    REQUIRE(at_fast.size() == 1);
    if (!at_slow.empty()) CHECK(at_slow[0].header("Idempotency-Key") == at_fast[0].header("Idempotency-Key"));
}

TEST_CASE("async dependency: keyed POSTs fail over to the backup, never charged twice") {
    payment_provider primary{"primary"};
    payment_provider backup{"backup"};
    dependency_options o;
    o.name = "payments";
    o.endpoints = {{.address = primary.url(""), .idempotency_scope = "a"},
                   {.address = backup.url(""), .priority = 1, .idempotency_scope = "b"}};
    o.retry = {.max_attempts = 3, .backoff = resil::full_jitter{1ms, 5ms}};
    dependency payments{o};
    ::asio::io_context io{1};
    auto face = payments.on(io);
    primary.die_on_next_request(payment_provider::death::after_charging);
    auto r = run_calls(io, face, {{.method = "POST", .path = "/charge", .body = "amount=1"}});
    // Honest reasons: the primary may have acted and is not there to finish.
    CHECK((r[0].reason() == resil::reason::no_endpoint_in_scope ||
           r[0].reason() == resil::reason::retries_exhausted));
    CHECK(backup.total_charges() == 0);
    primary.kill();
    r = run_calls(io, face, {{.method = "POST", .path = "/charge", .body = "amount=1"}});
    REQUIRE(r[0]);
    CHECK(r[0].endpoint() == backup.url(""));
    CHECK(backup.total_charges() == 1);
    CHECK(primary.total_charges() == 1);
}

TEST_CASE("async dependency: use_future and use_awaitable complete with the response") {
    fault_server s;
    s.on("/", {action::respond(200, "ok")});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    dependency d{o};
    ::asio::io_context io{1};
    auto face = d.on(io);
    auto f = face.async_get("/", ::asio::use_future);
    std::string seen;
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            const auto r = co_await face.async_get("/", ::asio::use_awaitable);
            seen = r.body();
        },
        ::asio::detached);
    io.run();
    CHECK(f.get().body() == "ok");
    CHECK(seen == "ok");
}

TEST_CASE("async dependency: faults injected into the tagged calls only, as on the blocking face") {
    fault_server s;
    s.on("/", {action::respond(200, "ok")});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    o.retry.max_attempts = 1;
    o.faults = resil::fault_injection_options{
        .enabled = true, .tag = "chaos", .abort = {.probability = 1.0, .verdict = resil::verdict::permanent}};
    dependency d{o};
    ::asio::io_context io{1};
    auto face = d.on(io);
    auto replies = run_calls(io, face, {{.path = "/", .fault_tag = "chaos"}, {.path = "/"}});
    CHECK(replies[0].reason() == resil::reason::injected_fault);
    CHECK(replies[0].attempts() == 0);
    CHECK(replies[1]);
    CHECK(s.requests("/").size() == 1);
}

TEST_CASE("async dependency: a hedged call names the endpoint whose copy answered, not the last one started") {
    fault_server first, second;
    // The first copy answers after the hedge delay, the hedge never: the
    // first copy wins, though the hedge was started after it.
    first.on("/v1/prices", {action::respond_after(300ms, 200, "first")});
    second.on("/v1/prices", {action::respond_after(5000ms, 200, "second")});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = first.url("")}, {.address = second.url("")}};
    o.balancing.policy = resil::balancing_policy::round_robin;
    o.hedge = resil::hedge_options{.max_hedges = 1, .delay = 20ms};
    o.retry.max_attempts = 1;
    o.deadline.budget = 10s;
    dependency d{o};
    ::asio::io_context io{1};
    auto face = d.on(io);
    auto r = run_calls(io, face, {{.path = "/v1/prices"}});
    REQUIRE(r[0]);
    REQUIRE(r[0].body() == "first");
    REQUIRE(second.requests("/v1/prices").size() == 1);  // the hedge was sent
    CHECK(r[0].endpoint() == first.url(""));
}

TEST_CASE("async dependency: a face destroyed while its call runs leaves the call whole") {
    fault_server s;
    s.on("/slow", {action::respond_after(200ms, 200, "done")});
    dependency_options o;
    o.name = "slow";
    o.endpoints = {{.address = s.url("")}};
    dependency d{o};
    ::asio::io_context io{1};
    std::optional<response> got;
    {
        auto face = d.on(io);
        face.async_get("/slow", [&](std::exception_ptr e, response r) {
            REQUIRE(!e);
            got = std::move(r);
        });
    }  // the face is gone; its call is not
    io.run();
    REQUIRE(got.has_value());
    CHECK(*got);
    CHECK(got->body() == "done");
}

TEST_CASE("async dependency: the handler's cancellation slot ends the call at once") {
    fault_server s;
    s.on("/slow", {action::respond_after(5000ms, 200, "late")});
    dependency_options o;
    o.name = "slow";
    o.endpoints = {{.address = s.url("")}};
    o.deadline.budget = 20s;
    o.timeouts.total = 20s;
    dependency d{o};
    ::asio::io_context io{1};
    auto face = d.on(io);
    ::asio::cancellation_signal signal;
    std::optional<response> got;
    face.async_get("/slow", ::asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, response r) {
                       REQUIRE(!e);
                       got = std::move(r);
                   }));
    // Cancelled once the request reached the server.
    ::asio::steady_timer poll(io);
    std::function<void()> wait_for_request = [&] {
        poll.expires_after(5ms);
        poll.async_wait([&](std::error_code) {
            if (s.requests("/slow").empty()) return wait_for_request();
            signal.emit(::asio::cancellation_type::terminal);
        });
    };
    wait_for_request();
    const auto started = std::chrono::steady_clock::now();
    io.run();
    REQUIRE(got.has_value());
    CHECK(got->reason() == resil::reason::cancelled);
    CHECK(std::chrono::steady_clock::now() - started < 4s);  // not the server's 5 s
}

TEST_CASE("async dependency: the handler runs on its associated executor, in memory of its allocator") {
    fault_server s;
    s.on("/", {action::respond(200, "ok")});
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    dependency d{o};
    ::asio::io_context io{1};
    ::asio::io_context other{1};
    auto face = d.on(io);
    std::size_t allocated = 0;
    std::size_t freed = 0;
    std::optional<response> got;
    face.async_get("/", ::asio::bind_executor(
                            other, ::asio::bind_allocator(counting_allocator<void>(&allocated, &freed),
                                                          [&](std::exception_ptr e, response r) {
                                                              REQUIRE(!e);
                                                              REQUIRE(other.get_executor().running_in_this_thread());
                                                              got = std::move(r);
                                                          })));
    io.run();
    CHECK_FALSE(got.has_value());  // not on the face's executor: waiting on its own
    other.run();
    REQUIRE(got.has_value());
    CHECK(got->body() == "ok");
    CHECK(allocated > 0);
    CHECK(freed == allocated);
}
