// resil/curl/detail/capture.hpp — what libcurl's callbacks do with one
// transfer: header lines into the response's fields (the final response's
// head apart from its trailers), body bytes into the response's body within
// the limit, and a count of the times libcurl is about to send the request.
//
// Everything here is called from C (libcurl) and is noexcept: a failure sets
// a flag and returns a short count, which libcurl turns into a write error.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <string>
#include <string_view>

#include "../response.hpp"
#include "keep_alive.hpp"
#include "stream.hpp"
#include "text.hpp"

namespace resil::curl::detail {

/// Body bytes a response reserves up front (from its Content-Length) and
/// grows by doubling; past this the body jumps once to the limit itself, so
/// a body never holds more than the limit and one reallocation never needs
/// more than the limit plus this.
inline constexpr std::size_t body_growth_step = std::size_t{1} << 20;

/// What the callbacks of one transfer write to.
struct transfer_state {
    response* out = nullptr;
    std::size_t max_body = 0;
    std::size_t max_header_bytes = 0;
    std::size_t received = 0;      ///< header and body bytes delivered so far
    std::size_t header_bytes = 0;  ///< header and trailer bytes delivered so far
    unsigned sends = 0;            ///< times libcurl was about to send the request
    int block_status = 0;          ///< status of the header block being read; 0 before its status line
    bool expects_body = true;      ///< false for HEAD: a Content-Length there announces nothing
    bool in_trailers = false;      ///< the final head ended: further fields are trailers
    bool too_large = false;        ///< the body (announced or received) exceeds max_body
    bool headers_too_large = false;
    bool replay_refused = false;   ///< libcurl wanted to send the request a second time
    bool malformed = false;        ///< a header line held CR or NUL
    bool out_of_memory = false;
    stream_state stream{};         ///< a streamed body's sink and counters (detail/stream.hpp)
    bool redirect_pending = false;    ///< a 3xx head with a Location ended and libcurl follows it
    bool block_has_location = false;  ///< the head being read has a non-empty Location
    bool resend_means_refused = false;///< a resend of the last send can only be a refused HTTP/2 stream
    long connects_at_send = 0;        ///< CURLINFO_NUM_CONNECTS at the last send
    std::size_t received_at_send = 0; ///< `received` at the last send
    unsigned refused_resends = 0;     ///< sends repeated because the server refused the stream unprocessed
    bool redirect_refused = false;    ///< a redirect's send was refused: the 3xx is the answer
    /// The idle limit the final head's Keep-Alive field announced, in
    /// seconds (detail/keep_alive.hpp); -1 when it announced none.
    std::int32_t keep_alive_timeout = -1;

    // Set per request (detail/redirect_setup.hpp), before start().
    bool follows_redirects = false;     ///< libcurl follows this request's redirects
    bool repeatable = false;            ///< the request is idempotent or keyed: a redirect may send it again
    bool see_other_as_get = true;       ///< libcurl sends a 303's follow-up as a GET (GET, HEAD, POST)

    // Set once per handle (setup::configure), kept across transfers.
    CURL* easy = nullptr;               ///< asked, when libcurl is about to send, how many connections it opened
    const char* error_text = nullptr;   ///< the handle's CURLOPT_ERRORBUFFER
    /// Called with `touched_by` at each header line, body chunk and send,
    /// by a driver that times silences from the callbacks themselves (the
    /// asynchronous client); null for the blocking loop, which looks after
    /// every poll.
    void (*touched)(void*) noexcept = nullptr;
    void* touched_by = nullptr;
    /// Set by the driver when `touched` noted this transfer for the end of
    /// the wake-up, cleared when it stamps it: until then the callbacks
    /// need not call `touched` again (a header line, a chunk each).
    bool touch_pending = false;
    /// The connection the last HTTP/2 response came over: a resend after a
    /// send on it can only be a refused stream (see may_send).
    struct connection_id {
        std::array<char, 48> ip{};
        long primary_port = 0;
        long local_port = 0;
        [[nodiscard]] bool matches(const char* other_ip, long other_primary, long other_local) const noexcept {
            return ip[0] != '\0' && other_ip && primary_port == other_primary && local_port == other_local &&
                   std::strncmp(ip.data(), other_ip, ip.size()) == 0;
        }
    } http2_connection{};

