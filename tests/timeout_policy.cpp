#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::testing::manual_clock;

TEST_CASE("timeout policy: options are the timeouts, validated by timeouts::validate") {
    const resil::timeout_policy p{{.connect = 20ms, .read = 100ms, .total = 150ms}};
    CHECK(p.options() == resil::timeout_policy_options{.connect = 20ms, .read = 100ms, .total = 150ms});
    CHECK(p.timeouts() == p.options());
    CHECK_THROWS_WITH(resil::timeout_policy({.connect = 0ms}), "resil::timeout_policy: `connect` must be at least 1ms, got 0s");
    CHECK_THROWS_WITH(resil::timeout_policy({.read = -1ms}), "resil::timeout_policy: `read` must be at least 1ms, got -1ms");
    CHECK_THROWS_WITH(resil::timeout_policy({.total = 0ms}), "resil::timeout_policy: `total` must be at least 1ms, got 0s");
}

TEST_CASE("timeout policy: an attempt with under the minimum attempt time left does not start") {
    manual_clock clock;
    resil::basic_context<manual_clock> ctx{clock};
    ctx.tighten_deadline(clock.now() + resil::timeouts::min_attempt_time - 1ns);
    auto pipe = resil::pipeline(clock, resil::timeout_policy{{.total = 1s}});
    int calls = 0;
    auto out = pipe.execute(ctx, [&] { return ++calls; }, resil::always_success);
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK(calls == 0);

    resil::basic_context<manual_clock> enough{clock};
    enough.tighten_deadline(clock.now() + resil::timeouts::min_attempt_time);
    auto ran = pipe.execute(enough, [&](resil::basic_context<manual_clock>& c) { ++calls; return c.attempt_timeouts(); },
                            resil::always_success);
    REQUIRE(ran.ok());
    CHECK(ran->total == 1ms);
    CHECK(calls == 1);
}

TEST_CASE("timeout policy: nested policies tighten field by field and restore on the way out") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::timeout_policy{{.connect = 50ms, .total = 1s}},
                                resil::timeout_policy{{.connect = 1s, .read = 100ms, .total = 300ms}});
    resil::basic_context<manual_clock> ctx{clock};
    auto out = pipe.execute(ctx, [](resil::basic_context<manual_clock>& c) { return c.timeouts(); }, resil::always_success);
    REQUIRE(out.ok());
    CHECK(*out == resil::timeouts{.connect = 50ms, .read = 100ms, .total = 300ms});
    CHECK(ctx.timeouts() == resil::timeouts{});  // the caller's are back
}
