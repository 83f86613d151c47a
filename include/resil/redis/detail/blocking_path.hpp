// resil/redis/detail/blocking_path.hpp — a decision's round trip on the
// calling thread: a pooled connection (connection.hpp), EVALSHA, a SCRIPT
// LOAD after NOSCRIPT, one reconnect when an idle connection turns out
// closed; every command bounded by the options' timeouts and the caller's
// deadline. On a Redis Cluster, the same to the key's node (cluster.hpp),
// redirects followed. The arguments, the answer's reading and what follows are
// decision.hpp's, shared with the asynchronous path.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "../../clock.hpp"
#include "../../detail/fork_epoch.hpp"
#include "cluster.hpp"
#include "cluster_steps.hpp"
#include "connection.hpp"
#include "decision.hpp"
#include "script.hpp"

namespace resil::redis::detail {

// One EVALSHA (plus a SCRIPT LOAD after NOSCRIPT, plus one reconnect when
// an idle connection turns out closed; after an ASK, ASKING first) to
// host:port over `connections`. Every command waits until min(now + its
// timeout, end), recomputed before it: the hop ends by `until` (plus the
// slack of one poll() and the code around it).
inline asked ask_node(const limiter_core& core, pool& connections, const std::string& host, int port,
                      const decision& d, script_answer& out, hop& h) {
    const auto& options = core.options();
    const auto& health = core.health();
    const auto start = steady_clock{}.now();
    const time_point until = d.until;
    if (until <= start) return asked::no_time;
    const bool probe = h.probe;
    // The whole hop, retries included, fits in one connect and two
    // replies (a reconnect, SCRIPT LOAD, EVALSHA; a third for ASKING), as
    // well as in the caller's deadline.
    const duration reply_cap = options.reply_timeout;
    const auto budget_end = start + duration{options.connect_timeout} + (h.asking ? 3 : 2) * reply_cap;
    const bool until_bounds = until <= budget_end;
    const auto end = until_bounds ? until : budget_end;
    // Every connection busy: wait for one (each round trip is bounded),
    // never past the deadline or one reply timeout.
    const auto give_up_at = std::min(end, start + reply_cap);
    auto conn = connections.try_checkout();
    const bool queued = !conn;  // `start` is stale once it waited
    if (queued) conn = connections.checkout(give_up_at);
    if (!conn) {
        if (give_up_at == until) return asked::no_time;
        health.remember("every connection to Redis stayed in use for reply_timeout");
        return asked::failed;
    }
    const auto epoch = health.epoch();
    const auto forks = resil::detail::fork_epoch.load(std::memory_order_relaxed);
    if (conn->open() && (conn.epoch() != epoch || conn.fork() != forks)) conn->close();

    script_arguments args(core.params(), core.constants(), d.key, d.n, d.want, d.look_us, d.now_override);
    // Out of time: the caller's (no failure of Redis's), or the budget's.
    const auto out_of_time = [&] {
        if (until_bounds) return asked::no_time;
        health.mark_down(probe, "Redis did not decide within connect_timeout + 2 × reply_timeout");
        return asked::failed;
    };
    // A failed command: a timeout the caller's deadline cut short, or
    // anything else (refused, closed, timed out in full, an error).
    const auto failed = [&](bool cut_short, std::string error) {
        h.broken = true;
        if (cut_short && conn->timed_out()) health.mark_cut_short(probe, std::move(error));
        else health.mark_down(probe, std::move(error));
        return asked::failed;
    };
    for (int tries = 0; tries < 3; ++tries) {
        auto now = tries == 0 && !queued ? start : steady_clock{}.now();
        if (end <= now) return out_of_time();
        std::string error;
        const bool was_open = conn->open();
        if (!was_open) {
            // hiredis waits for the connect in whole milliseconds, rounded up.
            const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - now);
            if (left_ms < std::chrono::milliseconds{1}) return out_of_time();
            const bool cut = until_bounds && left_ms < options.connect_timeout;
            limiter_core::bump(core.count().connects);
            if (!conn->connect(host, port, cut ? left_ms : options.connect_timeout,
                               options.reply_timeout, error))
                return failed(cut, std::move(error));
            conn.epoch() = epoch;
            conn.fork() = forks;
            now = steady_clock{}.now();
            if (end <= now) {
                conn->close();  // no SHA1 yet
                return out_of_time();
            }
            const bool load_cut = until_bounds && until < now + reply_cap;
            if (!conn->load_script(load_cut ? until : std::min(end, now + reply_cap), error))
                return failed(load_cut, std::move(error));
            now = steady_clock{}.now();
            if (end <= now) return out_of_time();
        }
        if (h.asking) {  // covers only the next command: sent again after a SCRIPT LOAD
            const char* asking_argv[] = {"ASKING"};
            const std::size_t asking_lens[] = {6};
            const bool asking_cut = until_bounds && until < now + reply_cap;
            auto ok = conn->command(1, asking_argv, asking_lens, asking_cut ? until : std::min(end, now + reply_cap),
                                    error);
            if (!ok) return failed(asking_cut, std::move(error));
            if (ok->type == REDIS_REPLY_ERROR) {
                limiter_core::bump(core.count().error_replies);
                health.remember("ASKING answered " + std::string(ok->str, ok->len));
                return asked::failed;
            }
            now = steady_clock{}.now();
            if (end <= now) return out_of_time();
        }
        const bool cut = until_bounds && until < now + reply_cap;
        args.use_sha(conn->sha().data());
        auto reply = conn->command(args.argc(), args.argv(), args.lens(), cut ? until : std::min(end, now + reply_cap),
                                   error);
        if (!reply) {
            // A connection that sat idle may have been closed by the
            // server: one fresh connection, then it counts as a failure.
            // (A timeout is not retried: Redis is slow, not gone.)
            // (Should the first have run after all, the quota is charged
            // twice: errs on the side of the limit.)
            if (was_open && tries == 0 && !conn->timed_out()) continue;
            return failed(cut, std::move(error));
        }
        if (reply->type == REDIS_REPLY_ERROR) {
            h.read_error(std::string_view(reply->str, reply->len), host);
            if (h.redirected) return asked::failed;
        }
        auto r = read_answer(reply.get(), core.params(), d.n, d.want, d.look_us);
        if (r.kind == reply_kind::noscript) {
            limiter_core::bump(core.count().script_loads);
            now = steady_clock{}.now();
            if (end <= now) return out_of_time();
            const bool load_cut = until_bounds && until < now + reply_cap;
            if (!conn->load_script(load_cut ? until : std::min(end, now + reply_cap), error))
                return failed(load_cut, std::move(error));
            continue;
        }
        return core.take_reply(r, out);
    }
    health.remember("the script could not be run after reloading it");
    return asked::failed;
}

