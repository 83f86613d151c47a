// resil/policy_checklist.hpp for the Redis limiters (target resil::redis):
// both pass it. Their clock is the steady clock, not a parameter (Redis
// keeps real time), declared as every policy's own clock is.
#include <resil/policy_checklist.hpp>
#include <resil/redis.hpp>
#include <resil/token_bucket.hpp>
#include <resil/paced_bucket.hpp>

#include <type_traits>

#include "catch.hpp"

using resil::redis::rate_limiter;

static_assert(resil::policy_checklist<rate_limiter>);
static_assert(std::is_same_v<resil::options_of_t<rate_limiter>, resil::redis::rate_limiter_options>);
static_assert(std::is_same_v<decltype(std::declval<const rate_limiter&>().metrics()), resil::redis::rate_limiter_metrics>);
static_assert(std::is_same_v<rate_limiter::clock_type, resil::steady_clock>);
static_assert(rate_limiter::time_source == resil::time_source::own_clock);

// One answer for every rate limiter: a caller handles the three with one function.
static_assert(std::is_same_v<resil::redis::rate_limit_result, resil::rate_limit_decision>);
static_assert(std::is_same_v<decltype(std::declval<const rate_limiter&>().try_acquire()), resil::rate_limit_decision>);
static_assert(std::is_same_v<decltype(std::declval<const resil::token_bucket&>().try_acquire()), resil::rate_limit_decision>);
static_assert(std::is_same_v<decltype(std::declval<resil::paced_bucket&>().try_acquire()), resil::rate_limit_decision>);

TEST_CASE("redis limiter: its options are refused as every policy's are, by validate()") {
    CHECK(resil::redis::rate_limiter_options{.key = "k"}.validate() == std::nullopt);
    const auto bad = resil::redis::rate_limiter_options{.rate = 0, .key = "k"}.validate();
    REQUIRE(bad);
    CHECK(bad->field == "rate");
}
