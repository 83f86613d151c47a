// resil/balancer/detail/peak_ewma.hpp — the peak EWMA of an endpoint's
// latency (Finagle's PeakEwma, as Linkerd uses it): its decay, the cost a
// pick compares, and the update by one call's latency.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "../../clock.hpp"
#include "snapshot.hpp"

namespace resil::detail {

/// The average at `now_ns`, decayed towards 0 since its last sample (read
/// only: nothing written, so an endpoint left alone after a slow spell is
/// tried again); 0 when not measured.
[[nodiscard]] inline double decayed_latency(const endpoint_state& st, std::int64_t now_ns, duration decay_time) noexcept {
    double latency = st.ewma_ns.load(std::memory_order_relaxed);
    if (latency <= 0.0) return 0.0;
    const auto idle = now_ns - st.ewma_at.load(std::memory_order_relaxed);
    if (idle > 0) latency *= std::exp(-static_cast<double>(idle) / static_cast<double>(decay_time.count()));
    return latency;
}

/// What a pick compares: latency × (calls in flight + 1) / weight; an
/// endpoint not measured yet costs 0 while idle (so it gets measured) and
/// `unmeasured_penalty` per call while busy.
[[nodiscard]] inline double peak_ewma_cost(const endpoint_state& st, std::int64_t now_ns, std::uint32_t weight,
                                           duration decay_time, duration unmeasured_penalty) noexcept {
    const auto out = static_cast<double>(st.outstanding.load(std::memory_order_relaxed));
    double latency = decayed_latency(st, now_ns, decay_time);
    if (latency <= 0.0) {
        if (out == 0.0) return 0.0;
        latency = static_cast<double>(unmeasured_penalty.count());
    }
    return latency * (out + 1.0) / static_cast<double>(weight);
}

/// Takes one call's latency (picked at `started`, answered at `now`).
/// Finagle's PeakEwma: reading the cost (the pick) decays it towards 0 and
/// restamps it; a sample then takes the peak, or blends in by the time since
/// that stamp. A pick here writes nothing (so picks write no endpoint they
/// do not choose): the decay of this call's own pick is applied now, from
/// the last stamp to the pick's instant. Reads by other picks while the call
/// was in flight would have restamped it in Finagle; that is the one
/// difference (docs/balancing.md). Two finishes racing on one endpoint may
/// lose one sample: the average is a heuristic, and a lock here would cost
/// every call.
inline void record_latency(endpoint_state& st, time_point started, time_point now, duration decay_time) noexcept {
    const auto now_ns = now.time_since_epoch().count();
    const auto tau = static_cast<double>(decay_time.count());
    const auto rtt = static_cast<double>(std::max<std::int64_t>(0, (now - started).count()));
    double prev = st.ewma_ns.load(std::memory_order_relaxed);
    auto at = st.ewma_at.load(std::memory_order_relaxed);
    if (const auto picked = started.time_since_epoch().count(); prev > 0.0 && picked > at) {
        prev *= std::exp(-static_cast<double>(picked - at) / tau);
        at = picked;
    }
    double next = rtt;
    if (prev > 0.0 && rtt < prev) {
        const auto td = static_cast<double>(std::max<std::int64_t>(0, now_ns - at));
        const double w = std::exp(-td / tau);
        next = prev * w + rtt * (1.0 - w);
    }
    st.ewma_ns.store(next, std::memory_order_relaxed);
    st.ewma_at.store(now_ns, std::memory_order_relaxed);
}

}  // namespace resil::detail
