// resil/fmt.hpp — fmt formatters for resil's verdicts, reasons, breaker
// states, events and metric snapshots, and a listener that logs one line per
// event through a sink of your choice.
//
//   fmt::print("{}\n", out.reason());                               // circuit_open
//   fmt::print("{:>12}|\n", resil::verdict::retryable);              //    retryable|
//
//   auto pipe = resil::pipeline(...).with_listener(resil::log_listener{
//       [](std::string_view line) { spdlog::info("{}", line); }, "triton"});
//   // triton: attempt 1: retryable in 12ms
//   // triton: retry 1 in 137ms (retryable, Retry-After)
//   // triton: call finished: ok after 2 attempts
//
// Durations in log lines are rounded to three significant digits ("137ms",
// "1.5s", "29.8s") — for people, unlike the exact forms of resil/json.hpp.
// Needs the resil::fmt CMake target (fmt 9 or later).
/// \file
/// fmt formatters for resil's values (fmt::formatter specialisations, which
/// the reference does not list as classes), and resil::log_listener:
/// - the enumerations resil::verdict, resil::reason, resil::circuit_state and
///   resil::load_signal: their snake_case names, with width, fill and
///   alignment as for strings ("{:>12}");
/// - every event of resil::events::all: one line each ("retry 1 in 137ms
///   (retryable, Retry-After)"), durations to three significant digits;
/// - resil::reason_counts and resil::metrics_snapshot: one line, counts by
///   reason listed only when non-zero.
///
/// Events and snapshots take no format spec ("{}" only: another throws
/// fmt::format_error). Needs the resil::fmt CMake target (fmt 9 or later).
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "events.hpp"
#include "load_signal.hpp"
#include "metrics.hpp"
#include "outcome.hpp"

namespace resil {

namespace detail {

/// A duration as people read it: three significant digits in the largest
/// unit that keeps it >= 1 (ns, us, ms, s, m, h).
struct readable_duration {
    duration value;
};

/// Formatters of aggregates take no format spec: "{}" only.
struct spec_free_formatter {
    template <class ParseContext>
    constexpr auto parse(ParseContext& ctx) {
        auto it = ctx.begin();
        if (it != ctx.end() && *it != '}') throw ::fmt::format_error("resil: this type takes no format spec, use {}");
        return it;
    }
};

inline std::string_view attempts_word(std::uint32_t n) noexcept { return n == 1 ? "attempt" : "attempts"; }

}  // namespace detail

/// A listener that writes one line per event (every event of events::all)
/// to `sink`, a callable taking
/// std::string_view (a logger, a file, a vector in tests), prefixed with
/// "name: " when a name is given. Formats into a stack buffer: a line
/// allocates nothing unless it exceeds 500 characters. The sink is called from
/// whichever thread emitted the event, so it must be thread-safe when the
/// pipeline is shared. It asks for attempt durations (times_attempts), so the
/// pipeline reads the clock around each attempt. Also usable as a breaker's
/// on_state_change.
template <class Sink>
class log_listener {
public:
    /// Asks pipelines for attempt durations, so each attempt's line shows how
    /// long it took.
    static constexpr bool times_attempts = true;

    /// Writes each line to `sink`, prefixed with "name: " when `name` is not
    /// empty.
    explicit log_listener(Sink sink, std::string name = {}) : sink_(std::move(sink)), name_(std::move(name)) {}

    /// Formats `event` into one line (no allocation up to 500 characters) and
    /// passes it to the sink.
    template <class Event>
        requires is_event<Event>
    void operator()(const Event& event) const {
        ::fmt::memory_buffer line;
        if (!name_.empty()) ::fmt::format_to(std::back_inserter(line), "{}: ", name_);
        ::fmt::format_to(std::back_inserter(line), "{}", event);
        sink_(std::string_view(line.data(), line.size()));
    }

    /// The sink it writes to.
    [[nodiscard]] const Sink& sink() const noexcept { return sink_; }
    /// The prefix of its lines; empty for none.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

private:
    Sink sink_;
    std::string name_;
};

/// Deduces log_listener<Sink> from the sink.
template <class Sink>
log_listener(Sink) -> log_listener<Sink>;
/// Deduces log_listener<Sink> from the sink and a name of any string type.
template <class Sink, class Name>
log_listener(Sink, Name) -> log_listener<Sink>;

}  // namespace resil

