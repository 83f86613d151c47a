// resil/retry_budget.hpp — caps retries at a share of a client's requests, so
// a failing dependency sees at most ~10 % extra load instead of a multiple.
//
//   resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 10}};
//   auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}});
//
// The shape of Finagle's RetryBudget: every request deposits `ratio` of a
// retry, every retry withdraws one, deposits expire after `window`, and a
// reserve of `min_per_second × window` retries lets a quiet client (too few
// requests to earn a retry) still retry now and then. When the balance is
// spent, the retry is refused and the call fails at once with
// reason::budget_exhausted.
//
// Thread-safe and lock-free: the window is 10 slots of time. Requests are
// deposited in per-thread stripes (detail/stripes.hpp: a ring of 10 words per
// stripe, each packing the slot's epoch and its count), so that the deposit
// every call makes writes no cache line that other cores write too; a
// withdrawal adds the stripes up. Retries are withdrawn from one shared ring
// of 10 words, exactly: a retry is granted by a compare-and-swap on the
// newest slot, then re-checked (the shared ring read again; the whole
// window only when another retry was committed meanwhile or the window
// moved), so concurrent withdrawals can never overdraw the balance, whatever
// order their clock readings arrive in. A deposit finds its slot with one
// multiplication (the division runs about once per slot) and writes the
// thread's ring: a plain store when the thread holds its stripe alone, else
// a compare-and-swap on a ring it shares (detail::owned_stripes); a
// withdrawal reads 10 words per ring (two rings per stripe) and the shared
// ring. Memory: 2 × 128 bytes per stripe (default_stripe_count(): this
// machine's hardware threads, rounded up to a power of two, at most 64),
// allocated at construction. Share one budget per downstream dependency.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include "detail/platform.hpp"
#include "clock.hpp"
#include "detail/stripes.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a retry_budget; the defaults are the documented ones.
struct retry_budget_options {
    /// Retries allowed per request made, in [min_ratio, max_ratio] = [0, 1].
    /// Default 10 %.
    double ratio = 0.10;
    /// Retries per second allowed regardless of traffic, at most
    /// max_min_per_second (1,000,000). Default 10.
    std::uint32_t min_per_second = 10;
    /// How long a deposit counts, in [min_window, max_window] = [10ms, 24h].
    /// Default 10 s.
    duration window = std::chrono::seconds{10};

    ///@{
    /// The bounds validate() checks: min_X and max_X are the smallest and
    /// largest `X` it accepts.
    static constexpr double min_ratio = 0.0;
    static constexpr double max_ratio = 1.0;
    static constexpr std::uint32_t max_min_per_second = 1'000'000;
    static constexpr duration min_window = std::chrono::milliseconds{10};
    static constexpr duration max_window = std::chrono::hours{24};
    ///@}

    /// The first field outside its range, e.g. "`ratio` must be in [0, 1], got 1.5".
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const retry_budget_options&, const retry_budget_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result retry_budget_options::validate() const {
    if (auto bad = detail::check_in_range("ratio", ratio, min_ratio, max_ratio)) return bad;
    if (auto bad = detail::check_in_range("min_per_second", min_per_second, std::uint32_t{0}, max_min_per_second))
        return bad;
    return detail::check_in_range("window", window, min_window, max_window);
}
#endif

/// What a retry budget has decided since construction; a snapshot (each
/// count read relaxed). The requests deposited are the calls a pipeline's
/// metrics count; only withdrawals, made on the failure path, are counted here.
struct retry_budget_metrics {
    std::uint64_t withdrawals = 0;  ///< retries (and hedged copies) the budget granted
    std::uint64_t refusals = 0;     ///< retries (and hedged copies) refused: the balance was spent

    /// Field-by-field equality.
    friend bool operator==(const retry_budget_metrics&, const retry_budget_metrics&) = default;
};

namespace detail {
struct retry_budget_probe;  // tests only: drives one step of a withdrawal at a time
}

/// Caps retries at a share of requests (Finagle's RetryBudget): each request
/// deposits `ratio` of a retry, each retry withdraws one, deposits expire after
/// `window`, and a reserve of `min_per_second × window` lets a quiet client
/// retry. Thread-safe and lock-free: share one per dependency by pointer or
/// reference. Not copyable.
class retry_budget {
public:
    /// Owns no clock: every member that depends on time takes `now`, read
    /// by its driver (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::caller_now;
    /// The window is this many slots of window/10: deposits expire one slot at
    /// a time.
    static constexpr std::size_t slots = 10;

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::retry_budget: `ratio` must be in [0, 1], got 1.5".
    RESIL_DECL explicit retry_budget(retry_budget_options options = {});
    retry_budget(const retry_budget&) = delete;
    retry_budget& operator=(const retry_budget&) = delete;

