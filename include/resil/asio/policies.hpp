// resil/asio/policies.hpp — resil's policies in the asynchronous pipeline.
//
// Each one runs the decision core its blocking execute() runs (retry's loop,
// the breaker's enter/leave, the bucket's reservation, ...), with the same
// options, the same shared state and the same events; only the waiting
// differs: a timer (resil/asio/waiter.hpp) instead of a sleep. So one
// breaker, bucket, budget or limit serves blocking and asynchronous callers
// at once.
//
// resil's own policies are layers (async_layer<P> below): synchronous steps
// on the way in (enter) and out (leave) of the rest of the pipeline, and
// waits the pipeline's one coroutine awaits for them. A whole call through
// any number of them is one coroutine frame, not one per policy.
//
// A policy of your own joins by having a member
//
//   template <class Context, class Next>
//   auto async_execute(Context& ctx, Next next) const -> decltype(next(ctx)) {
//       ...                                   // before the rest of the pipeline
//       auto out = co_await next(ctx);        // a resil::outcome<T>
//       ...                                   // after
//       co_return out;
//   }
//
// next(ctx) runs the policies inside it and the callable (in a coroutine of
// their own), and completes with their outcome; to refuse the call, return
// resil::asio::outcome_of_t<Next, Context>::rejected(reason) instead.
#pragma once

#include "config.hpp"  // first: before any Asio header

#include <optional>
#include <type_traits>
#include <utility>

#include <asio/awaitable.hpp>

#include "../circuit_breaker.hpp"
#include "../concurrency_limit.hpp"
#include "../deadline_policy.hpp"
#include "../fallback.hpp"
#include "../outcome.hpp"
#include "../retry.hpp"
#include "../timeout_policy.hpp"
#include "../token_bucket.hpp"
#include "waiter.hpp"

namespace resil::asio {

namespace detail {
template <class A>
struct awaited;
template <class T, class Executor>
struct awaited<::asio::awaitable<T, Executor>> {
    using type = T;
};
/// The outcome type a `next(ctx)` of the asynchronous pipeline completes with.
template <class Next, class Context>
using next_outcome_t = typename awaited<std::invoke_result_t<Next&, Context&>>::type;

template <class>
inline constexpr bool always_false = false;
}  // namespace detail

/// The resil::outcome<T> that `next(ctx)` completes with, in a policy's
/// async_execute: `using result = resil::asio::outcome_of_t<Next, Context>;`
/// then `co_return result::rejected(reason::shed);` refuses the call.
template <class Next, class Context>
using outcome_of_t = detail::next_outcome_t<Next, Context>;

/// What a layer says on the way in: go on inward, stop (the outcome is
/// set: a rejection), or wait until an instant first (then waited()).
enum class layer_in : unsigned char { proceed, stop, wait };
/// What a layer says on the way out: go on outward, or wait (retry's
/// backoff) and then ask retried() whether to run the inner layers again.
enum class layer_out : unsigned char { proceed, wait };

/// How the asynchronous pipeline runs policy P. The primary template is a
/// policy of the user's: its member async_execute, run as a coroutine around
/// the rest of the pipeline. resil's policies are specialised as layers:
///
///   template <class Ctx, class Out> struct state;       // per call, default-constructible
///   static layer_in enter(const P&, Ctx&, State&, std::optional<Out>& out, time_point& until);
///   static layer_in waited(const P&, Ctx&, State&, std::optional<Out>& out, bool reached);   // if it waits
///   static asio::awaitable<bool> wait(const P&, Ctx&, State&, time_point until);              // optional
///
/// A layer's wait is until `until` on the call's clock (the pipeline's
/// waiter), unless the layer has a wait() of its own: then the pipeline
/// awaits that (the Redis limiter's round trip, resil/redis/asio_rate_limiter.hpp).
///   static layer_out leave(const P&, Ctx&, State&, std::optional<Out>& out, duration& wait);
///   static bool retried(const P&, Ctx&, State&, std::optional<Out>& out, bool waited_all);    // if it retries
template <class P>
struct async_layer {
    static constexpr bool nested = true;

