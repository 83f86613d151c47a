// resil/redis/rate_limiter.hpp — a rate limiter whose quota lives in Redis,
// shared by every process that names the same key: GCRA in one Lua script
// on Redis's clock, with a stated answer when Redis is slow or down.
//
//   resil::redis::rate_limiter limiter{{.rate = 50, .burst = 100, .key = "llm-api",
//                                       .on_failure = resil::redis::failure_policy::fail_open,
//                                       .expected_pods = 10}};
//
//   if (auto r = limiter.try_acquire(); !r) return reply(429, r.retry_after);   // as token_bucket
//   if (limiter.acquire(resil::deadline::after(2s), tokens)) call_llm();          // waits, never past 2 s
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(limiter));     // reason::rate_limited
//
// The interface is token_bucket's: try_acquire(n) grants or gives the wait
// and a whole-second Retry-After; acquire(deadline, n) reserves the permits
// in the same round trip and sleeps until they exist, never past the
// deadline; as a pipeline policy it emits the same events::rejected with
// reason::rate_limited. The decision is detail/gcra.hpp's integer arithmetic,
// run exactly by Redis (redis/detail/script.hpp, in pairs of doubles), so a
// limiter and a local token_bucket of the same rate and burst, fed the same
// instants, take the same decisions at any rate, with the same waits. Each
// result also says where the quota stands (`remaining`, `reset`), for a
// service's own RateLimit fields.
//
// Every round trip is bounded by connect_timeout and reply_timeout, each
// clamped to what is left of the caller's deadline, recomputed before each
// command: a decision returns within the deadline (plus one poll() wake-up).
// A deadline that leaves no time is rate_limit_status::no_time, not a
// failure of Redis. When Redis cannot decide
// (refused, timed out, an error reply), the decision goes to the failure
// policy — fail open through a local bucket of rate / expected_pods, or fail
// closed with reason::quota_unavailable — and Redis is left alone for a
// backoff (doubling, jittered); then one thread probes while the others keep
// deciding locally: no herd of reconnects. Counted in metrics(), and in a
// pipeline emitted as events::quota_store_failed.
//
// Thread-safe: share one limiter per quota (not copyable; std::ref in a
// pipeline). The limiter allocates nothing per decision; hiredis allocates
// the command buffer and the reply of each round trip.
//
// On a Redis Cluster (options.cluster_nodes) it reads the slot map and
// follows MOVED and ASK; behind Sentinel (options.sentinels) it finds the
// primary, and finds it again after a failover (detail/cluster.hpp).
//
// On Asio, resil::redis::async_rate_limiter (resil/redis/asio_rate_limiter.hpp)
// decides for the same limiter without blocking a thread (on one server, a
// cluster or behind Sentinel).
//
// The parts: the result types (result.hpp); the decision code every path
// shares (detail/decision.hpp: steps, arguments, the answer's reading, the
// failure policy), the lease and the fallback bucket (detail/local.hpp), the
// backoff (detail/health.hpp); this header's path, a round trip on the
// calling thread over a pool of connections (detail/blocking_path.hpp,
// detail/connection.hpp).
#pragma once
// (Tells resil/http/redis_quota.hpp that the limiter's class is here.)
#define RESIL_DETAIL_REDIS_RATE_LIMITER 1

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../clock.hpp"
#include "../deadline.hpp"
#include "../detail/platform.hpp"
#include "../outcome.hpp"
#include "../token_bucket.hpp"
#include "detail/blocking_path.hpp"
#include "detail/cluster.hpp"
#include "detail/connection.hpp"
#include "detail/decision.hpp"
#include "options.hpp"
#include "result.hpp"

namespace resil::redis {

class async_rate_limiter;
namespace detail {
struct rate_limiter_access;
}

/// A rate limiter whose quota lives in Redis, shared by every process naming
/// the same key: GCRA in one Lua script on Redis's clock, with token_bucket's
/// interface and a stated answer when Redis is slow or down (on_failure).
/// Thread-safe: share one per quota. Not copyable.
class rate_limiter {
public:
    /// Reads its own clock, the steady clock (resil/clock.hpp, time_source):
    /// not a parameter, as a token bucket's is, because the quota lives in
    /// Redis, which keeps real time; a manual clock could not move it.
    using clock_type = steady_clock;
    /// Reads its own clock, the steady clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;
    /// The clock it reads: the steady clock.
    [[nodiscard]] const clock_type& clock() const noexcept { return clock_; }

