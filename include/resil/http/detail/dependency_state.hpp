// resil/http/detail/dependency_state.hpp — what one resil::http::dependency
// holds, shared by its blocking face and its Asio faces: the balancer, the
// policies configured, the metrics, the pool of libcurl clients; and the
// one list of layers both pipelines are built from. Header-only (the Asio
// face instantiates templates over it in every mode).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "../../adaptive_limit.hpp"
#include "../../balancer.hpp"
#include "../../circuit_breaker.hpp"
#include "../../concurrency_limit.hpp"
#include "../../curl/classification.hpp"
#include "../../curl/client.hpp"
#include "../../curl/request.hpp"
#include "../../deadline_policy.hpp"
#include "../../events.hpp"
#include "../../fault_injection.hpp"
#include "../../hedge.hpp"
#include "../../metrics.hpp"
#include "client_pool.hpp"
#include "../../optional_policy.hpp"
#include "../../paced_bucket.hpp"
#include "../../pipeline.hpp"
#include "../../rate_limit_decision.hpp"
#include "../../retry.hpp"
#include "../../retry_budget.hpp"
#include "../../timeout_policy.hpp"
#include "../../token_bucket.hpp"
#include "../dependency_options.hpp"
#include "../response.hpp"

namespace resil::http::detail {

/// A quota kept outside this process (resil/http/redis_quota.hpp provides
/// the Redis one): asked once per attempt, blocking, within the call's
/// deadline and stop token. Thread-safe.
class shared_quota {
public:
    virtual ~shared_quota() = default;
    /// One permit, or why not: granted, rejected (with the wait), or what the
    /// store's failure policy answered (decided_by::fallback).
    [[nodiscard]] virtual rate_limit_decision admit(time_point deadline, std::stop_token stop) const = 0;
    /// Lets `m` read the store's figures at export time (decisions by
    /// source, connection state): resil::metrics::watch_quota.
    virtual void watched_by(resil::metrics& m) const = 0;
};

/// Makes the shared quota of a dependency; set by resil/http/redis_quota.hpp.
using shared_quota_factory = std::unique_ptr<shared_quota> (*)(const redis::rate_limiter_options&);
/// The factory registered (null until resil/http/redis_quota.hpp is in the program).
inline shared_quota_factory& shared_quota_maker() noexcept {
    static shared_quota_factory maker = nullptr;
    return maker;
}

/// What a call does with a shared quota's decision, in both pipelines: the
/// Redis limiter's own verdict as a pipeline policy (events::rejected, and
/// events::quota_store_failed for every decision Redis could not make).
template <class Context>
layer_in shared_quota_verdict(Context& ctx, const rate_limit_decision& d) {
    ctx.clear_cached_now();  // a round trip took time
    if (d.source == decided_by::fallback)
        ctx.emit(events::quota_store_failed{d.status != rate_limit_status::unavailable, d.granted()});
    if (d) return layer_in::proceed();
    const auto why = d.status == rate_limit_status::unavailable ? reason::quota_unavailable
                     : d.status == rate_limit_status::no_time   ? reason::deadline_exceeded
                     : d.status == rate_limit_status::cancelled ? reason::cancelled
                                                                : reason::rate_limited;
    std::optional<duration> after;
    if (why == reason::rate_limited) after = d.wait;
    ctx.emit(events::rejected{why, after});
    return layer_in::refuse(why, after);
}

/// The shared quota as a layer of the blocking pipeline (steps): a permit
/// per attempt, or reason::rate_limited (reason::quota_unavailable failing
/// closed, reason::deadline_exceeded with no time left to ask).
struct shared_quota_layer {
    const shared_quota* quota = nullptr;

    template <class Context, class Outcome>
    struct call_state {};

