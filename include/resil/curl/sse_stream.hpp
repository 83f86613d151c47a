// resil/curl/sse_stream.hpp — a Server-Sent Events stream read through
// client::stream: resil::sse::reader (resil/sse.hpp) as a sink, handing
// complete events to the caller as they arrive.
//
//   resil::curl::sse_stream events([&](const resil::sse::event& e) {
//       if (e.data == "[DONE]") return resil::curl::stream_action::done;   // or return nothing (void)
//       print(e.data);                                                      // a view: copy what you keep
//       return resil::curl::stream_action::next;
//   });
//   auto r = http.stream(req, ctx, events, {.first_byte = 2s, .idle = 500ms});
//   if (events.failed()) log(events.error_message());   // a bad line, bad UTF-8, not an event stream
//
// The body is never stored: each chunk is parsed where libcurl put it, and
// only a line or an event split across chunks is copied, once, into the
// reader's bounded buffers. Limits: the reader's (line, event, stream
// length, UTF-8; resil::sse::reader_options) and the client's
// max_body_bytes over the whole stream. The response's Content-Type must be
// text/event-stream unless require_event_stream is off: a JSON error page
// answered with 200 is refused before a byte of it is parsed.
//
// Resuming is explicit: with `resume` on, resume_request(req) gives the same
// request with `Last-Event-ID: <the last id received>`, for the caller to
// send when it decides to (an interrupted stream is never retried by a retry
// policy). The server then sends what followed that event.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../sse.hpp"
#include "../validation.hpp"
#include "detail/text.hpp"
#include "request.hpp"
#include "response.hpp"
#include "streaming.hpp"

namespace resil::curl {

/// Options of an sse_stream.
struct sse_stream_options {
    /// The reader's limits: line length, event size, stream length, UTF-8.
    sse::reader_options reader{};
    /// Refuse a response whose Content-Type is not text/event-stream
    /// (parameters aside, any letter case). Default on.
    bool require_event_stream = true;
    /// Let resume_request() add Last-Event-ID. Default off: resuming is a
    /// decision about the server's semantics the caller makes.
    bool resume = false;

    /// The first invalid field, if any (the reader's, named `reader.<field>`).
    [[nodiscard]] validation_result validate() const {
        auto bad = reader.validate();
        if (bad) bad->field = "reader." + bad->field;
        return bad;
    }
};

/// The media type of a Content-Type value is text/event-stream.
[[nodiscard]] constexpr bool is_event_stream(std::string_view content_type) noexcept {
    const auto semicolon = content_type.find(';');
    return detail::iequals(detail::trim_ows(content_type.substr(0, semicolon)), "text/event-stream");
}

/// A sink for client::stream reading an event stream. OnEvent:
/// on_event(const resil::sse::event&) returning void or stream_action;
/// OnComment: on_comment(std::string_view) for comment lines. One per
/// stream source, used by one thread at a time.
template <class OnEvent, class OnComment = sse::ignore_comments>
class sse_stream {
public:
    /// Throws std::invalid_argument for invalid options.
    explicit sse_stream(OnEvent on_event, sse_stream_options options = {}, OnComment on_comment = {})
        : options_(std::move(options)),
          reader_(checked(options_).reader),
          on_event_(std::move(on_event)),
          on_comment_(std::move(on_comment)) {}

    /// client::stream calls it at the start of every call, before any
    /// transfer: what the last call ended with (a refused Content-Type, the
    /// caller's stop, a parse error) is forgotten, also when this one's
    /// answer is not a 2xx with a body (on_head is then never called).
    void on_start() {
        begin_stream();
        started_ = true;
    }

    /// client::stream calls it once per response, before the first chunk.
    stream_action on_head(const response& r) {
        if (!started_) begin_stream();  // driven without on_start
        started_ = false;
        if (options_.require_event_stream) {
            const auto type = r.header("Content-Type");
            if (!type || !is_event_stream(*type)) {
                wrong_type_ = std::string(type.value_or("none"));
                return stream_action::stop;
            }
        }
        return stream_action::next;
    }

