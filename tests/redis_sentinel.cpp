// resil::redis::rate_limiter behind Sentinel (options.sentinels,
// sentinel_master), on a real primary + replica + 3 sentinels: the primary
// found from the sentinels (one unreachable sentinel skipped), a node whose
// ROLE is not master refused, and the primary killed mid-run: the bound kept
// across the promotion, every call within its deadline, the limiter back on
// the promoted replica within the stated time.
#include <resil/redis.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fake_redis.hpp"
#include "support/fault_server.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::failure_policy;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;

namespace {

rate_limiter_options sentinel_options(std::string sentinels, std::string name) {
    rate_limiter_options o;
    o.rate = 100;
    o.burst = 10;
    o.key = "watched";
    o.sentinels = std::move(sentinels);
    o.sentinel_master = std::move(name);
    o.on_failure = failure_policy::fail_closed;
    o.connect_timeout = 1s;
    o.reply_timeout = 1s;
    o.connections = 2;
    return o;
}

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }

}  // namespace

TEST_CASE("redis sentinel: sentinels and sentinel_master are checked") {
    rate_limiter_options o;
    o.key = "k";
    o.sentinels = "127.0.0.1:26379";
    REQUIRE(o.validate().has_value());
    CHECK(o.validate()->message().rfind("`sentinel_master` must be 1 to 200 printable ASCII characters", 0) == 0);
    o.sentinel_master = "mymaster";
    CHECK_FALSE(o.validate().has_value());
    o.cluster_nodes = "127.0.0.1:7000";
    REQUIRE(o.validate().has_value());
    CHECK(o.validate()->message() == "`sentinels` must be empty when cluster_nodes is set (a cluster finds its "
                                     "primaries itself), got \"127.0.0.1:26379\"");
    o.cluster_nodes.clear();
    o.sentinels = "127.0.0.1";
    REQUIRE(o.validate().has_value());
    CHECK(o.validate()->message() == "`sentinels` must be empty or 1 to 64 host:port separated by commas (port in "
                                     "[1, 65535]), got \"127.0.0.1\"");
    o.sentinels.clear();
    REQUIRE(o.validate().has_value());
    CHECK(o.validate()->message() == "`sentinel_master` must be empty when sentinels is, got \"mymaster\"");
}

TEST_CASE("redis sentinel: the primary found (an unreachable sentinel skipped); a node whose ROLE is not master "
          "refused") {
    resil_test::redis_sentinel_group group;
    const auto down = resil_test::refused_port();
    rate_limiter limiter{sentinel_options("127.0.0.1:" + std::to_string(down) + "," + group.sentinels(), group.name())};
    CHECK(limiter.current_node().empty());
    REQUIRE(resil_test::redis_decides(limiter));
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));
    CHECK(limiter.metrics().map_refreshes >= 1);
    const auto exists = resil_test::redis_ask(group.primary_port(), {"EXISTS", limiter.redis_key()});
    REQUIRE(exists);
    CHECK(exists->integer == 1);

    // A sentinel that names the replica (as one that has not seen a
    // failover yet might): its ROLE says slave, so it is not used.
    const std::string replica = std::to_string(group.replica_port());
    resil_test::fake_redis liar([replica](const std::vector<std::string>& cmd) -> std::string {
        if (cmd.size() == 3 && cmd[0] == "SENTINEL") return "*2\r\n" + bulk("127.0.0.1") + bulk(replica);
        return "-ERR unknown command\r\n";
    });
    auto misled_options = sentinel_options("127.0.0.1:" + std::to_string(liar.port()), group.name());
    misled_options.key = "misled";  // a key of its own: nothing replicated to the replica
    rate_limiter misled{misled_options};
    const auto r = misled.try_acquire();
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(misled.last_error() == "no primary found from the sentinels: the primary sentinel 127.0.0.1:" +
                                     std::to_string(liar.port()) + " names, 127.0.0.1:" + replica +
                                     ", is not a master (yet)");
    CHECK(misled.metrics().store_failures == 1);
    const auto never = resil_test::redis_ask(group.replica_port(), {"EXISTS", misled.redis_key()});
    REQUIRE(never);
    CHECK(never->integer == 0);

    // A name the sentinels do not monitor.
    rate_limiter unknown{sentinel_options(group.sentinels(), "no-such-primary")};
    CHECK(unknown.try_acquire().status == rate_limit_status::unavailable);
    CHECK(unknown.last_error().find("knows no primary named \"no-such-primary\"") != std::string::npos);
}

