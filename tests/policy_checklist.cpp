// resil/policy_checklist.hpp: every policy of the library passes the
// checklist (options with validate(), one clock rule, metrics()), on the
// real clock and on the manual one; and the checklist can fail: a type
// missing any part is refused. The Redis limiter's row is
// tests/redis_policy_checklist.cpp (it needs the resil::redis target).
#include <resil/adaptive_limit.hpp>
#include <resil/adaptive_throttle.hpp>
#include <resil/balancer.hpp>
#include <resil/circuit_breaker.hpp>
#include <resil/coarse_clock.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/fault_injection.hpp>
#include <resil/hedge.hpp>
#include <resil/paced_bucket.hpp>
#include <resil/policy_checklist.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/token_bucket.hpp>

#include <string_view>
#include <type_traits>

#include "catch.hpp"

using resil::time_source;
using resil::testing::manual_clock;

namespace {

struct plan_b {
    int operator()() const { return 0; }
};
using fallback_t = resil::fallback_policy<plan_b>;

// Every policy of the library, and where it gets the time.
template <class P, time_source Source>
struct row {
    using policy = P;
    static constexpr time_source source = Source;
};

template <class Clock>
using clocked_policies = std::tuple<row<resil::basic_circuit_breaker<Clock>, time_source::own_clock>,
                                    row<resil::basic_token_bucket<Clock>, time_source::own_clock>,
                                    row<resil::basic_paced_bucket<Clock>, time_source::own_clock>,
                                    row<resil::basic_adaptive_limit<Clock>, time_source::own_clock>,
                                    row<resil::basic_adaptive_throttle<Clock>, time_source::own_clock>,
                                    row<resil::basic_health_checker<Clock>, time_source::own_clock>>;

using clockless_policies = std::tuple<row<resil::deadline_policy, time_source::call_context>,
                                      row<resil::timeout_policy, time_source::call_context>,
                                      row<resil::retry_policy, time_source::call_context>,
                                      row<resil::retry_budget, time_source::caller_now>,
                                      row<resil::hedge_policy, time_source::caller_now>,
                                      row<resil::balancer, time_source::caller_now>,
                                      row<resil::concurrency_limit, time_source::none>,
                                      row<resil::fault_injection, time_source::call_context>,
                                      row<fallback_t, time_source::none>>;

template <class Rows>
constexpr bool all_pass() {
    return []<class... R>(std::tuple<R...>*) {
        return ((resil::policy_checklist<typename R::policy> && R::policy::time_source == R::source) && ...);
    }(static_cast<Rows*>(nullptr));
}

static_assert(all_pass<clocked_policies<resil::steady_clock>>());
static_assert(all_pass<clocked_policies<resil::coarse_steady_clock>>());
static_assert(all_pass<clocked_policies<manual_clock>>());
static_assert(all_pass<clockless_policies>());

// Each row on its own, so that a failure names the policy.
static_assert(resil::policy_checklist<resil::circuit_breaker>);
static_assert(resil::policy_checklist<resil::token_bucket>);
static_assert(resil::policy_checklist<resil::paced_bucket>);
static_assert(resil::policy_checklist<resil::adaptive_limit>);
static_assert(resil::policy_checklist<resil::adaptive_throttle>);
static_assert(resil::policy_checklist<resil::health_checker>);
static_assert(resil::policy_checklist<resil::deadline_policy>);
static_assert(resil::policy_checklist<resil::timeout_policy>);
static_assert(resil::policy_checklist<resil::retry_policy>);
static_assert(resil::policy_checklist<resil::retry_budget>);
static_assert(resil::policy_checklist<resil::hedge_policy>);
static_assert(resil::policy_checklist<resil::balancer>);
static_assert(resil::policy_checklist<resil::concurrency_limit>);
static_assert(resil::policy_checklist<resil::fault_injection>);
static_assert(resil::policy_checklist<fallback_t>);

// The metrics each one reports (item 3): the types the docs name.
static_assert(std::is_same_v<decltype(std::declval<const resil::token_bucket&>().metrics()), resil::token_bucket_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const resil::retry_budget&>().metrics()), resil::retry_budget_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const resil::concurrency_limit&>().metrics()),
                             resil::concurrency_limit_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const resil::hedge_policy&>().metrics()), resil::hedge_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const resil::fault_injection&>().metrics()),
                             resil::fault_injection_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const fallback_t&>().metrics()), resil::fallback_metrics>);
