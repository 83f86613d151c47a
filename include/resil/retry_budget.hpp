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
// Thread-safe and lock-free: the window is a ring of 10 slots, each one
// atomic word packing the slot's epoch, requests and retries. A retry is
// granted by a compare-and-swap on the newest slot, then re-checked against
// the whole window, so concurrent withdrawals can never overdraw the balance,
// whatever order their clock readings arrive in. Share one budget per downstream dependency.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include "clock.hpp"
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

    static constexpr double min_ratio = 0.0;
    static constexpr double max_ratio = 1.0;
    static constexpr std::uint32_t max_min_per_second = 1'000'000;
    static constexpr duration min_window = std::chrono::milliseconds{10};
    static constexpr duration max_window = std::chrono::hours{24};

    /// The first field outside its range, e.g. "`ratio` must be in [0, 1], got 1.5".
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_in_range("ratio", ratio, min_ratio, max_ratio)) return bad;
        if (auto bad = detail::check_in_range("min_per_second", min_per_second, std::uint32_t{0}, max_min_per_second))
            return bad;
        return detail::check_in_range("window", window, min_window, max_window);
    }

    friend bool operator==(const retry_budget_options&, const retry_budget_options&) = default;
};

namespace detail {
struct retry_budget_probe;  // tests only: drives one step of a withdrawal at a time
}

class retry_budget {
public:
    static constexpr std::size_t slots = 10;

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::retry_budget: `ratio` must be in [0, 1], got 1.5".
    explicit retry_budget(retry_budget_options options = {}) : options_(options) {
        throw_if_invalid("resil::retry_budget", options.validate());
        slot_length_ = options.window / static_cast<duration::rep>(slots);
        const auto window_seconds = std::chrono::duration<double>(options.window).count();
        reserve_ = static_cast<std::int64_t>(std::floor(options.min_per_second * window_seconds));
    }
    retry_budget(const retry_budget&) = delete;
    retry_budget& operator=(const retry_budget&) = delete;

    /// Records one request (a first attempt) made at `now`.
    void deposit(time_point now) noexcept {
        const auto epoch = epoch_of(now);
        auto& slot = slots_[epoch % slots];
        // Acquire: a slot written by a later reading brings that reading's
        // update of latest_epoch_ with it, for stale() to see.
        auto word = slot.load(std::memory_order_acquire);
        if (stale(epoch)) return;  // a reading older than the window: nothing to count
        for (;;) {
            if (newer_than(word, epoch)) return;  // a thread with a later clock read owns the slot
            const auto desired = packed_epoch(word) == (epoch & epoch_mask)
                                     ? (requests_of(word) < count_max ? word + request_one : word)
                                     : pack(epoch, 1, 0);
            if (desired == word || slot.compare_exchange_weak(word, desired, std::memory_order_acq_rel)) return;
        }
    }

    /// Takes one retry from the balance at `now`; false (and nothing taken)
    /// when it is spent. A reading older than the newest slot written (a
    /// thread preempted between reading the clock and getting here) counts as
    /// that newest time, so the retries taken there are never out of its sight.
    [[nodiscard]] bool try_withdraw(time_point now) noexcept {
        const auto reading = epoch_of(now);
        for (;;) {
            const auto v = view(reading);
            if (stale(reading)) return false;
            if (static_cast<std::int64_t>(v.retries) >= allowed(v.requests)) return false;
            auto& slot = slots_[v.epoch % slots];
            auto word = v.words[v.epoch % slots];
            const bool current = packed_epoch(word) == (v.epoch & epoch_mask);
            if (current && retries_of(word) == count_max) return false;  // saturated: refuse rather than wrap
            const auto desired = current ? word + retry_one : pack(v.epoch, 0, 1);
            // Sequentially consistent with confirm()'s loads: two withdrawals
            // committing to different slots cannot both miss the other.
            if (slot.compare_exchange_strong(word, desired, std::memory_order_seq_cst)) return confirm(v.epoch, slot);
        }
    }

    /// Retries that would be granted at `now`.
    [[nodiscard]] std::int64_t balance(time_point now) const noexcept {
        const auto v = view(epoch_of(now));
        return allowed(v.requests) - static_cast<std::int64_t>(v.retries);
    }

    [[nodiscard]] const retry_budget_options& options() const noexcept { return options_; }

private:
    friend struct detail::retry_budget_probe;