    /// Connects lazily (the first decision). Throws std::invalid_argument
    /// when options.validate() names a field:
    /// "resil::redis::rate_limiter: `key` must be 1 to 200 printable ASCII characters ...".
    explicit rate_limiter(rate_limiter_options options)
        : core_(std::move(options)),
          pool_(core_.options().cluster_nodes.empty() && core_.options().sentinels.empty() ? core_.options().connections
                                                                                            : 1),
          cluster_(make_cluster(core_.options())) {}

    rate_limiter(const rate_limiter&) = delete;
    rate_limiter& operator=(const rate_limiter&) = delete;

    /// Takes `n` permits now if the shared quota holds them; never waits
    /// for permits. One round trip (none when a lease covers it), bounded by
    /// the timeouts and by `bound`. n = 0 is granted without asking; n >
    /// burst is exceeds_burst without asking; a negative n throws
    /// std::invalid_argument.
    [[nodiscard]] rate_limit_result try_acquire(std::int64_t n = 1) const {
        return try_acquire(resil::deadline{}, n);
    }
    /// try_acquire(n), bounded by `bound` as well.
    [[nodiscard]] rate_limit_result try_acquire(const resil::deadline& bound, std::int64_t n = 1) const {
        return decide(core_.key(), n, bound.when(), false, {});
    }

    /// try_acquire on another quota of the same rate and burst, named
    /// `key` (a tenant, a user, an API key's id), stored as key_prefix +
    /// "{" + key + "}". Not leased; while Redis cannot decide, every key
    /// shares the one fallback bucket (or fails closed). Throws
    /// std::invalid_argument for a key validate() would refuse.
    [[nodiscard]] rate_limit_result try_acquire_for(std::string_view key, std::int64_t n = 1,
                                                    const resil::deadline& bound = {}) const {
        const detail::key_text full = core_.keyed(key);
        return decide(full.view(), n, bound.when(), false, {});
    }

    /// Takes `n` permits, sleeping (interruptibly) until they exist, never
    /// past `until`: the permits are reserved in Redis in the same round
    /// trip (first come, first served across every process), or, when they
    /// would exist only after the deadline, it returns `rejected` at once.
    /// A cancelled wait forfeits its reservation (errs on the side of the
    /// limit). Without a deadline the wait is capped at 18 years.
    [[nodiscard]] rate_limit_result acquire(const resil::deadline& until, std::int64_t n = 1,
                                            std::stop_token stop = {}) const {
        return decide(core_.key(), n, until.when(), true, stop);
    }

    /// acquire on the quota named `key` (see try_acquire_for).
    [[nodiscard]] rate_limit_result acquire_for(std::string_view key, const resil::deadline& until, std::int64_t n = 1,
                                                std::stop_token stop = {}) const {
        const detail::key_text full = core_.keyed(key);
        return decide(full.view(), n, until.when(), true, stop);
    }

    /// acquire() within a call's context: its deadline and stop token.
    template <class Context>
        requires requires(const Context& c) {
            { c.deadline_instant() } -> std::convertible_to<time_point>;
            { c.stop_token() } -> std::convertible_to<std::stop_token>;
        }
    [[nodiscard]] rate_limit_result acquire(const Context& ctx, std::int64_t n = 1) const {
        const auto r = acquire(resil::deadline::at(ctx.deadline_instant()), n, ctx.stop_token());
        if constexpr (requires { ctx.clear_cached_now(); }) ctx.clear_cached_now();
        return r;
    }

    /// As a pipeline policy: one permit per call, decided within the call's
    /// deadline. Rejected calls get reason::rate_limited and the wait as
    /// retry_after (events::rejected), as with token_bucket; failing closed,
    /// reason::quota_unavailable. Every decision Redis could not make also
    /// emits events::quota_store_failed. A deadline that leaves no time to
    /// ask is reason::deadline_exceeded (not a failure of Redis: no
    /// quota_store_failed, not in store_failures). With options().max_wait > 0 the call
    /// first waits up to that long (never past its deadline).
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        using result_type = decltype(next(ctx));
        detail::decision d = core_.for_call(ctx);
        const auto verdict = core_.verdict_for_call(ctx, decide(d, d.waiting ? ctx.stop_token() : std::stop_token{}));
        if (verdict.admitted) return std::forward<Next>(next)(ctx);
        return result_type::rejected(verdict.why, verdict.retry_after);
    }

