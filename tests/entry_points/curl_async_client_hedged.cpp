// resil/asio/hedge.hpp with resil/curl_asio/async_client.hpp, the two
// headers docs/curl_async.md ("Hedged calls") names: hedged() over
// async_perform, each copy's response judged by resil::curl::classify, found
// by ADL.
#include <resil/asio/hedge.hpp>
#include <resil/curl_asio/async_client.hpp>

#include <asio/awaitable.hpp>

namespace resil_entry_points {

::asio::awaitable<resil::curl::response> curl_async_client_hedged(resil::curl::async_client& http,
                                                                  const resil::curl::request& req,
                                                                  resil::context& ctx,
                                                                  const resil::hedge_policy& hedge) {
    co_return co_await resil::asio::hedged(
        hedge, ctx, [&](resil::context& c, auto token) { return http.async_perform(req, c, std::move(token)); });
}

}  // namespace resil_entry_points
