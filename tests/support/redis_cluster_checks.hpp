// tests/support/redis_cluster_checks.hpp — the Redis Cluster tests' shared
// parts, blocking and on Asio alike: scripted nodes that redirect (a seed
// with no slot map whose every script is MOVED to a real server; a node
// that redirects to itself forever), and one slot moved from its primary to
// another while a limiter runs, with the checks that it follows ASK while
// the slot migrates and MOVED once it has moved.
//
//   resil_test::fake_redis seed(resil_test::moved_to(owner.port()));
//   auto move = resil_test::pick_slot_move(cluster, limiter.redis_key());
//   resil_test::begin_slot_move(move, limiter, [&] { return limiter.metrics().redirections; });
//   resil_test::finish_slot_move(cluster, move, limiter);
#pragma once

#include <resil/redis.hpp>
#include <resil/redis/detail/cluster.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../catch.hpp"
#include "fake_redis.hpp"
#include "redis_cluster.hpp"

namespace resil_test {

/// A node that owns nothing: no slot map (CLUSTER SLOTS fails), and every
/// script MOVED to 127.0.0.1:`owner_port` (slot 1234).
[[nodiscard]] inline fake_redis::responder moved_to(std::uint16_t owner_port) {
    const std::string moved = "-MOVED 1234 127.0.0.1:" + std::to_string(owner_port) + "\r\n";
    return [moved](const std::vector<std::string>& cmd) -> std::string {
        if (!cmd.empty() && cmd[0] == "SCRIPT") return "$40\r\n" + std::string(40, 'a') + "\r\n";
        if (!cmd.empty() && cmd[0] == "CLUSTER") return "-ERR This instance has cluster support disabled\r\n";
        return moved;
    };
}

/// A node with no slot map that answers every script MOVED (slot 42) to
/// 127.0.0.1:`port`, its own port once known: a redirect loop.
[[nodiscard]] inline fake_redis::responder moved_to_itself(const int& port) {
    return [&port](const std::vector<std::string>& cmd) -> std::string {
        if (!cmd.empty() && cmd[0] == "SCRIPT") return "$40\r\n" + std::string(40, 'a') + "\r\n";
        if (!cmd.empty() && cmd[0] == "CLUSTER") return "-ERR no map here\r\n";
        return "-MOVED 42 127.0.0.1:" + std::to_string(port) + "\r\n";  // to itself, again and again
    };
}

/// `limiter` (`m` its metrics), asked once of a node that redirects to
/// itself, gave up after `max_redirections` redirections and failed closed,
/// saying why.
inline void check_redirect_loop(const resil::redis::rate_limiter& limiter, const resil::redis::rate_limiter_metrics& m,
                                int port, int max_redirections) {
    CHECK(m.redirections == static_cast<std::uint64_t>(max_redirections));
    CHECK(m.store_failures == 1);
    CHECK(m.fail_closed_rejected == 1);
    CHECK(limiter.last_error() == "Redis Cluster redirected the key more than max_redirections (" +
                                      std::to_string(max_redirections) + ") times; the last: MOVED 42 127.0.0.1:" +
                                      std::to_string(port));
}

/// One slot to move: the slot of a key, its primary and another primary.
struct slot_move {
    int slot = 0;
    std::uint16_t src = 0;
    std::uint16_t dst = 0;
    std::string src_id;  // filled by begin_slot_move
    std::string dst_id;
};

/// The slot of `key`, its owner and another primary (both REQUIREd).
[[nodiscard]] inline slot_move pick_slot_move(const redis_cluster& cluster, const std::string& key) {
    slot_move m;
    m.slot = resil::redis::detail::key_slot(key);
    m.src = cluster.owner_port(m.slot);
    for (const auto p : cluster.primaries())
        if (p != m.src) m.dst = p;
    REQUIRE(m.src != 0);
    REQUIRE(m.dst != 0);
    return m;
}

/// Starts moving the slot of `limiter`'s key (the target imports, the
/// source migrates, the key moves) while the limiter runs, and checks that
/// it follows ASK: `redirections()` (its metrics' redirections) up by 3
/// within 10 s, its map unchanged, the source sending the key's clients to
/// the target.
template <class Redirections>
void begin_slot_move(slot_move& m, const resil::redis::rate_limiter& limiter, Redirections redirections) {
    m.src_id = redis_cluster::id_of(m.src);
    m.dst_id = redis_cluster::id_of(m.dst);
    REQUIRE(m.src_id.size() == 40);
    REQUIRE(m.dst_id.size() == 40);
    const auto s = std::to_string(m.slot);
    REQUIRE(reply_text(redis_ask(m.dst, {"CLUSTER", "SETSLOT", s, "IMPORTING", m.src_id})) == "OK");
    REQUIRE(reply_text(redis_ask(m.src, {"CLUSTER", "SETSLOT", s, "MIGRATING", m.dst_id})) == "OK");
    const auto asks_before = redirections();
    // NOKEY: the key had expired (a full quota is no key; a loaded machine
    // may have paused the run that long): the source asks all the same.
    const std::string migrated = reply_text(redis_ask(
        m.src, {"MIGRATE", "127.0.0.1", std::to_string(m.dst), "", "0", "5000", "KEYS", limiter.redis_key()}));
    REQUIRE((migrated == "OK" || migrated == "NOKEY"));
    // While the slot migrates, the source answers ASK for the key it no
    // longer holds: followed each time (ASKING + the script on the target),
    // the map unchanged.
    const auto ask_phase_end = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (redirections() < asks_before + 3 && std::chrono::steady_clock::now() < ask_phase_end)
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    CHECK(redirections() >= asks_before + 3);
    CHECK(limiter.current_node() == redis_cluster::address(m.src));  // ASK changes no map
    // The source no longer holds the key: it sends its clients to the target.
    CHECK(reply_text(redis_ask(m.src, {"EXISTS", limiter.redis_key()})).rfind("ASK ", 0) == 0);
}

/// Finishes the move begun by begin_slot_move (the slot the target's, on
/// every primary) and checks that `limiter` follows the source's MOVED:
/// its map names the target within 10 s.
inline void finish_slot_move(const redis_cluster& cluster, const slot_move& m,
                             const resil::redis::rate_limiter& limiter) {
    const auto s = std::to_string(m.slot);
    for (const auto p : cluster.primaries())
        REQUIRE(reply_text(redis_ask(p, {"CLUSTER", "SETSLOT", s, "NODE", m.dst_id})) == "OK");
    const auto moved_end = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (limiter.current_node() != redis_cluster::address(m.dst) && std::chrono::steady_clock::now() < moved_end)
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    CHECK(limiter.current_node() == redis_cluster::address(m.dst));
}

}  // namespace resil_test