TEST_CASE("redis sentinel failover: the primary killed mid-run; the bound kept, every call within its deadline, "
          "back on the promoted replica") {
    resil_test::redis_sentinel_group group(1000);
    auto o = sentinel_options(group.sentinels(), group.name());
    // A burst of 10 s of rate: the outage is shorter than a refill, so a
    // lost write would show.
    o.rate = 20;
    o.burst = 200;
    o.connect_timeout = 100ms;
    o.reply_timeout = 100ms;
    o.reconnect_backoff = 10ms;
    o.reconnect_backoff_max = 100ms;
    o.connections = 4;
    rate_limiter limiter{o};
    REQUIRE(resil_test::redis_decides(limiter));
    REQUIRE(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));

    const auto deadline = 300ms;
    using clock = std::chrono::steady_clock;
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> granted{0}, decisions{0}, longest_us{0};
    std::atomic<std::int64_t> killed_at_ns{0}, back_at_ns{0};
    const auto ns = [](clock::time_point t) { return t.time_since_epoch().count(); };
    const auto t0 = clock::now();
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; ++i) {
        runners.emplace_back([&] {
            while (!stop.load()) {
                const auto start = clock::now();
                const auto r = limiter.try_acquire(resil::deadline::after(deadline));
                const auto took = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start).count();
                decisions.fetch_add(1);
                if (r.granted()) granted.fetch_add(1);
                std::int64_t seen = longest_us.load();
                while (took > seen && !longest_us.compare_exchange_weak(seen, took)) {
                }
                const auto killed = killed_at_ns.load();
                if (killed != 0 && ns(start) > killed && r.source == decided_by::redis) {
                    std::int64_t none = 0;
                    back_at_ns.compare_exchange_strong(none, ns(clock::now()));
                }
                std::this_thread::sleep_for(1ms);
            }
        });
    }
    std::this_thread::sleep_for(1500ms);  // the burst spent: the bucket is empty at the kill
    killed_at_ns.store(ns(clock::now()));
    group.kill_primary();
    const auto killed = clock::now();
    // Stated: back within down-after-milliseconds + the sentinels' vote and
    // promotion (~1-2 s) + reconnect_backoff_max; on a loaded machine, up to 30 s.
    while (back_at_ns.load() == 0 && clock::now() - killed < 30s) std::this_thread::sleep_for(10ms);
    REQUIRE(back_at_ns.load() != 0);
    std::this_thread::sleep_for(1500ms);
    stop.store(true);
    for (auto& t : runners) t.join();
    const double t = std::chrono::duration<double>(clock::now() - t0).count();
    const double back_s = static_cast<double>(back_at_ns.load() - ns(killed)) / 1e9;

    const auto m = limiter.metrics();
    const double lambda = 1.0;  // replication lag allowed (loopback: ~1 ms)
    const double bound = o.rate * t + static_cast<double>(o.burst) + o.rate * lambda;
    std::cout << "sentinel failover: back on " << limiter.current_node() << " " << back_s << " s after the kill; "
              << granted.load() << " granted of " << decisions.load() << " decisions in " << t << " s (r·t + B = "
              << o.rate * t + static_cast<double>(o.burst) << "); longest call "
              << static_cast<double>(longest_us.load()) / 1000.0 << " ms; primary lookups " << m.map_refreshes
              << ", store failures " << m.store_failures << "\n";
    INFO("back after " << back_s << " s; granted " << granted.load() << " in " << t << " s; last error "
                       << limiter.last_error());
    CHECK(group.named_primary() == group.replica_port());
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.replica_port()));
    CHECK(static_cast<double>(granted.load()) <= bound);
    CHECK(std::chrono::microseconds{longest_us.load()} <= deadline + resil_test::slack);
    CHECK(back_s < 30.0);
    CHECK(m.store_failures > 0);
    CHECK(m.map_refreshes >= 2);
}

TEST_CASE("redis sentinel: a READONLY reply (the primary demoted) has the primary found again") {
    // A node that says it is master, then refuses writes as a demoted one does.
    resil_test::fake_redis demoted([](const std::vector<std::string>& cmd) -> std::string {
        if (!cmd.empty() && cmd[0] == "ROLE") return "*3\r\n" + bulk("master") + ":0\r\n*0\r\n";
        if (!cmd.empty() && cmd[0] == "SCRIPT") return bulk(std::string(40, 'a'));
        return "-READONLY You can't write against a read only replica.\r\n";
    });
    const std::string port = std::to_string(demoted.port());
    resil_test::fake_redis sentinel([port](const std::vector<std::string>& cmd) -> std::string {
        if (cmd.size() == 3 && cmd[0] == "SENTINEL") return "*2\r\n" + bulk("127.0.0.1") + bulk(port);
        return "-ERR unknown command\r\n";
    });
    auto o = sentinel_options("127.0.0.1:" + std::to_string(sentinel.port()), "mymaster");
    o.reconnect_backoff = 1ms;  // the lookups' spacing too
    rate_limiter limiter{o};
    CHECK(limiter.try_acquire().status == rate_limit_status::unavailable);
    CHECK(limiter.last_error() == "READONLY You can't write against a read only replica.");
    CHECK(limiter.metrics().map_refreshes == 1);
    std::this_thread::sleep_for(20ms);
    CHECK(limiter.try_acquire().status == rate_limit_status::unavailable);
    CHECK(limiter.metrics().map_refreshes == 2);  // asked the sentinels again
    int lookups = 0;
    for (const auto& cmd : sentinel.commands()) lookups += cmd.at(0) == "SENTINEL" ? 1 : 0;
    CHECK(lookups == 2);
}
