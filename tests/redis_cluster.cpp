// resil::redis::rate_limiter on a Redis Cluster (options.cluster_nodes):
// the key's slot, the options' checks, redirects followed (a scripted node
// that redirects to a real server; a redirect loop bounded by
// max_redirections), and on a real 3-primary, 3-replica cluster: the slot
// map read from a seed that does not own the key, and one slot resharded
// during a run (ASK while it migrates, MOVED once it has moved) with every
// decision Redis's and the quota's bound kept.
#include <resil/redis.hpp>
#include <resil/redis/detail/cluster.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fake_redis.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_cluster_checks.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using resil_test::cluster_options;
namespace rd = resil::redis::detail;

TEST_CASE("redis cluster: a key's slot is CRC16-XMODEM of its hash tag, as Redis computes it") {
    STATIC_REQUIRE(rd::crc16("123456789") == 0x31C3);
    STATIC_REQUIRE(rd::key_slot("123456789") == 12739);
    STATIC_REQUIRE(rd::key_slot("foo") == 12182);
    STATIC_REQUIRE(rd::key_slot("resil:rl:{foo}") == 12182);  // the hash tag only
    STATIC_REQUIRE(rd::key_slot("foo{}{bar}") == rd::key_slot(std::string_view("foo{}{bar}")));
    STATIC_REQUIRE(rd::key_slot("foo{}{bar}") == (rd::crc16("foo{}{bar}") & 16383));  // empty tag: the whole key
    STATIC_REQUIRE(rd::key_slot("foo{{bar}}zap") == (rd::crc16("{bar") & 16383));
}

TEST_CASE("redis cluster: cluster_nodes and max_redirections are checked") {
    rate_limiter_options o;
    o.key = "k";
    o.cluster_nodes = "127.0.0.1:7000, 127.0.0.1:7001,[::1]:7002";
    CHECK_FALSE(o.validate().has_value());
    for (const std::string bad : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:7000,", ",127.0.0.1:7000",
                                  "127.0.0.1:7000,,127.0.0.1:7001", "host:port", ":7000", "[::1:7000"}) {
        o.cluster_nodes = bad;
        const auto v = o.validate();
        REQUIRE(v.has_value());
        CHECK(v->message() == "`cluster_nodes` must be empty or 1 to 64 host:port separated by commas (port in "
                              "[1, 65535]), got \"" + bad + "\"");
    }
    std::string many;
    for (int i = 0; i < 65; ++i) {  // piece by piece: g++ 12 -O3 sees a false overlap (-Wrestrict) in `"," + std::string`
        if (i) many.push_back(',');
        many.append("10.0.0.1:").append(std::to_string(7000 + i));
    }
    o.cluster_nodes = many;
    CHECK(o.validate().has_value());
    o.cluster_nodes.clear();
    o.max_redirections = 17;
    REQUIRE(o.validate().has_value());
    CHECK(o.validate()->message() == "`max_redirections` must be in [0, 16], got 17");
    o.max_redirections = -1;
    CHECK(o.validate().has_value());
    o.max_redirections = 0;
    CHECK_FALSE(o.validate().has_value());
}

TEST_CASE("redis cluster: a redirect's text is read (an empty host is the node that answered)") {
    rd::redirect r;
    REQUIRE(rd::read_redirect("MOVED 3999 127.0.0.1:6381", "10.0.0.1", r));
    CHECK_FALSE(r.ask);
    CHECK(r.slot == 3999);
    CHECK(r.to == rd::node_address{"127.0.0.1", 6381});
    REQUIRE(rd::read_redirect("ASK 16383 :7002", "10.0.0.1", r));
    CHECK(r.ask);
    CHECK(r.to == rd::node_address{"10.0.0.1", 7002});
    CHECK_FALSE(rd::read_redirect("MOVED 16384 127.0.0.1:6381", "h", r));
    CHECK_FALSE(rd::read_redirect("MOVED x 127.0.0.1:6381", "h", r));
    CHECK_FALSE(rd::read_redirect("ERR MOVED 1 127.0.0.1:6381", "h", r));
    CHECK_FALSE(rd::read_redirect("NOSCRIPT No matching script", "h", r));
}

TEST_CASE("redis cluster: MOVED is followed to the named node, which then decides; the map keeps it") {
    resil_test::redis_server owner;
    resil_test::fake_redis seed(resil_test::moved_to(owner.port()));
    rate_limiter limiter{cluster_options("127.0.0.1:" + std::to_string(seed.port()))};
    CHECK(limiter.current_node().empty());  // nothing learnt yet
    auto r = limiter.try_acquire();
    CHECK(r.status == rate_limit_status::granted);
    CHECK(r.source == decided_by::redis);
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(owner.port()));
    auto m = limiter.metrics();
    CHECK(m.redirections == 1);
    CHECK(m.store_failures == 0);
    CHECK(m.map_refreshes == 0);  // the map came from the MOVED
    CHECK(seed.count({"EVALSHA"}) == 1);
    // The next decision goes straight to the owner (the map may be read
    // again: the seed still has no map to give).
    r = limiter.try_acquire();
    CHECK(r.source == decided_by::redis);
    CHECK(limiter.metrics().redirections == 1);
    CHECK(seed.count({"EVALSHA"}) == 1);
    CHECK(owner.command({"EXISTS", limiter.redis_key()}) == "1");
}

