// resil/balancer/detail/pickers.hpp — the pickers: how a balancer chooses
// inside one priority group, each a function over the group's endpoints and
// a rank the balancer gives them (2: usable and fresh, 1: usable but tried
// or refused by its breaker, 0: not to be picked). A picker prefers rank 2,
// then rank 1, returns no_pick when every endpoint is 0, and says in `found`
// the rank of what it chose.
//
//   round_robin_pick     the group's smooth weighted schedule, from this stripe's cursor
//   random_pick          a draw by weight
//   scan_pick            a scan from a random start, the best by `better` (least outstanding)
//   two_choices_pick     two draws compared by `better` (power of two choices, peak EWMA)
//   key_pick             a key's first candidate that can take the call (affinity_pickers.hpp)
//   pick_off_path        a call held to a scope, or a retry whose group has nothing fresh
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "../../clock.hpp"
#include "../../detail/platform.hpp"
#include "../../jitter.hpp"
#include "../options.hpp"
#include "../tried_endpoints.hpp"
#include "affinity_pickers.hpp"
#include "peak_ewma.hpp"
#include "snapshot.hpp"

namespace resil::detail {

/// One priority group of a snapshot: endpoints [b, e).
struct group_view {
    balancer_snapshot& s;
    std::size_t group;
    std::uint32_t b, e, size;

