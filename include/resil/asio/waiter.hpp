// resil/asio/waiter.hpp — waiting without holding a thread: the asynchronous
// counterpart of a clock's sleep_for / sleep_until.
//
//   bool reached = co_await resil::asio::wait_for(clock, 100ms, ctx.stop_token());
//
// A real clock (resil::steady_clock, resil::coarse_steady_clock, or any clock
// of yours) waits on an asio::steady_timer of the awaiting coroutine's
// executor: no thread is blocked, and the wait ends early, returning false,
// when the coroutine's Asio cancellation fires or `stop` is requested (from
// any thread: the request is posted to the executor, which alone touches the
// timer). A clock with virtual time (resil::testing::manual_clock; others opt
// in through waiter_traits) completes at once, after advancing the clock
// exactly as its own sleep would: retry waits in tests take no time and the
// asynchronous pipeline makes the same readings as the blocking one.
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <chrono>
#include <memory>
#include <stop_token>
#include <system_error>

#include <asio/awaitable.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "../clock.hpp"
#include "../detail/saturate.hpp"
#include "../testing/manual_clock.hpp"

namespace resil::asio {

/// How the asynchronous pipeline waits on a clock. `virtual_time`: the
/// clock's sleeps only move its time (a test clock), so a wait completes at
/// once through clock.sleep_until; otherwise a timer waits for real.
/// Specialise it for a clock of yours with virtual time.
template <class Clock>
struct waiter_traits {
    /// False: the clock's time is real, so a wait arms an Asio timer.
    static constexpr bool virtual_time = false;
};
/// The manual clock's waits: virtual time, advanced at once instead of waiting
/// on a timer (tests on the manual clock run in microseconds).
template <>
struct waiter_traits<testing::manual_clock> {
    /// True: a wait advances the manual clock instead of arming a timer.
    static constexpr bool virtual_time = true;
};

namespace detail {

/// A timer a stop request may reach from another thread: shared with the
/// posted cancellation, which may run after the wait is over.
struct stoppable_timer {
    explicit stoppable_timer(const ::asio::any_io_executor& ex) : timer(ex) {}
    ::asio::steady_timer timer;
};

}  // namespace detail

/// Waits until `t` on `clock`: true when `t` was reached, false when the
/// awaiting coroutine's cancellation or `stop` came first (also before).
template <clock Clock>
::asio::awaitable<bool> wait_until(const Clock& clock, time_point t, std::stop_token stop = {}) {
    if (stop.stop_requested()) co_return false;
    const ::asio::cancellation_state state = co_await ::asio::this_coro::cancellation_state;
    if (state.cancelled() != ::asio::cancellation_type::none) co_return false;
    if constexpr (waiter_traits<Clock>::virtual_time) {
        co_return resil::sleep_until(clock, t, stop);
    } else {
        const auto left = t - clock.now();
        if (left <= duration::zero()) co_return true;
        std::error_code ec;
        if (!stop.stop_possible()) {
            // Nothing but Asio can cut this wait short: a timer of the frame.
            ::asio::steady_timer timer{co_await ::asio::this_coro::executor};
            timer.expires_after(left);
            co_await timer.async_wait(::asio::redirect_error(::asio::use_awaitable, ec));
        } else {
            // `stop` may fire on any thread, but only the executor may touch
            // the timer: the request is posted, and the timer is shared with
            // it, since it may run after this wait is over.
            auto shared = std::make_shared<detail::stoppable_timer>(co_await ::asio::this_coro::executor);
            shared->timer.expires_after(left);
            std::stop_callback on_stop(stop, [shared] {
                ::asio::post(shared->timer.get_executor(), [shared] { shared->timer.cancel(); });
            });
            co_await shared->timer.async_wait(::asio::redirect_error(::asio::use_awaitable, ec));
        }
        co_return !ec && !stop.stop_requested();
    }
}

/// Waits for `d` on `clock` (wait_until from the clock's reading now).
template <clock Clock>
::asio::awaitable<bool> wait_for(const Clock& clock, duration d, std::stop_token stop = {}) {
    if constexpr (waiter_traits<Clock>::virtual_time) {
        // As the clock's own sleep_for: advances by exactly `d`.
        if (stop.stop_requested()) co_return false;
    const ::asio::cancellation_state state = co_await ::asio::this_coro::cancellation_state;
    if (state.cancelled() != ::asio::cancellation_type::none) co_return false;
        co_return clock.sleep_for(d, stop);
    } else {
        co_return co_await wait_until(clock, resil::detail::saturating_add(clock.now(), d), std::move(stop));
    }
}

}  // namespace resil::asio
