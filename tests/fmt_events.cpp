// resil/events.hpp and resil/fmt.hpp, checked in one place: every event the
// library declares (in a `namespace events` block of any public header) is
// in events::all, and every event of events::all has a formatter that
// writes one line and is taken by resil::log_listener.
#include <resil/balancer.hpp>
#include <resil/events.hpp>
#include <resil/fmt.hpp>
#include <resil/hedge.hpp>
#include <resil/testing/manual_clock.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
namespace events = resil::events;

#ifndef RESIL_TEST_INCLUDE_DIR
#error "tests/CMakeLists.txt defines RESIL_TEST_INCLUDE_DIR for this test"
#endif

namespace {

template <class E>
struct named {
    using type = E;
    std::string_view name;
};

// The events with their names as declared, in events::all's order.
constexpr std::tuple listed{
    named<events::attempt_started>{"attempt_started"},
    named<events::attempt_finished>{"attempt_finished"},
    named<events::retry_scheduled>{"retry_scheduled"},
    named<events::retries_exhausted>{"retries_exhausted"},
    named<events::budget_refused>{"budget_refused"},
    named<events::breaker_state_changed>{"breaker_state_changed"},
    named<events::rejected>{"rejected"},
    named<events::quota_store_failed>{"quota_store_failed"},
    named<events::fallback_used>{"fallback_used"},
    named<events::call_finished>{"call_finished"},
    named<events::deadline_exceeded>{"deadline_exceeded"},
    named<events::endpoint_ejected>{"endpoint_ejected"},
    named<events::endpoint_returned>{"endpoint_returned"},
    named<events::endpoint_health_changed>{"endpoint_health_changed"},
    named<events::hedge_started>{"hedge_started"},
    named<events::hedge_refused>{"hedge_refused"},
    named<events::hedge_cancelled>{"hedge_cancelled"},
    named<events::hedge_won>{"hedge_won"},
    named<events::limit_changed>{"limit_changed"},
    named<events::pace_changed>{"pace_changed"},
    named<events::fault_injected>{"fault_injected"},
    named<events::dns_lookup>{"dns_lookup"},
};

template <class Tuple>
struct as_event_list;
template <class... Named>
struct as_event_list<std::tuple<Named...>> {
    using type = resil::event_list<typename Named::type...>;
};
static_assert(std::is_same_v<as_event_list<std::remove_const_t<decltype(listed)>>::type, events::all>,
              "this test's list is events::all, in its order");

template <class F>
void for_each_listed(F&& f) {
    std::apply([&](const auto&... n) { (f(n), ...); }, listed);
}

// The structs declared inside `namespace events { ... }` blocks of every
// public header, with the header each came from.
std::multimap<std::string, std::string> declared_events() {
    namespace fs = std::filesystem;
    const std::regex declared(R"(\bstruct\s+([A-Za-z_][A-Za-z_0-9]*)\s*\{)");
    std::multimap<std::string, std::string> found;
    const fs::path root = fs::path(RESIL_TEST_INCLUDE_DIR) / "resil";
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".hpp") continue;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        const std::string s = text.str();
        for (std::size_t at = s.find("namespace events {"); at != std::string::npos;
             at = s.find("namespace events {", at + 1)) {
            const auto end = s.find("}  // namespace events", at);
            REQUIRE(end != std::string::npos);
            const std::string block = s.substr(at, end - at);
            for (std::sregex_iterator m(block.begin(), block.end(), declared), none; m != none; ++m)
                found.emplace((*m)[1].str(), fs::relative(entry.path(), root).generic_string());
        }
    }
    return found;
}

}  // namespace

TEST_CASE("events: every event a header declares is in events::all, once") {
    const auto declared = declared_events();
    std::set<std::string> names;
    for (const auto& [name, header] : declared) {
        INFO(name << " in " << header);
        CHECK(declared.count(name) == 1);  // one declaration, in one header
        names.insert(name);
    }
    std::set<std::string> in_list;
    for_each_listed([&](const auto& n) { CHECK(in_list.insert(std::string(n.name)).second); });
    CHECK(names == in_list);
    CHECK(names.size() == std::tuple_size_v<std::remove_const_t<decltype(listed)>>);
    // The scan finds what it should: events of three headers.
    CHECK(declared.find("hedge_started")->second == "events.hpp");
    CHECK(declared.find("limit_changed")->second == "load_signal.hpp");
}

