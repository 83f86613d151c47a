// resil::balancer in front of real replicas: three nginx instances on
// 127.0.0.1, one stopped mid-test. Needs nginx; without it the test fails
// (loudly), it does not skip.
#include <resil/balancer.hpp>
#include <resil/curl.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::request;

TEST_CASE("curl balancer: calls keep succeeding through the others when a replica stops, and it is ejected") {
    std::vector<std::unique_ptr<resil_test::nginx_server>> replicas;
    std::vector<resil::endpoint> endpoints;
    for (int i = 0; i < 3; ++i) {
        replicas.push_back(std::make_unique<resil_test::nginx_server>(
            "location /who { return 200 \"replica " + std::to_string(i) + "\"; }"));
        endpoints.push_back({.address = replicas.back()->url("")});
    }
    std::vector<resil::events::endpoint_ejected> ejected;
    // Three endpoints: a share of 10 % would still allow one ejection; 50 %
    // states the intent.
    resil::balancer lb{endpoints,
                       {.policy = resil::balancing_policy::round_robin,
                        .outlier = {.max_ejection_share = 0.5},
                        .on_ejected = [&](const resil::events::endpoint_ejected& e) { ejected.push_back(e); }}};
    client http;
    auto pipe = resil::pipeline(resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    std::map<std::string, int> answers;
    auto call = [&] {
        resil::tried_endpoints tried;
        return pipe([&](resil::context& ctx) {
            return resil::call_endpoint(lb, ctx, tried, [&](const resil::endpoint& ep) {
                return http.perform(request::get(ep.address + "/who"), ctx);
            });
        });
    };
    for (int i = 0; i < 30; ++i) {
        auto out = call();
        REQUIRE(out);
        ++answers[std::string(out.value().value().body())];
    }
    CHECK(answers.size() == 3);
    CHECK(answers["replica 0"] == 10);

    const std::string stopped = endpoints[1].address;
    replicas[1].reset();  // replica 1 goes away: connections are refused
    answers.clear();
    for (int i = 0; i < 60; ++i) {
        auto out = call();
        REQUIRE(out);  // the retry went to another replica
        ++answers[std::string(out.value().value().body())];
    }
    CHECK(answers.count("replica 1") == 0);
    CHECK(answers["replica 0"] + answers["replica 2"] == 60);
    REQUIRE(ejected.size() == 1);
    CHECK(ejected[0].times_ejected == 1);
    CHECK(ejected[0].ejected_for == 30s);
    const auto status = lb.status(resil::steady_clock{}.now());
    CHECK(status[1].endpoint.address == stopped);
    CHECK(status[1].ejected);
    CHECK_FALSE(status[0].ejected);
    CHECK_FALSE(status[2].ejected);
}