    template <class Context, class Next>
    static auto run(const P& policy, Context& ctx, Next next) -> decltype(next(ctx)) {
        if constexpr (requires { policy.async_execute(ctx, std::move(next)); }) {
            return policy.async_execute(ctx, std::move(next));
        } else {
            static_assert(detail::always_false<P>,
                          "resil::asio: this policy has no asynchronous form. Give it a member "
                          "`template <class Context, class Next> auto async_execute(Context& ctx, Next next) const "
                          "-> decltype(next(ctx)) { auto out = co_await next(ctx); co_return out; }` (see "
                          "resil/asio/policies.hpp)");
        }
    }
};

template <>
struct async_layer<retry_policy> {
    static constexpr bool nested = false;
    template <class Ctx, class Out>
    struct state {
        std::optional<retry_policy::loop<Out>> loop;  // from the first failed attempt on
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const retry_policy& policy, Ctx& ctx, S& s, std::optional<Out>&, time_point&) {
        if (!s.loop) policy.begin(ctx);  // again after a wait: waited() numbered the attempt
        return layer_in::proceed;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const retry_policy& policy, Ctx& ctx, S& s, std::optional<Out>& out, duration& wait) {
        if (!s.loop) {
            if (out->ok() || !out->attempted()) return layer_out::proceed;  // an inner rejection, as is
            s.loop.emplace(std::move(*out));
        } else if (s.loop->next_attempt(std::move(*out))) {
            return finish(s, out);
        }
        const auto d = s.loop->judge(ctx, policy);
        if (!d) return finish(s, out);
        out.reset();
        wait = *d;
        return layer_out::wait;
    }
    template <class Ctx, class S, class Out>
    static bool retried(const retry_policy&, Ctx& ctx, S& s, std::optional<Out>& out, bool waited_all) {
        if (s.loop->waited(ctx, waited_all)) return true;
        finish(s, out);
        return false;
    }

private:
    template <class S, class Out>
    static layer_out finish(S& s, std::optional<Out>& out) {
        out.reset();
        out.emplace(s.loop->take());
        s.loop.reset();
        return layer_out::proceed;
    }
};

template <class Clock>
struct async_layer<basic_circuit_breaker<Clock>> {
    static constexpr bool nested = false;
    using breaker = basic_circuit_breaker<Clock>;
    template <class Ctx, class Out>
    struct state {
        std::optional<typename breaker::admission> call;  // a probe's is given back if the call unwinds
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const breaker& b, Ctx& ctx, S& s, std::optional<Out>& out, time_point&) {
        s.call.emplace(b.enter(ctx));
        if (*s.call) return layer_in::proceed;
        out.emplace(Out::rejected(reason::circuit_open, s.call->retry_after()));
        s.call.reset();
        return layer_in::stop;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const breaker& b, Ctx& ctx, S& s, std::optional<Out>& out, duration&) {
        b.leave(ctx, *s.call, *out);
        s.call.reset();
        return layer_out::proceed;
    }
};

template <class Clock>
struct async_layer<basic_token_bucket<Clock>> {
    static constexpr bool nested = false;
    using bucket = basic_token_bucket<Clock>;
    template <class Ctx, class Out>
    struct state {
        std::optional<typename bucket::admission> step;
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const bucket& b, Ctx& ctx, S& s, std::optional<Out>& out, time_point& until) {
        s.step.emplace(b.enter(ctx));
        if (s.step->waits()) {
            until = s.step->until();
            return layer_in::wait;  // on the bucket's clock, which is the context's time line
        }
        return admitted(s, out);
    }
    template <class Ctx, class S, class Out>
    static layer_in waited(const bucket& b, Ctx& ctx, S& s, std::optional<Out>& out, bool reached) {
        if (!b.waited(ctx, *s.step, reached)) {
            s.step.reset();
            out.emplace(Out::rejected(reason::cancelled));
            return layer_in::stop;
        }
        return admitted(s, out);
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const bucket&, Ctx&, S&, std::optional<Out>&, duration&) {
        return layer_out::proceed;
    }

private:
    template <class S, class Out>
    static layer_in admitted(S& s, std::optional<Out>& out) {
        const bool ok = static_cast<bool>(*s.step);
        if (!ok) out.emplace(Out::rejected(s.step->reason(), s.step->retry_after()));
        s.step.reset();
        return ok ? layer_in::proceed : layer_in::stop;
    }
};

template <>
struct async_layer<concurrency_limit> {
    static constexpr bool nested = false;
    template <class Ctx, class Out>
    struct state {
        concurrency_limit::permit held;  // released however the call ends
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const concurrency_limit& limit, Ctx& ctx, S& s, std::optional<Out>& out, time_point&) {
        s.held = limit.enter(ctx);
        if (s.held) return layer_in::proceed;
        out.emplace(Out::rejected(reason::shed));
        return layer_in::stop;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const concurrency_limit&, Ctx&, S& s, std::optional<Out>&, duration&) {
        s.held.release();
        return layer_out::proceed;
    }
};

namespace detail {
// Puts back what a layer changed in the context, however the call ends.
template <class Ctx>
struct restore_deadline {
    restore_deadline(Ctx& c, time_point t) : ctx(&c), outer(t) {}
    restore_deadline(const restore_deadline&) = delete;
    restore_deadline& operator=(const restore_deadline&) = delete;
    ~restore_deadline() { ctx->set_deadline_instant(outer); }
    Ctx* ctx;
    time_point outer;
};
template <class Ctx>
struct restore_timeouts {
    restore_timeouts(Ctx& c, const resil::timeouts& t) : ctx(&c), outer(t) {}
    restore_timeouts(const restore_timeouts&) = delete;
    restore_timeouts& operator=(const restore_timeouts&) = delete;
    ~restore_timeouts() { ctx->set_timeouts(outer); }
    Ctx* ctx;
    resil::timeouts outer;
};
}  // namespace detail

template <>
struct async_layer<deadline_policy> {
    static constexpr bool nested = false;
    template <class Ctx, class Out>
    struct state {
        std::optional<detail::restore_deadline<Ctx>> outer;  // so that one inside a retry bounds each attempt
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const deadline_policy& policy, Ctx& ctx, S& s, std::optional<Out>& out, time_point&) {
        s.outer.emplace(ctx, ctx.deadline_instant());
        if (policy.enter(ctx)) return layer_in::proceed;
        s.outer.reset();
        out.emplace(Out::rejected(reason::deadline_exceeded));
        return layer_in::stop;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const deadline_policy& policy, Ctx& ctx, S& s, std::optional<Out>& out, duration&) {
        policy.leave(ctx, *out);
        s.outer.reset();
        return layer_out::proceed;
    }
};

template <>
struct async_layer<timeout_policy> {
    static constexpr bool nested = false;
    template <class Ctx, class Out>
    struct state {
        std::optional<detail::restore_timeouts<Ctx>> outer;
    };

