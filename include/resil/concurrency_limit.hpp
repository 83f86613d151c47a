// resil/concurrency_limit.hpp — load shedding by a bound on calls in flight
// (a bulkhead, MAX_INFLIGHT): call N+1 is rejected at once, never queued.
//
//   resil::concurrency_limit limit{{.max_in_flight = 16}};
//
//   // Directly: hold a permit for the duration of the work.
//   if (auto permit = limit.try_acquire()) {
//       handle(request);                     // released when `permit` goes away
//   } else {
//       reply(503);                          // shed, in microseconds
//   }
//
//   // In a pipeline: reason::shed when full.
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(limit));
//
// Lock-free: admission is a compare-and-swap loop that increments the count
// only while it is below the limit, so no thread ever observes more than N
// in flight, not even for an instant (an increment-then-undo would let others
// see N+1 and shed calls that should have been admitted). A permit is an RAII
// handle released on every path, exceptions included. Share one limit per
// protected resource; it is not copyable (pass it to a pipeline with std::ref).
//
// Shared state. The count in flight is one word, on a cache line of its own:
// an admission (compare-and-swap) and a release (one subtraction) write it,
// which no design can avoid and keep the bound exact (per-thread quotas would
// shed calls while another thread's quota has room, or need a borrowing
// protocol that writes a shared word near the limit anyway). The admitted
// counter shares that line: an admission has just won it, so counting there
// costs no transfer (a stripe would cost one more line). The shed counter is
// per-thread stripes (detail/stripes.hpp), added up when read: a shed call
// only reads the shared line, so an overloaded limit sheds without every
// core writing one line. Memory: 128 bytes per stripe (default_stripe_count():
// this machine's hardware threads, rounded up to a power of two, at most 64),
// allocated at construction.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "detail/platform.hpp"
#include "detail/stripes.hpp"
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a concurrency_limit; the defaults are the documented ones.
struct concurrency_limit_options {
    /// Most calls in flight at once, in [min_max_in_flight, max_max_in_flight]
    /// = [1, 4294967295]. Default 16.
    std::uint32_t max_in_flight = 16;

    ///@{
    /// The bounds validate() checks: min_X and max_X are the smallest and
    /// largest `X` it accepts.
    static constexpr std::uint32_t min_max_in_flight = 1;
    static constexpr std::uint32_t max_max_in_flight = std::numeric_limits<std::uint32_t>::max();
    ///@}

    /// "`max_in_flight` must be in [1, 4294967295], got 0" when it is 0.
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const concurrency_limit_options&, const concurrency_limit_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result concurrency_limit_options::validate() const {
    return detail::check_in_range("max_in_flight", max_in_flight, min_max_in_flight, max_max_in_flight);
}
#endif

/// What a concurrency limit holds and has done since construction; a
/// snapshot (each field read relaxed, on its own).
struct concurrency_limit_metrics {
    std::uint32_t limit = 0;      ///< the most calls in flight at once (options().max_in_flight)
    std::uint32_t in_flight = 0;  ///< now
    std::uint64_t admitted = 0;   ///< calls admitted since construction
    std::uint64_t shed = 0;       ///< calls rejected because the limit was reached

    /// Field-by-field equality.
    friend bool operator==(const concurrency_limit_metrics&, const concurrency_limit_metrics&) = default;
};

/// A bound on concurrent calls. Thread-safe and lock-free: every member may
/// be called from any number of threads at once. Members are const because
/// the state is atomic (a const limit still admits calls), which is what lets
/// a pipeline share it by std::ref.
class concurrency_limit {
public:
    /// Reads no time (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::none;

    /// The right to be in flight: move-only, released when destroyed (or by
    /// release()). An empty permit (the call was shed) converts to false.
    /// A permit must not outlive the limit that issued it.
    class permit {
    public:
        /// An empty permit.
        permit() noexcept = default;
        /// Takes over `other`'s slot; `other` holds nothing after.
        permit(permit&& other) noexcept : limit_(std::exchange(other.limit_, nullptr)) {}
        /// Releases the slot it holds, then takes over `other`'s.
        permit& operator=(permit&& other) noexcept {
            if (this != &other) {
                release();
                limit_ = std::exchange(other.limit_, nullptr);
            }
            return *this;
        }
        permit(const permit&) = delete;
        permit& operator=(const permit&) = delete;
        ~permit() { release(); }

