// resil/latency_tracker.hpp — recent attempt latencies and their percentiles,
// lock-free: what an adaptive hedge delay ("start a second copy at the p95")
// is computed from.
//
//   resil::latency_tracker latencies{10s};
//   latencies.record(now, took);                          // any thread, wait-free
//   if (auto p95 = latencies.percentile(now, 0.95)) ...   // nullopt when empty
//
// Latencies are counted in a histogram of log-linear buckets: 8 per power of
// two from about 1 µs to 137 s (longer ones count as 137 s, shorter as the
// first bucket), so a percentile is reported to within 6.25 % of the latency
// that reached it (the middle of its bucket). The window is four slots of a
// quarter of `window` each; a percentile counts the current slot and the
// three before it, so it spans between three quarters of the window and all
// of it.
//
// Each thread records into its own stripe (detail/stripes.hpp; at most
// max_stripes of them), so threads do not take turns owning a cache line on
// every call; a percentile adds the stripes up, a few thousand loads: read
// it now and then (hedge_policy caches it), not per call. A record is one
// relaxed increment, except the first of a slot's quarter, which zeroes the
// slot (200 stores; another thread of the stripe recording then waits for
// it). Memory: 3.2 KB per stripe, allocated once at construction.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>

#include "clock.hpp"
#include "detail/stripes.hpp"
#include "validation.hpp"

namespace resil {

/// A percentile of recent latencies, and how many samples it rests on.
struct latency_estimate {
    /// The latency at the percentile asked for (the middle of its bucket,
    /// within 6.25 %).
    duration value{};
    /// How many latencies the window held.
    std::uint64_t samples = 0;
};

/// Recent attempt latencies in a histogram over a sliding window, and their
/// percentiles: what an adaptive hedge delay is computed from. Thread-safe and
/// lock-free: record() is wait-free from any thread (striped); percentile()
/// reads every stripe. Not copyable.
class latency_tracker {
public:
    /// Limits of the window.
    static constexpr duration min_window = std::chrono::milliseconds{100};
    /// The longest window.
    static constexpr duration max_window = std::chrono::hours{1};
    /// Stripes at most: beyond 16, the memory (3.2 KB each) buys little.
    static constexpr std::size_t max_stripes = 16;

    /// Throws std::invalid_argument when `window` is outside [100ms, 1h].
    explicit latency_tracker(duration window = std::chrono::seconds{10},
                             std::size_t stripe_count = detail::default_stripe_count())
        : slot_length_(checked_window(window) / slots),
          rings_(std::min(stripe_count, max_stripes)) {}

    latency_tracker(const latency_tracker&) = delete;
    latency_tracker& operator=(const latency_tracker&) = delete;

    /// The span a percentile covers at most: its four slots.
    [[nodiscard]] duration window() const noexcept { return slot_length_ * slots; }

