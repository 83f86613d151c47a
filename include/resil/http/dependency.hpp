// resil/http/dependency.hpp — one dependency of a service, declared once
// (resil::http::dependency_options) and shared by every thread: its
// endpoints behind a balancer, its transport, its policies, its metrics; a
// blocking face here and an Asio face over the same state
// (resil/http/async_dependency.hpp).
//
//   resil::http::dependency payments{{
//       .name = "payments",
//       .endpoints = {{.address = "https://pay-a.internal", .idempotency_scope = "a"},
//                     {.address = "https://pay-b.internal", .priority = 1, .idempotency_scope = "b"}},
//       .deadline = {.budget = 2s},
//       .timeouts = {.connect = 100ms, .total = 800ms},
//   }};
//   auto r = payments.post("/v1/charges", R"({"amount":100})", {{"Content-Type", "application/json"}});
//   if (!r) plan_b(r.reason());                     // counted in payments.metrics()
//   else log(r.endpoint(), r.attempts(), r.header("Location"));
//
// Each call runs deadline → retry (with the retry budget) → the whole
// dependency's breaker → a concurrency or adaptive limit → pacing to the
// server's rate-limit fields → a quota (local token bucket, or the shared
// one in Redis) → per-attempt timeouts → the balanced attempt
// (resil::call_endpoint: an endpoint picked per attempt, away from the
// endpoints the call tried, its own breaker asked first, ejected on
// consecutive failures). A policy not configured is not in the way
// (resil::optional_policy). An operation that may not be repeated reaches
// a server at most once; a POST carries one idempotency key across its
// attempts and stays in the idempotency scope of the endpoint that may
// have acted on it. Hedging (dependency_options::hedge) runs on the Asio
// face only: a blocking call cannot run copies side by side, and ignores
// the hedge options (docs/dependency.md).
//
// Needs the resil::curl CMake target. The bodies follow resil::http::client's
// packaging: header-only by default, or compiled once with
// RESIL_SEPARATE_COMPILATION (<resil/curl/separate_compilation.hpp>).
//
// Thread-safety: every member function may be called from any thread at
// once, replace_endpoints() included. Each blocking call borrows a libcurl
// client (and its kept-alive connections) from the dependency's pool.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../balancer/balancer.hpp"
#include "../balancer/endpoint.hpp"
#include "../detail/platform.hpp"
#include "../metrics.hpp"
#include "dependency_options.hpp"
#include "response.hpp"

namespace resil::http {

namespace detail {
struct dependency_state;
}  // namespace detail
class async_dependency;  // resil/http/async_dependency.hpp

/// A request to a dependency: a path appended to the picked endpoint's
/// address, and what goes with it.
struct request {
    /// An RFC 9110 token. Idempotent as RFC 9110 says (GET, HEAD, OPTIONS,
    /// TRACE, PUT, DELETE): retried and hedged after any retryable failure;
    /// any other carries an idempotency key (transport.idempotency_key_header),
    /// the same on every attempt.
    std::string method = "GET";
    /// Appended to the endpoint's address: "/v1/items?id=4" (empty: the address itself).
    std::string path{};
    /// Sent as the content; a method that may carry content sends it even when
    /// empty (Content-Length: 0).
    std::string body{};
    /// Header fields sent with it (name, value), after the transport's own.
    std::vector<std::pair<std::string, std::string>> headers{};
    /// The call's fault tag (resil::context::fault_tag): a tagged
    /// dependency_options::faults injects only into calls carrying its tag
    /// (a staging request's header copied here). Empty by default.
    std::string fault_tag{};
};

/// One dependency of a service, declared once and shared by every thread
/// (see the banner): its endpoints, transport, policies and metrics, with a
/// blocking face here and an Asio face (on()).
class dependency {
public:
    /// Builds the balancer, health checks, policies and metrics. Throws
    /// std::invalid_argument("resil::http::dependency: `field` must be ...")
    /// when options.validate() names a field, and when shared_quota is set
    /// in a program that does not include resil/http/redis_quota.hpp.
    RESIL_DECL explicit dependency(dependency_options options);

    /// Takes over `other`'s state; `other` may only be destroyed or assigned to.
    RESIL_DECL dependency(dependency&& other) noexcept;
    /// Takes over `other`'s state (no call may be in flight on this one).
    RESIL_DECL dependency& operator=(dependency&& other) noexcept;
    dependency(const dependency&) = delete;
    dependency& operator=(const dependency&) = delete;
    /// Stops the health checks. No call may be in flight.
    RESIL_DECL ~dependency();

    /// A GET of `path` (idempotent).
    [[nodiscard]] response get(std::string_view path, std::initializer_list<header> headers = {}) {
        return get(path, std::span<const header>(headers.begin(), headers.size()));
    }
    /// A POST of `body` to `path` (keyed: one key for every attempt).
    [[nodiscard]] response post(std::string_view path, std::string_view body,
                                std::initializer_list<header> headers = {}) {
        return post(path, body, std::span<const header>(headers.begin(), headers.size()));
    }
    /// A GET with headers made at run time; each must live until the call returns.
    [[nodiscard]] RESIL_DECL response get(std::string_view path, std::span<const header> headers);
    /// A POST with headers made at run time; each must live until the call returns.
    [[nodiscard]] RESIL_DECL response post(std::string_view path, std::string_view body,
                                           std::span<const header> headers);
    /// Any request. Throws std::invalid_argument for a bad method or header, before any I/O.
    [[nodiscard]] RESIL_DECL response perform(const request& req);

    /// A discovery update: the endpoints from now on. An endpoint that stays
    /// (same address) keeps its state (latency, ejection, its breaker); the
    /// dependency's breaker, budget, limits, quotas and metrics are kept.
    /// Calls in flight finish on the endpoints they picked. Throws
    /// std::invalid_argument (`endpoints[i].address` ...) for a bad list,
    /// which changes nothing.
    RESIL_DECL void replace_endpoints(std::vector<endpoint> endpoints);

    /// The dependency's metrics, named by it (the `dependency` label):
    /// calls, attempts, rejections by reason, its breakers' transitions,
    /// ejections and returns.
    [[nodiscard]] RESIL_DECL resil::metrics& metrics() const;
    /// The balancer (its status(), metrics(); even for one endpoint).
    [[nodiscard]] RESIL_DECL const resil::balancer& balancer() const;
    /// The options it was built with (endpoints: as given at construction).
    [[nodiscard]] RESIL_DECL const dependency_options& options() const;
    /// A face for asynchronous calls on `executor` (an io_context, or an
    /// executor): resil::http::async_dependency, sharing this dependency's
    /// state. Needs resil/http/async_dependency.hpp (resil::asio).
    template <class Executor, class Face = async_dependency>
    [[nodiscard]] Face on(Executor&& executor) const {
        return Face(*this, std::forward<Executor>(executor));
    }

    /// The shared state, for the Asio face (resil/http/async_dependency.hpp).
    [[nodiscard]] RESIL_DECL detail::dependency_state& state() const;

private:
    detail::dependency_state* state_;  // owned; null once moved from
};

}  // namespace resil::http

#if RESIL_DETAIL_BODIES
#include "detail/dependency_impl.hpp"
#endif
