// resil/balancer/tried_endpoints.hpp — what one call knows of where its
// attempts went: the endpoints it tried and the idempotency scope it is held
// to. resil::call_endpoint keeps it; a pick reads it.
//
//   resil::tried_endpoints tried;                     // one per call, shared by its retries and hedge copies
//   auto out = pipe([&](resil::context& ctx) { return resil::call_endpoint(lb, ctx, tried, send); });
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "affinity.hpp"

namespace resil {

/// What one call knows of where its attempts went: the endpoints it tried,
/// so a retry prefers another (Envoy's previous-hosts rule), and the
/// idempotency scope it is held to. One per call; copies of the call running
/// at once (hedged copies) share it. Fixed size, no allocation.
///
/// Tried endpoints: past `capacity` the oldest are forgotten. Its cells are
/// atomic; a copy that picks after another has added its endpoint avoids it
/// (two copies picking at the same instant may not see each other: it is a
/// preference, not a lock).
///
/// The scope: an attempt that may have reached an endpoint (anything but
/// "known never sent") of a call that may not be repeated anywhere (not
/// idempotent) holds the call to that endpoint's idempotency scope: only
/// that scope's store knows the call's key. While such an attempt is in
/// flight, and for good once one may have been processed, balancer::pick
/// offers only endpoints of that scope. Unlike the tried set this is a
/// lock: enter_scope() refuses a copy whose pick raced into another scope.
/// resil::call_endpoint (and resil::asio::call_endpoint) keep both.
class tried_endpoints {
public:
    /// Endpoints remembered: a call tries at most this many before the oldest
    /// is forgotten.
    static constexpr std::size_t capacity = 8;
    tried_endpoints() = default;
    /// One for a call with an affinity key: every attempt's pick (ring_hash,
    /// maglev, rendezvous) hashes this key, so a retry goes to the key's next
    /// candidate, not to a random endpoint.
    explicit tried_endpoints(affinity_key key) noexcept : key_(key) {}
    tried_endpoints(const tried_endpoints&) = delete;
    tried_endpoints& operator=(const tried_endpoints&) = delete;

    /// Remembers that endpoint `id` was tried. Any thread.
    void add(const void* id) noexcept {
        const auto at = next_.fetch_add(1, std::memory_order_acq_rel);
        ids_[at % capacity].store(id, std::memory_order_release);
    }
    /// Whether endpoint `id` was tried (among the last `capacity`).
    [[nodiscard]] bool contains(const void* id) const noexcept {
        const std::size_t n = size();
        for (std::size_t i = 0; i < n; ++i)
            if (ids_[i].load(std::memory_order_acquire) == id) return true;
        return false;
    }
    /// How many endpoints it remembers, at most `capacity`.
    [[nodiscard]] std::size_t size() const noexcept {
        return std::min<std::size_t>(next_.load(std::memory_order_acquire), capacity);
    }
    /// The call's affinity key (none by default).
    [[nodiscard]] const affinity_key& key() const noexcept { return key_; }
    /// Sets the call's affinity key: before its first attempt, not while an
    /// attempt picks.
    void set_key(affinity_key key) noexcept { key_ = key; }

    /// Forgets the endpoints and the scope (the key stays). Not while another
    /// thread uses it.
    void clear() noexcept {
        for (auto& id : ids_) id.store(nullptr, std::memory_order_relaxed);
        next_.store(0, std::memory_order_relaxed);
        scope_.store(0, std::memory_order_release);
    }

    /// The scope later attempts must stay in (an endpoint_lease's scope()),
    /// or 0 when they may go anywhere.
    [[nodiscard]] std::uint32_t held_scope() const noexcept { return held(scope_.load(std::memory_order_acquire)); }
    /// The call may be repeated anywhere (idempotent): no scope holds it.
    void mark_idempotent() noexcept { scope_.fetch_or(idempotent_bit, std::memory_order_acq_rel); }
    /// True once mark_idempotent() was called.
    [[nodiscard]] bool idempotent() const noexcept {
        return (scope_.load(std::memory_order_acquire) & idempotent_bit) != 0;
    }
    /// An attempt is about to be sent to an endpoint of `scope`: false (and
    /// nothing changed) when the call is held to another scope, e.g. by a copy
    /// that entered since this one picked. Each true is followed by one
    /// leave_scope().
    [[nodiscard]] bool enter_scope(std::uint32_t scope) noexcept {
        auto w = scope_.load(std::memory_order_acquire);
        for (;;) {
            if (in_flight(w) == max_in_flight) return false;
            const auto h = held(w);
            if (h != 0 && h != scope) return false;
            const auto next = ((w & idempotent_bit) != 0 || h != 0 ? w : (w & ~scope_mask) | scope) + in_flight_one;
            if (scope_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire))
                return true;
        }
    }
    /// The attempt that entered has ended. `may_have_been_processed`:
    /// anything but "known never sent" (refused connection, DNS, a TLS
    /// handshake refused, a breaker's refusal): the call stays in the scope
    /// for good. Otherwise, once no attempt of the call is in flight, it is
    /// free to go anywhere again.
    void leave_scope(bool may_have_been_processed) noexcept {
        auto w = scope_.load(std::memory_order_acquire);
        for (;;) {
            auto next = w - in_flight_one;
            if (may_have_been_processed) next |= processed_bit;
            if (in_flight(next) == 0 && (next & processed_bit) == 0) next &= ~scope_mask;
            if (scope_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) return;
        }
    }

private:
    // scope_: bits 0-31 the scope, 32-47 attempts in flight in it, then the
    // flags. One word, so that entering and leaving race-free without a lock.
    static constexpr std::uint64_t scope_mask = 0xFFFF'FFFFULL;
    static constexpr std::uint64_t in_flight_one = 1ULL << 32;
    static constexpr std::uint64_t max_in_flight = 0xFFFF;
    static constexpr std::uint64_t processed_bit = 1ULL << 48;
    static constexpr std::uint64_t idempotent_bit = 1ULL << 49;
    [[nodiscard]] static constexpr std::uint64_t in_flight(std::uint64_t w) noexcept { return (w >> 32) & max_in_flight; }
    [[nodiscard]] static constexpr std::uint32_t held(std::uint64_t w) noexcept {
        if ((w & idempotent_bit) != 0 || (in_flight(w) == 0 && (w & processed_bit) == 0)) return 0;
        return static_cast<std::uint32_t>(w & scope_mask);
    }

    std::atomic<const void*> ids_[capacity] = {};
    std::atomic<std::size_t> next_{0};
    std::atomic<std::uint64_t> scope_{0};
    affinity_key key_{};
};

}  // namespace resil
