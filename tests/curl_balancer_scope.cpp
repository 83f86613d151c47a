// A payment primary and a backup provider, each with its own store of
// idempotency keys, behind resil::balancer, resil::call_endpoint, retries
// and per-endpoint breakers: keyed POSTs are charged at most once across
// both providers, whatever moment the primary dies, and a call's reason
// says what happened. Real HTTP on 127.0.0.1 (support/payment_provider.hpp).
#include <resil/balancer.hpp>
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>

#include <map>
#include <random>
#include <string>
#include <thread>

#include "catch.hpp"
#include "support/payment_provider.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::request;
using resil_test::payment_provider;

namespace {

struct providers {
    payment_provider primary{"primary"};
    payment_provider backup{"backup"};
    // Short ejections and breaker openings (calls are 1 ms apart), so that
    // the primary comes back many times within the run.
    resil::balancer lb{{{.address = primary.url("")}, {.address = backup.url(""), .priority = 1}},
                       {.outlier = {.base_ejection_time = 5ms, .max_ejection_time = 20ms,
                                    .ejection_decay_interval = 10ms},
                        .endpoint_breaker = resil::circuit_breaker_options{
                            .mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3,
                            .open_for = 5ms}}};
};

}  // namespace

TEST_CASE("curl balancer: the first keyed POST after the primary dies succeeds on its second attempt, at the backup") {
    providers p;
    client http;
    auto pipe = resil::pipeline(resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 5ms}}});
    auto charge = [&] {
        resil::tried_endpoints tried;
        resil::context ctx;
        int attempts = 0;
        std::string key;
        auto out = pipe.execute(ctx, [&](resil::context& c) {
            ++attempts;
            return resil::call_endpoint(p.lb, c, tried, [&](const resil::endpoint& ep) {
                return http.perform(request::post(ep.address + "/charge", "amount=100"), c);
            });
        });
        key = ctx.idempotency_key().to_string();
        return std::tuple{std::move(out), attempts, key};
    };
    {
        auto [out, attempts, key] = charge();
        REQUIRE(out);
        CHECK(attempts == 1);
        CHECK(p.primary.total_charges() == 1);
    }
    p.primary.kill();  // refused connections: never sent
    auto [out, attempts, key] = charge();
    REQUIRE(out);
    CHECK(attempts == 2);
    CHECK(out.value().value().body() == "backup charged");
    CHECK(p.backup.charges(key) == 1);
    CHECK(p.primary.requests(key) == 0);
}

TEST_CASE("curl balancer: 1,000 keyed POSTs, the primary dying at random moments: at most one charge per operation") {
    providers p;
    client http;
    auto pipe = resil::pipeline(resil::deadline_policy{10s},
                                resil::retry_policy{{.max_attempts = 4, .backoff = resil::full_jitter{1ms, 5ms}}});
    std::mt19937 rng{35};
    std::map<std::string, int> by_outcome;
    for (int i = 0; i < 1000; ++i) {
        // This call's fate for the primary: dead before it (refused),
        // dying on the next request it reads after or before recording the
        // charge, or alive throughout. A dead primary stays dead for the
        // next call now and then.
        const auto roll = rng() % 100;
        if (!p.primary.alive() && roll < 70) p.primary.revive();
        if (p.primary.alive()) {
            if (roll < 15) p.primary.kill();
            else if (roll < 40) p.primary.die_on_next_request(payment_provider::death::after_charging);
            else if (roll < 50) p.primary.die_on_next_request(payment_provider::death::before_charging);
        }
        std::this_thread::sleep_for(1ms);
        resil::tried_endpoints tried;
        resil::context ctx;
        auto out = pipe.execute(ctx, [&](resil::context& c) {
            return resil::call_endpoint(p.lb, c, tried, [&](const resil::endpoint& ep) {
                return http.perform(request::post(ep.address + "/charge", "amount=100"), c);
            });
        });
        const std::string key = ctx.idempotency_key().to_string();
        const int at_primary = p.primary.charges(key), at_backup = p.backup.charges(key);
        INFO("call " << i << ": " << resil::to_string(out.reason()) << ", charged at primary " << at_primary
                     << ", at backup " << at_backup);
        REQUIRE(at_primary + at_backup <= 1);  // at most once across providers
        if (out) {
            // Success: charged once, by the provider that answered.
            const auto& body = out.value().value().body();
            CHECK(at_primary + at_backup == 1);
            CHECK(body.starts_with(at_primary == 1 ? "primary" : "backup"));
            ++by_outcome[body.starts_with("primary") ? "ok at primary" : "ok at backup"];
        } else {
            // The backup never fails: a failed call was never charged there.
            CHECK(at_backup == 0);
            // The honest reasons: the primary may have the request and is
            // not there to finish it; never a silent "no endpoint".
            CHECK((out.reason() == resil::reason::no_endpoint_in_scope ||
                   out.reason() == resil::reason::retries_exhausted));
            CHECK(p.primary.requests(key) >= 1);
            ++by_outcome[std::string(resil::to_string(out.reason()))];
        }
    }
    INFO("outcomes: ok at primary " << by_outcome["ok at primary"] << ", ok at backup " << by_outcome["ok at backup"]
                                    << ", no_endpoint_in_scope " << by_outcome["no_endpoint_in_scope"]
                                    << ", retries_exhausted " << by_outcome["retries_exhausted"]);
    // Every kind of moment happened (about 100, 700 and 200 of each on an
    // idle machine).
    CHECK(by_outcome["ok at primary"] >= 20);
    CHECK(by_outcome["ok at backup"] >= 100);
    CHECK(by_outcome["no_endpoint_in_scope"] + by_outcome["retries_exhausted"] >= 20);
}
