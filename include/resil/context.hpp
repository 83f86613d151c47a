// resil/context.hpp — what every policy and the callable see during one call:
// the deadline, the attempt number, the stop token, the per-attempt timeouts,
// the operation's idempotency key and the last server hint.
//
//   auto out = pipeline([&](resil::context& ctx) {
//       auto t = ctx.attempt_timeouts();              // clamped to the deadline now
//       return client.get(url, t.connect, t.total, ctx.stop_token());
//   });
//
// The context owns the call's clock: every reading and every wait of the
// call goes through ctx.clock(), and the deadline it hands out (deadline())
// is built from it.
//
// A pipeline makes one context per call. To pass in what the caller knows (a
// stop token, an upstream deadline, "this operation is idempotent", a key
// kept from an earlier try), build the context yourself and call
// `pipeline.execute(ctx, callable)`.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string_view>
#include <type_traits>
#include <utility>

#include "backoff.hpp"
#include "clock.hpp"
#include "deadline.hpp"
#include "idempotency_key_type.hpp"
#include "outcome.hpp"
#include "timeouts.hpp"

namespace resil {

namespace detail {
// This thread's jitter engine, defined in detail/thread_jitter.hpp (which
// retry.hpp includes). Declared here so that a context, and a pipeline, need
// not include the OS seeding behind it until a policy draws jitter.
RESIL_DECL jitter_engine& thread_jitter();
}  // namespace detail

/// What one attempt may take, computed from one clock reading.
struct attempt_limits {
    /// The context's timeouts, each clamped to what is left of the deadline:
    /// every field at least timeouts::min_attempt_time.
    resil::timeouts timeouts{};
    /// The reading they were computed from; an attempt's total limit ends at
    /// `started + timeouts.total`, never after the deadline.
    time_point started{};
};

/// Which UUID version a context generates for its idempotency key.
enum class key_version : std::uint8_t { v4, v7 };

/// What a caller can tell a call up front; every field is optional.
template <clock Clock = steady_clock>
struct basic_call_options {
    /// An upstream deadline (e.g. decoded from the caller's timeout header).
    /// The context reads time on this deadline's clock.
    basic_deadline<Clock> deadline{};
    /// Fires to cancel the call: waits end at once, the curl adapter aborts.
    std::stop_token stop{};
    /// The operation may be repeated safely (GET, PUT, DELETE, a pure POST).
    bool idempotent = false;
    /// A key made earlier for this same operation (e.g. kept across restarts).
    std::optional<resil::idempotency_key> idempotency_key{};
    /// The version of a key the context generates when asked for one.
    key_version new_key_version = key_version::v4;
    /// Draws for jitter; null: a per-thread engine seeded from the OS.
    jitter_engine* jitter = nullptr;
    /// Marks the call for the fault-injection policies configured with this
    /// tag (resil/fault_injection.hpp): in staging, e.g. the value of a
    /// request header that asks for faults. Empty: only untagged policies
    /// apply. The text must outlive the call.
    std::string_view fault_tag{};
};
/// A call's options on resil::steady_clock.
using call_options = basic_call_options<>;

/// The per-call state. Not thread-safe: one call, one thread at a time.
template <clock Clock = steady_clock>
class basic_context {
public:
    /// The clock type it reads.
    using clock_type = Clock;

    basic_context() = default;
    /// A context on `c`, without deadline, timeouts or stop token.
    explicit basic_context(Clock c) : clock_(std::move(c)) {}
    /// A context with a call's options (deadline, timeouts, stop token,
    /// idempotency) on their clock.
    explicit basic_context(basic_call_options<Clock> options)
        : clock_(options.deadline.clock()),
          deadline_(options.deadline.when()),
          stop_(std::move(options.stop)),
          jitter_(options.jitter),
          fault_tag_(options.fault_tag),
          key_(options.idempotency_key.value_or(resil::idempotency_key{})),
          has_key_(options.idempotency_key.has_value()),
          idempotent_(options.idempotent),
          key_version_(options.new_key_version) {}

