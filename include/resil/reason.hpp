// resil/reason.hpp — why a call did not succeed (resil::reason) and its name,
// on their own: the one piece of the pipeline's vocabulary that a file using
// the façade (resil/http.hpp) needs, without the pipeline's headers.
//
//   if (!out) log(resil::to_string(out.reason()));   // "circuit_open", "retries_exhausted", ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "enum_name.hpp"

namespace resil {

/// Why a call did not succeed. `none` means it did.
enum class reason : std::uint8_t {
    none,                          ///< success
    failed,                        ///< the attempt failed and was not to be retried (permanent verdict, or no retry policy)
    unsafe_to_retry,               ///< ambiguous failure of an operation neither idempotent nor keyed
    dont_retry,                    ///< the server or a lower layer said "overloaded, don't retry"
    retries_exhausted,             ///< every allowed attempt failed
    budget_exhausted,              ///< the retry budget refused the retry
    retry_after_exceeds_deadline,  ///< the server's Retry-After does not fit in what is left of the deadline
    deadline_exceeded,             ///< no time left for (another) attempt
    circuit_open,                  ///< the circuit breaker rejected the call
    rate_limited,                  ///< the token bucket rejected the call
    shed,                          ///< the concurrency limit rejected the call (load shedding)
    cancelled,                     ///< the caller's stop token fired
    backoff_exceeds_deadline,      ///< time was left, but not for the backoff wait and another attempt after it:
                                   ///< the retry gave up early (not a timeout)
    quota_unavailable,             ///< a shared quota's store (Redis) could not decide and the limiter fails closed
    throttled,                     ///< client-side adaptive throttling rejected the call locally
                                   ///< (the dependency has been refusing work: resil/adaptive_throttle.hpp)
    no_endpoint,                   ///< a balancer had no endpoint to send the call to (resil/balancer.hpp)
    no_endpoint_in_scope,          ///< an earlier attempt may have reached a server, and no endpoint of that
                                   ///< server's idempotency scope can take the call: another scope would not
                                   ///< know its key (resil/balancer.hpp)
    injected_fault,                ///< a fault-injection policy failed the attempt on purpose
                                   ///< (resil/fault_injection.hpp): a test of the service's resilience
};

/// The number of reasons, `none` included.
inline constexpr std::size_t reason_count = 18;
static_assert(static_cast<std::size_t>(reason::injected_fault) + 1 == reason_count, "reason_count counts every reason");

/// The reason's name in snake_case, as used in logs and metric labels.
[[nodiscard]] constexpr enum_name to_string(reason r) noexcept {
    switch (r) {
        case reason::none: return "none";
        case reason::failed: return "failed";
        case reason::unsafe_to_retry: return "unsafe_to_retry";
        case reason::dont_retry: return "dont_retry";
        case reason::retries_exhausted: return "retries_exhausted";
        case reason::budget_exhausted: return "budget_exhausted";
        case reason::retry_after_exceeds_deadline: return "retry_after_exceeds_deadline";
        case reason::deadline_exceeded: return "deadline_exceeded";
        case reason::circuit_open: return "circuit_open";
        case reason::rate_limited: return "rate_limited";
        case reason::shed: return "shed";
        case reason::cancelled: return "cancelled";
        case reason::backoff_exceeds_deadline: return "backoff_exceeds_deadline";
        case reason::quota_unavailable: return "quota_unavailable";
        case reason::throttled: return "throttled";
        case reason::no_endpoint: return "no_endpoint";
        case reason::no_endpoint_in_scope: return "no_endpoint_in_scope";
        case reason::injected_fault: return "injected_fault";
    }
    return "unknown";
}

/// Writes the reason's name to a stream: `std::cerr << out.reason()` prints
/// "circuit_open" (the stream's header is the caller's).
template <class Char, class Traits>
std::basic_ostream<Char, Traits>& operator<<(std::basic_ostream<Char, Traits>& os, reason r) {
    return os << to_string(r);
}

}  // namespace resil
