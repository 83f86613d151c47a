// resil/balancer/detail/affinity_pickers.hpp — the key-affinity pickers
// (ring_hash, maglev, rendezvous): their tables, built with each snapshot
// (replace(), under the writer's lock, never on a pick), and the pick, which
// walks the key's candidates in their order and takes the first that can
// take the call.
//
//   build_ring       Envoy's ring_hash: XXH64("address_k") points, the
//                    lightest endpoint a whole number of them, sorted
//   build_maglev     Envoy's Maglev table: offset XXH64(address, 0) % M,
//                    skip XXH64(address, 1) % (M − 1) + 1, weighted turns
//   build_rendezvous XXH64(address) per endpoint, mixed with the key's hash
//   key_pick         the key's first candidate at the best level (below)
//
// Levels of a candidate: 4 usable, untried and not full; 3 usable, untried,
// full (load bound); 2 and 1 the same for a tried (or breaker-refused) one;
// 0 not to be picked. The key's candidates are: the ring's points clockwise
// from the key's hash, distinct endpoints in the order first met (ring_hash);
// the table's entries from hash mod M on (maglev); the endpoints by falling
// weighted score (rendezvous). The same key, set and health give the same
// endpoint; an endpoint that cannot take the call passes it to the next.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../endpoint.hpp"
#include "../options.hpp"
#include "snapshot.hpp"
#include "xxhash64.hpp"

