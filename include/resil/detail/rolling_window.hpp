// resil/detail/rolling_window.hpp — lock-free failure counting for the
// circuit breaker: over the last span of time (a ring of buckets) or over the
// last N calls (a ring of bits).
//
//   detail::rolling_time_window w{10s};            // 10 buckets of 1 s
//   w.record(now, /*failed=*/true);
//   auto c = w.totals(now);                        // calls and failures in the window
//
// Both windows are thread-safe and never allocate after construction. Their
// totals are exact when no record is in progress, and off by the records in
// flight otherwise; a breaker's decision tolerates that.
//
// In the time window, threads write to a few stripes (copies of the ring,
// each on its own cache lines), so that threads sharing a breaker do not take
// turns owning one cache line on every call; totals add the stripes up.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../clock.hpp"

namespace resil::detail {

/// Calls and failures counted by a window.
struct window_counts {
    std::uint64_t calls = 0;
    std::uint64_t failures = 0;
};

inline constexpr std::size_t stripe_count = 4;

/// How many live threads hold each stripe.
inline std::array<std::atomic<std::uint32_t>, stripe_count> stripe_users{};

/// Picks the stripe with the fewest live threads for the calling thread, and
/// gives it back when the thread ends, so that threads alive together spread
/// over the stripes even when threads come and go.
[[nodiscard]] inline std::size_t claim_stripe() noexcept {
    std::size_t best = 0;
    for (std::size_t i = 1; i < stripe_count; ++i)
        if (stripe_users[i].load(std::memory_order_relaxed) < stripe_users[best].load(std::memory_order_relaxed))
            best = i;
    stripe_users[best].fetch_add(1, std::memory_order_relaxed);
    struct release {
        std::size_t stripe;
        ~release() { stripe_users[stripe].fetch_sub(1, std::memory_order_relaxed); }
    };
    static thread_local const release on_thread_exit{best};
    return best;
}

/// The calling thread's stripe, in [0, stripe_count). Two threads on one
/// stripe are merely slower, never wrong.
[[nodiscard]] inline std::size_t this_thread_stripe() noexcept {
    // Constant-initialized, so reading it needs no guard.
    static thread_local std::size_t stripe = stripe_count;
    if (stripe == stripe_count) [[unlikely]]
        stripe = claim_stripe();
    return stripe;
}

/// A counter that several threads increment often and few read: one atomic
/// per stripe, each on its own cache line.
class striped_counter {
public:
    void add(std::uint64_t n = 1) noexcept {
        stripes_[this_thread_stripe()].value.fetch_add(n, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t total() const noexcept {
        std::uint64_t sum = 0;
        for (const auto& s : stripes_) sum += s.value.load(std::memory_order_relaxed);
        return sum;
    }

private:
    struct alignas(64) stripe {
        std::atomic<std::uint64_t> value{0};
    };
    std::array<stripe, stripe_count> stripes_{};
};

/// Calls over the last `window` of time: a ring of `buckets` buckets of
/// window / buckets each (one ring per stripe). The window covers the current bucket and the
/// buckets - 1 before it, so it spans between (buckets - 1) / buckets of the
/// window and all of it. Each bucket is one atomic word packing its epoch (the
/// bucket's index in time) with its calls and failures, so a record is one
/// compare-and-swap and a stale bucket is reset by the record that finds it.
class rolling_time_window {
public:
    static constexpr std::size_t buckets = 10;
    static_assert(buckets <= 16, "locate() packs the index in 4 bits");

    /// `window` must be at least `buckets` nanoseconds (the caller checks).
    explicit rolling_time_window(duration window) noexcept
        : bucket_ticks_(static_cast<std::uint64_t>(
              std::max<duration::rep>(window.count() / static_cast<duration::rep>(buckets), 1))) {}

    rolling_time_window(const rolling_time_window&) = delete;
    rolling_time_window& operator=(const rolling_time_window&) = delete;

    [[nodiscard]] duration bucket_length() const noexcept { return duration{static_cast<duration::rep>(bucket_ticks_)}; }

    /// Counts one call made (or finished) at `now`.
    void record(time_point now, bool failed) noexcept {
        const auto [epoch, index] = locate(now);
        auto& slot = rings_[this_thread_stripe()].slots[index];
        auto word = slot.load(std::memory_order_relaxed);
        // The common case, kept small enough to inline: the slot is current
        // and not full, and nobody else wrote it meanwhile.
        if (tag_of(word) == (epoch & epoch_mask) && calls_of(word) != count_max &&
            slot.compare_exchange_weak(word, word + call_one + (failed ? failure_one : 0), std::memory_order_relaxed))
            return;
        record_slow(slot, word, epoch, failed);
    }

    /// Calls and failures in the window ending at `now`.
    [[nodiscard]] window_counts totals(time_point now) const noexcept {
        const auto tag = epoch_of(now) & epoch_mask;
        window_counts c;
        for (const auto& ring : rings_) {
            for (const auto& slot : ring.slots) {
                const auto word = slot.load(std::memory_order_relaxed);
                if (((tag - tag_of(word)) & epoch_mask) >= buckets) continue;  // stale, or newer than `now`
                c.calls += calls_of(word);
                c.failures += failures_of(word);
            }
        }
        return c;
    }

    /// Every call counted since construction, in the window or not.
    [[nodiscard]] window_counts lifetime() const noexcept {
        window_counts c{folded_calls_.load(std::memory_order_relaxed), folded_failures_.load(std::memory_order_relaxed)};
        for (const auto& ring : rings_) {
            for (const auto& slot : ring.slots) {
                const auto word = slot.load(std::memory_order_relaxed);
                c.calls += calls_of(word);
                c.failures += failures_of(word);
            }
        }
        return c;
    }

    /// Empties the window (lifetime() keeps what it held).
    void clear() noexcept {
        for (auto& ring : rings_)
            for (auto& slot : ring.slots) fold(slot.exchange(0, std::memory_order_relaxed));
    }

private:
    // Word layout: | epoch (24 bits) | calls (20 bits) | failures (20 bits) |.
    // 20 bits hold ~1 M calls per bucket. The epoch is kept modulo 2^24; a
    // slot left untouched for a multiple of 2^24 buckets (194 days with 1 s
    // buckets) could pass for current once, which only blurs one decision.
    static constexpr int count_bits = 20;
    static constexpr std::uint64_t count_max = (std::uint64_t{1} << count_bits) - 1;
    static constexpr int epoch_shift = 2 * count_bits;
    static constexpr std::uint64_t epoch_mask = (std::uint64_t{1} << 24) - 1;
    static constexpr std::uint64_t failure_one = 1;
    static constexpr std::uint64_t call_one = std::uint64_t{1} << count_bits;
    // How far ahead of a record a slot may be and still be trusted as newer:
    // a clock read goes stale by a preemption, not by days.
    static constexpr std::uint64_t newer_horizon = 4 * buckets;

    void record_slow(std::atomic<std::uint64_t>& slot, std::uint64_t word, std::uint64_t epoch, bool failed) noexcept {
        // A record older than the window ending at the latest bucket any
        // thread has reached (a clock read gone stale, however long ago) is
        // outside the window: it must neither count nor restart a live slot.
        auto latest = latest_epoch_.load(std::memory_order_relaxed);
        while (epoch > latest && !latest_epoch_.compare_exchange_weak(latest, epoch, std::memory_order_relaxed)) {
        }
        if (epoch + buckets <= latest) return count_outside(failed);
        const auto tag = epoch & epoch_mask;
        for (;;) {
            const auto slot_tag = tag_of(word);
            std::uint64_t desired = 0;
            if (slot_tag == tag) {
                // A full bucket stops counting rather than wrap into the next field.
                if (calls_of(word) == count_max) return count_outside(failed);
                desired = word + call_one + (failed ? failure_one : 0);
            } else if (newer(slot_tag, tag)) {
                // A thread with a later clock read already moved the slot on:
                // this record is older than the whole window.
                return count_outside(failed);
            } else {
                desired = pack(tag, 1, failed ? 1 : 0);  // a stale bucket: start it afresh
            }
            if (slot.compare_exchange_weak(word, desired, std::memory_order_relaxed)) {
                if (slot_tag != tag) fold(word);
                return;
            }
        }
    }

    static constexpr std::uint64_t pack(std::uint64_t tag, std::uint64_t calls, std::uint64_t failures) noexcept {
        return (tag << epoch_shift) | (calls << count_bits) | failures;
    }
    static constexpr std::uint64_t tag_of(std::uint64_t w) noexcept { return w >> epoch_shift; }
    static constexpr std::uint64_t calls_of(std::uint64_t w) noexcept { return (w >> count_bits) & count_max; }
    static constexpr std::uint64_t failures_of(std::uint64_t w) noexcept { return w & count_max; }
    static constexpr bool newer(std::uint64_t slot_tag, std::uint64_t tag) noexcept {
        const auto ahead = (slot_tag - tag) & epoch_mask;
        return ahead != 0 && ahead <= newer_horizon;
    }

    struct location {
        std::uint64_t epoch;  // floor(ticks / bucket)
        std::size_t index;    // epoch % buckets
    };

    // Consecutive records almost always fall in the bucket of the one before,
    // so the last location is kept (epoch × 16 + index, in one word) and
    // checked with one multiplication: the 64-bit division and the modulo
    // run about once per bucket.
    [[nodiscard]] location locate(time_point now) const noexcept {
        const auto signed_ticks = now.time_since_epoch().count();
        const auto now_ticks = signed_ticks <= 0 ? 0 : static_cast<std::uint64_t>(signed_ticks);
        const auto last = last_location_.load(std::memory_order_relaxed);
        const auto epoch = last >> 4;
        // Unsigned: a `now_ticks` before the bucket's start wraps to a huge offset.
        if (now_ticks - epoch * bucket_ticks_ < bucket_ticks_) return {epoch, static_cast<std::size_t>(last & 15)};
        const auto fresh = now_ticks / bucket_ticks_;
        const auto index = fresh % buckets;
        last_location_.store(fresh << 4 | index, std::memory_order_relaxed);
        return {fresh, static_cast<std::size_t>(index)};
    }
    [[nodiscard]] std::uint64_t epoch_of(time_point now) const noexcept { return locate(now).epoch; }

    void count_outside(bool failed) noexcept {
        folded_calls_.fetch_add(1, std::memory_order_relaxed);
        if (failed) folded_failures_.fetch_add(1, std::memory_order_relaxed);
    }
    void fold(std::uint64_t old) noexcept {
        if (const auto n = calls_of(old)) folded_calls_.fetch_add(n, std::memory_order_relaxed);
        if (const auto n = failures_of(old)) folded_failures_.fetch_add(n, std::memory_order_relaxed);
    }

    // Read by every record, written about once per bucket: kept off the
    // slots' lines, which every record writes.
    std::uint64_t bucket_ticks_;
    mutable std::atomic<std::uint64_t> last_location_{0};
    // Calls that left the ring (reset or cleared buckets) or never entered it.
    std::atomic<std::uint64_t> folded_calls_{0};
    std::atomic<std::uint64_t> folded_failures_{0};
    struct alignas(64) stripe_ring {
        std::array<std::atomic<std::uint64_t>, buckets> slots{};
    };
    std::array<stripe_ring, stripe_count> rings_{};
    std::atomic<std::uint64_t> latest_epoch_{0};  // the newest bucket any record reached
};

/// Calls over the last `size` calls: a ring of bits (1 = failed) and a running
/// count of the set bits. A record claims the next position with one
/// fetch_add, then swaps its bit; the count follows every change of a bit, so
/// it stays equal to the bits set.
class rolling_count_window {
public:
    /// A window of `size` calls; 0 makes an unused window that allocates nothing.
    explicit rolling_count_window(std::uint32_t size)
        : size_(size), bits_(size == 0 ? nullptr : std::make_unique<std::atomic<std::uint64_t>[]>(words_for(size))) {}

    rolling_count_window(const rolling_count_window&) = delete;
    rolling_count_window& operator=(const rolling_count_window&) = delete;

    /// Counts one call; returns the window's counts including it.
    window_counts record(bool failed) noexcept {
        const auto index = next_.fetch_add(1, std::memory_order_relaxed);
        const auto position = index % size_;
        auto& word = bits_[static_cast<std::size_t>(position / 64)];
        const auto mask = std::uint64_t{1} << (position % 64);
        if (failed) {
            if ((word.fetch_or(mask, std::memory_order_relaxed) & mask) == 0)
                failures_.fetch_add(1, std::memory_order_relaxed);
        } else if ((word.load(std::memory_order_relaxed) & mask) != 0) {
            if ((word.fetch_and(~mask, std::memory_order_relaxed) & mask) != 0)
                failures_.fetch_sub(1, std::memory_order_relaxed);
        }
        return counts(index + 1);
    }

    /// The window's current counts.
    [[nodiscard]] window_counts totals() const noexcept { return counts(next_.load(std::memory_order_relaxed)); }

    /// Calls counted since construction.
    [[nodiscard]] std::uint64_t lifetime_calls() const noexcept { return next_.load(std::memory_order_relaxed); }

    /// Empties the window.
    void clear() noexcept {
        start_.store(next_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        for (std::size_t i = 0, n = words_for(size_); i < n; ++i) {
            const auto old = bits_[i].exchange(0, std::memory_order_relaxed);
            if (old != 0) failures_.fetch_sub(std::popcount(old), std::memory_order_relaxed);
        }
    }

private:
    static constexpr std::size_t words_for(std::uint64_t size) noexcept { return static_cast<std::size_t>((size + 63) / 64); }

    [[nodiscard]] window_counts counts(std::uint64_t next) const noexcept {
        const auto start = start_.load(std::memory_order_relaxed);
        const auto calls = next > start ? std::min<std::uint64_t>(next - start, size_) : 0;
        // Records racing a clear() can leave the count briefly off; keep it sane.
        const auto set = failures_.load(std::memory_order_relaxed);
        const auto failures = set <= 0 ? 0 : std::min(static_cast<std::uint64_t>(set), calls);
        return {calls, failures};
    }

    std::uint64_t size_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> bits_;
    std::atomic<std::uint64_t> next_{0};    // calls recorded since construction
    std::atomic<std::uint64_t> start_{0};   // next_ at the last clear()
    std::atomic<std::int64_t> failures_{0};  // bits set
};

}  // namespace resil::detail
