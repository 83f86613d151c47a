#include <resil/balancer.hpp>
#include <resil/testing/manual_clock.hpp>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::balancer_options;
using resil::balancing_policy;
using resil::endpoint;
using resil::endpoint_result;
using resil::testing::manual_clock;

namespace {
std::string first_invalid(const std::vector<endpoint>& list) {
    const auto bad = resil::validate_endpoints(list);
    return bad ? bad->message() : std::string{};
}
std::string options_invalid(const balancer_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : std::string{};
}
std::vector<endpoint> three() { return {{.address = "http://a:80"}, {.address = "http://b:80"}, {.address = "http://c:80"}}; }
}  // namespace

TEST_CASE("endpoints: addresses, duplicates, weights and priorities are checked in the house form") {
    CHECK(first_invalid(three()).empty());
    CHECK(first_invalid({{.address = "10.0.0.1:8080"}, {.address = "https://x.example.com/base"}, {.address = "[::1]:90"}})
              .empty());
    CHECK(first_invalid({{.address = "http://a:80"}, {.address = "http://a:80"}}) ==
          "`endpoints[1].address` must be unique, got \"http://a:80\"");
    CHECK(first_invalid({{.address = "ftp://a"}}) ==
          "`endpoints[0].address` must be an http:// or https:// URL or a host:port, got \"ftp://a\"");
    CHECK(first_invalid({{.address = "a b:80"}}).starts_with("`endpoints[0].address` must be"));
    CHECK(first_invalid({{.address = "host"}}).starts_with("`endpoints[0].address` must be"));  // no port
    CHECK(first_invalid({{.address = "host:70000"}}).starts_with("`endpoints[0].address` must be"));
    CHECK(first_invalid({{.address = "http://:80"}}).starts_with("`endpoints[0].address` must be"));
    // Hosts: no empty label, no label starting or ending with '-'; one trailing dot is a fully qualified name.
    for (const char* bad : {"-:80", "..:80", "http://..", "http://-", "a..b:80", "-a:80", "a-.b:80", ".a:80", "http://a..:80"}) {
        INFO(bad);
        CHECK(first_invalid({{.address = bad}}).starts_with("`endpoints[0].address` must be an http://"));
    }
    CHECK(first_invalid({{.address = "db-1.internal.:5432"}, {.address = "http://my_host.example.com."}}).empty());
    // Duplicates as a URL names them: case of scheme and host, a default port, a trailing '/'.
    CHECK(first_invalid({{.address = "http://a:80"}, {.address = "http://a:80/"}}) ==
          "`endpoints[1].address` must be unique, got \"http://a:80/\"");
    CHECK(first_invalid({{.address = "http://a:80"}, {.address = "http://A:80"}}) ==
          "`endpoints[1].address` must be unique, got \"http://A:80\"");
    CHECK(first_invalid({{.address = "https://a"}, {.address = "https://a:443/"}}) ==
          "`endpoints[1].address` must be unique, got \"https://a:443/\"");
    CHECK(first_invalid({{.address = "Host:80"}, {.address = "host:80"}}) ==
          "`endpoints[1].address` must be unique, got \"host:80\"");
    // Distinct: another port, another path (the path's case counts), http and https.
    CHECK(first_invalid({{.address = "http://a:80"}, {.address = "http://a:81"}, {.address = "http://a/x"},
                         {.address = "http://a/X"}, {.address = "https://a"}})
              .empty());
    CHECK(first_invalid({{.address = ""}}) ==
          "`endpoints[0].address` must be an http:// or https:// URL or a host:port, got \"\"");
    CHECK(first_invalid({{.address = "a:1"}, {.address = "b:1", .weight = 0}}) ==
          "`endpoints[1].weight` must be in [1, 10000], got 0");
    CHECK(first_invalid({{.address = "a:1", .weight = -3}}) == "`endpoints[0].weight` must be in [1, 10000], got -3");
    CHECK(first_invalid({{.address = "a:1", .priority = 8}}) == "`endpoints[0].priority` must be in [0, 7], got 8");

    CHECK_THROWS_WITH(balancer(std::vector<endpoint>{}), "resil::balancer: `endpoints` must be non-empty, got 0");
    CHECK_THROWS_WITH(balancer({{.address = "a:1"}, {.address = "a:1"}}),
                      "resil::balancer: `endpoints[1].address` must be unique, got \"a:1\"");
}

