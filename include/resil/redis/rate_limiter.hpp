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
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "../clock.hpp"
#include "../deadline.hpp"
#include "../detail/fork_epoch.hpp"
#include "../detail/gcra.hpp"
#include "../detail/stripes.hpp"
#include "../events.hpp"
#include "../outcome.hpp"
#include "../token_bucket.hpp"
#include "../validation.hpp"
#include "detail/connection.hpp"
#include "detail/script.hpp"
#include "options.hpp"

namespace resil::redis {

/// What the limiter said about a request.
enum class rate_limit_status : std::uint8_t {
    granted,        ///< the permits were taken
    rejected,       ///< not enough permits now (acquire(): not before the deadline); see `wait`
    exceeds_burst,  ///< more permits than the quota can ever hold (or, failing open, than the local bucket can)
    cancelled,      ///< acquire() only: the stop token fired
    unavailable,    ///< Redis could not decide and the limiter fails closed
    no_time,        ///< the caller's deadline left no time to ask Redis (or to get a connection): nothing was decided
};

[[nodiscard]] constexpr std::string_view to_string(rate_limit_status s) noexcept {
    switch (s) {
        case rate_limit_status::granted: return "granted";
        case rate_limit_status::rejected: return "rejected";
        case rate_limit_status::exceeds_burst: return "exceeds_burst";
        case rate_limit_status::cancelled: return "cancelled";
        case rate_limit_status::unavailable: return "unavailable";
        case rate_limit_status::no_time: return "no_time";
    }
    return "unknown";
}

/// Who decided.
enum class decided_by : std::uint8_t {
    none,      ///< nobody needed to or could (n = 0, bad weight, cancelled, no time left)
    redis,     ///< the shared quota, in Redis
    lease,     ///< permits leased from Redis earlier, spent locally
    fallback,  ///< Redis could not decide: the failure policy did
};

[[nodiscard]] constexpr std::string_view to_string(decided_by d) noexcept {
    switch (d) {
        case decided_by::none: return "none";
        case decided_by::redis: return "redis";
        case decided_by::lease: return "lease";
        case decided_by::fallback: return "fallback";
    }
    return "unknown";
}

/// The answer to one request, shaped like token_bucket_result, with where
/// the quota stands for a service's own RateLimit fields
/// (draft-ietf-httpapi-ratelimit-headers: `r` is `remaining`, `t` is
/// `reset` rounded up to whole seconds; see docs/redis_rate_limiter.md).
struct rate_limit_result {
    rate_limit_status status = rate_limit_status::granted;
    /// rejected: how long until the permits exist (at least 1 ns). granted by
    /// acquire(): how long it slept. Otherwise zero.
    duration wait{};
    /// rejected: `wait` in whole seconds rounded up, at least 1 s (a
    /// Retry-After header's value). Otherwise zero.
    std::chrono::seconds retry_after{};
    decided_by source = decided_by::none;
    /// Whole permits left in the quota after this decision, in [0, burst]
    /// (a grant's permits already taken). From a lease: the lease's unspent
    /// permits plus what Redis reported when it was taken; from the
    /// fallback: its local bucket's. Zero when nobody decided
    /// (source none) or the limiter fails closed.
    std::int64_t remaining = 0;
    /// How long until the quota next gains a whole permit; zero when it is
    /// full (nothing more to gain), when nobody decided, or failing closed.
    /// From a lease: as Redis reported it when the lease was taken, counted
    /// down since.
    duration reset{};

