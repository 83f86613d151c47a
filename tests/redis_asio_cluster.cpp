// resil::redis::async_rate_limiter on a Redis Cluster (the rate_limiter's
// cluster_nodes): redirects followed (a scripted node that redirects to a
// real server; a redirect loop bounded by max_redirections), and on a real
// 3-primary, 3-replica cluster: decisions right for keys on every primary's
// slots, and one slot resharded during a run (ASK while it migrates, MOVED
// once it has moved) with every decision Redis's and the quota's bound
// kept; the io_context's thread never held up by a map read.
#include <resil/redis/asio_rate_limiter.hpp>

#include <resil/redis.hpp>
#include <resil/redis/detail/cluster.hpp>

#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/asio_runner.hpp"
#include "support/redis_asio_run.hpp"
#include "support/fake_redis.hpp"
#include "support/fault_server.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_cluster_checks.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::redis::async_rate_limiter;
using resil::redis::decided_by;
using resil::redis::failure_policy;
using resil::redis::rate_limit_result;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil_test::cluster_options;
namespace rd = resil::redis::detail;

TEST_CASE("redis asio cluster: MOVED is followed to the named node, which then decides; the map keeps it") {
    resil_test::redis_server owner;
    resil_test::fake_redis seed(resil_test::moved_to(owner.port()));
    const rate_limiter limiter{cluster_options("127.0.0.1:" + std::to_string(seed.port()))};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    auto r = runner.get(quota.async_try_acquire());
    CHECK(r.status == rate_limit_status::granted);
    CHECK(r.source == decided_by::redis);
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(owner.port()));
    auto m = quota.metrics();
    CHECK(m.redirections == 1);
    CHECK(m.store_failures == 0);
    CHECK(seed.count({"EVALSHA", "EVAL"}) == 1);
    // The next decision goes straight to the owner; so does the blocking
    // limiter's (one map).
    r = runner.get(quota.async_try_acquire());
    CHECK(r.source == decided_by::redis);
    CHECK(limiter.try_acquire().source == decided_by::redis);
    CHECK(quota.metrics().redirections == 1);
    CHECK(seed.count({"EVALSHA", "EVAL"}) == 1);
    CHECK(owner.command({"EXISTS", limiter.redis_key()}) == "1");
}

TEST_CASE("redis asio cluster: a redirect loop ends after max_redirections; the failure policy decides") {
    int port = 0;
    resil_test::fake_redis node(resil_test::moved_to_itself(port));
    port = node.port();
    auto o = cluster_options("127.0.0.1:" + std::to_string(port));
    o.max_redirections = 3;
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    const auto r = runner.get(quota.async_try_acquire());
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(r.source == decided_by::fallback);
    CHECK(node.count({"EVALSHA", "EVAL"}) == 4);  // the first ask and 3 redirections
    resil_test::check_redirect_loop(limiter, quota.metrics(), port, o.max_redirections);
}

