// resil/redis/detail/asio_path.hpp — a decision's round trip without
// blocking a thread: a coroutine on the connection's strand
// (asio_connection.hpp), the blocking path's steps (blocking_path.hpp) with
// waits instead of blocking reads: open the connection if needed (connect,
// SCRIPT LOAD), EVALSHA, EVAL after NOSCRIPT (the script's text: it runs and
// is cached again in one round trip), one reopening when the connection was
// lost while idle; every wait bounded by the options' timeouts and the
// caller's deadline, with the same budget (connect_timeout + 2 ×
// reply_timeout) and the same verdicts on Redis's health. The arguments, the
// answer's reading and what follows are decision.hpp's.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <asio/awaitable.hpp>

#include "../../clock.hpp"
#include "../../detail/fork_epoch.hpp"
#include "asio_connection.hpp"
#include "cluster_steps.hpp"
#include "decision.hpp"
#include "script.hpp"

namespace resil::redis::detail {

// One hop of a decision over `conn` (to the one server, or to one node of
// a cluster: `h` says which and records what it came to, as the blocking
// ask_node() does). On the connection's strand.
inline ::asio::awaitable<asked> ask_async_node(const limiter_core& core, std::shared_ptr<asio_connection> conn,
                                               const decision& d, script_answer& out, hop& h) {
    using ended = asio_connection::ended;
    const auto& options = core.options();
    const auto& health = core.health();
    const auto start = steady_clock{}.now();
    const time_point until = d.until;
    if (until <= start) co_return asked::no_time;
    const bool probe = h.probe;
    // The whole hop, retries included, fits in one connect and two
    // replies, as well as in the caller's deadline. (ASKING is pipelined
    // with the command: no reply of its own to wait for.)
    const duration reply_cap = options.reply_timeout;
    const auto budget_end = start + duration{options.connect_timeout} + 2 * reply_cap;
    const bool until_bounds = until <= budget_end;
    const auto end = until_bounds ? until : budget_end;
    const auto epoch = health.epoch();
    const auto forks = resil::detail::fork_epoch.load(std::memory_order_relaxed);
    // Opened before the latest failure (its peer may be gone), or by the
    // parent of a forked child: closed first.
    if (!conn->closed() && (conn->epoch != epoch || conn->fork != forks)) conn->close();

    script_arguments args(core.params(), core.constants(), d.key, d.n, d.want, d.look_us, d.now_override);
    // Out of time: the caller's (no failure of Redis's), or the budget's.
    const auto out_of_time = [&] {
        if (until_bounds) return asked::no_time;
        health.mark_down(probe, "Redis did not decide within connect_timeout + 2 × reply_timeout");
        return asked::failed;
    };
    // A failed wait: a timeout the caller's deadline cut short, or anything
    // else (refused, closed, timed out in full, an error).
    const auto failed = [&](bool cut_short, std::string error) {
        h.broken = true;
        if (cut_short) health.mark_cut_short(probe, std::move(error));
        else health.mark_down(probe, std::move(error));
        return asked::failed;
    };
    bool eval = false;
    for (int tries = 0; tries < 3; ++tries) {
        auto now = tries == 0 ? start : steady_clock{}.now();
        if (end <= now) co_return out_of_time();
        const bool was_ready = conn->ready();
        if (!was_ready) {
            if (conn->closed()) {
                std::string error;
                limiter_core::bump(core.count().connects);
                if (!conn->open(error)) co_return failed(false, std::move(error));
                conn->epoch = epoch;
                conn->fork = forks;
            }
            // The opening is bounded by the options; this decision waits
            // for it until its own end at most.
            auto opened = co_await conn->wait_ready(end);
            if (opened.how == ended::own_bound) {
                if (!until_bounds) co_return out_of_time();
                co_return failed(true, "no answer from Redis (connect, SCRIPT LOAD) before the caller's deadline");
            }
            if (opened.how != ended::done) co_return failed(false, std::move(opened.error));
            now = steady_clock{}.now();
            if (end <= now) co_return out_of_time();
        }
        const bool cut = until_bounds && until < now + reply_cap;
        if (eval)
            args.use_text();
        else
            args.use_sha(conn->sha());
        reading read;
        auto replied = co_await conn->command(
            args.argc(), args.argv(), args.lens(), cut ? until : std::min(end, now + reply_cap),
            [&](const redisReply* reply) {
                if (reply->type == REDIS_REPLY_ERROR) {
                    h.read_error(std::string_view(reply->str, reply->len), conn->host());
                    if (h.redirected) return;
                }
                read = read_answer(reply, core.params(), d.n, d.want, d.look_us);
            },
            h.asking);
        if (replied.how != ended::done) {
            // A connection that sat idle may have been closed by the
            // server: one fresh connection, then it counts as a failure.
            // (A timeout is not retried: Redis is slow, not gone.)
            if (replied.how == ended::failed && was_ready && tries == 0) continue;
            co_return failed(cut && replied.how == ended::own_bound, std::move(replied.error));
        }
        if (h.redirected) co_return asked::failed;
        if (read.kind == reply_kind::noscript) {
            limiter_core::bump(core.count().script_loads);
            eval = true;
            continue;
        }
        co_return core.take_reply(read, out);
    }
    health.remember("the script could not be run after reloading it");
    co_return asked::failed;
}

// A decision's round trip to the one server of the options.
inline ::asio::awaitable<asked> ask_async(const limiter_core& core, std::shared_ptr<asio_connection> conn,
                                          const decision& d, script_answer& out) {
    if (d.until <= steady_clock{}.now()) co_return asked::no_time;
    hop h;
    if (!core.health().may_ask(h.probe)) co_return asked::failed;
    co_return co_await ask_async_node(core, std::move(conn), d, out, h);
}

}  // namespace resil::redis::detail