    [[nodiscard]] constexpr bool granted() const noexcept { return status == rate_limit_status::granted; }
    explicit constexpr operator bool() const noexcept { return granted(); }
    friend constexpr bool operator==(const rate_limit_result&, const rate_limit_result&) = default;
};

/// Counters since construction; each read is relaxed (a snapshot of
/// independent counters, not of one instant).
struct rate_limiter_metrics {
    std::uint64_t granted = 0;           ///< every grant, whoever decided
    std::uint64_t rejected = 0;          ///< rate-limited (by Redis or, failing open, locally)
    std::uint64_t round_trips = 0;       ///< EVALSHA calls that got an answer
    std::uint64_t lease_grants = 0;      ///< grants spent from a lease, without a round trip
    std::uint64_t store_failures = 0;    ///< decisions Redis could not make (policy applied)
    std::uint64_t fail_open_admitted = 0;
    std::uint64_t fail_open_rejected = 0;
    std::uint64_t fail_closed_rejected = 0;
    std::uint64_t connects = 0;          ///< connections opened (the first ones included)
    std::uint64_t script_loads = 0;      ///< SCRIPT LOAD after NOSCRIPT (cache flushed, failover)
    std::uint64_t error_replies = 0;     ///< error or malformed answers from Redis
    std::uint64_t no_time = 0;           ///< decisions the caller's deadline left no time for (not failures)
};

namespace detail {
struct rate_limiter_access;
}

class rate_limiter {
public:
    using clock_type = steady_clock;

    /// Connects lazily (the first decision). Throws std::invalid_argument
    /// when options.validate() names a field:
    /// "resil::redis::rate_limiter: `key` must be 1 to 200 printable ASCII characters ...".
    explicit rate_limiter(rate_limiter_options options)
        : options_(validated(std::move(options))),
          key_(options_.key_prefix + "{" + options_.key + "}"),
          params_(resil::detail::gcra::make_params(options_.rate, options_.burst)),
          constants_(params_),
          pool_(options_.connections),
          local_(local_options(options_)) {
        resil::detail::watch_forks();  // a forked child opens connections of its own
    }

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
    [[nodiscard]] rate_limit_result try_acquire(const resil::deadline& bound, std::int64_t n = 1) const {
        if (auto early = screen(n)) return *early;
        return decide(key_, n, bound.when(), false, no_override, {});
    }

    /// try_acquire on another quota of the same rate and burst, named
    /// `key` (a tenant, a user, an API key's id), stored as key_prefix +
    /// "{" + key + "}". Not leased; while Redis cannot decide, every key
    /// shares the one fallback bucket (or fails closed). Throws
    /// std::invalid_argument for a key validate() would refuse.
    [[nodiscard]] rate_limit_result try_acquire_for(std::string_view key, std::int64_t n = 1,
                                                    const resil::deadline& bound = {}) const {
        const key_text full = keyed(key);
        if (auto early = screen(n)) return *early;
        return decide(full.view(), n, bound.when(), false, no_override, {});
    }

    /// Takes `n` permits, sleeping (interruptibly) until they exist, never
    /// past `until`: the permits are reserved in Redis in the same round
    /// trip (first come, first served across every process), or, when they
    /// would exist only after the deadline, it returns `rejected` at once.
    /// A cancelled wait forfeits its reservation (errs on the side of the
    /// limit). Without a deadline the wait is capped at 18 years.
    [[nodiscard]] rate_limit_result acquire(const resil::deadline& until, std::int64_t n = 1,
                                            std::stop_token stop = {}) const {
        if (stop.stop_requested()) return {rate_limit_status::cancelled, {}, {}, decided_by::none};
        if (auto early = screen(n)) return *early;
        return decide(key_, n, until.when(), true, no_override, stop);
    }

    /// acquire on the quota named `key` (see try_acquire_for).
    [[nodiscard]] rate_limit_result acquire_for(std::string_view key, const resil::deadline& until, std::int64_t n = 1,
                                                std::stop_token stop = {}) const {
        const key_text full = keyed(key);
        if (stop.stop_requested()) return {rate_limit_status::cancelled, {}, {}, decided_by::none};
        if (auto early = screen(n)) return *early;
        return decide(full.view(), n, until.when(), true, no_override, stop);
    }

