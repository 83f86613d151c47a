// resil/asio/pipeline.hpp with resil/curl_asio/async_client.hpp: an
// asynchronous pipeline whose callable is async_perform (the (context, token)
// form and an awaitable), its responses judged by resil::curl::classify,
// found by ADL.
#include <resil/asio/pipeline.hpp>
#include <resil/curl_asio/async_client.hpp>

#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <functional>

namespace resil_entry_points {

::asio::awaitable<void> curl_async_client_pipeline(resil::curl::async_client& http, const resil::curl::request& req,
                                                   resil::circuit_breaker& breaker) {
    using namespace std::chrono_literals;
    auto pipe = resil::asio::pipeline(resil::deadline_policy{1s}, resil::retry_policy{}, std::ref(breaker),
                                      resil::timeout_policy{{.total = 500ms}});
    resil::outcome<resil::curl::response> out =
        co_await pipe([&](resil::context& c, auto token) { return http.async_perform(req, c, std::move(token)); });
    out = co_await pipe([&](resil::context& c) -> ::asio::awaitable<resil::curl::response> {
        co_return co_await http.async_perform(req, c, ::asio::use_awaitable);
    });
    resil::asio::async_call(
        pipe, http.get_executor(),
        [&](resil::context& c, auto token) { return http.async_perform(req, c, std::move(token)); },
        [](std::exception_ptr, resil::outcome<resil::curl::response>) {});
}

}  // namespace resil_entry_points
