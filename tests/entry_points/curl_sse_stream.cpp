// resil/curl/sse_stream.hpp alone: an event stream as a client's sink,
// with and without a comment handler, its handler returning void or an
// action.
#include <resil/curl/sse_stream.hpp>

#include <string_view>

namespace resil_entry_points {

bool curl_sse_stream(const resil::curl::response& head, std::string_view chunk) {
    resil::curl::sse_stream events([](const resil::sse::event&) {});
    resil::curl::sse_stream with_comments(
        [](const resil::sse::event& e) {
            return e.data == "[DONE]" ? resil::curl::stream_action::done : resil::curl::stream_action::next;
        },
        {}, [](std::string_view) {});
    events.on_start();
    bool ok = events.on_head(head) == resil::curl::stream_action::next && events(chunk) == resil::curl::stream_action::next;
    with_comments.on_start();
    ok = ok && with_comments.on_head(head) == resil::curl::stream_action::next && !with_comments.failed();
    return ok;
}

}  // namespace resil_entry_points
