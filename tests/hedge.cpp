#include <resil/hedge.hpp>
#include <resil/testing/manual_clock.hpp>

#include <limits>
#include <stdexcept>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::hedge_options;
using resil::hedge_policy;
using resil::testing::manual_clock;

namespace {
std::string first_invalid(const hedge_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : std::string{};
}
}  // namespace

TEST_CASE("hedge options: the defaults are valid, and each field's bounds are named") {
    CHECK(first_invalid({}).empty());
    CHECK(first_invalid({.max_hedges = 9}) == "`max_hedges` must be in [0, 8], got 9");
    CHECK(first_invalid({.max_hedges = 0}).empty());  // hedging off
    CHECK(first_invalid({.delay = -1ms}) == "`delay` must be in [0s, 1h], got -1ms");
    CHECK(first_invalid({.delay = 2h}) == "`delay` must be in [0s, 1h], got 2h");
    CHECK(first_invalid({.percentile = 1.0}) == "`percentile` must be 0 (a fixed delay) or in (0, 1), got 1");
    CHECK(first_invalid({.percentile = -0.5}) == "`percentile` must be 0 (a fixed delay) or in (0, 1), got -0.5");
    CHECK(first_invalid({.percentile = std::numeric_limits<double>::quiet_NaN()}) ==
          "`percentile` must be 0 (a fixed delay) or in (0, 1), got nan");
    CHECK(first_invalid({.min_delay = 20s}) == "`min_delay` must be in [0s, 10s], got 20s");
    CHECK(first_invalid({.max_delay = 3h}) == "`max_delay` must be in [0s, 1h], got 3h");
    CHECK(first_invalid({.window = 10ms}) == "`window` must be in [100ms, 1h], got 10ms");
    CHECK(first_invalid({.min_samples = 0}) == "`min_samples` must be in [1, 1000000], got 0");
    CHECK_THROWS_WITH(hedge_policy{{.max_hedges = 9}}, "resil::hedge_policy: `max_hedges` must be in [0, 8], got 9");
    CHECK_THROWS_AS(hedge_policy{{.window = 0s}}, std::invalid_argument);
}

TEST_CASE("hedge: only a call that may be repeated gets copies, and none when hedging is off") {
    hedge_policy on{{.max_hedges = 2}};
    CHECK(on.may_hedge(true));
    CHECK_FALSE(on.may_hedge(false));  // a POST without an idempotency key runs once
    hedge_policy off{{.max_hedges = 0}};
    CHECK_FALSE(off.may_hedge(true));
}

TEST_CASE("hedge: a fixed delay is the delay, whatever the latencies") {
    manual_clock clock;
    hedge_policy h{{.delay = 30ms}};
    for (int i = 0; i < 200; ++i) h.record(clock.now(), 2ms);
    CHECK(h.delay(clock.now()) == 30ms);
}

TEST_CASE("hedge: the p95 delay is learnt once enough latencies are known, clamped to its bounds") {
    manual_clock clock;
    hedge_policy h{{.delay = 40ms, .percentile = 0.95, .min_delay = 1ms, .max_delay = 150ms,
                    .window = 4s, .min_samples = 100}};
    // Too few samples: the configured delay.
    for (int i = 0; i < 99; ++i) h.record(clock.now(), 5ms);
    CHECK(h.delay(clock.now()) == 40ms);
    // 100 samples, 95 of 5 ms and 5 of 200 ms (seed 000: 5 % slow answers).
    clock.advance(100ms);  // past the refresh interval (window / 40)
    for (int i = 0; i < 5; ++i) h.record(clock.now(), 200ms);
    // 99 + 5 = 104 samples: rank ceil(0.95 × 104) = 99 is still a 5 ms one.
    const auto d = h.delay(clock.now());
    CHECK(d >= 5ms - duration{5ms} / 16);
    CHECK(d <= 5ms + duration{5ms} / 16);
    // Mostly slow now: the p95 is 200 ms, clamped to max_delay.
    for (int i = 0; i < 400; ++i) h.record(clock.now(), 200ms);
    CHECK(h.delay(clock.now()) == d);  // cached until the next refresh
    clock.advance(100ms);
    CHECK(h.delay(clock.now()) == 150ms);
    // Everything fast and tiny: clamped to min_delay.
    clock.advance(5s);  // the window forgets the above
    for (int i = 0; i < 200; ++i) h.record(clock.now(), 10us);
    clock.advance(100ms);
    CHECK(h.delay(clock.now()) == 1ms);
    // The window empties: back to the configured delay.
    clock.advance(5s);
    CHECK(h.delay(clock.now()) == 40ms);
}

TEST_CASE("hedge: copies draw on the retry budget shared with retries, calls are counted when asked") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 0, .window = 10s}};
    hedge_policy h{{.max_hedges = 1, .budget = &budget}};
    CHECK_FALSE(h.try_start_hedge(clock.now()));  // nothing earned yet
    for (int i = 0; i < 20; ++i) h.count_call(clock.now());
    CHECK(h.try_start_hedge(clock.now()));
    CHECK(budget.try_withdraw(clock.now()));  // a retry takes the second one
    CHECK_FALSE(h.try_start_hedge(clock.now()));
    hedge_policy unthrottled{{.max_hedges = 1}};
    for (int i = 0; i < 1000; ++i) REQUIRE(unthrottled.try_start_hedge(clock.now()));
    // Counted: one copy granted, two refused (the retry's withdrawal is the budget's, not the hedge's).
    CHECK(h.metrics() == resil::hedge_metrics{.hedges = 1, .refused = 2, .delay = 100ms});
    CHECK(unthrottled.metrics().hedges == 1000);
    CHECK(budget.metrics() == resil::retry_budget_metrics{.withdrawals = 2, .refusals = 2});
}

TEST_CASE("hedge: metrics() shows the delay in force, as last learnt") {
    manual_clock clock;
    hedge_policy fixed{{.delay = 40ms}};
    CHECK(fixed.metrics() == resil::hedge_metrics{.hedges = 0, .refused = 0, .delay = 40ms});
    hedge_policy learning{{.delay = 40ms, .percentile = 0.5, .min_delay = 1ms, .max_delay = 1s, .window = 1s,
                           .min_samples = 10}};
    CHECK(learning.metrics().delay == 40ms);  // nothing learnt yet
    for (int i = 0; i < 20; ++i) learning.record(clock.now(), 7ms);
    CHECK(learning.metrics().delay == 40ms);  // metrics() reads no clock and learns nothing
    const auto d = learning.delay(clock.now());
    CHECK(d != 40ms);
    CHECK(learning.metrics().delay == d);
}
