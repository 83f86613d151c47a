// resil/timeouts.hpp — the timeout triad of one attempt, in milliseconds:
//
//   connect  TCP + TLS handshake
//   read     silence between bytes (inactivity), NOT the total: a server that
//            sends a byte every 9 s never trips a 10 s read timeout
//   total    start to end of the attempt: the only one that bounds the call
//
//   resil::timeouts per_attempt{.connect = 20ms, .read = 100ms, .total = 150ms};
//   if (auto why = per_attempt.invalid_reason()) throw std::invalid_argument(std::string(*why));
//   auto now_allowed = per_attempt.clamp_to(dl);     // each = min(itself, what is left)
//   if (now_allowed.total == 0ms) return plan_b();    // the deadline already passed
//
// A zero after clamping means "out of time", never "no limit" (mind libcurl,
// where a 0 timeout option disables the timeout).
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "clock.hpp"
#include "deadline.hpp"

namespace resil {

/// Per-attempt timeouts. Every field defaults to `no_limit`; configured
/// values must be positive (see invalid_reason()). A plain value type: copy
/// it freely; const members may be called from any number of threads.
struct timeouts {
    /// "No limit" for any field: milliseconds::max().
    static constexpr std::chrono::milliseconds no_limit = std::chrono::milliseconds::max();
    /// The least time worth starting an attempt with: limits are whole
    /// milliseconds, and 0 ms means "no limit" to libcurl, so with less than
    /// this left of the deadline an attempt does not start.
    static constexpr std::chrono::milliseconds min_attempt_time{1};

    /// TCP + TLS handshake. Default: no_limit.
    std::chrono::milliseconds connect = no_limit;
    /// Longest silence between two received bytes, not the total. Default: no_limit.
    std::chrono::milliseconds read = no_limit;
    /// Start to end of one attempt. Default: no_limit.
    std::chrono::milliseconds total = no_limit;

    /// Each field becomes min(itself, `remaining` floored to whole ms), so no
    /// timeout exceeds what is left. A zero or negative `remaining` gives 0 ms
    /// everywhere (already expired); duration::max() (no deadline) changes nothing.
    [[nodiscard]] constexpr timeouts clamp_to(duration remaining) const noexcept {
        if (remaining == duration::max()) return *this;
        const auto left = remaining <= duration::zero()
                              ? std::chrono::milliseconds::zero()
                              : std::chrono::floor<std::chrono::milliseconds>(remaining);
        timeouts result = *this;
        for (auto* field : {&result.connect, &result.read, &result.total}) {
            if (left < *field) *field = left;
        }
        return result;
    }

    /// clamp_to(dl.remaining()): unchanged when `dl` is not set.
    template <clock C>
    [[nodiscard]] timeouts clamp_to(const basic_deadline<C>& dl) const noexcept {
        return clamp_to(dl.remaining());
    }

    /// Why this configuration is unusable (static text), or empty when it is fine.
    /// Every field must be positive; no_limit is fine.
    [[nodiscard]] constexpr std::optional<std::string_view> invalid_reason() const noexcept {
        if (connect <= std::chrono::milliseconds::zero()) return "connect timeout must be positive";
        if (read <= std::chrono::milliseconds::zero()) return "read timeout must be positive";
        if (total <= std::chrono::milliseconds::zero()) return "total timeout must be positive";
        return std::nullopt;
    }

    friend constexpr bool operator==(const timeouts&, const timeouts&) = default;
};

}  // namespace resil
