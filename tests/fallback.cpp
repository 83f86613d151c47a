#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <stdexcept>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

namespace {
// An inner policy that refuses every call for a given reason.
struct refuse {
    reason why;
    template <class Context, class Next>
    auto execute(Context&, Next&& next) const {
        using result = decltype(next(std::declval<Context&>()));
        return result::rejected(why);
    }
};
}  // namespace

TEST_CASE("fallback: handles every reason by default") {
    CHECK(resil::fallback_options{}.handles == resil::reason_set::all());
    CHECK_FALSE(resil::reason_set::all().contains(reason::none));
    for (auto r : {reason::failed, reason::circuit_open, reason::cancelled, reason::backoff_exceeds_deadline})
        CHECK(resil::reason_set::all().contains(r));
    resil::fallback_policy plan_b{[] { return 7; }};
    auto pipe = resil::pipeline(manual_clock{}, plan_b, refuse{reason::rate_limited});
    auto out = pipe([] { return 1; }, resil::always_success);
    REQUIRE(out.ok());
    CHECK(*out == 7);
    CHECK(out.fallback_reason() == reason::rate_limited);
}

TEST_CASE("fallback: declines the reasons it does not handle, which pass through unchanged") {
    resil::fallback_policy stale{[] { return 7; }, {.handles = {reason::circuit_open, reason::shed}}};
    CHECK(stale.options().handles.contains(reason::shed));
    std::vector<reason> used;
    auto listener = [&](const resil::events::fallback_used& e) { used.push_back(e.reason); };

    auto open = resil::pipeline(manual_clock{}, stale, refuse{reason::circuit_open}).with_listener(listener);
    auto served = open([] { return 1; }, resil::always_success);
    REQUIRE(served.ok());
    CHECK(*served == 7);

    auto limited = resil::pipeline(manual_clock{}, stale, refuse{reason::rate_limited}).with_listener(listener);
    auto declined = limited([] { return 1; }, resil::always_success);
    CHECK_FALSE(declined.ok());
    CHECK(declined.reason() == reason::rate_limited);  // unchanged
    CHECK_FALSE(declined.from_fallback());
    CHECK_FALSE(declined.has_value());

    // A failed attempt is declined the same way, its value kept.
    auto failing = resil::pipeline(manual_clock{}, stale);
    auto kept = failing([] { return 503; }, [](int s) { return s == 200 ? verdict::success : verdict::retryable; });
    CHECK(kept.reason() == reason::failed);
    REQUIRE(kept.has_value());
    CHECK(*kept == 503);

    CHECK(stale.count(reason::circuit_open) == 1);
    CHECK(stale.metrics().total() == 1);  // declined failures are not counted
    CHECK(used == std::vector<reason>{reason::circuit_open});
}

TEST_CASE("fallback: metrics() counts by reason, shared by copies; counts() is its former name") {
    int value = 0;
    resil::fallback_policy plan_b{[&value] { return ++value; }};
    const auto copy = plan_b;
    auto pipe = resil::pipeline(manual_clock{}, copy, refuse{reason::rate_limited});
    CHECK(pipe([] { return 0; }, resil::always_success).value() == 1);
    CHECK(pipe([] { return 0; }, resil::always_success).value() == 2);
    auto shed = resil::pipeline(manual_clock{}, copy, refuse{reason::shed});
    CHECK(shed([] { return 0; }, resil::always_success).value() == 3);
    const resil::fallback_metrics m = plan_b.metrics();
    CHECK(m[reason::rate_limited] == 2);
    CHECK(m[reason::shed] == 1);
    CHECK(m.total() == 3);
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    CHECK(plan_b.counts() == m);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

TEST_CASE("fallback: an empty set of reasons is refused") {
    CHECK(resil::fallback_options{.handles = {}}.validate()->message() == "`handles` must name at least one reason, got none");
    CHECK_THROWS_WITH(resil::fallback_policy([] { return 1; }, {.handles = {}}),
                      "resil::fallback_policy: `handles` must name at least one reason, got none");
}
