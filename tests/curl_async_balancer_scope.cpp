// The idempotency-scope rule on Asio: resil::asio::call_endpoint through the
// asynchronous pipeline and client (keyed POSTs charged at most once across
// two providers whose primary dies at random moments), and hedge copies of
// a keyed POST that stay with the provider the first copy went to, while a
// GET's copy goes to the other. Real HTTP on 127.0.0.1.
#include <resil/asio.hpp>
#include <resil/balancer.hpp>
#include <resil/curl.hpp>
#include <resil/curl_asio/async_client.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/retry.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <map>
#include <random>
#include <string>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/payment_provider.hpp"

using namespace std::chrono_literals;
using resil::curl::async_client;
using resil::curl::request;
using resil::curl::response;
using resil_test::payment_provider;

namespace {

template <class Done>
void run_until(asio::io_context& io, Done done, std::chrono::milliseconds limit = 60s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until) {
        io.run_for(20ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(done());
}

}  // namespace

TEST_CASE("curl async balancer: keyed POSTs, the primary dying at random moments: at most one charge per operation") {
    payment_provider primary{"primary"}, backup{"backup"};
    resil::balancer lb{{{.address = primary.url("")}, {.address = backup.url(""), .priority = 1}},
                       {.outlier = {.base_ejection_time = 5ms, .max_ejection_time = 20ms,
                                    .ejection_decay_interval = 10ms},
                        .endpoint_breaker = resil::circuit_breaker_options{
                            .mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3,
                            .open_for = 5ms}}};
    asio::io_context io;
    async_client http(io);
    auto pipe = resil::asio::pipeline(resil::deadline_policy{10s},
                                      resil::retry_policy{{.max_attempts = 4, .backoff = resil::full_jitter{1ms, 5ms}}});
    std::mt19937 rng{36};
    std::map<std::string, int> by_outcome;
    int bad = 0;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer pause(io);
            for (int i = 0; i < 400; ++i) {
                const auto roll = rng() % 100;
                if (!primary.alive() && roll < 70) primary.revive();
                if (primary.alive()) {
                    if (roll < 15) primary.kill();
                    else if (roll < 40) primary.die_on_next_request(payment_provider::death::after_charging);
                    else if (roll < 50) primary.die_on_next_request(payment_provider::death::before_charging);
                }
                pause.expires_after(1ms);
                co_await pause.async_wait(asio::use_awaitable);
                resil::tried_endpoints tried;
                resil::context ctx;
                auto out = co_await pipe.execute(ctx, [&](resil::context& c) {
                    return resil::asio::call_endpoint(
                        lb, c, tried, [&](const resil::endpoint& ep) -> asio::awaitable<response> {
                            const auto req = request::post(ep.address + "/charge", "amount=100");  // outlives the transfer
                            co_return co_await http.async_perform(req, c, asio::use_awaitable);
                        });
                });
                const std::string key = ctx.idempotency_key().to_string();
                const int at_primary = primary.charges(key), at_backup = backup.charges(key);
                const bool honest =
                    at_primary + at_backup <= 1 &&
                    (out ? at_primary + at_backup == 1 &&
                               out.value().value().body().starts_with(at_primary == 1 ? "primary" : "backup")
                         : at_backup == 0 && primary.requests(key) >= 1 &&
                               (out.reason() == resil::reason::no_endpoint_in_scope ||
                                out.reason() == resil::reason::retries_exhausted));
                if (!honest) {
                    ++bad;
                    UNSCOPED_INFO("call " << i << ": " << resil::to_string(out.reason()) << ", charged at primary "
                                          << at_primary << ", at backup " << at_backup);
                }
                ++by_outcome[out ? (at_primary == 1 ? "ok at primary" : "ok at backup")
                                 : std::string(resil::to_string(out.reason()))];
            }
            done = true;
        },
        asio::detached);
    run_until(io, [&] { return done; });
    INFO("outcomes: ok at primary " << by_outcome["ok at primary"] << ", ok at backup " << by_outcome["ok at backup"]
                                    << ", no_endpoint_in_scope " << by_outcome["no_endpoint_in_scope"]
                                    << ", retries_exhausted " << by_outcome["retries_exhausted"]);
    CHECK(bad == 0);
    // Every kind of moment happened (the primary, dead half of the time and
    // then out for a few ms, answers about 1 call in 20).
    CHECK(by_outcome["ok at primary"] >= 5);
    CHECK(by_outcome["ok at backup"] >= 40);
    CHECK(by_outcome["no_endpoint_in_scope"] + by_outcome["retries_exhausted"] >= 10);
}

TEST_CASE("curl async balancer: a hedge copy of a keyed POST stays with the first copy's provider; a GET's does not") {
    resil_test::fault_server primary, backup;
    primary.on("/pay", {resil_test::action::respond_after(400ms, 200, "primary")});
    backup.on("/pay", {resil_test::action::respond(200, "backup")});
    resil::balancer lb{{{.address = primary.url("")}, {.address = backup.url(""), .priority = 1}}};
    asio::io_context io;
    async_client http(io);
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 20ms}};
    auto hedged_call = [&](bool post, std::optional<response>& result) -> asio::awaitable<void> {
        resil::tried_endpoints tried;
        resil::context ctx;
        auto out = co_await resil::asio::hedged(hedge, ctx, [&](resil::context& c) {
            return resil::asio::call_endpoint(
                lb, c, tried, [&, post](const resil::endpoint& ep) -> asio::awaitable<response> {
                    const auto url = ep.address + "/pay";
                    const auto req = post ? request::post(url, "amount=100") : request::get(url);
                    co_return co_await http.async_perform(req, c, asio::use_awaitable);
                });
        });
        if (out.has_value()) result.emplace(std::move(out.value()));
    };
    for (const bool post : {true, false}) {
        INFO((post ? "keyed POST" : "GET"));
        const auto at_primary = primary.requests("/pay").size(), at_backup = backup.requests("/pay").size();
        std::optional<response> result;
        bool done = false;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                co_await hedged_call(post, result);
                done = true;
            },
            asio::detached);
        run_until(io, [&] { return done; });
        REQUIRE(result);
        CHECK(result->status() == 200);
        if (post) {
            // Both copies went to the primary (the only endpoint of its
            // scope); the backup never saw the key.
            CHECK(result->body() == "primary");
            CHECK(backup.requests("/pay").size() == at_backup);
            CHECK(primary.requests("/pay").size() == at_primary + 2);
        } else {
            // The GET's copy went to the backup and won.
            CHECK(result->body() == "backup");
            CHECK(backup.requests("/pay").size() == at_backup + 1);
        }
    }
}