    template <class Context, class State>
    layer_in enter(Context& ctx, State&) const {
        if (quota == nullptr) return layer_in::proceed();
        return shared_quota_verdict(ctx, quota->admit(ctx.deadline_instant(), ctx.stop_token()));
    }
    template <class Context, class State, class Outcome>
    layer_out leave(Context&, State&, Outcome&) const {
        return layer_out::proceed();
    }
};

/// The layers of every call, outermost first (docs/dependency.md): the same
/// list for both pipelines, each policy there or not. Faults are injected
/// innermost, just outside the per-attempt timeouts (docs/fault_injection.md,
/// "Ordering"): every policy above sees an injected failure as a real one.
template <class Quota, class Make>
auto make_layers(const deadline_policy& deadline, const retry_policy& retry,
                 const std::optional<circuit_breaker>& breaker, const std::optional<concurrency_limit>& limit,
                 const std::optional<adaptive_limit>& adaptive, const std::optional<paced_bucket>& pacing,
                 const std::optional<token_bucket>& quota, Quota shared, const std::optional<fault_injection>& faults,
                 const timeout_policy& timeouts, Make make) {
    return make(std::cref(deadline), std::cref(retry), optional_policy{breaker}, optional_policy{limit},
                optional_policy{adaptive}, optional_policy{pacing}, optional_policy{quota}, std::move(shared),
                optional_policy{faults}, std::cref(timeouts));
}

/// The blocking pipeline of a dependency's calls, its metrics the listener.
inline auto make_blocking_pipeline(const deadline_policy& deadline, const retry_policy& retry,
                                   const std::optional<circuit_breaker>& breaker,
                                   const std::optional<concurrency_limit>& limit,
                                   const std::optional<adaptive_limit>& adaptive,
                                   const std::optional<paced_bucket>& pacing, const std::optional<token_bucket>& quota,
                                   shared_quota_layer shared, const std::optional<fault_injection>& faults,
                                   const timeout_policy& timeouts, resil::metrics& m) {
    return make_layers(deadline, retry, breaker, limit, adaptive, pacing, quota, shared, faults, timeouts,
                       [&](auto... layers) { return resil::pipeline(std::move(layers)...).with_listener(std::ref(m)); });
}

struct dependency_state {
    dependency_options options;
    resil::metrics metrics;
    // Built in this order, never moved (the state is on the heap): the
    // pipelines point at them.
    std::optional<retry_budget> budget;
    deadline_policy deadline;
    retry_policy retry;
    std::optional<circuit_breaker> breaker;
    std::optional<concurrency_limit> limit;
    std::optional<adaptive_limit> adaptive;
    std::optional<paced_bucket> pacing;
    std::optional<token_bucket> quota;
    std::unique_ptr<shared_quota> shared;
    std::optional<fault_injection> faults;
    timeout_policy timeouts;
    std::optional<hedge_policy> hedge;
    resil::balancer lb;
    curl::client_options curl_options;

    static auto blocking_pipeline(const dependency_state& s) {
        return make_blocking_pipeline(s.deadline, s.retry, s.breaker, s.limit, s.adaptive, s.pacing, s.quota,
                                      shared_quota_layer{s.shared.get()}, s.faults, s.timeouts,
                                      const_cast<resil::metrics&>(s.metrics));
    }
    using blocking_pipeline_type = decltype(make_blocking_pipeline(
        std::declval<const deadline_policy&>(), std::declval<const retry_policy&>(),
        std::declval<const std::optional<circuit_breaker>&>(), std::declval<const std::optional<concurrency_limit>&>(),
        std::declval<const std::optional<adaptive_limit>&>(), std::declval<const std::optional<paced_bucket>&>(),
        std::declval<const std::optional<token_bucket>&>(), shared_quota_layer{},
        std::declval<const std::optional<fault_injection>&>(), std::declval<const timeout_policy&>(),
        std::declval<resil::metrics&>()));
    std::optional<blocking_pipeline_type> blocking;

    // Health checks: a checker probing on a thread of its own.
    std::unique_ptr<curl::client> probe_client;
    std::unique_ptr<health_checker> checker;
    std::unique_ptr<health_check_thread> checker_thread;

    // libcurl clients not in use (as resil::http::client's pool).
    client_pool pool;  // the blocking face's libcurl clients

    explicit dependency_state(dependency_options o);
    ~dependency_state();
    dependency_state(const dependency_state&) = delete;
    dependency_state& operator=(const dependency_state&) = delete;

    /// The libcurl request of one attempt at `ep`.
    static curl::request to_curl(const request& req, const endpoint& ep) {
        curl::request r{req.method, ep.address + req.path};
        const bool without_content = req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS" ||
                                     req.method == "TRACE" || req.method == "DELETE";
        if (!req.body.empty() || !without_content) r.set_body(req.body);
        for (const auto& [n, v] : req.headers) r.add_header(n, v);
        return r;
    }

    /// After each transfer: the server's rate-limit fields pace the next
    /// calls. (The pacing layer reads them itself from a bare
    /// curl::response; the balanced attempt's result is an outcome of one.)
    void observe(const curl::response& r) {
        if (!pacing) return;
        if (const auto change = pacing->observe(resil::detail::fields_lookup<curl::response>{&r},
                                                pacing->clock().now(), std::chrono::system_clock::now()))
            metrics(*change);
    }
};

}  // namespace resil::http::detail
