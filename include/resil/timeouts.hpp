// resil/timeouts.hpp — the timeout triad of one attempt, in milliseconds:
//
//   connect  TCP + TLS handshake
//   read     silence between bytes (inactivity), NOT the total: a server that
//            sends a byte every 9 s never trips a 10 s read timeout
//   total    start to end of the attempt: the only one that bounds the call
//
//   resil::timeouts per_attempt{.connect = 20ms, .read = 100ms, .total = 150ms};
//   resil::throw_if_invalid("my_client", per_attempt.validate());
//   auto now_allowed = per_attempt.clamp_to(dl);     // each = min(itself, what is left)
//   auto inner = outer.tightened_by(per_attempt);     // field-wise minimum: never loosens
//   if (now_allowed.total == 0ms) return plan_b();    // the deadline already passed
//
// A zero after clamping means "out of time", never "no limit" (mind libcurl,
// where a 0 timeout option disables the timeout).
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "detail/platform.hpp"
#include "clock.hpp"
#include "deadline.hpp"
#include "validation.hpp"

namespace resil {

/// Per-attempt timeouts. Every field defaults to `no_limit`; configured
/// values must be at least `min_timeout` (see validate()). A plain value type: copy
/// it freely; const members may be called from any number of threads.
struct timeouts {
    /// "No limit" for any field: milliseconds::max().
    static constexpr std::chrono::milliseconds no_limit = std::chrono::milliseconds::max();
    /// The least time worth starting an attempt with: limits are whole
    /// milliseconds, and 0 ms means "no limit" to libcurl, so with less than
    /// this left of the deadline an attempt does not start.
    static constexpr std::chrono::milliseconds min_attempt_time{1};
    /// Whether `left` of a deadline is enough to start an attempt: at least
    /// min_attempt_time. The one statement of that rule; the context, retry
    /// and the timeout policy all ask it.
    [[nodiscard]] static constexpr bool enough_for_attempt(duration left) noexcept { return left >= min_attempt_time; }

    /// The least value a configured field may have (validate()).
    static constexpr std::chrono::milliseconds min_timeout{1};

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

    /// Each field the smaller of this one's and `other`'s: an inner layer's
    /// limits never loosen an outer one's. no_limit is the identity.
    [[nodiscard]] constexpr timeouts tightened_by(const timeouts& other) const noexcept {
        return {other.connect < connect ? other.connect : connect, other.read < read ? other.read : read,
                other.total < total ? other.total : total};
    }

    /// The first invalid field, or nothing: every field must be at least
    /// `min_timeout`; no_limit is fine.
    ///   "`connect` must be at least 1ms, got 0s"
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Deprecated: validate() names the field and the value. Kept (usable in
    /// constant expressions) for existing callers. Static text, or empty when
    /// every field is at least `min_timeout`.
    [[deprecated("use resil::timeouts::validate()")]] [[nodiscard]] constexpr std::optional<std::string_view>
    invalid_reason() const noexcept {
        if (connect < min_timeout) return "connect timeout must be positive";
        if (read < min_timeout) return "read timeout must be positive";
        if (total < min_timeout) return "total timeout must be positive";
        return std::nullopt;
    }

    /// Field-by-field equality.
    friend constexpr bool operator==(const timeouts&, const timeouts&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result timeouts::validate() const {
    if (auto bad = detail::check_at_least("connect", connect, min_timeout)) return bad;
    if (auto bad = detail::check_at_least("read", read, min_timeout)) return bad;
    return detail::check_at_least("total", total, min_timeout);
}
#endif

}  // namespace resil