// ---------------------------------------------------------------------------
// Enumerations: their snake_case names; width, fill and alignment work as for
// strings ("{:>12}").

template <>
struct fmt::formatter<resil::verdict> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(resil::verdict v, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(resil::to_string(v), ctx);
    }
};

template <>
struct fmt::formatter<resil::reason> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(resil::reason r, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(resil::to_string(r), ctx);
    }
};

template <>
struct fmt::formatter<resil::circuit_state> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(resil::circuit_state s, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(resil::to_string(s), ctx);
    }
};

template <>
struct fmt::formatter<resil::load_signal> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(resil::load_signal s, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(resil::to_string(s), ctx);
    }
};

template <>
struct fmt::formatter<resil::detail::readable_duration> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(resil::detail::readable_duration d, FormatContext& ctx) const {
        struct unit {
            std::string_view name;
            double ns;
        };
        static constexpr unit units[] = {{"h", 3.6e12}, {"m", 6e10}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
        const auto count = d.value.count();
        if (count == 0) return fmt::format_to(ctx.out(), "0s");
        const double magnitude = count < 0 ? -static_cast<double>(count) : static_cast<double>(count);
        const unit* chosen = &units[5];
        for (const auto& u : units) {
            if (magnitude >= u.ns) {
                chosen = &u;
                break;
            }
        }
        const double v = magnitude / chosen->ns;  // >= 1
        const auto sign = count < 0 ? "-" : "";
        // Below 100, "g" gives three significant digits without trailing
        // zeros and never an exponent (99.96 rounds to "100"). From 100 on,
        // whole units: "g" would write 999.6 as "1e+03" and 2562047 h in
        // exponent form.
        if (v < 100) return fmt::format_to(ctx.out(), "{}{:.3g}{}", sign, v, chosen->name);
        return fmt::format_to(ctx.out(), "{}{:.0f}{}", sign, v, chosen->name);
    }
};

// ---------------------------------------------------------------------------
// Events: one line each, as the log listener writes them.

template <>
struct fmt::formatter<resil::events::attempt_started> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::attempt_started& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "attempt {} started", e.attempt);
    }
};

template <>
struct fmt::formatter<resil::events::attempt_finished> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::attempt_finished& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "attempt {}: {} in {}", e.attempt, e.verdict,
                              resil::detail::readable_duration{e.elapsed});
    }
};

template <>
struct fmt::formatter<resil::events::retry_scheduled> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::retry_scheduled& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "retry {} in {} ({}{})", e.attempt, resil::detail::readable_duration{e.delay},
                              e.verdict, e.from_retry_after ? ", Retry-After" : "");
    }
};

template <>
struct fmt::formatter<resil::events::retries_exhausted> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::retries_exhausted& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "retries exhausted after {} {}", e.attempts,
                              resil::detail::attempts_word(e.attempts));
    }
};

template <>
struct fmt::formatter<resil::events::budget_refused> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::budget_refused& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "retry {} refused by the retry budget", e.attempt);
    }
};

template <>
struct fmt::formatter<resil::events::breaker_state_changed> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::breaker_state_changed& e, FormatContext& ctx) const {
        auto out = e.endpoint.empty() ? fmt::format_to(ctx.out(), "circuit breaker {} -> {}", e.from, e.to)
                                      : fmt::format_to(ctx.out(), "circuit breaker of {} {} -> {}", e.endpoint, e.from,
                                                       e.to);
        if (e.calls_in_window == 0) return out;
        return fmt::format_to(out, " (failure ratio {:.3g} over {} call{})", e.failure_ratio, e.calls_in_window,
                              e.calls_in_window == 1 ? "" : "s");
    }
};

template <>
struct fmt::formatter<resil::events::rejected> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::rejected& e, FormatContext& ctx) const {
        auto out = fmt::format_to(ctx.out(), "rejected: {}", e.reason);
        if (!e.retry_after) return out;
        return fmt::format_to(out, " (retry after {})", resil::detail::readable_duration{*e.retry_after});
    }
};