    /// Ready for a new transfer that fills `r`.
    void start(response& r, bool body_expected) noexcept {
        out = &r;
        received = 0;
        header_bytes = 0;
        sends = 0;
        block_status = 0;
        expects_body = body_expected;
        in_trailers = false;
        too_large = false;
        headers_too_large = false;
        replay_refused = false;
        malformed = false;
        out_of_memory = false;
        stream.start();
        redirect_pending = false;
        block_has_location = false;
        resend_means_refused = false;
        connects_at_send = 0;
        received_at_send = 0;
        refused_resends = 0;
        redirect_refused = false;
        keep_alive_timeout = -1;
    }
};

/// The callbacks.
struct capture {
    /// A byte or a send, for a driver that times silences (transfer_state::touched).
    static void note_touch(transfer_state& t) noexcept {
        if (t.touched && !t.touch_pending) t.touched(t.touched_by);
    }

    /// A status line's code ("HTTP/1.1 503 Service Unavailable" → 503); 0
    /// when the line has no three-digit code where one belongs.
    [[nodiscard]] static constexpr int status_of(std::string_view line) noexcept {
        const auto space = line.find(' ');
        if (space == std::string_view::npos || line.size() < space + 4) return 0;
        int status = 0;
        for (std::size_t i = space + 1; i < space + 4; ++i) {
            const char c = line[i];
            if (c < '0' || c > '9') return 0;
            status = status * 10 + (c - '0');
        }
        return status;
    }

    /// One header line as libcurl delivers it (terminator included). Returns
    /// false when the transfer must stop (a limit, or no memory).
    static bool header_line(transfer_state& t, std::string_view line) noexcept {
        note_touch(t);
        t.received += line.size();
        t.header_bytes += line.size();
        if (t.header_bytes > t.max_header_bytes) {
            t.headers_too_large = true;
            return false;
        }
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
        // CR and NUL inside a field are dangerous (RFC 9110 §5.5: reject the
        // message or replace them); the reply is refused as malformed.
        if (holds_cr_or_nul(line)) {
            t.malformed = true;
            return false;
        }
        auto& out = *t.out;
        try {
            auto& headers = response_access::headers(out);
            if (t.in_trailers) {
                // Fields after the body (chunked trailers) are kept apart: a
                // sender may not put control data such as Retry-After there
                // (RFC 9110 §6.5.1), and they never replace the head's fields.
                if (!line.empty()) add_field(response_access::trailers(out), line, nullptr);
                return true;
            }
            if (line.empty()) {
                // The end of a head. A 1xx head is followed by another one,
                // and so is a 3xx with a Location when redirects are
                // followed (libcurl skips its body); any other is the final
                // response.
                if (t.follows_redirects && t.block_status >= 300 && t.block_status <= 399 && t.block_has_location)
                    t.redirect_pending = true;
                else if (t.block_status >= 200 || t.block_status == 0)
                    t.in_trailers = true;
                return true;
            }
            if (line.size() >= 5 && std::memcmp(line.data(), "HTTP/", 5) == 0) {
                // A new response starts (after a 1xx or a followed
                // redirect): only the final one's fields count.
                headers.clear();
                headers.reserve(512, 16);
                t.block_status = status_of(line);
                t.block_has_location = false;
                t.keep_alive_timeout = -1;
                return true;
            }
            if (t.follows_redirects && line.size() > 9 && iequals(line.substr(0, 9), "Location:") &&
                !trim_ows(line.substr(9)).empty())
                t.block_has_location = true;
            return add_field(headers, line, &t);
        } catch (...) {
            t.out_of_memory = true;
            return false;
        }
    }

