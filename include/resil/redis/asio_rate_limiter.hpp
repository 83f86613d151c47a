// resil/redis/asio_rate_limiter.hpp — the Redis rate limiter on Asio: its
// decisions awaited, never blocking a thread (targets resil::redis and
// resil::asio).
//
//   resil::redis::rate_limiter quota{{.rate = 50, .burst = 100, .key = "llm-api"}};
//   resil::redis::async_rate_limiter async_quota{quota, io.get_executor()};
//
//   if (auto r = co_await async_quota.async_try_acquire(); !r) co_return reply(429, r.retry_after);
//   if (co_await async_quota.async_acquire(resil::deadline::after(2s), tokens)) co_await call_llm();
//   auto pipe = resil::asio::pipeline(resil::deadline_policy{250ms}, std::ref(async_quota));
//
// An async_rate_limiter decides for a rate_limiter: the same quota, lease,
// fallback bucket, backoff and counters, so blocking and asynchronous
// callers of one limiter share them; and the same decisions, by the same
// code (redis/detail/decision.hpp), with the same results and, in
// resil::asio::pipeline, the same events as the limiter in
// resil::pipeline. Only the round trip differs: hiredis's asynchronous
// context on a connection of its own, driven by Asio on a strand of the
// executor given (redis/detail/asio_adapter.hpp), whose commands are
// pipelined; timers bound the connect, each reply and the caller's
// deadline as the blocking path's waits do; a reservation's wait, or the
// fallback bucket's, is a timer too (resil/asio/waiter.hpp).
//
// On a Redis Cluster or behind Sentinel (the limiter's cluster_nodes or
// sentinels), the blocking limiter's way of following them, awaited
// (redis/detail/asio_cluster_path.hpp): the same slot map, redirects and
// bounds, a connection per node, map reads without blocking.
//
// Thread-safe: any coroutine, on any executor, may await it. The
// rate_limiter must outlive it; destroy it when no decision is in flight.
#pragma once

#include "../asio/config.hpp"  // first: before any Asio header

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <stop_token>
#include <string_view>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

#include "../asio/pipeline.hpp"  // the limiter as one of its policies (its steps below)
#include "../asio/policies.hpp"
#include "../asio/waiter.hpp"
#include "../clock.hpp"
#include "../deadline.hpp"
#include "../policy_steps.hpp"
#include "detail/asio_cluster_path.hpp"
#include "detail/asio_connection.hpp"
#include "detail/asio_path.hpp"
#include "detail/decision.hpp"
#include "rate_limiter.hpp"
#include "result.hpp"

namespace resil::redis {

namespace detail {
struct async_rate_limiter_access;
}

/// The Redis rate limiter on Asio: its decisions awaited, never blocking a
/// thread. Decides for a rate_limiter (the same quota, lease, fallback bucket
/// and counts, shared with its blocking callers), which must outlive it.
class async_rate_limiter {
public:
    /// Reads its own clock, the steady clock (resil/clock.hpp, time_source):
    /// not a parameter, as a token bucket's is, because the quota lives in
    /// Redis, which keeps real time; a manual clock could not move it.
    using clock_type = steady_clock;
    /// Reads its own clock, the steady clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;
    /// The clock it reads: the steady clock.
    [[nodiscard]] const clock_type& clock() const noexcept { return clock_; }

    /// Decides for `limiter` without blocking: its round trips go over one
    /// connection of its own (opened by the first decision; `connections`
    /// is the blocking pool's), on a strand of `ex`; on a Redis Cluster or
    /// behind Sentinel, one connection per node (and per sentinel), all on
    /// that strand, and the limiter's own slot map (or primary), shared with
    /// its blocking callers. `limiter` must outlive it.
    async_rate_limiter(const rate_limiter& limiter, const ::asio::any_io_executor& ex)
        : limiter_(&limiter),
          conn_(limiter.cluster_ ? nullptr
                                 : std::make_shared<detail::asio_connection>(
                                       ex, core().options().host, core().options().port,
                                       core().options().connect_timeout, core().options().reply_timeout)),
          cluster_(limiter.cluster_ ? std::make_shared<detail::asio_cluster>(ex, *limiter.cluster_,
                                                                             core().options().connect_timeout,
                                                                             core().options().reply_timeout)
                                    : nullptr) {}