namespace resil::detail {

/// Envoy's ring: per group, each endpoint's points XXH64("<address>_<k>"),
/// k = 0, 1, …; scale = min(⌈w_min/W · min_ring⌉ ÷ (w_min/W), max_ring)
/// points in all, an endpoint's share scale · w/W kept by running sums.
inline void build_ring(balancer_snapshot& s, const affinity_options& o) {
    s.ring_begin.assign(1, 0);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> points;
    std::string name;
    for (std::size_t g = 0; g < s.groups(); ++g) {
        const auto b = s.group_begin[g], e = s.group_begin[g + 1];
        const auto total = static_cast<double>(s.group_weight[g]);
        const auto lightest = *std::min_element(s.weight.begin() + b, s.weight.begin() + e);
        const double min_share = lightest / total;
        const double scale = std::min(std::ceil(min_share * static_cast<double>(o.min_ring_size)) / min_share,
                                      static_cast<double>(o.max_ring_size));
        points.clear();
        points.reserve(static_cast<std::size_t>(std::ceil(scale)));
        double current = 0.0, target = 0.0;
        for (auto i = b; i < e; ++i) {
            target += scale * s.weight[i] / total;
            for (std::uint64_t k = 0; current < target; ++k, current += 1.0) {
                name.assign(s.endpoints[i].address).append("_").append(std::to_string(k));
                points.emplace_back(xxhash64(name), i);
            }
        }
        // Ties (two equal 64-bit hashes) broken by address, not by list order.
        std::sort(points.begin(), points.end(), [&](const auto& x, const auto& y) {
            return x.first != y.first ? x.first < y.first : s.endpoints[x.second].address < s.endpoints[y.second].address;
        });
        for (const auto& [h, i] : points) {
            s.ring_points.push_back(h);
            s.ring_owner.push_back(i);
        }
        s.ring_begin.push_back(s.ring_points.size());
    }
}

/// Envoy's Maglev table (its OriginalMaglevTable): M entries per group;
/// each endpoint fills its next free preferred slot (offset + skip · next)
/// mod M in turns, an endpoint of weight w taking a turn in round r while
/// r · w ≥ its running target (which grows by the heaviest weight per turn
/// taken). Endpoints take turns in address order, so the list's order does
/// not matter.
inline void build_maglev(balancer_snapshot& s, const affinity_options& o) {
    const auto m = o.maglev_table_size;
    s.maglev_size = m;
    s.maglev.assign(s.groups() * m, no_pick);
    struct turns {
        std::uint64_t at, skip, target = 0, weight;  ///< at: (offset + skip · next) mod M, stepped by skip
        std::uint32_t index;
    };
    std::vector<turns> entries;
    for (std::size_t g = 0; g < s.groups(); ++g) {
        const auto b = s.group_begin[g], e = s.group_begin[g + 1];
        entries.clear();
        std::uint64_t heaviest = 0;
        for (auto i = b; i < e; ++i) {
            const auto& a = s.endpoints[i].address;
            entries.push_back({xxhash64(a, 0) % m, xxhash64(a, 1) % (m - 1) + 1, 0, s.weight[i], i});
            heaviest = std::max<std::uint64_t>(heaviest, s.weight[i]);
        }
        std::sort(entries.begin(), entries.end(),
                  [&](const turns& x, const turns& y) { return s.endpoints[x.index].address < s.endpoints[y.index].address; });
        auto* table = s.maglev.data() + g * m;
        std::uint64_t filled = 0;
        for (std::uint64_t round = 1; filled < m; ++round)
            for (auto& t : entries) {
                if (filled == m) break;
                if (round * t.weight < t.target) continue;
                t.target += heaviest;
                // The next free slot of the permutation (offset + skip · next) mod M,
                // stepped by an addition (no division per probe).
                auto step = [&] { t.at = t.at + t.skip >= m ? t.at + t.skip - m : t.at + t.skip; };
                while (table[t.at] != no_pick) step();
                table[t.at] = t.index;
                step();
                ++filled;
            }
    }
}

/// Rendezvous: each endpoint's XXH64(address), mixed with a key's hash at
/// the pick.
inline void build_rendezvous(balancer_snapshot& s) {
    s.address_hash.clear();
    for (const auto& e : s.endpoints) s.address_hash.push_back(xxhash64(e.address));
}

/// Builds the table `policy` uses (nothing for the others).
inline void build_affinity(balancer_snapshot& s, balancing_policy policy, const affinity_options& o) {
    if (s.endpoints.empty()) return;
    switch (policy) {
        case balancing_policy::ring_hash: build_ring(s, o); break;
        case balancing_policy::maglev: build_maglev(s, o); break;
        case balancing_policy::rendezvous: build_rendezvous(s); break;
        default: break;
    }
}

[[nodiscard]] constexpr bool is_hash_policy(balancing_policy p) noexcept {
    return p == balancing_policy::ring_hash || p == balancing_policy::maglev || p == balancing_policy::rendezvous;
}

/// Rendezvous' uniform draw x in (0, 1) for endpoint `i` and a key.
[[nodiscard]] inline std::uint64_t rendezvous_bits(const balancer_snapshot& s, std::uint32_t i, std::uint64_t key) noexcept {
    return xxh64_avalanche(key ^ s.address_hash[i]);
}

/// What a key's pick needs besides the group and the rank.
struct key_pick_inputs {
    const balancer_snapshot& s;
    balancing_policy policy;
    std::uint64_t key;          ///< the key's hash
    double load_bound_factor;   ///< 0: no bound
    std::uint64_t in_flight;    ///< calls in flight on the balancer before this pick
};

/// The key's candidate of group [b, e) at the best level (header banner),
/// the first in the key's order among those; `found` says its rank (2, 1 or
/// 0), as the other pickers do. No allocation: the walk's seen-set is a
/// bitset on the stack (endpoint::max_endpoints bits).
template <class Rank>
[[nodiscard]] std::uint32_t key_pick(const key_pick_inputs& in, std::size_t group, Rank& rank, int& found) noexcept {
    const auto& s = in.s;
    const auto b = s.group_begin[group], e = s.group_begin[group + 1], size = e - b;
    const double slots_per_weight = in.load_bound_factor * (static_cast<double>(in.in_flight) + 1.0) /
                                    static_cast<double>(s.group_weight[group]);
    auto level = [&](std::uint32_t i) noexcept -> int {
        const int r = rank(i);
        if (r == 0) return 0;
        if (in.load_bound_factor == 0.0) return 2 * r;
        // Full: its calls in flight + 1 above ⌈c · (L + 1) · w / W⌉.
        const auto mine = static_cast<double>(s.state_of[i]->outstanding.load(std::memory_order_relaxed)) + 1.0;
        const bool full = mine > std::ceil(slots_per_weight * s.weight[i]);
        return 2 * r - (full ? 1 : 0);
    };
    std::uint32_t best = no_pick;
    int best_level = 0;
    if (in.policy == balancing_policy::rendezvous) {
        const bool uniform = s.group_uniform[group];
        double best_score = 0.0;
        std::uint64_t best_bits = 0;
        for (auto i = b; i < e; ++i) {
            const auto bits = rendezvous_bits(s, i, in.key);
            // Equal weights: the score −w/ln(x) orders as x does, so the bits decide without a logarithm.
            double score = 0.0;
            if (!uniform) {
                const double x = (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
                score = -static_cast<double>(s.weight[i]) / std::log(x);
            }
            const bool higher = uniform ? bits > best_bits : score > best_score;
            // Once the best is at the top level only a higher score can win:
            // the endpoint's state (another cache line) is not read.
            if (!higher && best_level == 4) continue;
            const int lv = level(i);
            if (lv == 0 || lv < best_level) continue;
            if (lv > best_level || higher) {
                best = i;
                best_level = lv;
                best_score = score;
                best_bits = bits;
            }
        }
        found = (best_level + 1) / 2;
        return best;
    }
    // ring_hash, maglev: a walk over the table from the key's place.
    const std::uint32_t* owner;
    std::size_t n, start;
    if (in.policy == balancing_policy::ring_hash) {
        const auto rb = s.ring_begin[group];
        n = s.ring_begin[group + 1] - rb;
        const auto* points = s.ring_points.data() + rb;
        start = static_cast<std::size_t>(std::lower_bound(points, points + n, in.key) - points);
        if (start == n) start = 0;  // past the last point: the first
        owner = s.ring_owner.data() + rb;
    } else {
        n = s.maglev_size;
        start = in.key % n;
        owner = s.maglev.data() + group * n;
    }
    best = owner[start];
    best_level = level(best);
    if (best_level < 4 && size > 1) {
        std::uint64_t seen[endpoint::max_endpoints / 64];
        std::fill_n(seen, (size + 63) / 64, std::uint64_t{0});
        seen[(best - b) / 64] |= std::uint64_t{1} << ((best - b) % 64);
        std::uint32_t distinct = 1;
        for (std::size_t k = 1; k < n && distinct < size; ++k) {
            const auto i = owner[(start + k) % n];
            auto& word = seen[(i - b) / 64];
            const auto bit = std::uint64_t{1} << ((i - b) % 64);
            if ((word & bit) != 0) continue;
            word |= bit;
            ++distinct;
            if (const int lv = level(i); lv > best_level) {
                best = i;
                best_level = lv;
                if (lv == 4) break;
            }
        }
    }
    if (best_level == 0) best = no_pick;
    found = (best_level + 1) / 2;
    return best;
}

}  // namespace resil::detail