    /// One chunk of the body. Returns false when the transfer must stop.
    static bool body_bytes(transfer_state& t, std::string_view data) noexcept {
        note_touch(t);
        t.received += data.size();
        // A streamed 2xx body goes to the sink, never into the response;
        // any other status is kept as usual, for the classifier.
        if (t.stream.sink && t.block_status >= 200 && t.block_status <= 299) return to_sink(t, data);
        auto& body = response_access::body(*t.out);
        if (data.size() > t.max_body - std::min(t.max_body, body.size())) {
            t.too_large = true;
            return false;
        }
        try {
            const std::size_t needed = body.size() + data.size();
            if (needed > body.capacity()) {
                // Doubling (std::string's own growth) would overshoot the
                // limit by up to 2×: grow to exact capacities instead.
                const std::size_t step = std::min(t.max_body, body_growth_step);
                grow_exact(body, needed <= step ? std::min(std::max(needed, body.capacity() * 2), step) : t.max_body);
            }
            body.append(data);
        } catch (...) {
            t.out_of_memory = true;
            return false;
        }
        return true;
    }

    /// Called by libcurl each time it is about to send the request, on the
    /// connection named by `primary_ip`, `primary_port` and `local_port`:
    /// once per transfer, once per redirect it follows, and again when it
    /// would replay the request on a new connection. A replay is refused
    /// (the first send may have been executed: only the caller, through its
    /// retry policy, may send again, and count it) unless it can only be
    /// libcurl 7.88's resend of a refused HTTP/2 stream, which the server
    /// guarantees it did not process (RFC 9113 §8.7): nothing arrived since
    /// the send, libcurl reported no error, and the send went over a new
    /// connection (libcurl resends after a send on a new connection only for
    /// REFUSED_STREAM or HTTP_1_1_REQUIRED) or over a connection known to be
    /// HTTP/2 (where a dead connection always leaves an error text). A
    /// redirect is sent only for a repeatable request, and a 303 only when
    /// libcurl turns it into a GET; otherwise the 3xx ends the transfer as
    /// its answer (redirect_refused).
    static bool may_send(transfer_state& t, const char* primary_ip, long primary_port, long local_port) noexcept {
        note_touch(t);
        long connects = 0;
        if (t.easy) curl_easy_getinfo(t.easy, CURLINFO_NUM_CONNECTS, &connects);
        const bool first = t.sends == 0;
        const bool redirect = t.redirect_pending;
        if (redirect && (!t.repeatable || (t.block_status == 303 && !t.see_other_as_get))) {
            t.redirect_refused = true;
            return false;
        }
        const bool refused_stream = !first && !redirect && t.resend_means_refused &&
                                    t.received == t.received_at_send && t.error_text && t.error_text[0] == '\0';
        ++t.sends;
        if (!first && !redirect && !refused_stream) {
            t.replay_refused = true;
            return false;
        }
        if (refused_stream) ++t.refused_resends;
        t.redirect_pending = false;
        t.resend_means_refused =
            connects > t.connects_at_send || t.http2_connection.matches(primary_ip, primary_port, local_port);
        t.connects_at_send = connects;
        t.received_at_send = t.received;
        return true;
    }

