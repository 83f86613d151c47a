// resil/curl/options.hpp: a client's options and their one validate().
#include <resil/curl/client.hpp>
#include <resil/curl/options.hpp>

#include <chrono>
#include <cstdint>
#include <ratio>
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "support/fault_server.hpp"

using namespace std::chrono_literals;
using resil::curl::client_options;

TEST_CASE("curl options: the defaults are valid and documented") {
    const client_options o;
    CHECK_FALSE(o.validate());
    CHECK(o.limits.connect == 10s);
    CHECK(o.limits.read == 60s);
    CHECK(o.limits.total == 5min);
    CHECK(o.max_body_bytes == std::size_t{64} << 20);
    CHECK(o.max_header_bytes == std::size_t{256} << 10);
    CHECK(o.idempotency_key == resil::curl::key_header_format::quoted);
    CHECK(o.pushback_header == "grpc-retry-pushback-ms");
}

TEST_CASE("curl options: each invalid field is named, with what it must be and what it was") {
    const auto message = [](client_options o) { return o.validate().value().message(); };
    CHECK(message({.limits = {0ms, 1s, 1s}}) == "`limits.connect` must be at least 1ms, got 0s");
    CHECK(message({.limits = {1s, -5ms, 1s}}) == "`limits.read` must be at least 1ms, got -5ms");
    CHECK(message({.max_body_bytes = 0}) == "`max_body_bytes` must be at least 1, got 0");
    CHECK(message({.max_header_bytes = 0}) == "`max_header_bytes` must be at least 1, got 0");
    CHECK(message({.pushback_header = "bad header"}) == "`pushback_header` must be an HTTP token or empty, got \"bad header\"");
    CHECK(message({.user_agent = "agent\r\nX-Evil: 1"}).starts_with("`user_agent` must hold no control character, got "));
    CHECK_FALSE(client_options{.pushback_header = ""}.validate());
    CHECK_FALSE(client_options{.limits = {resil::timeouts::no_limit, resil::timeouts::no_limit, resil::timeouts::no_limit}}.validate());
}

TEST_CASE("curl options: the client throws from validate(), naming itself") {
    try {
        resil::curl::client http({.max_body_bytes = 0});
        FAIL("a client with max_body_bytes 0 was made");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "resil::curl::client: `max_body_bytes` must be at least 1, got 0");
    }
}

TEST_CASE("curl options: limits of up to a year are valid; longer ones are refused; none of them fires early") {
    using years = std::chrono::duration<std::int64_t, std::ratio<31556952>>;
    const auto far = std::chrono::duration_cast<std::chrono::milliseconds>(years{1000});
    const auto year = client_options::longest_limit;
    const auto message = [](client_options o) { return o.validate().value().message(); };
    CHECK(year == std::chrono::hours{8760});
    CHECK_FALSE(client_options{.limits = {year, year, year}}.validate());
    CHECK(message({.limits = {far, 1s, 1s}}) == "`limits.connect` must be in [1ms, 8760h], got " + resil::format_duration(far));
    CHECK(message({.limits = {1s, far, 1s}}) == "`limits.read` must be in [1ms, 8760h], got " + resil::format_duration(far));
    CHECK(message({.limits = {1s, 1s, year + 1ms}}) ==
          "`limits.total` must be in [1ms, 8760h], got " + resil::format_duration(year + 1ms));

    // The longest valid limits work.
    resil_test::fault_server server;
    server.on("/ok", {resil_test::action::respond(200, "ok"), resil_test::action::respond(200, "ok")});
    resil::curl::client http({.limits = {year, year, year}});
    const auto yearly = http.perform(resil::curl::request::get(server.url("/ok")));
    INFO(yearly.error_message());
    CHECK(yearly.ok());

    // A context's own timeouts are the timeout policy's, bounded below only:
    // centuries, which overflow a clock's nanoseconds, mean no limit to the
    // transfer rather than an at-once timeout.
    resil::curl::client unbounded({.limits = {resil::timeouts::no_limit, resil::timeouts::no_limit, resil::timeouts::no_limit}});
    resil::context ctx;
    ctx.set_timeouts({.connect = far, .read = far, .total = far});
    const auto r = unbounded.perform(resil::curl::request::get(server.url("/ok")), ctx);
    INFO(r.error_message());
    CHECK(r.ok());
    CHECK(r.body() == "ok");
}
