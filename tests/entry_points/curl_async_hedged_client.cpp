// resil/curl_asio/async_hedged_client.hpp alone, as docs/curl_async.md
// names it: hedged_client::perform instantiated, with and without a listener.
#include <resil/curl_asio/async_hedged_client.hpp>

namespace resil_entry_points {

resil::curl::response curl_async_hedged_client(const resil::curl::request& req, resil::context& ctx) {
    resil::curl::hedged_client http;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = std::chrono::milliseconds{20}}};
    int started = 0;
    auto heard = [&started](const resil::events::hedge_started&) { ++started; };
    resil::curl::response r = http.perform(req, ctx, hedge, heard);
    http.recycle(std::move(r));
    return http.perform(req, ctx, hedge);
}

}  // namespace resil_entry_points
