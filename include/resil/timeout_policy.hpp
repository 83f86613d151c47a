// resil/timeout_policy.hpp — the per-attempt timeout triad.
//
//   resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}}
//
// Sets the context's timeouts for everything inside it; the callable reads
// them with ctx.attempt_timeouts(), which clamps each to what is left of the
// deadline at that moment (the curl adapter does this for you). resil cannot
// stop arbitrary code: these values bound a call only when the callable hands
// them to its client. An attempt with no time left is not started: the call
// fails with reason::deadline_exceeded.
#pragma once

#include <stdexcept>
#include <string>

#include "events.hpp"
#include "outcome.hpp"
#include "timeouts.hpp"

namespace resil {

class timeout_policy {
public:
    /// Throws std::invalid_argument for a zero or negative timeout.
    explicit timeout_policy(resil::timeouts t) : timeouts_(t) {
        if (auto why = t.invalid_reason()) throw std::invalid_argument("resil::timeout_policy: " + std::string(*why));
    }

    [[nodiscard]] const resil::timeouts& timeouts() const noexcept { return timeouts_; }

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        using result = decltype(next(ctx));
        const auto outer = ctx.timeouts();
        if (ctx.deadline().expired()) {
            // Attempts before this one ran; this one never starts.
            const auto made = ctx.attempt() > 0 ? ctx.attempt() - 1 : 0;
            ctx.emit(events::deadline_exceeded{made});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            return result::rejected(reason::deadline_exceeded);
        }
        ctx.set_timeouts(timeouts_);
        auto out = next(ctx);
        ctx.set_timeouts(outer);
        return out;
    }

private:
    resil::timeouts timeouts_;
};

}  // namespace resil
