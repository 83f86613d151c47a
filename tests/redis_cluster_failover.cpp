// resil::redis::rate_limiter on a real Redis Cluster (3 primaries, 3
// replicas, cluster-node-timeout 1000 ms) whose primary for the key is
// killed mid-run: decisions keep the documented bound across the promotion
// (grants ≤ r·t + B + what lost writes add, docs/redis_rate_limiter.md), no
// call waits past its deadline, and the limiter is back, on the promoted
// node, within the stated time.
#include <resil/redis.hpp>
#include <resil/redis/detail/cluster.hpp>

#include <chrono>
#include <iostream>
#include <thread>

#include "catch.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_failover_run.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::redis::rate_limiter;

TEST_CASE("redis cluster failover: a primary killed mid-run; the bound kept, every call within its deadline, "
          "back on the promoted node") {
    resil_test::redis_cluster cluster(1000);
    auto o = resil_test::cluster_failover_options(cluster.seeds());
    o.connections = 4;
    rate_limiter limiter{o};
    REQUIRE(resil_test::redis_decides(limiter));
    const int slot = resil::redis::detail::key_slot(limiter.redis_key());
    const auto old_owner = cluster.owner_port(slot);
    REQUIRE(old_owner != 0);
    REQUIRE(limiter.current_node() == resil_test::redis_cluster::address(old_owner));

    const auto deadline = 300ms;
    resil_test::redis_failover_run run(limiter, deadline);
    std::this_thread::sleep_for(1500ms);  // the burst spent: the bucket is empty at the kill
    run.kill([&] { cluster.kill_port(old_owner); });
    // Stated: back within cluster-node-timeout × 2 + 1 s (election) + a
    // refresh and reconnect_backoff_max; on a loaded machine, up to 30 s.
    REQUIRE(run.wait_back(30s));
    std::this_thread::sleep_for(1500ms);
    const double t = run.stop();
    const auto new_owner = cluster.owner_port(slot);

    const auto m = limiter.metrics();
    std::cout << "cluster failover: " << resil_test::failover_summary(limiter, run, t, o)
              << "; map refreshes " << m.map_refreshes << ", redirections " << m.redirections << ", store failures "
              << m.store_failures << "\n";
    INFO("back after " << run.back_after_s() << " s; granted " << run.granted() << " in " << t << " s; longest call "
                       << run.longest_call().count() << " µs; last error " << limiter.last_error());
    CHECK(new_owner != 0);
    CHECK(new_owner != old_owner);
    CHECK(limiter.current_node() == resil_test::redis_cluster::address(new_owner));
    resil_test::check_failover(o, run, t, m, deadline);
}
