#include <resil/balancer.hpp>
#include <resil/testing/manual_clock.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::balancing_policy;
using resil::health_check_options;
using resil::testing::manual_clock;

namespace {
std::set<std::string> picked(const balancer& lb, resil::time_point now) {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) seen.insert(lb.pick(now).address());
    return seen;
}
std::string options_invalid(const health_check_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : std::string{};
}
}  // namespace

TEST_CASE("health check options: each field's bounds are named") {
    CHECK(options_invalid({}).empty());
    CHECK(options_invalid({.interval = 1ms}) == "`interval` must be in [10ms, 1h], got 1ms");
    CHECK(options_invalid({.interval = 1s, .timeout = 2s}) == "`timeout` must be in [1ms, 1s], got 2s");
    CHECK(options_invalid({.unhealthy_threshold = 0}) == "`unhealthy_threshold` must be in [1, 100], got 0");
    CHECK(options_invalid({.healthy_threshold = 101}) == "`healthy_threshold` must be in [1, 100], got 101");
    balancer lb{{{.address = "a:80"}}};
    CHECK_THROWS_WITH(resil::health_checker(lb, [](const std::string&, resil::duration) { return true; },
                                            {.timeout = 0s}),
                      "resil::health_checker: `timeout` must be in [1ms, 15s], got 0s");
    CHECK_THROWS_WITH(resil::health_checker(lb, nullptr),
                      "resil::health_checker: `probe` must be a callable, got none");
}

TEST_CASE("health checks: out after 2 failures in a row, back after 2 passes; a flapping endpoint never leaves") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}, {.address = "c:80"}},
                {.policy = balancing_policy::round_robin}};
    // The answers each endpoint gives, probe after probe (true: ready).
    std::map<std::string, std::vector<bool>> script{
        {"a:80", {true, false, true, false, true, false, true, false}},  // flaps: never 2 failures in a row
        {"b:80", {false, false, true, false, true, true, true, true}},   // out at probe 2, back at 6
        {"c:80", {true, true, true, true, true, true, true, true}}};
    std::map<std::string, std::size_t> asked;
    std::vector<std::string> log;
    resil::basic_health_checker<manual_clock> checker{
        lb,
        [&](const std::string& address, resil::duration timeout) {
            CHECK(timeout == 2s);
            return script[address][asked[address]++];
        },
        {.interval = 15s, .timeout = 2s, .unhealthy_threshold = 2, .healthy_threshold = 2},
        clock,
        [&](const resil::events::endpoint_health_changed& e) {
            log.push_back(std::string(e.address) + (e.healthy ? " in" : " out") + " after " +
                          std::to_string(e.probes_in_a_row));
        }};
    const auto start = clock.now();
    std::vector<std::set<std::string>> usable;
    for (int round = 0; round < 8; ++round) {
        const auto next = checker.run_once();
        CHECK(next == start + 15s * (round + 1));
        usable.push_back(picked(lb, clock.now()));
        clock.advance_to(next);
    }
    CHECK(asked["a:80"] == 8);
    CHECK(asked["b:80"] == 8);
    CHECK(log == std::vector<std::string>{"b:80 out after 2", "b:80 in after 2"});
    for (int round = 0; round < 8; ++round) {
        INFO(round);
        const bool b_out = round >= 1 && round < 5;
        CHECK(usable[static_cast<std::size_t>(round)].count("b:80") == (b_out ? 0u : 1u));
        CHECK(usable[static_cast<std::size_t>(round)].count("a:80") == 1);
    }
    CHECK(lb.status(clock.now())[1].failing_checks == false);
    // 3 endpoints x 8 rounds; a failed 4 probes, b 3; b left once and came back once.
    CHECK(checker.metrics() == resil::health_check_metrics{.probes = 24, .failed_probes = 7, .taken_out = 1,
                                                           .brought_back = 1});
}

