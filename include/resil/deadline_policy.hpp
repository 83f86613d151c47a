// resil/deadline_policy.hpp — sets (or tightens) the deadline of everything
// inside it: all attempts, all waits between them.
//
//   auto pipe = resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{});
//
// The deadline is the earlier of the one the context already carries (an
// upstream caller's) and now + budget: a layer never waits longer than the
// layer above it. An already expired deadline rejects the call before any
// attempt with reason::deadline_exceeded; a call that fails after its
// deadline passed reports deadline_exceeded too, whatever inner policies said.
// Placed inside a retry policy it bounds each attempt instead.
#pragma once

#include <stdexcept>
#include <utility>

#include "clock.hpp"
#include "detail/saturate.hpp"
#include "events.hpp"
#include "outcome.hpp"

namespace resil {

class deadline_policy {
public:
    /// Throws std::invalid_argument for a non-positive budget.
    explicit deadline_policy(duration budget) : budget_(budget) {
        if (budget <= duration::zero())
            throw std::invalid_argument("resil::deadline_policy: the budget must be positive");
    }

    [[nodiscard]] duration budget() const noexcept { return budget_; }

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        using result = decltype(next(ctx));
        auto outer = ctx.deadline();
        const auto now = ctx.now();
        ctx.tighten_deadline(detail::saturating_add(now, budget_));
        if (ctx.deadline().expired(now)) {
            ctx.emit(events::deadline_exceeded{0});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            ctx.set_deadline(std::move(outer));
            return result::rejected(reason::deadline_exceeded);
        }
        auto out = next(ctx);
        // Less than a millisecond left counts as none: per-attempt timeouts are
        // whole milliseconds rounded down, so a transfer cut at its limit may
        // end just before the deadline itself.
        if (!out.ok() && out.attempted() && out.reason() != reason::cancelled &&
            ctx.deadline().remaining() < std::chrono::milliseconds{1}) {
            // Time ran out: say so, whether the last attempt timed out or a
            // retry gave up for lack of time.
            if (out.reason() != reason::deadline_exceeded) ctx.emit(events::deadline_exceeded{ctx.attempt()});
            out.fail(reason::deadline_exceeded);
        }
        ctx.set_deadline(std::move(outer));
        return out;
    }

private:
    duration budget_;
};

}  // namespace resil
