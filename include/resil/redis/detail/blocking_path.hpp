// resil/redis/detail/blocking_path.hpp — a decision's round trip on the
// calling thread: a pooled connection (connection.hpp), EVALSHA, a SCRIPT
// LOAD after NOSCRIPT, one reconnect when an idle connection turns out
// closed; every command bounded by the options' timeouts and the caller's
// deadline. The arguments, the answer's reading and what follows are
// decision.hpp's, shared with the asynchronous path.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "../../clock.hpp"
#include "../../detail/fork_epoch.hpp"
#include "connection.hpp"
#include "decision.hpp"
#include "script.hpp"

namespace resil::redis::detail {

// One EVALSHA (plus a SCRIPT LOAD after NOSCRIPT, plus one reconnect when
// an idle connection turns out closed). Every command waits until
// min(now + its timeout, end), recomputed before it: the decision ends
// by `until` (plus the slack of one poll() and the code around it).
inline asked ask_blocking(const limiter_core& core, pool& connections, const decision& d, script_answer& out) {
    const auto& options = core.options();
    const auto& health = core.health();
    const auto start = steady_clock{}.now();
    const time_point until = d.until;
    if (until <= start) return asked::no_time;
    bool probe = false;
    if (!health.may_ask(probe)) return asked::failed;
    // The whole decision, retries included, fits in one connect and two
    // replies (a reconnect, SCRIPT LOAD, EVALSHA), as well as in the
    // caller's deadline.
    const duration reply_cap = options.reply_timeout;
    const auto budget_end = start + duration{options.connect_timeout} + 2 * reply_cap;
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
            if (!conn->connect(options.host, options.port, cut ? left_ms : options.connect_timeout,
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

}  // namespace resil::redis::detail