    /// After a successful transfer: a body that jumped to the limit gives
    /// back what it does not use, so a kept response holds about its size.
    static void settle_body(response& r) noexcept {
        auto& body = response_access::body(r);
        if (body.capacity() - body.size() > body_growth_step) {
            try {
                body.shrink_to_fit();
            } catch (...) {  // keeping the larger buffer is harmless
            }
        }
    }

private:
    // The sink's chunk, within max_body_bytes counted over the whole stream.
    static bool to_sink(transfer_state& t, std::string_view data) noexcept {
        auto& s = t.stream;
        if (data.size() > t.max_body - std::min(t.max_body, s.body_received)) {
            t.too_large = true;
            return false;
        }
        s.body_received += data.size();
        try {
            if (!s.head_given) {
                s.head_given = true;
                if (s.sink->on_head) {
                    response_access::status(*t.out) = t.block_status;
                    if (const auto next = s.sink->on_head(s.sink->self, *t.out); next != stream_action::next)
                        return ended_by_sink(s, next);
                }
            }
            s.delivered += data.size();
            if (const auto next = s.sink->on_chunk(s.sink->self, data); next != stream_action::next)
                return ended_by_sink(s, next);
        } catch (...) {
            s.thrown = std::current_exception();
            s.stopped = true;
            return false;
        }
        return true;
    }

    static bool ended_by_sink(stream_state& s, stream_action why) noexcept {
        s.stopped = true;
        s.done = why == stream_action::done;
        return false;  // a short count: libcurl ends the transfer (CURLE_WRITE_ERROR)
    }

    // std::string::reserve may round a request up to twice the old capacity;
    // a fresh string's reservation is what was asked for (or its small buffer).
    static void grow_exact(std::string& s, std::size_t capacity) {
        std::string bigger;
        bigger.reserve(capacity);
        bigger.append(s);
        s.swap(bigger);
    }

    // "Name: value" into `fields`; lines that are not fields are ignored, an
    // obsolete folded line extends the previous field. With `t`, a
    // Content-Length over the body limit stops the transfer before the body.
    static bool add_field(field_store& fields, std::string_view line, transfer_state* t) {
        if (is_ows(line.front())) {
            fields.extend_last(trim_ows(line));
            return true;
        }
        // The name is the token before the colon: one pass finds both.
        std::size_t colon = 0;
        while (colon < line.size() && is_tchar(line[colon])) ++colon;
        if (colon == 0 || colon == line.size() || line[colon] != ':') return true;
        const auto name = line.substr(0, colon);
        const auto value = trim_ows(line.substr(colon + 1));
        // Most lines are already "Name: value": stored with one copy.
        if (!value.empty() && value.data() == line.data() + colon + 2 && line[colon + 1] == ' ')
            fields.add_line(line.substr(0, colon + 2 + value.size()), colon);
        else
            fields.add(name, value);
        if (t && token_iequals_lower(name, "content-length")) return announced_body(*t, value);
        if (t && token_iequals_lower(name, "keep-alive")) {
            if (const auto seconds = keep_alive_timeout(value)) t->keep_alive_timeout = *seconds;
        }
        return true;
    }

    // A final response with a body announces its size: over the limit it is
    // refused before a byte of it is read; otherwise up to one growth step is
    // reserved (a lying Content-Length must not make us allocate the limit).
    static bool announced_body(transfer_state& t, std::string_view value) {
        // A followed redirect's body is skipped by libcurl, and whether one is
        // followed is known only at the end of its head.
        const bool redirect = t.follows_redirects && t.block_status >= 300 && t.block_status <= 399;
        const bool has_body = t.expects_body && t.block_status >= 200 && t.block_status != 204 &&
                              t.block_status != 304 && !redirect;
        if (!has_body) return true;
        std::size_t announced = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), announced);
        if (error == std::errc::result_out_of_range) {  // more than any size: over the limit
            t.too_large = true;
            return false;
        }
        if (error != std::errc{} || end != value.data() + value.size()) return true;  // not a size: libcurl judges it
        if (announced > t.max_body) {
            t.too_large = true;
            return false;
        }
        // A streamed 2xx body goes to the sink: the response's body stays empty.
        if (t.stream.sink && t.block_status <= 299) return true;
        auto& body = response_access::body(*t.out);
        const std::size_t want = std::min(announced, body_growth_step);
        if (want > body.capacity()) grow_exact(body, want);
        return true;
    }
};

}  // namespace resil::curl::detail
