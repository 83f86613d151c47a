// resil::curl::async_client keeps its kept-alive connections when the calls
// in flight drop to few or none (between bursts, after a batch): libcurl
// sizes its connection cache by the easy handles added at the moment a
// connection comes back, and the client's finished handles leave the multi
// handle before their completions start the next calls. Against Debian's
// nginx, whose access log names each request's connection; without nginx
// these tests fail, they do not skip.
#include <resil/curl.hpp>
#include <resil/curl_asio/async_client.hpp>
#include <resil/testing/manual_clock.hpp>

#include <asio/io_context.hpp>

#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::async_client;
using resil::curl::client_options;
using resil::curl::key_header_format;
using resil::curl::request;
using resil::curl::response;
using steady = std::chrono::steady_clock;

namespace {

// nginx's serial number of the connection of each request, from its access
// log, waiting up to 3 s for `expected` lines (written just after each reply).
std::vector<long> logged_connections(const resil_test::nginx_server& nginx, std::size_t expected) {
    const auto until = steady::now() + 3s;
    std::vector<long> serials;
    for (;;) {
        serials.clear();
        std::ifstream in(nginx.directory() + "/access.log");
        long serial = 0;
        while (in >> serial) serials.push_back(serial);
        if (serials.size() >= expected || steady::now() > until) return serials;
        std::this_thread::sleep_for(5ms);
    }
}

// Runs `io` until `done` or 10 s passed (a hung test fails, never hangs).
template <class Done>
void run_until(asio::io_context& io, Done done) {
    const auto until = steady::now() + 10s;
    while (!done() && steady::now() < until) {
        io.run_for(20ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(done());
}

constexpr int width = 64;  // calls in flight at once

// `total` calls of `req`, `width` in flight: each completion starts the next
// call on its context, as a server's handlers would. Returns how many
// completed on a connection an earlier call had opened.
int run_batch(asio::io_context& io, async_client& http, const request& req, int total) {
    std::vector<resil::context> contexts(width);
    int started = 0;
    int done = 0;
    int reused = 0;
    struct next_call {
        async_client* http;
        const request* req;
        resil::context* ctx;
        int total;
        int* started;
        int* done;
        int* reused;
        void start() const {
            ++*started;
            *ctx = resil::context{};
            ctx->set_timeouts({.connect = 1s, .read = 2s, .total = 5s});
            http->async_perform(*req, *ctx, *this);
        }
        void operator()(response r) const {
            ++*done;
            CHECK(r.ok());
            if (r.timings().reused_connection) ++*reused;
            http->recycle(std::move(r));
            if (*started < total) start();
        }
    };
    for (auto& ctx : contexts) next_call{&http, &req, &ctx, total, &started, &done, &reused}.start();
    run_until(io, [&] { return done == total; });
    return reused;
}

// One call on `ctx`, run to its end.
template <class Clock>
response call(asio::io_context& io, async_client& http, const request& req, resil::basic_context<Clock>& ctx) {
    std::optional<response> out;
    http.async_perform(req, ctx, [&](response r) { out = std::move(r); });
    run_until(io, [&] { return out.has_value(); });
    return std::move(*out);
}

client_options unkeyed(std::chrono::milliseconds max_idle) {
    client_options o{.limits = {2s, 2s, 5s}, .idempotency_key = key_header_format::none};
    o.connections.max_idle_for_unrepeatable = max_idle;
    return o;
}

}  // namespace

TEST_CASE("curl async: kept-alive connections outlast a drained batch and bursts of completions") {
    resil_test::nginx_server nginx{R"(location /ok { access_log access.log calls; return 200 "ok\n"; })",
                                   R"(log_format calls '$connection';)"};
    asio::io_context io;
    async_client http(io);
    const auto req = request::get(nginx.url("/ok"));

    // First batch: up to `width` connections opened, then the calls drain to none.
    constexpr int first = 2000;
    run_batch(io, http, req, first);
    CHECK(http.in_flight() == 0);
    const auto before = logged_connections(nginx, first);
    REQUIRE(before.size() == first);
    const std::set<long> opened(before.begin(), before.end());
    CHECK(opened.size() <= width);

    // Second batch, started on an empty multi handle: every call finds a
    // connection the first batch left open; none is opened anew.
    constexpr int second = 1000;
    const int reused = run_batch(io, http, req, second);
    CHECK(reused == second);
    const auto after = logged_connections(nginx, first + second);
    REQUIRE(after.size() == first + second);
    std::size_t on_new_connections = 0;
    for (std::size_t i = first; i < after.size(); ++i)
        if (opened.count(after[i]) == 0) ++on_new_connections;
    CHECK(on_new_connections == 0);
}

TEST_CASE("curl async: an unkeyed POST opens a new connection instead of one idle near its limit") {
    using resil_test::action;
    resil_test::fault_server server;
    resil::testing::manual_clock clock;
    asio::io_context io;
    const auto perform = [&](async_client& http, const request& req) {
        resil::basic_context<resil::testing::manual_clock> ctx{clock};
        return call(io, http, req, ctx);
    };

    SECTION("the server's own limit (Keep-Alive: timeout=1): idle for 500 ms is too long") {
        // A reused connection is closed unanswered, as by a server whose idle timer fires as the request arrives.
        server.on("/pay", {action::respond_unless_reused(200, "paid", {{"Keep-Alive", "timeout=1"}})});
        server.on("/ok", {action::respond(200, "ok", {{"Keep-Alive", "timeout=1"}})});
        async_client http(io, unkeyed(1h));  // only the server's limit applies
        REQUIRE(perform(http, request::post(server.url("/pay"), "1")).ok());

        clock.advance(499ms);
        const auto soon = perform(http, request::post(server.url("/ok"), "2"));
        CHECK(soon.ok());
        CHECK(soon.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 0);

        // Idle counts from the connection's last call: 998 ms since the first, 499 since the last.
        clock.advance(499ms);
        const auto again = perform(http, request::post(server.url("/ok"), "2b"));
        CHECK(again.ok());
        CHECK(again.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 0);

        clock.advance(500ms);
        const auto late = perform(http, request::post(server.url("/pay"), "3"));
        INFO(late.error_message());
        CHECK(late.ok());
        CHECK_FALSE(late.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        CHECK(server.connections() == 2);
        CHECK(server.requests("/pay").size() == 2);

        // The stale connection was retired: the next request goes on the new one.
        clock.advance(100ms);
        const auto next = perform(http, request::post(server.url("/ok"), "4"));
        CHECK(next.ok());
        CHECK(next.timings().reused_connection);
        REQUIRE(server.requests("/ok").size() == 3);
        CHECK(server.requests("/ok").back().connection == 2);

        // A request that may be repeated keeps the connection, however long idle.
        clock.advance(10s);
        const auto get = perform(http, request::get(server.url("/ok")));
        CHECK(get.ok());
        CHECK(get.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        CHECK(server.connections() == 2);
    }

    SECTION("no Keep-Alive field: connection_options::max_idle_for_unrepeatable") {
        server.on("/pay", {action::respond_unless_reused(200, "paid")});
        server.on("/ok", {action::respond(200, "ok")});
        async_client http(io, unkeyed(300ms));
        REQUIRE(perform(http, request::post(server.url("/pay"), "1")).ok());
        clock.advance(299ms);
        const auto soon = perform(http, request::post(server.url("/ok"), "2"));
        CHECK(soon.ok());
        CHECK(soon.timings().reused_connection);

        clock.advance(300ms);
        const auto late = perform(http, request::post(server.url("/pay"), "3"));
        INFO(late.error_message());
        CHECK(late.ok());
        CHECK_FALSE(late.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        CHECK(server.connections() == 2);
    }

    SECTION("a connection in use is not idle, however long ago its last call ended") {
        server.on("/pay", {action::respond_unless_reused(200, "paid")});
        server.on("/slow", {action::respond_after(300ms, 200, "slow")});
        async_client http(io, unkeyed(300ms));
        REQUIRE(perform(http, request::post(server.url("/pay"), "1")).ok());
        clock.advance(1s);
        // A GET on the stale connection, in flight while the unkeyed POST starts.
        resil::basic_context<resil::testing::manual_clock> slow_ctx{clock};
        std::optional<response> slow;
        http.async_perform(request::get(server.url("/slow")), slow_ctx, [&](response r) { slow = std::move(r); });
        run_until(io, [&] { return server.requests("/slow").size() == 1; });
        resil::basic_context<resil::testing::manual_clock> ctx{clock};
        std::optional<response> post;
        const auto pay = request::post(server.url("/pay"), "2");  // outlives the call, as async_perform asks
        http.async_perform(pay, ctx, [&](response r) { post = std::move(r); });
        run_until(io, [&] { return slow.has_value() && post.has_value(); });
        CHECK(slow->ok());
        CHECK(slow->timings().reused_connection);  // not retired under its call
        CHECK(post->ok());
        CHECK_FALSE(post->timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 0);  // nothing idle was retired: a new one anyway
    }
}

TEST_CASE("curl async: unkeyed POSTs paced 1 s apart against nginx with keepalive_timeout 1s") {
    // Real time, as the blocking client's test: a handful of calls, each pause at least 1 s.
    const auto paced_posts = [](asio::io_context& io, async_client& http, const std::string& url) {
        for (int i = 0; i < 4; ++i) {
            if (i > 0) std::this_thread::sleep_for(1s);
            resil::context ctx;
            const auto r = call(io, http, request::post(url, "order " + std::to_string(i)), ctx);
            INFO("POST " << i << ": " << resil::curl::to_string(r.transport()) << " " << r.error_message());
            CHECK(r.transport() != resil::curl::transport_status::connection_lost);
            CHECK(r.ok());
        }
    };
    asio::io_context io;
    SECTION("no Keep-Alive field: the default idle age, 1 s") {
        resil_test::nginx_server nginx{R"(keepalive_timeout 1s; location /pay { return 200 "paid"; })"};
        async_client http(io, {.limits = {2s, 2s, 5s}, .idempotency_key = key_header_format::none});
        paced_posts(io, http, nginx.url("/pay"));
        CHECK(http.metrics().fresh_connections_for_idle >= 1);
    }
    SECTION("keepalive_timeout 1s 1s: Keep-Alive: timeout=1 read from the answers") {
        resil_test::nginx_server nginx{R"(keepalive_timeout 1s 1s; location /pay { return 200 "paid"; })"};
        async_client http(io, unkeyed(1h));
        paced_posts(io, http, nginx.url("/pay"));
        CHECK(http.metrics().fresh_connections_for_idle >= 1);
    }
}
