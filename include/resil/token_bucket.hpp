// resil/token_bucket.hpp — a rate limiter: rate r tokens per second, burst B,
// starting full; a request takes a token or is told how long to wait.
//
//   resil::token_bucket bucket{{.rate = 50, .burst = 100}};
//
//   // Server side: a gateway answering 429 with Retry-After.
//   if (auto r = bucket.try_acquire(); !r) {
//       if (r.status == resil::token_bucket_status::exceeds_burst) return reply(413);
//       return reply(429, {"Retry-After", std::to_string(r.retry_after.count())});
//   }
//
//   // Client side: pace a batch job, waiting at most until the deadline.
//   for (auto& item : batch)
//       if (bucket.acquire(resil::deadline::after(5s))) send(item);
//
//   // In a pipeline: reject (reason::rate_limited, retry_after = the wait).
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(bucket));
//
// Lock-free: the whole state is one atomic int64 updated by compare-and-swap,
// using GCRA (see resil/detail/gcra.hpp) in integer arithmetic, so there is no
// drift and no overflow anywhere in the documented range (rate 1e-3 … 1e9 per
// second). A rejected request takes nothing. Share one bucket per limited
// resource; it is not copyable (pass it to a pipeline with std::ref).
// metrics() counts the answers in per-thread stripes (detail/stripes.hpp):
// a thread that holds its stripe alone counts with a plain store, no locked
// instruction, on a line no other core writes. Memory: 2 × 128 bytes per
// stripe, allocated at construction (default_stripe_count(): this machine's
// hardware threads, rounded up to a power of two, at most 64); a program
// that keeps buckets by the thousand (one per client) passes stripe_count 1:
// 256 bytes each.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "detail/platform.hpp"
#include "clock.hpp"
#include "deadline.hpp"
#include "detail/gcra.hpp"
#include "detail/saturate.hpp"
#include "detail/stripes.hpp"
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "rate_limit_decision.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a token bucket; the defaults are the documented ones.
struct token_bucket_options {
    /// Tokens added per second, in [min_rate, max_rate] = [0.001, 1e9].
    /// Default 50.
    double rate = 50.0;
    /// Tokens the bucket holds when full, which is also the largest request
    /// it can ever grant; in [min_burst, max_burst] = [1, 1e15], with
    /// burst / rate (the time to refill an empty bucket) at most
    /// max_refill_seconds = 1e9 s. The bucket starts full. Default 100.
    std::int64_t burst = 100;
    /// In a pipeline only: how long a call may wait for its token (never past
    /// the call's deadline) before it is rejected; at least zero. Default
    /// zero: reject at once, as a server does; set it for client-side pacing.
    duration max_wait = duration::zero();

    // The range in which GCRA's integer arithmetic cannot overflow (detail/gcra.hpp).
    ///@{
    /// The bounds validate() checks (GCRA's integer arithmetic cannot overflow
    /// within them): min_X and max_X are the smallest and largest `X` it
    /// accepts; max_refill_seconds bounds burst / rate.
    static constexpr double min_rate = detail::gcra::min_rate;
    static constexpr double max_rate = detail::gcra::max_rate;
    static constexpr std::int64_t min_burst = detail::gcra::min_burst;
    static constexpr std::int64_t max_burst = detail::gcra::max_burst;
    static constexpr double max_refill_seconds = detail::gcra::max_refill_seconds;
    static constexpr duration min_max_wait = duration::zero();
    ///@}