TEST_CASE("balancer options: each field's bounds are named") {
    CHECK(options_invalid(balancer_options{}).empty());
    CHECK(options_invalid({.decay_time = 0s}) == "`decay_time` must be in [1ms, 1h], got 0s");
    CHECK(options_invalid({.panic_threshold = 1.5}) == "`panic_threshold` must be in [0, 1], got 1.5");
    CHECK(options_invalid({.failover_threshold = -0.1}) == "`failover_threshold` must be in [0, 1], got -0.1");
    CHECK(options_invalid({.outlier = {.base_ejection_time = 0s}}) ==
          "`outlier.base_ejection_time` must be in [1ms, 24h], got 0s");
    CHECK(options_invalid({.outlier = {.max_ejection_time = 10s}}) ==
          "`outlier.max_ejection_time` must be in [30s, 24h], got 10s");
    CHECK(options_invalid({.outlier = {.ejection_decay_interval = 0s}}) ==
          "`outlier.ejection_decay_interval` must be in [1ms, 24h], got 0s");
    CHECK(options_invalid({.outlier = {.max_ejection_share = 2.0}}) ==
          "`outlier.max_ejection_share` must be in [0, 1], got 2");
    CHECK_THROWS_WITH(balancer(three(), {.panic_threshold = 2.0}),
                      "resil::balancer: `panic_threshold` must be in [0, 1], got 2");
}

TEST_CASE("round-robin: each endpoint in turn; weights by a smooth schedule") {
    manual_clock clock;
    balancer lb{three(), {.policy = balancing_policy::round_robin}};
    std::vector<std::string> seen;
    for (int i = 0; i < 6; ++i) seen.push_back(lb.pick(clock.now()).address());
    // Three consecutive picks visit all three, in a fixed cycle.
    for (int i = 0; i < 3; ++i) CHECK(seen[static_cast<std::size_t>(i)] == seen[static_cast<std::size_t>(i + 3)]);
    CHECK(seen[0] != seen[1]);
    CHECK(seen[1] != seen[2]);
    CHECK(seen[0] != seen[2]);

    CHECK(resil::detail::smooth_schedule(std::vector<std::uint32_t>{5, 1, 1}) ==
          std::vector<std::uint32_t>{0, 0, 0, 1, 2, 0, 0});
    CHECK(resil::detail::smooth_schedule(std::vector<std::uint32_t>{2, 4, 6}) == std::vector<std::uint32_t>{2, 1, 0, 2, 1, 2});
    balancer weighted{{{.address = "a:1", .weight = 2}, {.address = "b:1", .weight = 1}},
                      {.policy = balancing_policy::round_robin}};
    std::map<std::string, int> counts;
    for (int i = 0; i < 300; ++i) ++counts[weighted.pick(clock.now()).address()];
    CHECK(counts["a:1"] == 200);
    CHECK(counts["b:1"] == 100);
}

TEST_CASE("random: uniform, or by weight") {
    manual_clock clock;
    resil::jitter_engine rng{7};
    balancer lb{{{.address = "a:1", .weight = 3}, {.address = "b:1", .weight = 1}}, {.policy = balancing_policy::random}};
    std::map<std::string, int> counts;
    for (int i = 0; i < 40000; ++i) ++counts[lb.pick(clock.now(), rng).address()];
    CHECK(counts["a:1"] > 29000);
    CHECK(counts["a:1"] < 31000);
    CHECK(counts["a:1"] + counts["b:1"] == 40000);
}

