// resil::curl::client allocates nothing per request in steady state: a client
// reused for request after request to one host, over a kept-alive connection,
// with its responses reused (filled in place, or given back through recycle).
// Counted with the test binary's own operator new (support/allocation_counter.hpp):
// it sees resil's allocations and those of the C++ standard library; libcurl
// allocates with malloc, which it does not see (libcurl's business, the same
// with or without resil). The server is nginx, a separate process, so no
// thread of this process allocates while a loop is measured.
#include <resil/circuit_breaker.hpp>
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "catch.hpp"
#include "support/allocation_counter.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::request;
using resil::curl::response;
using resil::curl::transport_status;

namespace {

constexpr std::size_t rounds = 50;
constexpr std::size_t big_body = 100'000;

// The replies of the steady-state loops: a small body, a chunked body of
// 100 kB, a 201 to a POST, and a 503 with hints to parse.
constexpr const char* locations = R"(
    location /ok      { return 200 "hello\n"; }
    location /big     { echo_duplicate 100000 "x"; }
    location /created { return 201 "created\n"; }
    location /busy    { add_header Retry-After 2 always; add_header grpc-retry-pushback-ms 150 always; return 503 "busy\n"; }
    location /events  { default_type text/event-stream; echo_duplicate 4000 "id: 42\ndata: token\n\n"; }
)";

std::uint64_t allocations_now() { return resil_test::allocations.load(std::memory_order_relaxed); }

// What one round saw, kept in fixed storage while the loop runs (an assertion
// inside the loop could allocate) and checked after it.
struct seen {
    int status = 0;
    std::size_t body_size = 0;
    bool keyed = false;
    bool reused_connection = false;
    bool hinted = false;
};

}  // namespace

TEST_CASE("curl allocations: a response filled again and again allocates nothing per request") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{locations};
    client http;
    const auto req = request::get(nginx.url("/ok"));
    response r = http.perform(req);  // connects; the buffers grow to fit
    REQUIRE(r.ok());
    const char* const body_buffer = r.body().data();

    std::array<seen, rounds> got{};
    const auto before = allocations_now();
    for (auto& g : got) {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        const auto& same = http.perform(req, ctx, r);
        g = {same.status(), same.body().size(), false, same.timings().reused_connection, false};
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (const auto& g : got) {
        CHECK(g.status == 200);
        CHECK(g.body_size == 6);
        CHECK(g.reused_connection);
    }
    CHECK(r.body() == "hello\n");
    CHECK(r.body().data() == body_buffer);  // the same buffer all along
    CHECK(r.header("server").value_or("").starts_with("nginx"));
}

TEST_CASE("curl allocations: responses given back through recycle make the next ones without allocating") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{locations};
    client http;
    const auto req = request::get(nginx.url("/ok"));
    http.recycle(http.perform(req));  // connects; the buffers grow and come back

    std::array<seen, rounds> got{};
    const auto before = allocations_now();
    for (auto& g : got) {
        response r = http.perform(req);
        g = {r.status(), r.body().size(), false, r.timings().reused_connection, false};
        http.recycle(std::move(r));
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (const auto& g : got) {
        CHECK(g.status == 200);
        CHECK(g.body_size == 6);
        CHECK(g.reused_connection);
    }

    // Without recycle the counter sees each response's header buffer and its
    // index (a small body fits in the string itself): what reuse saves.
    std::size_t plain_ok = 0;
    const auto plain_before = allocations_now();
    for (std::size_t i = 0; i < rounds; ++i) plain_ok += http.perform(req).ok() ? 1 : 0;
    const auto plain = allocations_now() - plain_before;
    CHECK(plain_ok == rounds);
    CHECK(plain >= rounds);  // the counter does see resil's allocations
    CHECK(plain <= 2 * rounds);
}