    /// The first field outside its range: "`rate` must be in [0.001, 1e9],
    /// got 0"; a burst too large to refill in time names `burst` and the
    /// largest one allowed at this rate.
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const token_bucket_options&, const token_bucket_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result token_bucket_options::validate() const {
    if (auto bad = detail::check_in_range("rate", rate, min_rate, max_rate)) return bad;
    if (auto bad = detail::check_in_range("burst", burst, min_burst, max_burst)) return bad;
    if (!detail::gcra::refills_in_time(rate, burst)) {
        return detail::check_that(false, "burst",
                                  {"at most ", detail::format_option_value(detail::gcra::largest_burst(rate)),
                                   " at rate ", detail::format_option_value(rate),
                                   " (burst / rate, the time to refill an empty bucket, at most ",
                                   detail::format_option_value(max_refill_seconds), " s)"},
                                  burst);
    }
    return detail::check_at_least("max_wait", max_wait, min_max_wait);
}
#endif

/// What a token bucket said about a request: resil::rate_limit_status under
/// its former name (granted, rejected, exceeds_burst, cancelled; a bucket
/// never answers unavailable or no_time).
using token_bucket_status = rate_limit_status;

/// The answer to one request for tokens: resil::rate_limit_decision under
/// its former name. A bucket's answers: `source` is decided_by::local for
/// every answer that read the bucket (grants, rejections), none for the
/// others (n = 0, exceeds_burst, cancelled); `remaining` and `reset` are
/// where the bucket stands after the decision.
using token_bucket_result = rate_limit_decision;

/// What a token bucket has answered since construction; a snapshot (each
/// count read relaxed: exact when no request is in progress).
struct token_bucket_metrics {
    std::uint64_t granted = 0;        ///< requests that took their tokens (n = 0, which takes none, is not counted)
    std::uint64_t rejected = 0;       ///< not enough tokens (before the deadline)
    std::uint64_t exceeds_burst = 0;  ///< more tokens than the bucket can ever hold
    std::uint64_t cancelled = 0;      ///< waits for tokens cut short by the stop token

    /// Field-by-field equality.
    friend bool operator==(const token_bucket_metrics&, const token_bucket_metrics&) = default;
};

/// A token bucket on `Clock`. Thread-safe and lock-free: every member may be
/// called from any number of threads at once. Members are const because the
/// state is one atomic word (a const bucket still grants tokens), which is
/// what lets a pipeline share it by std::ref.
template <clock Clock = steady_clock>
class basic_token_bucket {
    struct counters;  // below: counts, per thread

public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// A full bucket. Throws std::invalid_argument when options.validate()
    /// names a field: "resil::token_bucket: `burst` must be in [1, 1000000000000000], got 0".
    /// `stripe_count`: the per-thread counters of metrics() (see the banner).
    explicit basic_token_bucket(token_bucket_options options = {}, Clock clock = {},
                                std::size_t stripe_count = detail::default_stripe_count())
        : options_(validated(options)),
          params_(detail::gcra::make_params(options_.rate, options_.burst)),
          clock_(std::move(clock)),
          origin_(clock_.now()),
          counts_(stripe_count) {}

    basic_token_bucket(const basic_token_bucket&) = delete;
    basic_token_bucket& operator=(const basic_token_bucket&) = delete;

    /// Takes `n` tokens now if the bucket holds them; never waits. n = 0 is
    /// granted and takes nothing; n > burst is `exceeds_burst`. Throws
    /// std::invalid_argument for a negative n. Does not allocate.
    [[nodiscard]] RESIL_DETAIL_ALWAYS_INLINE token_bucket_result try_acquire(std::int64_t n = 1) const {
        return try_acquire(clock_.now(), n);
    }

    /// try_acquire as of instant `now` (a reading of this bucket's clock),
    /// for callers that already read the clock.
    /// Always inlined: the answer's `remaining` and `reset` cost a division
    /// that the compiler drops where they are not read.
    [[nodiscard]] RESIL_DETAIL_ALWAYS_INLINE token_bucket_result try_acquire(time_point now, std::int64_t n = 1) const {
        if (n <= 0 || n > params_.burst) [[unlikely]]
            return unusual(n);
        const auto t = take(now, n);
        if (!t.granted) return rejected(t.wait_ns, t.tat, t.now_units, t.elapsed);
        return standing({}, t.tat, t.now_units, t.elapsed);
    }

    /// Takes `n` tokens, sleeping (interruptibly, through resil::sleep_until on
    /// the bucket's clock) until the instant they exist, but never past the
    /// deadline `until`: when the wait would end after it, returns `rejected` at once without sleeping. The
    /// tokens are reserved before the sleep, so concurrent waiters are served
    /// first come, first served, without a stampede. `stop` cancels the wait
    /// (`cancelled`): the reservation goes back to the bucket when nobody took
    /// tokens after it, and is otherwise forfeited (erring on the side of the
    /// limit). A deadline that is not set lets it wait as long as needed (the
    /// wait is capped at 18 years).
    [[nodiscard]] token_bucket_result acquire(const basic_deadline<Clock>& until, std::int64_t n = 1,
                                std::stop_token stop = {}) const {
        return acquire_until(clock_.now(), until.when(), n, stop);
    }

