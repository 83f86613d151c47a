// resil/balancer/detail/snapshot.hpp — one immutable version of a
// balancer's endpoint set (what picks read), each endpoint's mutable state
// (shared by every version listing it), and the helpers that build them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <queue>
#include <span>
#include <vector>

#include "../../circuit_breaker.hpp"
#include "../../clock.hpp"
#include "../../detail/stripes.hpp"
#include "../endpoint.hpp"

namespace resil {

namespace detail {

/// An endpoint's mutable state, shared by every snapshot listing the
/// endpoint. Its own cache lines: picks of other endpoints never touch it.
struct alignas(stripe_alignment) endpoint_state {
    std::atomic<std::uint32_t> outstanding{0};
    std::atomic<std::uint64_t> picks{0};  ///< picks since the endpoint joined the set
    std::atomic<std::uint32_t> consecutive_failures{0};
    std::atomic<std::uint32_t> times_ejected{0};  ///< the ejection multiplier
    /// When the last ejection ended or will end (ns); the multiplier decays from there.
    std::atomic<std::int64_t> last_ejection_end{0};
    /// Nanoseconds since the clock's epoch; 0: not ejected.
    std::atomic<std::int64_t> ejected_until{0};
    /// Peak EWMA of the latency in ns (0: not measured), and when it was last updated.
    std::atomic<double> ewma_ns{0.0};
    std::atomic<std::int64_t> ewma_at{0};
    /// Set by active health checks (resil/balancer/health_check.hpp).
    std::atomic<bool> failing_checks{false};
    /// With balancer_options::endpoint_breaker only.
    std::unique_ptr<circuit_breaker> breaker{};

    [[nodiscard]] bool ejected_at(std::int64_t now_ns) const noexcept {
        const auto until = ejected_until.load(std::memory_order_acquire);
        return until != 0 && now_ns < until;
    }
    /// Out of the set: ejected, or failing its health checks.
    [[nodiscard]] bool unusable_at(std::int64_t now_ns) const noexcept {
        return failing_checks.load(std::memory_order_relaxed) || ejected_at(now_ns);
    }
};

/// One immutable version of the endpoint set.
struct balancer_snapshot {
    std::vector<endpoint> endpoints;  ///< sorted by priority (stable)
    std::vector<std::shared_ptr<endpoint_state>> states;
    std::vector<endpoint_state*> state_of;  ///< states[i].get(), read on every pick
    std::vector<std::uint32_t> weight;
    /// Each endpoint's idempotency scope, as the balancer numbers scopes (never 0).
    std::vector<std::uint32_t> scope_of;
    /// Group g is endpoints [group_begin[g], group_begin[g + 1]).
    std::vector<std::uint32_t> group_begin;
    /// Per group: the weights summed up to and including each endpoint (weighted draws).
    std::vector<std::uint64_t> cumulative;
    std::vector<std::uint64_t> group_weight;
    std::vector<bool> group_uniform;
    /// Round-robin: the smooth weighted schedule of each group, and where each starts.
    std::vector<std::uint32_t> schedule;
    std::vector<std::uint32_t> schedule_begin;
    stripes<std::atomic<std::uint64_t>> cursors;
    /// ring_hash: each group's points, sorted, and the endpoint of each;
    /// group g's are [ring_begin[g], ring_begin[g + 1]).
    std::vector<std::uint64_t> ring_points;
    std::vector<std::uint32_t> ring_owner;
    std::vector<std::size_t> ring_begin;
    /// maglev: each group's table of maglev_size endpoint indices, one after the other.
    std::vector<std::uint32_t> maglev;
    std::uint64_t maglev_size = 0;
    /// rendezvous: XXH64 of each endpoint's address.
    std::vector<std::uint64_t> address_hash;
    /// Leases holding this snapshot, per stripe: a lease adds to its
    /// thread's stripe and takes the same stripe back, so each stays >= 0.
    stripes<std::atomic<std::int64_t>> leases;

    [[nodiscard]] std::int64_t leases_held() const noexcept {
        std::int64_t n = 0;
        for (std::size_t i = 0; i < leases.size(); ++i) n += leases[i].load(std::memory_order_acquire);
        return n;
    }

    [[nodiscard]] std::size_t groups() const noexcept { return group_begin.empty() ? 0 : group_begin.size() - 1; }
};

/// A smooth weighted round-robin order of `weights` (earliest deadline
/// first: endpoint i's k-th turn is due at (k - 1/2) / w_i, ties to the lower
/// index), each weight divided by their gcd, so the length is their sum, at
/// most `limit` (weights are scaled down to fit, each keeping a turn).
[[nodiscard]] inline std::vector<std::uint32_t> smooth_schedule(std::span<const std::uint32_t> weights,
                                                                std::size_t limit = 65536) {
    std::vector<std::uint64_t> w(weights.begin(), weights.end());
    std::uint64_t g = 0;
    for (auto x : w) g = std::gcd(g, x);
    std::uint64_t sum = 0;
    for (auto& x : w) sum += (x /= std::max<std::uint64_t>(g, 1));
    if (sum > limit) {
        const auto total = sum;
        sum = 0;
        for (auto& x : w) sum += (x = std::max<std::uint64_t>(1, x * limit / total));
    }
    // Due times compared as (2k - 1) * sum / (2 w), kept exact as fractions
    // by cross-multiplying: (2k_a - 1) * w_b vs (2k_b - 1) * w_a.
    struct turn {
        std::uint64_t twice_k_minus_1;
        std::uint64_t weight;
        std::uint32_t index;
        bool operator>(const turn& o) const noexcept {
            const auto a = twice_k_minus_1 * o.weight, b = o.twice_k_minus_1 * weight;
            return a != b ? a > b : index > o.index;
        }
    };
    std::priority_queue<turn, std::vector<turn>, std::greater<>> queue;
    for (std::uint32_t i = 0; i < w.size(); ++i) queue.push({1, w[i], i});
    std::vector<std::uint32_t> order;
    order.reserve(sum);
    while (order.size() < sum) {
        auto t = queue.top();
        queue.pop();
        order.push_back(t.index);
        t.twice_k_minus_1 += 2;
        queue.push(t);
    }
    return order;
}

/// No endpoint: a pick that found none, a table entry not filled.
inline constexpr std::uint32_t no_pick = std::numeric_limits<std::uint32_t>::max();

[[nodiscard]] constexpr std::int64_t ns_of(time_point t) noexcept { return t.time_since_epoch().count(); }

/// A uniform index below n (n < 2^32) from 64 random bits.
[[nodiscard]] constexpr std::uint32_t below(std::uint64_t bits, std::uint32_t n) noexcept {
    return static_cast<std::uint32_t>(((bits >> 32) * n) >> 32);
}

}  // namespace detail

}  // namespace resil
