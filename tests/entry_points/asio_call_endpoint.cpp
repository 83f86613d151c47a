// resil/asio/call_endpoint.hpp alone: an asynchronous attempt on a balanced
// endpoint, with a result type of the user's (its classifier and its
// endpoint_failure found by ADL), in both callable forms, and hedged.
#include <resil/asio/call_endpoint.hpp>
#include <resil/asio/hedge.hpp>

#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>

namespace resil_entry_points {

struct endpoint_reply {
    int status = 200;
};
inline resil::classification classify(const endpoint_reply& r) {
    return r.status < 500 ? resil::verdict::success : resil::verdict::retryable;
}
inline bool endpoint_failure(const endpoint_reply& r) { return r.status >= 500; }

::asio::awaitable<void> asio_call_endpoint(const resil::balancer& lb, const resil::hedge_policy& hedge,
                                           resil::context& ctx) {
    resil::tried_endpoints tried;
    // (endpoint) -> awaitable.
    resil::outcome<endpoint_reply> out = co_await resil::asio::call_endpoint(
        lb, ctx, tried, [](const resil::endpoint&) -> ::asio::awaitable<endpoint_reply> { co_return endpoint_reply{}; });
    // (endpoint, completion token), a classifier of the call's own.
    out = co_await resil::asio::call_endpoint(
        lb, ctx, tried,
        [](const resil::endpoint&, auto token) {
            return ::asio::async_initiate<decltype(token), void(endpoint_reply)>(
                [](auto handler) { std::move(handler)(endpoint_reply{}); }, token);
        },
        [](const endpoint_reply& r) { return r.status == 200 ? resil::verdict::success : resil::verdict::permanent; });
    // Hedged copies of it.
    out = co_await resil::asio::hedged(hedge, ctx, [&](resil::context& c) {
        return resil::asio::call_endpoint(lb, c, tried, [](const resil::endpoint&) -> ::asio::awaitable<endpoint_reply> {
            co_return endpoint_reply{};
        });
    });
}

}  // namespace resil_entry_points
