// resil::paced_bucket with resil::curl: a pipeline holding the bucket reads
// the rate-limit fields of each resil::curl::response and paces the next
// calls to them — from responses built in memory, and from the fault server.
#include <resil/curl.hpp>
#include <resil/paced_bucket.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::request;
using resil::curl::response;
using resil_test::action;
using resil_test::fault_server;

namespace {

struct pace_log {
    std::vector<resil::events::pace_changed>* seen;
    void operator()(const resil::events::pace_changed& e) const { seen->push_back(e); }
};

}  // namespace

TEST_CASE("curl paced bucket: a response's RateLimit fields set the pace of the next calls") {
    resil::testing::manual_clock clock;
    resil::basic_paced_bucket<resil::testing::manual_clock> pace{{.rate = 100, .burst = 1, .max_wait = 5s}, clock};
    std::vector<resil::events::pace_changed> changes;
    const auto pipe = resil::pipeline(clock, std::ref(pace)).with_listener(pace_log{&changes});
    const auto started = clock.now();
    for (int i = 0; i < 4; ++i) {
        const auto out = pipe([] { return response::from_parts(200, {{"RateLimit", R"("default";r=20;t=10)"}}); });
        REQUIRE(out.ok());
    }
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].rate == Approx(2.0));  // 20 left in 10 s
    CHECK(changes[0].burst == 2);           // 1 s at that pace
    CHECK(pace.rate() == Approx(2.0));
    // The first call took the bucket's only token; at the new pace the token it owes is 500 ms
    // (one token at 2 a second) and the bucket holds 2, so the second went at once, the third
    // and the fourth waited 500 ms each.
    CHECK(clock.now() - started == 1s);
}

TEST_CASE("curl paced bucket: every shape of quota paces the next calls") {
    // One response per shape, 20 left in 10 s: a pace of 2 a second.
    const auto wall = std::chrono::system_clock::time_point{} + std::chrono::seconds{1'717'200'000};
    struct shape {
        const char* name;
        response r;
    };
    const shape shapes[] = {
        // express-rate-limit, standardHeaders: 'draft-7'
        {"draft 07", response::from_parts(200, {{"RateLimit-Policy", "100;w=60"},
                                                {"RateLimit", "limit=100, remaining=20, reset=10"}}, "", wall)},
        // X's API (docs.x.com): a Unix-time reset
        {"x-rate-limit", response::from_parts(200, {{"x-rate-limit-limit", "900"}, {"x-rate-limit-remaining", "20"},
                                                    {"x-rate-limit-reset", "1717200010"}}, "", wall)},
        // Reddit: a fractional remaining, the reset in seconds
        {"reddit", response::from_parts(200, {{"X-Ratelimit-Used", "580"}, {"X-Ratelimit-Remaining", "20.0"},
                                              {"X-Ratelimit-Reset", "10"}}, "", wall)},
        // Anthropic: an RFC 3339 reset
        {"anthropic", response::from_parts(200, {{"anthropic-ratelimit-requests-limit", "50"},
                                                 {"anthropic-ratelimit-requests-remaining", "20"},
                                                 {"anthropic-ratelimit-requests-reset", "2024-06-01T00:00:10Z"}},
                                           "", wall)},
        // Two limiters, one RateLimit line each (express-rate-limit's
        // draft-8): the slower line sets the pace, 20 in 10 s, not 50 in 10 s.
        {"two lines", response::from_parts(200, {{"RateLimit", R"("fast"; r=50; t=10)"},
                                                 {"RateLimit", R"("slow"; r=20; t=10)"}}, "", wall)},
    };
    for (const auto& [name, r] : shapes) {
        INFO(name);
        resil::testing::manual_clock clock;
        resil::basic_paced_bucket<resil::testing::manual_clock> pace{{.rate = 100, .burst = 1, .max_wait = 5s}, clock};
        CHECK(r.rate_limit(wall).remaining == 20);
        const auto change = pace.observe(resil::detail::fields_lookup<response>{&r}, clock.now(), wall);
        REQUIRE(change);
        CHECK(change->rate == Approx(2.0));
        CHECK(pace.rate() == Approx(2.0));
    }
}

TEST_CASE("curl paced bucket: in a pipeline, the most restrictive of several RateLimit lines sets the pace") {
    resil::testing::manual_clock clock;
    resil::basic_paced_bucket<resil::testing::manual_clock> pace{{.rate = 100, .burst = 1, .max_wait = 5s}, clock};
    std::vector<resil::events::pace_changed> changes;
    const auto pipe = resil::pipeline(clock, std::ref(pace)).with_listener(pace_log{&changes});
    const auto out = pipe([] {
        return response::from_parts(200, {{"RateLimit", R"("fast";r=50;t=10)"}, {"RateLimit", R"("slow";r=20;t=10)"}});
    });
    REQUIRE(out.ok());
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].rate == Approx(2.0));  // 20 in 10 s, from the second line
}

TEST_CASE("curl paced bucket: against the fault server, an exhausted Anthropic quota stops the next call") {
    fault_server server;
    client http;
    // Reset two minutes ahead, as Anthropic writes it (RFC 3339, UTC, whole seconds).
    const auto at = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + 120s;
    const auto day = std::chrono::floor<std::chrono::days>(at);
    const std::chrono::year_month_day ymd{day};
    const std::chrono::hh_mm_ss<std::chrono::seconds> time{at - day};
    char reset[32];
    std::snprintf(reset, sizeof reset, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(time.hours().count()), static_cast<int>(time.minutes().count()),
                  static_cast<int>(time.seconds().count()));
    server.on("/quota", {action::respond(200, "ok", {{"anthropic-ratelimit-requests-remaining", "49"},
                                                     {"anthropic-ratelimit-requests-reset", reset},
                                                     {"anthropic-ratelimit-output-tokens-remaining", "0"},
                                                     {"anthropic-ratelimit-output-tokens-reset", reset}})});
    resil::paced_bucket pace{{.rate = 100, .burst = 5, .max_wait = 100ms}};
    const auto pipe = resil::pipeline(std::ref(pace));
    const auto req = request::get(server.url("/quota"));
    const auto first = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
    REQUIRE(first.ok());
    CHECK(pace.metrics().pauses == 1);
    const auto second = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
    CHECK(second.reason() == resil::reason::rate_limited);
    REQUIRE(second.retry_after());
    CHECK(*second.retry_after() > 60s);  // however slow the machine, not a minute of the two passes
    CHECK(*second.retry_after() <= 120s);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("curl paced bucket: against the fault server, an exhausted X-RateLimit quota stops the next call") {
    fault_server server;
    client http;
    server.on("/quota", {action::respond(200, "ok", {{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "30"}})});
    resil::paced_bucket pace{{.rate = 100, .burst = 5, .max_wait = 100ms}};
    const auto pipe = resil::pipeline(std::ref(pace));
    const auto req = request::get(server.url("/quota"));
    const auto first = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
    REQUIRE(first.ok());
    CHECK(pace.metrics().pauses == 1);
    // No token before the reset (30 s): rejected at once, the wait as retry_after, nothing sent.
    const auto second = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
    CHECK(second.reason() == resil::reason::rate_limited);
    REQUIRE(second.retry_after());
    CHECK(*second.retry_after() > 29s);
    CHECK(*second.retry_after() <= 30s);
}
