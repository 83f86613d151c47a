// The key-affinity policies (ring_hash, maglev, rendezvous): the same key to
// the same endpoint, Envoy's table sizes, the keys remapped when an endpoint
// leaves, ejected and tried endpoints passed to the key's next candidate,
// the load bound on a Zipf key distribution, and a retry in a pipeline.
// Every figure is exact: keys and draws are fixed, nothing is timed.
#include <resil/balancer.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"

using namespace std::chrono_literals;
using resil::affinity_key;
using resil::balancer;
using resil::balancing_policy;
using resil::endpoint;
using resil::testing::manual_clock;

namespace {

constexpr balancing_policy hash_policies[] = {balancing_policy::ring_hash, balancing_policy::maglev,
                                              balancing_policy::rendezvous};

std::vector<endpoint> replicas(int n, int first = 0) {
    std::vector<endpoint> out;
    for (int i = first; i < first + n; ++i) out.push_back({.address = "10.0.0." + std::to_string(i) + ":8080"});
    return out;
}

std::string home_of(const balancer& lb, const affinity_key& key, const resil::tried_endpoints* tried = nullptr,
                    resil::time_point now = {}) {
    auto lease = lb.pick(now, key, tried);
    return lease ? lease.address() : std::string{};
}

/// A deterministic 64-bit generator (splitmix64), the same on every platform.
struct splitmix {
    std::uint64_t state;
    std::uint64_t operator()() noexcept {
        auto z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
};

/// Share of `keys` keys that move when the endpoint at `gone` leaves a set of n.
double moved_share(balancing_policy p, int n, int gone, int keys, double* collateral = nullptr) {
    auto before = replicas(n);
    balancer lb{before, {.policy = p}};
    std::vector<std::string> home;
    home.reserve(static_cast<std::size_t>(keys));
    for (int k = 0; k < keys; ++k) home.push_back(home_of(lb, affinity_key{k}));
    const auto leaving = before[static_cast<std::size_t>(gone)].address;
    before.erase(before.begin() + gone);
    lb.replace(before);
    int moved = 0, others_moved = 0;
    for (int k = 0; k < keys; ++k) {
        const auto now = home_of(lb, affinity_key{k});
        if (now != home[static_cast<std::size_t>(k)]) {
            ++moved;
            if (home[static_cast<std::size_t>(k)] != leaving) ++others_moved;
        }
    }
    if (collateral != nullptr) *collateral = static_cast<double>(others_moved) / keys;
    return static_cast<double>(moved) / keys;
}

}  // namespace

TEST_CASE("affinity: keys are hashed with XXH64, as the reference implementation hashes them") {
    // Values from libxxhash 0.8.1's XXH64 (seed 0).
    CHECK(affinity_key{""}.hash() == 0xEF46DB3751D8E999ULL);
    CHECK(affinity_key{"a"}.hash() == 0xD24EC4F1A98C6E5BULL);
    CHECK(affinity_key{"abc"}.hash() == 0x44BC2CF5AD770999ULL);
    CHECK(affinity_key{"user-42"}.hash() == 0x397E9D3A76AF7C81ULL);
    CHECK(affinity_key{"The quick brown fox jumps over the lazy dog"}.hash() == 0x0B242D361FDA71BCULL);  // > 32 bytes
    CHECK(resil::detail::xxhash64("10.0.0.1:80_0") == 0x75041381E7371A08ULL);  // a ring point's name
    // An integer: its 8 bytes little-endian, not the identity std::hash is in libstdc++.
    CHECK(affinity_key{42}.hash() == 0xB556806FB6D14353ULL);
    CHECK(affinity_key{std::uint8_t{42}}.hash() == affinity_key{42LL}.hash());
    CHECK(affinity_key::from_hash(7).hash() == 7);
    CHECK_FALSE(affinity_key{});
    CHECK(affinity_key{""});
}

TEST_CASE("affinity: the same key goes to the same endpoint, whatever the list's order and whichever balancer") {
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        auto list = replicas(10);
        balancer a{list, {.policy = p}};
        std::reverse(list.begin(), list.end());
        balancer b{list, {.policy = p}};
        std::map<std::string, int> spread;
        for (int k = 0; k < 2000; ++k) {
            const affinity_key key{"user-" + std::to_string(k)};
            const auto home = home_of(a, key);
            CHECK(home_of(a, key) == home);
            CHECK(home_of(b, key) == home);
            ++spread[home];
        }
        // Every endpoint holds some keys: about 200 each.
        REQUIRE(spread.size() == 10);
        for (const auto& [address, n] : spread) CHECK((n > 120 && n < 280));
    }
}