TEST_CASE("curl allocations: a full pipeline around the client, its responses recycled, allocates nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{locations};
    client http;
    const auto req = request::get(nginx.url("/ok"));
    resil::retry_budget budget;
    resil::circuit_breaker breaker;
    const auto pipe = resil::pipeline(resil::deadline_policy{1s}, resil::retry_policy{{.budget = &budget}},
                                      std::ref(breaker), resil::timeout_policy{{.connect = 1s, .read = 1s, .total = 2s}});
    const auto call = [&] { return pipe([&](resil::context& ctx) { return http.perform(req, ctx); }); };
    {
        auto warm = call();
        REQUIRE(warm.ok());
        http.recycle(std::move(*warm));
    }

    std::array<seen, rounds> got{};
    const auto before = allocations_now();
    for (auto& g : got) {
        auto out = call();
        if (out.has_value()) {
            g = {out->status(), out->body().size(), false, out->timings().reused_connection, false};
            http.recycle(std::move(*out));
        }
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (const auto& g : got) {
        CHECK(g.status == 200);
        CHECK(g.body_size == 6);
        CHECK(g.reused_connection);
    }
}

TEST_CASE("curl allocations: keyed POSTs, a 100 kB chunked body and 503s with hints, reused, allocate nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{locations};
    client http({.propagate_deadline = true});
    const auto get = request::get(nginx.url("/ok"));
    const auto big = request::get(nginx.url("/big"));
    const auto post = request::post(nginx.url("/created"), R"({"cents":500})").add_header("Content-Type", "application/json");
    const auto busy = request::get(nginx.url("/busy"));
    const std::array<const request*, 4> cycle{&get, &big, &post, &busy};

    response r = http.perform(get);
    for (const request* q : cycle) {  // every kind once: each buffer grows to its largest
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        REQUIRE(http.perform(*q, ctx, r).completed());
    }

    std::array<seen, rounds * 4> got{};
    const auto before = allocations_now();
    for (std::size_t i = 0; i < got.size(); ++i) {
        resil::context ctx;  // a new operation each time: a new key for each POST
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        const auto& same = http.perform(*cycle[i % cycle.size()], ctx, r);
        got[i] = {same.status(), same.body().size(), same.carried_idempotency_key(), same.timings().reused_connection,
                  same.retry_after().has_value() && same.pushback().has_value()};
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        const auto& g = got[i];
        CHECK(g.reused_connection);
        switch (i % cycle.size()) {
            case 0: CHECK((g.status == 200 && g.body_size == 6 && !g.keyed && !g.hinted)); break;
            case 1: CHECK((g.status == 200 && g.body_size == big_body && !g.keyed)); break;
            case 2: CHECK((g.status == 201 && g.body_size == 8 && g.keyed)); break;
            default: CHECK((g.status == 503 && g.body_size == 5 && g.hinted)); break;
        }
    }
    // The last reply read into the reused response is the 503's, whole.
    CHECK(r.status() == 503);
    CHECK(r.retry_after() == std::chrono::seconds{2});
    CHECK(r.pushback() == 150ms);
    CHECK(r.body() == "busy\n");
}

TEST_CASE("curl allocations: redirects switched on and off per request allocate nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{R"(
        location /ok    { return 200 "hello\n"; }
        location /moved { return 302 /ok; }
        location /other { return 303 /ok; }
    )"};
    // An unkeyed POST may not be repeated: it never follows (its 303 is the
    // answer), a GET does; the client's redirect options change every request.
    client http({.idempotency_key = resil::curl::key_header_format::none, .redirects = {.max = 2}});
    const auto get = request::get(nginx.url("/moved"));
    const auto post = request::post(nginx.url("/other"), "x");
    response r = http.perform(get);
    REQUIRE(r.ok());
    REQUIRE(http.perform(post, r).status() == 303);

    std::array<seen, rounds * 2> got{};
    const auto before = allocations_now();
    for (std::size_t i = 0; i < got.size(); ++i) {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        const auto& same = http.perform(i % 2 ? post : get, ctx, r);
        got[i] = {same.status(), same.body().size(), same.carried_idempotency_key(), false, false};
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        if (i % 2) CHECK(got[i].status == 303);
        else CHECK((got[i].status == 200 && got[i].body_size == 6));
        CHECK_FALSE(got[i].keyed);
    }
}

TEST_CASE("curl allocations: a refused connection, reported in a reused response, allocates nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    const auto url = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/nobody-home";
    client http;
    const auto req = request::get(url);
    response r = http.perform(req);  // the error text's buffer grows
    REQUIRE(r.transport() == transport_status::connect_failed);

    std::array<transport_status, rounds> got{};
    const auto before = allocations_now();
    for (auto& g : got) g = http.perform(req, r).transport();
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (const auto g : got) CHECK(g == transport_status::connect_failed);
    CHECK_FALSE(r.error_message().empty());
}

TEST_CASE("curl allocations: a streamed GET, its sink and response reused, allocates nothing per chunk") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{locations};
    client http;
    const auto big = request::get(nginx.url("/big"));
    const auto events = request::get(nginx.url("/events"));
    std::size_t bytes = 0;
    std::size_t chunks = 0;
    auto counting = [&](std::string_view chunk) {
        bytes += chunk.size();
        ++chunks;
        return resil::curl::stream_action::next;
    };
    std::size_t event_count = 0;
    resil::curl::sse_stream sse([&](const resil::sse::event& e) { event_count += e.data == "token" ? 1 : 0; });
    const resil::curl::stream_options limits{.first_byte = 1s, .idle = 1s};

    response r = http.perform(big);
    for (int warm = 0; warm < 2; ++warm) {  // the reader's buffers grow to their largest
        resil::context ctx;
        REQUIRE(http.stream(big, ctx, r, counting, limits).ok());
        REQUIRE(http.stream(events, ctx, r, sse, limits).ok());
    }
    bytes = chunks = event_count = 0;

    struct streamed_round {
        bool raw_ok = false;
        std::size_t raw_delivered = 0;
        bool sse_ok = false;
        std::size_t sse_delivered = 0;
        std::size_t body_kept = 0;
        bool reused_connection = false;
    };
    std::array<streamed_round, rounds> got{};
    const auto before = allocations_now();
    for (auto& g : got) {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
        const auto& raw = http.stream(big, ctx, r, counting, limits);
        g.raw_ok = raw.ok();
        g.raw_delivered = raw.delivered_bytes();
        const auto& sse_reply = http.stream(events, ctx, r, sse, limits);
        g.sse_ok = sse_reply.ok();
        g.sse_delivered = sse_reply.delivered_bytes();
        g.body_kept = sse_reply.body().size();
        g.reused_connection = sse_reply.timings().reused_connection;
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    CHECK(bytes == rounds * big_body);
    CHECK(chunks > rounds);  // several chunks per body: none of them allocated
    CHECK(event_count == rounds * 4000);
    CHECK_FALSE(sse.failed());
    for (const auto& g : got) {
        CHECK(g.raw_ok);
        CHECK(g.raw_delivered == big_body);
        CHECK(g.sse_ok);
        CHECK(g.sse_delivered == 4000 * std::string_view("id: 42\ndata: token\n\n").size());
        CHECK(g.body_kept == 0);  // streamed to the sink, not kept
        CHECK(g.reused_connection);
    }
}

TEST_CASE("curl allocations: requests pinned to two replicas in turn allocate nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server a{R"(location / { return 200 "a\n"; })"};
    resil_test::nginx_server b{R"(location / { return 200 "b\n"; })"};
    client http;
    // One service name; each request's connection goes to its own replica.
    const auto to_a = request::get("http://service.test/ok").connect_to({"127.0.0.1", a.port()});
    const auto to_b = request::get("http://service.test/ok").connect_to({"127.0.0.1", b.port()});
    response r = http.perform(to_a);  // connects to both; the buffers grow to fit
    REQUIRE(r.body() == "a\n");
    REQUIRE(http.perform(to_b, r).body() == "b\n");

    struct pinned_seen {
        int status = 0;
        bool from_its_replica = false;
        bool reused_connection = false;
    };
    std::array<pinned_seen, rounds> got{};
    const auto before = allocations_now();
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& same = http.perform(i % 2 == 0 ? to_a : to_b, r);
        got[i] = {same.status(), same.body() == (i % 2 == 0 ? "a\n" : "b\n"), same.timings().reused_connection};
    }
    const auto allocated = allocations_now() - before;

    CHECK(allocated == 0);
    for (const auto& g : got) {
        CHECK(g.status == 200);
        CHECK(g.from_its_replica);
        CHECK(g.reused_connection);
    }
}