    async_rate_limiter(const async_rate_limiter&) = delete;
    async_rate_limiter& operator=(const async_rate_limiter&) = delete;

    /// Closes the connection on its strand (hiredis's context is not
    /// thread-safe); when the io_context no longer runs, once it is destroyed.
    ~async_rate_limiter() {
        try {
            const auto ex = executor();
            if (conn_)
                ::asio::post(ex, [c = std::move(conn_)] { c->close(); });
            else
                ::asio::post(ex, [c = std::move(cluster_)] { c->close(); });
        } catch (...) {  // no memory to post: closed here, as the last owner
        }
    }

    /// rate_limiter::try_acquire, awaited: takes `n` permits now if the
    /// shared quota holds them (one round trip, none when a lease covers
    /// it), within the timeouts and `bound`. A negative n throws
    /// std::invalid_argument when awaited.
    [[nodiscard]] ::asio::awaitable<rate_limit_result> async_try_acquire(std::int64_t n = 1) const {
        return decide(std::nullopt, n, time_point::max(), false, {});
    }
    /// async_try_acquire(n), bounded by `bound` as well.
    [[nodiscard]] ::asio::awaitable<rate_limit_result> async_try_acquire(const resil::deadline& bound,
                                                                       std::int64_t n = 1) const {
        return decide(std::nullopt, n, bound.when(), false, {});
    }

    /// rate_limiter::try_acquire_for, awaited: the quota named `key` (a
    /// tenant's). A key validate() would refuse throws std::invalid_argument
    /// here, before anything is awaited.
    [[nodiscard]] ::asio::awaitable<rate_limit_result> async_try_acquire_for(std::string_view key, std::int64_t n = 1,
                                                                           const resil::deadline& bound = {}) const {
        return decide(core().keyed(key), n, bound.when(), false, {});
    }

    /// rate_limiter::acquire, awaited: the permits are reserved in Redis in
    /// the same round trip, and the wait for them is a timer, never past
    /// `until`. `stop`, or the awaiting coroutine's cancellation, ends the
    /// wait (`cancelled`; a reservation in Redis is forfeited).
    [[nodiscard]] ::asio::awaitable<rate_limit_result> async_acquire(const resil::deadline& until, std::int64_t n = 1,
                                                                   std::stop_token stop = {}) const {
        return decide(std::nullopt, n, until.when(), true, std::move(stop));
    }

    /// async_acquire on the quota named `key` (see async_try_acquire_for).
    [[nodiscard]] ::asio::awaitable<rate_limit_result> async_acquire_for(std::string_view key,
                                                                       const resil::deadline& until, std::int64_t n = 1,
                                                                       std::stop_token stop = {}) const {
        return decide(core().keyed(key), n, until.when(), true, std::move(stop));
    }

    /// The limiter it decides for.
    [[nodiscard]] const rate_limiter& limiter() const noexcept { return *limiter_; }
    /// The options of its rate_limiter.
    [[nodiscard]] const rate_limiter_options& options() const noexcept { return core().options(); }
    /// The limiter's counters: its decisions, blocking and asynchronous.
    [[nodiscard]] rate_limiter_metrics metrics() const noexcept { return core().metrics(); }
    /// The strand its connections run on.
    [[nodiscard]] const detail::asio_connection::executor_type& executor() const noexcept {
        return conn_ ? conn_->executor() : cluster_->executor();
    }

    // As a policy of resil::asio::pipeline (resil/policy_steps.hpp): the
    // blocking limiter's execute() as steps, the round trip awaited in
    // between (async_wait). enter() screens and spends from the lease (no
    // wait), or asks for the round trip and, with max_wait, the wait for a
    // reserved permit; waited() turns the result into the call's fate, with
    // the blocking pipeline's events.