TEST_CASE("affinity: maglev's table is Envoy's: 65537 entries, weights 1:2 hold 21846 and 43691") {
    balancer lb{{{.address = "a:80", .weight = 1}, {.address = "b:80", .weight = 2}}, {.policy = balancing_policy::maglev}};
    // Key hash h reads entry h mod 65537: each entry once.
    std::map<std::string, int> entries;
    for (std::uint64_t h = 0; h < 65537; ++h) ++entries[home_of(lb, affinity_key::from_hash(h))];
    CHECK(entries["a:80"] == 21846);
    CHECK(entries["b:80"] == 43691);
}

TEST_CASE("affinity: weights are honoured: a share of the keys in proportion") {
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        balancer lb{{{.address = "a:80", .weight = 1}, {.address = "b:80", .weight = 3}, {.address = "c:80", .weight = 6}},
                    {.policy = p}};
        std::map<std::string, int> keys;
        constexpr int n = 100000;
        for (int k = 0; k < n; ++k) ++keys[home_of(lb, affinity_key{k})];
        std::printf("weights 1:3:6, %s: %.3f %.3f %.3f\n", std::string(resil::to_string(p)).c_str(),
                    keys["a:80"] / double(n), keys["b:80"] / double(n), keys["c:80"] / double(n));
        CHECK(std::abs(keys["a:80"] / double(n) - 0.1) < 0.02);
        CHECK(std::abs(keys["b:80"] / double(n) - 0.3) < 0.03);
        CHECK(std::abs(keys["c:80"] / double(n) - 0.6) < 0.03);
    }
}

TEST_CASE("affinity: keys remapped when one of N endpoints leaves") {
    constexpr int keys = 100000;
    for (auto p : hash_policies)
        for (int n : {4, 16, 100}) {
            CAPTURE(resil::to_string(p), n);
            double collateral = 0.0;
            const double moved = moved_share(p, n, n / 2, keys, &collateral);
            std::printf("remapped, %-10s N=%3d: %6.2f %% (1/N = %5.2f %%; keys of other endpoints: %5.2f %%)\n",
                        std::string(resil::to_string(p)).c_str(), n, 100 * moved, 100.0 / n, 100 * collateral);
            // The leaving endpoint's keys (≈ 1/N) always move.
            CHECK(moved >= 0.8 / n);
            if (p == balancing_policy::rendezvous) {
                CHECK(collateral == 0.0);  // only the leaving endpoint's keys
            } else if (p == balancing_policy::maglev) {
                CHECK(collateral < 1.0 / n);  // Maglev trades a few more moves for its O(1) lookup
            } else {
                // Envoy's ring sizing gives every endpoint more points when one
                // leaves (min ring 1024 ÷ N rounded up), which moves some others' keys.
                CHECK(moved < 2.0 / n);
            }
        }
}

