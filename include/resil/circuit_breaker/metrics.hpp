// resil/circuit_breaker/metrics.hpp — the counters of a circuit breaker, as
// its metrics() returns them.
//
//   const resil::circuit_breaker_metrics m = breaker.metrics();
//   gauge.set(m.state == resil::circuit_state::open);
//
// Included by resil/circuit_breaker.hpp.
#pragma once

#include <cstdint>

#include "../events.hpp"

namespace resil {

/// Counters of a circuit breaker; a snapshot (see basic_circuit_breaker::metrics()).
struct circuit_breaker_metrics {
    /// The state now.
    circuit_state state = circuit_state::closed;
    bool isolated = false;            ///< held open by isolate()
    std::uint64_t calls = 0;          ///< admitted calls whose result was recorded
    std::uint64_t failures = 0;       ///< of those, the ones counted as failures
    std::uint64_t slow_calls = 0;     ///< of those, the ones slower than slow_call_threshold
    std::uint64_t rejections = 0;     ///< calls rejected while open or half-open
    std::uint64_t transitions = 0;    ///< changes of state
    std::uint64_t calls_in_window = 0;     ///< what the next decision counts: the window,
    std::uint64_t failures_in_window = 0;  ///< or the current run of failures
};

}  // namespace resil