    group_view(balancer_snapshot& snapshot, std::size_t g) noexcept
        : s(snapshot), group(g), b(snapshot.group_begin[g]), e(snapshot.group_begin[g + 1]), size(e - b) {}
};

/// A draw by weight inside the group.
[[nodiscard]] inline std::uint32_t draw_in(const group_view& g, jitter_engine& rng) noexcept {
    if (g.s.group_uniform[g.group]) return g.b + below(rng(), g.size);
    const auto total = g.s.group_weight[g.group];
    const auto target = static_cast<std::uint64_t>(unit_interval(rng) * static_cast<double>(total));
    const auto first = g.s.cumulative.begin() + g.b, last = g.s.cumulative.begin() + g.e;
    const auto at = std::upper_bound(first, last, target);
    return g.b + static_cast<std::uint32_t>(std::min<std::ptrdiff_t>(at - first, g.size - 1));
}

/// The fewer calls in flight per unit of weight: (out_a + 1) / w_a < (out_c + 1) / w_c, in integers.
struct fewer_outstanding {
    const balancer_snapshot& s;
    [[nodiscard]] bool operator()(std::uint32_t a, std::uint32_t c) const noexcept {
        const std::uint64_t oa = s.state_of[a]->outstanding.load(std::memory_order_relaxed) + 1ULL;
        const std::uint64_t oc = s.state_of[c]->outstanding.load(std::memory_order_relaxed) + 1ULL;
        return oa * s.weight[c] < oc * s.weight[a];
    }
};

/// The lower peak-EWMA cost.
struct cheaper {
    const balancer_snapshot& s;
    std::int64_t now_ns;
    duration decay_time;
    duration unmeasured_penalty;
    [[nodiscard]] bool operator()(std::uint32_t a, std::uint32_t c) const noexcept {
        return peak_ewma_cost(*s.state_of[a], now_ns, s.weight[a], decay_time, unmeasured_penalty) <
               peak_ewma_cost(*s.state_of[c], now_ns, s.weight[c], decay_time, unmeasured_penalty);
    }
};

template <class Rank>
[[nodiscard]] std::uint32_t round_robin_pick(const group_view& g, Rank& rank, int& found) noexcept {
    const auto sb = g.s.schedule_begin[g.group];
    const auto len = g.s.schedule_begin[g.group + 1] - sb;
    const auto c = g.s.cursors.local().fetch_add(1, std::memory_order_relaxed);
    std::uint32_t chosen = no_pick;
    for (std::uint32_t k = 0; k < len && found < 2; ++k) {
        const auto i = g.s.schedule[sb + static_cast<std::uint32_t>((c + k) % len)];
        const int r = rank(i);
        if (r > found) {
            chosen = i;
            found = r;
        }
    }
    return chosen;
}

/// The best-ranked endpoint by `better` over a scan from a random start.
template <class Rank, class Better>
[[nodiscard]] std::uint32_t scan_pick(const group_view& g, jitter_engine& rng, Rank& rank, const Better& better,
                                      int& found) noexcept {
    const auto start = below(rng(), g.size);
    std::uint32_t best = no_pick;
    int best_rank = 0;
    for (std::uint32_t k = 0; k < g.size; ++k) {
        const auto i = g.b + (start + k) % g.size;
        const int r = rank(i);
        if (r == 0) continue;
        if (r > best_rank || (r == best_rank && better(i, best))) {
            best = i;
            best_rank = r;
        }
    }
    found = best_rank;
    return best;
}

template <class Rank>
[[nodiscard]] std::uint32_t random_pick(const group_view& g, jitter_engine& rng, Rank& rank, int& found) noexcept {
    for (int tries = 0; tries < 8; ++tries)
        if (const auto i = draw_in(g, rng); rank(i) == 2) {
            found = 2;
            return i;
        }
    return scan_pick(g, rng, rank, [](std::uint32_t, std::uint32_t) noexcept { return false; }, found);
}

/// Two distinct draws, compared by `better`. A draw that is not usable and
/// untried is drawn again a few times; then a scan decides (the first), or
/// the next such endpoint after the first is taken (the second).
template <class Rank, class Better>
[[nodiscard]] std::uint32_t two_choices_pick(const group_view& g, jitter_engine& rng, Rank& rank, const Better& better,
                                             int& found) noexcept {
    std::uint32_t first = no_pick;
    for (int tries = 0; tries < 8 && first == no_pick; ++tries)
        if (const auto i = draw_in(g, rng); rank(i) == 2) first = i;
    if (first == no_pick) return scan_pick(g, rng, rank, better, found);
    found = 2;
    if (g.size == 1) return first;
    std::uint32_t second = no_pick;
    for (int tries = 0; tries < 8 && second == no_pick; ++tries) {
        const auto i = g.s.group_uniform[g.group] ? g.b + (first - g.b + 1 + below(rng(), g.size - 1)) % g.size
                                                   : draw_in(g, rng);
        if (i != first && rank(i) == 2) second = i;
    }
    for (std::uint32_t k = 1; k < g.size && second == no_pick; ++k)
        if (const auto i = g.b + (first - g.b + k) % g.size; rank(i) == 2) second = i;
    if (second == no_pick) return first;
    return better(second, first) ? second : first;
}

/// What pick_off_path needs of the balancer.
struct off_path_inputs {
    balancer_snapshot& s;
    std::int64_t now_ns;
    jitter_engine& rng;
    const tried_endpoints* tried;
    const std::atomic<std::uint32_t>* usable;  ///< per group
    const balancer_options& options;
    std::uint64_t key = 0;        ///< ring_hash, maglev, rendezvous: the key's hash
    std::uint64_t in_flight = 0;  ///< calls in flight on the balancer (the load bound)
};

/// The pick off the common path: a call held to idempotency scope `hold`
/// (0: none), or a retry whose group (`skip_group`) has no fresh endpoint.
/// The first group with a fresh endpoint (else, when held, a usable one),
/// and in it, among the best-ranked: for round-robin and random a draw by
/// weight (the schedule's order is the common path's); else the fewest calls
/// in flight per weight (peak EWMA: the lowest cost), from a random start.
/// no_pick when there is none.
[[nodiscard]] RESIL_DETAIL_COLD inline std::uint32_t pick_off_path(const off_path_inputs& in, std::uint32_t hold,
                                                                   std::size_t skip_group) noexcept {
    auto& s = in.s;
    // 2 = usable and fresh (untried, its breaker not refusing), 1 = usable, 0 = not to be picked.
    auto rank = [&](std::uint32_t i, bool panic) noexcept -> int {
        const auto& st = *s.state_of[i];
        if (hold != 0 && s.scope_of[i] != hold) return 0;
        if (!panic && st.unusable_at(in.now_ns)) return 0;
        if (in.tried != nullptr && in.tried->contains(&st)) return 1;
        if (st.breaker && st.breaker->refusing_for() > duration::zero()) return 1;
        return 2;
    };
    auto in_panic = [&](std::size_t g) noexcept {
        const auto size = s.group_begin[g + 1] - s.group_begin[g];
        return hold == 0 && static_cast<double>(in.usable[g].load(std::memory_order_relaxed)) <
                                in.options.panic_threshold * static_cast<double>(size);
    };
    std::size_t group = s.groups();
    for (int wanted = 2; wanted >= (hold != 0 ? 1 : 2) && group == s.groups(); --wanted)
        for (std::size_t g = 0; g < s.groups() && group == s.groups(); ++g) {
            if (g == skip_group) continue;
            const bool panic = in_panic(g);
            for (auto i = s.group_begin[g]; i < s.group_begin[g + 1]; ++i)
                if (rank(i, panic) >= wanted) {
                    group = g;
                    break;
                }
        }
    if (group == s.groups()) return no_pick;
    const bool panic = in_panic(group);
    const auto b = s.group_begin[group], size = s.group_begin[group + 1] - b;
    const auto policy = in.options.policy;
    if (is_hash_policy(policy)) {
        // The key's first candidate in that group that can take it.
        auto ranked = [&](std::uint32_t i) noexcept { return rank(i, panic); };
        int found = 0;
        return key_pick({s, policy, in.key, in.options.affinity.load_bound_factor, in.in_flight}, group, ranked,
                        found);
    }
    if (policy == balancing_policy::round_robin || policy == balancing_policy::random) {
        int best = 0;
        std::uint64_t total = 0;
        for (auto i = b; i < b + size; ++i) {
            const int r = rank(i, panic);
            if (r > best) {
                best = r;
                total = 0;
            }
            if (r == best && r > 0) total += s.weight[i];
        }
        if (best == 0) return no_pick;
        auto target = static_cast<std::uint64_t>(unit_interval(in.rng) * static_cast<double>(total));
        std::uint32_t last = no_pick;
        for (auto i = b; i < b + size; ++i) {
            if (rank(i, panic) != best) continue;
            last = i;
            if (target < s.weight[i]) return i;
            target -= s.weight[i];
        }
        return last;  // rounding
    }
    const auto start = below(in.rng(), size);
    std::uint32_t chosen = no_pick;
    int chosen_rank = 0;
    double chosen_measure = 0.0;
    for (std::uint32_t k = 0; k < size; ++k) {
        const auto i = b + (start + k) % size;
        const int r = rank(i, panic);
        if (r == 0 || r < chosen_rank) continue;
        const double measure =
            policy == balancing_policy::peak_ewma
                ? peak_ewma_cost(*s.state_of[i], in.now_ns, s.weight[i], in.options.decay_time,
                                 in.options.unmeasured_penalty)
                : (static_cast<double>(s.state_of[i]->outstanding.load(std::memory_order_relaxed)) + 1.0) / s.weight[i];
        if (r > chosen_rank || measure < chosen_measure) {
            chosen = i;
            chosen_rank = r;
            chosen_measure = measure;
        }
    }
    return chosen;
}

}  // namespace resil::detail
