// resil/http/detail/async_shared_quota.hpp — the shared quota of a
// dependency on its Asio face: what resil/http/async_redis_quota.hpp
// provides, and its layer in the asynchronous pipeline. Needs resil::asio
// (the http component itself never needs hiredis: the Redis side registers
// itself here).
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <memory>
#include <stop_token>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include "../../clock.hpp"
#include "../../policy_steps.hpp"
#include "../../rate_limit_decision.hpp"
#include "dependency_state.hpp"

namespace resil::http::detail {

/// A shared quota asked without blocking a thread: one per Asio face (its
/// connection runs on the face's executor), deciding for the dependency's
/// shared_quota (the same key, lease, fallback bucket and counters).
class async_shared_quota {
public:
    virtual ~async_shared_quota() = default;
    /// One permit, or why not, as shared_quota::admit, awaited.
    [[nodiscard]] virtual ::asio::awaitable<rate_limit_decision> admit(time_point deadline,
                                                                      std::stop_token stop) const = 0;
};

/// Makes the Asio face of a dependency's shared quota on an executor; set by
/// resil/http/async_redis_quota.hpp.
using async_shared_quota_factory = std::unique_ptr<async_shared_quota> (*)(const shared_quota&,
                                                                           const ::asio::any_io_executor&);
/// The factory registered (null until resil/http/async_redis_quota.hpp is in the program).
inline async_shared_quota_factory& async_shared_quota_maker() noexcept {
    static async_shared_quota_factory maker = nullptr;
    return maker;
}

/// The shared quota as a layer of resil::asio::pipeline (steps): enter()
/// asks for the round trip, async_wait() awaits it, waited() gives the
/// blocking layer's verdict (shared_quota_verdict): the same reasons and
/// events on both faces.
struct async_shared_quota_layer {
    const async_shared_quota* quota = nullptr;

    /// The decision, between the round trip and the verdict.
    struct admission {
        rate_limit_decision decision{};
    };
    template <class Context, class Outcome>
    using call_state = admission;

    template <class Context>
    layer_in enter(Context& ctx, admission&) const {
        if (quota == nullptr) return layer_in::proceed();
        return layer_in::wait_until(ctx.deadline_instant());  // the "wait" is the round trip (async_wait)
    }
    template <class Context>
    ::asio::awaitable<bool> async_wait(Context& ctx, admission& a, time_point) const {
        a.decision = co_await quota->admit(ctx.deadline_instant(), ctx.stop_token());
        co_return true;
    }
    template <class Context>
    layer_in waited(Context& ctx, admission& a, bool) const {
        return shared_quota_verdict(ctx, a.decision);
    }
    template <class Context, class Outcome>
    layer_out leave(Context&, admission&, Outcome&) const noexcept {
        return layer_out::proceed();
    }
};

}  // namespace resil::http::detail