TEST_CASE("fmt: every event of events::all has a formatter writing one line, and the log listener takes it") {
    std::vector<std::string> lines;
    resil::log_listener log{[&lines](std::string_view line) { lines.emplace_back(line); }, "dep"};
    std::size_t count = 0;
    for_each_listed([&](const auto& n) {
        using E = typename std::remove_cvref_t<decltype(n)>::type;
        static_assert(resil::is_event<E>);
        static_assert(fmt::is_formattable<E>::value, "every event has a formatter in resil/fmt.hpp");
        static_assert(std::is_invocable_v<const decltype(log)&, const E&>);
        INFO(n.name);
        const auto line = fmt::format("{}", E{});
        CHECK_FALSE(line.empty());
        CHECK(line.find('\n') == std::string::npos);
        log(E{});
        REQUIRE(lines.size() == ++count);
        CHECK(lines.back() == "dep: " + line);
    });
    static_assert(!resil::is_event<int>);
    static_assert(!resil::is_event<resil::reason>);
}

TEST_CASE("fmt: hedges and active health checks, as lines") {
    CHECK(fmt::format("{}", events::hedge_started{1, 50ms}) == "hedge 1 started after 50ms");
    CHECK(fmt::format("{}", events::hedge_started{2, resil::duration{137'482'913}}) == "hedge 2 started after 137ms");
    CHECK(fmt::format("{}", events::hedge_refused{1}) == "hedge 1 refused by the retry budget");
    CHECK(fmt::format("{}", events::hedge_cancelled{0}) == "first attempt cancelled: a hedge answered first");
    CHECK(fmt::format("{}", events::hedge_cancelled{2}) == "hedge 2 cancelled: another copy answered first");
    CHECK(fmt::format("{}", events::hedge_won{1, 50ms}) == "hedge 1 answered first");
    events::breaker_state_changed change{resil::circuit_state::closed, resil::circuit_state::open, 0.8, 5};
    CHECK(fmt::format("{}", change) == "circuit breaker closed -> open (failure ratio 0.8 over 5 calls)");
    change.endpoint = "http://payments-backup:8080";
    CHECK(fmt::format("{}", change) ==
          "circuit breaker of http://payments-backup:8080 closed -> open (failure ratio 0.8 over 5 calls)");
    CHECK(fmt::format("{}", events::endpoint_health_changed{"10.0.0.2:8080", false, 2, {}}) ==
          "endpoint 10.0.0.2:8080 unhealthy after 2 failed probes");
    CHECK(fmt::format("{}", events::endpoint_health_changed{"10.0.0.2:8080", true, 1, {}}) ==
          "endpoint 10.0.0.2:8080 healthy after 1 passed probe");
}

TEST_CASE("fmt: injected faults, as lines") {
    CHECK(fmt::format("{}", events::fault_injected{resil::fault_kind::delay, 300ms, resil::verdict::success}) ==
          "fault injected: delay 300ms");
    CHECK(fmt::format("{}", events::fault_injected{resil::fault_kind::abort, {}, resil::verdict::ambiguous}) ==
          "fault injected: abort (ambiguous)");
    CHECK(fmt::format("{:>6}|", resil::fault_kind::abort) == " abort|");
}

TEST_CASE("fmt: DNS lookups, as lines") {
    CHECK(fmt::format("{}", events::dns_lookup{"pods.test", resil::dns_lookup_outcome::resolved, 3, 1, 0, 5s, {}}) ==
          "dns lookup pods.test: resolved, 3 found (+1 -0), next in 5s");
    CHECK(fmt::format("{}", events::dns_lookup{"pods.test", resil::dns_lookup_outcome::failed, 0, 0, 0, 2s, "timed out"}) ==
          "dns lookup pods.test: failed (timed out), next in 2s");
    CHECK(fmt::format("{}", events::dns_lookup{"pods.test", resil::dns_lookup_outcome::empty, 0, 0, 0, 1s, {}}) ==
          "dns lookup pods.test: empty, next in 1s");
}

TEST_CASE("fmt: the log listener as a health checker's listener") {
    resil::testing::manual_clock clock;
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}}};
    std::vector<std::string> lines;
    bool ready = false;
    resil::basic_health_checker<resil::testing::manual_clock> checker{
        lb, [&](const std::string& address, resil::duration) { return address == "a:80" || ready; },
        {.interval = 1s, .timeout = 100ms, .unhealthy_threshold = 2, .healthy_threshold = 1}, clock,
        resil::log_listener{[&lines](std::string_view line) { lines.emplace_back(line); }, "replicas"}};
    clock.advance_to(checker.run_once());
    clock.advance_to(checker.run_once());
    ready = true;
    clock.advance_to(checker.run_once());
    CHECK(lines == std::vector<std::string>{"replicas: endpoint b:80 unhealthy after 2 failed probes",
                                            "replicas: endpoint b:80 healthy after 1 passed probe"});
}
