// resil/redis/detail/cluster_steps.hpp — the steps of a decision on a Redis
// Cluster or behind Sentinel that do not depend on how a round trip is made:
// what one hop came to, how long a map read may take, what a redirect leads
// to (the map updated after a MOVED, the bound on redirections), and the
// failure when no primary is known. Shared by the blocking path
// (blocking_path.hpp) and the Asio one (asio_cluster_path.hpp), so that both
// follow a cluster the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../clock.hpp"
#include "cluster.hpp"
#include "decision.hpp"

namespace resil::redis::detail {

/// One hop of a decision: to one server, or to one node of a cluster.
struct hop {
    bool probe = false;   ///< this decision probes a Redis left alone (health::may_ask)
    bool follow = false;  ///< a cluster: MOVED and ASK are redirects to follow, not errors
    bool asking = false;  ///< an ASK redirect: ASKING goes first, on the same connection
    // What it came to, besides its `asked`:
    bool redirected = false;  ///< MOVED or ASK (in `to`); nothing else recorded
    bool broken = false;      ///< the node could not be reached or timed out
    bool stale = false;       ///< CLUSTERDOWN, or READONLY (a primary demoted): the map may be old
    redirect to{};

    /// Before each hop: nothing seen yet.
    void restart() noexcept { redirected = broken = stale = false; }
    /// An error reply's text: a redirect to follow (`to` read), or whether
    /// it says the map may be old.
    void read_error(std::string_view text, const std::string& host) {
        if (follow && read_redirect(text, host, to)) {
            redirected = true;
            return;
        }
        stale = text.substr(0, 11) == "CLUSTERDOWN" || text.substr(0, 8) == "READONLY";
    }
};

/// Until when a map read (a cluster's CLUSTER SLOTS, or Sentinel's lookup
/// and ROLE) may run: one connect and reply, two behind Sentinel, and never
/// past the decision's end.
[[nodiscard]] inline time_point refresh_end(const limiter_core& core, const cluster_map& map, time_point until) {
    const auto& o = core.options();
    const auto now = steady_clock{}.now();
    return std::min(until, now + (map.sentinel() ? 2 : 1) * (duration{o.connect_timeout} + duration{o.reply_timeout}));
}

/// Behind Sentinel with no primary found: the decision fails (Redis down).
[[nodiscard]] inline asked no_primary(const limiter_core& core, const hop& h, const std::string& refresh_error) {
    core.health().mark_down(h.probe, refresh_error.empty() ? std::string("no primary found from the sentinels yet")
                                                           : "no primary found from the sentinels: " + refresh_error);
    return asked::failed;
}

/// A hop ended without a redirect: a node lost, CLUSTERDOWN or READONLY
/// has the map read again by the next decision that may talk to Redis.
inline void after_hop(cluster_map& map, const hop& h) noexcept {
    if (h.broken || h.stale) map.mark_stale();
}

/// A hop ended in a redirect, the `redirections`-th already followed: the
/// node to ask next (after a MOVED the slot is that node's in the map, and
/// a refresh asked for; after an ASK the map is left alone and h.asking
/// set), or null when the decision fails (max_redirections followed, or
/// too many nodes known).
[[nodiscard]] inline cluster_map::node* follow_redirect(const limiter_core& core, cluster_map& map,
                                                        std::uint16_t slot, hop& h, int redirections) {
    const auto& options = core.options();
    if (redirections == options.max_redirections) {
        limiter_core::bump(core.count().error_replies);
        core.health().remember("Redis Cluster redirected the key more than max_redirections (" +
                               std::to_string(options.max_redirections) + ") times; the last: " +
                               (h.to.ask ? "ASK " : "MOVED ") + std::to_string(h.to.slot) + " " + h.to.to.host + ":" +
                               std::to_string(h.to.to.port));
        map.mark_stale();
        return nullptr;
    }
    limiter_core::bump(core.count().redirections);
    cluster_map::node* next = map.intern(h.to.to);
    if (next == nullptr) {
        core.health().remember("Redis Cluster named more nodes than the limiter keeps (" +
                               std::to_string(cluster_map::max_nodes) + ")");
        return nullptr;
    }
    if (!h.to.ask) map.moved(slot, next);
    h.asking = h.to.ask;
    return next;
}

}  // namespace resil::redis::detail