    template <class Ctx, class S, class Out>
    static layer_in enter(const timeout_policy& policy, Ctx& ctx, S& s, std::optional<Out>& out, time_point&) {
        if (!policy.admits(ctx)) {
            out.emplace(Out::rejected(reason::deadline_exceeded));
            return layer_in::stop;
        }
        s.outer.emplace(ctx, ctx.timeouts());
        ctx.set_timeouts(s.outer->outer.tightened_by(policy.timeouts()));
        return layer_in::proceed;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const timeout_policy&, Ctx&, S& s, std::optional<Out>&, duration&) {
        s.outer.reset();
        return layer_out::proceed;
    }
};

template <class Fallback>
struct async_layer<fallback_policy<Fallback>> {
    static constexpr bool nested = false;
    template <class Ctx, class Out>
    struct state {};

    template <class Ctx, class S, class Out>
    static layer_in enter(const fallback_policy<Fallback>&, Ctx&, S&, std::optional<Out>&, time_point&) {
        return layer_in::proceed;
    }
    template <class Ctx, class S, class Out>
    static layer_out leave(const fallback_policy<Fallback>& policy, Ctx& ctx, S&, std::optional<Out>& out, duration&) {
        policy.recover(ctx, *out);
        return layer_out::proceed;
    }
};

}  // namespace resil::asio
