// resil/events.hpp: what listeners receive, and how a listener says what it wants.
#include <resil/events.hpp>

#include <chrono>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
namespace events = resil::events;

namespace {

struct only_calls {
    std::vector<events::call_finished>* seen;
    void operator()(const events::call_finished& e) const { seen->push_back(e); }
};

struct timing {
    static constexpr bool times_attempts = true;
    void operator()(const events::attempt_finished&) const {}
};

}  // namespace

TEST_CASE("events: a listener gets the kinds it handles, and nothing is made for the others") {
    STATIC_REQUIRE(resil::listens_to<only_calls, events::call_finished>);
    STATIC_REQUIRE_FALSE(resil::listens_to<only_calls, events::attempt_started>);
    STATIC_REQUIRE_FALSE(resil::listens_to<resil::no_listener, events::call_finished>);
    STATIC_REQUIRE(resil::listener_times_attempts<timing>);
    STATIC_REQUIRE_FALSE(resil::listener_times_attempts<only_calls>);

    std::vector<events::call_finished> seen;
    only_calls listener{&seen};
    resil::emit(listener, events::attempt_started{1});  // not handled: dropped
    resil::emit(listener, events::call_finished{resil::reason::none, 2, false, false, 130ms});
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].attempts == 2);
    CHECK(seen[0].elapsed == 130ms);
}

TEST_CASE("events: fields added later default to nothing, so older aggregate initialisers still mean the same") {
    const events::call_finished finished{resil::reason::circuit_open, 0, true, false};
    CHECK(finished.elapsed == resil::duration::zero());
    const events::attempt_finished attempt{3, resil::verdict::retryable};
    CHECK(attempt.elapsed == resil::duration::zero());
    const events::breaker_state_changed change{};
    CHECK(change.generation == 0);
}
