#include <resil/balancer.hpp>
#include <resil/metrics.hpp>
#include <resil/testing/manual_clock.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::balancing_policy;
using resil::endpoint;
using resil::endpoint_result;
using resil::testing::manual_clock;

namespace {
std::vector<endpoint> replicas(int n, std::uint32_t priority = 0, char first = 'a') {
    std::vector<endpoint> out;
    for (int i = 0; i < n; ++i)
        out.push_back({.address = std::string(1, static_cast<char>(first + i)) + ":80", .priority = priority});
    return out;
}

/// A lease on `address`, or an empty one when picks never choose it (ejected).
resil::endpoint_lease lease_on(const balancer& lb, const std::string& address, resil::time_point now) {
    for (int i = 0; i < 200; ++i) {
        auto l = lb.pick(now);
        if (l && l.address() == address) return l;
    }
    return {};
}

/// Fails `n` calls on `address` at `now`; false when it could not be picked.
bool fail(const balancer& lb, const std::string& address, resil::time_point now, int n) {
    for (int i = 0; i < n; ++i) {
        auto l = lease_on(lb, address, now);
        if (!l) return false;
        l.record_and_end(now, endpoint_result::failure);
    }
    return true;
}

bool picked(const balancer& lb, const std::string& address, resil::time_point now) {
    return static_cast<bool>(lease_on(lb, address, now));
}
}  // namespace

TEST_CASE("ejection timeline: out at the 5th consecutive failure, back after 30 s, then 60 s the second time") {
    manual_clock clock;
    std::vector<std::string> log;
    balancer lb{replicas(10),
                {.policy = balancing_policy::round_robin,
                 .on_ejected = [&](const resil::events::endpoint_ejected& e) {
                     log.push_back("ejected " + std::string(e.address) + " #" + std::to_string(e.times_ejected) + " for " +
                                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(e.ejected_for).count()) + "s");
                 },
                 .on_returned = [&](const resil::events::endpoint_returned& e) {
                     log.push_back("returned " + std::string(e.address));
                 }}};
    const std::string x = "c:80";
    REQUIRE(fail(lb, x, clock.now(), 4));
    CHECK(picked(lb, x, clock.now()));  // 4 failures: still in
    // A success ends the run: four more failures still do not eject.
    lease_on(lb, x, clock.now()).record_and_end(clock.now(), endpoint_result::success);
    REQUIRE(fail(lb, x, clock.now(), 4));
    CHECK(log.empty());
    REQUIRE(fail(lb, x, clock.now(), 1));  // the 5th in a row
    CHECK(log == std::vector<std::string>{"ejected c:80 #1 for 30s"});
    CHECK_FALSE(picked(lb, x, clock.now()));
    CHECK(lb.status(clock.now())[2].ejected);
    clock.advance(30s - 1ns);
    CHECK_FALSE(picked(lb, x, clock.now()));
    clock.advance(1ns);
    CHECK(picked(lb, x, clock.now()));
    CHECK(log.back() == "returned c:80");

    // Back with a fresh run: 5 more failures eject it for 2 × 30 s.
    REQUIRE(fail(lb, x, clock.now(), 5));
    CHECK(log.back() == "ejected c:80 #2 for 60s");
    clock.advance(60s - 1ns);
    CHECK_FALSE(picked(lb, x, clock.now()));
    clock.advance(1ns);
    CHECK(picked(lb, x, clock.now()));

    // The n-th ejection in a row lasts n × 30 s, capped at 300 s; the
    // multiplier grows while multiplier × 30 s < 300 s + 30 s, so it stops at
    // 11, as Envoy's ejectTimeBackoff does.
    for (int n = 3; n <= 12; ++n) {
        REQUIRE(fail(lb, x, clock.now(), 5));
        const auto expected = std::min(n * 30, 300);
        CHECK(log.back() == "ejected c:80 #" + std::to_string(std::min(n, 11)) + " for " + std::to_string(expected) + "s");
        clock.advance(std::chrono::seconds{expected});
    }
    const auto m = lb.metrics();
    CHECK(m.ejections == 12);
    CHECK(m.returns >= 11);
}

