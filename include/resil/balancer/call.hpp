// resil/balancer/call.hpp — one attempt of a pipeline's call, sent to an
// endpoint a balancer picks: the composition of balancing with retry,
// breaker, hedging and the curl adapter.
//
//   resil::tried_endpoints tried;                     // one per call: retries and hedges go elsewhere
//   auto out = pipe([&](resil::context& ctx) {
//       return resil::call_endpoint(lb, ctx, tried, [&](const resil::endpoint& ep) {
//           return client.perform(resil::curl::request::get(ep.address + "/v1/items"), ctx);
//       });                                           // classifier: found by ADL, or passed last
//   });
//   // out: an outcome of the attempt's outcome; reason::no_endpoint when none was left
//
// Inside the retry policy, every attempt picks again, preferring endpoints
// this call has not tried (Envoy's previous-hosts rule), so a retry after a
// 503 goes to another replica; when every usable endpoint of the chosen
// priority group was tried, the next group with an untried one takes it.
//
// At most once across scopes: an attempt that may have reached an endpoint
// (the classification is not `never_sent`) of a call that is not idempotent
// holds the call to that endpoint's idempotency scope (endpoint::
// idempotency_scope; by default its priority group): its later attempts go
// only there, and when none of that scope's endpoints can take one the
// attempt is rejected with reason::no_endpoint_in_scope. Another scope would
// not know the call's idempotency key, and would act on it again.
//
// The endpoint's result counts towards its ejection when
// endpoint_failure(result) says so (found by ADL: resil::curl's counts 5xx
// answers and transport failures, as Envoy's consecutive-5xx), else when the
// verdict is retryable or ambiguous. A failure that ends with the caller's
// own stop requested (a cancel, a hedge copy that lost) or the call's
// deadline passed says nothing about the endpoint: it is neither counted
// towards ejection nor recorded by the endpoint's breaker (its permit is
// released), as a hedge never reports a cancelled copy to a breaker. With
// per-endpoint breakers (balancer_options::endpoint_breaker), the picked
// endpoint's breaker is asked first; an endpoint it refuses is counted as
// tried and another is picked. Ejections and returns reach
// balancer_options::on_ejected and on_returned (a pipeline's listener is not
// told: the callable's context carries no listener; give those hooks the
// same listener object, e.g. a resil::log_listener, to log them with the
// pipeline's events). The pick reads the pipeline's clock reading
// (ctx.cached_now()); the latency is measured with one more reading after
// the call.
//
// The steps (detail::begin_endpoint_attempt, detail::end_endpoint_attempt)
// are shared with the asynchronous form, resil::asio::call_endpoint
// (resil/asio/call_endpoint.hpp).
#pragma once

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

#include "../outcome.hpp"
#include "../reason.hpp"
#include "balancer.hpp"

namespace resil {

namespace detail {

struct adl_classify {
    template <class R>
    auto operator()(const R& r) const -> decltype(classify(r)) {
        return classify(r);
    }
};

/// Whether a result counts against its endpoint: endpoint_failure(r) when
/// the result's namespace has one, else a retryable or ambiguous verdict.
template <class R>
[[nodiscard]] bool counts_against_endpoint(const R& r, const classification& c) noexcept {
    if constexpr (requires { { endpoint_failure(r) } -> std::convertible_to<bool>; })
        return static_cast<bool>(endpoint_failure(r));
    else
        return c.verdict == verdict::retryable || c.verdict == verdict::ambiguous;
}

/// One attempt's claim on an endpoint: its lease, its breaker's permit and
/// its place in the call's idempotency scope; or why there is none.
/// Leaving without end_endpoint_attempt() (an exception from the call)
/// leaves the scope as "may have been processed" and records nothing.
class endpoint_attempt {
public:
    endpoint_attempt() = default;
    endpoint_attempt(const endpoint_attempt&) = delete;
    endpoint_attempt& operator=(const endpoint_attempt&) = delete;
    endpoint_attempt(endpoint_attempt&& o) noexcept
        : lease(std::move(o.lease)),
          permit(std::move(o.permit)),
          tried(std::exchange(o.tried, nullptr)),
          refusal(o.refusal) {}
    endpoint_attempt& operator=(endpoint_attempt&&) = delete;
    ~endpoint_attempt() {
        if (tried != nullptr) tried->leave_scope(true);
    }

    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(lease); }

