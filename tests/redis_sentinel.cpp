// resil::redis::rate_limiter behind Sentinel (options.sentinels,
// sentinel_master), on a real primary + replica + 3 sentinels: the primary
// found from the sentinels (one unreachable sentinel skipped), a node whose
// ROLE is not master refused, and the primary killed mid-run: the bound kept
// across the promotion, every call within its deadline, the limiter back on
// the promoted replica within the stated time.
#include <resil/redis.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/fake_redis.hpp"
#include "support/fault_server.hpp"
#include "support/redis_failover_run.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_sentinel_checks.hpp"
#include "support/redis_server.hpp"

using namespace std::chrono_literals;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using resil_test::sentinel_options;

namespace {

constexpr int connections = 2;

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
    rate_limiter limiter{
        sentinel_options("127.0.0.1:" + std::to_string(down) + "," + group.sentinels(), group.name(), connections)};
    CHECK(limiter.current_node().empty());
    REQUIRE(resil_test::redis_decides(limiter));
    resil_test::check_on_primary(group, limiter, limiter.metrics());

    // A sentinel that names the replica (as one that has not seen a
    // failover yet might): its ROLE says slave, so it is not used.
    resil_test::fake_redis liar(resil_test::sentinel_naming(group.replica_port()));
    auto misled_options = sentinel_options("127.0.0.1:" + std::to_string(liar.port()), group.name(), connections);
    misled_options.key = "misled";  // a key of its own: nothing replicated to the replica
    rate_limiter misled{misled_options};
    const auto r = misled.try_acquire();
    CHECK(r.status == rate_limit_status::unavailable);
    resil_test::check_misled(misled, liar.port(), group.replica_port());

    // A name the sentinels do not monitor.
    rate_limiter unknown{sentinel_options(group.sentinels(), "no-such-primary", connections)};
    CHECK(unknown.try_acquire().status == rate_limit_status::unavailable);
    CHECK(unknown.last_error().find("knows no primary named \"no-such-primary\"") != std::string::npos);
}

TEST_CASE("redis sentinel failover: the primary killed mid-run; the bound kept, every call within its deadline, "
          "back on the promoted replica") {
    resil_test::redis_sentinel_group group(1000);
    auto o = sentinel_options(group.sentinels(), group.name(), 4);
    resil_test::failover_timing(o);
    rate_limiter limiter{o};
    REQUIRE(resil_test::redis_decides(limiter));
    REQUIRE(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));

    const auto deadline = 300ms;
    resil_test::redis_failover_run run(limiter, deadline);
    std::this_thread::sleep_for(1500ms);  // the burst spent: the bucket is empty at the kill
    run.kill([&] { group.kill_primary(); });
    // Stated: back within down-after-milliseconds + the sentinels' vote and
    // promotion (~1-2 s) + reconnect_backoff_max; on a loaded machine, up to 30 s.
    REQUIRE(run.wait_back(30s));
    std::this_thread::sleep_for(1500ms);
    const double t = run.stop();

    const auto m = limiter.metrics();
    std::cout << "sentinel failover: " << resil_test::failover_summary(limiter, run, t, o)
              << "; primary lookups " << m.map_refreshes << ", store failures " << m.store_failures << "\n";
    INFO("back after " << run.back_after_s() << " s; granted " << run.granted() << " in " << t << " s; last error "
                       << limiter.last_error());
    CHECK(group.named_primary() == group.replica_port());
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.replica_port()));
    resil_test::check_failover(o, run, t, m, deadline);
}

TEST_CASE("redis sentinel: a READONLY reply (the primary demoted) has the primary found again") {
    // A node that says it is master, then refuses writes as a demoted one does.
    resil_test::fake_redis demoted(resil_test::demoted_primary());
    resil_test::fake_redis sentinel(resil_test::sentinel_naming(demoted.port()));
    auto o = sentinel_options("127.0.0.1:" + std::to_string(sentinel.port()), "mymaster", connections);
    o.reconnect_backoff = 1ms;  // the lookups' spacing too
    rate_limiter limiter{o};
    CHECK(limiter.try_acquire().status == rate_limit_status::unavailable);
    CHECK(limiter.last_error() == "READONLY You can't write against a read only replica.");
    CHECK(limiter.metrics().map_refreshes == 1);
    std::this_thread::sleep_for(20ms);
    CHECK(limiter.try_acquire().status == rate_limit_status::unavailable);
    CHECK(limiter.metrics().map_refreshes == 2);  // asked the sentinels again
    CHECK(sentinel.count({"SENTINEL"}) == 2);
}
