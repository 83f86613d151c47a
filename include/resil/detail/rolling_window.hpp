// resil/detail/rolling_window.hpp — lock-free failure counting for the
// circuit breaker: over the last span of time (a ring of buckets), over the
// last N calls (a ring of bits), or the current run of failures in a row.
//
//   detail::rolling_time_window w{10s};            // 10 buckets of 1 s
//   w.record(now, /*failed=*/true);
//   auto c = w.totals(now);                        // calls and failures in the window
//
// Each counts one closed period of the breaker at a time: a record names the
// state generation it saw, and does not count in a later generation's window
// (but for one race of the time window's shared rings, see below).
//
// All are thread-safe and never allocate after construction. Their
// totals are exact when no record is in progress, and off by the records in
// flight otherwise; a breaker's decision tolerates that.
//
// In the time window, each thread writes its own stripe (a copy of the ring
// on cache lines of its own, detail/stripes.hpp), so that threads sharing a
// breaker do not take turns owning one cache line on every call; totals add
// the stripes up. A success reads two words every record reads (the bucket
// length and the last bucket located, written about once per bucket) and
// writes only its stripe's bucket: with a plain store when the thread is the
// ring's only writer (detail::owned_stripes), else a compare-and-swap. A ring
// written alone is emptied by its owner only (at its first record in a new
// generation), since any other writer's reset would be undone by the owner's
// next store.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../clock.hpp"
#include "stripes.hpp"

// g++ 12 at -O3 reports atomic loads on a window held in the breaker's
// std::variant as writes into "a region of size 0" (a -Wstringop-overflow
// false positive inside libstdc++'s <atomic>); silenced here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

namespace resil::detail {

/// Calls and failures counted by a window.
struct window_counts {
    std::uint64_t calls = 0;
    std::uint64_t failures = 0;
};

/// Calls over the last `window` of time: a ring of `buckets` buckets of
/// window / buckets each (two rings per stripe: one a thread writes alone,
/// one shared). The window covers the current bucket and the
/// buckets - 1 before it, so it spans between (buckets - 1) / buckets of the
/// window and all of it. Each bucket is two atomic words, calls and failures,
/// each packing the bucket's epoch (its index in time) with its count, so a
/// success is one store (one compare-and-swap on a shared ring) of one word
/// and a stale bucket is reset by the record that finds it.
///
/// A record and a total may name a `generation` (the circuit breaker's state
/// generation): each generation counts in a window of its own, and records
/// made under an earlier one stay out of a later one's totals, however late
/// they land (but for one race the shared rings keep: a record that passed
/// its caller's generation check as the change of state empties them can
/// land just after, and stays until its bucket is reused or a later record
/// reaches past it). A generation's window starts empty: begin_generation()
/// empties the shared rings, and each ring a thread writes alone holds one
/// generation, emptied by its owner when it first records in a later one
/// and skipped by totals() of any other. (Generations also shift their
/// bucket tags, but a shift alone is not enough: tags are kept modulo 2^24,
/// and a bucket left from an earlier generation would match a later
/// generation's tag at some distance in time, 41 minutes with 1 ms buckets
/// three generations on.)
class rolling_time_window {
public:
    static constexpr std::size_t buckets = 10;
    static_assert(buckets <= 16, "locate() packs the index in 4 bits");

    /// `window` must be at least `buckets` nanoseconds (the caller checks).
    /// `stripe_count` rings (a power of two; tests may ask for more stripes
    /// than this machine's default), allocated here, once.
    explicit rolling_time_window(duration window, std::size_t stripe_count = default_stripe_count())
        : bucket_ticks_(static_cast<std::uint64_t>(
              std::max<duration::rep>(window.count() / static_cast<duration::rep>(buckets), 1))),
          rings_(stripe_count) {}

    rolling_time_window(const rolling_time_window&) = delete;
    rolling_time_window& operator=(const rolling_time_window&) = delete;

    [[nodiscard]] duration bucket_length() const noexcept { return duration{static_cast<duration::rep>(bucket_ticks_)}; }
    /// Rings kept: one per stripe of threads that hold their stripe alone,
    /// and as many for the others (detail::owned_stripes).
    [[nodiscard]] std::size_t stripe_count() const noexcept { return rings_.size(); }

