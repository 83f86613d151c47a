// resil/deadline_policy.hpp — sets (or tightens) the deadline of everything
// inside it: all attempts, all waits between them.
//
//   auto pipe = resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{});
//   // the same, spelled like every other policy's options:
//   resil::deadline_policy whole_call{{.budget = 250ms}};
//
// The deadline is the earlier of the one the context already carries (an
// upstream caller's) and now + budget: a layer never waits longer than the
// layer above it. An already expired deadline rejects the call before any
// attempt with reason::deadline_exceeded; a call that fails after its
// deadline passed reports deadline_exceeded too, whatever inner policies said.
// Placed inside a retry policy it bounds each attempt instead.
#pragma once

#include <chrono>
#include <optional>
#include <utility>

#include "detail/platform.hpp"
#include "clock.hpp"
#include "detail/saturate.hpp"
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "timeouts.hpp"
#include "validation.hpp"

namespace resil {


/// Options of a deadline_policy.
struct deadline_policy_options {
    /// The least budget: one attempt's worth, timeouts::min_attempt_time.
    static constexpr duration min_budget = timeouts::min_attempt_time;
    /// The largest budget: 24 h (beyond it a deadline bounds nothing useful).
    static constexpr duration max_budget = std::chrono::hours{24};

    /// Time for everything inside the policy, from the moment it starts.
    /// Required; must be in [min_budget, max_budget].
    duration budget{};

    /// The invalid field, if any:
    ///   "`budget` must be in [1ms, 24h], got 0s"
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const deadline_policy_options&, const deadline_policy_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result deadline_policy_options::validate() const {
    return detail::check_in_range("budget", budget, min_budget, max_budget);
}
#endif

/// Sets, or tightens, the deadline of everything inside it: the earlier of the
/// context's deadline and now + budget. A call whose deadline has already
/// passed is refused with reason::deadline_exceeded before any attempt.
/// Stateless and copyable: share it freely.
class deadline_policy {
public:
    /// Reads the call's context (the pipeline's clock) and keeps no state
    /// across calls: no clock, no metrics() (resil/policy_checklist.hpp).
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    /// No state across calls: copies share nothing, and it has no metrics()
    /// (resil/policy_checklist.hpp).
    static constexpr bool stateless = true;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit deadline_policy(deadline_policy_options options) : options_(options) {
        throw_if_invalid("resil::deadline_policy", options_.validate());
    }
    /// deadline_policy{{.budget = budget}}.
    explicit deadline_policy(duration budget) : deadline_policy(deadline_policy_options{budget}) {}

    /// The options it was built with.
    [[nodiscard]] const deadline_policy_options& options() const noexcept { return options_; }
    /// The time it gives everything inside it, from when the call enters it.
    [[nodiscard]] duration budget() const noexcept { return options_.budget; }

    /// As a pipeline policy: the steps below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What the policy keeps during a call (policy_steps.hpp): the deadline
    /// it found, put back when the call leaves it (or unwinds), so that a
    /// deadline_policy inside a retry bounds each attempt only.
    struct outer_deadline {
        /// The deadline found on entering, put back on leaving.
        time_point instant{};
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = outer_deadline;

    /// Tightens the deadline; refuses the call (after emitting
    /// deadline_exceeded and rejected) when none is left.
    template <class Context>
    layer_in enter(Context& ctx, outer_deadline& s) const {
        s.instant = ctx.deadline_instant();
        const auto now = ctx.cached_now();
        ctx.tighten_deadline(detail::saturating_add(now, options_.budget));
        if (ctx.remaining(now) == duration::zero()) {
            ctx.emit(events::deadline_exceeded{0});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            ctx.set_deadline_instant(s.instant);
            return layer_in::refuse(reason::deadline_exceeded);
        }
        return layer_in::proceed();
    }

    /// A failure that came from running out of time says so, whatever inner
    /// policies called it. Less than timeouts::min_attempt_time left counts
    /// as none: per-attempt timeouts are whole milliseconds rounded down, so
    /// a transfer cut at its limit may end just before the deadline itself.
    /// A permanent failure stays what it is: the dependency answered. Then
    /// the deadline found on the way in is put back.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, outer_deadline& s, Outcome& out) const {
        if (!out.ok() && out.attempted() && out.verdict() != verdict::permanent && out.reason() != reason::cancelled &&
            out.reason() != reason::deadline_exceeded &&
            !resil::timeouts::enough_for_attempt(ctx.cached_remaining())) {
            ctx.emit(events::deadline_exceeded{ctx.attempt()});
            out.fail(reason::deadline_exceeded);
        }
        ctx.set_deadline_instant(s.instant);
        return layer_out::proceed();
    }

    /// An exception unwinding the call: the deadline found on the way in is put back.
    template <class Context>
    void unwind(Context& ctx, outer_deadline& s) const noexcept {
        ctx.set_deadline_instant(s.instant);
    }

private:
    deadline_policy_options options_;
};

}  // namespace resil
