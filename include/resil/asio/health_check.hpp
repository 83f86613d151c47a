// resil/asio/health_check.hpp — active health checks (resil/balancing/
// health_check.hpp) driven by an Asio executor instead of a thread of the
// caller's: a steady_timer wakes the checker when its next probe is due.
//
//   resil::health_checker checker{lb, probe, {.interval = 15s, .timeout = 2s}};
//   asio::thread_pool probes{1};                      // probes block: give them a thread
//   auto driver = resil::asio::health_check_timer(probes.get_executor(), checker);
//   driver.start();
//   ...
//   driver.stop();                                     // no probe starts after this returns
//
// The same checker and the same run_once() as the blocking drivers: the
// timer only decides when it runs. Probes are blocking calls, run on the
// executor's thread; use an executor whose thread may block (a thread_pool
// of its own), not the io_context serving your calls. The timer waits real
// time: use a checker on the real clock (resil::steady_clock).
#pragma once

#include "config.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <system_error>

#include "../balancing/health_check.hpp"

namespace resil::asio {

template <class Executor, resil::clock Clock = resil::steady_clock>
class health_check_timer {
public:
    /// The checker must outlive the timer's last run (stop() first), and the
    /// executor's execution context must outlive the timer (its destructor posts the cancel).
    health_check_timer(Executor executor, basic_health_checker<Clock>& checker)
        : state_(std::make_shared<state>(executor, checker)) {}
    health_check_timer(const health_check_timer&) = delete;
    health_check_timer& operator=(const health_check_timer&) = delete;
    ~health_check_timer() { stop(); }

    /// Runs the first probes on the executor now, then whenever the next is due.
    void start() {
        state_->stopped.store(false, std::memory_order_release);
        ::asio::post(state_->timer.get_executor(), [s = state_] { s->tick(); });
    }

    /// Cancels the timer: no run starts after this (one already running ends on its own).
    void stop() noexcept {
        state_->stopped.store(true, std::memory_order_release);
        // The timer is cancelled on its executor, where its handlers run.
        try {
            ::asio::post(state_->timer.get_executor(), [s = state_] { s->timer.cancel(); });
        } catch (...) {  // NOLINT(bugprone-empty-catch): the stopped flag already ends the loop
        }
    }

private:
    struct state : std::enable_shared_from_this<state> {
        state(Executor executor, basic_health_checker<Clock>& c) : timer(executor), checker(c) {}
        ::asio::steady_timer timer;
        basic_health_checker<Clock>& checker;
        std::atomic<bool> stopped{false};

        void tick() {
            if (stopped.load(std::memory_order_acquire)) return;
            const auto next = checker.run_once();
            const auto wait = std::max(duration::zero(), next - checker.clock().now());
            timer.expires_after(wait);
            timer.async_wait([self = this->shared_from_this()](std::error_code ec) {
                if (!ec) self->tick();
            });
        }
    };
    std::shared_ptr<state> state_;
};

template <class Executor, resil::clock Clock>
health_check_timer(Executor, basic_health_checker<Clock>&) -> health_check_timer<Executor, Clock>;

}  // namespace resil::asio