    /// Counts one call made (or finished) at `now`, in `generation`'s window.
    void record(time_point now, bool failed, std::uint64_t generation = 0) noexcept {
        const auto epoch = logical_epoch(now, generation);
        const auto ring = rings_.local();
        if (ring.alone) {
            // A ring written alone holds one generation: its owner empties it
            // when it first records in a later one, and drops (counts
            // outside) a late record of an earlier one.
            const auto held = ring.value.generation.load(std::memory_order_relaxed);
            if (held != generation) [[unlikely]] {
                if (generation < held) return count_outside(failed);
                restart(ring.value, generation);
            }
        }
        auto& slot = ring.value.slots[epoch.index];
        // A success writes the calls word only; a failure adds to both, calls
        // first, so that a total never sees more failures than calls for long.
        if (!add(slot.calls, epoch.epoch, folded_calls_, ring.alone)) return count_outside(failed);
        if (failed && !add(slot.failures, epoch.epoch, folded_failures_, ring.alone))
            folded_failures_.fetch_add(1, std::memory_order_relaxed);
    }

    /// Whether a record at `now` would land before the newest bucket any
    /// record has reached: time has moved on since that reading was taken.
    [[nodiscard]] bool behind(time_point now, std::uint64_t generation = 0) const noexcept {
        return logical_epoch(now, generation).epoch < latest_epoch_.load(std::memory_order_relaxed);
    }

    /// Calls and failures in `generation`'s window ending at `now`.
    [[nodiscard]] window_counts totals(time_point now, std::uint64_t generation = 0) const noexcept {
        const auto tag = logical_epoch(now, generation).epoch & epoch_mask;
        const auto current = [tag](std::uint64_t word) {
            return ((tag - tag_of(word)) & epoch_mask) < buckets;  // not stale, nor newer than `now`
        };
        window_counts c;
        for (std::size_t r = 0; r < rings_.size(); ++r) {
            // A ring written alone that holds another generation has nothing
            // of this one (acquire: what its owner emptied stays empty here).
            if (r < rings_.owned_count() && rings_[r].generation.load(std::memory_order_acquire) != generation)
                continue;
            for (const auto& slot : rings_[r].slots) {
                if (const auto w = slot.calls.load(std::memory_order_relaxed); current(w)) c.calls += count_of(w);
                if (const auto w = slot.failures.load(std::memory_order_relaxed); current(w)) c.failures += count_of(w);
            }
        }
        return c;
    }

    /// Every call counted since construction, in the window or not.
    [[nodiscard]] window_counts lifetime() const noexcept {
        window_counts c{folded_calls_.load(std::memory_order_relaxed), folded_failures_.load(std::memory_order_relaxed)};
        for (std::size_t r = 0; r < rings_.size(); ++r) {
            for (const auto& slot : rings_[r].slots) {
                c.calls += count_of(slot.calls.load(std::memory_order_relaxed));
                c.failures += count_of(slot.failures.load(std::memory_order_relaxed));
            }
        }
        return c;
    }

    /// Empties the window (lifetime() keeps what it held). Not while records
    /// run: a thread that writes its ring alone would put back what this
    /// took.
    void clear() noexcept {
        for (std::size_t r = 0; r < rings_.size(); ++r) empty(rings_[r]);
    }