    /// acquire() within a call's context: its deadline and stop token.
    template <class Context>
        requires requires(const Context& c) {
            { c.deadline_instant() } -> std::convertible_to<time_point>;
            { c.stop_token() } -> std::convertible_to<std::stop_token>;
        }
    [[nodiscard]] rate_limit_result acquire(const Context& ctx, std::int64_t n = 1) const {
        const auto r = acquire(resil::deadline::at(ctx.deadline_instant()), n, ctx.stop_token());
        if constexpr (requires { ctx.forget_now(); }) ctx.forget_now();
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
        if constexpr (requires { typename Context::clock_type; })
            static_assert(std::is_same_v<typename Context::clock_type, steady_clock>,
                          "resil::redis::rate_limiter: the pipeline's clock must be resil::steady_clock (Redis runs in real time)");
        rate_limit_result r;
        if (options_.max_wait > std::chrono::milliseconds::zero()) {
            const auto patience = resil::detail::saturating_add(steady_clock{}.now(), duration{options_.max_wait});
            const auto call_deadline = ctx.deadline_instant();
            r = acquire(resil::deadline::at(call_deadline < patience ? call_deadline : patience), 1, ctx.stop_token());
        } else {
            r = try_acquire(resil::deadline::at(ctx.deadline_instant()), 1);
        }
        if constexpr (requires { ctx.forget_now(); }) ctx.forget_now();  // a round trip took time
        if (r.source == decided_by::fallback)
            ctx.emit(events::quota_store_failed{options_.on_failure == failure_policy::fail_open, r.granted()});
        switch (r.status) {
            case rate_limit_status::granted: return std::forward<Next>(next)(ctx);
            case rate_limit_status::cancelled:
                ctx.emit(events::rejected{reason::cancelled, std::nullopt});
                return result_type::rejected(reason::cancelled);
            case rate_limit_status::unavailable:
                ctx.emit(events::rejected{reason::quota_unavailable, std::nullopt});
                return result_type::rejected(reason::quota_unavailable);
            case rate_limit_status::no_time:  // as a deadline_policy with no time left for an attempt
                ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
                return result_type::rejected(reason::deadline_exceeded);
            case rate_limit_status::rejected:
            case rate_limit_status::exceeds_burst: break;
        }
        ctx.emit(events::rejected{reason::rate_limited, r.wait});
        return result_type::rejected(reason::rate_limited, r.wait);
    }

    /// The key in Redis: key_prefix + "{" + key + "}".
    [[nodiscard]] const std::string& redis_key() const noexcept { return key_; }
    [[nodiscard]] const rate_limiter_options& options() const noexcept { return options_; }
    /// The bucket that decides while Redis cannot, failing open.
    [[nodiscard]] const token_bucket& fallback_bucket() const noexcept { return local_; }
    /// Whether the last round trip failed and Redis is being left alone.
    [[nodiscard]] bool redis_down() const noexcept { return retry_at_ns_.load(std::memory_order_relaxed) != 0; }
    /// The last failure's description ("connect to 127.0.0.1:6379 failed: Connection refused").
    [[nodiscard]] std::string last_error() const {
        std::lock_guard<std::mutex> lock(error_mutex_);
        return last_error_;
    }

    [[nodiscard]] rate_limiter_metrics metrics() const noexcept {
        rate_limiter_metrics m;
        for (std::size_t i = 0; i < counters_.size(); ++i) {
            const counters& c = counters_[i];
            auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
            m.granted += get(c.granted);
            m.rejected += get(c.rejected);
            m.round_trips += get(c.round_trips);
            m.lease_grants += get(c.lease_grants);
            m.store_failures += get(c.store_failures);
            m.fail_open_admitted += get(c.fail_open_admitted);
            m.fail_open_rejected += get(c.fail_open_rejected);
            m.fail_closed_rejected += get(c.fail_closed_rejected);
            m.connects += get(c.connects);
            m.script_loads += get(c.script_loads);
            m.error_replies += get(c.error_replies);
            m.no_time += get(c.no_time);
        }
        return m;
    }

private:
    friend struct detail::rate_limiter_access;
    static constexpr std::int64_t no_override = -1;
    static constexpr std::int64_t max_lookahead_us = std::int64_t{1} << 49;  // 18 years