    /// The key in Redis: key_prefix + "{" + key + "}".
    [[nodiscard]] const std::string& redis_key() const noexcept { return core_.key(); }
    /// The options it was built with.
    [[nodiscard]] const rate_limiter_options& options() const noexcept { return core_.options(); }
    /// The bucket that decides while Redis cannot, failing open.
    [[nodiscard]] const token_bucket& fallback_bucket() const noexcept { return core_.fallback_bucket(); }
    /// Whether the last round trip failed and Redis is being left alone.
    [[nodiscard]] bool redis_down() const noexcept { return core_.health().down(); }
    /// The last failure's description ("connect to 127.0.0.1:6379 failed: Connection refused").
    [[nodiscard]] std::string last_error() const { return core_.health().last_error(); }

    /// The node that decides for the limiter's own key, "host:port": the
    /// server; on a Redis Cluster the owner of the key's slot as the slot
    /// map knows it; behind Sentinel the primary found (empty before the
    /// first decision found it).
    [[nodiscard]] std::string current_node() const {
        if (!cluster_) return core_.options().host + ":" + std::to_string(core_.options().port);
        return cluster_->owner_name(detail::key_slot(core_.key()));
    }

    /// Every decision's, through this limiter or an async_rate_limiter of it.
    [[nodiscard]] rate_limiter_metrics metrics() const noexcept { return core_.metrics(); }

private:
    friend struct detail::rate_limiter_access;
    friend class async_rate_limiter;

    [[no_unique_address]] clock_type clock_{};

    rate_limit_result decide(std::string_view redis_key, std::int64_t n, time_point until, bool waiting,
                             const std::stop_token& stop) const {
        detail::decision d;
        d.key = redis_key;
        d.n = n;
        d.until = until;
        d.waiting = waiting;
        return decide(d, stop);
    }

    // The decision's steps (detail/decision.hpp) around a round trip on
    // this thread; a wait is a sleep. Compiled once with
    // RESIL_SEPARATE_COMPILATION (resil/redis/separate_compilation.hpp).
    RESIL_DECL rate_limit_result decide(detail::decision& d, const std::stop_token& stop) const;

    static std::unique_ptr<detail::cluster_map> make_cluster(const rate_limiter_options& o) {
        std::vector<detail::node_address> seeds;
        if (!o.sentinels.empty()) {
            (void)detail::parse_node_list(o.sentinels, rate_limiter_options::max_cluster_seeds, seeds);  // validated
            return std::make_unique<detail::cluster_map>(std::move(seeds), o.connections, o.sentinel_master);
        }
        if (o.cluster_nodes.empty()) return nullptr;
        (void)detail::parse_node_list(o.cluster_nodes, rate_limiter_options::max_cluster_seeds, seeds);  // validated
        return std::make_unique<detail::cluster_map>(std::move(seeds), o.connections);
    }

    detail::limiter_core core_;
    mutable detail::pool pool_;                      // one server's connections
    std::unique_ptr<detail::cluster_map> cluster_;   // a cluster's map (or Sentinel's primary) and pools; null on one server
};

#if RESIL_DETAIL_BODIES
RESIL_DECL rate_limit_result rate_limiter::decide(detail::decision& d, const std::stop_token& stop) const {
    if (core_.begin(d, stop)) return d.result;
    detail::script_answer a;
    const detail::asked how =
        cluster_ ? detail::ask_cluster(core_, *cluster_, d, a) : detail::ask_blocking(core_, pool_, d, a);
    core_.answered(d, how, a, stop);
    if (d.waits) core_.woke(d, resil::sleep_until(steady_clock{}, d.wake, stop));
    return d.result;
}
#endif

namespace detail {
/// For tests only: decisions at a given Redis time instead of TIME, so that
/// golden traces (the seed's 300 requests) reproduce exactly.
struct rate_limiter_access {
    static rate_limit_result try_acquire_at(const rate_limiter& l, std::int64_t now_us, std::int64_t n = 1) {
        decision d;
        d.key = l.core_.key();
        d.n = n;
        d.now_override = now_us;
        return l.decide(d, {});
    }
    /// Every later decision of `l` asked without an instant (try_acquire,
    /// acquire, as a pipeline policy, through an async_rate_limiter of it)
    /// runs at this Redis time; detail::no_time_override: TIME again.
    static void fix_redis_time(const rate_limiter& l, std::int64_t now_us) noexcept {
        l.core_.fix_redis_time(now_us);
    }
};
}  // namespace detail

}  // namespace resil::redis