TEST_CASE("least outstanding and P2C prefer endpoints with fewer calls in flight; a lease ends its count") {
    manual_clock clock;
    for (auto policy : {balancing_policy::least_outstanding, balancing_policy::power_of_two_choices}) {
        balancer lb{{{.address = "a:1"}, {.address = "b:1"}}, {.policy = policy}};
        auto first = lb.pick(clock.now());
        REQUIRE(first);
        // With one call in flight on `first`, the other endpoint is preferred.
        for (int i = 0; i < 20; ++i) {
            auto next = lb.pick(clock.now());
            CHECK(next.address() != first.address());
        }
        auto second = lb.pick(clock.now());
        CHECK(second.address() != first.address());
        CHECK(lb.status(clock.now())[0].outstanding + lb.status(clock.now())[1].outstanding == 2);
        second.record_and_end(clock.now(), endpoint_result::success);
        first.end_unrecorded();
        CHECK(lb.status(clock.now())[0].outstanding == 0);
        CHECK(lb.status(clock.now())[1].outstanding == 0);
        CHECK_FALSE(first);
    }
    // Weighted: (outstanding + 1) / weight.
    balancer lb{{{.address = "a:1", .weight = 3}, {.address = "b:1", .weight = 1}},
                {.policy = balancing_policy::least_outstanding}};
    std::vector<resil::endpoint_lease> held;
    std::map<std::string, int> counts;
    for (int i = 0; i < 8; ++i) {
        held.push_back(lb.pick(clock.now()));
        ++counts[held.back().address()];
    }
    CHECK(counts["a:1"] == 6);
    CHECK(counts["b:1"] == 2);
}

TEST_CASE("peak EWMA: the slower endpoint loses, a slow sample counts at once, a fast one decays in") {
    manual_clock clock;
    balancer lb{{{.address = "fast:1"}, {.address = "slow:1"}}, {.policy = balancing_policy::peak_ewma}};
    // Measure both once: fast 10 ms, slow 100 ms.
    for (auto [name, latency] : {std::pair{"fast:1", 10ms}, std::pair{"slow:1", 100ms}}) {
        for (;;) {
            auto l = lb.pick(clock.now());
            if (l.address() != name) continue;
            l.record_and_end(clock.now() + latency, endpoint_result::success);
            break;
        }
    }
    auto status = lb.status(clock.now());
    CHECK(status[0].latency_ewma == 10ms);
    CHECK(status[1].latency_ewma == 100ms);
    int fast = 0;
    for (int i = 0; i < 100; ++i) fast += lb.pick(clock.now()).address() == "fast:1";
    CHECK(fast == 100);  // two choices of two: always both compared
    // The fast one turns slow: a peak is taken at once.
    {
        auto l = lb.pick(clock.now());
        REQUIRE(l.address() == "fast:1");
        l.record_and_end(clock.now() + 500ms, endpoint_result::success);
    }
    CHECK(lb.status(clock.now())[0].latency_ewma == 500ms);
    CHECK(lb.pick(clock.now()).address() == "slow:1");
    // Calls in flight raise the cost, 100 ms × (n + 1) on `slow`: its first
    // four (100..400 ms) beat `fast` (500 ms); a sixth on it (600 ms) would lose.
    std::vector<resil::endpoint_lease> held;
    for (int i = 0; i < 10; ++i) held.push_back(lb.pick(clock.now()));
    const auto busy = lb.status(clock.now());
    CHECK(busy[1].outstanding >= 4);
    CHECK(busy[0].outstanding >= 1);
    CHECK(busy[0].outstanding + busy[1].outstanding == 10);
    bool went_fast = false;
    for (int i = 0; i < 10; ++i) went_fast = went_fast || lb.pick(clock.now()).address() == "fast:1";
    CHECK(went_fast);
}

namespace {
/// Finagle's PeakEwma (finagle-core, loadbalancer/aperture and p2c's
/// PeakEwma), ported as the oracle: reading the cost decays it towards 0
/// and restamps it; a sample takes the peak, or blends in by the time
/// since the stamp.
struct finagle_peak_ewma {
    double tau;
    double cost = 0.0;
    double stamp = 0.0;
    void observe(double rtt, double t) {
        const double w = std::exp(-std::max(t - stamp, 0.0) / tau);
        cost = rtt > cost ? rtt : cost * w + rtt * (1.0 - w);
        stamp = t;
    }
    double get(double t) {
        observe(0.0, t);
        return cost;
    }
    /// The cost get() would give at t, without restamping.
    [[nodiscard]] double peek(double t) const { return cost * std::exp(-std::max(t - stamp, 0.0) / tau); }
};
}  // namespace