    // Time. The context owns the clock; everything in the call reads it here.
    /// The clock every policy of the call reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }
    /// Makes the context read `c` (a pipeline gives a context without a
    /// deadline its own clock, so both share one time line).
    void set_clock(Clock c) noexcept(std::is_nothrow_move_assignable_v<Clock>) {
        clock_ = std::move(c);
        clear_cached_now();  // a reading of the old clock stands for nothing on the new one
    }
    /// Reads the clock, and keeps the reading as this moment's (cached_now()).
    [[nodiscard]] time_point now() const noexcept { return last_now_ = clock_.now(); }
    /// The reading of this moment of the call: the one last taken through
    /// the context, unless something that takes time ran since (then a fresh
    /// one). This is how a pipeline reads the clock once per attempt: every
    /// policy asks here, and only the first to ask reads. A pipeline drops the
    /// reading before and after it runs the callable, and resil's policies
    /// drop it after every wait; a policy of your own that waits, or runs
    /// something slow, calls clear_cached_now() afterwards.
    [[nodiscard]] time_point cached_now() const noexcept { return last_now_ == time_point{} ? now() : last_now_; }
    /// Drops the kept reading: the next cached_now() reads the clock.
    void clear_cached_now() const noexcept { last_now_ = time_point{}; }
    /// Former names, kept for one release: "cached" says what the reading is
    /// (kept, not fresh), and clear_cached_now() what dropping it does.
    [[deprecated("use cached_now()")]] [[nodiscard]] time_point recent_now() const noexcept { return cached_now(); }
    /// Former name of clear_cached_now().
    [[deprecated("use clear_cached_now()")]] void forget_now() const noexcept { clear_cached_now(); }

    /// The deadline of the whole call (all attempts), on the context's clock;
    /// no deadline by default. A value built on demand: keep a copy, not a
    /// reference, beyond the full expression.
    [[nodiscard]] basic_deadline<Clock> deadline() const {
        return basic_deadline<Clock>::at(deadline_, clock_);
    }
    /// The deadline's instant without building a deadline; time_point::max()
    /// when there is none.
    [[nodiscard]] time_point deadline_instant() const noexcept { return deadline_; }
    /// Moves the deadline earlier to `t`; a later `t` changes nothing.
    void tighten_deadline(time_point t) noexcept {
        if (t < deadline_) deadline_ = t;
    }
    /// Replaces the deadline by the instant `t` (time_point::max(): none);
    /// policies restore an outer deadline with this.
    void set_deadline_instant(time_point t) noexcept { deadline_ = t; }
    /// Replaces the deadline, and reads time on `d`'s clock from now on.
    void set_deadline(basic_deadline<Clock> d) noexcept(std::is_nothrow_move_assignable_v<Clock>) {
        deadline_ = d.when();
        clock_ = d.clock();
        clear_cached_now();
    }
    /// What is left of the deadline now; duration::max() without one (and
    /// then the clock is not read).
    [[nodiscard]] duration remaining() const noexcept {
        return deadline_ == time_point::max() ? duration::max() : detail::time_left(deadline_, clock_.now());
    }
    /// What is left of the deadline at the reading `now`.
    [[nodiscard]] duration remaining(time_point now) const noexcept { return detail::time_left(deadline_, now); }
    /// What is left of the deadline at cached_now(): what policies ask. Without
    /// a deadline, duration::max() and no clock read.
    [[nodiscard]] duration cached_remaining() const noexcept {
        return deadline_ == time_point::max() ? duration::max() : detail::time_left(deadline_, cached_now());
    }
    /// Former name of cached_remaining().
    [[deprecated("use cached_remaining()")]] [[nodiscard]] duration recent_remaining() const noexcept {
        return cached_remaining();
    }

    /// 1 for the first attempt; 0 before any.
    [[nodiscard]] std::uint32_t attempt() const noexcept { return attempt_; }
    /// 0 starts a new call: nothing is counted in a budget for it yet.
    void set_attempt(std::uint32_t n) noexcept {
        attempt_ = n;
        repeatable_ = -1;
        if (n == 0) counted_ = false;
    }
    /// Whether this call was counted in a retry budget (a retry policy, or a
    /// hedge run outside any, deposits once per call and says so here).
    [[nodiscard]] bool counted_in_budget() const noexcept { return counted_; }
    /// Says that the call was counted in a retry budget (so no other layer
    /// deposits again).
    void mark_counted_in_budget() noexcept { counted_ = true; }

