// resil/json/read.hpp: the reader checks the shape and leaves every range to
// the options type's validate(), reporting the field it names at its JSON path.
#include <resil/json/read.hpp>

#include <resil/backoff.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;
namespace rj = resil::json;

namespace {

template <class T>
std::string error_of(const nlohmann::json& j, std::string_view path) {
    try {
        (void)rj::read<T>(j, path);
    } catch (const rj::config_error& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST_CASE("json read: validate()'s field lands at its JSON path, nested fields included") {
    const auto retry = nlohmann::json::parse(R"({"backoff": {"base": "1s", "cap": "10s"}, "max_wait": "5s"})");
    CHECK(error_of<resil::retry_options>(retry, "retry") == R"(retry.backoff.cap: must be at most max_wait (5s), got "10s")");
    CHECK(error_of<resil::retry_options>(retry, "") == R"(backoff.cap: must be at most max_wait (5s), got "10s")");
    // A backoff read on its own reports its own fields.
    const auto backoff = nlohmann::json::parse(R"({"kind": "exponential", "multiplier": 0.5})");
    CHECK(error_of<resil::backoff>(backoff, "backoff") == "backoff.multiplier: must be finite and at least 1, got 0.5");
    // A deadline is deadline_policy_options' budget: the value itself, at its own path.
    CHECK(error_of<resil::duration>(nlohmann::json("25h"), "deadline") == R"(deadline: must be in [1ms, 24h], got "25h")");
    CHECK(error_of<resil::duration>(nlohmann::json("25h"), "") == R"(must be in [1ms, 24h], got "25h")");
}

TEST_CASE("json read: the value is shown as the file wrote it, or as validate() renders a default") {
    // Given in the file: its own text, quotes included.
    CHECK(error_of<resil::retry_budget_options>(nlohmann::json::parse(R"({"window": "5000us"})"), "retry_budget") ==
          R"(retry_budget.window: must be in [10ms, 24h], got "5000us")");
    // The default is at fault: validate()'s rendering of it.
    CHECK(error_of<resil::retry_options>(nlohmann::json::parse(R"({"max_wait": "2s", "backoff": {"cap": "3s"}})"), "r") ==
          R"(r.backoff.cap: must be at most max_wait (2s), got "3s")");
    CHECK(error_of<resil::retry_options>(nlohmann::json::parse(R"({"max_wait": "100ms"})"), "r") ==
          "r.backoff.cap: must be at most max_wait (100ms), got 1s");
}

TEST_CASE("json read: an integer its member cannot hold") {
    // validate() refuses the nearest value the member holds: its message, with the real range.
    CHECK(error_of<resil::concurrency_limit_options>(nlohmann::json::parse(R"({"max_in_flight": -5})"), "c") ==
          "c.max_in_flight: must be in [1, 4294967295], got -5");
    // validate() would accept it: the member's own limit.
    CHECK(error_of<resil::retry_budget_options>(nlohmann::json::parse(R"({"min_per_second": -1})"), "b") ==
          "b.min_per_second: must be at least 0, got -1");
    CHECK(error_of<resil::concurrency_limit_options>(nlohmann::json::parse(R"({"max_in_flight": 4294967296})"), "c") ==
          "c.max_in_flight: must be at most 4294967295, got 4294967296");
    // Another field's range error comes first, as validate() orders them.
    CHECK(error_of<resil::retry_budget_options>(nlohmann::json::parse(R"({"ratio": 2, "min_per_second": -1})"), "b") ==
          "b.ratio: must be in [0, 1], got 2");
}

TEST_CASE("json read: signed integers built in code read like parsed ones") {
    const nlohmann::json ok = {{"max_attempts", 5}};
    CHECK(rj::read<resil::retry_options>(ok).max_attempts == 5);
    const nlohmann::json negative = {{"max_attempts", -3}};
    CHECK(error_of<resil::retry_options>(negative, "retry") == "retry.max_attempts: must be in [1, 100], got -3");
}

TEST_CASE("json read: the shape is checked before any range") {
    CHECK(error_of<resil::retry_options>(nlohmann::json::parse(R"({"max_attempts": 0, "max_wiat": "1s"})"), "retry")
              .rfind(R"(retry.max_wiat: unknown key; did you mean "max_wait"?)", 0) == 0);
    CHECK(error_of<resil::retry_options>(nlohmann::json::parse(R"({"max_attempts": 0, "max_wait": 5})"), "retry") ==
          R"(retry.max_wait: must be a duration string with its unit, such as "5ms" or "5s", got the bare number 5)");
}

TEST_CASE("json read: whatever validate() accepts is read, at the limits too") {
    const auto o = rj::read<resil::retry_budget_options>(
        nlohmann::json::parse(R"({"ratio": 1, "min_per_second": 0, "window": "24h"})"));
    CHECK(o.ratio == 1.0);
    CHECK(o.min_per_second == 0);
    CHECK(o.window == 24h);
    CHECK_FALSE(o.validate());
}
