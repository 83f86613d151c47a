// resil/asio/hedge.hpp alone: hedged() over each form of callable a
// pipeline takes, with a result type of the user's and its classifier.
#include <resil/asio/hedge.hpp>

#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

#include <functional>

namespace resil_entry_points {

struct reply {
    int status = 200;
};
inline resil::classification classify(const reply& r) {
    return r.status < 500 ? resil::verdict::success : resil::verdict::retryable;
}

::asio::awaitable<reply> asio_hedge(const resil::hedge_policy& hedge, resil::context& ctx) {
    // (context) -> awaitable, the default classifier (ADL) and a listener.
    int started = 0;
    reply r = co_await resil::asio::hedged(
        hedge, ctx, [](resil::context&) -> ::asio::awaitable<reply> { co_return reply{}; }, {},
        [&started](const resil::events::hedge_started&) { ++started; });
    // (context, completion token), a classifier of the call's own.
    r = co_await resil::asio::hedged(
        hedge, ctx,
        [](resil::context&, auto token) {
            return ::asio::async_initiate<decltype(token), void(reply)>([](auto handler) { std::move(handler)(reply{}); },
                                                                       token);
        },
        [](const reply& x) { return x.status == 200 ? resil::verdict::success : resil::verdict::retryable; });
    // () -> awaitable<void>.
    co_await resil::asio::hedged(hedge, ctx, []() -> ::asio::awaitable<void> { co_return; });
    co_return r;
}

}  // namespace resil_entry_points