    struct counters {
        std::atomic<std::uint64_t> granted{0}, rejected{0}, round_trips{0}, lease_grants{0}, store_failures{0},
            fail_open_admitted{0}, fail_open_rejected{0}, fail_closed_rejected{0}, connects{0}, script_loads{0},
            error_replies{0}, no_time{0};
    };
    // Each thread counts in its own stripe: no cache line written by every
    // decision of every thread (lease grants take ~100 ns).
    static void bump(std::atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
    counters& count() const noexcept { return counters_.local(); }

    static rate_limiter_options validated(rate_limiter_options o) {
        throw_if_invalid("resil::redis::rate_limiter", o.validate());
        return o;
    }

    static token_bucket_options local_options(const rate_limiter_options& o) {
        const auto pods = static_cast<std::int64_t>(o.expected_pods);
        auto burst = o.burst / pods;
        if (burst < 1) burst = 1;
        double rate = o.rate / static_cast<double>(pods);
        if (rate < token_bucket_options::min_rate) rate = token_bucket_options::min_rate;
        if (static_cast<double>(burst) / rate > token_bucket_options::max_refill_seconds)
            burst = resil::detail::gcra::largest_burst(rate);
        return {.rate = rate, .burst = burst};
    }

    // A key of another quota, built on the stack: no allocation per call.
    struct key_text {
        char data[2 * rate_limiter_options::max_key_length + 2];
        std::size_t size = 0;
        [[nodiscard]] std::string_view view() const noexcept { return {data, size}; }
    };

    key_text keyed(std::string_view key) const {
        if (!detail::valid_key_text(key, false)) {
            throw std::invalid_argument(
                resil::detail::concat({"resil::redis::rate_limiter: ", detail::bad_key("key", key, false)->message()}));
        }
        key_text out;
        const std::string_view prefix = options_.key_prefix;
        std::memcpy(out.data, prefix.data(), prefix.size());
        out.data[prefix.size()] = '{';
        std::memcpy(out.data + prefix.size() + 1, key.data(), key.size());
        out.data[prefix.size() + 1 + key.size()] = '}';
        out.size = prefix.size() + key.size() + 2;
        return out;
    }

    std::optional<rate_limit_result> screen(std::int64_t n) const {
        if (n < 0)
            throw std::invalid_argument("resil::redis::rate_limiter: cannot take a negative number of permits, got " +
                                        std::to_string(n));
        if (n == 0) return rate_limit_result{};
        if (n > options_.burst) return rate_limit_result{rate_limit_status::exceeds_burst, {}, {}, decided_by::none};
        return std::nullopt;
    }

    // The local bucket's rounding of the wait into Retry-After (detail/gcra.hpp).
    static rate_limit_result rejected(const detail::script_answer& a) noexcept {
        // At most 2^61 ns (read_answer caps it): Retry-After cannot overflow.
        const std::int64_t wait_ns = a.wait_ns < 1 ? 1 : a.wait_ns;
        return {rate_limit_status::rejected, duration{wait_ns},
                std::chrono::seconds{resil::detail::gcra::retry_after_seconds(wait_ns)}, decided_by::redis,
                a.remaining, duration{a.reset_ns}};
    }

    static std::int64_t steady_ns() noexcept { return steady_clock{}.now().time_since_epoch().count(); }

    // ---- leasing: one word, (expiry in ms since origin_) << 24 | permits.
    static constexpr int lease_bits = 24;
    static constexpr std::uint64_t lease_mask = (std::uint64_t{1} << lease_bits) - 1;

    // The permits left in the lease after taking n from it, or -1 when it
    // does not hold n (or has expired).
    std::int64_t spend_lease(std::int64_t n, std::int64_t now_ns) const noexcept {
        auto word = lease_.load(std::memory_order_relaxed);
        const auto now = static_cast<std::uint64_t>((now_ns - origin_ns_) / 1'000'000);
        for (;;) {
            const auto permits = static_cast<std::int64_t>(word & lease_mask);
            if (permits < n || (word >> lease_bits) <= now) return -1;
            const auto next = word - static_cast<std::uint64_t>(n);
            if (lease_.compare_exchange_weak(word, next, std::memory_order_relaxed)) return permits - n;
        }
    }

    // A grant from the lease: where the quota stood when the lease was
    // taken (a hint at most lease_ttl old), with the lease's unspent permits.
    rate_limit_result lease_grant(std::int64_t left, std::int64_t now_ns) const noexcept {
        const auto shared = lease_remaining_.load(std::memory_order_relaxed);
        const auto remaining = left > options_.burst - shared ? options_.burst : left + shared;
        const auto reset_at = lease_reset_at_ns_.load(std::memory_order_relaxed);
        const duration reset{reset_at > now_ns ? reset_at - now_ns : 0};
        return {rate_limit_status::granted, {}, {}, decided_by::lease, remaining, reset};
    }

    // ---- the decision
    rate_limit_result decide(std::string_view redis_key, std::int64_t n, time_point until, bool waiting,
                             std::int64_t now_override, const std::stop_token& stop) const {
        // Leases belong to the limiter's own key.
        const bool leasing = options_.lease > 1 && !waiting && redis_key.data() == key_.data();
        if (leasing) {
            const auto now_ns = steady_ns();
            if (const auto left = spend_lease(n, now_ns); left >= 0) {
                bump(count().granted);
                bump(count().lease_grants);
                return lease_grant(left, now_ns);
            }
        }
        // One refill of the lease at a time: others ask for exactly n, so the
        // unspent lease never exceeds lease − 1 permits.
        const bool refill = leasing && n < options_.lease && !refilling_.exchange(true, std::memory_order_acquire);
        const std::int64_t want = refill ? options_.lease : n;
        std::int64_t look_us = 0;
        // Read only when waiting: a clock read costs ~0.1 µs when the thread
        // has just slept on a reply (the clock's page has gone cold).
        const auto start = waiting ? steady_clock{}.now() : time_point{};
        if (waiting) {
            const auto left = until == time_point::max() ? max_lookahead_us
                              : until <= start ? 0
                                               : std::chrono::duration_cast<std::chrono::microseconds>(until - start).count();
            look_us = left < max_lookahead_us ? left : max_lookahead_us;
        }
        detail::script_answer a;
        const asked how = ask(redis_key, n, want, look_us, until, now_override, a);
        const bool answered = how == asked::answered;
        std::int64_t leased = 0;
        if (refill) {
            if (answered && a.taken > n) {
                leased = a.taken - n;
                const auto now_ns = steady_ns();
                lease_remaining_.store(a.remaining, std::memory_order_relaxed);
                lease_reset_at_ns_.store(a.reset_ns > 0 ? now_ns + a.reset_ns : 0, std::memory_order_relaxed);
                const auto expiry = static_cast<std::uint64_t>((now_ns - origin_ns_) / 1'000'000) +
                                    static_cast<std::uint64_t>(options_.lease_ttl.count());
                lease_.store(expiry << lease_bits | static_cast<std::uint64_t>(leased), std::memory_order_relaxed);
            }
            refilling_.store(false, std::memory_order_release);
        }
        if (how == asked::no_time) {
            bump(count().no_time);
            return {rate_limit_status::no_time, {}, {}, decided_by::none};
        }
        if (!answered) return fail(n, until, waiting, stop);
        if (a.taken == 0) {
            bump(count().rejected);
            return rejected(a);
        }
        // The permits leased beyond n are this process's to spend: still in
        // the quota as far as its callers are concerned.
        const std::int64_t remaining = leased > options_.burst - a.remaining ? options_.burst : a.remaining + leased;
        if (a.wait_ns <= 0) {
            bump(count().granted);
            return {rate_limit_status::granted, {}, {}, decided_by::redis, remaining, duration{a.reset_ns}};
        }
        // A reservation: the permits exist wait_ns after the script ran,
        // which was before the reply came; sleeping from the reply errs late,
        // never past the deadline.
        // (read_answer bounds wait_ns by the lookahead, itself bounded by
        // the deadline; the sum saturates all the same.)
        const auto replied = steady_clock{}.now();
        auto wake = resil::detail::saturating_add(replied, duration{a.wait_ns});
        if (wake > until) wake = until;
        if (!resil::sleep_until(steady_clock{}, wake, stop))
            return {rate_limit_status::cancelled, {}, {}, decided_by::redis};  // the reservation is forfeited
        bump(count().granted);
        // Where the quota stood at the decision; its reset counted down since.
        const auto woke = steady_clock{}.now();
        const auto reset_at = resil::detail::saturating_add(replied, duration{a.reset_ns});
        return {rate_limit_status::granted, woke - start, {}, decided_by::redis, remaining,
                reset_at > woke ? reset_at - woke : duration::zero()};
    }

    rate_limit_result fail(std::int64_t n, time_point until, bool waiting, const std::stop_token& stop) const {
        bump(count().store_failures);
        if (options_.on_failure == failure_policy::fail_closed) {
            bump(count().fail_closed_rejected);
            return {rate_limit_status::unavailable, {}, {}, decided_by::fallback};
        }
        token_bucket_result r;
        if (waiting) r = local_.acquire(resil::deadline::at(until), n, stop);
        else r = local_.try_acquire(n);
        if (r) {
            bump(count().granted);
            bump(count().fail_open_admitted);
            return with_local_state({rate_limit_status::granted, r.wait, {}, decided_by::fallback});
        }
        bump(count().fail_open_rejected);
        switch (r.status) {
            case token_bucket_status::rejected:
                bump(count().rejected);
                return with_local_state({rate_limit_status::rejected, r.wait, r.retry_after, decided_by::fallback});
            case token_bucket_status::cancelled: return {rate_limit_status::cancelled, {}, {}, decided_by::fallback};
            default: return with_local_state({rate_limit_status::exceeds_burst, {}, {}, decided_by::fallback});
        }
    }

    // Where the fallback bucket stands after its decision: its whole tokens,
    // and the time until the next from the fraction refilling (tokens(), a
    // double: off by at most burst · 2⁻⁵² of a permit's interval). Read
    // after the decision, so other threads' decisions may fall in between.
    rate_limit_result with_local_state(rate_limit_result r) const noexcept {
        const auto now = steady_clock{}.now();
        r.remaining = local_.available(now);
        if (r.remaining >= local_.options().burst) return r;
        double missing = static_cast<double>(r.remaining + 1) - local_.tokens(now);  // in (0, 1]
        missing = missing < 0 ? 0 : missing > 1 ? 1 : missing;
        r.reset = duration{static_cast<std::int64_t>(std::ceil(missing * 1e9 / local_.options().rate))};
        return r;
    }

    // ---- health: after a failure Redis is left alone until retry_at_ns_;
    // then the one thread that moves retry_at_ns_ forward probes.
    std::chrono::nanoseconds next_backoff(std::uint64_t failures) const noexcept {
        const auto base = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.reconnect_backoff).count();
        const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.reconnect_backoff_max).count();
        std::int64_t d = base;
        for (std::uint64_t i = 1; i < failures && d < cap; ++i) d *= 2;
        if (d > cap) d = cap;
        // Jitter in [d/2, d]: pods that lost Redis together do not come back together.
        thread_local std::uint64_t state = static_cast<std::uint64_t>(steady_ns()) ^
                                           std::hash<std::thread::id>{}(std::this_thread::get_id());
        state += 0x9e3779b97f4a7c15u;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        const auto half = static_cast<std::uint64_t>(d / 2);
        return std::chrono::nanoseconds{static_cast<std::int64_t>(half + (half ? z % (half + 1) : 0))};
    }