    /// Starts a new generation's window while records may run (the circuit
    /// breaker's change of state): empties the rings that threads share.
    /// A ring written alone is emptied by its owner instead, at its first
    /// record in the new generation, and totals() skip it until then.
    void begin_generation() noexcept {
        for (std::size_t r = rings_.owned_count(); r < rings_.size(); ++r) empty(rings_[r]);
    }

private:
    // Word layout (calls and failures alike): | epoch (24 bits) | count (40 bits) |.
    // 40 bits hold 10^12 calls per bucket and stripe: 127 M calls a second
    // for the 2.4 h bucket of a 24 h window, more than one stripe can take.
    // The epoch is kept modulo 2^24; within one generation, a slot left
    // untouched for a multiple of 2^24 buckets (194 days with 1 s buckets)
    // could pass for current once, which only blurs one decision.
    static constexpr int count_bits = 40;
    static constexpr std::uint64_t count_max = (std::uint64_t{1} << count_bits) - 1;
    static constexpr std::uint64_t epoch_mask = (std::uint64_t{1} << 24) - 1;
    // How far ahead of a record a slot may be and still be trusted as newer:
    // a clock read goes stale by a preemption, not by days.
    static constexpr std::uint64_t newer_horizon = 4 * buckets;
    // Each generation shifts the epochs by this many buckets: about 0.618 of
    // the tag range (Fibonacci hashing), so that the tags of nearby
    // generations stay millions of buckets apart and never meet in a window.
    static constexpr std::uint64_t generation_stride = 0x9E3779;

    // Adds one to `slot` for bucket `epoch`; false when the record is outside
    // the window (too old, or the bucket is full) and was not counted there.
    // A count the slot drops when it starts afresh goes to `folded`. `alone`:
    // the calling thread is the only writer of the slot's ring.
    bool add(std::atomic<std::uint64_t>& slot, std::uint64_t epoch, std::atomic<std::uint64_t>& folded,
             bool alone) noexcept {
        auto word = slot.load(std::memory_order_relaxed);
        // The common case, kept small enough to inline: the slot is current
        // and not full, and nobody else wrote it meanwhile (nobody else can,
        // for a thread alone on its ring: no locked instruction then).
        if (tag_of(word) == (epoch & epoch_mask) && count_of(word) != count_max) [[likely]] {
            if (alone) {
                slot.store(word + 1, std::memory_order_relaxed);
                return true;
            }
            if (slot.compare_exchange_weak(word, word + 1, std::memory_order_relaxed)) return true;
        }
        return add_slow(slot, epoch, folded);
    }

    bool add_slow(std::atomic<std::uint64_t>& slot, std::uint64_t epoch, std::atomic<std::uint64_t>& folded) noexcept {
        // A record older than the window ending at the latest bucket any
        // thread has reached (a clock read gone stale, however long ago, or a
        // generation that has passed) is outside the window: it must neither
        // count nor restart a live slot. latest_epoch_ is raised before the
        // slot is written (release), and read after the slot (acquire), so a
        // record that sees a later bucket in its slot also sees how late it is.
        auto latest = latest_epoch_.load(std::memory_order_relaxed);
        while (epoch > latest && !latest_epoch_.compare_exchange_weak(latest, epoch, std::memory_order_relaxed)) {
        }
        const auto tag = epoch & epoch_mask;
        auto word = slot.load(std::memory_order_acquire);
        for (;;) {
            const auto slot_tag = tag_of(word);
            std::uint64_t desired = 0;
            if (slot_tag == tag) {
                // A full bucket stops counting rather than wrap into the epoch.
                if (count_of(word) == count_max) return false;
                desired = word + 1;
            } else if (epoch + buckets <= latest_epoch_.load(std::memory_order_relaxed) ||
                       (count_of(word) != 0 && newer(slot_tag, tag))) {
                // A thread with a later clock read (or generation) already
                // moved the window on: this record is older than all of it.
                // (An emptied slot, count 0, is never the newer one.)
                return false;
            } else {
                desired = pack(tag, 1);  // a stale bucket: start it afresh
            }
            if (slot.compare_exchange_weak(word, desired, std::memory_order_acq_rel, std::memory_order_acquire)) {
                if (slot_tag != tag) fold(folded, word);
                return true;
            }
        }
    }

    // One bucket: both words share a line, and a success writes only `calls`.
    struct alignas(16) slot_pair {
        std::atomic<std::uint64_t> calls{0};
        std::atomic<std::uint64_t> failures{0};
    };
    struct ring_type {
        std::array<slot_pair, buckets> slots;
        // The generation a ring written alone holds (its owner writes it);
        // unused in the shared rings, which hold whatever records reach them.
        std::atomic<std::uint64_t> generation{0};
    };