TEST_CASE("peak EWMA follows Finagle's: the decay of the pick that read the cost counts before the sample") {
    manual_clock clock;
    const auto start = clock.now();
    balancer lb{{{.address = "a:1"}, {.address = "b:1"}}, {.policy = balancing_policy::peak_ewma}};
    std::map<std::string, finagle_peak_ewma> finagle{{"a:1", {1e10}}, {"b:1", {1e10}}};
    auto ns = [&](resil::time_point t) { return static_cast<double>((t - start).count()); };
    // Sequential calls: (idle before the pick, latency of the answer), on
    // whichever endpoint the pick chooses. 30 s idle, then a 200 ms answer.
    const std::vector<std::pair<resil::duration, resil::duration>> calls{
        {0ms, 1000ms}, {0ms, 1000ms}, {30s, 200ms}, {30s, 200ms}, {10ms, 50ms},  {1s, 300ms},
        {0ms, 20ms},   {5s, 20ms},    {0ms, 900ms}, {2s, 100ms},  {100ms, 10ms}, {40s, 5ms}};
    for (const auto& [idle, latency] : calls) {
        clock.advance(idle);
        const auto picked_at = clock.now();
        auto lease = lb.pick(picked_at);
        // Finagle's pick reads both costs (and both are decayed by it).
        const double cost_a = finagle.at("a:1").get(ns(picked_at)), cost_b = finagle.at("b:1").get(ns(picked_at));
        const auto name = lease.address();
        const double chosen = name == "a:1" ? cost_a : cost_b, other = name == "a:1" ? cost_b : cost_a;
        CHECK(chosen <= other);  // the cheaper one (ties either way)
        clock.advance(latency);
        lease.record_and_end(clock.now(), endpoint_result::success);
        finagle.at(name).observe(static_cast<double>(resil::duration{latency}.count()), ns(clock.now()));
        if (idle == 30s) {
            // 30 s idle, then one 200 ms answer: 200 ms, as in Finagle (not
            // the 237.85 ms of blending with the undecayed average).
            for (const auto& st : lb.status(clock.now()))
                if (st.endpoint.address == name) CHECK(st.latency_ewma == 200ms);
        }
        for (const auto& st : lb.status(clock.now())) {
            const double idle_s = std::chrono::duration<double>(idle).count();
            const double latency_ms = std::chrono::duration<double, std::milli>(latency).count();
            INFO(st.endpoint.address << " after " << idle_s << " s idle and " << latency_ms << " ms");
            const double expected = finagle.at(st.endpoint.address).peek(ns(clock.now()));
            CHECK(std::abs(static_cast<double>(st.latency_ewma.count()) - expected) <= 2.0);
        }
    }
}

TEST_CASE("an unmeasured endpoint is tried while idle and penalised while busy") {
    manual_clock clock;
    balancer lb{{{.address = "a:1"}, {.address = "b:1"}}, {.policy = balancing_policy::peak_ewma}};
    auto l = lb.pick(clock.now());
    const auto measured = l.address();
    l.record_and_end(clock.now() + 50ms, endpoint_result::success);
    // The other one costs 0 while idle: it is picked next and measured.
    auto other = lb.pick(clock.now());
    CHECK(other.address() != measured);
    // While it is busy and unmeasured, it costs the 1 s penalty × 2 > 50 ms.
    CHECK(lb.pick(clock.now()).address() == measured);
}

