// resil::curl::client against Debian's nginx on 127.0.0.1: slow-drip and
// silent bodies from the echo module, 429 + Retry-After from limit_req, and
// keep-alive. These tests need nginx and libnginx-mod-http-echo; without them
// they fail (loudly), they do not skip.
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/timing.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::curl::client;
using resil::curl::request;
using resil::curl::transport_status;
using steady = std::chrono::steady_clock;
using resil_test::slack;

namespace {

auto since(steady::time_point t0) { return resil_test::since<std::chrono::microseconds>(t0); }

// An echo-module location sending `bytes` bytes, one every `interval`.
std::string drip_location(const char* path, int bytes, std::chrono::milliseconds interval) {
    std::string loc = std::string("location ") + path + " {\n";
    const std::string pause = std::to_string(interval.count() / 1000) + "." + [&] {
        auto ms = std::to_string(interval.count() % 1000);
        return std::string(3 - ms.size(), '0') + ms;
    }();
    for (int i = 0; i < bytes; ++i) loc += "      echo_sleep " + pause + "; echo -n x; echo_flush;\n";
    return loc + "    }";
}

struct retry_log {
    std::vector<resil::events::retry_scheduled>* retries;
    void operator()(const resil::events::retry_scheduled& e) const { retries->push_back(e); }
};

}  // namespace

TEST_CASE("curl nginx: keep-alive, one connection for many requests") {
    resil_test::nginx_server nginx{R"(location /ok { return 200 "hello\n"; })"};
    client http;
    for (int i = 0; i < 5; ++i) {
        const auto r = http.perform(request::get(nginx.url("/ok")));
        REQUIRE(r.ok());
        CHECK(r.body() == "hello\n");
        CHECK(r.header("server").value_or("").starts_with("nginx"));
        CHECK(r.timings().reused_connection == (i > 0));
    }
}

// The classic example — a server sending a byte every 9 s never trips a 10 s
// read timeout — scaled to a byte every 450 ms against a 500 ms read limit.
// At 90 ms against 100 ms the margin would be lost in scheduling noise:
// echo_sleep 0.09 alone measures 94 ms gaps on a loaded 2-core machine.
TEST_CASE("curl nginx: the drip case — a byte every 450 ms never trips a 500 ms read timeout") {
    resil_test::nginx_server nginx{drip_location("/drip", 8, 450ms) + drip_location("/drip-short", 4, 450ms)};
    client http;

    SECTION("the total limit ends it, not the read limit") {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 500ms, .total = 1600ms});
        const auto t0 = steady::now();
        const auto r = http.perform(request::get(nginx.url("/drip")), ctx);
        const auto took = since(t0);
        CHECK(r.transport() == transport_status::total_timeout);
        CHECK(r.curl_code() == CURLE_OPERATION_TIMEDOUT);
        CHECK(r.status() == 200);
        CHECK(r.body().size() >= 2);  // it was flowing when the total limit cut it
        CHECK(r.body().size() < 8);
        CHECK(took >= 1600ms - 1ms);  // libcurl counts whole ms
        CHECK(took < 1600ms + slack);
    }
    SECTION("with time enough, the whole slow body arrives") {
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .read = 500ms, .total = 5s});
        const auto t0 = steady::now();
        const auto r = http.perform(request::get(nginx.url("/drip-short")), ctx);
        CHECK(r.ok());
        CHECK(r.body() == "xxxx");
        CHECK(since(t0) >= 1800ms);  // over three times the read limit
    }
    SECTION("the deadline ends it when it is the tighter bound") {
        auto pipe = resil::pipeline(resil::deadline_policy{1200ms},
                                    resil::timeout_policy{{.connect = 1s, .read = 500ms, .total = 5s}});
        const auto t0 = steady::now();
        const auto out = pipe([&](resil::context& c) { return http.perform(request::get(nginx.url("/drip")), c); });
        CHECK_FALSE(out.ok());
        // libcurl's total limit is the deadline floored to whole ms, so the
        // transfer may end a fraction of a ms before the deadline itself:
        // the deadline policy still names the deadline as the reason.
        CHECK(out.reason() == reason::deadline_exceeded);
        REQUIRE(out.has_value());
        CHECK(out->transport() == transport_status::total_timeout);
        CHECK(out->body().size() >= 2);
        CHECK(since(t0) < 1200ms + slack);
    }
}

TEST_CASE("curl nginx: a silent server trips the read limit within a few ms") {
    resil_test::nginx_server nginx{R"(location /silent { echo_sleep 2; echo late; })"};
    client http;
    resil::context ctx;
    ctx.set_timeouts({.connect = 1s, .read = 150ms, .total = 5s});
    const auto t0 = steady::now();
    const auto r = http.perform(request::get(nginx.url("/silent")), ctx);
    const auto took = since(t0);
    CHECK(r.transport() == transport_status::read_timeout);
    CHECK(r.may_have_reached_server());
    CHECK(took >= 150ms);
    CHECK(took < 150ms + slack);
}

TEST_CASE("curl nginx: 429 with Retry-After") {
    // One request per second; the second in a second gets 429 + Retry-After: 1.
    resil_test::nginx_server nginx{R"(
        location /limited {
            limit_req zone=one;
            limit_req_status 429;
            error_page 429 = @too_many;
            echo "ok";
        }
        location @too_many {
            add_header Retry-After 1 always;
            return 429 "slow down\n";
        })",
                                   "limit_req_zone $server_port zone=one:1m rate=1r/s;"};
    client http;
    REQUIRE(http.perform(request::get(nginx.url("/limited"))).ok());  // takes this second's slot
    const auto limited = http.perform(request::get(nginx.url("/limited")));
    REQUIRE(limited.status() == 429);
    CHECK(limited.retry_after() == 1s);
    CHECK(resil::curl::classify(limited) == resil::classification(verdict::retryable, {1s, false}));

    SECTION("the retry waits at least the second the server asked for") {
        std::vector<resil::events::retry_scheduled> retries;
        const auto pipe = resil::pipeline(resil::deadline_policy{5s},
                                          resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 5ms}}})
                              .with_listener(retry_log{&retries});
        const auto t0 = steady::now();
        const auto out = pipe([&](resil::context& c) { return http.perform(request::get(nginx.url("/limited")), c); });
        const auto took = since(t0);
        REQUIRE(out.ok());
        CHECK(out->body() == "ok\n");
        REQUIRE(retries.size() >= 1);
        CHECK(retries[0].from_retry_after);
        CHECK(retries[0].delay == 1s);
        CHECK(took >= 1s);
    }
    SECTION("with a 300 ms deadline it does not wait: plan B at once") {
        std::vector<resil::events::retry_scheduled> retries;
        resil::fallback_policy plan_b{[] { return resil::curl::response::from_parts(200, {}, "cached"); }};
        const auto pipe = resil::pipeline(plan_b, resil::deadline_policy{300ms}, resil::retry_policy{})
                              .with_listener(retry_log{&retries});
        const auto t0 = steady::now();
        const auto out = pipe([&](resil::context& c) { return http.perform(request::get(nginx.url("/limited")), c); });
        const auto took = since(t0);
        REQUIRE(out.ok());
        CHECK(out.from_fallback());
        CHECK(out.fallback_reason() == reason::retry_after_exceeds_deadline);
        CHECK(out->body() == "cached");
        CHECK(retries.empty());
        CHECK(took < 100ms + slack);  // one quick 429, then no sleep
        CHECK(plan_b.count(reason::retry_after_exceeds_deadline) == 1);
    }
}
