// Real-time bounds for the few tests that need a real clock (servers,
// cancellation from another thread): how late a timer may fire and still
// count as "within a few ms". Sanitizers and a loaded machine slow everything;
// the assertions must stay meaningful without becoming flaky.
#pragma once

#include <chrono>

namespace resil_test {

using namespace std::chrono_literals;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr auto slack = 150ms;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr auto slack = 150ms;
#else
inline constexpr auto slack = 50ms;
#endif
#else
inline constexpr auto slack = 50ms;
#endif

/// Time since `t0` on the real steady clock, in Duration units.
template <class Duration = std::chrono::milliseconds>
Duration since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
}

}  // namespace resil_test
