// resil/curl/options.hpp: a client's options and their one validate().
#include <resil/curl/client.hpp>
#include <resil/curl/options.hpp>

#include <chrono>
#include <stdexcept>
#include <string>

#include "catch.hpp"

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