template <>
struct fmt::formatter<resil::events::fallback_used> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::fallback_used& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "fallback used for {}", e.reason);
    }
};

template <>
struct fmt::formatter<resil::events::call_finished> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::call_finished& e, FormatContext& ctx) const {
        const auto outcome = e.reason == resil::reason::none ? std::string_view("ok") : resil::to_string(e.reason);
        return fmt::format_to(ctx.out(), "call finished: {} after {} {}{}", outcome, e.attempts,
                              resil::detail::attempts_word(e.attempts),
                              e.from_fallback ? ", answered by the fallback" : "");
    }
};

template <>
struct fmt::formatter<resil::events::deadline_exceeded> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::deadline_exceeded& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "deadline exceeded after {} {}", e.attempts,
                              resil::detail::attempts_word(e.attempts));
    }
};

template <>
struct fmt::formatter<resil::events::endpoint_ejected> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::endpoint_ejected& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "endpoint {} ejected for {} (multiplier {})", e.address,
                              resil::detail::readable_duration{e.ejected_for}, e.times_ejected);
    }
};

template <>
struct fmt::formatter<resil::events::endpoint_returned> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::endpoint_returned& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "endpoint {} returned", e.address);
    }
};

template <>
struct fmt::formatter<resil::events::quota_store_failed> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::quota_store_failed& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "quota store failed: {}",
                              !e.fail_open ? "rejected (fail closed)"
                              : e.admitted ? "admitted by the local bucket (fail open)"
                                           : "rejected by the local bucket (fail open)");
    }
};

template <>
struct fmt::formatter<resil::events::limit_changed> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::limit_changed& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "concurrency limit {} -> {} ({})", e.from, e.to, e.cause);
    }
};

template <>
struct fmt::formatter<resil::events::endpoint_health_changed> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::endpoint_health_changed& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "endpoint {} {} after {} {} probe{}", e.address,
                              e.healthy ? "healthy" : "unhealthy", e.probes_in_a_row, e.healthy ? "passed" : "failed",
                              e.probes_in_a_row == 1 ? "" : "s");
    }
};

// Copy 0 is the call's first attempt; copies 1, 2, ... its hedges.
template <>
struct fmt::formatter<resil::events::hedge_started> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::hedge_started& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "hedge {} started after {}", e.copy, resil::detail::readable_duration{e.delay});
    }
};

template <>
struct fmt::formatter<resil::events::hedge_refused> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::hedge_refused& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "hedge {} refused by the retry budget", e.copy);
    }
};

template <>
struct fmt::formatter<resil::events::hedge_cancelled> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::hedge_cancelled& e, FormatContext& ctx) const {
        if (e.copy == 0) return fmt::format_to(ctx.out(), "first attempt cancelled: a hedge answered first");
        return fmt::format_to(ctx.out(), "hedge {} cancelled: another copy answered first", e.copy);
    }
};

template <>
struct fmt::formatter<resil::events::hedge_won> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::hedge_won& e, FormatContext& ctx) const {
        return fmt::format_to(ctx.out(), "hedge {} answered first", e.copy);
    }
};

// "pace 2/s, burst 5" and, for an exhausted quota, ", paused for 5s".
template <>
struct fmt::formatter<resil::events::pace_changed> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::pace_changed& e, FormatContext& ctx) const {
        auto out = fmt::format_to(ctx.out(), "pace {:.3g}/s, burst {}", e.rate, e.burst);
        if (e.paused_for <= resil::duration::zero()) return out;
        return fmt::format_to(out, ", paused for {}", resil::detail::readable_duration{e.paused_for});
    }
};

template <>
struct fmt::formatter<resil::fault_kind> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(resil::fault_kind k, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(resil::to_string(k), ctx);
    }
};