TEST_CASE("affinity: an ejected endpoint's keys go to each key's next candidate, the others' stay") {
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        manual_clock clock;
        balancer lb{replicas(10), {.policy = p, .outlier = {.consecutive_failures = 1}}};
        constexpr int keys = 5000;
        std::vector<std::string> home, next;
        for (int k = 0; k < keys; ++k) {
            home.push_back(home_of(lb, affinity_key{k}, nullptr, clock.now()));
            // The next candidate: the pick of a call that tried the home.
            resil::tried_endpoints tried{affinity_key{k}};
            auto first = lb.pick(clock.now(), &tried);
            tried.add(first.id());
            next.push_back(home_of(lb, affinity_key{k}, &tried, clock.now()));
            CHECK(next.back() != home.back());
        }
        const std::string out = "10.0.0.3:8080";
        for (int k = 0;; ++k) {  // a key of `out`, to fail there
            if (home[static_cast<std::size_t>(k)] != out) continue;
            auto lease = lb.pick(clock.now(), affinity_key{k});
            REQUIRE(lease.address() == out);
            lease.record_and_end(clock.now(), resil::endpoint_result::failure);
            break;
        }
        REQUIRE(lb.metrics().ejections == 1);
        std::map<std::string, int> moved_to;
        for (int k = 0; k < keys; ++k) {
            const auto now = home_of(lb, affinity_key{k}, nullptr, clock.now());
            if (home[static_cast<std::size_t>(k)] == out) {
                CHECK(now == next[static_cast<std::size_t>(k)]);
                ++moved_to[now];
            } else {
                CHECK(now == home[static_cast<std::size_t>(k)]);
            }
        }
        // Spread over the others, not all onto one neighbour.
        CHECK(moved_to.size() >= 5);
        // Back after the ejection: the keys come home.
        clock.advance(31s);
        for (int k = 0; k < keys; ++k)
            CHECK(home_of(lb, affinity_key{k}, nullptr, clock.now()) == home[static_cast<std::size_t>(k)]);
    }
}

TEST_CASE("affinity: a full endpoint passes the key to its next candidate, at most c times the average in flight") {
    // Zipf keys (s = 1.1 over 10^5 keys), 160 calls in flight over 16
    // endpoints (10 each on average), 10^5 calls.
    constexpr int n = 16, keys = 100000, calls = 100000, window = 160;
    std::vector<double> cdf(keys);
    double sum = 0.0;
    for (int r = 0; r < keys; ++r) cdf[static_cast<std::size_t>(r)] = (sum += 1.0 / std::pow(r + 1.0, 1.1));
    for (auto& c : cdf) c /= sum;
    for (auto p : hash_policies)
        for (double factor : {0.0, 1.25}) {
            CAPTURE(resil::to_string(p), factor);
            balancer lb{replicas(n), {.policy = p, .affinity = {.load_bound_factor = factor}}};
            splitmix rng{1};
            std::deque<resil::endpoint_lease> in_flight;
            std::vector<std::uint32_t> on(n);  // calls in flight per endpoint, by lease index (the set stays)
            std::uint32_t peak = 0;
            bool within = true;
            for (int i = 0; i < calls; ++i) {
                if (in_flight.size() == window) {
                    --on[in_flight.front().index()];
                    in_flight.pop_front();
                }
                const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
                const auto rank = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
                const auto load = in_flight.size();
                in_flight.push_back(lb.pick(resil::time_point{}, affinity_key{static_cast<std::uint64_t>(rank)}));
                ++on[in_flight.back().index()];
                const std::uint32_t most = *std::max_element(on.begin(), on.end());
                // The bound: ⌈c · (L + 1) / n⌉ with L the calls in flight before the pick.
                if (factor > 0.0 && most > std::ceil(factor * (static_cast<double>(load) + 1.0) / n)) within = false;
                if (i >= window) peak = std::max(peak, most);
            }
            const auto status = lb.status(resil::time_point{});  // the balancer's own counts agree
            for (std::size_t e = 0; e < status.size(); ++e) CHECK(status[e].outstanding == on[e]);
            const double ratio = peak / (static_cast<double>(window) / n);
            const auto picks = lb.picks();
            std::uint64_t top = 0;
            for (const auto& e : picks) top = std::max(top, e.picks);
            std::printf("zipf 1.1, %-10s c=%.2f: peak in flight / average %.2f, busiest endpoint's calls / average %.2f\n",
                        std::string(resil::to_string(p)).c_str(), factor, ratio,
                        static_cast<double>(top) / (static_cast<double>(calls) / n));
            if (factor > 0.0) {
                CHECK(within);
                CHECK(ratio <= 1.3);  // ⌈1.25 · 160 / 16⌉ = 13 of an average 10
            } else {
                CHECK(ratio > 2.0);  // the hottest key's endpoint sinks
            }
        }
}

