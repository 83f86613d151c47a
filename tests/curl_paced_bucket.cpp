// resil::paced_bucket with resil::curl: a pipeline holding the bucket reads
// the rate-limit fields of each resil::curl::response and paces the next
// calls to them — from responses built in memory, and from the fault server.
#include <resil/curl.hpp>
#include <resil/paced_bucket.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
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
