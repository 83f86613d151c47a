// resil/http/dependency_options.hpp — everything one dependency of a service
// is: its name, where it lives (one URL or a balanced set of endpoints), how
// it is reached (the libcurl transport), the policies around each call and
// hedging. resil::http::dependency (resil/http/dependency.hpp) is built from
// it; resil::json reads it from a service file's section.
//
//   resil::http::dependency_options payments{
//       .name = "payments",
//       .endpoints = {{.address = "https://pay-a.internal", .idempotency_scope = "provider-a"},
//                     {.address = "https://pay-b.internal", .priority = 1, .idempotency_scope = "provider-b"}},
//       .transport = {.tls = {.ca_file = "/etc/ca.pem"}},
//       .deadline = {.budget = 2s},
//       .timeouts = {.connect = 100ms, .total = 800ms},
//   };
//   payments.balancing.endpoint_breaker = resil::circuit_breaker_options{};   // one breaker per provider
//
// Only the policies given take part: an empty optional is no policy (and no
// metrics series for it). Always present: the deadline, the per-attempt
// timeouts and the retry policy (max_attempts = 1 turns retries off).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../adaptive_limit.hpp"
#include "../balancer/endpoint.hpp"
#include "../balancer/health_check.hpp"
#include "../balancer/options.hpp"
#include "../circuit_breaker/options.hpp"
#include "../concurrency_limit.hpp"
#include "../deadline_policy.hpp"
#include "../fault_injection.hpp"
#include "../detail/platform.hpp"
#include "../hedge.hpp"
#include "../paced_bucket.hpp"
#include "../redis/options.hpp"
#include "../retry.hpp"
#include "../retry_budget.hpp"
#include "../timeouts.hpp"
#include "../token_bucket.hpp"
#include "../validation.hpp"
#include "../curl/options.hpp"

namespace resil::http {

/// Active health checks of a dependency's endpoints: a GET of `path` on each
/// endpoint's address, every `probe.interval`; a 2xx passes.
struct health_check_settings {
    /// The probe's interval, timeout and thresholds.
    resil::health_check_options probe{};
    /// Appended to each endpoint's address ("/healthz"); must start with '/'.
    std::string path = "/healthz";

    /// The first invalid field of `probe` or `path`, with its path; nothing when valid.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
    /// Field-by-field equality.
    friend bool operator==(const health_check_settings&, const health_check_settings&) = default;
};

/// One dependency, declared once (see the banner).
struct dependency_options {
    /// The dependency's name: the `dependency` label of its metrics and the
    /// name its events carry. Required: 1 to 64 characters of [a-z0-9_-]
    /// (Prometheus label values need no escaping then).
    std::string name{};

    /// Where it lives: one endpoint per replica, provider or region, each an
    /// address ("https://host:port", optionally with a base path) that a
    /// request's path is appended to. One endpoint for a plain URL. Failover
    /// groups are endpoint::priority; providers that do not share a store of
    /// idempotency keys name different endpoint::idempotency_scope. Required:
    /// 1 to endpoint::max_endpoints. Changed at run time with
    /// dependency::replace_endpoints().
    std::vector<resil::endpoint> endpoints{};
    /// How endpoints are picked, ejected (outlier detection) and failed over,
    /// and a breaker per endpoint (`balancing.endpoint_breaker`). The hooks
    /// (on_ejected, on_returned) are the dependency's own: set ones are called too.
    balancer_options balancing{};
    /// Active health checks; none by default (outlier detection still ejects).
    std::optional<health_check_settings> health_check{};

    /// How servers are reached: TLS and mTLS, pinning, proxy, HTTP version,
    /// redirects, connection age and idle limits, body and header size
    /// limits, the idempotency key header (resil::curl::client_options).
    curl::client_options transport{};

    /// The whole call, every attempt and wait included. Default 10 s.
    deadline_policy_options deadline{.budget = std::chrono::seconds{10}};
    /// Per attempt, clamped to what is left of the deadline. Default: none
    /// beyond the transport's limits.
    resil::timeouts timeouts{};
    /// Retries (budget pointer: the dependency's `retry_budget`). Default 3
    /// attempts, full jitter 100 ms .. 1 s.
    retry_options retry{};
    /// The share of calls that may be retries (Finagle's budget). On by default.
    std::optional<retry_budget_options> retry_budget = retry_budget_options{};
    /// One breaker for the whole dependency; none by default (for one per
    /// endpoint, set balancing.endpoint_breaker).
    std::optional<circuit_breaker_options> circuit_breaker{};
    /// A fixed limit on calls in flight; none by default.
    std::optional<concurrency_limit_options> concurrency_limit{};
    /// A limit on calls in flight learnt from latency (Netflix's gradient);
    /// none by default. At most one of concurrency_limit and adaptive_limit.
    std::optional<adaptive_limit_options> adaptive_limit{};
    /// A rate this process keeps to, slowed to what the server's RateLimit,
    /// X-RateLimit-* and Retry-After fields say is left; none by default.
    std::optional<paced_bucket_options> pacing{};
    /// A quota of this process (a token bucket); none by default.
    std::optional<token_bucket_options> quota{};
    /// A quota shared by every process through Redis (resil::redis, GCRA);
    /// none by default. Needs the resil::redis CMake target and
    /// resil/http/redis_quota.hpp included where the dependency is built.
    std::optional<redis::rate_limiter_options> shared_quota{};
    /// Hedged requests (a copy after a delay, to another endpoint), for
    /// repeatable requests only; none by default. The hedges draw on the
    /// retry budget.
    std::optional<hedge_options> hedge{};
    /// Faults injected on purpose (resil::fault_injection: added latency, a
    /// failure, for every call or a tagged share), to check in staging that
    /// the retries, the breaker and the caller's plan B work; none by
    /// default, and nothing is injected unless `faults->enabled`. Innermost:
    /// inside the retry, the breaker, the limits and the quotas, outside the
    /// per-attempt timeouts and the balanced attempt (an injected failure
    /// never reaches a server, nor an endpoint's breaker or ejection).
    std::optional<fault_injection_options> faults{};

    /// The first invalid field, named from here ("`retry.max_attempts` must
    /// be in [1, 100], got 0", "`endpoints[2].address` must ..."), or nothing.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
};

}  // namespace resil::http

#if RESIL_DETAIL_BODIES
#include "detail/dependency_options_impl.hpp"
#endif
