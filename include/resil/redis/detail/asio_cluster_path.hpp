// resil/redis/detail/asio_cluster_path.hpp — a decision's round trip on a
// Redis Cluster or behind Sentinel without blocking a thread: the blocking
// ask_cluster()'s steps (blocking_path.hpp, cluster_steps.hpp) as a
// coroutine, over one asynchronous connection per node (asio_connection.hpp),
// every one of them on one strand. The slot map (or Sentinel's primary) is
// the rate_limiter's own cluster_map, shared with its blocking callers: a
// map read by either serves both, and one refresh runs at a time.
//
// A map read is asynchronous too: CLUSTER SLOTS over the node's connection
// (opened if needed: connect, SCRIPT LOAD), or SENTINEL
// get-master-addr-by-name over a connection to the sentinel (no script) and
// ROLE over the primary's; each wait bounded by connect_timeout or
// reply_timeout and by refresh_end() (the decision's own end). Nothing here
// blocks the io_context's thread: hiredis connects without blocking to a
// numeric address (a host name is resolved by Asio's resolver); the map's
// lock (a node added) is held for a few hundred nanoseconds.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/strand.hpp>

#include "../../clock.hpp"
#include "../../detail/fork_epoch.hpp"
#include "asio_connection.hpp"
#include "asio_path.hpp"
#include "cluster.hpp"
#include "cluster_steps.hpp"
#include "decision.hpp"

namespace resil::redis::detail {

/// One async_rate_limiter's connections to a cluster's nodes (and to the
/// sentinels), made when first needed, all on one strand. On the strand
/// only, except executor().
class asio_cluster {
public:
    asio_cluster(const ::asio::any_io_executor& ex, cluster_map& map, std::chrono::milliseconds connect_timeout,
                 std::chrono::milliseconds reply_timeout)
        : strand_(::asio::make_strand(ex)),
          map_(map),
          connect_timeout_(connect_timeout),
          reply_timeout_(reply_timeout) {}
    asio_cluster(const asio_cluster&) = delete;
    asio_cluster& operator=(const asio_cluster&) = delete;
    ~asio_cluster() { close(); }

    [[nodiscard]] const asio_connection::executor_type& executor() const noexcept { return strand_; }
    [[nodiscard]] cluster_map& map() const noexcept { return map_; }

    /// The connection to `n` (made, closed, on first use).
    std::shared_ptr<asio_connection> to(const cluster_map::node* n) {
        auto& c = nodes_[n];
        if (!c)
            c = std::make_shared<asio_connection>(strand_, n->address.host, n->address.port, connect_timeout_,
                                                  reply_timeout_, true);
        return c;
    }
    /// The connection to sentinel `s` (no script).
    std::shared_ptr<asio_connection> to_sentinel(const node_address& s) {
        auto& c = sentinels_[s.host + ":" + std::to_string(s.port)];
        if (!c) c = std::make_shared<asio_connection>(strand_, s.host, s.port, connect_timeout_, reply_timeout_, false);
        return c;
    }