    /// Records one request (a first attempt) made at `now`, in the calling
    /// thread's stripe.
    void deposit(time_point now) noexcept {
        const auto epoch = epoch_of(now);
        const auto ring = deposits_.local();
        auto& slot = ring.value[epoch % slots];
        // Acquire: a slot written by a later reading brings that reading's
        // update of latest_epoch_ with it, for stale() to see.
        auto word = slot.load(std::memory_order_acquire);
        if (stale(epoch)) return;  // a reading older than the window: nothing to count
        for (;;) {
            if (newer_than(word, epoch)) return;  // a thread with a later clock read owns the slot
            const auto desired = packed_epoch(word) == (epoch & epoch_mask)
                                     ? (count_of(word) < count_max ? word + 1 : word)
                                     : pack(epoch, 1);
            if (desired == word) return;
            if (ring.alone) {  // nobody else writes this ring: no locked instruction needed
                slot.store(desired, std::memory_order_release);
                return;
            }
            if (slot.compare_exchange_weak(word, desired, std::memory_order_acq_rel)) return;
        }
    }

    /// Takes one retry from the balance at `now`; false (and nothing taken)
    /// when it is spent. A reading older than the newest slot written (a
    /// thread preempted between reading the clock and getting here) counts as
    /// that newest time, so the retries taken there are never out of its sight.
    /// Counted in metrics().
    [[nodiscard]] bool try_withdraw(time_point now) noexcept {
        const bool granted = withdraw(now);
        (granted ? withdrawals_ : refusals_).fetch_add(1, std::memory_order_relaxed);
        return granted;
    }

    /// Retries that would be granted at `now`.
    [[nodiscard]] std::int64_t balance(time_point now) const noexcept {
        const auto v = view(epoch_of(now));
        return allowed(v.requests) - static_cast<std::int64_t>(v.retries);
    }

    /// The options it was built with.
    [[nodiscard]] const retry_budget_options& options() const noexcept { return options_; }

    /// Withdrawals granted and refused since construction.
    [[nodiscard]] retry_budget_metrics metrics() const noexcept {
        return {withdrawals_.load(std::memory_order_relaxed), refusals_.load(std::memory_order_relaxed)};
    }

private:
    friend struct detail::retry_budget_probe;

    RESIL_DECL bool withdraw(time_point now) noexcept;

    // What view() read: the window's end and sums (see there).
    struct window_view {
        std::uint64_t reading = 0;
        std::uint64_t epoch = 0;  // the window's last epoch (full, not masked)
        std::uint64_t requests = 0;
        std::uint64_t retries = 0;
        std::array<std::uint64_t, slots> words{};  // the withdrawal slots
    };

    // A withdrawal racing another at a slot boundary checked a sum that did
    // not include the other's retry. Re-check after committing and give the
    // retry back if the two together overdrew: both may give back (stricter),
    // neither can keep an overdraft. The window ends at the newest slot
    // written, not at `epoch`: a retry committed meanwhile by a thread with a
    // later reading must be counted too.
    //
    // After a view, most withdrawals need no second one: when no other retry
    // was committed since (the withdrawal slots hold what the view saw, plus
    // this retry) and the window has not moved (its end, from latest_epoch_,
    // is the same), the view's check stands, retry included: deposits since
    // only add to a window that has not moved (a deposit restarts only a slot
    // that left it). Otherwise the full check. The slots are loaded
    // sequentially consistent after the commit, as the full check's are.
    bool confirm_after_view(const window_view& v, std::atomic<std::uint64_t>& slot, std::uint64_t committed) noexcept {
        bool unchanged = true;
        for (std::size_t i = 0; i < slots; ++i) {
            const auto w = slots_[i].load(std::memory_order_seq_cst);
            unchanged = unchanged && w == (&slots_[i] == &slot ? committed : v.words[i]);
        }
        if (unchanged && window_end(v.reading, latest_epoch_.load(std::memory_order_relaxed)) == v.epoch) return true;
        return confirm(v.epoch, slot);
    }