    void empty(ring_type& r) noexcept {
        for (auto& slot : r.slots) {
            fold(folded_calls_, slot.calls.exchange(0, std::memory_order_relaxed));
            fold(folded_failures_, slot.failures.exchange(0, std::memory_order_relaxed));
        }
    }

    // The owner of a ring written alone moves it to a later generation:
    // what it held leaves the window (lifetime() keeps it), then the
    // generation is published (release, for totals()).
    void restart(ring_type& r, std::uint64_t generation) noexcept {
        empty(r);
        r.generation.store(generation, std::memory_order_release);
    }

    static constexpr std::uint64_t pack(std::uint64_t tag, std::uint64_t count) noexcept {
        return (tag << count_bits) | count;
    }
    static constexpr std::uint64_t tag_of(std::uint64_t w) noexcept { return w >> count_bits; }
    static constexpr std::uint64_t count_of(std::uint64_t w) noexcept { return w & count_max; }
    static constexpr bool newer(std::uint64_t slot_tag, std::uint64_t tag) noexcept {
        const auto ahead = (slot_tag - tag) & epoch_mask;
        return ahead != 0 && ahead <= newer_horizon;
    }

    struct location {
        std::uint64_t epoch;  // floor(ticks / bucket), plus the generation's shift
        std::size_t index;    // floor(ticks / bucket) % buckets
    };

    [[nodiscard]] location logical_epoch(time_point now, std::uint64_t generation) const noexcept {
        const auto l = locate(now);
        return {l.epoch + generation * generation_stride, l.index};
    }

    // Consecutive records almost always fall in the bucket of the one before,
    // so the newest location is kept (epoch × 16 + index, in one word) and
    // checked with one multiplication: the 64-bit division and the modulo
    // run about once per bucket. Only a later bucket is stored, so records
    // with older readings (an attempt's start, a stalled thread) never write
    // the word every record reads.
    [[nodiscard]] location locate(time_point now) const noexcept {
        const auto signed_ticks = now.time_since_epoch().count();
        const auto now_ticks = signed_ticks <= 0 ? 0 : static_cast<std::uint64_t>(signed_ticks);
        const auto last = last_location_.load(std::memory_order_relaxed);
        const auto epoch = last >> 4;
        // Unsigned: a `now_ticks` before the bucket's start wraps to a huge offset.
        if (now_ticks - epoch * bucket_ticks_ < bucket_ticks_) [[likely]]
            return {epoch, static_cast<std::size_t>(last & 15)};
        const auto fresh = now_ticks / bucket_ticks_;
        const auto index = fresh % buckets;
        if (fresh > epoch) last_location_.store(fresh << 4 | index, std::memory_order_relaxed);
        return {fresh, static_cast<std::size_t>(index)};
    }

    void count_outside(bool failed) noexcept {
        folded_calls_.fetch_add(1, std::memory_order_relaxed);
        if (failed) folded_failures_.fetch_add(1, std::memory_order_relaxed);
    }
    static void fold(std::atomic<std::uint64_t>& into, std::uint64_t old) noexcept {
        if (const auto n = count_of(old)) into.fetch_add(n, std::memory_order_relaxed);
    }