// "fault injected: delay 300ms" and "fault injected: abort (retryable)".
template <>
struct fmt::formatter<resil::events::fault_injected> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::fault_injected& e, FormatContext& ctx) const {
        if (e.kind == resil::fault_kind::delay)
            return fmt::format_to(ctx.out(), "fault injected: delay {}", resil::detail::readable_duration{e.delay});
        return fmt::format_to(ctx.out(), "fault injected: {} ({})", e.kind, e.verdict);
    }
};

// "dns lookup svc.test: resolved, 3 found (+1 -0), next in 5s" and
// "dns lookup svc.test: failed (timed out), next in 2s".
template <>
struct fmt::formatter<resil::events::dns_lookup> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::events::dns_lookup& e, FormatContext& ctx) const {
        auto out = fmt::format_to(ctx.out(), "dns lookup {}: {}", e.name, std::string_view{resil::to_string(e.outcome)});
        if (e.outcome == resil::dns_lookup_outcome::resolved)
            out = fmt::format_to(out, ", {} found (+{} -{})", e.found, e.added, e.removed);
        else if (!e.error.empty())
            out = fmt::format_to(out, " ({})", e.error);
        return fmt::format_to(out, ", next in {}", resil::detail::readable_duration{e.next_in});
    }
};

// ---------------------------------------------------------------------------
// A metrics snapshot: one line, counts by reason listed only when non-zero.
//   calls 7: 2 ok, 5 failed (retries_exhausted 1, circuit_open 1, ...); attempts 12; ...

template <>
struct fmt::formatter<resil::reason_counts> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::reason_counts& c, FormatContext& ctx) const {
        auto out = ctx.out();
        bool first = true;
        for (std::size_t i = 1; i < resil::reason_count; ++i) {
            if (c.by_reason[i] == 0) continue;
            out = fmt::format_to(out, "{}{} {}", first ? "" : ", ", static_cast<resil::reason>(i), c.by_reason[i]);
            first = false;
        }
        if (first) out = fmt::format_to(out, "none");
        return out;
    }
};

template <>
struct fmt::formatter<resil::metrics_snapshot> : resil::detail::spec_free_formatter {
    template <class FormatContext>
    auto format(const resil::metrics_snapshot& s, FormatContext& ctx) const {
        auto out = fmt::format_to(ctx.out(), "calls {}: {} ok, {} failed", s.calls, s.successes, s.failures.total());
        if (s.failures.total() > 0) out = fmt::format_to(out, " ({})", s.failures);
        out = fmt::format_to(out, "; attempts {}; retries {}", s.attempts, s.retries);
        if (s.retries_after_server_hint > 0) out = fmt::format_to(out, " ({} after Retry-After)", s.retries_after_server_hint);
        out = fmt::format_to(out, "; retries exhausted {}; budget refusals {}; deadlines exceeded {}", s.retries_exhausted,
                             s.budget_refusals, s.deadlines_exceeded);
        out = fmt::format_to(out, "; rejections {}", s.rejections.total());
        if (s.rejections.total() > 0) out = fmt::format_to(out, " ({})", s.rejections);
        out = fmt::format_to(out, "; fallbacks {}", s.fallbacks.total());
        if (s.fallbacks.total() > 0) out = fmt::format_to(out, " ({})", s.fallbacks);
        out = fmt::format_to(out, "; breaker opened {}, half-opened {}, closed {}, open {}", s.breaker_opened,
                             s.breaker_half_opened, s.breaker_closed, resil::detail::readable_duration{s.time_open});
        // Only for pipelines with an adaptive limit or a paced bucket.
        if (s.limit_increases + s.limit_decreases > 0)
            out = fmt::format_to(out, "; limit raised {}, lowered {}", s.limit_increases, s.limit_decreases);
        if (s.pace_changes > 0) out = fmt::format_to(out, "; pace changes {}", s.pace_changes);
        // Only where a shared quota's store failed.
        if (s.quota_store_failures > 0) out = fmt::format_to(out, "; quota store failures {}", s.quota_store_failures);
        // Only where a balancer's hooks feed the object.
        if (s.endpoint_ejections + s.endpoint_returns > 0)
            out = fmt::format_to(out, "; endpoints ejected {}, returned {}", s.endpoint_ejections, s.endpoint_returns);
        return out;
    }
};
