// resil/detail/fork_epoch.hpp — how many forks this process descends from, as
// far as a pthread_atfork child handler saw them: per-thread random state
// (the jitter engine, the idempotency-key generator) compares it with the
// epoch it was seeded under and reseeds in a forked child, so pre-forked
// workers never share a sequence. One handler, registered once, serves both.
// On Windows, which has no fork, the epoch never changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <system_error>

#include "platform.hpp"

#if !RESIL_DETAIL_OS_WINDOWS
#include <pthread.h>
#endif

namespace resil::detail {

/// Starts at 1 so that a zeroed state (epoch 0) never matches.
inline std::atomic<std::uint64_t> fork_epoch{1};

inline void on_fork_child() noexcept { fork_epoch.fetch_add(1, std::memory_order_relaxed); }

/// Registers the child handler that bumps `fork_epoch`, once per process.
/// Throws std::system_error when pthread_atfork fails.
inline void watch_forks() {
#if !RESIL_DETAIL_OS_WINDOWS
    static const bool registered = [] {
        if (const int rc = ::pthread_atfork(nullptr, nullptr, &on_fork_child); rc != 0)
            throw std::system_error(rc, std::generic_category(), "resil: pthread_atfork failed");
        return true;
    }();
    (void)registered;
#endif
}

/// The current epoch, with the handler registered first.
inline std::uint64_t fork_generation() {
    watch_forks();
    return fork_epoch.load(std::memory_order_relaxed);
}

}  // namespace resil::detail
