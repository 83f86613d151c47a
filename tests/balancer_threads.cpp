// The balancer under threads: picks racing set replacements (run under
// ThreadSanitizer in CI). Every lease is released exactly once, so the
// in-flight counts return to zero and the totals add up.
#include <resil/balancer.hpp>
#include <resil/testing/manual_clock.hpp>

#include <atomic>
#include <barrier>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

using resil::balancer;
using resil::balancing_policy;
using resil::endpoint;

TEST_CASE("threads: picks race replacements of the set; counts and totals are exact") {
    const std::vector<endpoint> first{{.address = "a:80"}, {.address = "b:80"}, {.address = "c:80"}};
    const std::vector<endpoint> second{{.address = "b:80"}, {.address = "c:80"}, {.address = "d:80", .weight = 2}};
    for (auto policy : {balancing_policy::round_robin, balancing_policy::random, balancing_policy::least_outstanding,
                        balancing_policy::power_of_two_choices, balancing_policy::peak_ewma,
                        balancing_policy::ring_hash, balancing_policy::maglev, balancing_policy::rendezvous}) {
        INFO(resil::to_string(policy));
        resil::testing::manual_clock clock;
        // The key policies with their load bound: its count of calls in flight races too.
        const bool keyed = resil::detail::is_hash_policy(policy);
        balancer lb{first, {.policy = policy, .affinity = {.load_bound_factor = keyed ? 1.25 : 0.0}}};
        constexpr int threads = 4;
        constexpr int picks_per_thread = 20000;
        std::atomic<bool> done{false};
        std::atomic<std::uint64_t> picked{0}, empty{0}, blank{0};
        std::vector<std::thread> pickers;
        for (int t = 0; t < threads; ++t)
            pickers.emplace_back([&, t] {
                resil::jitter_engine rng{static_cast<std::uint64_t>(t) + 1};
                std::vector<resil::endpoint_lease> held;
                for (int i = 0; i < picks_per_thread; ++i) {
                    auto lease = keyed ? lb.pick(clock.now(), resil::affinity_key{i % 97}) : lb.pick(clock.now(), rng);
                    if (!lease) {
                        empty.fetch_add(1);
                        continue;
                    }
                    picked.fetch_add(1);
                    if (lease.address().empty()) blank.fetch_add(1);  // Catch's CHECK is not thread-safe
                    held.push_back(std::move(lease));
                    if (held.size() == 4) {  // several in flight, finished out of order
                        held[1].record_and_end(clock.now(), i % 7 == 0 ? resil::endpoint_result::failure
                                                               : resil::endpoint_result::success);
                        held.erase(held.begin() + 1);
                    }
                }
            });
        std::atomic<std::uint64_t> replaced{0};
        std::thread replacer([&] {
            for (int i = 0; !done.load(); ++i) {
                lb.replace(i % 2 == 0 ? second : first);
                replaced.fetch_add(1);
                clock.advance(std::chrono::milliseconds{1});
            }
        });
        for (auto& p : pickers) p.join();
        done.store(true);
        replacer.join();
        CHECK(picked.load() + empty.load() == std::uint64_t{threads} * picks_per_thread);
        CHECK(empty.load() == 0);
        CHECK(blank.load() == 0);
        lb.reclaim();
        lb.replace(first);
        lb.replace(second);
        for (const auto& s : lb.status(clock.now())) CHECK(s.outstanding == 0);
        CHECK(lb.metrics().replacements == replaced.load() + 2);
    }
}

TEST_CASE("threads: ejections racing each other and picks never pass the cap") {
    // Six endpoints, cap 1 (10 % of 6, at least one): four threads fail four
    // endpoints at one instant while a fifth picks (recounting the set).
    const resil::time_point now{std::chrono::hours{1}};
    constexpr int failing = 4;
    constexpr int trials = 10000;
    int over_cap = 0;
    std::barrier sync(failing + 2);
    balancer* lb = nullptr;
    std::vector<resil::endpoint_lease> leases;
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < failing; ++t)
        workers.emplace_back([&, t] {
            for (;;) {
                sync.arrive_and_wait();  // a trial is set up
                if (stop.load()) return;
                leases[static_cast<std::size_t>(t)].record_and_end(now, resil::endpoint_result::failure);
                sync.arrive_and_wait();  // the trial is over
            }
        });
    workers.emplace_back([&] {
        for (;;) {
            sync.arrive_and_wait();
            if (stop.load()) return;
            for (int i = 0; i < 20; ++i) (void)lb->pick(now);
            sync.arrive_and_wait();
        }
    });
    for (int trial = 0; trial < trials; ++trial) {
        balancer b{{{.address = "p:80"}, {.address = "q:80"}, {.address = "r:80"}, {.address = "s:80"},
                    {.address = "t:80"}, {.address = "u:80"}},
                   {.policy = balancing_policy::round_robin, .outlier = {.consecutive_failures = 1}, .panic_threshold = 0.0}};
        lb = &b;
        leases.clear();
        for (int i = 0; i < failing; ++i) leases.push_back(b.pick(now));
        sync.arrive_and_wait();
        sync.arrive_and_wait();
        leases.clear();
        std::size_t ejected = 0;
        for (const auto& s : b.status(now)) ejected += s.ejected ? 1 : 0;
        if (ejected > 1 || b.metrics().ejections > 1) ++over_cap;
    }
    stop.store(true);
    sync.arrive_and_wait();
    for (auto& w : workers) w.join();
    CHECK(over_cap == 0);
}

TEST_CASE("threads: copies of one call share its tried_endpoints; a copy picking after another goes elsewhere") {
    const resil::time_point now{std::chrono::seconds{1}};
    balancer lb{{{.address = "a:80"}, {.address = "b:80"}, {.address = "c:80"}, {.address = "d:80"}},
                {.policy = balancing_policy::random}};
    int same = 0;
    for (int call = 0; call < 500; ++call) {
        resil::tried_endpoints tried;
        std::string first, second;
        std::atomic<bool> first_picked{false};
        // The hedge: started once the first copy has picked, on another thread.
        std::thread hedge([&] {
            while (!first_picked.load()) std::this_thread::yield();
            auto l = lb.pick(now, &tried);
            tried.add(l.id());
            second = l.address();
        });
        // Meanwhile other copies read and write the same set (a data race if it were not atomic).
        std::thread noise([&] {
            for (int i = 0; i < 20; ++i) (void)tried.contains(&tried);
        });
        {
            auto l = lb.pick(now, &tried);
            tried.add(l.id());
            first = l.address();
            first_picked.store(true);
            hedge.join();
        }
        noise.join();
        same += first == second ? 1 : 0;
        if (tried.size() != 2) ++same;
    }
    CHECK(same == 0);
}