    endpoint_lease lease;
    circuit_breaker::permit permit;
    tried_endpoints* tried = nullptr;  ///< set while the attempt holds its place in the scope
    resil::reason refusal = reason::none;
};

/// Picks an endpoint for the next attempt of the call: preferring ones not
/// in `tried` (and adding the one picked), within the scope the call is held
/// to, past endpoints whose breaker refuses. An empty attempt says why.
template <class Context>
[[nodiscard]] endpoint_attempt begin_endpoint_attempt(const balancer& lb, Context& ctx, tried_endpoints& tried) {
    endpoint_attempt a;
    if (ctx.idempotent()) tried.mark_idempotent();
    // Each refusal (a breaker's, or a scope taken by another copy meanwhile)
    // adds an endpoint to `tried`; the set's size bounds the loop.
    for (std::size_t refusals = 0; refusals <= endpoint::max_endpoints; ++refusals) {
        auto lease = lb.pick(ctx.cached_now(), &tried);
        if (!lease) {
            a.refusal = lease.refusal();
            return a;
        }
        tried.add(lease.id());
        if (!tried.enter_scope(lease.scope())) continue;  // a copy sent meanwhile holds the call elsewhere
        if (auto* breaker = lease.breaker()) {
            a.permit = breaker->try_acquire();
            if (!a.permit) {
                tried.leave_scope(false);  // refused: nothing was sent
                if (refusals + 1 >= lb.size()) break;  // every endpoint asked
                continue;
            }
        }
        a.lease = std::move(lease);
        a.tried = &tried;
        return a;
    }
    const bool in_scope = tried.held_scope() != 0;
    a.refusal = in_scope ? reason::no_endpoint_in_scope : reason::no_endpoint;
    balancer_call_access::count_no_endpoint(lb, in_scope);
    return a;
}

/// Records the attempt's result: the endpoint's latency and result, its
/// breaker, and whether the call is now held to the endpoint's scope.
/// `cut_short`: the caller ended the attempt (a cancel, a losing hedge copy,
/// the call's deadline); a failure then says nothing about the endpoint.
template <class Context>
void end_endpoint_attempt(endpoint_attempt& a, Context& ctx, const classification& c, bool endpoint_failed,
                          bool cut_short) noexcept {
    if (ctx.idempotent()) a.tried->mark_idempotent();
    std::exchange(a.tried, nullptr)->leave_scope(!c.never_sent);
    const auto now = ctx.now();
    const bool failed = c.verdict == verdict::retryable || c.verdict == verdict::ambiguous;
    if (failed && (cut_short || now >= ctx.deadline_instant())) {
        if (auto* breaker = a.lease.breaker()) breaker->release(a.permit);
        a.lease.end_unrecorded();
        return;
    }
    if (auto* breaker = a.lease.breaker()) breaker->record(a.permit, c.verdict, now - a.lease.started());
    a.lease.record_and_end(now, endpoint_failed ? endpoint_result::failure : endpoint_result::success);
}

}  // namespace detail

/// Picks an endpoint of `lb` (avoiding those in `tried`, and adding the one
/// picked; within the call's idempotency scope once it is held to one), runs
/// `fn(endpoint)` and records its latency and result. Returns the result
/// with `classify`'s verdict, or a rejection with reason::no_endpoint (no
/// endpoint left) or reason::no_endpoint_in_scope (none left in the scope
/// the call is held to).
/// An exception from `fn` propagates; the endpoint's in-flight count still
/// ends, and the call stays held to the endpoint's scope.
template <class Context, class Fn, class Classifier = detail::adl_classify>
    requires std::invocable<Fn&, const endpoint&>
auto call_endpoint(const balancer& lb, Context& ctx, tried_endpoints& tried, Fn&& fn, Classifier&& classify = {})
    -> outcome<std::invoke_result_t<Fn&, const endpoint&>> {
    using result_type = outcome<std::invoke_result_t<Fn&, const endpoint&>>;
    auto attempt = detail::begin_endpoint_attempt(lb, ctx, tried);
    if (!attempt) return result_type::rejected(attempt.refusal);
    auto value = std::invoke(fn, std::as_const(attempt.lease.target()));
    const classification c = std::invoke(classify, std::as_const(value));
    detail::end_endpoint_attempt(attempt, ctx, c, detail::counts_against_endpoint(value, c), ctx.stop_requested());
    return result_type::from_value(c, std::move(value));
}

}  // namespace resil
