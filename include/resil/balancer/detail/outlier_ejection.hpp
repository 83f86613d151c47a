// resil/balancer/detail/outlier_ejection.hpp — passive health: Envoy's
// consecutive-5xx outlier detection over a balancer's endpoints. Runs of
// failures, the ejection cap, and the ejection multiplier with its decay.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "../../clock.hpp"
#include "../../events.hpp"
#include "../options.hpp"
#include "snapshot.hpp"

namespace resil::detail {

class outlier_ejection {
public:
    /// `options` is the balancer's: it outlives this.
    explicit outlier_ejection(const outlier_detection_options& options) noexcept : options_(options) {}
    outlier_ejection(const outlier_ejection&) = delete;
    outlier_ejection& operator=(const outlier_ejection&) = delete;

    /// An answer ends the endpoint's run of failures.
    static void count_success(endpoint_state& st) noexcept {
        if (st.consecutive_failures.load(std::memory_order_relaxed) != 0)
            st.consecutive_failures.store(0, std::memory_order_relaxed);
    }

    /// One more failure in the endpoint's run: true when the run reached
    /// `consecutive_failures` (then try_eject()).
    [[nodiscard]] bool count_failure(endpoint_state& st) const noexcept {
        const auto threshold = options_.consecutive_failures;
        if (threshold == 0) return false;
        return st.consecutive_failures.fetch_add(1, std::memory_order_acq_rel) + 1 >= threshold;
    }

    /// Ejects endpoint `index` of `s` at `now_ns` unless the cap refuses:
    /// the ejection's event, or nothing. Ejections are rare: one at a time,
    /// each counting the ejected endpoints itself, so two racing ejections
    /// cannot both pass the cap.
    [[nodiscard]] std::optional<events::endpoint_ejected> try_eject(balancer_snapshot& s, std::uint32_t index,
                                                                     std::int64_t now_ns) noexcept {
        auto& st = *s.state_of[index];
        std::unique_lock lock(mutex_);
        if (st.ejected_at(now_ns)) return std::nullopt;  // ejected by a failure on another thread meanwhile
        const auto n = s.endpoints.size();
        const auto share_cap = static_cast<std::size_t>(options_.max_ejection_share * static_cast<double>(n));
        const auto cap = std::min(n - 1, std::max<std::size_t>(1, share_cap));
        std::size_t count = 0;
        for (const auto* other : s.state_of) count += other->ejected_at(now_ns) ? 1 : 0;
        if (count >= cap) {
            // Refused by the cap: the run starts again (as Envoy resets its
            // consecutive-5xx count whether or not the ejection was allowed).
            st.consecutive_failures.store(0, std::memory_order_relaxed);
            return std::nullopt;
        }
        const auto base = options_.base_ejection_time.count();
        const auto longest = options_.max_ejection_time.count();
        // The multiplier: less one per decay interval spent un-ejected, then, as
        // Envoy's ejectTimeBackoff, one more while multiplier × base < max + base
        // (so it reaches 11 with 30 s and 300 s); the length is capped at max.
        std::int64_t times = st.times_ejected.load(std::memory_order_relaxed);
        const auto healthy_for = now_ns - st.last_ejection_end.load(std::memory_order_relaxed);
        if (healthy_for > 0)
            times -= std::min<std::int64_t>(times, healthy_for / options_.ejection_decay_interval.count());
        if (times * base < longest + base) ++times;
        const auto length = std::min(longest, base * times);
        // An expired ejection not returned yet by the balancer's recount ends
        // here (no event: the endpoint goes straight from one ejection to the next).
        auto until = st.ejected_until.load(std::memory_order_acquire);
        if (!st.ejected_until.compare_exchange_strong(until, now_ns + length, std::memory_order_acq_rel))
            return std::nullopt;
        st.times_ejected.store(static_cast<std::uint32_t>(times), std::memory_order_relaxed);
        st.last_ejection_end.store(now_ns + length, std::memory_order_relaxed);
        st.consecutive_failures.store(0, std::memory_order_relaxed);
        lock.unlock();
        ejections_.fetch_add(1, std::memory_order_relaxed);
        return events::endpoint_ejected{s.endpoints[index].address, static_cast<std::uint32_t>(times),
                                        duration{length}, time_point{duration{now_ns}}};
    }

    [[nodiscard]] std::uint64_t ejections() const noexcept { return ejections_.load(std::memory_order_relaxed); }

private:
    const outlier_detection_options& options_;
    std::mutex mutex_;  // held by try_eject() only
    std::atomic<std::uint64_t> ejections_{0};
};

}  // namespace resil::detail