TEST_CASE("health checks: a probe past its timeout or throwing fails; endpoints that leave the set are forgotten") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}}};
    int probes = 0;
    resil::basic_health_checker<manual_clock> checker{
        lb,
        [&](const std::string& address, resil::duration timeout) -> bool {
            ++probes;
            if (address == "a:80") clock.advance(timeout + 1ms);  // answers "ready", too late
            else throw std::runtime_error("probe failed");
            return true;
        },
        {.interval = 1s, .timeout = 100ms, .unhealthy_threshold = 1}, clock};
    checker.run_once();
    auto status = lb.status(clock.now());
    CHECK(status[0].failing_checks);
    CHECK(status[1].failing_checks);
    // Both out of 2: panic mode spreads over both rather than refusing.
    CHECK(lb.pick(clock.now()));
    lb.replace({{.address = "c:80"}});
    clock.advance(1s);
    checker.run_once();
    CHECK(probes == 3);  // only c:80 this time
    // Too late, thrown, thrown: every probe failed, each endpoint out after one.
    CHECK(checker.metrics() == resil::health_check_metrics{.probes = 3, .failed_probes = 3, .taken_out = 3,
                                                           .brought_back = 0});
}

TEST_CASE("health checks: an endpoint that leaves the set and comes back between two probes is out again after the next") {
    manual_clock clock;
    balancer lb{{{.address = "x:80"}, {.address = "y:80"}, {.address = "z:80"}}};
    resil::basic_health_checker<manual_clock> checker{
        lb, [&](const std::string& address, resil::duration) { return address != "x:80"; },
        {.interval = 1s, .timeout = 100ms, .unhealthy_threshold = 1}, clock};
    checker.run_once();
    REQUIRE(lb.status(clock.now())[0].failing_checks);
    // Discovery flaps: x leaves and comes back with fresh state (healthy to the balancer).
    lb.replace({{.address = "y:80"}, {.address = "z:80"}});
    lb.replace({{.address = "x:80"}, {.address = "y:80"}, {.address = "z:80"}});
    CHECK_FALSE(lb.status(clock.now())[0].failing_checks);
    clock.advance(1s);
    checker.run_once();  // the checker still holds x unhealthy: the balancer is told again
    CHECK(lb.status(clock.now())[0].failing_checks);
}

TEST_CASE("health check thread: probes on its own thread, stops on destruction") {
    balancer lb{{{.address = "a:80"}}};
    std::atomic<int> probes{0};
    resil::health_checker checker{lb, [&](const std::string&, resil::duration) {
                                      probes.fetch_add(1);
                                      return true;
                                  },
                                  {.interval = 10ms, .timeout = 5ms}};
    {
        resil::health_check_thread thread{checker};
        const auto t0 = std::chrono::steady_clock::now();
        while (probes.load() < 3 && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(1ms);
        REQUIRE(probes.load() >= 3);
    }
    const auto after = probes.load();
    std::this_thread::sleep_for(30ms);
    CHECK(probes.load() == after);
}

TEST_CASE("health checks: a stop requested during a round is seen between two probes") {
    manual_clock clock;
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}, {.address = "c:80"}, {.address = "d:80"}}};
    std::stop_source stop;
    std::vector<std::string> probed;
    resil::basic_health_checker<manual_clock> checker{
        lb,
        [&](const std::string& address, resil::duration) {
            probed.push_back(address);
            if (probed.size() == 2) stop.request_stop();
            return true;
        },
        {.interval = 1s, .timeout = 100ms}, clock};
    checker.run_once(stop.get_token());
    CHECK(probed == std::vector<std::string>{"a:80", "b:80"});
    checker.run_once();  // a round without a stop probes the rest
    CHECK(probed.size() == 4);
}

TEST_CASE("health check thread: destruction waits for the probe under way, not for the whole round") {
    std::vector<resil::endpoint> many;
    for (const char* address : {"h0:80", "h1:80", "h2:80", "h3:80", "h4:80", "h5:80", "h6:80", "h7:80", "h8:80", "h9:80"})
        many.push_back({.address = address});
    balancer lb{many};
    std::atomic<int> started{0}, finished{0};
    resil::health_checker checker{lb, [&](const std::string&, resil::duration timeout) {
                                      started.fetch_add(1);
                                      std::this_thread::sleep_for(timeout / 2);
                                      finished.fetch_add(1);
                                      return true;
                                  },
                                  {.interval = 5s, .timeout = 100ms}};
    {
        resil::health_check_thread thread{checker};
        const auto t0 = std::chrono::steady_clock::now();
        while (started.load() < 1 && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(1ms);
        REQUIRE(started.load() >= 1);
    }
    // Joined: the probe under way finished, and at most one more could have started before the stop.
    CHECK(finished.load() == started.load());
    CHECK(started.load() <= 2);
}
