// resil::redis::async_rate_limiter on a real Redis Cluster (3 primaries, 3
// replicas, cluster-node-timeout 1000 ms) whose primary for the key is
// killed mid-run: decisions keep the documented bound across the promotion
// (grants ≤ r·t + B + what lost writes add, docs/redis_rate_limiter.md), no
// call waits past its deadline, the io_context's thread is never held up
// (map reads are awaited), and the limiter is back, on the promoted node,
// within the time stated for the blocking limiter.
#include <resil/redis/asio_rate_limiter.hpp>

#include <resil/redis.hpp>
#include <resil/redis/detail/cluster.hpp>

#include <chrono>
#include <iostream>
#include <thread>

#include "catch.hpp"
#include "support/asio_runner.hpp"
#include "support/redis_asio_run.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::async_rate_limiter;
using resil::redis::rate_limiter;

TEST_CASE("redis asio cluster failover: a primary killed mid-run; the bound kept, every call within its deadline, "
          "back on the promoted node") {
    resil_test::redis_cluster cluster(1000);
    auto o = resil_test::cluster_failover_options(cluster.seeds());
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(resil_test::redis_decides_async(runner, quota));
    const int slot = resil::redis::detail::key_slot(limiter.redis_key());
    const auto old_owner = cluster.owner_port(slot);
    REQUIRE(old_owner != 0);
    REQUIRE(limiter.current_node() == resil_test::redis_cluster::address(old_owner));

    const auto deadline = 300ms;
    runner.reset_stall();
    resil_test::redis_asio_run run(runner, quota, deadline);
    std::this_thread::sleep_for(1500ms);  // the burst spent: the bucket is empty at the kill
    run.kill_now();
    cluster.kill_port(old_owner);
    // Stated (docs): back within cluster-node-timeout × 2 + 1.5 s + reconnect_backoff_max
    // + one map read; on a loaded machine, up to 30 s.
    REQUIRE(run.wait_back(30s));
    std::this_thread::sleep_for(1500ms);
    const double t = run.stop();
    REQUIRE(run.ended());
    const auto new_owner = cluster.owner_port(slot);

    const auto m = quota.metrics();
    std::cout << "asio cluster failover: " << resil_test::failover_summary(limiter, run, t, o)
              << "; longest stall of the loop " << static_cast<double>(runner.longest_stall().count()) / 1000.0
              << " ms; map refreshes " << m.map_refreshes << ", redirections " << m.redirections
              << ", store failures " << m.store_failures << "\n";
    INFO("back after " << run.back_after_s() << " s; granted " << run.granted() << " in " << t << " s; last error "
                       << limiter.last_error());
    CHECK(new_owner != 0);
    CHECK(new_owner != old_owner);
    CHECK(limiter.current_node() == resil_test::redis_cluster::address(new_owner));
    resil_test::check_failover(o, run, t, m, deadline);
    // Nothing blocks the loop: a map read, a connect to the dead node, are awaited.
    CHECK(runner.longest_stall() <= resil_test::slack);
}
