// resil/curl/client.hpp alone: the blocking client's entry points (perform
// by value and in place, stream), and its response judged by the
// classifier the pipelines find by ADL.
#include <resil/curl/client.hpp>

#include <string_view>

namespace resil_entry_points {

void curl_client(const resil::curl::request& req, resil::context& ctx) {
    resil::curl::client http;
    resil::curl::response r = http.perform(req, ctx);
    const resil::classification judged = classify(r);  // by ADL, as resil::pipeline does
    (void)judged;
    http.perform(req, ctx, r);
    (void)http.perform(req);
    auto sink = [](std::string_view) { return resil::curl::stream_action::next; };
    r = http.stream(req, ctx, sink);
    http.stream(req, ctx, r, sink, {.first_byte = std::chrono::seconds{1}});
    http.recycle(std::move(r));
}

}  // namespace resil_entry_points