    // Only the failure that starts an outage (moves retry_at_ns_ from 0) and
    // each failed probe raise the streak: the calls that were in flight when
    // Redis stalled fail together, and counting each of them would push the
    // backoff to its maximum after one short stall.
    void mark_down(bool probe, std::string error) const {
        failures_.fetch_add(1, std::memory_order_acq_rel);
        auto at = retry_at_ns_.load(std::memory_order_acquire);
        if (at == 0) {
            if (retry_at_ns_.compare_exchange_strong(at, steady_ns() + next_backoff(1).count(),
                                                     std::memory_order_acq_rel))
                streak_.store(1, std::memory_order_relaxed);
        } else if (probe) {
            const auto streak = streak_.fetch_add(1, std::memory_order_relaxed) + 1;
            retry_at_ns_.store(steady_ns() + next_backoff(streak).count(), std::memory_order_release);
        }
        remember(std::move(error));
    }

    // A reply (or connect) that timed out only because the caller's deadline
    // cut its wait below the option: not proof that Redis is slow, so the
    // first is forgiven. A second before any answer is a failure: a frozen
    // Redis must not cost every short-deadline caller a new connection and
    // its whole deadline.
    void mark_cut_short(bool probe, std::string error) const {
        if (probe || retry_at_ns_.load(std::memory_order_acquire) != 0 ||
            cut_short_.fetch_add(1, std::memory_order_relaxed) != 0)
            mark_down(probe, std::move(error));
        else
            remember(std::move(error));
    }