TEST_CASE("redis cluster: a redirect loop ends after max_redirections; the failure policy decides") {
    int port = 0;
    resil_test::fake_redis node(resil_test::moved_to_itself(port));
    port = node.port();
    auto o = cluster_options("127.0.0.1:" + std::to_string(port));
    o.max_redirections = 3;
    rate_limiter limiter{o};
    const auto r = limiter.try_acquire();
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(r.source == decided_by::fallback);
    CHECK(node.count({"EVALSHA"}) == 4);  // the first ask and 3 redirections
    resil_test::check_redirect_loop(limiter, limiter.metrics(), port, o.max_redirections);
}

TEST_CASE("redis cluster: a real cluster: the slot map read from a seed that does not own the key") {
    resil_test::redis_cluster cluster;
    const int slot = rd::key_slot("resil:rl:{clustered}");
    const auto owner = cluster.owner_port(slot);
    REQUIRE(owner != 0);
    std::uint16_t other = 0;
    for (const auto p : cluster.ports())
        if (p != owner) other = p;
    rate_limiter limiter{cluster_options(resil_test::redis_cluster::address(other))};
    REQUIRE(resil_test::redis_decides(limiter));
    CHECK(limiter.current_node() == resil_test::redis_cluster::address(owner));
    const auto m = limiter.metrics();
    CHECK(m.map_refreshes >= 1);
    CHECK(m.redirections == 0);  // the map was right
    // The slot as the cluster computes it (CLUSTER KEYSLOT).
    for (const std::string key : {"resil:rl:{llm-api}", "a", "{user1000}.following", "x{}y", "{{a}}", "tenant-42"}) {
        const auto theirs = resil_test::redis_ask(owner, {"CLUSTER", "KEYSLOT", key});
        REQUIRE(theirs);
        CHECK(rd::key_slot(key) == theirs->integer);
    }
    const auto exists = resil_test::redis_ask(owner, {"EXISTS", limiter.redis_key()});
    REQUIRE(exists);
    CHECK(exists->integer == 1);
}

TEST_CASE("redis cluster: a slot resharded during a run: ASK followed while it migrates, MOVED after; every "
          "decision Redis's, the quota's bound kept") {
    resil_test::redis_cluster cluster;
    auto o = cluster_options(cluster.seeds());
    o.rate = 200;
    o.burst = 20;
    o.connect_timeout = 1s;
    o.reply_timeout = 1s;
    rate_limiter limiter{o};
    REQUIRE(resil_test::redis_decides(limiter));
    auto move = resil_test::pick_slot_move(cluster, limiter.redis_key());
    REQUIRE(limiter.current_node() == resil_test::redis_cluster::address(move.src));

    // A run: one thread asks as fast as it can; every decision counted.
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> granted{0}, by_redis{0}, decisions{0};
    const auto t0 = std::chrono::steady_clock::now();
    const auto before = limiter.metrics().granted;
    std::thread runner([&] {
        while (!stop.load()) {
            const auto r = limiter.try_acquire(resil::deadline::after(3s));
            decisions.fetch_add(1);
            if (r.source == decided_by::redis) by_redis.fetch_add(1);
            if (r.granted()) granted.fetch_add(1);
            std::this_thread::sleep_for(1ms);
        }
    });
    std::this_thread::sleep_for(300ms);

    // ASK followed while the slot migrates, the map unchanged.
    resil_test::begin_slot_move(move, limiter, [&] { return limiter.metrics().redirections; });
    // Once the slot is the target's, the source answers MOVED: followed, and the map updated.
    resil_test::finish_slot_move(cluster, move, limiter);
    std::this_thread::sleep_for(300ms);
    stop.store(true);
    runner.join();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const auto m = limiter.metrics();
    INFO("decisions " << decisions.load() << ", granted " << granted.load() << " in " << t << " s, redirections "
                      << m.redirections << ", map refreshes " << m.map_refreshes << ", last error "
                      << limiter.last_error());
    CHECK(m.store_failures == 0);
    CHECK(by_redis.load() == decisions.load());
    // The quota's state moved with its key (MIGRATE is atomic): the run's
    // grants stay within r·t + B, resharding or not.
    CHECK(static_cast<double>(m.granted - before) <= o.rate * t + static_cast<double>(o.burst));
    CHECK(granted.load() > 0);
}