    /// What start_acquire() decided: the answer, or a reservation to wait for.
    class pending_acquire {
    public:
        /// True when the tokens are reserved and exist only at until(): wait,
        /// then call finish_acquire().
        [[nodiscard]] bool waits() const noexcept { return held_.pending; }
        /// When the reserved tokens exist: wait until then, then call
        /// finish_acquire().
        [[nodiscard]] time_point until() const noexcept { return until_; }
        /// The answer when !waits().
        [[nodiscard]] const token_bucket_result& result() const noexcept { return result_; }

    private:
        friend class basic_token_bucket;
        detail::gcra::reservation held_{};
        time_point until_{};
        token_bucket_result result_{};
    };

    /// acquire() in two halves, for callers that wait without blocking a
    /// thread (on an event loop): start_acquire() grants, rejects or reserves
    /// the tokens as acquire() does and says until when to wait;
    /// finish_acquire() after that wait, `reached` false when it was cut short
    /// (the reservation goes back as acquire()'s does: `cancelled`).
    /// acquire() is the two with the clock's sleep between them.
    [[nodiscard]] pending_acquire start_acquire(const basic_deadline<Clock>& until, std::int64_t n = 1,
                                                const std::stop_token& stop = {}) const {
        return start_at(clock_.now(), until.when(), n, stop);
    }
    /// The second half of start_acquire(), after the wait (see there).
    [[nodiscard]] token_bucket_result finish_acquire(pending_acquire& p, bool reached) const {
        p.held_.pending = false;
        if (!reached) {
            cancel(p.held_);
            return tally({token_bucket_status::cancelled, {}, {}});
        }
        // Where the bucket stood at the decision, its reset counted down by the wait.
        auto granted = p.result_;
        granted.wait = duration{p.held_.wait_ns};
        granted.reset = granted.reset > granted.wait ? granted.reset - granted.wait : duration::zero();
        return tally(granted);
    }

    /// acquire() within a call's context: its deadline and its stop token.
    template <class Context>
        requires requires(const Context& c) {
            { c.deadline().when() } -> std::convertible_to<time_point>;
            { c.stop_token() } -> std::convertible_to<std::stop_token>;
        }
    [[nodiscard]] token_bucket_result acquire(const Context& ctx, std::int64_t n = 1) const {
        const auto r = acquire_until(clock_.now(), ctx.deadline().when(), n, ctx.stop_token());
        if constexpr (requires { ctx.clear_cached_now(); }) ctx.clear_cached_now();  // it may have waited
        return r;
    }

    /// Tokens in the bucket at `now`, in [0, burst], counting the fraction of
    /// the one refilling; for tests and metrics. Lock-free, no side effects.
    [[nodiscard]] double tokens(time_point now) const noexcept {
        return detail::gcra::tokens(params_, tat_.load(std::memory_order_relaxed),
                                    detail::gcra::to_units(params_, elapsed_ns(now)));
    }
    /// Tokens available now, fractional: the bucket's level at the clock's
    /// reading.
    [[nodiscard]] double tokens() const noexcept { return tokens(clock_.now()); }

    /// Whole tokens a request could take now, in [0, burst].
    [[nodiscard]] std::int64_t available() const noexcept { return available(clock_.now()); }
    /// Whole tokens available at `now`.
    [[nodiscard]] std::int64_t available(time_point now) const noexcept {
        return detail::gcra::whole_tokens(params_, tat_.load(std::memory_order_relaxed),
                                          detail::gcra::to_units(params_, elapsed_ns(now)));
    }

    /// The options it was built with.
    [[nodiscard]] const token_bucket_options& options() const noexcept { return options_; }
    /// The clock it reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// Requests answered since construction, by answer (the pipeline's
    /// included), counted per thread: exact when no request is in progress.
    [[nodiscard]] token_bucket_metrics metrics() const noexcept {
        token_bucket_metrics m;
        for (std::size_t i = 0; i < counts_.size(); ++i) {
            m.granted += counts_[i].granted.load(std::memory_order_relaxed);
            m.rejected += counts_[i].rejected.load(std::memory_order_relaxed);
            m.exceeds_burst += counts_[i].exceeds_burst.load(std::memory_order_relaxed);
            m.cancelled += counts_[i].cancelled.load(std::memory_order_relaxed);
        }
        return m;
    }