    // A withdrawal racing another at a slot boundary checked a sum that did
    // not include the other's retry. Re-check after committing and give the
    // retry back if the two together overdrew: both may give back (stricter),
    // neither can keep an overdraft. The window ends at the newest slot
    // written, not at `epoch`: a retry committed meanwhile by a thread with a
    // later reading must be counted too.
    bool confirm(std::uint64_t epoch, std::atomic<std::uint64_t>& slot) noexcept {
        const auto t = view(epoch);
        if (static_cast<std::int64_t>(t.retries) <= allowed(t.requests)) return true;
        auto word = slot.load(std::memory_order_acquire);
        while (packed_epoch(word) == (epoch & epoch_mask) && retries_of(word) > 0 &&
               !slot.compare_exchange_weak(word, word - retry_one, std::memory_order_acq_rel)) {
        }
        return false;
    }

    // Word layout: | epoch (24 bits) | requests (20 bits) | retries (20 bits) |.
    // A slot whose epoch is not one of the window's last `slots` is stale and
    // counts nothing. 20 bits hold ~1 M requests per slot; beyond that the
    // count saturates, which only makes the budget stricter.
    static constexpr int count_bits = 20;
    static constexpr std::uint64_t count_max = (std::uint64_t{1} << count_bits) - 1;
    static constexpr std::uint64_t epoch_mask = (std::uint64_t{1} << 24) - 1;
    static constexpr std::uint64_t retry_one = 1;
    static constexpr std::uint64_t request_one = std::uint64_t{1} << count_bits;

    static constexpr std::uint64_t pack(std::uint64_t epoch, std::uint64_t requests, std::uint64_t retries) noexcept {
        return ((epoch & epoch_mask) << (2 * count_bits)) | (requests << count_bits) | retries;
    }
    static constexpr std::uint64_t packed_epoch(std::uint64_t w) noexcept { return w >> (2 * count_bits); }
    static constexpr std::uint64_t requests_of(std::uint64_t w) noexcept { return (w >> count_bits) & count_max; }
    static constexpr std::uint64_t retries_of(std::uint64_t w) noexcept { return w & count_max; }

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

    std::uint64_t epoch_of(time_point now) const noexcept {
        const auto ticks = now.time_since_epoch().count();
        return ticks <= 0 ? 0 : static_cast<std::uint64_t>(ticks / slot_length_.count());
    }

    std::int64_t allowed(std::uint64_t requests) const noexcept {
        return static_cast<std::int64_t>(std::floor(options_.ratio * static_cast<double>(requests))) + reserve_;
    }

    // One pass over the ring: the window end (the later of `reading` and the
    // newest slot written, up to newer_horizon ahead) and its sums. A slot
    // counting nothing cannot move the end, so a never-written ring (epoch 0)
    // does not read as the future once the 24-bit epoch wraps near it.
    struct window_view {
        std::uint64_t epoch = 0;  // the window's last epoch (full, not masked)
        std::uint64_t requests = 0;
        std::uint64_t retries = 0;
        std::array<std::uint64_t, slots> words{};
    };
    window_view view(std::uint64_t reading) const noexcept {
        window_view v;
        std::uint64_t ahead_max = 0;
        for (std::size_t i = 0; i < slots; ++i) {
            v.words[i] = slots_[i].load(std::memory_order_seq_cst);
            if ((v.words[i] & ((std::uint64_t{1} << (2 * count_bits)) - 1)) == 0) continue;
            const auto ahead = (packed_epoch(v.words[i]) - (reading & epoch_mask)) & epoch_mask;
            if (ahead <= newer_horizon && ahead > ahead_max) ahead_max = ahead;
        }
        v.epoch = reading + ahead_max;
        for (const auto w : v.words) {
            const auto age = ((v.epoch & epoch_mask) - packed_epoch(w)) & epoch_mask;
            if (age >= slots) continue;
            v.requests += requests_of(w);
            v.retries += retries_of(w);
        }
        return v;
    }

    retry_budget_options options_;
    duration slot_length_{};
    std::int64_t reserve_ = 0;
    std::array<std::atomic<std::uint64_t>, slots> slots_{};
    std::atomic<std::uint64_t> latest_epoch_{0};
};

}  // namespace resil
