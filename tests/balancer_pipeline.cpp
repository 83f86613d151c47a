#include <resil/balancer.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::balancing_policy;
using resil::endpoint;
using resil::testing::manual_clock;

namespace {
struct reply {
    int status = 200;
    std::string from;
};
resil::verdict judge(const reply& r) { return r.status >= 500 ? resil::verdict::retryable : resil::verdict::success; }
}  // namespace

TEST_CASE("in a pipeline: a retry goes to an endpoint the call has not tried, and the failures count towards ejection") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}, {.address = "c:80"}},
                {.policy = balancing_policy::round_robin}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    std::map<std::string, int> calls;
    for (int i = 0; i < 30; ++i) {
        resil::tried_endpoints tried;
        std::vector<std::string> order;
        auto out = pipe([&](auto& ctx) {
            return resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
                ++calls[ep.address];
                order.push_back(ep.address);
                clock.advance(5ms);
                return reply{ep.address == "a:80" ? 503 : 200, ep.address};
            }, judge);
        });
        REQUIRE(out);
        CHECK(out.value().value().from != "a:80");
        CHECK(order.size() <= 2);  // a failure on a: the retry goes elsewhere at once
        if (order.size() == 2) CHECK(order[0] == "a:80");
    }
    // a failed 5 times in a row and was ejected: no call has gone to it since.
    CHECK(calls["a:80"] == 5);
    CHECK(lb.metrics().ejections == 1);
}

TEST_CASE("in a pipeline: no endpoint is a rejection with its own reason") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}}};
    lb.replace(std::vector<endpoint>{});
    resil::tried_endpoints tried;
    int called = 0;
    auto attempt = [&](auto& ctx) {
        return resil::call_endpoint(lb, ctx, tried, [&](const endpoint&) {
            ++called;
            return reply{};
        }, judge);
    };
    auto out = resil::pipeline(clock)(attempt);
    CHECK_FALSE(out);
    CHECK(out.reason() == resil::reason::no_endpoint);
    CHECK(resil::to_string(out.reason()) == "no_endpoint");
    // Under a retry policy the call fails (a rejection is not retried), and
    // the attempt's own outcome keeps the reason.
    auto retried = resil::pipeline(clock, resil::retry_policy{})(attempt);
    CHECK_FALSE(retried);
    REQUIRE(retried.has_value());
    CHECK(retried.value().reason() == resil::reason::no_endpoint);
    CHECK(called == 0);
}

TEST_CASE("per-endpoint breakers: an endpoint whose breaker opened is passed over") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}},
                {.policy = balancing_policy::round_robin,
                 .outlier = {.consecutive_failures = 0},
                 .endpoint_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                                    .consecutive_failures = 2,
                                                                    .open_for = 1h}}};
    std::map<std::string, int> calls;
    for (int i = 0; i < 20; ++i) {
        resil::tried_endpoints tried;
        resil::context ctx;
        auto out = resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
            ++calls[ep.address];
            return reply{ep.address == "a:80" ? 500 : 200, ep.address};
        }, judge);
        REQUIRE(out.has_value());
    }
    CHECK(calls["a:80"] == 2);  // opened after two failures in a row
    CHECK(calls["b:80"] == 18);
    CHECK(lb.metrics().ejections == 0);
    // Both open: no endpoint left.
    lb.replace({{.address = "a:80"}});
    resil::tried_endpoints tried;
    resil::context ctx;
    auto out = resil::call_endpoint(lb, ctx, tried, [&](const endpoint&) { return reply{}; }, judge);
    CHECK(out.reason() == resil::reason::no_endpoint);
}

TEST_CASE("the caller's cancel or deadline is not the endpoint's failure: no ejection, nothing to its breaker") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}},
                {.policy = balancing_policy::round_robin,
                 .outlier = {.consecutive_failures = 2, .max_ejection_share = 0.5},
                 .endpoint_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                                    .consecutive_failures = 2,
                                                                    .open_for = 1h}}};
    auto breakers_closed = [&] {
        bool closed = true;
        for (int i = 0; i < 2; ++i) {
            auto l = lb.pick(clock.now());
            closed = closed && l.breaker()->state() == resil::circuit_state::closed;
        }
        return closed;
    };
    // Cancelled by the caller: the transfer was aborted and reads as a failure.
    for (int i = 0; i < 10; ++i) {
        std::stop_source cancel;
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline<manual_clock>::at(resil::time_point::max(), clock), .stop = cancel.get_token()}};
        resil::tried_endpoints tried;
        auto out = resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
            cancel.request_stop();
            return reply{503, ep.address};
        }, judge);
        REQUIRE(out.has_value());
    }
    // The call's deadline passed during the transfer.
    for (int i = 0; i < 10; ++i) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline<manual_clock>::at(clock.now() + 10ms, clock)}};
        resil::tried_endpoints tried;
        auto out = resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
            clock.advance(20ms);
            return reply{504, ep.address};
        }, judge);
        REQUIRE(out.has_value());
    }
    CHECK(lb.metrics().ejections == 0);
    CHECK(breakers_closed());
    for (const auto& s : lb.status(clock.now())) CHECK(s.outstanding == 0);
    // The same failures inside the deadline and uncancelled do count.
    for (int i = 0; i < 4; ++i) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline<manual_clock>::at(clock.now() + 10s, clock)}};
        resil::tried_endpoints tried;
        (void)resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) { return reply{503, ep.address}; }, judge);
    }
    CHECK(lb.metrics().ejections == 1);
}
