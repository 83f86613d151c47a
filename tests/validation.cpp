// resil/validation.hpp: one message form for every options type.
#include <resil/validation.hpp>

#include <chrono>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::invalid_option;
using resil::detail::check_at_least;
using resil::detail::check_in_range;
using resil::detail::check_that;
using resil::detail::format_duration;

TEST_CASE("validation: the message names the field, the range and the value") {
    const auto bad = check_in_range("window", std::chrono::nanoseconds{5ms}, std::chrono::nanoseconds{10ms},
                                    std::chrono::nanoseconds{24h});
    REQUIRE(bad);
    CHECK(bad->field == "window");
    CHECK(bad->message() == "`window` must be in [10ms, 24h], got 5ms");
    CHECK(bad->within("breaker").message() == "`breaker.window` must be in [10ms, 24h], got 5ms");
    CHECK_FALSE(check_in_range("window", std::chrono::nanoseconds{10ms}, std::chrono::nanoseconds{10ms},
                               std::chrono::nanoseconds{24h}));

    CHECK(check_in_range("half_open_probes", 0u, 1u, 1000u)->message() == "`half_open_probes` must be in [1, 1000], got 0");
    CHECK(check_at_least("max_attempts", 0, 1)->message() == "`max_attempts` must be at least 1, got 0");
    CHECK(check_in_range("failure_ratio", 1.5, 0.0, 1.0)->message() == "`failure_ratio` must be in [0, 1], got 1.5");
    CHECK(check_in_range("ratio", std::numeric_limits<double>::quiet_NaN(), 0.0, 1.0)->message() ==
          "`ratio` must be in [0, 1], got nan");
    CHECK(check_that(false, "multiplier", "finite and at least 1", std::numeric_limits<double>::infinity())->message() ==
          "`multiplier` must be finite and at least 1, got inf");
    CHECK(check_in_range("ratio", 0.1, 0.2, 1.0)->message() == "`ratio` must be in [0.2, 1], got 0.1");
    CHECK(check_in_range("rate", 2e9, 0.001, 1e9)->message() == "`rate` must be in [0.001, 1e9], got 2e9");
    CHECK(check_in_range("rate", 2.5e-5, 0.001, 1e9)->message() == "`rate` must be in [0.001, 1e9], got 2.5e-5");
}

TEST_CASE("validation: durations in messages are written as configuration files write them") {
    // One formatter for both (resil/duration_text.hpp, tested there).
    for (const std::chrono::nanoseconds d : std::initializer_list<std::chrono::nanoseconds>{0ms, 250ms, 1500ms, -1500ms, 2min, 90min, 24h})
        CHECK(format_duration(d) == resil::format_duration(d));
    CHECK(format_duration(std::chrono::nanoseconds{7}) == "7ns");
}

TEST_CASE("validation: throw_if_invalid throws with the owner's name, and only for an error") {
    CHECK_NOTHROW(resil::throw_if_invalid("resil::x", std::nullopt));
    try {
        resil::throw_if_invalid("resil::retry_policy", invalid_option{"max_attempts", "must be at least 1, got 0"});
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "resil::retry_policy: `max_attempts` must be at least 1, got 0");
    }
}
