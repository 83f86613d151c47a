// tests/support/redis_sentinel_checks.hpp — the Sentinel tests' shared
// parts, blocking and on Asio alike: scripted sentinels and nodes (a
// sentinel that names a given port as the primary; a node that says it is
// master, then refuses writes as a demoted one does), and the checks that a
// limiter found the group's primary or was misled by a sentinel naming the
// replica.
//
//   resil_test::fake_redis liar(resil_test::sentinel_naming(replica_port));
//   resil_test::check_misled(misled, liar.port(), group.replica_port());
#pragma once

#include <resil/redis.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "../catch.hpp"
#include "fake_redis.hpp"
#include "redis_cluster.hpp"  // redis_ask
#include "redis_sentinel.hpp"

namespace resil_test {

/// A sentinel that names 127.0.0.1:`port` as the primary of any name
/// (SENTINEL get-master-addr-by-name) and knows no other command.
[[nodiscard]] inline fake_redis::responder sentinel_naming(std::uint16_t port) {
    const std::string p = std::to_string(port);
    return [p](const std::vector<std::string>& cmd) -> std::string {
        if (cmd.size() == 3 && cmd[0] == "SENTINEL") return "*2\r\n" + bulk("127.0.0.1") + bulk(p);
        return "-ERR unknown command\r\n";
    };
}

/// A node whose ROLE says master but which refuses every script as a
/// demoted primary does (READONLY).
[[nodiscard]] inline fake_redis::responder demoted_primary() {
    return [](const std::vector<std::string>& cmd) -> std::string {
        if (!cmd.empty() && cmd[0] == "ROLE") return "*3\r\n" + bulk("master") + ":0\r\n*0\r\n";
        if (!cmd.empty() && cmd[0] == "SCRIPT") return bulk(std::string(40, 'a'));
        return "-READONLY You can't write against a read only replica.\r\n";
    };
}

/// `limiter` (`m` its metrics) found the group's primary from the
/// sentinels and its key is stored there.
inline void check_on_primary(const redis_sentinel_group& group, const resil::redis::rate_limiter& limiter,
                             const resil::redis::rate_limiter_metrics& m) {
    CHECK(limiter.current_node() == "127.0.0.1:" + std::to_string(group.primary_port()));
    CHECK(m.map_refreshes >= 1);
    const auto exists = redis_ask(group.primary_port(), {"EXISTS", limiter.redis_key()});
    REQUIRE(exists);
    CHECK(exists->integer == 1);
}

/// `misled`, asked once, was told by the sentinel on `liar_port` that the
/// replica on `replica_port` is the primary: it refused it (its ROLE is not
/// master), one store failure, nothing written to the replica.
inline void check_misled(const resil::redis::rate_limiter& misled, std::uint16_t liar_port,
                         std::uint16_t replica_port) {
    CHECK(misled.last_error() == "no primary found from the sentinels: the primary sentinel 127.0.0.1:" +
                                     std::to_string(liar_port) + " names, 127.0.0.1:" +
                                     std::to_string(replica_port) + ", is not a master (yet)");
    CHECK(misled.metrics().store_failures == 1);
    const auto never = redis_ask(replica_port, {"EXISTS", misled.redis_key()});
    REQUIRE(never);
    CHECK(never->integer == 0);
}

}  // namespace resil_test
