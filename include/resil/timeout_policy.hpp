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
#include "timeouts.hpp"
#include "validation.hpp"

namespace resil {

/// Options of a timeout_policy: the timeouts themselves, validated by
/// timeouts::validate() (every field at least timeouts::min_timeout).
using timeout_policy_options = resil::timeouts;

class timeout_policy {
public:
    /// Reads the call's context (the pipeline's clock) and keeps no state
    /// across calls: no clock, no metrics() (resil/policy_checklist.hpp).
    static constexpr resil::time_source time_source = resil::time_source::call_context;
    static constexpr bool stateless = true;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit timeout_policy(timeout_policy_options options) : timeouts_(options) {
        throw_if_invalid("resil::timeout_policy", timeouts_.validate());
    }

    [[nodiscard]] const timeout_policy_options& options() const noexcept { return timeouts_; }
    [[nodiscard]] const resil::timeouts& timeouts() const noexcept { return timeouts_; }

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        using result = decltype(next(ctx));
        if (!admits(ctx)) return result::rejected(reason::deadline_exceeded);
        // Restores the outer timeouts on every way out, exceptions included.
        struct restore {
            Context& ctx;
            resil::timeouts outer;
            ~restore() { ctx.set_timeouts(outer); }
        } guard{ctx, ctx.timeouts()};
        ctx.set_timeouts(guard.outer.tightened_by(timeouts_));
        return next(ctx);
    }

    /// The policy's check, for drivers that cannot run the rest of the
    /// pipeline as a plain call (resil/asio): false (after emitting
    /// deadline_exceeded and rejected) when too little is left for an
    /// attempt. Then the driver sets ctx.timeouts().tightened_by(timeouts())
    /// around the rest, and restores what it found.
    template <class Context>
    bool admits(Context& ctx) const {
        // The attempt's reading, shared with the policies around (without a
        // deadline, none is taken).
        if (!resil::timeouts::enough_for_attempt(ctx.recent_remaining())) {
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
