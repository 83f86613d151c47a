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

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/cancellation_state.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/co_spawn.hpp>
#include <asio/this_coro.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include "../asio/call_endpoint.hpp"
#include "../asio/hedge.hpp"
#include "../asio/pipeline.hpp"
#include "../curl_asio/async_client.hpp"
#include "dependency.hpp"
#include "detail/async_shared_quota.hpp"
#include "detail/dependency_state.hpp"
#include "detail/response_access.hpp"

namespace resil::http {

namespace detail {

/// The asynchronous pipeline of a dependency's calls: the blocking one's
/// layers (make_layers), its metrics the listener.
inline auto make_async_pipeline(const dependency_state& s, const async_shared_quota* shared) {
    return make_layers(s.deadline, s.retry, s.breaker, s.limit, s.adaptive, s.pacing, s.quota,
                       async_shared_quota_layer{shared}, s.faults, s.timeouts, [&](auto... layers) {
                           return resil::asio::pipeline(std::move(layers)...).with_listener(
                               std::ref(const_cast<resil::metrics&>(s.metrics)));
                       });
}

}  // namespace detail

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
    async_dependency(const dependency& d, executor_type ex, curl::async_options limits = {})
        : parts_(std::make_shared<parts>(d.state(), std::move(ex), limits)) {}
    /// A face of `d` on `io`'s executor.
    async_dependency(const dependency& d, ::asio::io_context& io, curl::async_options limits = {})
        : async_dependency(d, io.get_executor(), limits) {}

    /// The executor its calls run on.
    [[nodiscard]] executor_type get_executor() const { return parts_->http.get_executor(); }

    /// Any request, on this face's executor. Completion: void(std::exception_ptr, response).
    template <class CompletionToken>
    auto async_perform(request req, CompletionToken&& token) {
        // The call holds the face's parts: destroying the face does not end them under it.
        return ::asio::co_spawn(parts_->http.get_executor(), run(parts_, std::move(req)),
                                std::forward<CompletionToken>(token));
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
    static std::unique_ptr<detail::async_shared_quota> async_quota(const detail::dependency_state& s,
                                                                   const executor_type& ex) {
        if (!s.shared) return nullptr;
        if (detail::async_shared_quota_maker() == nullptr) {
            throw std::invalid_argument(
                "resil::http::async_dependency: `shared_quota` on the Asio face needs the asynchronous Redis "
                "quota: include <resil/http/async_redis_quota.hpp> in the program and link resil::redis, got a "
                "program without it");
        }
        return detail::async_shared_quota_maker()(*s.shared, ex);
    }

    // What a face's calls use, shared with the calls in flight (each holds it
    // until it completes), so that a face destroyed or moved meanwhile
    // leaves them whole.
    struct parts {
        parts(const detail::dependency_state& s, executor_type ex, curl::async_options limits)
            : state(&s), http(std::move(ex), s.curl_options, limits), quota(async_quota(s, http.get_executor())),
              pipeline(detail::make_async_pipeline(s, quota.get())) {}
        const detail::dependency_state* state;
        curl::async_client http;
        std::unique_ptr<detail::async_shared_quota> quota;  // before the pipeline, which points at it
        decltype(detail::make_async_pipeline(std::declval<const detail::dependency_state&>(), nullptr)) pipeline;
    };

    static ::asio::awaitable<response> run(std::shared_ptr<parts> held, request req) {
        {  // checked before any I/O, as the blocking face does
            curl::request check{req.method, "http://check.invalid"};
            for (const auto& [n, v] : req.headers) check.add_header(n, v);
        }
        parts& p = *held;
        auto& http = p.http;
        auto& s = const_cast<detail::dependency_state&>(*p.state);
        resil::tried_endpoints tried;
        std::uint32_t attempts = 0;
        std::string answered;
        auto one_copy = [&](resil::context& c) {
            return resil::asio::call_endpoint(
                s.lb, c, tried, [&](const endpoint& ep) -> ::asio::awaitable<curl::response> {
                    ++attempts;
                    const auto r = detail::dependency_state::to_curl(req, ep);  // lives until the answer
                    auto reply = co_await http.async_perform(r, c, ::asio::use_awaitable);
                    // The endpoint of the copy that answered: a hedge copy cut
                    // short by the winner does not name it.
                    const ::asio::cancellation_state state = co_await ::asio::this_coro::cancellation_state;
                    if (state.cancelled() == ::asio::cancellation_type::none && !c.stop_requested())
                        answered = ep.address;
                    s.observe(reply);
                    co_return reply;
                });
        };
        auto attempt = [&](resil::context& ctx) -> ::asio::awaitable<outcome<curl::response>> {
            if (s.hedge)
                co_return co_await resil::asio::hedged(*s.hedge, ctx, one_copy, resil::detail::default_classifier{},
                                                        std::ref(s.metrics));
            co_return co_await one_copy(ctx);
        };
        // The request's fault tag, when it has one, in a context of the call's own.
        resil::context tagged;
        tagged.set_fault_tag(req.fault_tag);
        auto call = req.fault_tag.empty() ? p.pipeline(attempt) : p.pipeline.execute(tagged, attempt);
        auto out = co_await std::move(call);
        auto result = detail::response_access::make(out, attempts, std::move(answered));
        if (out.has_value() && out->has_value()) http.recycle(std::move(**out));
        co_return result;
    }

    std::shared_ptr<parts> parts_;
};

}  // namespace resil::http
