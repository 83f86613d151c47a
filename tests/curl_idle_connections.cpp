// A request that may not be repeated (an unkeyed POST) is never sent on a
// kept-alive connection idle close to its server's limit — the server's own
// (Keep-Alive: timeout=N) or connection_options::max_idle_for_unrepeatable —
// where the server may close it as the request arrives: it opens a new
// connection, counted in client::metrics(). On the manual clock against the
// fault server, which closes a reused connection unanswered as such a server
// would; and in real time against nginx with keepalive_timeout 1s. Without
// nginx these tests fail, they do not skip.
#include <resil/curl.hpp>
#include <resil/curl/detail/idle_connections.hpp>
#include <resil/curl/detail/keep_alive.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::client_options;
using resil::curl::key_header_format;
using resil::curl::request;
using resil::curl::transport_status;
using resil::curl::detail::idle_connections;
using resil::curl::detail::keep_alive_timeout;
using resil::testing::manual_clock;
using resil_test::action;

namespace {

const resil::timeouts quick{2s, 2s, 5s};

// Unkeyed: a POST is then neither idempotent nor keyed.
client_options unkeyed(std::chrono::milliseconds max_idle = 1s) {
    client_options o{.limits = quick, .idempotency_key = key_header_format::none};
    o.connections.max_idle_for_unrepeatable = max_idle;
    return o;
}

}  // namespace

TEST_CASE("curl idle connections: the Keep-Alive field's timeout") {
    CHECK(keep_alive_timeout("timeout=5, max=1000") == 5);
    CHECK(keep_alive_timeout("max=1000, timeout=2") == 2);
    CHECK(keep_alive_timeout("  Timeout = 7 ") == 7);
    CHECK(keep_alive_timeout("timeout=\"3\"") == 3);
    CHECK(keep_alive_timeout("timeout=0") == 0);
    CHECK(keep_alive_timeout("timeout=99999999999999999999") == resil::curl::detail::longest_keep_alive_timeout);
    CHECK_FALSE(keep_alive_timeout("max=5"));
    CHECK_FALSE(keep_alive_timeout("timeout="));
    CHECK_FALSE(keep_alive_timeout("timeout=-1"));
    CHECK_FALSE(keep_alive_timeout("timeout=1.5"));
    CHECK_FALSE(keep_alive_timeout("timeouts=5"));
    CHECK_FALSE(keep_alive_timeout(""));
}

TEST_CASE("curl idle connections: stale at the server's limit less min(N/2, 1 s), else at the client's idle age") {
    const resil::time_point t0{std::chrono::hours{1}};
    const auto stale_after = [&](std::int32_t limit, resil::duration idle, std::chrono::milliseconds fallback = 1s) {
        idle_connections::entry e;
        e.idle_since = t0;
        e.server_limit = limit;
        return idle_connections::stale(e, t0 + idle, fallback);
    };
    CHECK_FALSE(stale_after(1, 499ms));
    CHECK(stale_after(1, 500ms));
    CHECK_FALSE(stale_after(5, 3999ms));
    CHECK(stale_after(5, 4s));
    CHECK_FALSE(stale_after(75, 73s));
    CHECK(stale_after(75, 74s));
    CHECK(stale_after(0, 0ms));  // "timeout=0": closed at once
    // None announced: the client's age, whatever it is.
    CHECK_FALSE(stale_after(-1, 999ms));
    CHECK(stale_after(-1, 1s));
    CHECK(stale_after(-1, 0ms, 0ms));
    CHECK_FALSE(stale_after(-1, 59min, 1h));
}

TEST_CASE("curl idle connections: max_idle_for_unrepeatable is validated, 1 s by default") {
    CHECK(resil::curl::connection_options{}.max_idle_for_unrepeatable == 1s);
    CHECK(resil::curl::connection_options{.max_idle_for_unrepeatable = 0ms}.validate() == std::nullopt);
    const auto bad = resil::curl::connection_options{.max_idle_for_unrepeatable = -1ms}.validate();
    REQUIRE(bad);
    CHECK(bad->message() == "`max_idle_for_unrepeatable` must be in [0s, 8760h], got -1ms");
    try {
        client http({.connections = {.max_idle_for_unrepeatable = -5ms}});
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()).find("`connections.max_idle_for_unrepeatable` must be in [0s, 8760h], got -5ms") !=
              std::string::npos);
    }
}

