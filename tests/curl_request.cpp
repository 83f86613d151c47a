// resil::curl::request and response values: validation before any I/O,
// header fields, idempotency defaults. No network.
#include <resil/curl.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::curl::request;
using resil::curl::response;

TEST_CASE("curl request: idempotency defaults follow RFC 9110 section 9.2.2") {
    for (const char* m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}) {
        INFO(m);
        CHECK(resil::curl::is_idempotent_method(m));
        CHECK(request(m, "http://a/").idempotent());
    }
    for (const char* m : {"POST", "PATCH", "CONNECT", "PROPFIND", "get"}) {
        INFO(m);
        CHECK_FALSE(resil::curl::is_idempotent_method(m));
        CHECK_FALSE(request(m, "http://a/").idempotent());
    }
    CHECK(request::post("http://a/", "x").set_idempotent(true).idempotent());
    CHECK_FALSE(request::put("http://a/", "x").set_idempotent(false).idempotent());
    CHECK(request::delete_("http://a/").method() == "DELETE");
    CHECK(request::options("http://a/").method() == "OPTIONS");
}

TEST_CASE("curl request: bad URLs are refused before any I/O, with a clear message") {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "empty"},
        {"http://exa mple.com/", "space"},
        {"http://example.com/\r\nX-Injected: 1", "control"},
        {"example.com/path", "no scheme"},
        {"://example.com/", "no scheme"},
        {"ftp://example.com/file", "unsupported URL scheme"},
        {"file:///etc/passwd", "unsupported URL scheme"},
        {"http://", "no host"},
        {"https:///path", "no host"},
    };
    for (const auto& [url, why] : bad) {
        INFO(url);
        try {
            (void)request::get(url);
            FAIL("accepted");
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            CHECK(what.find("resil::curl::request") != std::string::npos);
            CHECK(what.find(why) != std::string::npos);
            CHECK(what.find('\r') == std::string::npos);  // the message cannot inject lines either
            CHECK(what.find('\n') == std::string::npos);
        }
    }
    CHECK_NOTHROW(request::get("http://127.0.0.1:8080/a?b=c#d"));
    CHECK_NOTHROW(request::get("HTTPS://Example.COM"));
    CHECK_THROWS_AS(request("GET POST", "http://a/"), std::invalid_argument);
    CHECK_THROWS_AS(request("", "http://a/"), std::invalid_argument);
}