    // Read by every record, written about once per bucket (the slots, which
    // every record writes, are on lines of their own).
    std::uint64_t bucket_ticks_;
    mutable std::atomic<std::uint64_t> last_location_{0};
    // Calls that left the ring (reset or cleared buckets) or never entered it.
    std::atomic<std::uint64_t> folded_calls_{0};
    std::atomic<std::uint64_t> folded_failures_{0};
    // One ring per thread that holds its stripe alone, written without a
    // locked instruction, and one per stripe of the others: 168 bytes each,
    // 256 with the padding.
    owned_stripes<ring_type> rings_;
    std::atomic<std::uint64_t> latest_epoch_{0};  // the newest bucket any record reached
};

// The words of the count window and of the failure run: a generation tag
// (the circuit breaker's state generation, modulo 2^32) beside a 32-bit value.
// Every write to such a word is a compare-and-swap that checks the tag, and
// clear(g) restamps each word with g: a record made in an earlier generation
// changes nothing once the window has moved on, however late it lands. (Only
// a record delayed across exactly a multiple of 2^32 changes of state could
// be mistaken for a current one.)
namespace generation_tag {
inline constexpr int value_bits = 32;
inline constexpr std::uint64_t value_mask = (std::uint64_t{1} << value_bits) - 1;
[[nodiscard]] constexpr std::uint64_t of_generation(std::uint64_t generation) noexcept { return generation & value_mask; }
[[nodiscard]] constexpr std::uint64_t pack(std::uint64_t tag, std::uint64_t value) noexcept {
    return (tag << value_bits) | value;
}
[[nodiscard]] constexpr std::uint64_t tag_of(std::uint64_t word) noexcept { return word >> value_bits; }
[[nodiscard]] constexpr std::uint64_t value_of(std::uint64_t word) noexcept { return word & value_mask; }
}  // namespace generation_tag

/// Calls over the last `size` calls of one generation (the circuit breaker's
/// closed period): a ring of bits (1 = failed) and a count of the bits set.
/// A record claims the next position with a compare-and-swap on the position
/// count, then flips its bit if it differs (a success on a clear bit writes
/// nothing more); the count of failures follows every flip. Each of those
/// words carries the generation it counts for (see generation_tag), so after
/// clear(g) a record of an earlier generation neither takes a position nor
/// sets a bit nor moves the count: it is counted in lifetime_calls() only.
class rolling_count_window {
public:
    /// The largest window: the position count stays below 2 * size, in 24 bits.
    static constexpr std::uint32_t max_size = std::uint32_t{1} << 23;

    /// A window of `size` calls, at most max_size (the caller checks); 0 makes
    /// an unused window that allocates nothing.
    explicit rolling_count_window(std::uint32_t size)
        : size_(size), bits_(size == 0 ? nullptr : std::make_unique<std::atomic<std::uint64_t>[]>(words_for(size))) {}

    rolling_count_window(const rolling_count_window&) = delete;
    rolling_count_window& operator=(const rolling_count_window&) = delete;

    /// Counts one call in `generation`'s window; returns the window's counts
    /// including it, or zeros when the window belongs to a later generation
    /// (then the call counts in lifetime_calls() only).
    window_counts record(bool failed, std::uint64_t generation = 0) noexcept {
        namespace gt = generation_tag;
        const auto tag = gt::of_generation(generation);
        auto head = head_.load(std::memory_order_relaxed);
        std::uint64_t count = 0;
        for (;;) {
            if (gt::tag_of(head) != tag) {
                folded_calls_.fetch_add(1, std::memory_order_relaxed);
                return {};
            }
            count = gt::value_of(head);
            // Once the ring is full the count stays in [size, 2 size), where
            // count % size still names the next position.
            const auto next = count + 1 == 2 * size_ ? size_ : count + 1;
            if (head_.compare_exchange_weak(head, gt::pack(tag, next), std::memory_order_relaxed)) break;
        }
        if (count + 1 == 2 * size_) folded_calls_.fetch_add(size_, std::memory_order_relaxed);
        const auto position = count < size_ ? count : count - size_;
        auto& word = bits_[static_cast<std::size_t>(position / bits_per_word)];
        const auto mask = std::uint64_t{1} << (position % bits_per_word);
        auto w = word.load(std::memory_order_relaxed);
        for (;;) {
            if (gt::tag_of(w) != tag) return {};  // cleared for a later generation meanwhile
            if (((w & mask) != 0) == failed) break;
            if (word.compare_exchange_weak(w, w ^ mask, std::memory_order_relaxed)) {
                auto f = failures_.load(std::memory_order_relaxed);
                while (gt::tag_of(f) == tag &&
                       !failures_.compare_exchange_weak(f, failed ? f + 1 : f - 1, std::memory_order_relaxed)) {
                }
                break;
            }
        }
        return counts(gt::pack(tag, std::min<std::uint64_t>(count + 1, size_)));
    }

    /// The current window's counts.
    [[nodiscard]] window_counts totals() const noexcept { return counts(head_.load(std::memory_order_relaxed)); }