TEST_CASE("replace: kept endpoints keep their state, leases on the old set end their counts, empty sets pick nothing") {
    manual_clock clock;
    balancer lb{three(), {.policy = balancing_policy::least_outstanding}};
    std::vector<resil::endpoint_lease> held;
    for (int i = 0; i < 3; ++i) held.push_back(lb.pick(clock.now()));
    lb.replace({{.address = "http://a:80"}, {.address = "http://d:80"}});
    CHECK(lb.size() == 2);
    auto status = lb.status(clock.now());
    CHECK(status[0].endpoint.address == "http://a:80");
    CHECK(status[0].outstanding == 1);  // the lease on the old set still counts here
    CHECK(status[1].outstanding == 0);
    CHECK(lb.pick(clock.now()).address() == "http://d:80");
    held.clear();
    CHECK(lb.status(clock.now())[0].outstanding == 0);
    lb.reclaim();

    lb.replace(std::vector<endpoint>{});
    CHECK_FALSE(lb.pick(clock.now()));
    CHECK(lb.metrics().no_endpoint == 1);
    CHECK_THROWS_WITH(lb.replace({{.address = "x"}}),
                      "resil::balancer: `endpoints[0].address` must be an http:// or https:// URL or a host:port, got \"x\"");
    CHECK(lb.metrics().replacements == 2);
}

TEST_CASE("retries go elsewhere: a pick prefers endpoints the call has not tried") {
    manual_clock clock;
    for (auto policy : {balancing_policy::round_robin, balancing_policy::random, balancing_policy::least_outstanding,
                        balancing_policy::power_of_two_choices, balancing_policy::peak_ewma,
                        balancing_policy::ring_hash, balancing_policy::maglev, balancing_policy::rendezvous}) {
        INFO(resil::to_string(policy));
        balancer lb{three(), {.policy = policy}};
        for (int round = 0; round < 20; ++round) {
            resil::tried_endpoints tried;
            std::vector<std::string> seen;
            for (int attempt = 0; attempt < 3; ++attempt) {
                auto l = lb.pick(clock.now(), &tried);
                REQUIRE(l);
                tried.add(l.id());
                seen.push_back(l.address());
                l.record_and_end(clock.now() + 1ms, endpoint_result::success);
            }
            std::sort(seen.begin(), seen.end());
            CHECK(std::unique(seen.begin(), seen.end()) == seen.end());
            // Every endpoint tried: a fourth attempt still gets one.
            CHECK(lb.pick(clock.now(), &tried));
        }
    }
}

TEST_CASE("a lease records once: record_and_keep() then record_and_end() counts one result") {
    manual_clock clock;
    balancer lb{three(), {.policy = balancing_policy::round_robin, .outlier = {.consecutive_failures = 2}}};
    auto lease = lb.pick(clock.now());
    REQUIRE(lease);
    const auto address = lease.address();
    CHECK_FALSE(lease.record_and_keep(clock.now(), endpoint_result::failure));
    CHECK_FALSE(lease.record_and_keep(clock.now(), endpoint_result::failure));  // a second record_and_keep() records nothing
    lease.record_and_end(clock.now(), endpoint_result::failure);               // nor does record_and_end() after record_and_keep()
    CHECK(lb.metrics().ejections == 0);
    for (const auto& s : lb.status(clock.now())) CHECK(s.outstanding == 0);
    // One more failure on that endpoint is the second in a row: ejected.
    for (;;) {
        auto l = lb.pick(clock.now());
        if (l.address() != address) continue;
        l.record_and_end(clock.now(), endpoint_result::failure);
        break;
    }
    CHECK(lb.metrics().ejections == 1);
}

// The former names, kept for one release, still do what they did.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
TEST_CASE("a lease's former names finish, record and release still record and end it") {
    manual_clock clock;
    balancer lb{three(), {.policy = balancing_policy::round_robin, .outlier = {.consecutive_failures = 2}}};
    auto recorded = lb.pick(clock.now());
    REQUIRE(recorded);
    const auto address = recorded.address();
    CHECK_FALSE(recorded.record(clock.now(), endpoint_result::failure));  // the first failure: no ejection yet
    recorded.release();
    CHECK_FALSE(recorded);
    for (const auto& s : lb.status(clock.now())) CHECK(s.outstanding == 0);
    // The second failure on that endpoint, through finish(): ejected.
    for (;;) {
        auto l = lb.pick(clock.now());
        if (l.address() != address) continue;
        l.finish(clock.now(), endpoint_result::failure);
        CHECK_FALSE(l);
        break;
    }
    CHECK(lb.metrics().ejections == 1);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