    void mark_up() const noexcept {
        if (cut_short_.load(std::memory_order_relaxed) != 0) cut_short_.store(0, std::memory_order_relaxed);
        if (retry_at_ns_.load(std::memory_order_relaxed) != 0) {
            streak_.store(0, std::memory_order_relaxed);
            retry_at_ns_.store(0, std::memory_order_release);
        }
    }

    void remember(std::string error) const {
        std::lock_guard<std::mutex> lock(error_mutex_);
        last_error_ = std::move(error);
    }

    // May this call talk to Redis? Yes when it is up; when it is down, only
    // the first caller after the backoff (which pushes the next probe away),
    // and `probe` says it is that caller.
    bool may_ask(bool& probe) const noexcept {
        auto at = retry_at_ns_.load(std::memory_order_acquire);
        if (at == 0) return true;
        const auto now = steady_ns();
        if (now < at) return false;
        const auto next = now + next_backoff(streak_.load(std::memory_order_relaxed) + 1).count();
        probe = retry_at_ns_.compare_exchange_strong(at, next, std::memory_order_acq_rel);
        return probe;
    }

    // How a call to ask() ended.
    enum class asked : std::uint8_t {
        answered,  ///< Redis decided (`out`)
        failed,    ///< Redis could not decide: the failure policy applies
        no_time,   ///< the caller's deadline left no time to ask (nothing is wrong with Redis)
    };

