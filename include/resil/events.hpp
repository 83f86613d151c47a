// resil/events.hpp — what policies tell a listener, one struct per kind of event.
//
//   auto pipe = resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{})
//                   .with_listener([](const auto& event) { log(event); });
//
// A listener is any object callable with the events it cares about: a generic
// lambda sees them all; a struct with a few operator() overloads sees those
// and ignores the rest. Events are aggregates passed by const reference, so a
// field added later breaks no listener. With no listener (the default), every
// emission site compiles to nothing.
//
// Every event of the library is declared here (the adaptive policies' two
// in resil/load_signal.hpp, included) and listed once, in events::all:
// resil/fmt.hpp formats each one, and resil::log_listener takes each one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "enum_name.hpp"
#include "clock.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"

namespace resil {

/// A circuit breaker's state.
enum class circuit_state : std::uint8_t { closed, open, half_open };

/// The state's name: "closed", "open" or "half_open".
[[nodiscard]] constexpr enum_name to_string(circuit_state s) noexcept {
    switch (s) {
        case circuit_state::closed: return "closed";
        case circuit_state::open: return "open";
        case circuit_state::half_open: return "half_open";
    }
    return "unknown";
}

/// What a fault-injection policy injected (resil/fault_injection.hpp).
enum class fault_kind : std::uint8_t {
    delay,  ///< added latency before the call
    abort,  ///< a failed attempt in place of the call
};

/// The kind by name: "delay", "abort".
[[nodiscard]] constexpr enum_name to_string(fault_kind k) noexcept {
    switch (k) {
        case fault_kind::delay: return "delay";
        case fault_kind::abort: return "abort";
    }
    return "unknown";
}

/// Names the policy that emitted an event, for labels (e.g. "retry").
using policy_name = std::string_view;

namespace events {

/// An attempt is about to call the callable.
struct attempt_started {
    std::uint32_t attempt = 0;  ///< 1 for the first
};

/// An attempt returned (or threw an exception a classifier judged).
struct attempt_finished {
    /// Which attempt: 1 for the first.
    std::uint32_t attempt = 0;
    /// How the attempt's result was judged.
    resil::verdict verdict = verdict::success;
    /// How long the attempt took; measured only for a listener that asks for
    /// it (`static constexpr bool times_attempts = true;`), zero otherwise:
    /// timing costs two clock reads per attempt, which a listener that does
    /// not use them should not pay.
    duration elapsed{};
};

/// The retry policy decided to retry and is about to wait.
struct retry_scheduled {
    std::uint32_t attempt = 0;  ///< the attempt that failed
    duration delay{};           ///< how long it waits before the next one
    resil::verdict verdict = verdict::retryable;  ///< why the failed attempt is retried
    bool from_retry_after = false;                ///< the server's Retry-After set the delay
};

/// The retry policy stopped retrying: every allowed attempt failed.
struct retries_exhausted {
    /// Attempts made before giving up.
    std::uint32_t attempts = 0;
};

/// The retry budget refused a retry.
struct budget_refused {
    /// The attempt the budget refused to retry after (1 for the first).
    std::uint32_t attempt = 0;
};

/// A circuit breaker changed state.
struct breaker_state_changed {
    /// The state left.
    circuit_state from = circuit_state::closed;
    /// The state entered.
    circuit_state to = circuit_state::closed;
    double failure_ratio = 0.0;       ///< in the window, when it changed
    /// Calls in the window when it changed.
    std::uint64_t calls_in_window = 0;
    time_point at{};                  ///< when, on the breaker's clock
    /// The transition's number on its breaker: 1 for the first, then exactly
    /// one more per change of state (so the latest equals
    /// metrics().transitions). Listeners called from different threads may
    /// receive changes out of order; this number restores the order.
    std::uint64_t generation = 0;
    /// The endpoint whose breaker changed, for a breaker per endpoint
    /// (balancer_options::endpoint_breaker: the balancer fills it in before
    /// calling the options' hook); empty for a breaker of the whole
    /// dependency. Valid during the call only.
    std::string_view endpoint{};
};

/// A policy rejected the call before (or instead of) an attempt.
struct rejected {
    /// Why the call was refused.
    resil::reason reason = reason::none;
    /// How long the refusing policy says to wait before trying again, when it
    /// knows (a bucket's refill, a breaker's open time left).
    std::optional<duration> retry_after{};
};

/// A shared quota's store (Redis) could not decide on a call (unreachable,
/// too slow for the timeout or the deadline, or an error reply); the limiter
/// applied its failure policy. Emitted once per such decision.
struct quota_store_failed {
    bool fail_open = false;  ///< the policy: fail open (the local fallback bucket decided) or fail closed
    bool admitted = false;   ///< the call was let through (fail open with a local token)
};

/// A fallback produced the value for a failed call.
struct fallback_used {
    /// The reason the call failed, which the fallback answered.
    resil::reason reason = reason::none;
};

/// A call through a pipeline ended (emitted once per call, last).
struct call_finished {
    /// none: success. Otherwise why it failed, also when a fallback then
    /// produced its value (from_fallback), and `failed` when an exception
    /// nobody judged escaped (threw).
    resil::reason reason = reason::none;
    std::uint32_t attempts = 0;  ///< attempts that ran the callable
    /// True when the value came from the fallback (the call itself failed).
    bool from_fallback = false;
    bool threw = false;  ///< an exception left the pipeline
    /// How long the whole call took, waits between attempts included; zero
    /// unless the listener asks for durations (times_attempts), which costs
    /// the call one more clock reading at each end.
    duration elapsed{};
};

/// The call ran out of time.
struct deadline_exceeded {
    std::uint32_t attempts = 0;  ///< attempts made before it did
};

/// A balancer's passive health took an endpoint out of the set
/// (resil/balancing): told to balancer_options::on_ejected, which may be a
/// listener of the pipeline's (e.g. resil::log_listener), as a circuit
/// breaker's on_state_change may.
struct endpoint_ejected {
    std::string_view address;         ///< valid during the call only
    std::uint32_t times_ejected = 0;  ///< the ejection multiplier: 1 the first time (it decays)
    /// How long it stays out before it may return (ejection time ×
    /// times_ejected, capped).
    duration ejected_for{};
    /// When it was ejected, on the balancer's clock.
    time_point at{};
};

/// An ejected endpoint's time was up: it is picked again. Told to
/// balancer_options::on_returned (as above).
struct endpoint_returned {
    std::string_view address;  ///< valid during the call only
    /// When it came back, on the balancer's clock.
    time_point at{};
};

/// Active health checks took an endpoint out of the set, or brought it back
/// (resil/balancer/health_check.hpp): told to the checker's listener.
struct endpoint_health_changed {
    std::string_view address;  ///< valid during the call only
    /// The health the endpoint has now: true when it passed enough probes in a
    /// row.
    bool healthy = true;
    std::uint32_t probes_in_a_row = 0;  ///< the run of failures or passes that decided
    /// When the change happened, on the checker's clock.
    time_point at{};
};

/// A hedge started another copy of a call (resil/hedge.hpp).
struct hedge_started {
    std::uint32_t copy = 0;  ///< 1 for the first extra copy
    duration delay{};        ///< the wait before it, from the hedge's delay
};

/// A hedge's throttle (the retry budget) refused another copy.
struct hedge_refused {
    /// The copy the budget refused (1 for the first hedge).
    std::uint32_t copy = 0;
};

/// A copy lost: another one answered first, and this one was cancelled.
struct hedge_cancelled {
    std::uint32_t copy = 0;  ///< 0 for the first attempt
};

/// A hedge answered first: copy `copy` (1 for the first extra copy) gave the
/// call's answer, and the earlier copies still running were cancelled (each
/// a hedge_cancelled). Not emitted when the first attempt won.
struct hedge_won {
    /// The copy that answered (1 for the first extra copy).
    std::uint32_t copy = 0;
    duration delay{};  ///< the wait before each copy, as in hedge_started
};

/// A fault-injection policy injected a fault into a call, on purpose
/// (resil/fault_injection.hpp): emitted when it decides, before the delay.
struct fault_injected {
    /// What was injected.
    resil::fault_kind kind = fault_kind::delay;
    /// For a delay: how long the call is held (already cut to the deadline).
    duration delay{};
    /// For an abort: how the failed attempt is judged (success for a delay).
    resil::verdict verdict = verdict::success;
};

// Events of policies added later go above, each a struct of its own, and
// into events::all below (tests/fmt_events.cpp then asks for its formatter).

}  // namespace events

/// A list of event types (events::all).
template <class... Events>
struct event_list {};

// DNS discovery (resil/discovery/).
/// What one lookup came to.
enum class dns_lookup_outcome : std::uint8_t {
    /// Records found: the set is the one they name.
    resolved,
    /// The name has no address (NXDOMAIN, or no record of the type asked
    /// for; Kubernetes answers NXDOMAIN when no pod is ready): the last good
    /// set is kept.
    empty,
    /// No usable answer (timeout, the server down, SERVFAIL, a malformed
    /// reply): the last good set is kept, and the next lookup comes sooner.
    failed,
};

/// The outcome's name, e.g. "failed".
[[nodiscard]] constexpr enum_name to_string(dns_lookup_outcome o) noexcept {
    switch (o) {
        case dns_lookup_outcome::resolved: return "resolved";
        case dns_lookup_outcome::empty: return "empty";
        case dns_lookup_outcome::failed: return "failed";
    }
    return "unknown";
}

namespace events {
/// One lookup of a DNS discovery source, whatever it came to.
struct dns_lookup {
    /// The name looked up.
    std::string_view name;
    /// What it came to.
    dns_lookup_outcome outcome = dns_lookup_outcome::resolved;
    /// Endpoints the lookup found (0 unless resolved).
    std::size_t found = 0;
    /// Endpoints added to the set (0 when it was kept).
    std::size_t added = 0;
    /// Endpoints removed from the set (0 when it was kept).
    std::size_t removed = 0;
    /// Until the next lookup (the records' TTL clamped, the interval, or the
    /// wait after a failure).
    duration next_in{};
    /// Why it failed or was empty ("timed out", "NXDOMAIN", ...); empty when resolved.
    std::string_view error;
};
}  // namespace events

namespace events {

/// Every event resil emits, each once: the one list that resil/fmt.hpp's
/// formatters and resil::log_listener cover (tests/fmt_events.cpp checks
/// that each has a formatter). An event added to the library is added here.
using all = event_list<attempt_started, attempt_finished, retry_scheduled, retries_exhausted, budget_refused,
                       breaker_state_changed, rejected, quota_store_failed, fallback_used, call_finished,
                       deadline_exceeded, endpoint_ejected, endpoint_returned, endpoint_health_changed,
                       hedge_started, hedge_refused, hedge_cancelled, hedge_won, limit_changed, pace_changed,
                       fault_injected, dns_lookup>;

}  // namespace events

namespace detail {
template <class E, class List>
inline constexpr bool listed_in = false;
template <class E, class... Events>
inline constexpr bool listed_in<E, event_list<Events...>> = (std::is_same_v<E, Events> || ...);
}  // namespace detail

/// True when E is one of the library's events (in events::all).
template <class E>
inline constexpr bool is_event = detail::listed_in<std::remove_cvref_t<E>, events::all>;

/// The default listener: wants nothing, so emission compiles away.
struct no_listener {};

/// True when listener L handles event E (so producing E is worth any work).
template <class L, class E>
inline constexpr bool listens_to = std::is_invocable_v<L&, const E&>;

/// True when listener L asks for attempt durations (see attempt_finished).
template <class L>
inline constexpr bool listener_times_attempts = [] {
    if constexpr (requires { std::remove_cvref_t<L>::times_attempts; })
        return static_cast<bool>(std::remove_cvref_t<L>::times_attempts);
    else
        return false;
}();

/// Delivers `event` to `listener` when it handles that kind; nothing otherwise.
template <class L, class E>
constexpr void emit(L& listener, const E& event) {
    if constexpr (listens_to<L, E>) listener(event);
}

}  // namespace resil
