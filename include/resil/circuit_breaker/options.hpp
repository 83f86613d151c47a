// resil/circuit_breaker/options.hpp — the options of a circuit breaker, their
// documented defaults and ranges, and their one validate().
//
//   resil::circuit_breaker_options o{.window = 5ms};
//   if (auto bad = o.validate()) log(bad->message());
//   // "`window` must be in [10ms, 24h], got 5ms"
//
// The breaker's constructor throws from validate() (resil::throw_if_invalid);
// a configuration loader may call it on its own, without building a breaker.
// Included by resil/circuit_breaker.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "../enum_name.hpp"
#include "../detail/platform.hpp"
#include "../clock.hpp"
#include "../events.hpp"
#include "../outcome.hpp"
#include "../validation.hpp"

namespace resil {

/// How a circuit breaker decides to open.
enum class breaker_mode : std::uint8_t {
    time_window,           ///< failure ratio over the last `window` of time (the default)
    count_window,          ///< failure ratio over the last `window_calls` calls
    consecutive_failures,  ///< `consecutive_failures` failures in a row
};

/// The mode's name, e.g. "time_window".
[[nodiscard]] constexpr enum_name to_string(breaker_mode m) noexcept {
    switch (m) {
        case breaker_mode::time_window: return "time_window";
        case breaker_mode::count_window: return "count_window";
        case breaker_mode::consecutive_failures: return "consecutive_failures";
    }
    return "unknown";
}

/// Options of a circuit breaker; the defaults are the documented ones.
/// validate() names the first field out of range; the breaker's constructor
/// throws std::invalid_argument with that message.
struct circuit_breaker_options {
    /// How the breaker decides to open. Default: failure ratio over time.
    breaker_mode mode = breaker_mode::time_window;
    /// Ratio modes: opens when failures / calls is strictly above this, in
    /// [0, 1). Default 0.5 (more than half failed). 0 opens on any failure.
    double failure_ratio = 0.5;
    /// time_window mode: the span counted, in [min_window, max_window] =
    /// [10 ms, 24 h]. Default 10 s. Kept as 10 buckets of window / 10, so the
    /// counted span is between 90 % and 100 % of it.
    duration window = std::chrono::seconds{10};
    /// count_window mode: how many of the last calls are counted, in
    /// [1, max_window_calls] = [1, 1'000'000]. Default 100.
    std::uint32_t window_calls = 100;
    /// Ratio modes: no decision before this many calls in the window, so 2
    /// failures out of 3 calls at 4 a.m. do not open it. At least 1; in
    /// count_window mode at most window_calls. Default 20.
    std::uint32_t min_calls = 20;
    /// consecutive_failures mode: opens after this many failures in a row,
    /// in [1, max_consecutive_failures] = [1, 1'000'000]. Default 5.
    std::uint32_t consecutive_failures = 5;
    /// When set (positive), a call that took longer than this counts as a
    /// failure whatever its verdict. Default: unset, and nothing is timed.
    std::optional<duration> slow_call_threshold{};
    /// How long the breaker stays open before probing, in [min_open_for,
    /// max_open_for] = [1 ms, 24 h]. Default 30 s.
    duration open_for = std::chrono::seconds{30};
    /// Calls let through when half-open, in [1, max_probes] = [1, 1000]. Default 5.
    std::uint32_t half_open_probes = 5;
    /// How long half-open waits, from its start, for its probes to report
    /// back; then it opens again. Zero (the default) means the same as
    /// open_for, and the breaker's options() shows the value in force.
    /// Otherwise in [min_probe_timeout, max_probe_timeout] = [1 ms, 24 h].
    duration probe_timeout{};
    /// Verdicts counted as failures. Default: retryable and ambiguous (a
    /// permanent verdict means the dependency answered). Must not hold success.
    verdict_set failure_verdicts{verdict::retryable, verdict::ambiguous};
    /// Called on every change of state, never otherwise, by the thread that
    /// made the change, once it took effect; calls for successive changes may
    /// overlap on different threads, and arrive out of order: the event's
    /// `generation` numbers the changes 1, 2, 3, ... in the order they took
    /// effect. An exception it throws is swallowed: the change has happened
    /// regardless.
    std::function<void(const events::breaker_state_changed&)> on_state_change{};