TEST_CASE("the ejection cap: at most 10 % of the set, at least one may be, one is always kept") {
    manual_clock clock;
    SECTION("10 endpoints: one at a time") {
        balancer lb{replicas(10), {.policy = balancing_policy::round_robin}};
        REQUIRE(fail(lb, "a:80", clock.now(), 5));
        REQUIRE(fail(lb, "b:80", clock.now(), 10));
        CHECK_FALSE(picked(lb, "a:80", clock.now()));
        CHECK(picked(lb, "b:80", clock.now()));  // over the cap: kept despite its failures
        CHECK(lb.metrics().ejections == 1);
        clock.advance(30s);
        // a is back. b's run started again when the cap refused its ejection
        // (as Envoy resets its count): 4 more failures keep it, the 5th ejects it.
        REQUIRE(fail(lb, "b:80", clock.now(), 4));
        CHECK(picked(lb, "b:80", clock.now()));
        REQUIRE(fail(lb, "b:80", clock.now(), 1));
        CHECK_FALSE(picked(lb, "b:80", clock.now()));
        CHECK(picked(lb, "a:80", clock.now()));
    }
    SECTION("20 endpoints: two") {
        balancer lb{replicas(20), {.policy = balancing_policy::round_robin}};
        for (auto name : {"a:80", "b:80", "c:80"}) REQUIRE(fail(lb, name, clock.now(), 5));
        CHECK(lb.metrics().ejections == 2);
        CHECK(picked(lb, "c:80", clock.now()));
    }
    SECTION("two endpoints: one may be ejected (10 % rounds down, but at least one)") {
        balancer lb{replicas(2), {.policy = balancing_policy::round_robin}};
        REQUIRE(fail(lb, "a:80", clock.now(), 5));
        REQUIRE(fail(lb, "b:80", clock.now(), 5));
        CHECK(lb.metrics().ejections == 1);
        CHECK_FALSE(picked(lb, "a:80", clock.now()));
    }
    SECTION("a single endpoint is never ejected") {
        balancer lb{replicas(1)};
        REQUIRE(fail(lb, "a:80", clock.now(), 50));
        CHECK(lb.metrics().ejections == 0);
        CHECK(picked(lb, "a:80", clock.now()));
    }
    SECTION("a share of 100 % still keeps one") {
        balancer lb{replicas(3), {.policy = balancing_policy::round_robin, .outlier = {.max_ejection_share = 1.0},
                                  .panic_threshold = 0.0}};
        for (auto name : {"a:80", "b:80"}) REQUIRE(fail(lb, name, clock.now(), 5));
        REQUIRE(fail(lb, "c:80", clock.now(), 5));
        CHECK(lb.metrics().ejections == 2);
        CHECK(picked(lb, "c:80", clock.now()));
    }
    SECTION("ejection off") {
        balancer lb{replicas(10), {.outlier = {.consecutive_failures = 0}}};
        REQUIRE(fail(lb, "a:80", clock.now(), 50));
        CHECK(lb.metrics().ejections == 0);
    }
}

TEST_CASE("panic mode: below 50 % usable, a group is balanced over all of its endpoints") {
    manual_clock clock;
    for (auto policy : {balancing_policy::round_robin, balancing_policy::random, balancing_policy::least_outstanding,
                        balancing_policy::power_of_two_choices, balancing_policy::peak_ewma,
                        balancing_policy::ring_hash, balancing_policy::maglev, balancing_policy::rendezvous}) {
        INFO(resil::to_string(policy));
        balancer lb{replicas(4), {.policy = policy, .outlier = {.max_ejection_share = 1.0}}};
        REQUIRE(fail(lb, "a:80", clock.now(), 5));
        REQUIRE(fail(lb, "b:80", clock.now(), 5));
        // 2 of 4 usable: not panic; the ejected are avoided.
        std::set<std::string> seen;
        for (int i = 0; i < 200; ++i) seen.insert(lb.pick(clock.now()).address());
        CHECK(seen == std::set<std::string>{"c:80", "d:80"});
        CHECK(lb.metrics().panic_picks == 0);
        REQUIRE(fail(lb, "c:80", clock.now(), 5));
        // 1 of 4: panic, every endpoint takes calls again.
        seen.clear();
        for (int i = 0; i < 200; ++i) seen.insert(lb.pick(clock.now()).address());
        CHECK(seen.size() == 4);
        CHECK(lb.metrics().panic_picks == 200);
        CHECK(lb.metrics().ejections == 3);
    }
    // Panic off: only the last one left.
    balancer lb{replicas(4), {.policy = balancing_policy::random, .outlier = {.max_ejection_share = 1.0},
                              .panic_threshold = 0.0}};
    for (auto name : {"a:80", "b:80", "c:80"}) REQUIRE(fail(lb, name, clock.now(), 5));
    for (int i = 0; i < 50; ++i) CHECK(lb.pick(clock.now()).address() == "d:80");
}

