// tests/support/stripe_sharing.hpp — two threads on one stripe index: the
// index's holder, which writes detail::owned_stripes cells alone, and a
// thread that shares the index (every index is taken when it claims one).
#pragma once

#include <resil/detail/stripes.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

namespace resil_test {

/// Adds one to the calling thread's cell of `cells` the way resil's
/// policies write such cells: a plain load and store when the thread is the
/// cell's only writer, an atomic add otherwise.
inline void add_one(const resil::detail::owned_stripes<std::atomic<std::uint64_t>>& cells) noexcept {
    const auto c = cells.local();
    if (c.alone)
        c.value.store(c.value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    else
        c.value.fetch_add(1, std::memory_order_relaxed);
}

struct stripe_sharing {
    bool sharer_shares = false;  // the sharer's word carries shared_stripe_bit
    int holders_writing = 0;     // threads that held the sharer's index alone and ran `write` (1 when right)
    std::uint32_t index = 0;     // the index they share
};

/// Takes every stripe index with a waiting thread, then starts one more
/// thread (the sharer); the sharer and the thread holding its index alone
/// then run `write` at once, and every other thread leaves without writing.
template <class Write>
stripe_sharing run_sharer_beside_holder(const Write& write) {
    namespace d = resil::detail;
    constexpr std::size_t holders = d::max_stripes;
    constexpr std::uint32_t unknown = d::max_stripes;
    const auto claim = [] { return d::this_thread_stripe_claim(); };
    std::vector<std::uint32_t> words(holders);
    std::latch claimed{static_cast<std::ptrdiff_t>(holders)};
    std::atomic<std::uint32_t> shared_index{unknown};
    std::atomic<bool> go{false};
    stripe_sharing result;
    std::vector<std::jthread> pool;
    for (std::size_t h = 0; h < holders; ++h)
        pool.emplace_back([&, h] {
            words[h] = claim();
            claimed.count_down();
            while (shared_index.load() == unknown) std::this_thread::yield();
            if (words[h] != shared_index.load()) return;  // not the sharer's partner
            while (!go.load()) {
            }
            write();
        });
    claimed.wait();
    const auto main_word = claim();  // this thread may hold an index too
    std::uint32_t sharer_word = 0;
    std::jthread sharer{[&] {
        sharer_word = claim();
        shared_index = sharer_word & ~d::shared_stripe_bit;
        while (!go.load()) {
        }
        write();
    }};
    while (shared_index.load() == unknown) std::this_thread::yield();
    result.sharer_shares = (sharer_word & d::shared_stripe_bit) != 0;
    result.index = shared_index.load();
    for (const auto w : words) result.holders_writing += w == shared_index.load() ? 1 : 0;
    const bool main_is_partner = main_word == shared_index.load();
    result.holders_writing += main_is_partner ? 1 : 0;
    go = true;
    if (main_is_partner) write();
    sharer.join();
    pool.clear();
    return result;
}

}  // namespace resil_test
