// resil/detail/thread_jitter.hpp — the per-thread jitter engine policies draw
// from when the caller injects none. Seeded from the OS once per thread and
// again in a forked child: pre-forked workers must not share one jitter
// sequence, or their retries would line up into the herd jitter exists to break.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "../jitter.hpp"
#include "fork_epoch.hpp"
#include "platform.hpp"

#if RESIL_DETAIL_HAVE_GETRANDOM
#include <sys/random.h>
#endif

namespace resil::detail {

inline std::uint64_t os_seed() noexcept {
    std::uint64_t seed = 0;
#if RESIL_DETAIL_HAVE_GETRANDOM
    if (getrandom(&seed, sizeof seed, 0) == static_cast<ssize_t>(sizeof seed)) return seed;
#endif
    // Jitter needs spread, not secrecy: time and thread identity are enough
    // when the OS has no entropy call to offer.
    seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    seed ^= static_cast<std::uint64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id())) * 0x9e3779b97f4a7c15ULL;
    return seed;
}

/// This thread's engine (with RESIL_SEPARATE_COMPILATION, defined in the one
/// compiled source: declared here for the headers that draw from it).
RESIL_DECL jitter_engine& thread_jitter();

#if RESIL_DETAIL_BODIES
RESIL_DECL jitter_engine& thread_jitter() {
    struct seeded {
        jitter_engine engine{os_seed()};
        std::uint64_t generation = fork_generation();
    };
    thread_local seeded state;
    if (const auto g = fork_generation(); g != state.generation) {
        state.engine.seed(os_seed());
        state.generation = g;
    }
    return state.engine;
}
#endif

}  // namespace resil::detail