TEST_CASE("failover: below the threshold, groups share the calls by their health, as Envoy's priority load") {
    manual_clock clock;
    auto list = replicas(4, 0, 'a');
    for (auto& e : replicas(2, 1, 'x')) list.push_back(e);
    balancer lb{list, {.policy = balancing_policy::round_robin, .outlier = {.max_ejection_share = 0.75},
                       .failover_threshold = 0.7}};
    // The share of 10,000 picks that went to the primary group.
    auto primary_share = [&] {
        int primary = 0;
        for (int i = 0; i < 10000; ++i) primary += lb.pick(clock.now()).target().priority == 0 ? 1 : 0;
        return primary / 10000.0;
    };
    // Envoy's rule (load_balancer_impl.cc): health = min(1, usable share ×
    // overprovisioning factor), here 1 / failover_threshold; in priority
    // order each group takes its health of what is left, the healths scaled
    // up when they sum below 1.
    auto envoy_primary_load = [](double share0, double share1) {
        const double h0 = std::min(1.0, share0 / 0.7), h1 = std::min(1.0, share1 / 0.7);
        const double total = std::min(1.0, h0 + h1);
        return std::min(1.0, h0 / total);
    };
    CHECK(primary_share() == 1.0);
    REQUIRE(fail(lb, "a:80", clock.now(), 5));
    // 3 of 4 = 75 % ≥ 70 %: every call to the primary.
    CHECK(primary_share() == 1.0);
    CHECK(lb.metrics().failover_picks == 0);
    REQUIRE(fail(lb, "b:80", clock.now(), 5));
    // 2 of 4 = 50 %: health 0.71, so 71 % stay, 29 % fail over.
    CHECK(std::abs(primary_share() - envoy_primary_load(0.5, 1.0)) < 0.02);
    CHECK(lb.metrics().failover_picks > 2500);
    REQUIRE(fail(lb, "c:80", clock.now(), 5));
    // 1 of 4: 36 % stay (in panic? no: the healths sum to 1).
    CHECK(std::abs(primary_share() - envoy_primary_load(0.25, 1.0)) < 0.02);
    CHECK(lb.metrics().panic_picks == 0);
    // The ejections end: back to the primary.
    clock.advance(30s);
    CHECK(primary_share() == 1.0);
}

TEST_CASE("failover: every group short of healthy, and every one in panic") {
    manual_clock clock;
    auto list = replicas(4, 0, 'a');
    for (auto& e : replicas(4, 1, 'w')) list.push_back(e);
    balancer lb{list, {.policy = balancing_policy::round_robin, .outlier = {.max_ejection_share = 1.0}}};
    auto shares = [&] {
        std::map<std::uint32_t, int> by_group;
        for (int i = 0; i < 10000; ++i) ++by_group[lb.pick(clock.now()).target().priority];
        return std::pair{by_group[0] / 10000.0, by_group[1] / 10000.0};
    };
    // 1 of 4 usable in each: healths 0.36 + 0.36 < 1, each group half the
    // calls after scaling; both below the panic threshold (50 %): every
    // group in panic, so the groups share by size, over all their endpoints.
    for (auto name : {"a:80", "b:80", "c:80", "w:80", "x:80", "y:80"}) REQUIRE(fail(lb, name, clock.now(), 5));
    const auto [p0, p1] = shares();
    CHECK(std::abs(p0 - 0.5) < 0.02);
    CHECK(std::abs(p1 - 0.5) < 0.02);
    CHECK(lb.metrics().panic_picks >= 10000);
}

TEST_CASE("failover: one of three primaries refused by its breaker moves 5 % of the calls, not all of them") {
    manual_clock clock;
    balancer lb{{{.address = "p1:80"}, {.address = "p2:80"}, {.address = "p3:80"}, {.address = "backup:80", .priority = 1}},
                {.endpoint_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                                    .consecutive_failures = 1,
                                                                    .open_for = 1h}}};
    for (;;) {
        auto l = lb.pick(clock.now());
        if (l.address() != "p1:80") continue;
        auto permit = l.breaker()->try_acquire();
        l.breaker()->record(permit, resil::verdict::retryable);
        break;
    }
    int backup = 0;
    for (int i = 0; i < 10000; ++i) backup += lb.pick(clock.now()).address() == "backup:80" ? 1 : 0;
    // 2 of 3 usable: health min(1, 0.667 / 0.7) = 0.95.
    CHECK(std::abs(backup / 10000.0 - (1.0 - (2.0 / 3.0) / 0.7)) < 0.01);
}

TEST_CASE("a lease's record_and_keep() returns the ejection its result caused") {
    manual_clock clock;
    balancer lb{replicas(10), {.policy = balancing_policy::round_robin}};
    REQUIRE(fail(lb, "e:80", clock.now(), 4));
    auto lease = lease_on(lb, "e:80", clock.now());
    REQUIRE(lease);
    const auto ejected = lease.record_and_keep(clock.now(), endpoint_result::failure);
    REQUIRE(ejected.has_value());
    CHECK(ejected->address == "e:80");
    CHECK(ejected->times_ejected == 1);
    CHECK(ejected->ejected_for == 30s);
    CHECK(ejected->at == clock.now());
    lease.end_unrecorded();
    CHECK_FALSE(lease_on(lb, "e:80", clock.now()).record_and_keep(clock.now(), endpoint_result::failure).has_value());
}

