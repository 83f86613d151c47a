// resil/timeout_policy.hpp — the per-attempt timeout triad.
//
//   resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}}
//
// Sets the context's timeouts for everything inside it; the callable reads
// them with ctx.attempt_timeouts(), which clamps each to what is left of the
// deadline at that moment (the curl adapter does this for you). A timeout
// already set further out is never loosened: each value is the smaller of the
// two. resil cannot stop arbitrary code: these values bound a call only when
// the callable hands them to its client. An attempt with less than a
// millisecond left is not started (its timeouts would be 0 ms, which many
// clients read as "no limit"): the call fails with reason::deadline_exceeded.
#pragma once

#include <algorithm>
#include <chrono>
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
        if (ctx.deadline().remaining() < std::chrono::milliseconds{1}) {
            // Attempts before this one ran; this one never starts.
            const auto made = ctx.attempt() > 0 ? ctx.attempt() - 1 : 0;
            ctx.emit(events::deadline_exceeded{made});
            ctx.emit(events::rejected{reason::deadline_exceeded, std::nullopt});
            return result::rejected(reason::deadline_exceeded);
        }
        // Restores the outer timeouts on every way out, exceptions included.
        struct restore {
            Context& ctx;
            resil::timeouts outer;
            ~restore() { ctx.set_timeouts(outer); }
        } guard{ctx, ctx.timeouts()};
        const auto& outer = guard.outer;
        ctx.set_timeouts({std::min(outer.connect, timeouts_.connect), std::min(outer.read, timeouts_.read),
                          std::min(outer.total, timeouts_.total)});
        return next(ctx);
    }

private:
    resil::timeouts timeouts_;
};

}  // namespace resil
