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
#include "support/redis_sentinel.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::async_rate_limiter;
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
    return o;
}

std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }

bool decides(resil_test::asio_runner& runner, const async_rate_limiter& l) {
    const auto end = std::chrono::steady_clock::now() + 20s;
    for (;;) {
        if (runner.get(l.async_try_acquire()).source == decided_by::redis) return true;
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(2ms);
    }
}

}  // namespace

TEST_CASE("redis asio sentinel: the primary found (an unreachable sentinel skipped); a node whose ROLE is not "
          "master refused") {
    resil_test::redis_sentinel_group group;
    resil_test::asio_runner runner;
    const auto down = resil_test::refused_port();
    const rate_limiter limiter{
        sentinel_options("127.0.0.1:" + std::to_string(down) + "," + group.sentinels(), group.name())};
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    CHECK(limiter.current_node().empty());
    REQUIRE(decides(runner, quota));
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));
    CHECK(quota.metrics().map_refreshes >= 1);
    const auto exists = resil_test::redis_ask(group.primary_port(), {"EXISTS", limiter.redis_key()});
    REQUIRE(exists);
    CHECK(exists->integer == 1);

    // A sentinel that names the replica: its ROLE says slave, so it is not used.
    const std::string replica = std::to_string(group.replica_port());
    resil_test::fake_redis liar([replica](const std::vector<std::string>& cmd) -> std::string {
        if (cmd.size() == 3 && cmd[0] == "SENTINEL") return "*2\r\n" + bulk("127.0.0.1") + bulk(replica);
        return "-ERR unknown command\r\n";
    });
    auto misled_options = sentinel_options("127.0.0.1:" + std::to_string(liar.port()), group.name());
    misled_options.key = "misled";
    const rate_limiter misled{misled_options};
    const async_rate_limiter misled_quota{misled, runner.io().get_executor()};
    const auto r = runner.get(misled_quota.async_try_acquire());
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(misled.last_error() == "no primary found from the sentinels: the primary sentinel 127.0.0.1:" +
                                     std::to_string(liar.port()) + " names, 127.0.0.1:" + replica +
                                     ", is not a master (yet)");
    CHECK(misled.metrics().store_failures == 1);
    const auto never = resil_test::redis_ask(group.replica_port(), {"EXISTS", misled.redis_key()});
    REQUIRE(never);
    CHECK(never->integer == 0);

    // A name the sentinels do not monitor.
    const rate_limiter unknown{sentinel_options(group.sentinels(), "no-such-primary")};
    const async_rate_limiter unknown_quota{unknown, runner.io().get_executor()};
    CHECK(runner.get(unknown_quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(unknown.last_error().find("knows no primary named \"no-such-primary\"") != std::string::npos);
}

TEST_CASE("redis asio sentinel: a READONLY reply (the primary demoted) has the primary looked up again") {
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
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    CHECK(runner.get(quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(limiter.last_error() == "READONLY You can't write against a read only replica.");
    CHECK(quota.metrics().map_refreshes == 1);
    std::this_thread::sleep_for(20ms);
    CHECK(runner.get(quota.async_try_acquire()).status == rate_limit_status::unavailable);
    CHECK(quota.metrics().map_refreshes == 2);  // asked the sentinel again
    int lookups = 0;
    for (const auto& cmd : sentinel.commands()) lookups += cmd.at(0) == "SENTINEL" ? 1 : 0;
    CHECK(lookups == 2);
}

TEST_CASE("redis asio sentinel failover: the primary killed mid-run; the bound kept, every call within its "
          "deadline, back on the promoted replica") {
    resil_test::redis_sentinel_group group(1000);
    auto o = sentinel_options(group.sentinels(), group.name());
    o.rate = 20;
    o.burst = 200;  // 10 s of rate: a lost write would show
    o.connect_timeout = 100ms;
    o.reply_timeout = 100ms;
    o.reconnect_backoff = 10ms;
    o.reconnect_backoff_max = 100ms;
    const rate_limiter limiter{o};
    resil_test::asio_runner runner;
    const async_rate_limiter quota{limiter, runner.io().get_executor()};
    REQUIRE(decides(runner, quota));
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
    const double lambda = 1.0;  // replication lag allowed (loopback: ~1 ms)
    const double bound = o.rate * t + static_cast<double>(o.burst) + o.rate * lambda;
    std::cout << "asio sentinel failover: back on " << limiter.current_node() << " " << run.back_after_s()
              << " s after the kill; " << run.granted() << " granted of " << run.decisions() << " decisions in " << t
              << " s (r·t + B = " << o.rate * t + static_cast<double>(o.burst) << "); longest call "
              << static_cast<double>(run.longest_call().count()) / 1000.0 << " ms; longest stall of the loop "
              << static_cast<double>(runner.longest_stall().count()) / 1000.0 << " ms; primary lookups "
              << m.map_refreshes << ", store failures " << m.store_failures << "\n";
    INFO("back after " << run.back_after_s() << " s; granted " << run.granted() << " in " << t << " s; last error "
                       << limiter.last_error());
    CHECK(group.named_primary() == group.replica_port());
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.replica_port()));
    CHECK(static_cast<double>(run.granted()) <= bound);
    CHECK(run.longest_call() <= deadline + resil_test::slack);
    CHECK(runner.longest_stall() <= resil_test::slack);
    CHECK(run.back_after_s() < 30.0);
    CHECK(m.store_failures > 0);
    CHECK(m.map_refreshes >= 2);
}
