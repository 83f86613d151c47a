// resil/curl/streaming.hpp — receiving a body as it arrives: a sink called
// with each chunk, its own time-to-first-byte and inter-chunk idle limits,
// and the rule that makes retrying a stream safe.
//
//   auto on_chunk = [&](std::string_view chunk) {              // a view into libcurl's buffer
//       out.write(chunk);                                      // no copy into the response
//       return resil::curl::stream_action::next;               // or ::stop to end the stream
//   };
//   auto r = http.stream(req, ctx, on_chunk, {.first_byte = 2s, .idle = 500ms});
//
// The rule: an attempt may be retried only while no byte has reached the
// sink. Only the body of a final 2xx response goes to the sink (any other
// status is kept in response::body() as usual, for the classifier and the
// caller); from the first chunk on, a failure — the idle limit, a cut, the
// total limit, the deadline, max_body_bytes, the sink's own stop — ends the
// call as transport_status::stream_interrupted, which resil::curl::classify
// calls permanent: a retry policy never repeats it behind the caller's back,
// whatever the method, because the caller has already acted on part of the
// answer. response::interrupted_by() keeps the cause, delivered_bytes() how
// much the sink got. A sink that has read all it needs (an end marker such
// as "[DONE]") returns stream_action::done: the transfer ends at once and
// the response reads as completed. Resuming is the caller's explicit choice (for an event
// stream: sse_stream_options::resume, resil/curl/sse_stream.hpp).
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string_view>

#include "../timeouts.hpp"
#include "../validation.hpp"

namespace resil::curl {

class response;

/// What a sink tells the transfer after a chunk.
enum class stream_action : std::uint8_t {
    next,  ///< keep reading
    done,  ///< the caller has what it needs (an API's end marker): end the transfer; the response reads as completed
    stop,  ///< abandon the stream: end the transfer; the response says stream_interrupted, caused by `cancelled`
};

/// A sink: called as sink(std::string_view chunk) with each piece of a 2xx
/// body, returning stream_action. Optionally it also has
/// on_head(const resil::curl::response&) -> stream_action, called once
/// before the first chunk with the status and header fields filled (to
/// check the Content-Type, say), and on_start(), called at the start of
/// every client::stream call (to forget what the last call left). It runs inside libcurl's callback on the
/// calling thread; an exception it throws ends the transfer and is rethrown
/// by client::stream once libcurl is done with the handle.
template <class Sink>
concept chunk_sink = requires(Sink& s, std::string_view chunk) {
    { s(chunk) } -> std::same_as<stream_action>;
};

/// The limits of one streamed attempt, on top of connect, read, total and
/// the deadline (the smallest wins). Both time resil's own timer on the
/// context's clock, in milliseconds.
struct stream_options {
    /// From the moment libcurl is about to send the request (after the
    /// connection and TLS are up, so a slow handshake is the connect limit's
    /// business and a reused connection gives the server no extra time) to
    /// the first byte of the response's body. Before any byte reached the
    /// sink, so firing it is transport_status::first_byte_timeout, retried
    /// like a read timeout (a GET or a keyed POST). Default no_limit.
    std::chrono::milliseconds first_byte = resil::timeouts::no_limit;
    /// The longest silence between two body chunks once the body has
    /// started (transport_status::read_timeout before any byte reached the
    /// sink, stream_interrupted after). A server's keep-alive comments are
    /// body bytes: they restart it. Default no_limit.
    std::chrono::milliseconds idle = resil::timeouts::no_limit;

    /// The longest limit (a year) short of no_limit: far beyond any use, and
    /// far from where a clock's nanoseconds overflow.
    static constexpr std::chrono::milliseconds longest{std::chrono::hours{24 * 365}};

    /// The first invalid field, if any: each limit in [1ms, longest], or no_limit.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = check_limit("first_byte", first_byte)) return bad;
        if (auto bad = check_limit("idle", idle)) return bad;
        return std::nullopt;
    }

private:
    static validation_result check_limit(std::string_view field, std::chrono::milliseconds v) {
        const std::chrono::milliseconds one{1};
        if (auto bad = resil::detail::check_at_least(field, v, one)) return bad;
        if (v == resil::timeouts::no_limit) return std::nullopt;
        return resil::detail::check_in_range(field, v, one, longest);
    }
};

}  // namespace resil::curl
