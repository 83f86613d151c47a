// resil::redis::async_rate_limiter behind Sentinel (the rate_limiter's
// sentinels, sentinel_master), on a real primary + replica + 3 sentinels:
// the primary found from the sentinels (one unreachable sentinel skipped),
// a node whose ROLE is not master refused, a READONLY reply has the primary
// looked up again, and the primary killed mid-run: the bound kept across the
// promotion, every call within its deadline, the io_context's thread never
// held up, the limiter back on the promoted replica within the stated time.
#include <resil/redis/asio_rate_limiter.hpp>

#include <resil/redis.hpp>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/asio_runner.hpp"
#include "support/fake_redis.hpp"
#include "support/fault_server.hpp"
#include "support/redis_asio_run.hpp"
#include "support/redis_limiter_options.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_sentinel_checks.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::async_rate_limiter;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil_test::sentinel_options;

TEST_CASE("redis asio sentinel: the primary found (an unreachable sentinel skipped); a node whose ROLE is not "
          "master refused") {
    resil_test::redis_sentinel_group group;
    resil_test::asio_runner runner;
    const auto down = resil_test::refused_port();
    const rate_limiter limiter{
        sentinel_options("127.0.0.1:" + std::to_string(down) + "," + group.sentinels(), group.name())};
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    CHECK(limiter.current_node().empty());
    REQUIRE(resil_test::redis_decides_async(runner, quota));
    resil_test::check_on_primary(group, limiter, quota.metrics());

    // A sentinel that names the replica: its ROLE says slave, so it is not used.
    resil_test::fake_redis liar(resil_test::sentinel_naming(group.replica_port()));
    auto misled_options = sentinel_options("127.0.0.1:" + std::to_string(liar.port()), group.name());
    misled_options.key = "misled";
    const rate_limiter misled{misled_options};
    const async_rate_limiter misled_quota{misled, runner.io().get_executor()};
    const auto r = runner.get(misled_quota.async_try_acquire());
    CHECK(r.status == rate_limit_status::unavailable);
    resil_test::check_misled(misled, liar.port(), group.replica_port());

    // A name the sentinels do not monitor.
    const rate_limiter unknown{sentinel_options(group.sentinels(), "no-such-primary")};
    const async_rate_limiter unknown_quota{unknown, runner.io().get_executor()};
    CHECK(runner.get(unknown_quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(unknown.last_error().find("knows no primary named \"no-such-primary\"") != std::string::npos);
}

TEST_CASE("redis asio sentinel: a READONLY reply (the primary demoted) has the primary looked up again") {
    resil_test::fake_redis demoted(resil_test::demoted_primary());
    resil_test::fake_redis sentinel(resil_test::sentinel_naming(demoted.port()));
    auto o = sentinel_options("127.0.0.1:" + std::to_string(sentinel.port()), "mymaster");
    o.reconnect_backoff = 1ms;  // the lookups' spacing too
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    CHECK(runner.get(quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(limiter.last_error() == "READONLY You can't write against a read only replica.");
    CHECK(quota.metrics().map_refreshes == 1);
    std::this_thread::sleep_for(20ms);
    CHECK(runner.get(quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(quota.metrics().map_refreshes == 2);  // asked the sentinel again
    CHECK(sentinel.count({"SENTINEL"}) == 2);
}

TEST_CASE("redis asio sentinel failover: the primary killed mid-run; the bound kept, every call within its "
          "deadline, back on the promoted replica") {
    resil_test::redis_sentinel_group group(1000);
    auto o = sentinel_options(group.sentinels(), group.name());
    resil_test::failover_timing(o);
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(resil_test::redis_decides_async(runner, quota));
    REQUIRE(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));

    const auto deadline = 300ms;
    runner.reset_stall();
    resil_test::redis_asio_run run(runner, quota, deadline);
    std::this_thread::sleep_for(1500ms);  // the burst spent: the bucket is empty at the kill
    run.kill_now();
    group.kill_primary();
    // Stated (docs): back within down-after-milliseconds + the vote and
    // promotion (~1-2 s) + reconnect_backoff_max + one lookup; on a loaded machine, up to 30 s.
    REQUIRE(run.wait_back(30s));
    std::this_thread::sleep_for(1500ms);
    const double t = run.stop();
    REQUIRE(run.ended());

    const auto m = quota.metrics();
    std::cout << "asio sentinel failover: " << resil_test::failover_summary(limiter, run, t, o)
              << "; longest stall of the loop " << static_cast<double>(runner.longest_stall().count()) / 1000.0
              << " ms; primary lookups " << m.map_refreshes << ", store failures " << m.store_failures << "\n";
    INFO("back after " << run.back_after_s() << " s; granted " << run.granted() << " in " << t << " s; last error "
                       << limiter.last_error());
    CHECK(group.named_primary() == group.replica_port());
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.replica_port()));
    resil_test::check_failover(o, run, t, m, deadline);
    CHECK(runner.longest_stall() <= resil_test::slack);
}