    /// Calls counted since construction, in a window or not.
    [[nodiscard]] std::uint64_t lifetime_calls() const noexcept {
        return folded_calls_.load(std::memory_order_relaxed) + generation_tag::value_of(head_.load(std::memory_order_relaxed));
    }

    /// Empties the window and makes it `generation`'s: records of other
    /// generations no longer count in it.
    void clear(std::uint64_t generation = 0) noexcept {
        namespace gt = generation_tag;
        const auto tag = gt::of_generation(generation);
        for (std::size_t i = 0, n = words_for(size_); i < n; ++i) bits_[i].store(gt::pack(tag, 0), std::memory_order_relaxed);
        failures_.store(gt::pack(tag, failures_bias), std::memory_order_relaxed);
        const auto old = head_.exchange(gt::pack(tag, 0), std::memory_order_relaxed);
        folded_calls_.fetch_add(gt::value_of(old), std::memory_order_relaxed);
    }

private:
    static constexpr std::uint64_t bits_per_word = generation_tag::value_bits;
    // The failure count is kept plus this bias: a success can clear a bit
    // before the failure that set it has counted it, and the count must not
    // borrow from its tag.
    static constexpr std::uint64_t failures_bias = std::uint64_t{1} << 31;
    static_assert(2 * std::uint64_t{max_size} <= generation_tag::value_mask && max_size < failures_bias);

    static constexpr std::size_t words_for(std::uint64_t size) noexcept {
        return static_cast<std::size_t>((size + bits_per_word - 1) / bits_per_word);
    }

    // The counts of the window whose position word is `head`.
    [[nodiscard]] window_counts counts(std::uint64_t head) const noexcept {
        namespace gt = generation_tag;
        const auto calls = std::min<std::uint64_t>(gt::value_of(head), size_);
        const auto f = failures_.load(std::memory_order_relaxed);
        if (gt::tag_of(f) != gt::tag_of(head)) return {calls, 0};  // a clear() under way
        // Records in flight can leave the count briefly off; keep it sane.
        const auto set = gt::value_of(f);
        const auto failures = set <= failures_bias ? 0 : std::min(set - failures_bias, calls);
        return {calls, failures};
    }

    std::uint64_t size_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> bits_;                        // | tag | 32 bits, 1 = failed |
    std::atomic<std::uint64_t> head_{0};                                       // | tag | positions taken |
    std::atomic<std::uint64_t> failures_{generation_tag::pack(0, failures_bias)};  // | tag | bits set + bias |
    std::atomic<std::uint64_t> folded_calls_{0};  // calls no longer in head_ (cleared, wrapped, or refused)
};

/// The current run of failures in a row, of one generation (the circuit
/// breaker's closed period): one word, | tag | run | (see generation_tag). A
/// success writes only when there is a run to end; after clear(g), a record of
/// an earlier generation neither adds to the run nor ends it.
class failure_run {
public:
    /// Counts one result in `generation`'s run; returns the run after it: 0
    /// after a success, and when the run belongs to a later generation.
    std::uint64_t record(bool failed, std::uint64_t generation = 0) noexcept {
        namespace gt = generation_tag;
        const auto tag = gt::of_generation(generation);
        auto w = word_.load(std::memory_order_relaxed);
        for (;;) {
            if (gt::tag_of(w) != tag) return 0;
            const auto run = gt::value_of(w);
            if (!failed && run == 0) return 0;
            if (failed && run == gt::value_mask) return run;  // saturated
            const auto desired = failed ? w + 1 : gt::pack(tag, 0);
            if (word_.compare_exchange_weak(w, desired, std::memory_order_relaxed)) return gt::value_of(desired);
        }
    }

    /// The run so far.
    [[nodiscard]] std::uint64_t current() const noexcept { return generation_tag::value_of(word_.load(std::memory_order_relaxed)); }

    /// Ends the run and makes it `generation`'s.
    void clear(std::uint64_t generation = 0) noexcept {
        word_.store(generation_tag::pack(generation_tag::of_generation(generation), 0), std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint64_t> word_{0};
};

}  // namespace resil::detail

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
