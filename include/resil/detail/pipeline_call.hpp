// resil/detail/pipeline_call.hpp — what both pipelines (resil/pipeline.hpp,
// resil/asio/pipeline.hpp) do around every call and every attempt, written
// once: the call's context (a caller's adopted and given back), a call
// cancelled before it starts, call_finished with its elapsed time, and an
// attempt's bookkeeping and classification.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "../clock.hpp"
#include "../context.hpp"
#include "../events.hpp"
#include "../outcome.hpp"

namespace resil::detail {

/// The context type a pipeline's policies see: the user's context plus the
/// pipeline's listener. The callable receives it as basic_context<Clock>&.
template <class Clock, class Listener>
class pipeline_context : public basic_context<Clock> {
public:
    pipeline_context(basic_context<Clock> base, Listener& listener)
        : basic_context<Clock>(std::move(base)), listener_(&listener) {}
    /// A fresh context on `clock` (a call the caller gave no context for).
    pipeline_context(Clock clock, Listener& listener)
        : basic_context<Clock>(std::move(clock)), listener_(&listener) {}

    template <class Event>
    constexpr void emit(const Event& event) const {
        resil::emit(*listener_, event);
    }
    template <class Event>
    static constexpr bool listens = listens_to<Listener, Event>;
    /// Whether attempt_finished carries the attempt's duration (two clock reads).
    static constexpr bool times_attempts = listener_times_attempts<Listener>;

    // Attempts that ran the callable; counted only when someone listens to
    // call_finished (outcome::attempts() is counted by the outcomes themselves).
    void count_attempt() noexcept {
        if constexpr (listens<events::call_finished>) ++attempts_;
    }
    [[nodiscard]] std::uint32_t attempts_run() const noexcept { return attempts_; }

private:
    Listener* listener_;
    std::uint32_t attempts_ = 0;
};

/// Whether a context type carries a listener that wants Event.
template <class Ctx, class Event>
constexpr bool context_listens() noexcept {
    if constexpr (requires { Ctx::template listens<Event>; })
        return Ctx::template listens<Event>;
    else
        return false;
}

/// Whether `Event` carries a duration: the listener asks for durations
/// (times_attempts) and listens to it. attempt_finished: the attempt's;
/// call_finished: the whole call's.
template <class Ctx, class Event>
constexpr bool context_times() noexcept {
    if constexpr (requires { Ctx::times_attempts; })
        return Ctx::times_attempts && context_listens<Ctx, Event>();
    else
        return false;
}

/// One call's context: made fresh on the pipeline's clock, or taken from the
/// caller (pipe.execute(ctx, ...)) and given back, with the call's final
/// state, however the call ends.
template <class Clock, class Listener>
class call_context {
public:
    using context_type = pipeline_context<Clock, Listener>;

    /// A fresh context, built in place.
    call_context(const Clock& clock, Listener& listener) : ctx_(clock, listener) {}
    /// The caller's context: one without a deadline takes the pipeline's
    /// clock, so that a caller-built context on a manual clock shares the
    /// pipeline's time line; a reading or attempt number from an earlier call
    /// stands for nothing in this one.
    call_context(basic_context<Clock>& given, const Clock& clock, Listener& listener)
        : ctx_(adopted(given, clock), listener), given_(&given) {}
    call_context(const call_context&) = delete;
    call_context& operator=(const call_context&) = delete;
    ~call_context() {
        if (!given_) return;
        *given_ = std::move(static_cast<basic_context<Clock>&>(ctx_));
        given_->clear_cached_now();  // a reading from inside the call is stale once it returns
    }

    [[nodiscard]] context_type& get() noexcept { return ctx_; }

private:
    static basic_context<Clock> adopted(basic_context<Clock>& given, const Clock& clock) {
        if (given.deadline_instant() == time_point::max()) given.set_clock(clock);
        given.clear_cached_now();
        given.set_attempt(0);
        return std::move(given);
    }