    bool confirm(std::uint64_t epoch, std::atomic<std::uint64_t>& slot) noexcept {
        const auto t = view(epoch);
        if (static_cast<std::int64_t>(t.retries) <= allowed(t.requests)) return true;
        auto word = slot.load(std::memory_order_acquire);
        while (packed_epoch(word) == (epoch & epoch_mask) && count_of(word) > 0 &&
               !slot.compare_exchange_weak(word, word - retry_one, std::memory_order_acq_rel)) {
        }
        return false;
    }

    // Word layout, of a deposit slot (requests) and of a withdrawal slot
    // (retries) alike: | epoch (24 bits) | count (40 bits) |. A slot whose
    // epoch is not one of the window's last `slots` is stale and counts
    // nothing. 40 bits hold 10^12 per slot and stripe; beyond that a count
    // saturates, which only makes the budget stricter.
    static constexpr int count_bits = 40;
    static constexpr std::uint64_t count_max = (std::uint64_t{1} << count_bits) - 1;
    static constexpr std::uint64_t epoch_mask = (std::uint64_t{1} << 24) - 1;
    static constexpr std::uint64_t retry_one = 1;

    static constexpr std::uint64_t pack(std::uint64_t epoch, std::uint64_t count) noexcept {
        return ((epoch & epoch_mask) << count_bits) | count;
    }
    static constexpr std::uint64_t packed_epoch(std::uint64_t w) noexcept { return w >> count_bits; }
    static constexpr std::uint64_t count_of(std::uint64_t w) noexcept { return w & count_max; }

    // True when the slot was written for a later epoch than `epoch` (this
    // thread's clock read is older than another's): never overwrite it. Only
    // a few windows ahead count as newer: a slot idle for ages wraps around
    // the 24-bit epoch and must read as stale, not as the future.
    static constexpr std::uint64_t newer_horizon = 4 * slots;
    static constexpr bool newer_than(std::uint64_t w, std::uint64_t epoch) noexcept {
        const auto ahead = (packed_epoch(w) - (epoch & epoch_mask)) & epoch_mask;
        return ahead != 0 && ahead <= newer_horizon;
    }

    // True when `epoch` is older than the window ending at the latest epoch
    // seen: a stale clock reading (a stalled thread, a reused context) that
    // must neither count nor overwrite a live slot. Advances the latest epoch.
    bool stale(std::uint64_t epoch) noexcept {
        auto latest = latest_epoch_.load(std::memory_order_relaxed);
        while (epoch > latest && !latest_epoch_.compare_exchange_weak(latest, epoch, std::memory_order_relaxed)) {
        }
        return epoch + slots <= latest;
    }

    // Consecutive readings almost always fall in the slot of the one before,
    // so the newest slot located is kept and checked with one
    // multiplication: the 64-bit division runs about once per slot. Only a
    // later slot is stored, so an old reading (a reused context) never
    // writes the word every deposit reads.
    std::uint64_t epoch_of(time_point now) const noexcept {
        const auto signed_ticks = now.time_since_epoch().count();
        if (signed_ticks <= 0) return 0;
        const auto ticks = static_cast<std::uint64_t>(signed_ticks);
        const auto length = static_cast<std::uint64_t>(slot_length_.count());
        const auto last = last_epoch_.load(std::memory_order_relaxed);
        // Unsigned: a reading before the slot's start wraps to a huge offset.
        if (ticks - last * length < length) [[likely]]
            return last;
        const auto epoch = ticks / length;
        if (epoch > last) last_epoch_.store(epoch, std::memory_order_relaxed);
        return epoch;
    }

    std::int64_t allowed(std::uint64_t requests) const noexcept {
        return static_cast<std::int64_t>(std::floor(options_.ratio * static_cast<double>(requests))) + reserve_;
    }