TEST_CASE("redis asio cluster: a real cluster: keys on every primary decided right, each by its slot's owner") {
    resil_test::redis_cluster cluster;
    auto o = cluster_options(cluster.seeds());
    o.rate = 0.5;  // no refill within the test: a key's decisions are exact
    o.burst = 3;
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(resil_test::redis_decides_async(runner, quota));
    CHECK(limiter.current_node() == resil_test::redis_cluster::address(cluster.owner_port(rd::key_slot(limiter.redis_key()))));
    // Tenant keys until every primary owns at least two of them.
    std::map<std::uint16_t, std::vector<std::string>> by_owner;
    int chosen = 0;
    for (int i = 0; i < 64 && chosen < 6; ++i) {
        const std::string tenant = "tenant-" + std::to_string(i);
        const auto owner = cluster.owner_port(rd::key_slot("resil:rl:{" + tenant + "}"));
        REQUIRE(owner != 0);
        if (by_owner[owner].size() < 2) {
            by_owner[owner].push_back(tenant);
            ++chosen;
        }
    }
    REQUIRE(by_owner.size() == 3);
    REQUIRE(chosen == 6);
    std::set<int> slots;
    runner.reset_stall();
    for (const auto& [owner, tenants] : by_owner) {
        for (const auto& tenant : tenants) {
            const std::string key = "resil:rl:{" + tenant + "}";
            slots.insert(rd::key_slot(key));
            // burst 3: three grants, then a rejection with the wait for one permit (2 s at 0.5/s).
            for (int k = 0; k < 3; ++k) {
                const auto r = runner.get(quota.async_try_acquire_for(tenant, 1, resil::deadline::after(5s)));
                INFO(tenant << " decision " << k << ": " << limiter.last_error());
                CHECK(r.status == rate_limit_status::granted);
                CHECK(r.source == decided_by::redis);
                CHECK(r.remaining == 2 - k);
            }
            const auto refused = runner.get(quota.async_try_acquire_for(tenant, 1, resil::deadline::after(5s)));
            CHECK(refused.status == rate_limit_status::rejected);
            CHECK(refused.source == decided_by::redis);
            CHECK(refused.wait > 1500ms);
            CHECK(refused.wait <= 2s);
            // Stored on the owner of its slot, on no other primary.
            for (const auto p : cluster.primaries()) {
                const auto exists = resil_test::redis_ask(p, {"EXISTS", key});
                REQUIRE(exists);
                if (p == owner) CHECK(exists->integer == 1);
                else CHECK(exists->type == REDIS_REPLY_ERROR);  // MOVED: not its slot
            }
        }
    }
    CHECK(slots.size() == 6);
    const auto m = quota.metrics();
    CHECK(m.store_failures == 0);
    CHECK(m.redirections == 0);  // the map was right for every slot
    CHECK(m.map_refreshes >= 1);
    std::cout << "asio cluster: 6 keys on 3 primaries, longest stall of the io_context's thread "
              << static_cast<double>(runner.longest_stall().count()) / 1000.0 << " ms, connects " << m.connects << "\n";

    // NOSCRIPT on the key's node (its script cache flushed, as after a
    // restart or a failover): EVAL runs and caches it again, Redis decides.
    const auto owner = cluster.owner_port(rd::key_slot(limiter.redis_key()));
    REQUIRE(reply_text(resil_test::redis_ask(owner, {"SCRIPT", "FLUSH"})) == "OK");
    const auto loads_before = quota.metrics().script_loads;
    const auto after_flush = runner.get(quota.async_try_acquire_for("tenant-flushed", 1, resil::deadline::after(5s)));
    const auto again = runner.get(quota.async_try_acquire(resil::deadline::after(5s)));
    CHECK(after_flush.source == decided_by::redis);
    CHECK(again.source == decided_by::redis);
    CHECK(quota.metrics().script_loads > loads_before);
    CHECK(quota.metrics().store_failures == 0);
}

TEST_CASE("redis asio cluster: leasing on a cluster: one round trip leases, the next decisions spend locally") {
    resil_test::redis_cluster cluster;
    auto o = cluster_options(cluster.seeds());
    o.rate = 1;
    o.burst = 20;
    o.lease = 5;
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(resil_test::redis_decides_async(runner, quota));  // one permit spent, four leased
    const auto trips = quota.metrics().round_trips;
    for (int i = 0; i < 4; ++i) CHECK(runner.get(quota.async_try_acquire()).granted());
    const auto m = quota.metrics();
    CHECK(m.round_trips == trips);  // from the lease
    CHECK(m.lease_grants >= 4);
    // The quota in the key's node holds what was leased: 20 - 5 (at most one more refilled).
    const auto owner = cluster.owner_port(rd::key_slot(limiter.redis_key()));
    const auto r = runner.get(quota.async_try_acquire(resil::deadline::after(5s)));  // a round trip: the lease is spent
    CHECK(r.source == decided_by::redis);
    CHECK(r.remaining <= 15);
    CHECK(resil_test::redis_ask(owner, {"EXISTS", limiter.redis_key()})->integer == 1);
}

