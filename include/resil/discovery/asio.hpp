// resil/discovery/asio.hpp — a DNS discovery source (resil/discovery/
// dns_discovery.hpp) driven by an Asio executor instead of a thread of its
// own: a steady_timer wakes it when the next lookup is due. Needs
// resil::discovery and resil::asio.
//
//   resil::dns_discovery triton{{.name = "triton.ml.svc.cluster.local", .port = 8000}, lb};
//   asio::thread_pool lookups{1};                    // lookups block: give them a thread
//   resil::asio::dns_discovery_timer driver{lookups.get_executor(), triton};
//   driver.start();                                  // a lookup now, then after each TTL
//   ...
//   driver.stop();        // waits for a lookup under way; none starts after
//
// The same dns_discovery and the same refresh() as the blocking driver: the
// timer only decides when it runs. A lookup is a blocking call (libresolv's
// res_nquery, at most query_timeout × query_attempts per query) run on the
// executor's threads: use an executor whose threads may block (a
// thread_pool of its own), not the io_context serving your calls. The timer
// and its handlers run on a strand of the executor, so a pool of several
// threads never runs two lookups, or a lookup and the cancel, at once. The
// timer waits real time (resil::steady_clock).
#pragma once

#include "../asio/config.hpp"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "../clock.hpp"
#include "dns_discovery.hpp"

namespace resil::asio {

/// Runs a dns_discovery's lookups on an Asio executor (start() to begin,
/// stop() to end; stop() waits for a lookup under way). Lookups block: give
/// it an executor whose threads may block. The source must outlive it.
template <class Executor>
class dns_discovery_timer {
public:
    /// The executor's execution context must outlive the timer (its
    /// destructor posts the cancel); the source must outlive the last
    /// stop() (the destructor calls it).
    dns_discovery_timer(Executor executor, dns_discovery& source)
        : state_(std::make_shared<state>(executor, source)) {}
    dns_discovery_timer(const dns_discovery_timer&) = delete;
    dns_discovery_timer& operator=(const dns_discovery_timer&) = delete;
    ~dns_discovery_timer() { stop(); }

    /// Runs a lookup on the executor now, then whenever the next is due.
    void start() {
        std::uint64_t generation = 0;
        {
            const std::lock_guard lock(state_->mutex);
            state_->stopped = false;
            generation = ++state_->generation;
        }
        ::asio::post(state_->timer.get_executor(), [s = state_, generation] { s->tick(generation); });
    }

    /// Stops the lookups and waits for the one under way. Called from inside
    /// the source's on_lookup listener it only stops the ones after.
    void stop() noexcept {
        std::unique_lock lock(state_->mutex);
        state_->stopped = true;
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
        state(Executor executor, dns_discovery& s) : timer(::asio::make_strand(executor)), source(s) {}
        ::asio::steady_timer timer;  // on a strand: tick() and the cancel never run at once
        dns_discovery& source;
        std::mutex mutex;
        std::condition_variable idle;
        bool stopped = false;
        std::thread::id running_on{};  ///< the thread running a lookup; none: idle
        /// Counts start()s: a wait from before a stop() and start() ends its chain.
        std::uint64_t generation = 0;

        void tick(std::uint64_t started_as) {
            {
                const std::lock_guard lock(mutex);
                if (stopped || started_as != generation) return;
                running_on = std::this_thread::get_id();
            }
            struct end_lookup {
                state& s;
                ~end_lookup() {
                    {
                        const std::lock_guard lock(s.mutex);
                        s.running_on = std::thread::id{};
                    }
                    s.idle.notify_all();
                }
            } const done{*this};
            const resil::steady_clock clock;
            const auto next = source.refresh(clock.now());
            {
                const std::lock_guard lock(mutex);
                if (stopped || started_as != generation) return;
            }
            timer.expires_after(std::max(duration::zero(), next - clock.now()));
            timer.async_wait([self = this->shared_from_this(), started_as](std::error_code ec) {
                if (!ec) self->tick(started_as);
            });
        }
    };
    std::shared_ptr<state> state_;
};

/// Deduces the executor.
template <class Executor>
dns_discovery_timer(Executor, dns_discovery&) -> dns_discovery_timer<Executor>;

}  // namespace resil::asio
