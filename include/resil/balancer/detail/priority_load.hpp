// resil/balancer/detail/priority_load.hpp — which priority group a call goes
// to while the first is not healthy enough to take them all: Envoy's
// priority load (source/common/upstream/load_balancer_impl.cc,
// recalculatePerPriorityState and choosePriority).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../../jitter.hpp"
#include "../endpoint.hpp"
#include "snapshot.hpp"

namespace resil::detail {

/// Each group's health is its usable share ÷ `failover_threshold` (Envoy: ×
/// the overprovisioning factor), at most 1; in priority order each group
/// takes that share of what is left, the healths scaled up when they sum
/// below 1. A group is in panic (its calls balanced over all of its
/// endpoints) only when they sum below 1 and its usable share is below
/// `panic_threshold`; when every group is (or nothing is usable), the groups
/// share the calls by their sizes. `usable[g]`: group g's usable endpoints.
/// Sets `panic` for the group returned.
[[nodiscard]] inline std::size_t choose_group(const balancer_snapshot& s, const std::atomic<std::uint32_t>* usable,
                                              double failover_threshold, double panic_threshold, jitter_engine& rng,
                                              bool& panic) noexcept {
    const auto groups = s.groups();
    double health[endpoint::max_priority + 1];
    bool in_panic[endpoint::max_priority + 1];
    double total = 0.0;
    bool all_panic = true;
    for (std::size_t g = 0; g < groups; ++g) {
        const auto size = static_cast<double>(s.group_begin[g + 1] - s.group_begin[g]);
        const double up = usable[g].load(std::memory_order_relaxed);
        health[g] = failover_threshold > 0.0 ? std::min(1.0, up / size / failover_threshold) : (up > 0.0 ? 1.0 : 0.0);
        total += health[g];
        in_panic[g] = up < panic_threshold * size;
        all_panic = all_panic && in_panic[g];
    }
    total = std::min(1.0, total);
    const double u = unit_interval(rng);
    double reached = 0.0;
    if (total > 0.0 && !(all_panic && total < 1.0)) {
        for (std::size_t g = 0; g < groups; ++g) {
            reached += health[g] / total;
            if (u < reached) {
                panic = total < 1.0 && in_panic[g];
                return g;
            }
        }
        for (std::size_t g = groups; g-- > 0;)  // rounding: the last group with any load
            if (health[g] > 0.0) {
                panic = total < 1.0 && in_panic[g];
                return g;
            }
    }
    // Nothing usable, or every group in panic: by the groups' sizes, over
    // all of their endpoints (no endpoint at all with panic mode off).
    panic = panic_threshold > 0.0;
    if (!panic) return 0;
    const auto all = static_cast<double>(s.endpoints.size());
    reached = 0.0;
    for (std::size_t g = 0; g < groups; ++g) {
        reached += static_cast<double>(s.group_begin[g + 1] - s.group_begin[g]) / all;
        if (u < reached) return g;
    }
    return groups - 1;
}

}  // namespace resil::detail