TEST_CASE("curl request: header injection is impossible") {
    auto r = request::get("http://a/");
    CHECK_THROWS_AS(r.add_header("X-Ok", "a\r\nX-Evil: 1"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("X-Ok", "a\nb"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("X-Ok", std::string("a\0b", 3)), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("X-Ok", "bell\a"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("Bad Name", "v"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("Bad:Name", "v"), std::invalid_argument);
    CHECK_THROWS_AS(r.add_header("", "v"), std::invalid_argument);
    CHECK(r.headers().empty());  // nothing half-added
    CHECK_NOTHROW(r.add_header("X-Tab", "a\tb"));
    CHECK_NOTHROW(r.add_header("X-Utf8", "caf\xc3\xa9"));
}

TEST_CASE("curl request: header fields keep their order and are found in any letter case") {
    auto r = request::post("http://a/", "{}")
                 .add_header("Content-Type", "application/json")
                 .add_header("X-Trace", "  padded  ")
                 .add_header("X-Empty", "");
    REQUIRE(r.headers().size() == 3);
    CHECK(r.headers()[0].name == "Content-Type");
    CHECK(r.header("content-type") == "application/json");
    CHECK(r.header("X-TRACE") == "padded");
    CHECK(r.header("x-empty") == "");
    CHECK_FALSE(r.header("x-missing"));
    std::vector<std::string> names;
    for (auto [name, value] : r.headers()) names.emplace_back(name);
    CHECK(names == std::vector<std::string>{"Content-Type", "X-Trace", "X-Empty"});
    CHECK(r.has_body());
    CHECK(r.body() == "{}");
    CHECK_FALSE(request::get("http://a/").has_body());
}

TEST_CASE("curl response: from_parts reads Retry-After and pushback like a real response") {
    const auto now = std::chrono::sys_days{std::chrono::year{2026} / 1 / 1} + 0s;
    auto r = response::from_parts(503, {{"Retry-After", "120"}, {"grpc-retry-pushback-ms", "250"}}, "busy", now);
    CHECK(r.completed());
    CHECK_FALSE(r.ok());
    CHECK(r.status() == 503);
    CHECK(r.may_have_reached_server());
    CHECK(r.retry_after() == std::chrono::seconds{120});
    CHECK(r.pushback() == 250ms);
    CHECK(r.body() == "busy");
    CHECK(r.header("retry-after") == "120");

    auto date = response::from_parts(429, {{"Retry-After", "Thu, 01 Jan 2026 00:00:30 GMT"}}, "", now);
    CHECK(date.retry_after() == std::chrono::seconds{30});
    auto past = response::from_parts(429, {{"Retry-After", "Wed, 31 Dec 2025 23:00:00 GMT"}}, "", now);
    CHECK(past.retry_after() == std::chrono::seconds{0});
    // libcurl's own CURLINFO_RETRY_AFTER reads these leniently; resil does not.
    for (const char* garbage : {"120abc", "+5", "-5", "1.5", "soon"}) {
        INFO(garbage);
        CHECK_FALSE(response::from_parts(429, {{"Retry-After", garbage}}, "", now).retry_after());
    }
    CHECK(response::from_parts(503, {{"grpc-retry-pushback-ms", "-1"}}).pushback() == -1ms);
    CHECK_FALSE(response::from_parts(503, {{"grpc-retry-pushback-ms", "1e3"}}).pushback());

    CHECK_THROWS_AS(response::from_parts(42), std::invalid_argument);
    CHECK_THROWS_AS(response::from_parts(200, {{"X", "a\r\nb"}}), std::invalid_argument);
    CHECK_THROWS_AS(response::from_failure(resil::curl::transport_status::completed, CURLE_OK, true),
                    std::invalid_argument);
}

TEST_CASE("curl client: options are validated at construction") {
    using resil::curl::client;
    using resil::curl::client_options;
    CHECK_THROWS_AS(client(client_options{.max_body_bytes = 0}), std::invalid_argument);
    CHECK_THROWS_AS(client(client_options{.limits = {.connect = 0ms}}), std::invalid_argument);
    CHECK_THROWS_AS(client(client_options{.limits = {.read = -5ms}}), std::invalid_argument);
    CHECK_THROWS_AS(client(client_options{.pushback_header = "bad header"}), std::invalid_argument);
    CHECK_THROWS_AS(client(client_options{.user_agent = "x\r\ny"}), std::invalid_argument);
    client ok;
    CHECK(ok.options().limits.connect == 10s);
    CHECK(ok.options().limits.read == 60s);
    CHECK(ok.options().limits.total == 5min);  // bounded even with no deadline
    CHECK(ok.options().idempotency_key == resil::curl::key_header_format::quoted);
    CHECK_FALSE(ok.options().propagate_deadline);
    CHECK(ok.options().user_agent.empty());
}

TEST_CASE("curl response: hints are read only from responses that are not 2xx") {
    const auto fine = response::from_parts(200, {{"Retry-After", "3"}, {"grpc-retry-pushback-ms", "-1"}});
    CHECK_FALSE(fine.retry_after());
    CHECK_FALSE(fine.pushback());
    CHECK(fine.header("Retry-After") == "3");  // still there to read
    CHECK(response::from_parts(301, {{"Retry-After", "3"}}).retry_after() == std::chrono::seconds{3});
}

TEST_CASE("curl request: a HEAD request refuses a body, which would be waited for in vain") {
    CHECK_THROWS_WITH(request::head("http://127.0.0.1/x").set_body("x"), "resil::curl::request: a HEAD request has no body");
    CHECK_NOTHROW(request::get("http://127.0.0.1/x").set_body(""));
}
