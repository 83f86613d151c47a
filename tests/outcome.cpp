// resil/outcome.hpp: reasons, verdicts, reason sets and the outcome of a call.
#include <resil/outcome.hpp>

#include <cctype>
#include <chrono>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::outcome;
using resil::reason;
using resil::verdict;

TEST_CASE("outcome: every reason has its own snake_case name") {
    std::set<std::string_view> seen;
    for (std::size_t i = 0; i < resil::reason_count; ++i) {
        const auto name = resil::to_string(static_cast<reason>(i));
        CAPTURE(i, name);
        CHECK(name != "unknown");
        CHECK(seen.insert(name).second);
        for (const char c : name) CHECK((std::islower(static_cast<unsigned char>(c)) || c == '_'));
    }
    CHECK(resil::to_string(reason::backoff_exceeds_deadline) == "backoff_exceeds_deadline");
    CHECK(resil::to_string(static_cast<reason>(resil::reason_count)) == "unknown");
    CHECK(resil::to_string(verdict::ambiguous) == "ambiguous");
}

TEST_CASE("outcome: reason sets hold what they were given; all() holds every failure") {
    constexpr resil::reason_set some{reason::circuit_open, reason::shed};
    STATIC_REQUIRE(some.contains(reason::circuit_open));
    STATIC_REQUIRE_FALSE(some.contains(reason::rate_limited));
    CHECK(resil::reason_set{}.empty());
    const auto all = resil::reason_set::all();
    CHECK_FALSE(all.contains(reason::none));
    for (std::size_t i = 1; i < resil::reason_count; ++i) CHECK(all.contains(static_cast<reason>(i)));
    CHECK(some == resil::reason_set{reason::shed, reason::circuit_open});
}

TEST_CASE("outcome: a rejection has a reason and no value; value() says why it has none") {
    const auto out = outcome<int>::rejected(reason::circuit_open, 250ms);
    CHECK_FALSE(out.ok());
    CHECK_FALSE(out.has_value());
    CHECK_FALSE(out.attempted());
    CHECK(out.reason() == reason::circuit_open);
    CHECK(out.retry_after() == std::optional<resil::duration>{250ms});
    CHECK(out.rejection().reason == reason::circuit_open);
    try {
        (void)out.value();
        FAIL("value() of a rejection returned");
    } catch (const resil::bad_outcome_access& e) {
        CHECK(e.reason() == reason::circuit_open);
        CHECK(std::string(e.what()).find("circuit_open") != std::string::npos);
    }
}

TEST_CASE("outcome: a value keeps its verdict; an exception is kept for the caller") {
    const auto ok = outcome<std::string>::from_value(verdict::success, "fine");
    CHECK(ok.ok());
    CHECK(ok.attempted());
    CHECK(*ok == "fine");
    CHECK(ok.verdict() == verdict::success);
    CHECK_FALSE(ok.from_fallback());

    const auto thrown = outcome<int>::from_exception(std::make_exception_ptr(std::runtime_error("boom")),
                                                     verdict::permanent);
    CHECK(thrown.attempted());
    CHECK_FALSE(thrown.has_value());
    REQUIRE(thrown.exception());
    CHECK_THROWS_AS(std::rethrow_exception(thrown.exception()), std::runtime_error);
}

TEST_CASE("outcome: attempts() is 1 built from a run, 0 for a rejection; survives copies, moves and a fallback, and saturates") {
    // Built from one run of the callable (its value, or its exception): one attempt.
    auto out = outcome<std::string>::from_value(verdict::retryable, "503");
    CHECK(out.attempts() == 1);
    CHECK(outcome<int>::from_value(verdict::success, 7).attempts() == 1);
    CHECK(outcome<int>::from_exception(std::make_exception_ptr(std::runtime_error("x")), verdict::retryable)
              .attempts() == 1);
    // Refused before any run.
    CHECK(outcome<int>::rejected(reason::shed).attempts() == 0);
    CHECK(outcome<int>::rejected(reason::circuit_open, 5s).attempts() == 0);
    out.set_attempts(3);
    out.fail(reason::retries_exhausted);
    CHECK(out.attempts() == 3);
    // The other fields are untouched by the count, and it by them.
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(out.verdict() == verdict::retryable);
    CHECK(out.has_value());
    const auto copy = out;
    CHECK(copy.attempts() == 3);
    auto moved = std::move(out);
    CHECK(moved.attempts() == 3);
    auto assigned = outcome<std::string>::rejected(reason::shed);
    assigned = copy;
    CHECK(assigned.attempts() == 3);
    moved.replace_with_fallback("cached");
    CHECK(moved.from_fallback());
    CHECK(moved.attempts() == 3);
    moved.set_attempts(outcome<std::string>::max_attempts_counted + 10);
    CHECK(moved.attempts() == outcome<std::string>::max_attempts_counted);
    CHECK(moved.fallback_reason() == reason::retries_exhausted);
    moved.set_attempts(1);
    CHECK(moved.attempts() == 1);
}

TEST_CASE("outcome: to_string's text adds up with std::string and prints to a stream") {
    const auto r = reason::circuit_open;
    // What users write first: no conversion needed.
    CHECK(std::string("x: ") + resil::to_string(r) == "x: circuit_open");
    CHECK("x: " + resil::to_string(r) == "x: circuit_open");
    CHECK(resil::to_string(r) + " after " + resil::to_string(verdict::retryable) == "circuit_open after retryable");
    std::string text = "reason ";
    text += resil::to_string(r);
    CHECK(text == "reason circuit_open");
    std::ostringstream os;
    os << resil::to_string(r) << '/' << resil::to_string(verdict::ambiguous);
    CHECK(os.str() == "circuit_open/ambiguous");
    std::ostringstream printed;
    printed << r << ' ' << reason::none;  // the reason itself, as a log line prints it
    CHECK(printed.str() == "circuit_open none");
    // Still a string_view: kept without a copy, compared, used in constant expressions.
    const std::string_view kept = resil::to_string(r);
    CHECK(kept == "circuit_open");
    static_assert(resil::to_string(reason::shed) == "shed");
    CHECK(resil::to_string(r).str() == "circuit_open");
}