TEST_CASE("the ejection multiplier decays by one per decay interval spent un-ejected (Envoy)") {
    manual_clock clock;
    std::vector<std::uint32_t> times;
    std::vector<resil::duration> lengths;
    balancer lb{replicas(10), {.policy = balancing_policy::round_robin,
                               .on_ejected = [&](const resil::events::endpoint_ejected& e) {
                                   times.push_back(e.times_ejected);
                                   lengths.push_back(e.ejected_for);
                               }}};
    const std::string x = "c:80";
    for (int n = 0; n < 4; ++n) {  // four in a row: multiplier 4, 120 s
        REQUIRE(fail(lb, x, clock.now(), 5));
        clock.advance(lengths.back());
    }
    CHECK(times == std::vector<std::uint32_t>{1, 2, 3, 4});
    // 25 s healthy: two whole intervals off (4 - 2), then this ejection (+1).
    clock.advance(25s);
    REQUIRE(fail(lb, x, clock.now(), 5));
    CHECK(times.back() == 3);
    CHECK(lengths.back() == 90s);
    clock.advance(lengths.back());
    // A day healthy: back to the first ejection's length.
    clock.advance(24h);
    REQUIRE(fail(lb, x, clock.now(), 5));
    CHECK(times.back() == 1);
    CHECK(lengths.back() == 30s);
    CHECK(lb.status(clock.now())[2].times_ejected == 1);
}

TEST_CASE("the ejection multiplier follows Envoy's ejectTimeBackoff: after 11 ejections and 20 s healthy, 300 s") {
    // Envoy (outlier_detection_impl.cc): on ejection, ejectTimeBackoff++
    // while backoff × base < max + base; each detection interval (10 s) an
    // un-ejected host's backoff falls by one; an ejection lasts
    // min(base × backoff, max). The oracle, ported:
    struct envoy_host {
        long backoff = 0;
        long eject(long base, long max) {
            if (backoff * base < max + base) ++backoff;
            return std::min(base * backoff, max);
        }
        void healthy_intervals(long n) { backoff = std::max(0L, backoff - n); }
    } envoy;
    manual_clock clock;
    std::vector<resil::duration> lengths;
    std::vector<std::uint32_t> times;
    balancer lb{replicas(10), {.policy = balancing_policy::round_robin,
                               .on_ejected = [&](const resil::events::endpoint_ejected& e) {
                                   times.push_back(e.times_ejected);
                                   lengths.push_back(e.ejected_for);
                               }}};
    for (int n = 1; n <= 11; ++n) {
        REQUIRE(fail(lb, "c:80", clock.now(), 5));
        CHECK(lengths.back() == std::chrono::seconds{envoy.eject(30, 300)});
        clock.advance(lengths.back());
    }
    CHECK(times.back() == 11);
    // Two intervals healthy: 11 → 9, then this ejection → 10: 300 s (capped
    // at 10 the multiplier gave 8 → 9: 270 s).
    clock.advance(20s);
    envoy.healthy_intervals(2);
    REQUIRE(fail(lb, "c:80", clock.now(), 5));
    CHECK(lengths.back() == std::chrono::seconds{envoy.eject(30, 300)});
    CHECK(lengths.back() == 300s);
}

TEST_CASE("a metrics object given as the balancer's hooks counts ejections and returns, exported with the rest") {
    manual_clock clock;
    resil::metrics m{"replicas"};
    balancer lb{replicas(10),
                {.policy = balancing_policy::round_robin, .on_ejected = std::ref(m), .on_returned = std::ref(m)}};
    REQUIRE(fail(lb, "c:80", clock.now(), 5));
    CHECK(m.snapshot().endpoint_ejections == 1);
    CHECK(m.snapshot().endpoint_returns == 0);
    clock.advance(30s);
    CHECK(picked(lb, "c:80", clock.now()));  // the pick that finds its time up returns it
    REQUIRE(fail(lb, "c:80", clock.now(), 5));
    const auto s = m.snapshot();
    CHECK(s.endpoint_ejections == 2);
    CHECK(s.endpoint_returns == 1);
    CHECK(s.endpoint_ejections == lb.metrics().ejections);
    CHECK(s.endpoint_returns == lb.metrics().returns);
    CHECK(s.calls == 0);  // nothing else is counted
    const auto text = resil::prometheus_text({m});
    // Per endpoint: the one ejected twice and returned once.
    CHECK(text.find("resil_endpoint_ejections_total{dependency=\"replicas\",endpoint=\"c:80\"} 2\n") != std::string::npos);
    CHECK(text.find("resil_endpoint_returns_total{dependency=\"replicas\",endpoint=\"c:80\"} 1\n") != std::string::npos);
    CHECK(text.find("resil_endpoint_ejected{dependency=\"replicas\",endpoint=\"c:80\"} 1\n") != std::string::npos);
}
