// resil/timeout_policy.hpp — the per-attempt timeout triad.
//
//   resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}}
//
// Sets the context's timeouts for everything inside it; the callable reads
// them with ctx.attempt_timeouts() or ctx.limits_for_attempt(), which clamp
// each to what is left of the deadline at that moment (the curl adapter does
// this for you). A timeout already set further out is never loosened: each
// value is the smaller of the two (timeouts::tightened_by). resil cannot stop
// arbitrary code: these values bound a call only when the callable hands them
// to its client. An attempt with less than timeouts::min_attempt_time left is
// not started (its timeouts would be 0 ms, which many clients read as "no
// limit"): the call fails with reason::deadline_exceeded.
#pragma once

#include <optional>

#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "timeouts.hpp"
#include "validation.hpp"

namespace resil {


/// Options of a timeout_policy: the timeouts themselves, validated by
/// timeouts::validate() (every field at least timeouts::min_timeout).
using timeout_policy_options = resil::timeouts;

/// Sets the per-attempt timeouts (connect, read, total) of everything inside
/// it, never loosening those already set further out; the callable reads them
/// clamped to the deadline. Stateless and copyable.
class timeout_policy {
public:
    /// Reads the call's context (the pipeline's clock) and keeps no state
    /// across calls: no clock, no metrics() (resil/policy_checklist.hpp).
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    /// No state across calls: copies share nothing, and it has no metrics()
    /// (resil/policy_checklist.hpp).
    static constexpr bool stateless = true;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit timeout_policy(timeout_policy_options options) : timeouts_(options) {
        throw_if_invalid("resil::timeout_policy", timeouts_.validate());
    }

    /// The options it was built with.
    [[nodiscard]] const timeout_policy_options& options() const noexcept { return timeouts_; }
    /// The timeouts it sets (the same as options()).
    [[nodiscard]] const resil::timeouts& timeouts() const noexcept { return timeouts_; }

    /// As a pipeline policy: the steps below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// What the policy keeps during a call (policy_steps.hpp): the timeouts
    /// it found, put back when the call leaves it (or unwinds).
    struct outer_timeouts {
        /// The timeouts found on entering, put back on leaving.
        resil::timeouts found{};
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = outer_timeouts;

    /// Refuses the attempt (after emitting deadline_exceeded and rejected)
    /// when too little is left for it; otherwise sets the context's timeouts
    /// to the tighter of its own and these, for the rest of the pipeline.
    template <class Context>
    layer_in enter(Context& ctx, outer_timeouts& s) const {
        // Read first: a driver that unwinds a layer whose enter() threw (a
        // listener throwing in admits()) puts back what was found.
        s.found = ctx.timeouts();
        if (!admits(ctx)) return layer_in::refuse(reason::deadline_exceeded);
        ctx.set_timeouts(s.found.tightened_by(timeouts_));
        return layer_in::proceed();
    }

    /// Puts back the timeouts found on the way in.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, outer_timeouts& s, Outcome&) const noexcept {
        ctx.set_timeouts(s.found);
        return layer_out::proceed();
    }

    /// An exception unwinding the call: the timeouts found are put back.
    template <class Context>
    void unwind(Context& ctx, outer_timeouts& s) const noexcept {
        ctx.set_timeouts(s.found);
    }

    /// The policy's check: false (after emitting deadline_exceeded and
    /// rejected) when too little is left for an attempt.
    template <class Context>
    bool admits(Context& ctx) const {
        // The attempt's reading, shared with the policies around (without a
        // deadline, none is taken).
        if (!resil::timeouts::enough_for_attempt(ctx.cached_remaining())) {
            // Attempts before this one ran; this one never starts.
            const auto made = ctx.attempt() > 0 ? ctx.attempt() - 1 : 0;
            ctx.emit(events::deadline_exceeded{made});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            return false;
        }
        return true;
    }

private:
    resil::timeouts timeouts_;
};

}  // namespace resil