TEST_CASE("affinity: the bound's next candidate is the key's next one, the same for every caller") {
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        balancer lb{replicas(4), {.policy = p, .affinity = {.load_bound_factor = 1.5}}};
        const affinity_key key{"tenant-7"};
        const auto home = home_of(lb, key);
        resil::tried_endpoints tried{key};
        auto first = lb.pick(resil::time_point{}, &tried);
        tried.add(first.id());
        const auto next = home_of(lb, key, &tried);
        first.end_unrecorded();
        // Calls of the key pile up on its home until it is full: ⌈1.5 · (L + 1) / 4⌉.
        std::vector<resil::endpoint_lease> held;
        held.push_back(lb.pick(resil::time_point{}, key));  // L = 0: cap 1
        CHECK(held.back().address() == home);
        held.push_back(lb.pick(resil::time_point{}, key));  // L = 1: cap 1, home holds 1: full
        CHECK(held.back().address() == next);
        held.push_back(lb.pick(resil::time_point{}, key));  // L = 2: cap 2 (⌈1.125⌉), home has room
        CHECK(held.back().address() == home);
        held.clear();
        CHECK(home_of(lb, key) == home);
    }
}

TEST_CASE("in a pipeline: a retry after a failed endpoint goes to the key's next candidate") {
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        manual_clock clock;
        balancer lb{replicas(8), {.policy = p, .outlier = {.consecutive_failures = 0}}};
        auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
        for (int k = 0; k < 50; ++k) {
            const affinity_key key{"user-" + std::to_string(k)};
            resil::tried_endpoints probe{key};
            auto home = lb.pick(clock.now(), &probe);
            probe.add(home.id());
            const auto next = home_of(lb, key, &probe);
            const auto home_address = home.address();
            home.end_unrecorded();

            resil::tried_endpoints tried{key};
            std::vector<std::string> order;
            auto out = pipe([&](auto& ctx) {
                return resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
                    order.push_back(ep.address);
                    return ep.address == home_address ? 503 : 200;
                }, [](int status) { return status >= 500 ? resil::verdict::retryable : resil::verdict::success; });
            });
            REQUIRE(out);
            REQUIRE(order.size() == 2);
            CHECK(order[0] == home_address);
            CHECK(order[1] == next);
        }
    }
}

TEST_CASE("affinity: a pick allocates nothing, the tables are built by replace()") {
    if (!resil_test::counting_allocations) return;
    for (auto p : hash_policies) {
        CAPTURE(resil::to_string(p));
        balancer lb{replicas(100), {.policy = p, .affinity = {.load_bound_factor = 1.25}}};
        const auto before = resil_test::allocations.load();
        for (int k = 0; k < 1000; ++k) {
            auto lease = lb.pick(resil::time_point{}, affinity_key{k});
            CHECK(lease);
        }
        CHECK(resil_test::allocations.load() == before);
    }
}

TEST_CASE("affinity: options out of range are refused with the field and the value") {
    auto message = [](resil::balancer_options o) {
        auto bad = o.validate();
        return bad ? bad->message() : std::string{};
    };
    CHECK(message({.affinity = {.load_bound_factor = 1.0}}) ==
          "`affinity.load_bound_factor` must be 0 (off) or in (1, 100], got 1");
    CHECK(message({.affinity = {.load_bound_factor = -2}}) ==
          "`affinity.load_bound_factor` must be 0 (off) or in (1, 100], got -2");
    CHECK(message({.affinity = {.maglev_table_size = 65536}}) ==
          "`affinity.maglev_table_size` must be a prime in [2, 5000011], got 65536");
    CHECK(message({.affinity = {.min_ring_size = 0}}) == "`affinity.min_ring_size` must be in [1, 8388608], got 0");
    CHECK(message({.affinity = {.min_ring_size = 4096, .max_ring_size = 1024}}) ==
          "`affinity.max_ring_size` must be in [4096, 8388608], got 1024");
    CHECK(message({.affinity = {.load_bound_factor = 1.25}}).empty());
    CHECK_THROWS_WITH((balancer{replicas(2), {.policy = balancing_policy::maglev, .affinity = {.maglev_table_size = 4}}}),
                      "resil::balancer: `affinity.maglev_table_size` must be a prime in [2, 5000011], got 4");
}
