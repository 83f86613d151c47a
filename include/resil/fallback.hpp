// resil/fallback.hpp — plan B: turns a failed call into a value, and counts
// every time it does, by reason, so a silent fallback cannot hide an outage.
//
//   resil::fallback_policy category_picker{[](const auto& failed) {
//       return response::category_picker();     // cheap, and independent of what failed
//   }};
//   auto pipe = resil::pipeline(category_picker, resil::deadline_policy{250ms}, ...);
//   ...
//   category_picker.count(resil::reason::circuit_open);   // alert on these
//   category_picker.metrics().total();                    // every reason
//
// The fallback function is called with the failed outcome (`const
// resil::outcome<T>&`), or with nothing, and returns something convertible to
// T. It handles every reason by default; `handles` picks some, and a failure
// for any other passes through unchanged (not counted, no event):
//
//   resil::fallback_policy stale_cache{serve_stale, {.handles = {resil::reason::circuit_open, resil::reason::shed}}};
//
// Copies of a fallback_policy share their counters, so the copy you keep
// reads what the pipeline's copy counted. Counting is a relaxed atomic
// increment: free to leave on. Exceptions that no classifier judged are not
// failures of the call but errors of the program: they propagate untouched.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "detail/platform.hpp"
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "validation.hpp"

namespace resil {

/// How many times a fallback ran, per reason; a snapshot
/// (fallback_policy::metrics()). `by_reason[r]` or `[r]` for one reason,
/// total() for all.
using fallback_metrics = reason_counts;
/// fallback_metrics under its former name.
using fallback_counts = reason_counts;

/// Options of a fallback_policy.
struct fallback_options {
    /// The reasons the fallback handles; a failure for any other passes
    /// through unchanged. Default: every reason.
    reason_set handles = reason_set::all();

    /// The invalid field, if any: `handles` must name at least one reason.
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const fallback_options&, const fallback_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result fallback_options::validate() const {
    if (!handles.empty()) return std::nullopt;
    return invalid_option{"handles", "must name at least one reason, got none"};
}
#endif

/// Plan B: turns a failed call into a value from `Fallback` (called with the
/// failed outcome, or with nothing) and counts every use by reason, so a silent
/// fallback cannot hide an outage. Thread-safe: the counts are atomic; the
/// fallback function is called from whichever thread failed, concurrently when
/// the pipeline is shared.
template <class Fallback>
class fallback_policy {
public:
    /// Reads no time (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::none;

    /// Throws std::invalid_argument when options.validate() names a field.
    explicit fallback_policy(Fallback fallback, fallback_options options = {})
        : fallback_(std::move(fallback)), options_(options), counters_(std::make_shared<counters>()) {
        throw_if_invalid("resil::fallback_policy", options_.validate());
    }

    /// The options it was built with.
    [[nodiscard]] const fallback_options& options() const noexcept { return options_; }

    /// Times the fallback ran for `r` so far.
    [[nodiscard]] std::uint64_t count(reason r) const noexcept {
        return counters_->by_reason[static_cast<std::size_t>(r)].load(std::memory_order_relaxed);
    }
    /// All counters at once: the times the fallback ran, per reason (a
    /// snapshot; each counter read relaxed).
    [[nodiscard]] fallback_metrics metrics() const noexcept {
        fallback_metrics c;
        for (std::size_t i = 0; i < reason_count; ++i) c.by_reason[i] = counters_->by_reason[i].load(std::memory_order_relaxed);
        return c;
    }
    /// metrics() under its former name.
    [[deprecated("use metrics(): the name every policy's counters have")]] [[nodiscard]] fallback_counts counts()
        const noexcept {
        return metrics();
    }

    /// As a pipeline policy: the steps below, driven blocking.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);
    }

    /// The policy's steps (policy_steps.hpp): nothing on the way in; on the
    /// way out, recover().
    template <class Context, class Outcome>
    struct call_state {};
    /// Its first step: nothing to do on the way in.
    template <class Context, class State>
    layer_in enter(Context&, State&) const noexcept {
        return layer_in::proceed();
    }
    /// Its last step: a failure whose reason it handles becomes the fallback's
    /// value, counted by reason (events::fallback_used).
    template <class Context, class State, class Outcome>
    layer_out leave(Context& ctx, State&, Outcome& out) const {
        recover(ctx, out);
        return layer_out::proceed();
    }

    /// The policy itself: turns a failed outcome the fallback handles into
    /// its value, counted and emitted as fallback_used.
    template <class Context, class Outcome>
    void recover(Context& ctx, Outcome& out) const {
        if (out.ok()) return;
        const auto why = out.reason();
        if (!options_.handles.contains(why)) return;  // declined: not this fallback's failure
        counters_->by_reason[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
        ctx.emit(events::fallback_used{why});
        if constexpr (std::is_invocable_v<const Fallback&, const Outcome&>)
            finish(out, [&] { return fallback_(std::as_const(out)); });
        else
            finish(out, [&] { return fallback_(); });
        ctx.clear_cached_now();  // plan B took time: a reading from before it is stale
    }

private:
    // A fallback returning void stands in for a callable returning void.
    template <class Outcome, class Call>
    static void finish(Outcome& out, Call&& call) {
        using produced = decltype(call());
        if constexpr (std::is_void_v<produced>) {
            static_assert(std::is_same_v<typename Outcome::value_type, unit>,
                          "resil::fallback_policy: a fallback returning void fits only a callable returning void; "
                          "return a value of the callable's result type");
            call();
            out.replace_with_fallback();
        } else {
            out.replace_with_fallback(call());
        }
    }

    struct counters {
        std::array<std::atomic<std::uint64_t>, reason_count> by_reason{};
    };
    Fallback fallback_;
    fallback_options options_;
    std::shared_ptr<counters> counters_;
};

}  // namespace resil