    // One EVALSHA (plus a SCRIPT LOAD after NOSCRIPT, plus one reconnect when
    // an idle connection turns out closed). Every command waits until
    // min(now + its timeout, end), recomputed before it: the decision ends
    // by `until` (plus the slack of one poll() and the code around it).
    asked ask(std::string_view redis_key, std::int64_t n, std::int64_t want, std::int64_t look_us, time_point until,
              std::int64_t now_override, detail::script_answer& out) const {
        const auto start = steady_clock{}.now();
        if (until <= start) return asked::no_time;
        bool probe = false;
        if (!may_ask(probe)) return asked::failed;
        // The whole decision, retries included, fits in one connect and two
        // replies (a reconnect, SCRIPT LOAD, EVALSHA), as well as in the
        // caller's deadline.
        const duration reply_cap = options_.reply_timeout;
        const auto budget_end = start + duration{options_.connect_timeout} + 2 * reply_cap;
        const bool until_bounds = until <= budget_end;
        const auto end = until_bounds ? until : budget_end;
        // Every connection busy: wait for one (each round trip is bounded),
        // never past the deadline or one reply timeout.
        const auto give_up_at = std::min(end, start + reply_cap);
        auto conn = pool_.try_checkout();
        const bool queued = !conn;  // `start` is stale once it waited
        if (queued) conn = pool_.checkout(give_up_at);
        if (!conn) {
            if (give_up_at == until) return asked::no_time;
            remember("every connection to Redis stayed in use for reply_timeout");
            return asked::failed;
        }
        const auto epoch = failures_.load(std::memory_order_acquire);
        const auto forks = resil::detail::fork_epoch.load(std::memory_order_relaxed);
        if (conn->open() && (conn.epoch() != epoch || conn.fork() != forks)) conn->close();

        // EVALSHA sha 1 key q K τhi τlo n nKhi nKlo want lookahead [now]
        using number = detail::script_constants::number;
        number n_text, nk_hi, nk_lo, want_text, look_text, now_text;
        const std::int64_t nk = n * params_.token_units;  // ≤ τ < 2^61
        detail::script_constants::put(n_text, n);
        detail::script_constants::put(nk_hi, nk >> 32);
        detail::script_constants::put(nk_lo, nk & 0xffff'ffff);
        detail::script_constants::put(want_text, want);
        detail::script_constants::put(look_text, look_us);
        if (now_override != no_override) detail::script_constants::put(now_text, now_override);
        const std::string_view args[14] = {"EVALSHA",           {},
                                           "1",                 redis_key,
                                           constants_.q(),      constants_.k(),
                                           constants_.tau_hi(), constants_.tau_lo(),
                                           n_text.view(),       nk_hi.view(),
                                           nk_lo.view(),        want_text.view(),
                                           look_text.view(),    now_text.view()};
        const char* argv[14];
        std::size_t lens[14];
        for (std::size_t i = 0; i < 14; ++i) {
            argv[i] = args[i].data();
            lens[i] = args[i].size();
        }
        lens[1] = 40;
        const int argc = now_override == no_override ? 13 : 14;
        // Out of time: the caller's (no failure of Redis's), or the budget's.
        const auto out_of_time = [&] {
            if (until_bounds) return asked::no_time;
            mark_down(probe, "Redis did not decide within connect_timeout + 2 × reply_timeout");
            return asked::failed;
        };
        // A failed command: a timeout the caller's deadline cut short, or
        // anything else (refused, closed, timed out in full, an error).
        const auto failed = [&](bool cut_short, std::string error) {
            if (cut_short && conn->timed_out()) mark_cut_short(probe, std::move(error));
            else mark_down(probe, std::move(error));
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
                const bool cut = until_bounds && left_ms < options_.connect_timeout;
                bump(count().connects);
                if (!conn->connect(options_.host, options_.port, cut ? left_ms : options_.connect_timeout,
                                   options_.reply_timeout, error))
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
            argv[1] = conn->sha().data();
            auto reply = conn->command(argc, argv, lens, cut ? until : std::min(end, now + reply_cap), error);
            if (!reply) {
                // A connection that sat idle may have been closed by the
                // server: one fresh connection, then it counts as a failure.
                // (A timeout is not retried: Redis is slow, not gone.)
                // (Should the first have run after all, the quota is charged
                // twice: errs on the side of the limit.)
                if (was_open && tries == 0 && !conn->timed_out()) continue;
                return failed(cut, std::move(error));
            }
            auto r = detail::read_answer(reply.get(), params_, n, want, look_us);
            if (r.kind == detail::reply_kind::noscript) {
                bump(count().script_loads);
                now = steady_clock{}.now();
                if (end <= now) return out_of_time();
                const bool load_cut = until_bounds && until < now + reply_cap;
                if (!conn->load_script(load_cut ? until : std::min(end, now + reply_cap), error))
                    return failed(load_cut, std::move(error));
                continue;
            }
            if (r.kind != detail::reply_kind::answer) {
                bump(count().error_replies);
                remember(std::move(r.error));
                return asked::failed;
            }
            bump(count().round_trips);
            mark_up();
            out = r.answer;
            return asked::answered;
        }
        remember("the script could not be run after reloading it");
        return asked::failed;
    }

    rate_limiter_options options_;
    std::string key_;
    resil::detail::gcra::params params_;  // the script's arithmetic is the local bucket's
    detail::script_constants constants_;
    mutable detail::pool pool_;
    token_bucket local_;
    std::int64_t origin_ns_ = steady_ns();
    mutable std::atomic<std::uint64_t> lease_{0};
    mutable std::atomic<bool> refilling_{false};
    // Where the quota stood when the lease was taken: Redis's remaining, and
    // when the next permit comes (steady ns; 0: the quota was full).
    mutable std::atomic<std::int64_t> lease_remaining_{0};
    mutable std::atomic<std::int64_t> lease_reset_at_ns_{0};
    mutable std::atomic<std::int64_t> retry_at_ns_{0};
    // Failures ever (the epoch that retires connections opened before the
    // latest one) and failures in a row (the backoff's exponent).
    mutable std::atomic<std::uint64_t> failures_{0};
    mutable std::atomic<std::uint64_t> streak_{0};
    // Timeouts cut short by callers' deadlines since the last answer.
    mutable std::atomic<std::uint32_t> cut_short_{0};
    resil::detail::stripes<counters> counters_;
    mutable std::mutex error_mutex_;
    mutable std::string last_error_;
};

namespace detail {
/// For tests only: decisions at a given Redis time instead of TIME, so that
/// golden traces (the seed's 300 requests) reproduce exactly.
struct rate_limiter_access {
    static rate_limit_result try_acquire_at(const rate_limiter& l, std::int64_t now_us, std::int64_t n = 1) {
        if (auto early = l.screen(n)) return *early;
        return l.decide(l.key_, n, time_point::max(), false, now_us, {});
    }
};
}  // namespace detail

}  // namespace resil::redis
