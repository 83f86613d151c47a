// resil/curl_asio/async_client.hpp alone: its entry points instantiated,
// with a callback and use_awaitable, and the response judged by the
// classifier the pipelines and hedged() find by ADL.
#include <resil/curl_asio/async_client.hpp>

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include <exception>
#include <string_view>

namespace resil_entry_points {

void curl_async_client(::asio::io_context& io, const resil::curl::request& req, resil::context& ctx) {
    resil::curl::async_client http(io);
    resil::curl::async_client on_executor(io.get_executor(), {}, {.max_in_flight = 10});
    http.async_perform(req, ctx, [&http](resil::curl::response r) {
        const resil::classification judged = classify(r);  // by ADL, as resil::pipeline and hedged() do
        (void)judged;
        http.recycle(std::move(r));
    });
    auto sink = [](std::string_view) { return resil::curl::stream_action::next; };
    http.async_stream(req, ctx, sink, {}, [](std::exception_ptr, resil::curl::response) {});
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            resil::curl::response r = co_await http.async_perform(req, ctx, ::asio::use_awaitable);
            (void)r;
            r = co_await http.async_stream(req, ctx, sink, {.idle = std::chrono::seconds{1}}, ::asio::use_awaitable);
        },
        ::asio::detached);
    (void)http.in_flight();
    (void)http.pooled_transfers();
    (void)http.spare_body_bytes();
}

}  // namespace resil_entry_points