    /// As a pipeline policy: one token per call. Without a token the call is
    /// rejected with reason::rate_limited and the wait as its retry_after
    /// (events::rejected is emitted); with options().max_wait > 0 it first
    /// waits up to that long, within the call's deadline and stop token
    /// (reason::cancelled when the stop token fires).
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);  // the steps below, driven blocking
    }

    /// A reserved token, while a call waits for it (options().max_wait > 0).
    class admission {
    private:
        friend class basic_token_bucket;
        detail::gcra::reservation reservation_{};
    };

    /// What the policy keeps during a call (policy_steps.hpp): the
    /// reservation the call waits for.
    template <class Context, class Outcome>
    using call_state = admission;

    /// The policy's first step: takes the call's token; or reserves it and
    /// asks to wait until it exists (options().max_wait > 0, within the
    /// call's deadline); or refuses the call with reason::rate_limited and
    /// the wait for a token as retry_after (emitting events::rejected).
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        if constexpr (requires { typename Context::clock_type; })
            static_assert(std::is_same_v<typename Context::clock_type, Clock>,
                          "resil::basic_token_bucket: the pipeline's clock type must be the bucket's clock type");
        // The attempt's reading when the context reads the bucket's time line
        // (one clock read per attempt); the bucket's own clock otherwise: a
        // context built by the caller may carry another time line.
        const auto now = shares_readings(ctx) ? ctx.cached_now() : clock_.now();
        if (options_.max_wait > duration::zero()) return enter_waiting(ctx, a, now);
        // The decision alone: a pipeline reads no `remaining` or `reset`.
        const auto t = take(now, 1);
        if (t.granted) return layer_in::proceed();
        return reject(ctx, rejected(t.wait_ns));
    }

    /// After the wait enter() asked for: `reached` false when it was cut
    /// short (the reservation goes back, as acquire() does, and the call is
    /// refused with reason::cancelled, emitting events::rejected).
    template <class Context>
    layer_in waited(Context& ctx, admission& a, bool reached) const {
        ctx.clear_cached_now();  // it waited
        if (reached) {
            count(&counters::granted);
            return layer_in::proceed();
        }
        cancel(a.reservation_);
        return reject(ctx, tally({token_bucket_status::cancelled, {}, {}}));
    }

    /// Nothing to do on the way out: the token is spent.
    template <class Context, class Outcome>
    layer_out leave(Context&, admission&, Outcome&) const noexcept {
        return layer_out::proceed();
    }

