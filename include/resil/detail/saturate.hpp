// resil/detail/saturate.hpp — saturating arithmetic on resil's durations and
// instants. Deadlines and backoff take user-supplied values (configuration,
// propagation headers); a sum that would overflow int64 nanoseconds clamps to
// the representable end instead of wrapping into the past.
#pragma once

#include <cstdint>
#include <limits>

#include "../clock.hpp"

namespace resil::detail {

using ticks = duration::rep;
static_assert(std::numeric_limits<ticks>::is_signed && sizeof(ticks) == 8,
              "resil assumes signed 64-bit nanosecond ticks");

inline constexpr ticks max_ticks = std::numeric_limits<ticks>::max();
inline constexpr ticks min_ticks = std::numeric_limits<ticks>::min();

/// a + b, clamped to [min_ticks, max_ticks].
[[nodiscard]] constexpr ticks saturating_add(ticks a, ticks b) noexcept {
    if (b > 0 && a > max_ticks - b) return max_ticks;
    if (b < 0 && a < min_ticks - b) return min_ticks;
    return a + b;
}

/// a - b, clamped to [min_ticks, max_ticks].
[[nodiscard]] constexpr ticks saturating_sub(ticks a, ticks b) noexcept {
    if (b < 0 && a > max_ticks + b) return max_ticks;
    if (b > 0 && a < min_ticks + b) return min_ticks;
    return a - b;
}

/// a * factor for a non-negative `a` and a positive `factor`, clamped to max_ticks.
[[nodiscard]] constexpr ticks saturating_mul_nonnegative(ticks a, ticks factor) noexcept {
    if (a <= 0 || factor <= 0) return 0;
    if (a > max_ticks / factor) return max_ticks;
    return a * factor;
}

[[nodiscard]] constexpr time_point saturating_add(time_point t, duration d) noexcept {
    return time_point{duration{saturating_add(t.time_since_epoch().count(), d.count())}};
}

[[nodiscard]] constexpr duration saturating_sub(time_point a, time_point b) noexcept {
    return duration{saturating_sub(a.time_since_epoch().count(), b.time_since_epoch().count())};
}

}  // namespace resil::detail