// A decision's round trip to the one server of the options.
inline asked ask_blocking(const limiter_core& core, pool& connections, const decision& d, script_answer& out) {
    if (d.until <= steady_clock{}.now()) return asked::no_time;
    hop h;
    if (!core.health().may_ask(h.probe)) return asked::failed;
    return ask_node(core, connections, core.options().host, core.options().port, d, out, h);
}

// A decision's round trip on a Redis Cluster: the slot map refreshed first
// when it is stale (at most once per reconnect_backoff, one thread at a
// time, within connect_timeout + reply_timeout, twice that behind Sentinel,
// and the deadline), then the
// key's node, MOVED followed (the map's slot set at once, a refresh asked
// for) and ASK followed (ASKING and the command, to that node, once; the
// map left alone), at most max_redirections times. A node that cannot be
// reached, or CLUSTERDOWN, marks the map stale: the next decision that may
// talk to Redis reads it again (after a failover, the promoted node).
// Behind Sentinel the "map" is the primary the sentinels name (its ROLE
// checked): found again after a lost connection or a READONLY reply.
inline asked ask_cluster(const limiter_core& core, cluster_map& map, const decision& d, script_answer& out) {
    if (d.until <= steady_clock{}.now()) return asked::no_time;
    hop h;
    if (!core.health().may_ask(h.probe)) return asked::failed;
    h.follow = !map.sentinel();
    const std::uint16_t slot = key_slot(d.key);
    std::string refresh_error;
    if (map.begin_refresh(core.options().reconnect_backoff)) {
        const bool ok = map.refresh(refresh_end(core, map, d.until), core.options().connect_timeout,
                                    core.options().reply_timeout, refresh_error);
        map.end_refresh(ok);
        if (ok) limiter_core::bump(core.count().map_refreshes);
    }
    cluster_map::node* target = map.owner(slot);
    if (target == nullptr && map.sentinel()) return no_primary(core, h, refresh_error);
    if (target == nullptr) target = map.any();  // a seed: it redirects
    for (int redirections = 0;; ++redirections) {
        h.restart();
        const asked how = ask_node(core, target->pool, target->address.host, target->address.port, d, out, h);
        if (!h.redirected) {
            after_hop(map, h);
            return how;
        }
        target = follow_redirect(core, map, slot, h, redirections);
        if (target == nullptr) return asked::failed;
    }
}

}  // namespace resil::redis::detail
