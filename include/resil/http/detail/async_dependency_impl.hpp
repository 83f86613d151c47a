// resil/http/detail/async_dependency_impl.hpp — the definitions of
// resil::http::async_dependency (resil/http/async_dependency.hpp): its
// parts (libcurl client, quota, pipeline), and the call, a coroutine run by
// asio::co_spawn for a type-erased handler. Included where the bodies are
// compiled, as dependency_impl.hpp is.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

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
#include <asio/use_awaitable.hpp>

#include "../../asio/call_endpoint.hpp"
#include "../../asio/hedge.hpp"
#include "../../asio/pipeline.hpp"
#include "../../curl_asio/async_client.hpp"
#include "../async_dependency.hpp"
#include "async_shared_quota.hpp"
#include "dependency_state.hpp"
#include "response_access.hpp"

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

/// The face's quota: the shared one asked through Asio, when the dependency has one.
inline std::unique_ptr<async_shared_quota> make_async_quota(const dependency_state& s,
                                                            const ::asio::any_io_executor& ex) {
    if (!s.shared) return nullptr;
    if (async_shared_quota_maker() == nullptr) {
        throw std::invalid_argument(
            "resil::http::async_dependency: `shared_quota` on the Asio face needs the asynchronous Redis "
            "quota: include <resil/http/async_redis_quota.hpp> in the program and link resil::redis, got a "
            "program without it");
    }
    return async_shared_quota_maker()(*s.shared, ex);
}

/// One call of the face, from the request's check to its response. It
/// holds the face's parts (`held`: state, http, pipeline) until it completes.
template <class Parts>
::asio::awaitable<response> run_async_call(std::shared_ptr<Parts> held, request req) {
    {  // checked before any I/O, as the blocking face does
        curl::request check{req.method, "http://check.invalid"};
        for (const auto& [n, v] : req.headers) check.add_header(n, v);
    }
    auto& s = const_cast<dependency_state&>(*held->state);
    auto& http = held->http;
    auto& pipeline = held->pipeline;
    resil::tried_endpoints tried;
    std::uint32_t attempts = 0;
    std::string answered;
    auto one_copy = [&](resil::context& c) {
        return resil::asio::call_endpoint(
            s.lb, c, tried, [&](const endpoint& ep) -> ::asio::awaitable<curl::response> {
                ++attempts;
                const auto r = dependency_state::to_curl(req, ep);  // lives until the answer
                auto reply = co_await http.async_perform(r, c, ::asio::use_awaitable);
                // The endpoint of the copy that answered: a hedge copy cut
                // short by the winner does not name it.
                const ::asio::cancellation_state cs = co_await ::asio::this_coro::cancellation_state;
                if (cs.cancelled() == ::asio::cancellation_type::none && !c.stop_requested()) answered = ep.address;
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
    auto call = req.fault_tag.empty() ? pipeline(attempt) : pipeline.execute(tagged, attempt);
    auto out = co_await std::move(call);
    auto result = response_access::make(out, attempts, std::move(answered));
    if (out.has_value() && out->has_value()) http.recycle(std::move(**out));
    co_return result;
}

}  // namespace detail

struct async_dependency::parts : parts_head {
    parts(const detail::dependency_state& s, executor_type ex, curl::async_options limits)
        : parts_head{ex}, state(&s), http(std::move(ex), s.curl_options, limits),
          quota(detail::make_async_quota(s, http.get_executor())),
          pipeline(detail::make_async_pipeline(s, quota.get())) {}
    const detail::dependency_state* state;
    curl::async_client http;
    std::unique_ptr<detail::async_shared_quota> quota;  // before the pipeline, which points at it
    decltype(detail::make_async_pipeline(std::declval<const detail::dependency_state&>(), nullptr)) pipeline;
};

RESIL_DECL async_dependency::async_dependency(const dependency& d, executor_type ex, curl::async_options limits)
    : parts_(std::make_shared<parts>(d.state(), std::move(ex), limits)) {}

RESIL_DECL void async_dependency::start(const std::shared_ptr<parts_head>& held, request&& req,
                                        completion handler) {
    ::asio::co_spawn(held->executor, detail::run_async_call(std::static_pointer_cast<parts>(held), std::move(req)),
                     std::move(handler));
}

}  // namespace resil::http