        /// True while this permit holds a place.
        [[nodiscard]] bool held() const noexcept { return limit_ != nullptr; }
        /// held().
        explicit operator bool() const& noexcept { return held(); }
        // `if (limit.try_acquire())` would hold nothing: the permit is gone at once.
        explicit operator bool() const&& = delete;

        /// Gives the place back now; the permit becomes empty. Idempotent.
        void release() noexcept {
            if (auto* l = std::exchange(limit_, nullptr)) l->release_one();
        }

    private:
        friend class concurrency_limit;
        explicit permit(const concurrency_limit* l) noexcept : limit_(l) {}
        const concurrency_limit* limit_ = nullptr;
    };

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::concurrency_limit: `max_in_flight` must be in [1, 4294967295], got 0".
    explicit concurrency_limit(concurrency_limit_options options = {}) : options_(options) {
        throw_if_invalid("resil::concurrency_limit", options.validate());
    }
    concurrency_limit(const concurrency_limit&) = delete;
    concurrency_limit& operator=(const concurrency_limit&) = delete;

    /// A permit when fewer than limit() calls are in flight; an empty one
    /// (counted as shed) otherwise. Never waits, never allocates.
    [[nodiscard]] permit try_acquire() const noexcept {
        auto current = in_flight_.load(std::memory_order_relaxed);
        do {
            if (current >= options_.max_in_flight) {
                shed_.local().fetch_add(1, std::memory_order_relaxed);
                return permit{};
            }
            // Acquire pairs with the release in release_one(), as for any
            // semaphore: work done under a permit happens-before its reuse.
        } while (!in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_acquire,
                                                   std::memory_order_relaxed));
        admitted_.fetch_add(1, std::memory_order_relaxed);
        return permit{this};
    }

    /// Calls in flight now (a snapshot), in [0, limit()].
    [[nodiscard]] std::uint32_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
    /// The most calls in flight at once: options().max_in_flight.
    [[nodiscard]] std::uint32_t limit() const noexcept { return options_.max_in_flight; }
    /// Calls admitted since construction.
    [[nodiscard]] std::uint64_t admitted() const noexcept { return admitted_.load(std::memory_order_relaxed); }
    /// Calls shed (rejected because the limit was reached) since construction
    /// (the stripes added up: exact when no shed is in progress).
    [[nodiscard]] std::uint64_t shed() const noexcept {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < shed_.size(); ++i) sum += shed_[i].load(std::memory_order_relaxed);
        return sum;
    }

    /// limit(), in_flight(), admitted() and shed() in one snapshot.
    [[nodiscard]] concurrency_limit_metrics metrics() const noexcept { return {limit(), in_flight(), admitted(), shed()}; }

    /// The options it was built with.
    [[nodiscard]] const concurrency_limit_options& options() const noexcept { return options_; }

    /// As a pipeline policy: holds a permit around the rest of the pipeline;
    /// when full, rejects with reason::shed at once (events::rejected is
    /// emitted). The permit is released however the call ends, exceptions
    /// included. The steps below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What the policy holds during a call (policy_steps.hpp): its permit.
    template <class Context, class Outcome>
    using call_state = permit;

    /// Takes a permit, or refuses the call with reason::shed (after emitting
    /// events::rejected).
    template <class Context>
    layer_in enter(Context& ctx, permit& held) const {
        held = try_acquire();
        if (held) return layer_in::proceed();
        ctx.emit(events::rejected{reason::shed, std::nullopt});
        return layer_in::refuse(reason::shed);
    }
    /// Gives the permit back.
    template <class Context, class Outcome>
    layer_out leave(Context&, permit& held, Outcome&) const noexcept {
        held.release();
        return layer_out::proceed();
    }

private:
    void release_one() const noexcept { in_flight_.fetch_sub(1, std::memory_order_release); }

    // Read by every call, never written after construction.
    concurrency_limit_options options_;
    detail::stripes<std::atomic<std::uint64_t>> shed_;
    // Written by every admission and release: a line of their own (the
    // alignment also rounds the object's size up, so a neighbouring object
    // cannot share it either).
    alignas(detail::stripe_alignment) mutable std::atomic<std::uint32_t> in_flight_{0};
    mutable std::atomic<std::uint64_t> admitted_{0};
};

}  // namespace resil