private:
    template <class Context>
    bool shares_readings(const Context& ctx) const noexcept {
        return detail::context_reads(ctx, clock_);
    }

    static const token_bucket_options& validated(const token_bucket_options& o) {
        throw_if_invalid("resil::token_bucket", o.validate());
        return o;
    }

    // The answers that need no clock: bad input, nothing asked, too much asked.
    std::optional<token_bucket_result> screen(std::int64_t n) const {
        if (n < 0)
            throw std::invalid_argument("resil::token_bucket: cannot take a negative number of tokens, got " +
                                        std::to_string(n));
        if (n == 0) return token_bucket_result{};
        if (n > params_.burst) return token_bucket_result{token_bucket_status::exceeds_burst, {}, {}};
        return std::nullopt;
    }

    // `r` as decided by this bucket, with where it stands: whole tokens at
    // `now_units` given `tat`, and the wait until it gains one more (zero
    // when full). Callers that ignore these (the pipeline) let the compiler
    // drop the arithmetic: it is pure.
    token_bucket_result standing(token_bucket_result r, std::int64_t tat, std::int64_t now_units,
                                 std::int64_t elapsed) const noexcept {
        r.source = decided_by::local;
        r.remaining = detail::gcra::whole_tokens(params_, tat, now_units);
        const auto next = detail::gcra::next_token_at(params_, tat, now_units);
        r.reset = next == 0 ? duration::zero() : duration{detail::gcra::first_ns_at(params_, next) - elapsed};
        return r;
    }

    // enter() with max_wait: reserves the token, up to max_wait (within the
    // call's deadline) ahead. Apart, so that enter() stays small enough to
    // inline where the pipeline never waits.
    template <class Context>
    RESIL_DETAIL_NOINLINE layer_in enter_waiting(Context& ctx, admission& a, time_point now) const {
        const auto patience = detail::saturating_add(now, options_.max_wait);
        const auto call_deadline = ctx.deadline_instant();
        const auto r = reserve(now, call_deadline < patience ? call_deadline : patience, 1, ctx.stop_token(),
                               a.reservation_);
        if (r && a.reservation_.pending)  // counted when the wait ends (waited())
            return layer_in::wait_until(detail::saturating_add(origin_, duration{a.reservation_.ready_ns}));
        if (tally(r)) return layer_in::proceed();
        return reject(ctx, r);
    }

    // One decision on n tokens (1 <= n <= burst) at `now`, counted: granted
    // (`tat` the word stored) or not (`tat` the word read, `wait_ns` until
    // the tokens exist); with the instant in units and ns, for the standing.
    struct taken {
        bool granted = false;
        std::int64_t wait_ns = 0;
        std::int64_t tat = 0;
        std::int64_t now_units = 0;
        std::int64_t elapsed = 0;
    };
    taken take(time_point now, std::int64_t n) const noexcept {
        const auto elapsed = elapsed_ns(now);
        const auto now_units = detail::gcra::to_units(params_, elapsed);
        // Relaxed is enough: the word is the whole state and publishes no
        // other data; its modification order alone keeps the count exact.
        auto tat = tat_.load(std::memory_order_relaxed);
        for (;;) {
            const auto d = detail::gcra::decide(params_, tat, now_units, n);
            if (!d.conforming) {
                count(&counters::rejected);
                return {false, detail::gcra::first_ns_at(params_, d.ready_at) - elapsed, tat, now_units, elapsed};
            }
            if (tat_.compare_exchange_weak(tat, d.new_tat, std::memory_order_relaxed)) {
                count(&counters::granted);
                return {true, 0, d.new_tat, now_units, elapsed};
            }
        }
    }

    // The answers to n <= 0 and n > burst (screen()), counted; out of line,
    // to keep try_acquire() small.
    RESIL_DETAIL_NOINLINE token_bucket_result unusual(std::int64_t n) const { return tally(*screen(n)); }

    // Counts in this thread's stripe: a plain store where the thread writes
    // its cell alone (a locked add would cost a grant as much as its
    // compare-and-swap), else an atomic add on a cell it shares.
    void count(std::atomic<std::uint64_t> counters::*kind) const noexcept {
        const auto cell = counts_.local();
        auto& c = cell.value.*kind;
        if (cell.alone) c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        else c.fetch_add(1, std::memory_order_relaxed);
    }

    // Counts an answer in metrics(); returns it. A grant that took nothing
    // (n = 0: nobody decided) is not counted. Out of line: the answers of
    // the paths that wait, or of the unusual requests.
    RESIL_DETAIL_NOINLINE const token_bucket_result& tally(const token_bucket_result& r) const noexcept {
        switch (r.status) {
            case rate_limit_status::granted:
                if (r.source != decided_by::none) count(&counters::granted);
                break;
            case rate_limit_status::rejected: count(&counters::rejected); break;
            case rate_limit_status::exceeds_burst: count(&counters::exceeds_burst); break;
            case rate_limit_status::cancelled: count(&counters::cancelled); break;
            case rate_limit_status::unavailable:
            case rate_limit_status::no_time: break;  // a bucket never answers these
        }
        return r;
    }

    // Every rejection's answer: the wait (at least 1 ns) and Retry-After, the
    // wait in whole seconds rounded up (a wait is below 2^61 ns); with where
    // the bucket stands, or without (the pipeline's).
    static token_bucket_result rejected(std::int64_t wait_ns) noexcept {
        return {token_bucket_status::rejected, duration{wait_ns > 0 ? wait_ns : 1},
                std::chrono::seconds{detail::gcra::retry_after_seconds(wait_ns)}};
    }
    token_bucket_result rejected(std::int64_t wait_ns, std::int64_t tat, std::int64_t now_units,
                                 std::int64_t elapsed) const noexcept {
        return standing(rejected(wait_ns), tat, now_units, elapsed);
    }

    // Nanoseconds since the origin, clamped to [0, max_elapsed_ns].
    std::int64_t elapsed_ns(time_point now) const noexcept {
        return detail::gcra::elapsed_ns(now.time_since_epoch().count(), origin_.time_since_epoch().count());
    }

    token_bucket_result acquire_until(time_point now, time_point until, std::int64_t n,
                                      const std::stop_token& stop) const {
        pending_acquire p = start_at(now, until, n, stop);
        if (!p.waits()) return p.result_;  // tallied by start_at
        return finish_acquire(p, resil::sleep_until(clock_, p.until_, stop));
    }

    // Sleep (or wait) until the instant the tokens exist, not for `wait` from
    // the entry reading: time lost between that reading and the sleep (a
    // preemption) must not be added, and a reading ahead of the clock
    // (another CPU's, a bogus one) must not wake the caller early.
    pending_acquire start_at(time_point now, time_point until, std::int64_t n, const std::stop_token& stop) const {
        pending_acquire p;
        p.result_ = reserve(now, until, n, stop, p.held_);
        if (p.result_ && p.held_.pending)
            p.until_ = detail::saturating_add(origin_, duration{p.held_.ready_ns});
        else
            tally(p.result_);
        return p;
    }

    // acquire_until without the sleep: grants at once (held.pending false),
    // rejects, or reserves tokens that exist only at origin_ + held.ready_ns
    // (held.pending true: the caller waits, then keeps them or cancel()s).
    token_bucket_result reserve(time_point now, time_point until, std::int64_t n, const std::stop_token& stop,
                                detail::gcra::reservation& held) const {
        if (stop.stop_requested()) return {token_bucket_status::cancelled, {}, {}};
        if (auto early = screen(n)) return *early;
        const auto elapsed = elapsed_ns(now);
        const auto now_units = detail::gcra::to_units(params_, elapsed);
        std::int64_t horizon = until <= now ? 0 : detail::saturating_sub(until, now).count();
        if (horizon > detail::gcra::max_lookahead_ns) horizon = detail::gcra::max_lookahead_ns;
        const auto lookahead = detail::gcra::to_units(params_, elapsed + horizon) - now_units;

        auto tat = tat_.load(std::memory_order_relaxed);
        detail::gcra::decision d;
        for (;;) {  // on success `tat` keeps the value replaced, for a refund
            d = detail::gcra::decide(params_, tat, now_units, n, lookahead);
            if (!d.conforming)
                return rejected(detail::gcra::first_ns_at(params_, d.ready_at) - elapsed, tat, now_units, elapsed);
            if (tat_.compare_exchange_weak(tat, d.new_tat, std::memory_order_relaxed)) break;
        }
        const auto ready_ns = detail::gcra::first_ns_at(params_, d.ready_at);
        const auto wait_ns = ready_ns - elapsed;
        if (wait_ns > 0) held = {tat, d.new_tat, ready_ns, wait_ns, true};
        return standing({}, d.new_tat, now_units, elapsed);
    }

    // Undo a reservation only while it is still the last change: then
    // restoring the old word is exactly "it never happened". Once others
    // built on it (or the bucket refilled past it), subtracting it could hand
    // out tokens a real bucket would not have.
    void cancel(const detail::gcra::reservation& held) const noexcept {
        auto expected = held.new_tat;
        tat_.compare_exchange_strong(expected, held.old_tat, std::memory_order_relaxed);
    }

    template <class Context>
    static layer_in reject(Context& ctx, const token_bucket_result& r) {
        if (r.status == token_bucket_status::cancelled) {
            ctx.emit(events::rejected{reason::cancelled, std::nullopt});
            return layer_in::refuse(reason::cancelled);
        }
        ctx.emit(events::rejected{reason::rate_limited, r.wait});
        return layer_in::refuse(reason::rate_limited, r.wait);
    }

    token_bucket_options options_;
    detail::gcra::params params_;
    [[no_unique_address]] Clock clock_;
    time_point origin_;
    // The answers, counted per thread (metrics()).
    struct counters {
        std::atomic<std::uint64_t> granted{0};
        std::atomic<std::uint64_t> rejected{0};
        std::atomic<std::uint64_t> exceeds_burst{0};
        std::atomic<std::uint64_t> cancelled{0};
    };
    detail::owned_stripes<counters> counts_;
    // The theoretical arrival time, in units since origin_ (see detail/gcra.hpp).
    // 0 means full at the origin.
    mutable std::atomic<std::int64_t> tat_{0};
};

/// A token bucket on the real monotonic clock.
using token_bucket = basic_token_bucket<>;

}  // namespace resil