    /// The call's stop token: a stop request cancels waits and attempts.
    [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
    /// Whether stop was requested on the call's stop token.
    [[nodiscard]] bool stop_requested() const noexcept { return stop_.stop_requested(); }
    /// Replaces the stop token (a driver that bridges another cancellation
    /// mechanism to it, such as resil/asio, hands the callable its own).
    void set_stop_token(std::stop_token t) noexcept { stop_ = std::move(t); }

    /// The per-attempt timeouts as configured (unclamped); no limits by default.
    [[nodiscard]] const resil::timeouts& timeouts() const noexcept { return timeouts_; }
    /// Sets the per-attempt timeouts (timeout_policy does: tightened, never
    /// loosened).
    void set_timeouts(const resil::timeouts& t) noexcept { timeouts_ = t; }
    /// The per-attempt timeouts clamped to what is left of the deadline now:
    /// none exceeds it. A 0 ms value means no time is left.
    [[nodiscard]] resil::timeouts attempt_timeouts() const noexcept { return timeouts_.clamp_to(remaining()); }
    /// The limits of an attempt starting now, from one clock reading, or none
    /// when less than timeouts::min_attempt_time is left of the deadline: then
    /// the attempt must not start. Without a deadline the clock is still read
    /// once (the reading anchors the attempt's total limit).
    [[nodiscard]] std::optional<attempt_limits> limits_for_attempt() const noexcept {
        const time_point started = now();
        const duration left = detail::time_left(deadline_, started);
        if (!resil::timeouts::enough_for_attempt(left)) return std::nullopt;
        return attempt_limits{timeouts_.clamp_to(left), started};
    }

    /// Whether the operation may be repeated without harm.
    [[nodiscard]] bool idempotent() const noexcept { return idempotent_; }
    /// Says whether the operation may be repeated without harm (default: not
    /// idempotent).
    void mark_idempotent(bool yes = true) noexcept { idempotent_ = yes; }

    /// The operation's idempotency key: made on first use, then the same for
    /// every attempt of this call. Making one needs the generator: include
    /// <resil/idempotency_key.hpp> (resil.hpp and the curl client do) in the
    /// file that calls this.
    [[nodiscard]] const resil::idempotency_key& idempotency_key() {
        if (!has_key_) {
            // Dependent on Clock: only a call of this function instantiates the generator.
            using generator = std::conditional_t<sizeof(Clock) != 0, detail::key_generator, void>;
            key_ = key_version_ == key_version::v7 ? resil::idempotency_key::v7<generator>()
                                                   : resil::idempotency_key::v4<generator>();
            has_key_ = true;
        }
        return key_;
    }
    /// Whether the call has an idempotency key yet (made or set).
    [[nodiscard]] bool has_idempotency_key() const noexcept { return has_key_; }
    /// Sets the call's idempotency key (an upstream caller's, to pass it on):
    /// every attempt then sends it.
    void set_idempotency_key(const resil::idempotency_key& k) noexcept {
        key_ = k;
        has_key_ = true;
    }
    /// A failure that may have reached the server can be retried when true:
    /// what the callable said of this attempt (mark_repeatable), else whether
    /// the operation is idempotent or carries a key.
    [[nodiscard]] bool safe_to_repeat() const noexcept {
        return repeatable_ >= 0 ? repeatable_ == 1 : (idempotent_ || has_key_);
    }
    /// Says whether this attempt's request may be repeated (a client adapter
    /// knows: an idempotent method, or a key it actually sent). Cleared when
    /// the next attempt starts.
    void mark_repeatable(bool yes) noexcept { repeatable_ = yes ? 1 : 0; }
    /// Whether the callable has said (mark_repeatable) for this attempt.
    [[nodiscard]] bool repeatable_marked() const noexcept { return repeatable_ >= 0; }

    /// What the last attempt's result said besides its verdict.
    [[nodiscard]] const server_hint& last_hint() const noexcept { return last_hint_; }
    /// Sets what the last attempt's result said besides its verdict (the
    /// pipeline does, from the classification).
    void set_last_hint(const server_hint& h) noexcept { last_hint_ = h; }

    /// The random source for jitter: the caller's, or this thread's engine
    /// (detail/thread_jitter.hpp, included by retry.hpp: a policy of your own
    /// that draws here includes it too).
    [[nodiscard]] jitter_engine& jitter() { return jitter_ ? *jitter_ : detail::thread_jitter(); }

    /// The call's fault tag (call_options::fault_tag): which tagged
    /// fault-injection policies apply to it. Empty by default.
    [[nodiscard]] std::string_view fault_tag() const noexcept { return fault_tag_; }
    /// Tags the call for fault injection; `tag` must outlive the call.
    void set_fault_tag(std::string_view tag) noexcept { fault_tag_ = tag; }

    /// Events from policies; a plain context has no listener. (A pipeline's
    /// context type carries its listener and hides this.)
    template <class Event>
    constexpr void emit(const Event&) const noexcept {}

private:
    [[no_unique_address]] Clock clock_{};
    time_point deadline_ = time_point::max();  // max(): no deadline
    mutable time_point last_now_{};
    std::stop_token stop_{};
    resil::timeouts timeouts_{};
    server_hint last_hint_{};
    jitter_engine* jitter_ = nullptr;
    std::string_view fault_tag_{};
    resil::idempotency_key key_{};
    std::uint32_t attempt_ = 0;
    bool has_key_ = false;
    bool idempotent_ = false;
    bool counted_ = false;
    std::int8_t repeatable_ = -1;  // -1: not said for this attempt
    key_version key_version_ = key_version::v4;
};

/// A call's context on resil::steady_clock: what pipelines on the default clock
/// pass to the callable.
using context = basic_context<>;

}  // namespace resil