    // ---- the limits validate() checks ----
    ///@{
    /// The bounds validate() checks: min_X and max_X are the smallest and
    /// largest `X` it accepts.
    static constexpr duration min_window = std::chrono::milliseconds{10};
    static constexpr duration max_window = std::chrono::hours{24};
    static constexpr std::uint32_t min_window_calls = 1;
    static constexpr std::uint32_t max_window_calls = 1'000'000;
    static constexpr std::uint32_t min_min_calls = 1;
    static constexpr std::uint32_t min_consecutive_failures = 1;
    static constexpr std::uint32_t max_consecutive_failures = 1'000'000;
    static constexpr duration min_open_for = std::chrono::milliseconds{1};
    static constexpr duration max_open_for = std::chrono::hours{24};
    static constexpr std::uint32_t min_probes = 1;
    static constexpr std::uint32_t max_probes = 1000;
    static constexpr duration min_probe_timeout = std::chrono::milliseconds{1};
    static constexpr duration max_probe_timeout = std::chrono::hours{24};
    ///@}

    /// The first field out of its range, in declaration order, with what it
    /// must be and what it was ("`open_for` must be in [1ms, 24h], got 500us");
    /// nothing when every field is valid. Covers everything the breaker's
    /// constructor checks.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result circuit_breaker_options::validate() const {
    using detail::check_at_least;
    using detail::check_in_range;
    using detail::check_that;
    const bool known_mode = mode == breaker_mode::time_window || mode == breaker_mode::count_window ||
                            mode == breaker_mode::consecutive_failures;
    if (auto bad = check_that(known_mode, "mode", "one of time_window, count_window, consecutive_failures",
                              static_cast<unsigned>(mode)))
        return bad;
    if (auto bad = check_that(failure_ratio >= 0.0 && failure_ratio < 1.0, "failure_ratio",
                              "in [0, 1) (it opens when the ratio is strictly above it)", failure_ratio))
        return bad;
    if (auto bad = check_in_range("window", window, min_window, max_window)) return bad;
    if (auto bad = check_in_range("window_calls", window_calls, min_window_calls, max_window_calls)) return bad;
    if (auto bad = check_at_least("min_calls", min_calls, min_min_calls)) return bad;
    if (mode == breaker_mode::count_window && min_calls > window_calls)
        return check_that(false, "min_calls",
                          {"at most window_calls (", detail::format_option_value(window_calls),
                           ") in count_window mode, or the breaker could never open"},
                          min_calls);
    if (auto bad = check_in_range("consecutive_failures", consecutive_failures, min_consecutive_failures,
                                  max_consecutive_failures))
        return bad;
    if (slow_call_threshold)
        if (auto bad = check_that(*slow_call_threshold > duration::zero(), "slow_call_threshold", "positive when set",
                                  *slow_call_threshold))
            return bad;
    if (auto bad = check_in_range("open_for", open_for, min_open_for, max_open_for)) return bad;
    if (auto bad = check_in_range("half_open_probes", half_open_probes, min_probes, max_probes)) return bad;
    if (probe_timeout != duration::zero() &&
        !(probe_timeout >= min_probe_timeout && probe_timeout <= max_probe_timeout))
        return check_that(false, "probe_timeout",
                          {"0 (the same as open_for) or in [", detail::format_duration(min_probe_timeout), ", ",
                           detail::format_duration(max_probe_timeout), "]"},
                          probe_timeout);
    if (failure_verdicts.contains(verdict::success)) {
        std::string shown = "{";
        for (auto v : {verdict::success, verdict::retryable, verdict::permanent, verdict::ambiguous}) {
            if (!failure_verdicts.contains(v)) continue;
            if (shown.size() > 1) shown += ", ";
            shown += to_string(v);
        }
        return invalid_option{"failure_verdicts", detail::concat({"must not contain success, got ", shown, "}"})};
    }
    return std::nullopt;
}
#endif

}  // namespace resil
