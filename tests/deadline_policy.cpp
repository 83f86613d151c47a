#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

TEST_CASE("deadline policy: options like every other policy, and the plain budget still works") {
    const resil::deadline_policy plain{250ms};
    const resil::deadline_policy spelled{{.budget = 250ms}};
    CHECK(plain.budget() == 250ms);
    CHECK(plain.options() == spelled.options());
    STATIC_REQUIRE(resil::deadline_policy_options::min_budget == resil::timeouts::min_attempt_time);
    STATIC_REQUIRE(resil::deadline_policy_options::max_budget == 24h);
}

TEST_CASE("deadline policy: validate names the field, its range and the value") {
    CHECK_FALSE(resil::deadline_policy_options{.budget = 1ms}.validate());
    CHECK_FALSE(resil::deadline_policy_options{.budget = 24h}.validate());
    CHECK(resil::deadline_policy_options{}.validate()->message() == "`budget` must be in [1ms, 24h], got 0s");
    CHECK(resil::deadline_policy_options{.budget = 25h}.validate()->message() == "`budget` must be in [1ms, 24h], got 25h");
    CHECK_THROWS_WITH(resil::deadline_policy{-5s}, "resil::deadline_policy: `budget` must be in [1ms, 24h], got -5s");
    CHECK_THROWS_WITH(resil::deadline_policy{500us}, "resil::deadline_policy: `budget` must be in [1ms, 24h], got 500us");
}

TEST_CASE("deadline policy: the callable sees the deadline on the context's clock, by value") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms});
    auto out = pipe(
        [&](resil::basic_context<manual_clock>& ctx) {
            const auto dl = ctx.deadline();  // a value built from the context's clock
            clock.advance(50ms);
            return std::pair{dl.remaining(), ctx.remaining()};
        },
        resil::always_success);
    REQUIRE(out.ok());
    CHECK(out->first == 200ms);   // the copy reads the same clock
    CHECK(out->second == 200ms);
}

TEST_CASE("deadline policy: under the minimum attempt time left at the end counts as none") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{100ms});
    auto out = pipe([&] { clock.advance(100ms - 999us); return 503; },
                    [](int s) { return s == 200 ? verdict::success : verdict::retryable; });
    CHECK(out.reason() == reason::deadline_exceeded);
    auto in_time = pipe([&] { clock.advance(98ms); return 503; },
                        [](int s) { return s == 200 ? verdict::success : verdict::retryable; });
    CHECK(in_time.reason() == reason::failed);
}
