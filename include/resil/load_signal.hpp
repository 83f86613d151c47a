// resil/load_signal.hpp — what the end of one call tells the adaptive
// policies (resil/adaptive_limit.hpp, resil/adaptive_throttle.hpp) about the
// dependency's load, and the events they emit when they change what they let
// through.
//
//   auto s = resil::load_signal_of(out.verdict(), {resil::verdict::retryable, resil::verdict::ambiguous});
//   limit.complete(std::move(permit), s, clock.now());
//
// An "overload" is an answer saying the dependency refused or could not do
// the work in time: 429, 503, a timeout — whatever verdicts the policy's
// `overload_verdicts` name (by default retryable and ambiguous, which is what
// resil::curl's classifier gives 429, 503 and timeouts). Any other answer,
// permanent failures included, is "accepted": the dependency did the work of
// answering, so it is not overloaded.
#pragma once

#include <cstdint>
#include <string_view>

#include "enum_name.hpp"
#include "clock.hpp"
#include "outcome.hpp"

namespace resil {

/// What one finished call says about the dependency's load.
enum class load_signal : std::uint8_t {
    accepted,  ///< the dependency answered (success, or a failure that is not about load)
    overload,  ///< it refused the work or ran out of time (429, 503, timeouts)
    ignored,   ///< nothing learned: cancelled, or rejected before any attempt
};

/// The signal's name, e.g. "overload".
[[nodiscard]] constexpr enum_name to_string(load_signal s) noexcept {
    switch (s) {
        case load_signal::accepted: return "accepted";
        case load_signal::overload: return "overload";
        case load_signal::ignored: return "ignored";
    }
    return "unknown";
}

/// The verdicts counted as overload unless an options type says otherwise.
inline constexpr verdict_set default_overload_verdicts{verdict::retryable, verdict::ambiguous};

/// The signal of an attempt judged `v`.
[[nodiscard]] constexpr load_signal load_signal_of(verdict v, verdict_set overload = default_overload_verdicts) noexcept {
    return overload.contains(v) ? load_signal::overload : load_signal::accepted;
}

/// The signal of a call's outcome, as the pipeline policies read it: an
/// attempt's verdict (a deadline that ran out during the attempt is its
/// timeout); a call that never reached the dependency — a deadline spent
/// before the attempt, any other rejection — teaches nothing: the dependency
/// was not asked, so its load is unknown.
template <class Outcome>
[[nodiscard]] constexpr load_signal load_signal_of_outcome(const Outcome& out, verdict_set overload) noexcept {
    if (out.attempted()) return load_signal_of(out.verdict(), overload);
    return load_signal::ignored;
}

namespace events {

/// An adaptive concurrency limit moved (resil/adaptive_limit.hpp).
struct limit_changed {
    /// The limit before.
    std::uint32_t from = 0;
    /// The limit after.
    std::uint32_t to = 0;
    load_signal cause = load_signal::accepted;  ///< overload: a decrease; accepted: a measurement
    /// The change's number on its limit: 1 for the first, one more per change
    /// (listeners on several threads may see changes out of order).
    std::uint64_t generation = 0;
};

/// A paced bucket changed its pace, or paused until a quota's reset
/// (resil/paced_bucket.hpp).
struct pace_changed {
    double rate = 0.0;          ///< tokens per second now
    std::int64_t burst = 0;     ///< tokens when full now
    duration paused_for{};      ///< an exhausted quota: no token before this much time (else zero)
    std::uint64_t generation = 0;  ///< 1 for the first change, one more per change
};

}  // namespace events

}  // namespace resil