    /// What a call keeps between its steps: its decision.
    class admission {
    private:
        friend class async_rate_limiter;
        detail::decision d_;
        std::stop_token stop_;
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = admission;

    /// The first step: decided at once (lease, screening), or a round trip to await.
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        a.d_ = core().for_call(ctx);
        a.stop_ = a.d_.waiting ? ctx.stop_token() : std::stop_token{};
        if (!core().begin(a.d_, a.stop_)) return layer_in::wait_until(a.d_.until);
        return decided(ctx, a);
    }
    /// The wait enter() asked for: the round trip (and a reserved permit's wait).
    template <class Context>
    ::asio::awaitable<bool> async_wait(Context&, admission& a, time_point) const {
        co_await run(a.d_, a.stop_);
        co_return true;
    }
    /// After the round trip: admitted, or refused as the blocking limiter refuses.
    template <class Context>
    layer_in waited(Context& ctx, admission& a, bool) const {
        return decided(ctx, a);
    }
    /// Nothing on the way out: the permits are spent.
    template <class Context, class Outcome>
    layer_out leave(Context&, admission&, Outcome&) const noexcept {
        return layer_out::proceed();
    }

private:
    friend struct detail::async_rate_limiter_access;

    [[no_unique_address]] clock_type clock_{};

    template <class Context>
    layer_in decided(Context& ctx, admission& a) const {
        const auto verdict = core().verdict_for_call(ctx, a.d_.result);
        a.stop_ = {};
        if (verdict.admitted) return layer_in::proceed();
        return layer_in::refuse(verdict.why, verdict.retry_after);
    }

    const detail::limiter_core& core() const noexcept { return limiter_->core_; }

    ::asio::awaitable<rate_limit_result> decide(std::optional<detail::key_text> other, std::int64_t n, time_point until,
                                                bool waiting, std::stop_token stop,
                                                std::int64_t now_override = detail::no_time_override) const {
        detail::decision d;
        d.key = other ? other->view() : std::string_view(core().key());
        d.n = n;
        d.until = until;
        d.waiting = waiting;
        d.now_override = now_override;
        if (!core().begin(d, stop)) co_await run(d, stop);
        co_return d.result;
    }

    // The decision's steps after begin(): the round trip on the
    // connection's strand (not cancellable: bounded as the blocking one),
    // then a wait on a timer if it asks for one.
    ::asio::awaitable<void> run(detail::decision& d, const std::stop_token& stop) const {
        detail::script_answer a;
        // (The round trip made first, then awaited: g++ 12 destroys a
        // coroutine temporary chosen within a co_await's operand twice.)
        auto round_trip = conn_ ? detail::ask_async(core(), conn_, d, a) : detail::ask_async_cluster(core(), cluster_, d, a);
        const detail::asked how = co_await ::asio::co_spawn(
            executor(), std::move(round_trip),
            ::asio::bind_cancellation_slot(::asio::cancellation_slot{}, ::asio::use_awaitable));
        core().answered(d, how, a, stop);
        if (d.waits) core().woke(d, co_await resil::asio::wait_until(steady_clock{}, d.wake, stop));
    }

    const rate_limiter* limiter_;
    std::shared_ptr<detail::asio_connection> conn_;   // one server; null on a cluster or behind Sentinel
    std::shared_ptr<detail::asio_cluster> cluster_;   // a cluster's (or Sentinel's) connections; null on one server
};

namespace detail {
/// For tests only: an asynchronous decision at a given Redis time, as
/// rate_limiter_access::try_acquire_at.
struct async_rate_limiter_access {
    static ::asio::awaitable<rate_limit_result> try_acquire_at(const async_rate_limiter& l, std::int64_t now_us,
                                                               std::int64_t n = 1) {
        return l.decide(std::nullopt, n, time_point::max(), false, {}, now_us);
    }
};
}  // namespace detail

}  // namespace resil::redis