    /// client::stream calls it with each chunk of the body.
    stream_action operator()(std::string_view chunk) {
        const auto code = reader_.feed(
            chunk,
            [this](const sse::event& e) {
                if (stopped_) return;  // the caller stopped at an earlier event of this chunk
                if (e.id != last_id_) last_id_.assign(e.id);
                if constexpr (std::is_same_v<std::invoke_result_t<OnEvent&, const sse::event&>, stream_action>) {
                    const auto next = on_event_(e);
                    if (next != stream_action::next) {
                        stopped_ = true;
                        ended_ = next;
                    }
                } else {
                    on_event_(e);
                }
            },
            on_comment_);
        if (code != sse::error_code::none) return stream_action::stop;
        return stopped_ ? ended_ : stream_action::next;
    }

    /// Ends a stream that completed: an event without its blank line is
    /// discarded; a stream cut inside a UTF-8 sequence is an error.
    sse::error_code finish() { return reader_.finish(); }

    /// The event callback returned stream_action::stop or done.
    [[nodiscard]] bool stopped_by_caller() const noexcept { return stopped_; }
    /// The stream was refused: not an event stream, or a rule of the reader broken.
    [[nodiscard]] bool failed() const noexcept { return wrong_type_.has_value() || parse_error() != sse::error_code::none; }
    /// The reader's error (a line too long, invalid UTF-8, ...), if any.
    [[nodiscard]] sse::error_code parse_error() const noexcept {
        const auto e = reader_.error();
        return e == sse::error_code::interrupted ? sse::error_code::none : e;  // only while a callback runs
    }
    /// Why the stream was refused, in words; empty when it was not.
    [[nodiscard]] std::string error_message() const {
        if (wrong_type_) {
            std::string text = "event stream: the response's Content-Type is ";
            text += detail::quote_for_error(*wrong_type_);
            text += ", not text/event-stream";
            return text;
        }
        return reader_.error_message();
    }

    /// The last event ID received (kept across streams), or empty.
    [[nodiscard]] std::string_view last_event_id() const noexcept { return last_id_; }
    /// With `resume` on and an event ID received: `original` with
    /// `Last-Event-ID: <id>` (replacing one it had); otherwise nothing.
    /// Everything else of `original` (its endpoint too) is kept.
    [[nodiscard]] std::optional<request> resume_request(const request& original) const {
        if (!options_.resume || last_id_.empty()) return std::nullopt;
        request next = original;
        next.remove_header("Last-Event-ID");
        next.add_header("Last-Event-ID", last_id_);
        return next;
    }

    /// The parser of the stream, with what it has read so far.
    [[nodiscard]] const sse::reader& reader() const noexcept { return reader_; }
    /// The options it was built with.
    [[nodiscard]] const sse_stream_options& options() const noexcept { return options_; }

private:
    // A new stream of the same source (a resumed one): the cut one's
    // unfinished line and event are dropped; the last event ID stays, also
    // when the cut one ended in error and the reader starts afresh.
    void begin_stream() {
        if (fed_ && reader_.finish() != sse::error_code::none) {
            reader_.reset();
            reader_.set_last_event_id(last_id_);
        }
        fed_ = true;
        stopped_ = false;
        ended_ = stream_action::next;
        wrong_type_.reset();
    }

    static const sse_stream_options& checked(const sse_stream_options& o) {
        throw_if_invalid("resil::curl::sse_stream", o.validate());
        return o;
    }

    sse_stream_options options_;
    sse::reader reader_;
    OnEvent on_event_;
    OnComment on_comment_;
    std::string last_id_;
    std::optional<std::string> wrong_type_;
    stream_action ended_ = stream_action::next;  ///< what the event callback ended the stream with
    bool fed_ = false;
    bool started_ = false;  ///< on_start ran and on_head has not yet
    bool stopped_ = false;
};

}  // namespace resil::curl
