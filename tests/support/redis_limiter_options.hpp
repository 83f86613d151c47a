// tests/support/redis_limiter_options.hpp — the Redis limiter's options for
// the Cluster and Sentinel tests, blocking and on Asio alike: a cluster's or
// a Sentinel group's limiter failing closed (every grant Redis's), and the
// short timeouts and backoffs of a failover run.
//
//   auto o = resil_test::cluster_options(cluster.seeds());
//   auto s = resil_test::sentinel_options(group.sentinels(), group.name());
//   resil_test::failover_timing(s);
#pragma once

#include <resil/redis.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace resil_test {

/// Rate 100/s, burst 10, key "clustered" on the nodes `nodes`, failing
/// closed, 2 connections; 2 s timeouts (a loaded machine may not run a
/// node for a while).
[[nodiscard]] inline resil::redis::rate_limiter_options cluster_options(std::string nodes) {
    resil::redis::rate_limiter_options o;
    o.rate = 100;
    o.burst = 10;
    o.key = "clustered";
    o.cluster_nodes = std::move(nodes);
    o.on_failure = resil::redis::failure_policy::fail_closed;
    o.connect_timeout = std::chrono::seconds{2};
    o.reply_timeout = std::chrono::seconds{2};
    o.connections = 2;
    return o;
}

/// Rate 100/s, burst 10, key "watched" behind the sentinels `sentinels`
/// watching the primary `name`, failing closed, 1 s timeouts, `connections`
/// connections (the options' default unless given).
[[nodiscard]] inline resil::redis::rate_limiter_options sentinel_options(
    std::string sentinels, std::string name, int connections = resil::redis::rate_limiter_options{}.connections) {
    resil::redis::rate_limiter_options o;
    o.rate = 100;
    o.burst = 10;
    o.key = "watched";
    o.sentinels = std::move(sentinels);
    o.sentinel_master = std::move(name);
    o.on_failure = resil::redis::failure_policy::fail_closed;
    o.connect_timeout = std::chrono::seconds{1};
    o.reply_timeout = std::chrono::seconds{1};
    o.connections = connections;
    return o;
}

/// A failover run's quota and timing: rate 20/s with a burst of 200 (10 s
/// of rate: the outage, detection and promotion, is shorter than a refill,
/// so a lost write would show), 100 ms timeouts, reconnects 10 to 100 ms
/// apart.
inline void failover_timing(resil::redis::rate_limiter_options& o) {
    o.rate = 20;
    o.burst = 200;
    o.connect_timeout = std::chrono::milliseconds{100};
    o.reply_timeout = std::chrono::milliseconds{100};
    o.reconnect_backoff = std::chrono::milliseconds{10};
    o.reconnect_backoff_max = std::chrono::milliseconds{100};
}

/// A cluster's limiter for a failover run: key "failover" on the nodes
/// `nodes`, failing closed (every grant Redis's), with failover_timing.
[[nodiscard]] inline resil::redis::rate_limiter_options cluster_failover_options(std::string nodes) {
    resil::redis::rate_limiter_options o;
    o.key = "failover";
    o.cluster_nodes = std::move(nodes);
    o.on_failure = resil::redis::failure_policy::fail_closed;
    failover_timing(o);
    return o;
}

}  // namespace resil_test
