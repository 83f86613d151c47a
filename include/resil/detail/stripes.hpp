// resil/detail/stripes.hpp — per-thread stripes for state that every call
// writes and few calls read (counters, the breaker's time window, the retry
// budget's deposits, metrics): each thread writes the stripe it was given,
// and a read adds the stripes up. No cache line is then written by every
// core on every call; a line is shared only by the threads given one stripe.
//
//   detail::stripes<std::atomic<std::uint64_t>> calls;   // default_stripe_count() stripes
//   calls.local().fetch_add(1, std::memory_order_relaxed);
//   std::uint64_t total = 0;
//   for (std::size_t i = 0; i < calls.size(); ++i) total += calls[i].load(std::memory_order_relaxed);
//
// Threads get a stripe index the first time they write any striped object:
// the index, among max_stripes, held by the fewest live threads (so threads
// alive together spread out, also when threads come and go); a thread gives
// its index back when it ends. An object with n stripes (a power of two)
// uses index mod n. Two threads on one stripe are only slower, never wrong:
// stripes hold atomics.
//
// Memory: an object's stripes are allocated once, at construction, each on
// cache lines of its own (stripe_alignment bytes, rounded up); nothing is
// allocated per call.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace resil::detail {

/// The unit of false sharing stripes are padded to. 128 rather than 64:
/// Intel's spatial prefetcher moves 64-byte lines in 128-byte-aligned pairs,
/// so two 64-byte neighbours written by different cores still interfere, and
/// Apple M-series and POWER cores have 128-byte lines. (Not
/// std::hardware_destructive_interference_size: libc++ 14 lacks it, and g++
/// warns (-Winterference-size) that its value can differ between builds.)
inline constexpr std::size_t stripe_alignment = 128;

/// The most stripes an object has, and the number of thread indices handed
/// out.
inline constexpr std::size_t max_stripes = 64;

/// Stripes per object unless a test asks for another count: the hardware
/// threads rounded up to a power of two, in [1, max_stripes] (16 when the
/// count is unknown). Decided once per process.
[[nodiscard]] inline std::size_t default_stripe_count() noexcept {
    static const std::size_t count = [] {
        const unsigned hardware = std::thread::hardware_concurrency();
        const std::size_t wanted = hardware == 0 ? 16 : hardware;
        return std::bit_ceil(std::min(wanted, max_stripes));
    }();
    return count;
}

/// How many live threads hold each index (written when a thread takes or
/// gives back an index, never per call).
inline std::array<std::atomic<std::uint32_t>, max_stripes> stripe_index_users{};

/// Gives the calling thread the index with the fewest live threads, and
/// gives it back when the thread ends. The count is claimed by
/// compare-and-swap, so threads starting together see each other's claims
/// and take different indices.
[[nodiscard]] inline std::uint32_t claim_stripe_index() noexcept {
    std::uint32_t best = 0;
    for (;;) {
        best = 0;
        auto fewest = stripe_index_users[0].load(std::memory_order_relaxed);
        for (std::uint32_t i = 1; i < max_stripes && fewest != 0; ++i) {
            const auto users = stripe_index_users[i].load(std::memory_order_relaxed);
            if (users < fewest) {
                best = i;
                fewest = users;
            }
        }
        if (stripe_index_users[best].compare_exchange_strong(fewest, fewest + 1, std::memory_order_relaxed)) break;
    }
    struct give_back {
        std::uint32_t index;
        ~give_back() { stripe_index_users[index].fetch_sub(1, std::memory_order_relaxed); }
    };
    static thread_local const give_back on_thread_exit{best};
    return best;
}

/// The calling thread's stripe index, in [0, max_stripes).
[[nodiscard]] inline std::size_t this_thread_stripe() noexcept {
    constexpr std::uint32_t unclaimed = max_stripes;
    // Constant-initialized and trivially destructible: read without a guard.
    static thread_local std::uint32_t index = unclaimed;
    if (index == unclaimed) [[unlikely]]
        index = claim_stripe_index();
    return index;
}

/// `count` stripes of T (a power of two; default_stripe_count() unless a test
/// asks for another), each value-initialized on cache lines of its own.
/// local() is the calling thread's stripe; [] and size() visit them all.
template <class T>
class stripes {
public:
    explicit stripes(std::size_t count = default_stripe_count())
        : mask_(std::bit_ceil(std::clamp<std::size_t>(count, 1, max_stripes)) - 1), cells_(new cell[mask_ + 1]) {}

    stripes(const stripes&) = delete;
    stripes& operator=(const stripes&) = delete;

    /// The calling thread's stripe.
    [[nodiscard]] T& local() const noexcept { return cells_[this_thread_stripe() & mask_].value; }

    [[nodiscard]] std::size_t size() const noexcept { return mask_ + 1; }
    [[nodiscard]] T& operator[](std::size_t i) const noexcept { return cells_[i].value; }

    /// Bytes allocated for the stripes.
    [[nodiscard]] std::size_t bytes() const noexcept { return size() * sizeof(cell); }

private:
    struct alignas(stripe_alignment) cell {
        T value{};
    };
    std::size_t mask_;
    std::unique_ptr<cell[]> cells_;
};

/// A counter that many threads increment and few read: one atomic per
/// stripe; total() adds them up (exact when no add is in progress).
class striped_counter {
public:
    explicit striped_counter(std::size_t stripe_count = default_stripe_count()) : stripes_(stripe_count) {}

    void add(std::uint64_t n = 1) const noexcept { stripes_.local().fetch_add(n, std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t total() const noexcept {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < stripes_.size(); ++i) sum += stripes_[i].load(std::memory_order_relaxed);
        return sum;
    }

private:
    stripes<std::atomic<std::uint64_t>> stripes_;
};

}  // namespace resil::detail