    context_type ctx_;
    basic_context<Clock>* given_ = nullptr;
};

/// A call whose stop token fired before it started runs nothing: true after
/// emitting rejected and call_finished (the caller returns
/// outcome::rejected(reason::cancelled)).
template <class Ctx>
inline bool refused_before_start(Ctx& ctx) {
    if (!ctx.stop_requested()) [[likely]]
        return false;
    ctx.emit(events::rejected{reason::cancelled, std::nullopt});
    ctx.emit(events::call_finished{reason::cancelled, 0, false, false});
    return true;
}

/// call_finished, once per call and last, with the call's elapsed time when
/// the listener times attempts (the start's reading is the one the outer
/// policies use too).
template <class Ctx>
class call_report {
public:
    explicit call_report(Ctx& ctx) : ctx_(&ctx) {
        if constexpr (timed) started_ = ctx.cached_now();
    }
    /// The call ends with `out`: call_finished is emitted.
    template <class Outcome>
    void finished(const Outcome& out) const {
        ctx_->emit(events::call_finished{out.ok() ? out.fallback_reason() : out.reason(), ctx_->attempts_run(),
                                         out.from_fallback(), false, elapsed()});
    }
    /// An exception nobody judged left the call.
    void threw() const { ctx_->emit(events::call_finished{reason::failed, ctx_->attempts_run(), false, true, elapsed()}); }

private:
    static constexpr bool timed = context_times<Ctx, events::call_finished>();
    duration elapsed() const {
        if constexpr (timed)
            return ctx_->clock().now() - started_;
        else
            return duration::zero();
    }
    Ctx* ctx_;
    [[no_unique_address]] std::conditional_t<timed, time_point, std::monostate> started_{};
};

/// An attempt begins: numbered (1 without a retry policy), counted,
/// attempt_started emitted. Returns its start's reading when the listener
/// times attempts. The callable takes time: the policies' reading stands for
/// neither its own readings nor the attempt's end, so it is dropped.
template <class Ctx>
inline time_point begin_attempt(Ctx& ctx) {
    if (ctx.attempt() == 0) ctx.set_attempt(1);
    ctx.count_attempt();
    ctx.emit(events::attempt_started{ctx.attempt()});
    time_point started{};
    if constexpr (context_times<Ctx, events::attempt_finished>()) started = ctx.cached_now();
    ctx.clear_cached_now();
    return started;
}

/// The attempt that began at `started` ended with `out`: its server hint
/// kept, attempt_finished emitted.
template <class Ctx, class Outcome>
inline void end_attempt(Ctx& ctx, time_point started, const Outcome& out) {
    ctx.clear_cached_now();
    ctx.set_last_hint(server_hint{out.retry_after(), out.dont_retry()});
    if constexpr (context_times<Ctx, events::attempt_finished>())
        ctx.emit(events::attempt_finished{ctx.attempt(), out.verdict(), ctx.now() - started});
    else
        ctx.emit(events::attempt_finished{ctx.attempt(), out.verdict(), duration::zero()});
}

/// The outcome of a callable's result `r`, judged by `classify`. The
/// classifier sees the object the callable returned, before it moves into
/// the outcome.
template <class T, class Classifier, class R>
inline outcome<T> judged_value(Classifier& classify, R&& r) {
    auto c = classification(std::invoke(classify, std::as_const(r)));
    return outcome<T>::from_value(std::move(c), std::forward<R>(r));
}

/// The outcome of a void callable that returned: a success, unless the
/// classifier takes resil::unit and says otherwise.
template <class T, class Classifier>
inline outcome<T> judged_void(Classifier& classify) {
    if constexpr (std::is_invocable_v<Classifier&, const unit&>)
        return outcome<T>::from_value(classification(std::invoke(classify, unit{})));
    else
        return outcome<T>::from_value(classification(verdict::success));
}

/// The outcome of an exception the classifier judges.
template <class T, class Classifier>
inline outcome<T> judged_exception(Classifier& classify, std::exception_ptr e) {
    auto c = classification(std::invoke(classify, std::as_const(e)));
    return outcome<T>::from_exception(std::move(e), c);
}

}  // namespace resil::detail