static_assert(std::is_same_v<decltype(std::declval<const resil::health_checker&>().metrics()),
                             resil::health_check_metrics>);

// ---- the checklist refuses what lacks a part ----

struct good_options {
    int n = 1;
    [[nodiscard]] resil::validation_result validate() const { return std::nullopt; }
};
struct counts {
    int calls = 0;
};

// A well-formed policy of each kind, and one variant per missing part.
struct clocked {
    using clock_type = resil::steady_clock;
    static constexpr resil::time_source time_source = resil::time_source::own_clock;
    [[nodiscard]] const good_options& options() const noexcept { return options_; }
    [[nodiscard]] const clock_type& clock() const noexcept { return clock_; }
    [[nodiscard]] counts metrics() const noexcept { return {}; }
    good_options options_;
    clock_type clock_;
};
static_assert(resil::policy_checklist<clocked>);

struct no_state {
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    static constexpr bool stateless = true;
    [[nodiscard]] const good_options& options() const noexcept { return options_; }
    good_options options_;
};
static_assert(resil::policy_checklist<no_state>);

struct options_without_validate {
    int n = 1;
};
struct no_validate : clocked {
    [[nodiscard]] const options_without_validate& options() const noexcept { return o; }
    options_without_validate o;
};
static_assert(!resil::has_validated_options<no_validate>);
static_assert(!resil::policy_checklist<no_validate>);

struct options_with_a_constructor {
    options_with_a_constructor() = default;  // not an aggregate: no designated initializers
    [[nodiscard]] resil::validation_result validate() const { return std::nullopt; }
};
static_assert(!resil::validated_options<options_with_a_constructor>);

struct options_by_value : clocked {  // a copy, not the options in force
    [[nodiscard]] good_options options() const noexcept { return options_; }
};
static_assert(!resil::policy_checklist<options_by_value>);

struct no_time_source {
    using clock_type = resil::steady_clock;
    [[nodiscard]] const good_options& options() const noexcept { return options_; }
    [[nodiscard]] const clock_type& clock() const noexcept { return clock_; }
    [[nodiscard]] counts metrics() const noexcept { return {}; }
    good_options options_;
    clock_type clock_;
};
static_assert(!resil::follows_clock_rule<no_time_source>);
static_assert(!resil::policy_checklist<no_time_source>);

struct clock_type_without_clock : no_state {  // as resil::redis::rate_limiter today
    using clock_type = resil::steady_clock;
    static constexpr resil::time_source time_source = resil::time_source::own_clock;
};
static_assert(!resil::follows_clock_rule<clock_type_without_clock>);

struct takes_now_but_has_a_clock : clocked {
    static constexpr resil::time_source time_source = resil::time_source::caller_now;
};
static_assert(!resil::follows_clock_rule<takes_now_but_has_a_clock>);

struct no_metrics {
    static constexpr resil::time_source time_source = resil::time_source::none;
    [[nodiscard]] const good_options& options() const noexcept { return options_; }
    good_options options_;
};
static_assert(!resil::policy_checklist<no_metrics>);

struct metrics_not_a_struct : no_metrics {
    [[nodiscard]] int metrics() const noexcept { return 0; }
};
static_assert(!resil::reports_metrics<metrics_not_a_struct>);

struct stateless_but_not_copyable : no_state {
    stateless_but_not_copyable() = default;
    stateless_but_not_copyable(const stateless_but_not_copyable&) = delete;
};
static_assert(!resil::declared_stateless<stateless_but_not_copyable>);
static_assert(!resil::policy_checklist<stateless_but_not_copyable>);

struct stateless_with_metrics : no_state {
    [[nodiscard]] counts metrics() const noexcept { return {}; }
};
static_assert(!resil::declared_stateless<stateless_with_metrics>);  // reports_metrics, then

}  // namespace

TEST_CASE("policy checklist: every policy says where its time comes from, by name") {
    CHECK(resil::to_string(resil::token_bucket::time_source) == "own_clock");
    CHECK(resil::to_string(resil::retry_budget::time_source) == "caller_now");
    CHECK(resil::to_string(resil::retry_policy::time_source) == "call_context");
    CHECK(resil::to_string(resil::concurrency_limit::time_source) == "none");
    // A clock owner's clock is the one it was given.
    manual_clock clock;
    resil::basic_token_bucket<manual_clock> bucket{{}, clock};
    clock.advance(std::chrono::seconds{3});
    CHECK(bucket.clock().now() == clock.now());
}
