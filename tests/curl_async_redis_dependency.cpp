// resil::http::dependency with a quota shared through Redis
// (dependency_options::shared_quota; resil/http/redis_quota.hpp and, on the
// Asio face, resil/http/async_redis_quota.hpp), against a real redis-server
// and a real HTTP server on 127.0.0.1: one quota for both faces and for two
// dependency objects (as two processes would hold), and the failure policy
// when Redis is gone.
#include <resil/http/async_redis_quota.hpp>
#include <resil/http/dependency.hpp>
#include <resil/http/redis_quota.hpp>
#include <resil/redis/rate_limiter.hpp>  // the quota's limiter, read below (separate compilation declares it only)

#include <asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/redis_quota_dependency.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::http::dependency;
using resil::http::dependency_options;
using resil::http::response;
using resil_test::action;
using resil_test::fault_server;
using resil_test::with_quota;

namespace {

// Runs `n` GETs of `face` at once on `io`; every one completes.
std::vector<response> run_calls(::asio::io_context& io, resil::http::async_dependency& face, std::size_t n) {
    std::vector<response> out(n);
    std::size_t done = 0;
    for (std::size_t i = 0; i < n; ++i)
        face.async_get("/", [&, i](std::exception_ptr e, response r) {
            REQUIRE(!e);
            out[i] = std::move(r);
            ++done;
        });
    // Until every call completed: the Redis connection keeps the
    // io_context busy (a read outstanding), so run() would not return.
    const auto bound = std::chrono::steady_clock::now() + 60s;
    while (done < n && std::chrono::steady_clock::now() < bound) io.run_one_for(100ms);
    REQUIRE(done == n);
    return out;
}

std::size_t granted(const std::vector<response>& rs) {
    std::size_t n = 0;
    for (const auto& r : rs) n += r ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("dependency with a Redis quota: both faces and two dependency objects share one quota, refused beyond its burst") {
    resil_test::redis_server redis;
    fault_server s;
    s.on("/", {action::respond(200, "price")});
    const auto o = with_quota(s, redis, "pricing-shared", 4);
    dependency a{o};  // two objects with their own limiters and connections: two processes
    dependency b{o};

    CHECK(a.get("/"));
    CHECK(b.get("/"));
    CHECK(redis.command({"EXISTS", "resil:rl:{pricing-shared}"}) == "1");  // the quota is in Redis

    ::asio::io_context io{1};
    auto face = a.on(io);
    const auto async_replies = run_calls(io, face, 3);  // two permits left for three calls
    CHECK(granted(async_replies) == 2);
    for (const auto& r : async_replies) {
        if (r) continue;
        CHECK(r.reason() == reason::rate_limited);
        CHECK(r.attempts() == 0);
    }

    const auto refused = b.get("/");  // the other "process": the quota is spent for it too
    CHECK(refused.reason() == reason::rate_limited);
    CHECK(refused.attempts() == 0);
    CHECK(s.requests("/").size() == 4);

    // Redis decided every one of them: nothing fell back.
    const auto [la, lb] = resil_test::shared_limiters(a, b);
    CHECK(la->metrics().store_failures == 0);
    CHECK(lb->metrics().store_failures == 0);
    CHECK(la->metrics().granted + lb->metrics().granted == 4);
    CHECK(la->metrics().rejected + lb->metrics().rejected == 2);
    CHECK(a.metrics().snapshot().rejections[reason::rate_limited] == 1);
    CHECK(b.metrics().snapshot().rejections[reason::rate_limited] == 1);
    CHECK(a.metrics().snapshot().quota_store_failures == 0);
    // The dependency's metrics watch the limiter: decisions by source and
    // the connection, exported with the dependency's series.
    const auto quota = a.metrics().quota();
    REQUIRE(quota.has_value());
    CHECK(quota->redis == la->metrics().round_trips);
    CHECK(quota->redis >= 3);
    CHECK(quota->connected);
    const auto text = resil::prometheus_text({a.metrics()});
    CHECK(text.find("resil_quota_decisions_total{dependency=") != std::string::npos);
    CHECK(text.find("resil_quota_store_connected{dependency=") != std::string::npos);
}

TEST_CASE("dependency with a Redis quota: Redis killed, fail open decides on the local bucket, fail closed refuses") {
    resil_test::redis_server redis;
    fault_server s;
    s.on("/", {action::respond(200, "price")});
    SECTION("fail open: a local bucket of burst / expected_pods") {
        auto o = with_quota(s, redis, "pricing-open", 4);
        o.shared_quota->expected_pods = 2;  // 2 permits each while Redis is down
        o.shared_quota->on_failure = resil::redis::failure_policy::fail_open;
        o.shared_quota->connect_timeout = 200ms;
        o.shared_quota->reply_timeout = 200ms;
        dependency d{o};
        redis.kill();
        CHECK(d.get("/"));  // blocking face: the fallback bucket's first permit
        ::asio::io_context io{1};
        auto face = d.on(io);
        const auto replies = run_calls(io, face, 2);  // Asio face: one permit left
        CHECK(granted(replies) == 1);
        const auto refused = d.get("/");
        CHECK(refused.reason() == reason::rate_limited);
        CHECK(s.requests("/").size() == 2);
        const auto m = d.metrics().snapshot();
        CHECK(m.quota_store_failures == 4);  // every decision went to the failure policy
        CHECK(m.rejections[reason::rate_limited] == 2);
        const auto lm = resil::http::shared_quota_limiter(d)->metrics();
        CHECK(lm.fail_open_admitted == 2);
        CHECK(lm.fail_open_rejected == 2);
    }
    SECTION("fail closed: quota_unavailable, nothing sent") {
        auto o = with_quota(s, redis, "pricing-closed", 4);
        o.shared_quota->on_failure = resil::redis::failure_policy::fail_closed;
        o.shared_quota->connect_timeout = 200ms;
        o.shared_quota->reply_timeout = 200ms;
        dependency d{o};
        redis.kill();
        const auto r = d.get("/");
        CHECK(r.reason() == reason::quota_unavailable);
        CHECK(r.attempts() == 0);
        ::asio::io_context io{1};
        auto face = d.on(io);
        const auto replies = run_calls(io, face, 1);
        CHECK(replies[0].reason() == reason::quota_unavailable);
        CHECK(replies[0].attempts() == 0);
        CHECK(s.requests("/").empty());
        const auto m = d.metrics().snapshot();
        CHECK(m.quota_store_failures == 2);
        CHECK(m.rejections[reason::quota_unavailable] == 2);
        CHECK(resil::http::shared_quota_limiter(d)->metrics().fail_closed_rejected == 2);
    }
}

TEST_CASE("dependency with a Redis quota: the options are checked from the root") {
    fault_server s;
    dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    o.shared_quota = resil::redis::rate_limiter_options{.key = "has space"};
    CHECK_THROWS_WITH(dependency{o}, Catch::Matchers::StartsWith(
                                         "resil::http::dependency: `shared_quota.key` must be 1 to 200 printable"));
}
