// resil/balancing/call.hpp — one attempt of a pipeline's call, sent to an
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
// 503 goes to another replica. The attempt's verdict is the endpoint's
// result: retryable and ambiguous verdicts (5xx, connect failures, timeouts)
// count towards ejection, success and permanent ones (the endpoint answered)
// end a run of failures. A failure that ends with the caller's own stop
// requested (a cancel, a hedge copy that lost) or the call's deadline passed
// says nothing about the endpoint: it is neither counted towards ejection nor
// recorded by the endpoint's breaker (its permit is released), as a hedge
// never reports a cancelled copy to a breaker. With per-endpoint breakers
// (balancer_options::endpoint_breaker), the picked endpoint's breaker is
// asked first; an endpoint it refuses is counted as tried and another is
// picked. Ejections and returns reach balancer_options::on_ejected and
// on_returned (a pipeline's listener is not told: the callable's context
// carries no listener; give those hooks the same listener object, e.g. a
// resil::log_listener, to log them with the pipeline's events). The pick reads the pipeline's clock reading (ctx.recent_now()); the
// latency is measured with one more reading after the call.
#pragma once

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

#include "../outcome.hpp"
#include "balancer.hpp"

namespace resil {

namespace detail {
struct adl_classify {
    template <class R>
    auto operator()(const R& r) const -> decltype(classify(r)) {
        return classify(r);
    }
};
}  // namespace detail

/// Picks an endpoint of `lb` (avoiding those in `tried`, and adding the one
/// picked), runs `fn(endpoint)` and records its latency and result. Returns
/// the result with `classify`'s verdict, or a rejection with
/// reason::no_endpoint when no endpoint is left.
/// An exception from `fn` propagates; the endpoint's in-flight count still ends.
template <class Context, class Fn, class Classifier = detail::adl_classify>
    requires std::invocable<Fn&, const endpoint&>
auto call_endpoint(const balancer& lb, Context& ctx, tried_endpoints& tried, Fn&& fn, Classifier&& classify = {})
    -> outcome<std::invoke_result_t<Fn&, const endpoint&>> {
    using result_type = outcome<std::invoke_result_t<Fn&, const endpoint&>>;
    // Each refusal by a breaker adds an endpoint to `tried`; the set's size bounds the loop.
    for (std::size_t refusals = 0; refusals <= endpoint::max_endpoints; ++refusals) {
        auto lease = lb.pick(ctx.recent_now(), &tried);
        if (!lease) break;
        tried.add(lease.id());
        circuit_breaker::permit permit;
        if (auto* breaker = lease.breaker()) {
            permit = breaker->try_acquire();
            if (!permit) {
                if (refusals + 1 >= lb.size()) break;  // every endpoint asked
                continue;
            }
        }
        auto value = std::invoke(fn, std::as_const(lease.target()));
        const classification c = std::invoke(classify, std::as_const(value));
        const auto now = ctx.now();
        const bool failed = c.verdict == verdict::retryable || c.verdict == verdict::ambiguous;
        if (failed && (ctx.stop_requested() || now >= ctx.deadline_instant())) {
            // The caller ended the call: nothing learnt about the endpoint.
            if (auto* breaker = lease.breaker()) breaker->release(permit);
            lease.release();
            return result_type::from_value(c, std::move(value));
        }
        if (auto* breaker = lease.breaker()) breaker->record(permit, c.verdict, now - lease.started());
        lease.finish(now, failed ? endpoint_result::failure : endpoint_result::success);
        return result_type::from_value(c, std::move(value));
    }
    return result_type::rejected(reason::no_endpoint);
}

}  // namespace resil
