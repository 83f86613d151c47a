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

#include <chrono>
#include <stdexcept>
#include <type_traits>
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
        // Restores the outer deadline on every way out, exceptions included,
        // so that a deadline_policy inside a retry bounds each attempt only.
        struct restore {
            Context& ctx;
            std::remove_cvref_t<decltype(ctx.deadline())> outer;
            ~restore() { ctx.set_deadline(std::move(outer)); }
        } guard{ctx, ctx.deadline()};
        const auto now = ctx.now();
        ctx.tighten_deadline(detail::saturating_add(now, budget_));
        if (ctx.deadline().expired(now)) {
            ctx.emit(events::deadline_exceeded{0});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            return result::rejected(reason::deadline_exceeded);
        }
        auto out = next(ctx);
        // A failure that came from running out of time says so, whatever
        // inner policies called it. Less than a millisecond left counts as
        // none: per-attempt timeouts are whole milliseconds rounded down, so a
        // transfer cut at its limit may end just before the deadline itself.
        // A permanent failure stays what it is: the dependency answered.
        if (!out.ok() && out.attempted() && out.verdict() != verdict::permanent &&
            out.reason() != reason::cancelled && out.reason() != reason::deadline_exceeded &&
            ctx.deadline().remaining() < std::chrono::milliseconds{1}) {
            ctx.emit(events::deadline_exceeded{ctx.attempt()});
            out.fail(reason::deadline_exceeded);
        }
        return out;
    }

private:
    duration budget_;
};

}  // namespace resil
