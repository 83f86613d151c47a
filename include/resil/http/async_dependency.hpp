// resil/http/async_dependency.hpp — the Asio face of a resil::http::dependency:
// the same balancer, breakers, budget, limits, pacing, quota and metrics as
// its blocking calls, with calls in flight on one executor through a
// resil::curl::async_client of the face's own. Needs resil::curl and
// resil::asio.
//
//   resil::http::dependency pricing{options};           // shared by every thread
//   asio::io_context io{1};
//   auto face = pricing.on(io);                         // one per executor (thread)
//   asio::co_spawn(io, [&]() -> asio::awaitable<void> {
//       resil::http::response r = co_await face.async_get("/v1/prices/42", asio::use_awaitable);
//       ...
//   }, asio::detached);
//   face.async_perform({.method = "POST", .path = "/v1/quotes", .body = b},
//                      [](std::exception_ptr e, resil::http::response r) { ... });   // any completion token
//
// Each call runs the blocking face's layers (resil/http/dependency.hpp) in
// resil::asio::pipeline: deadline → retry (budget) → breaker → limit →
// pacing → quota → timeouts → resil::asio::call_endpoint. With
// dependency_options::hedge, each attempt is a hedged group
// (resil::asio::hedged): a request that may be repeated (idempotent, or
// keyed) gets another copy, to another endpoint, after the hedge delay; the
// hedges draw on the retry budget; a request that may not be repeated runs
// once. The completion signature is void(std::exception_ptr, response), as
// asio::co_spawn's: the pointer is set only by an exception (a bad method
// or header, memory); every failure of the call itself is a response.
//
// Compilation: the calls' work (the pipeline, hedging, the libcurl
// client) is non-template code behind the completion token's adaptation
// (asio::async_initiate and a type-erased handler, which keeps the
// handler's executor, cancellation slot and allocator): with
// RESIL_SEPARATE_COMPILATION this header declares it and
// <resil/curl_asio/separate_compilation.hpp> compiles it once
// (docs/compile_time.md).
//
// Lifetime: the face refers to the dependency, which must outlive it and
// its calls. A call in flight holds what the face's calls use (its libcurl
// client, quota and pipeline) until it completes: a face may be destroyed
// or moved while calls run, and they finish as they would have. As its
// async_client, let its calls end before the io_context is destroyed.
// Thread-safety: use a face
// on its executor's thread; make one face per executor (they share the
// dependency's state, which is thread-safe).
#pragma once

#include "../asio/config.hpp"  // first: before any Asio header

#include <exception>
#include <memory>
#include <string>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/io_context.hpp>

#include "../asio/detail/any_completion.hpp"
#include "../curl_asio/async_options.hpp"
#include "../detail/platform.hpp"
#include "dependency.hpp"
#include "response.hpp"

namespace resil::http {

/// The Asio face of a dependency (see the banner): its calls on one
/// executor, over the dependency's shared state. Use it on its executor's
/// thread; the dependency must outlive it.
class async_dependency {
public:
    /// The executor its calls run on.
    using executor_type = ::asio::any_io_executor;

    /// A face of `d` on `ex`. With a shared (Redis) quota, the face asks it
    /// through a resil::redis::async_rate_limiter of its own on `ex`, which
    /// needs <resil/http/async_redis_quota.hpp> in the program: without it,
    /// throws std::invalid_argument.
    RESIL_DECL async_dependency(const dependency& d, executor_type ex, curl::async_options limits = {});
    /// A face of `d` on `io`'s executor.
    async_dependency(const dependency& d, ::asio::io_context& io, curl::async_options limits = {})
        : async_dependency(d, executor_type(io.get_executor()), limits) {}

    /// The executor its calls run on.
    [[nodiscard]] executor_type get_executor() const { return parts_->executor; }

    /// Any request, on this face's executor. Completion: void(std::exception_ptr, response).
    template <class CompletionToken>
    auto async_perform(request req, CompletionToken&& token) {
        return ::asio::async_initiate<CompletionToken, void(std::exception_ptr, response)>(
            initiate{parts_}, token, std::move(req));
    }
    /// A GET of `path`. Completion: void(std::exception_ptr, response).
    template <class CompletionToken>
    auto async_get(std::string path, CompletionToken&& token) {
        return async_perform(request{.method = "GET", .path = std::move(path)},
                             std::forward<CompletionToken>(token));
    }
    /// A POST of `body` to `path` (keyed). Completion: void(std::exception_ptr, response).
    template <class CompletionToken>
    auto async_post(std::string path, std::string body, CompletionToken&& token) {
        return async_perform(request{.method = "POST", .path = std::move(path), .body = std::move(body)},
                             std::forward<CompletionToken>(token));
    }

private:
    // What a face's calls use (its libcurl client, quota, pipeline), shared
    // with the calls in flight (each holds it until it completes), so that a
    // face destroyed or moved meanwhile leaves them whole.
    // detail/async_dependency_impl.hpp. Its executor is seen here: each
    // call's handler falls back on it.
    struct parts_head {
        executor_type executor;
    };
    struct parts;  // : parts_head
    using completion = resil::asio::detail::any_completion<response>;

    // Only the handler's adaptation is a template: the call itself is
    // started, and runs, in code compiled once.
    struct initiate {
        std::shared_ptr<parts_head> held;
        template <class Handler>
        void operator()(Handler&& handler, request&& req) const {
            start(held, std::move(req), completion(std::forward<Handler>(handler), held->executor));
        }
    };
    RESIL_DECL static void start(const std::shared_ptr<parts_head>& held, request&& req, completion handler);

    std::shared_ptr<parts_head> parts_;
};

}  // namespace resil::http

#if RESIL_DETAIL_BODIES
#include "detail/async_dependency_impl.hpp"
#endif