    // The window's sums. It ends at the later of `reading` and the latest
    // epoch any deposit or withdrawal reached (latest_epoch_, at most
    // newer_horizon ahead), so a retry committed meanwhile by a thread with
    // a later reading is inside it. The withdrawal slots are loaded first:
    // such a thread raised latest_epoch_ before it committed, so a view that
    // sees its retry also sees how late it is. One pass over the deposit
    // stripes, whose words never need to move the end.
    static constexpr std::uint64_t window_end(std::uint64_t reading, std::uint64_t latest) noexcept {
        return latest <= reading ? reading : reading + std::min(latest - reading, newer_horizon);
    }
    window_view view(std::uint64_t reading) const noexcept {
        window_view v;
        v.reading = reading;
        for (std::size_t i = 0; i < slots; ++i) v.words[i] = slots_[i].load(std::memory_order_seq_cst);
        v.epoch = window_end(reading, latest_epoch_.load(std::memory_order_relaxed));
        // The epoch tag each slot holds when it is in the window: one
        // comparison per word.
        std::array<std::uint64_t, slots> tags{};
        tags.fill(~std::uint64_t{0});  // no 24-bit tag: slots before the first epoch count nothing
        for (std::uint64_t back = 0; back < slots && back <= v.epoch; ++back)
            tags[(v.epoch - back) % slots] = (v.epoch - back) & epoch_mask;
        const auto counted = [&tags](std::size_t i, std::uint64_t w) {
            return packed_epoch(w) == tags[i] ? count_of(w) : 0;
        };
        for (std::size_t i = 0; i < slots; ++i) v.retries += counted(i, v.words[i]);
        // Deposits made meanwhile may be missed: that only makes this view stricter.
        for (std::size_t s = 0; s < deposits_.size(); ++s) {
            const auto& ring = deposits_[s];
            for (std::size_t i = 0; i < slots; ++i) v.requests += counted(i, ring[i].load(std::memory_order_seq_cst));
        }
        return v;
    }

    // Read by every deposit; written about once per slot.
    retry_budget_options options_;
    duration slot_length_{};
    std::int64_t reserve_ = 0;
    mutable std::atomic<std::uint64_t> last_epoch_{0};  // the newest slot epoch_of() located
    std::atomic<std::uint64_t> latest_epoch_{0};        // the newest epoch any deposit or withdrawal reached
    // Requests: a ring per thread that holds its stripe alone (written
    // without a locked instruction), and one per stripe of the others.
    detail::owned_stripes<std::array<std::atomic<std::uint64_t>, slots>> deposits_;
    // Retries, shared by every thread (written by withdrawals only): on lines
    // of their own, away from the words every deposit reads.
    alignas(detail::stripe_alignment) std::array<std::atomic<std::uint64_t>, slots> slots_{};
    // Written by withdrawals only, as slots_ is (their line has room for them).
    std::atomic<std::uint64_t> withdrawals_{0};
    std::atomic<std::uint64_t> refusals_{0};
};

#if RESIL_DETAIL_BODIES

RESIL_DECL retry_budget::retry_budget(retry_budget_options options) : options_(options) {
     throw_if_invalid("resil::retry_budget", options.validate());
     slot_length_ = options.window / static_cast<duration::rep>(slots);
     const auto window_seconds = std::chrono::duration<double>(options.window).count();
     reserve_ = static_cast<std::int64_t>(std::floor(options.min_per_second * window_seconds));
 }


RESIL_DECL bool retry_budget::withdraw(time_point now) noexcept {
     const auto reading = epoch_of(now);
     for (;;) {
         const auto v = view(reading);
         if (stale(reading)) return false;
         if (static_cast<std::int64_t>(v.retries) >= allowed(v.requests)) return false;
         auto& slot = slots_[v.epoch % slots];
         auto word = v.words[v.epoch % slots];
         const bool current = packed_epoch(word) == (v.epoch & epoch_mask);
         if (current && count_of(word) == count_max) return false;  // saturated: refuse rather than wrap
         const auto desired = current ? word + retry_one : pack(v.epoch, 1);
         // Sequentially consistent with confirm()'s loads: two withdrawals
         // committing to different slots cannot both miss the other.
         if (slot.compare_exchange_strong(word, desired, std::memory_order_seq_cst))
             return confirm_after_view(v, slot, desired);
     }
 }
#endif

}  // namespace resil
