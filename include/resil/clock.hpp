// resil/clock.hpp — the time seam: every policy reads time and sleeps through
// a clock object, never through std::chrono or std::this_thread directly.
//
//   resil::steady_clock clock;                    // the default: real time
//   auto t0 = clock.now();
//   bool slept = clock.sleep_for(100ms, stop);    // false when `stop` fired first
//   resil::sleep_until(clock, t0 + 1s, stop);     // any clock; absolute, so a late start is not added
//
// Tests use resil::testing::manual_clock (resil/testing/manual_clock.hpp),
// whose sleeps advance virtual time at once.
#pragma once

#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string_view>
#include <thread>
#include <type_traits>

#include "enum_name.hpp"

namespace resil {

/// Durations and instants used throughout resil: nanosecond ticks of a
/// monotonic clock. Every clock, real or manual, speaks these types, so
/// deadlines and windows are plain values whichever clock produced them.
using duration = std::chrono::nanoseconds;
/// An instant of every resil clock: the steady clock's epoch, in nanoseconds.
using time_point = std::chrono::time_point<std::chrono::steady_clock, duration>;

/// An instance clock: `now()` and an interruptible `sleep_for`.
/// `sleep_for(d, stop)` returns true when the whole of `d` elapsed and false
/// when `stop` was requested first (including before the call). A clock is a
/// cheap handle: policies copy it, and copies observe the same time.
/// Optionally, `sleep_until(time_point, stop_token)` with the same result:
/// resil::sleep_until() uses it when present (see below).
template <class C>
concept clock = std::copy_constructible<C> && requires(const C& c, duration d, std::stop_token stop) {
    { c.now() } -> std::same_as<time_point>;
    { c.sleep_for(d, stop) } -> std::same_as<bool>;
};

/// The real monotonic clock (std::chrono::steady_clock). Stateless; thread-safe.
class steady_clock {
public:
    /// The monotonic time now (std::chrono::steady_clock).
    [[nodiscard]] time_point now() const noexcept {
        return std::chrono::time_point_cast<duration>(std::chrono::steady_clock::now());
    }

    /// Sleeps for `d`, waking early when `stop` is requested. A non-positive
    /// `d` returns at once. Does not allocate.
    bool sleep_for(duration d, std::stop_token stop = {}) const {
        if (stop.stop_requested()) return false;
        if (d <= duration::zero()) return true;
        return sleep_until(now() + d, std::move(stop));
    }

    /// Sleeps until the instant `t`, waking early when `stop` is requested;
    /// an instant already past returns at once. Does not allocate.
    bool sleep_until(time_point t, std::stop_token stop = {}) const {
        if (stop.stop_requested()) return false;
        if (!stop.stop_possible()) {
            std::this_thread::sleep_until(t);
            return true;
        }
        struct waiter {
            std::mutex mutex;
            std::condition_variable woken;
            bool stopped = false;
        } w;
        std::stop_callback on_stop(stop, [&w] {
            {
                std::lock_guard lock(w.mutex);
                w.stopped = true;
            }
            w.woken.notify_all();
        });
        std::unique_lock lock(w.mutex);
        w.woken.wait_until(lock, t, [&w] { return w.stopped; });
        return !w.stopped;
    }
};

static_assert(clock<steady_clock>);

/// Where a policy gets the time: the one clock rule every policy follows
/// (docs/clock.md, "The clock rule"). A policy says which in a member
/// `static constexpr resil::time_source time_source`, which
/// resil::policy_checklist (resil/policy_checklist.hpp) checks against its
/// shape.
enum class time_source : std::uint8_t {
    /// A clock of its own: `basic_X<Clock>` (steady_clock by default) with
    /// `clock_type` and `clock()`. It reads that clock alone; in a pipeline
    /// on the same time line it takes the pipeline's reading instead; its
    /// members that take `now` take a reading of that clock.
    own_clock,
    /// No clock: every member that depends on time takes `now`, read by its
    /// driver (the retry policy, a hedged call, a balanced call) from the
    /// driver's clock.
    caller_now,
    /// No clock: it reads the call's context (ctx.cached_now(), ctx.clock()),
    /// which holds the pipeline's clock.
    call_context,
    /// It reads no time.
    none,
};

/// The time source's name, e.g. "own_clock".
[[nodiscard]] constexpr enum_name to_string(time_source s) noexcept {
    switch (s) {
        case time_source::own_clock: return "own_clock";
        case time_source::caller_now: return "caller_now";
        case time_source::call_context: return "call_context";
        case time_source::none: return "none";
    }
    return "unknown";
}

/// Whether two clocks read the same time line, so that a reading of one
/// stands for a reading of the other: clocks of one type that are stateless
/// (steady_clock, coarse_steady_clock) or compare equal (copies of one
/// testing::manual_clock). A policy with a clock of its own (the circuit
/// breaker) uses the pipeline's reading when this holds, and reads its own
/// clock otherwise. A clock type of yours opts in with operator==.
template <clock A, clock B>
[[nodiscard]] constexpr bool same_time_line(const A& a, const B& b) noexcept {
    if constexpr (!std::is_same_v<A, B>)
        return false;
    else if constexpr (std::is_empty_v<A>)
        return true;
    else if constexpr (std::equality_comparable<A>)
        return a == b;
    else
        return false;
}

namespace detail {
/// Whether a context reads the time line of a policy's own clock `own`, so
/// that the context's reading (cached_now()) stands for a reading of `own`.
template <class Context, clock Clock>
[[nodiscard]] bool context_reads(const Context& ctx, const Clock& own) noexcept {
    if constexpr (requires { { ctx.clock() } -> std::convertible_to<const Clock&>; })
        return resil::same_time_line(static_cast<const Clock&>(ctx.clock()), own);
    else
        return false;
}
}  // namespace detail

/// Sleeps on `c` until the instant `t`: true when `t` was reached, false when
/// `stop` was requested first. Uses the clock's own `sleep_until(t, stop)`
/// when it has one; otherwise reads now() right before a sleep_for, so time
/// spent between deciding on `t` and sleeping is not slept again. Prefer it
/// to `sleep_for(t - reading)` whenever the reading is not fresh.
template <clock C>
bool sleep_until(const C& c, time_point t, std::stop_token stop = {}) {
    if constexpr (requires { { c.sleep_until(t, stop) } -> std::same_as<bool>; }) {
        return c.sleep_until(t, std::move(stop));
    } else {
        if (stop.stop_requested()) return false;
        const auto left = t - c.now();
        if (left <= duration::zero()) return true;
        return c.sleep_for(left, std::move(stop));
    }
}

}  // namespace resil
