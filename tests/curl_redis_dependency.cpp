// resil::http::dependency's blocking face with a quota shared through Redis
// (resil/http/redis_quota.hpp alone, without Asio), against a real
// redis-server and a real HTTP server on 127.0.0.1: two dependency objects
// (as two processes would hold) share one quota, the limiter is reachable
// with its figures, and the metrics text carries the quota's series. Built
// again as a RESIL_SEPARATE_COMPILATION program (separate.curl_redis_dependency),
// where the quota and the limiter are compiled in the one source file and
// this file sees declarations (the limiter's class from its own header).
#include <resil/http/dependency.hpp>
#include <resil/http/redis_quota.hpp>
#include <resil/redis/rate_limiter.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/redis_quota_dependency.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::http::dependency;
using resil::http::dependency_options;
using resil_test::action;
using resil_test::fault_server;
using resil_test::with_quota;

TEST_CASE("dependency with a Redis quota, blocking face: two objects share one quota, refused beyond its burst") {
    resil_test::redis_server redis;
    fault_server s;
    s.on("/", {action::respond(200, "price")});
    const auto o = with_quota(s, redis, "pricing-blocking", 3);
    dependency a{o};
    dependency b{o};

    CHECK(a.get("/"));
    CHECK(b.get("/"));
    CHECK(a.get("/"));
    const auto refused = b.get("/");
    CHECK(refused.reason() == reason::rate_limited);
    CHECK(refused.attempts() == 0);
    CHECK(s.requests("/").size() == 3);
    CHECK(redis.command({"EXISTS", "resil:rl:{pricing-blocking}"}) == "1");

    const auto [la, lb] = resil_test::shared_limiters(a, b);
    CHECK(la->metrics().store_failures == 0);
    CHECK(la->metrics().granted + lb->metrics().granted == 3);
    CHECK(lb->metrics().rejected == 1);
    CHECK(b.metrics().snapshot().rejections[reason::rate_limited] == 1);

    const auto text = resil::prometheus_text({a.metrics()});  // (one name: b's series would collide)
    CHECK(text.find("resil_quota_decisions_total{dependency=") != std::string::npos);
    CHECK(text.find("resil_quota_store_connected{dependency=") != std::string::npos);
}

TEST_CASE("dependency without a shared quota: no limiter") {
    fault_server s;
    s.on("/", {action::respond(200, "price")});
    dependency_options o;
    o.name = "catalog";
    o.endpoints = {{.address = s.url("")}};
    dependency d{o};
    CHECK(resil::http::shared_quota_limiter(d) == nullptr);
    CHECK(d.get("/"));
}
