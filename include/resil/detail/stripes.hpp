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
// stripes hold atomics. Indices come from one table for every copy of this
// code that shares it (normally the whole program and the libraries linked
// to it): which one a thread gets, and whether it holds it alone, depends on
// every live thread that has touched any striped object, not only on the
// threads using this one.
//
// owned_stripes goes one step further: a thread that holds its index alone
// (and whose index is below the object's stripe count) gets a cell nobody
// else writes, and may update it with a plain load and store; the others
// share a second set of cells, atomically. A cell is written alone only by
// the holder of the index table entry that first claimed it, so this stays
// right where copies of this code have tables of their own (a plugin, a DLL).
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

// The index table is exported (default visibility, even from a library
// built with -fvisibility=hidden), so that the program and the libraries
// linked to it usually share one and spread their threads together. Nothing
// relies on that: a plugin loaded with dlopen() by a program that exports
// nothing, a DLL, or a library linked with -Bsymbolic has a table of its
// own, and owned_stripes stays right with any number of tables (it names the
// table an owner claimed through).
#if defined(_WIN32) || defined(__CYGWIN__)
#define RESIL_DETAIL_PROCESS_WIDE
#else
#define RESIL_DETAIL_PROCESS_WIDE [[gnu::visibility("default")]]
#endif

/// How many live threads hold each index (written when a thread takes or
/// gives back an index, never per call).
RESIL_DETAIL_PROCESS_WIDE inline std::array<std::atomic<std::uint32_t>, max_stripes> stripe_index_users{};
#undef RESIL_DETAIL_PROCESS_WIDE

/// Set in a thread's stripe word when the thread shares its index with
/// another live thread (more than max_stripes threads alive), and after it
/// has given its index back (a thread-local destructor that runs later still
/// writes, but no longer alone).
inline constexpr std::uint32_t shared_stripe_bit = std::uint32_t{1} << 31;

/// The calling thread's claim: its stripe word (its index, with
/// shared_stripe_bit when it is not the index's only holder; max_stripes
/// until claimed) and the table entry it claimed, in the copy of this code
/// that claimed it (owned_stripes compares cells' owners with that, never
/// with an entry of another copy's table). Constant-initialized and
/// trivially destructible: read without a guard.
struct thread_stripe {
    std::uint32_t word = max_stripes;
    const void* entry = nullptr;
};
[[nodiscard]] inline thread_stripe& this_thread_stripe_state() noexcept {
    static thread_local thread_stripe state;
    return state;
}

/// Gives the calling thread the index with the fewest live threads (the
/// lowest such index), and gives it back when the thread ends. The count is
/// claimed by compare-and-swap, so threads starting together see each
/// other's claims and take different indices. A thread that found its
/// index free holds it alone until it ends: the give-back releases what it
/// wrote, and the next holder's claim acquires it.
inline void claim_stripe_index(thread_stripe& state) noexcept {
    std::uint32_t best = 0;
    std::uint32_t fewest = 0;
    for (;;) {
        best = 0;
        fewest = stripe_index_users[0].load(std::memory_order_relaxed);
        for (std::uint32_t i = 1; i < max_stripes && fewest != 0; ++i) {
            const auto users = stripe_index_users[i].load(std::memory_order_relaxed);
            if (users < fewest) {
                best = i;
                fewest = users;
            }
        }
        if (stripe_index_users[best].compare_exchange_strong(fewest, fewest + 1, std::memory_order_acquire,
                                                             std::memory_order_relaxed))
            break;
    }
    struct give_back {
        std::uint32_t index;
        ~give_back() {
            this_thread_stripe_state().word = index | shared_stripe_bit;
            stripe_index_users[index].fetch_sub(1, std::memory_order_release);
        }
    };
    static thread_local const give_back on_thread_exit{best};
    state.word = fewest == 0 ? best : best | shared_stripe_bit;
    state.entry = &stripe_index_users[best];
}

/// The calling thread's claim, made on first use.
[[nodiscard]] inline const thread_stripe& this_thread_stripe_claimed() noexcept {
    auto& state = this_thread_stripe_state();
    if (state.word == max_stripes) [[unlikely]]
        claim_stripe_index(state);
    return state;
}

/// The calling thread's stripe word (see thread_stripe).
[[nodiscard]] inline std::uint32_t this_thread_stripe_claim() noexcept { return this_thread_stripe_claimed().word; }

/// The calling thread's stripe index, in [0, max_stripes).
[[nodiscard]] inline std::size_t this_thread_stripe() noexcept {
    return this_thread_stripe_claim() & ~shared_stripe_bit;
}