    /// Every connection closed (the replies awaited end as failed).
    void close() noexcept {
        for (auto& [n, c] : nodes_) c->close();
        for (auto& [s, c] : sentinels_) c->close();
    }

private:
    asio_connection::executor_type strand_;
    cluster_map& map_;
    std::chrono::milliseconds connect_timeout_;
    std::chrono::milliseconds reply_timeout_;
    std::unordered_map<const cluster_map::node*, std::shared_ptr<asio_connection>> nodes_;
    std::map<std::string, std::shared_ptr<asio_connection>> sentinels_;
};

// `conn` ready for a command by `end` (opened if closed; one opened before
// the latest failure, or in a forked parent, reopened), or false with `error`.
inline ::asio::awaitable<bool> ready_by(const limiter_core& core, asio_connection& conn, time_point end,
                                        std::string& error) {
    const auto epoch = core.health().epoch();
    const auto forks = resil::detail::fork_epoch.load(std::memory_order_relaxed);
    if (!conn.closed() && (conn.epoch != epoch || conn.fork != forks)) conn.close();
    if (conn.ready()) co_return true;
    if (conn.closed()) {
        limiter_core::bump(core.count().connects);
        if (!conn.open(error)) co_return false;
        conn.epoch = epoch;
        conn.fork = forks;
    }
    auto opened = co_await conn.wait_ready(end);
    if (opened.how == asio_connection::ended::done) co_return true;
    error = opened.how == asio_connection::ended::own_bound ? "no time left to read the cluster's slot map"
                                                            : std::move(opened.error);
    co_return false;
}

// One command over `conn` (ready_by() first), until `end` at most and one
// reply_timeout; `take(reply)` reads the reply (not an error reply: that
// is `error`, "host:port answered ...").
template <class Take>
::asio::awaitable<bool> ask_async_once(const limiter_core& core, asio_connection& conn, const node_address& a,
                                       int argc, const char** argv, const std::size_t* lens, time_point end,
                                       std::string& error, Take take) {
    if (end <= steady_clock{}.now()) {
        error = "no time left to read the cluster's slot map";
        co_return false;
    }
    if (!co_await ready_by(core, conn, end, error)) co_return false;
    bool ok = false;
    const auto bound = std::min(end, steady_clock{}.now() + duration{core.options().reply_timeout});
    auto r = co_await conn.command(argc, argv, lens, bound, [&](const redisReply* reply) { ok = take(reply); });
    if (r.how != asio_connection::ended::done) {
        error = a.host + ":" + std::to_string(a.port) + ": " + (r.error.empty() ? "no reply" : r.error);
        co_return false;
    }
    co_return ok;
}

// The map read again (cluster_map::refresh()'s steps, awaited): CLUSTER
// SLOTS from each node in turn, or Sentinel's primary found; never past `end`.
inline ::asio::awaitable<bool> refresh_async(const limiter_core& core, asio_cluster& links, time_point end,
                                             std::string& error) {
    cluster_map& map = links.map();
    const auto n = map.sources();
    for (std::size_t i = 0; i < n; ++i) {
        if (!map.sentinel()) {
            cluster_map::node* from = map.source_node(i);
            const char* argv[] = {"CLUSTER", "SLOTS"};
            const std::size_t lens[] = {7, 5};
            if (co_await ask_async_once(core, *links.to(from), from->address, 2, argv, lens, end, error,
                                        [&](const redisReply* r) { return map.take_slots(r, from->address.host, error); })) {
                map.answered_by(i);
                co_return true;
            }
            continue;
        }
        const node_address s = map.source_sentinel(i);
        node_address primary;
        const std::string& name = map.sentinel_master();
        const char* argv[] = {"SENTINEL", "get-master-addr-by-name", name.c_str()};
        const std::size_t lens[] = {8, 23, name.size()};
        if (!co_await ask_async_once(core, *links.to_sentinel(s), s, 3, argv, lens, end, error,
                                     [&](const redisReply* r) { return map.read_primary_address(r, s, primary, error); }))
            continue;
        cluster_map::node* p = map.intern(primary);
        if (p == nullptr) {
            error = "more than " + std::to_string(cluster_map::max_nodes) + " nodes named";
            co_return false;
        }
        const char* role_argv[] = {"ROLE"};
        const std::size_t role_lens[] = {4};
        if (!co_await ask_async_once(core, *links.to(p), primary, 1, role_argv, role_lens, end, error,
                                     [&](const redisReply* r) { return cluster_map::read_role(r, s, primary, error); }))
            continue;
        if (!map.set_primary(primary, error)) co_return false;
        map.answered_by(i);
        co_return true;
    }
    co_return false;
}

// A decision's round trip on a cluster or behind Sentinel: ask_cluster()
// (blocking_path.hpp) awaited. On the links' strand.
inline ::asio::awaitable<asked> ask_async_cluster(const limiter_core& core, std::shared_ptr<asio_cluster> links,
                                                  const decision& d, script_answer& out) {
    if (d.until <= steady_clock{}.now()) co_return asked::no_time;
    hop h;
    if (!core.health().may_ask(h.probe)) co_return asked::failed;
    cluster_map& map = links->map();
    h.follow = !map.sentinel();
    const std::uint16_t slot = key_slot(d.key);
    std::string refresh_error;
    if (map.begin_refresh(core.options().reconnect_backoff)) {
        // Ended however the coroutine ends (destroyed with its io_context too).
        struct ender {
            cluster_map& map;
            bool ok = false;
            ~ender() { map.end_refresh(ok); }
        } refreshing{map};
        refreshing.ok = co_await refresh_async(core, *links, refresh_end(core, map, d.until), refresh_error);
        if (refreshing.ok) limiter_core::bump(core.count().map_refreshes);
    }
    cluster_map::node* target = map.owner(slot);
    if (target == nullptr && map.sentinel()) co_return no_primary(core, h, refresh_error);
    if (target == nullptr) target = map.any();  // a seed: it redirects
    for (int redirections = 0;; ++redirections) {
        h.restart();
        const asked how = co_await ask_async_node(core, links->to(target), d, out, h);
        if (!h.redirected) {
            after_hop(map, h);
            co_return how;
        }
        target = follow_redirect(core, map, slot, h, redirections);
        if (target == nullptr) co_return asked::failed;
    }
}

}  // namespace resil::redis::detail
