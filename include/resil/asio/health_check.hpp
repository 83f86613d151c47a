// resil/asio/health_check.hpp — active health checks (resil/balancer/
// health_check.hpp) driven by an Asio executor instead of a thread of the
// caller's: a steady_timer wakes the checker when its next probe is due.
//
//   resil::health_checker checker{lb, probe, {.interval = 15s, .timeout = 2s}};
//   asio::thread_pool probes{1};                      // probes block: give them a thread
//   auto driver = resil::asio::health_check_timer(probes.get_executor(), checker);
//   driver.start();
//   ...
//   driver.stop();        // waits for a round under way (its current probe); none starts after
//
// The same checker and the same run_once() as the blocking drivers: the
// timer only decides when it runs. Probes are blocking calls, run on the
// executor's threads; use an executor whose threads may block (a
// thread_pool of its own), not the io_context serving your calls. The timer
// and its handlers run on a strand of the executor, so a pool of several
// threads never runs two rounds, or a round and the cancel, at once. The
// timer waits real time: use a checker on the real clock (resil::steady_clock).
//
// stop() returns once no round is running and none will start: the checker
// may be destroyed after it. A round under way sees the stop between two
// probes, so stop() waits for one probe at most (its timeout, when the probe
// honours it). Called from inside a probe (on the round's own thread), stop()
// cannot wait for the round it is part of: it only stops the ones after.
#pragma once

#include "config.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <system_error>
#include <thread>

#include "../balancer/health_check.hpp"

namespace resil::asio {

/// Runs a health checker's rounds on an Asio executor: a steady_timer wakes the
/// checker when its next probe is due (start() to begin, stop() to end; stop()
/// waits for a round under way). Probes block: give it an executor whose
/// threads may block. The checker must outlive it.
template <class Executor, resil::clock Clock = resil::steady_clock>
class health_check_timer {
public:
    /// The executor's execution context must outlive the timer (its
    /// destructor posts the cancel); the checker must outlive the last
    /// stop() (the destructor calls it).
    health_check_timer(Executor executor, basic_health_checker<Clock>& checker)
        : state_(std::make_shared<state>(executor, checker)) {}
    health_check_timer(const health_check_timer&) = delete;
    health_check_timer& operator=(const health_check_timer&) = delete;
    ~health_check_timer() { stop(); }

    /// Runs the first probes on the executor now, then whenever the next is due.
    void start() {
        std::uint64_t generation = 0;
        {
            const std::lock_guard lock(state_->mutex);
            state_->stopped = false;
            state_->stop = std::stop_source{};
            generation = ++state_->generation;
        }
        ::asio::post(state_->timer.get_executor(), [s = state_, generation] { s->tick(generation); });
    }

    /// Stops the rounds and waits for the one under way (see the banner).
    void stop() noexcept {
        std::unique_lock lock(state_->mutex);
        state_->stopped = true;
        state_->stop.request_stop();
        if (state_->running_on != std::this_thread::get_id())
            state_->idle.wait(lock, [&] { return state_->running_on == std::thread::id{}; });
        lock.unlock();
        // The timer is cancelled on its strand, where its handlers run.
        try {
            ::asio::post(state_->timer.get_executor(), [s = state_] { s->timer.cancel(); });
        } catch (...) {  // NOLINT(bugprone-empty-catch): the stopped flag already ends the loop
        }
    }

private:
    struct state : std::enable_shared_from_this<state> {
        state(Executor executor, basic_health_checker<Clock>& c) : timer(::asio::make_strand(executor)), checker(c) {}
        ::asio::steady_timer timer;  // on a strand: tick() and the cancel never run at once
        basic_health_checker<Clock>& checker;
        std::mutex mutex;
        std::condition_variable idle;
        bool stopped = false;
        std::thread::id running_on{};  ///< the thread running a round; none: idle
        std::stop_source stop;
        /// Counts start()s: a wait from before a stop() and start() ends its chain.
        std::uint64_t generation = 0;

        void tick(std::uint64_t started_as) {
            std::stop_token token;
            {
                const std::lock_guard lock(mutex);
                if (stopped || started_as != generation) return;
                running_on = std::this_thread::get_id();
                token = stop.get_token();
            }
            struct end_round {
                state& s;
                ~end_round() {
                    {
                        const std::lock_guard lock(s.mutex);
                        s.running_on = std::thread::id{};
                    }
                    s.idle.notify_all();
                }
            } const done{*this};
            const auto next = checker.run_once(token);
            if (token.stop_requested()) return;
            const auto wait = std::max(duration::zero(), next - checker.clock().now());
            timer.expires_after(wait);
            timer.async_wait([self = this->shared_from_this(), started_as](std::error_code ec) {
                if (!ec) self->tick(started_as);
            });
        }
    };
    std::shared_ptr<state> state_;
};

/// Deduces the executor and the checker's clock.
template <class Executor, resil::clock Clock>
health_check_timer(Executor, basic_health_checker<Clock>&) -> health_check_timer<Executor, Clock>;

}  // namespace resil::asio