    /// Counts one latency measured at `now` (a reading of the clock the
    /// caller uses for every record and percentile). A negative latency
    /// counts as zero; a reading older than the time its slot holds now (four
    /// slots later) is dropped.
    /// Allocates nothing.
    void record(time_point now, duration latency) noexcept {
        const std::uint64_t epoch = epoch_of(now);
        ring& r = rings_.local();
        const std::size_t s = epoch % slots;
        auto& slot_epoch = r.epoch[s];
        for (std::uint64_t seen = slot_epoch.load(std::memory_order_acquire);;) {
            if (seen == epoch) break;
            if (seen != no_epoch && (seen & resetting) != 0) {
                // Another thread of this stripe is zeroing the slot: a few
                // hundred stores, waited out rather than losing this record.
                std::this_thread::yield();
                seen = slot_epoch.load(std::memory_order_acquire);
                continue;
            }
            if (seen != no_epoch && seen > epoch) return;  // the slot holds a later time: a stale reading
            // An unused slot, or one of an earlier time: zero it for this one
            // before any record of this time counts in it.
            if (slot_epoch.compare_exchange_weak(seen, epoch | resetting, std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
                for (auto& c : r.counts[s]) c.store(0, std::memory_order_relaxed);
                slot_epoch.store(epoch, std::memory_order_release);
                break;
            }
        }
        r.counts[s][bucket_of(latency)].fetch_add(1, std::memory_order_relaxed);
    }

    /// The latency below which a fraction `q` (in (0, 1]) of the samples of
    /// the window ending at `now` fall, with the number of samples; samples
    /// 0 and value 0 when there are none or `q` is outside (0, 1].
    [[nodiscard]] latency_estimate estimate(time_point now, double q) const noexcept {
        if (!(q > 0.0 && q <= 1.0)) return {};  // written so that NaN fails too
        std::array<std::uint64_t, buckets> sum{};
        std::uint64_t total = 0;
        const std::uint64_t current = epoch_of(now);
        for (std::size_t i = 0; i < rings_.size(); ++i) {
            const ring& r = rings_[i];
            for (std::size_t s = 0; s < slots; ++s) {
                const std::uint64_t e = r.epoch[s].load(std::memory_order_acquire);
                if ((e & resetting) != 0 || e > current || current - e >= slots) continue;  // unused, zeroing, or out of the window
                for (std::size_t b = 0; b < buckets; ++b) {
                    const std::uint64_t c = r.counts[s][b].load(std::memory_order_relaxed);
                    sum[b] += c;
                    total += c;
                }
            }
        }
        if (total == 0) return {};
        // The rank of the q-quantile among `total` samples, 1-based.
        const auto rank = std::max<std::uint64_t>(
            1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
        std::uint64_t seen = 0;
        for (std::size_t b = 0; b < buckets; ++b) {
            seen += sum[b];
            if (seen >= rank) return {middle_of(b), total};
        }
        return {middle_of(buckets - 1), total};
    }

    /// estimate(now, q).value, or nothing when the window holds no sample.
    [[nodiscard]] std::optional<duration> percentile(time_point now, double q) const noexcept {
        const auto e = estimate(now, q);
        if (e.samples == 0) return std::nullopt;
        return e.value;
    }

    /// Bytes allocated for the histograms.
    [[nodiscard]] std::size_t bytes() const noexcept { return rings_.bytes(); }

    // The bucketing, public for tests: bucket_of(d) is the histogram bucket
    // of latency d, middle_of(b) the latency a bucket reports.
    /// Buckets of the histogram: 8 per power of two, from about 1 µs to 137 s.
    static constexpr std::size_t buckets = 200;

    /// The bucket counting `latency`: the first for shorter ones, the last for
    /// longer.
    [[nodiscard]] static constexpr std::size_t bucket_of(duration latency) noexcept {
        const auto ns = latency.count() < 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(latency.count());
        // Units of 1024 ns; 8 linear buckets, then 8 per power of two.
        const std::uint64_t v = std::min<std::uint64_t>(ns >> unit_shift, max_units);
        if (v < sub_buckets) return static_cast<std::size_t>(v);
        const auto e = static_cast<unsigned>(std::bit_width(v) - 1);  // >= 3
        const std::uint64_t mantissa = (v >> (e - sub_bits)) & (sub_buckets - 1);
        return static_cast<std::size_t>((e - sub_bits + 1) * sub_buckets + mantissa);
    }

    /// The latency bucket `b` reports: its middle.
    [[nodiscard]] static constexpr duration middle_of(std::size_t b) noexcept {
        std::uint64_t low = 0;
        std::uint64_t width = 1;
        if (b < sub_buckets) {
            low = b;
        } else {
            const std::size_t e = b / sub_buckets + sub_bits - 1;
            width = std::uint64_t{1} << (e - sub_bits);
            low = (std::uint64_t{1} << e) + (b % sub_buckets) * width;
        }
        // Twice the middle, in units, then to ns: exact for every bucket.
        return duration{static_cast<duration::rep>(((2 * low + width) << unit_shift) / 2)};
    }

private:
    static constexpr std::size_t slots = 4;
    static constexpr unsigned unit_shift = 10;
    static constexpr unsigned sub_bits = 3;
    static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bits;
    static constexpr std::uint64_t max_units = (std::uint64_t{1} << 27) - 1;  // 137 s in 1024 ns units
    static constexpr std::uint64_t no_epoch = ~std::uint64_t{0};
    // Marks a slot being zeroed for the epoch in the other bits (epochs stay
    // far below: the slots are at least 25 ms long).
    static constexpr std::uint64_t resetting = std::uint64_t{1} << 62;

    struct ring {
        std::array<std::atomic<std::uint64_t>, slots> epoch{no_epoch, no_epoch, no_epoch, no_epoch};
        std::array<std::array<std::atomic<std::uint32_t>, buckets>, slots> counts{};
    };

    static duration checked_window(duration window) {
        throw_if_invalid("resil::latency_tracker", detail::check_in_range("window", window, min_window, max_window));
        return window;
    }

    [[nodiscard]] std::uint64_t epoch_of(time_point now) const noexcept {
        const auto t = now.time_since_epoch().count();
        return t <= 0 ? 0 : static_cast<std::uint64_t>(t) / static_cast<std::uint64_t>(slot_length_.count());
    }

    duration slot_length_;
    detail::stripes<ring> rings_;
};

static_assert(latency_tracker::bucket_of(duration::max()) == latency_tracker::buckets - 1,
              "the last bucket holds the longest latency counted");
static_assert(latency_tracker::bucket_of(latency_tracker::middle_of(123)) == 123);

}  // namespace resil
