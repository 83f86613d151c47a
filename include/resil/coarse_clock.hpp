// resil/coarse_clock.hpp — a cheaper monotonic clock for bookkeeping that
// tolerates a few milliseconds of staleness (a breaker's window, a budget's
// slots), where a precise clock read would be most of the cost of a call.
//
//   resil::basic_circuit_breaker<resil::coarse_steady_clock> breaker{{.open_for = 30s}};
//
// On Linux it reads CLOCK_MONOTONIC_COARSE: the monotonic clock as of the
// last scheduler tick (1–4 ms old, see resolution(); about two ticks on a
// virtual machine whose timer ticks arrive late), read from the vDSO
// without touching the hardware counter. Its instants are on the same time
// line as resil::steady_clock (std::chrono::steady_clock is CLOCK_MONOTONIC
// there), only that far behind. Elsewhere it is resil::steady_clock.
//
// Do not time short things with it: a 1 ms call may read as 0 or 4 ms. It
// suits a 10 s window or a 30 s open period, not a 100 ms slow-call
// threshold. Stateless; thread-safe; sleeps are those of resil::steady_clock.
#pragma once

#include <stop_token>
#include <utility>

#include "clock.hpp"
#include "detail/platform.hpp"

#if RESIL_DETAIL_HAVE_COARSE_MONOTONIC
#include <time.h>  // NOLINT(modernize-deprecated-headers): clock_gettime is POSIX, not in <ctime>
#endif

namespace resil {

/// A monotonic clock read from CLOCK_MONOTONIC_COARSE on Linux: the time as of
/// the last scheduler tick (1–4 ms old, see resolution()), on the same time
/// line as resil::steady_clock; elsewhere resil::steady_clock itself. For
/// bookkeeping that tolerates that staleness (windows, slots), never for timing
/// short calls. Thread-safe and stateless.
class coarse_steady_clock {
public:
    /// The monotonic time as of the last clock tick.
    [[nodiscard]] time_point now() const noexcept {
#if RESIL_DETAIL_HAVE_COARSE_MONOTONIC && defined(CLOCK_MONOTONIC_COARSE)
        timespec ts{};
        if (::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
            return time_point{duration{static_cast<duration::rep>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec}};
#endif
        return steady_clock{}.now();
    }

    /// As resil::steady_clock::sleep_for: the whole of `d`, or false when
    /// `stop` fired first.
    bool sleep_for(duration d, std::stop_token stop = {}) const { return steady_clock{}.sleep_for(d, std::move(stop)); }

    /// As resil::steady_clock::sleep_until: this clock's instants are on the
    /// steady clock's time line (a tick or two behind), so its absolute wait
    /// serves; false when `stop` fired first.
    bool sleep_until(time_point t, std::stop_token stop = {}) const {
        return steady_clock{}.sleep_until(t, std::move(stop));
    }

    /// How stale now() can be: the tick length (e.g. 4 ms at 250 Hz).
    /// Zero where the coarse clock is not available (now() is then precise).
    [[nodiscard]] static duration resolution() noexcept {
#if RESIL_DETAIL_HAVE_COARSE_MONOTONIC && defined(CLOCK_MONOTONIC_COARSE)
        timespec ts{};
        if (::clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0)
            return duration{static_cast<duration::rep>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
#endif
        return duration::zero();
    }
};

static_assert(clock<coarse_steady_clock>);

}  // namespace resil