TEST_CASE("curl idle connections: an unkeyed POST opens a new connection instead of one idle near its limit") {
    resil_test::fault_server server;
    manual_clock clock;
    const auto perform = [&](client& http, const request& req) {
        resil::basic_context<manual_clock> ctx{clock};
        return http.perform(req, ctx);
    };

    SECTION("the server's own limit (Keep-Alive: timeout=1): idle for 500 ms is too long") {
        // A reused connection is closed unanswered, as by a server whose idle timer fires as the request arrives.
        server.on("/pay", {action::respond_unless_reused(200, "paid", {{"Keep-Alive", "timeout=1"}})});
        server.on("/ok", {action::respond(200, "ok", {{"Keep-Alive", "timeout=1"}})});
        client http(unkeyed(1h));  // only the server's limit applies
        REQUIRE(perform(http, request::post(server.url("/pay"), "1")).ok());

        clock.advance(499ms);  // not yet: reused
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
        // Without the rule it goes on the kept-alive connection, which the
        // server closes: connection_lost, ambiguous (libcurl's resend refused).
        CHECK(late.ok());
        CHECK_FALSE(late.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        CHECK(server.connections() == 2);
        CHECK(server.requests("/pay").size() == 2);  // each POST reached the server once

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
        client http(unkeyed(300ms));
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

        // The stale connection was retired, not left behind in libcurl's
        // cache (which would offer it first): the next request goes on the new one.
        clock.advance(100ms);
        const auto next = perform(http, request::post(server.url("/ok"), "4"));
        CHECK(next.ok());
        CHECK(next.timings().reused_connection);
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        CHECK(server.connections() == 2);
        REQUIRE(server.requests("/ok").size() == 2);
        CHECK(server.requests("/ok").back().connection == 2);
    }

    SECTION("0 ms: every unkeyed POST on a new connection; a keyed one is repeatable and reuses") {
        server.on("/pay", {action::respond_unless_reused(200, "paid")});
        client http(unkeyed(0ms));
        for (int i = 0; i < 3; ++i) {
            const auto r = perform(http, request::post(server.url("/pay"), "x"));
            CHECK(r.ok());
            CHECK_FALSE(r.timings().reused_connection);
        }
        CHECK(http.metrics().fresh_connections_for_idle == 2);
        CHECK(server.connections() == 3);

        server.on("/keyed", {action::respond(200, "ok")});
        client keyed({.limits = quick, .connections = {.max_idle_for_unrepeatable = 0ms}});
        REQUIRE(perform(keyed, request::post(server.url("/keyed"), "a")).ok());
        clock.advance(1h);
        const auto again = perform(keyed, request::post(server.url("/keyed"), "b"));
        CHECK(again.ok());
        CHECK(again.timings().reused_connection);
        CHECK(keyed.metrics().fresh_connections_for_idle == 0);
    }

    SECTION("another origin's idle connection is left alone") {
        resil_test::fault_server other;
        server.on("/pay", {action::respond_unless_reused(200, "paid")});
        other.on("/ok", {action::respond(200, "ok")});
        client http(unkeyed(300ms));
        REQUIRE(perform(http, request::post(other.url("/ok"), "1")).ok());
        REQUIRE(perform(http, request::post(server.url("/pay"), "2")).ok());
        clock.advance(1s);
        CHECK(perform(http, request::post(server.url("/pay"), "3")).ok());
        CHECK(http.metrics().fresh_connections_for_idle == 1);
        // The other server's connection still serves a repeatable request.
        const auto get = perform(http, request::get(other.url("/ok")));
        CHECK(get.ok());
        CHECK(get.timings().reused_connection);
        CHECK(other.connections() == 1);
    }
}

TEST_CASE("curl idle connections: unkeyed POSTs paced 1 s apart against nginx with keepalive_timeout 1s") {
    // Real time: nginx's own timer closes the connections. A handful of
    // calls; every pause is at least 1 s, however loaded the machine.
    const auto paced_posts = [](client& http, const std::string& url) {
        for (int i = 0; i < 4; ++i) {
            if (i > 0) std::this_thread::sleep_for(1s);
            const auto r = http.perform(request::post(url, "order " + std::to_string(i)));
            INFO("POST " << i << ": " << resil::curl::to_string(r.transport()) << " " << r.error_message());
            CHECK(r.transport() != transport_status::connection_lost);
            CHECK(r.ok());
        }
    };
    SECTION("no Keep-Alive field: the default idle age, 1 s") {
        resil_test::nginx_server nginx{R"(keepalive_timeout 1s; location /pay { return 200 "paid"; })"};
        client http({.limits = quick, .idempotency_key = key_header_format::none});
        paced_posts(http, nginx.url("/pay"));
        CHECK(http.metrics().fresh_connections_for_idle >= 1);
    }
    SECTION("keepalive_timeout 1s 1s: Keep-Alive: timeout=1 read from the answers") {
        resil_test::nginx_server nginx{R"(keepalive_timeout 1s 1s; location /pay { return 200 "paid"; })"};
        client http(unkeyed(1h));  // only the server's limit applies
        paced_posts(http, nginx.url("/pay"));
        CHECK(http.metrics().fresh_connections_for_idle >= 1);
    }
}