/// An owned_stripes cell: the value, and the index table entry whose holder
/// writes it alone (null until a first alone writer claims it).
template <class T>
struct owned_cell {
    T value{};
    std::atomic<const void*> owner{nullptr};
};

/// The cells behind stripes<T> and owned_stripes<T>: `sets` × `count` cells
/// of T (count a power of two in [1, max_stripes]), each value-initialized on
/// cache lines of its own; [] and size() visit them all.
template <class T>
class stripe_cells {
public:
    stripe_cells(const stripe_cells&) = delete;
    stripe_cells& operator=(const stripe_cells&) = delete;

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] T& operator[](std::size_t i) const noexcept { return cells_[i].value; }

    /// Bytes allocated for the stripes.
    [[nodiscard]] std::size_t bytes() const noexcept { return size() * sizeof(cell); }

protected:
    stripe_cells(std::size_t count, std::size_t sets)
        : mask_(std::bit_ceil(std::clamp<std::size_t>(count, 1, max_stripes)) - 1),
          size_(sets * (mask_ + 1)),
          cells_(new cell[size_]) {}
    ~stripe_cells() = default;

    std::size_t mask_;

private:
    struct alignas(stripe_alignment) cell {
        T value{};
    };
    std::size_t size_;
    std::unique_ptr<cell[]> cells_;
};

/// `count` stripes of T (a power of two; default_stripe_count() unless a test
/// asks for another), each value-initialized on cache lines of its own.
/// local() is the calling thread's stripe; [] and size() visit them all.
template <class T>
class stripes : public stripe_cells<T> {
public:
    explicit stripes(std::size_t count = default_stripe_count()) : stripe_cells<T>(count, 1) {}

    /// The calling thread's stripe.
    [[nodiscard]] T& local() const noexcept { return (*this)[this_thread_stripe() & this->mask_]; }
};

/// Stripes that a thread may be the only writer of: a thread that holds its
/// stripe index alone, and whose index is below `count`, gets a cell nobody
/// else writes, and may update it with a plain load and store instead of a
/// compare-and-swap (a locked instruction, about a quarter of a
/// five-policy call here). Every other thread gets one of `count` more
/// cells, shared as in stripes<T>, and updates them atomically. Twice the
/// cells of stripes<T>. Nothing else may write a cell while its owner lives
/// (a reset from another thread would be undone by the owner's next store):
/// what must be emptied while threads write is emptied by each owner, as
/// rolling_time_window does at a change of generation.
///
/// Each owned cell remembers, from its first alone writer on, which index
/// table entry owns it (the address of stripe_index_users[i] in the copy of
/// this code the writer claimed through), and only a thread holding that
/// entry alone writes it alone. One table has one such holder at a time,
/// handed on in order (claim_stripe_index); a thread that claimed through
/// another table (a plugin's, a DLL's) names another entry and takes the
/// shared cells, for the object's whole life, whichever table wrote first.
/// (A table's address could come back only if the code that claimed
/// through it were unloaded while a thread still held its entry; glibc keeps
/// a library loaded while a thread has a thread-exit destructor from it.)
template <class T>
class owned_stripes : stripe_cells<owned_cell<T>> {
    using base = stripe_cells<owned_cell<T>>;

public:
    explicit owned_stripes(std::size_t count = default_stripe_count()) : base(count, 2) {}

    using base::bytes;
    using base::size;
    [[nodiscard]] T& operator[](std::size_t i) const noexcept { return base::operator[](i).value; }

    /// Cells [0, owned_count()) are the ones threads write alone; the rest
    /// are shared.
    [[nodiscard]] std::size_t owned_count() const noexcept { return this->mask_ + 1; }

    /// The calling thread's cell, and whether the thread is its only writer.
    struct local_cell {
        T& value;
        bool alone;
    };
    [[nodiscard]] local_cell local() const noexcept {
        const auto& claim = this_thread_stripe_claimed();
        const auto word = claim.word;
        const auto mask = this->mask_;
        if (word <= mask) [[likely]] {  // held alone (no shared bit), and one of the owned cells
            auto& c = base::operator[](word);
            const void* const entry = claim.entry;
            const void* owner = c.owner.load(std::memory_order_relaxed);
            // Relaxed: one holder's writes reach the next through the
            // table's claim and give-back, not through this word.
            if (owner == entry ||
                (owner == nullptr && c.owner.compare_exchange_strong(owner, entry, std::memory_order_relaxed)))
                [[likely]]
                return {c.value, true};
        }
        return {(*this)[mask + 1 + (word & mask)], false};
    }
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