TEST_CASE("redis asio cluster: no node reachable: failing open the fallback bucket decides, failing closed refuses") {
    const std::string nodes = "127.0.0.1:" + std::to_string(resil_test::refused_port()) + ",127.0.0.1:" +
                              std::to_string(resil_test::refused_port());
    auto o = cluster_options(nodes);
    o.on_failure = failure_policy::fail_open;
    const rate_limiter open_limiter{o};
    o.on_failure = failure_policy::fail_closed;
    const rate_limiter closed_limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter open_quota{open_limiter, runner.io().get_executor()};
    const async_rate_limiter closed_quota{closed_limiter, runner.io().get_executor()};
    const auto opened = runner.get(open_quota.async_try_acquire());
    CHECK(opened.status == rate_limit_status::granted);
    CHECK(opened.source == decided_by::fallback);
    CHECK(open_quota.metrics().fail_open_admitted == 1);
    const auto closed = runner.get(closed_quota.async_try_acquire());
    CHECK(closed.status == rate_limit_status::unavailable);
    CHECK(closed.source == decided_by::fallback);
    CHECK(closed_limiter.last_error().find("Connection refused") != std::string::npos);
}

TEST_CASE("redis asio cluster: a slot resharded during a run: ASK followed while it migrates, MOVED after; every "
          "decision Redis's, the quota's bound kept") {
    resil_test::redis_cluster cluster;
    auto o = cluster_options(cluster.seeds());
    o.rate = 200;
    o.burst = 20;
    o.connect_timeout = 1s;
    o.reply_timeout = 1s;
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(resil_test::redis_decides_async(runner, quota));
    auto move = resil_test::pick_slot_move(cluster, limiter.redis_key());
    REQUIRE(limiter.current_node() == resil_test::redis_cluster::address(move.src));

    // A run: a coroutine on the loop asks as fast as it can; every decision counted.
    std::atomic<bool> stop{false}, ended{false};
    std::atomic<std::int64_t> granted{0}, by_redis{0}, decisions{0};
    const auto t0 = std::chrono::steady_clock::now();
    const auto before = quota.metrics().granted;
    asio::co_spawn(
        runner.io(),
        [&]() -> asio::awaitable<void> {
            asio::steady_timer pause(co_await asio::this_coro::executor);
            while (!stop.load()) {
                const auto r = co_await quota.async_try_acquire(resil::deadline::after(3s));
                decisions.fetch_add(1);
                if (r.source == decided_by::redis) by_redis.fetch_add(1);
                if (r.granted()) granted.fetch_add(1);
                pause.expires_after(1ms);
                co_await pause.async_wait(asio::use_awaitable);
            }
            ended.store(true);
        },
        [](std::exception_ptr) {});
    std::this_thread::sleep_for(300ms);

    // ASK followed (ASKING + the script on the target, pipelined on its
    // connection) while the slot migrates, the map unchanged.
    resil_test::begin_slot_move(move, limiter, [&] { return quota.metrics().redirections; });
    const auto unasked = resil_test::redis_ask(move.dst, {"EXISTS", limiter.redis_key()});
    CHECK(unasked->type == REDIS_REPLY_ERROR);  // MOVED without ASKING
    // Once the slot is the target's, the source answers MOVED: followed, and the map updated.
    resil_test::finish_slot_move(cluster, move, limiter);
    std::this_thread::sleep_for(300ms);
    stop.store(true);
    const auto end_wait = std::chrono::steady_clock::now() + 10s;
    while (!ended.load() && std::chrono::steady_clock::now() < end_wait) std::this_thread::sleep_for(2ms);
    REQUIRE(ended.load());
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const auto m = quota.metrics();
    INFO("decisions " << decisions.load() << ", granted " << granted.load() << " in " << t << " s, redirections "
                      << m.redirections << ", map refreshes " << m.map_refreshes << ", last error "
                      << limiter.last_error());
    std::cout << "asio cluster reshard: " << decisions.load() << " decisions, " << granted.load() << " granted in " << t
              << " s (r·t + B = " << o.rate * t + static_cast<double>(o.burst) << "), redirections "
              << m.redirections << ", map refreshes " << m.map_refreshes << "\n";
    CHECK(m.store_failures == 0);
    CHECK(by_redis.load() == decisions.load());
    CHECK(resil_test::redis_ask(move.dst, {"EXISTS", limiter.redis_key()})->integer == 1);
    CHECK(static_cast<double>(m.granted - before) <= o.rate * t + static_cast<double>(o.burst));
    CHECK(granted.load() > 0);
}
