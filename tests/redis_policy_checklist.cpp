// resil/policy_checklist.hpp for the Redis limiter (target resil::redis):
// what it has of the checklist today. Its clock is fixed to steady_clock
// (Redis runs in real time), declared by clock_type alone: it declares no
// time_source and has no clock(), so it does not follow the clock rule yet
// (docs/clock.md, "The clock rule"); the last assertion below says so, and
// fails once it does, so that this row then becomes resil::policy_checklist.
#include <resil/policy_checklist.hpp>
#include <resil/redis.hpp>

#include <type_traits>

#include "catch.hpp"

using resil::redis::rate_limiter;

// Item 1: options with validate().
static_assert(resil::has_validated_options<rate_limiter>);
static_assert(std::is_same_v<resil::options_of_t<rate_limiter>, resil::redis::rate_limiter_options>);
// Item 3: metrics().
static_assert(resil::reports_metrics<rate_limiter>);
static_assert(std::is_same_v<decltype(std::declval<const rate_limiter&>().metrics()), resil::redis::rate_limiter_metrics>);
// Item 2, what exists: a clock type, the real one.
static_assert(std::is_same_v<rate_limiter::clock_type, resil::steady_clock>);
static_assert(!resil::follows_clock_rule<rate_limiter>,
              "the limiter now follows the clock rule: make this row static_assert(resil::policy_checklist<rate_limiter>)");

TEST_CASE("redis limiter: its options are refused as every policy's are, by validate()") {
    CHECK(resil::redis::rate_limiter_options{.key = "k"}.validate() == std::nullopt);
    const auto bad = resil::redis::rate_limiter_options{.rate = 0, .key = "k"}.validate();
    REQUIRE(bad);
    CHECK(bad->field == "rate");
}
