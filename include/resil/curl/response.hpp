// resil/curl/response.hpp — what one attempt produced: the HTTP response if
// one arrived, otherwise how the transfer failed, and in both cases whether
// the request may have reached the server.
//
//   auto r = http.perform(resil::curl::request::get(url), ctx);
//   if (r.ok()) use(r.body());                                // completed with a 2xx
//   else if (r.completed()) log(r.status(), r.header("content-type").value_or("?"));
//   else log(resil::curl::to_string(r.transport()), r.curl_code(), r.may_have_reached_server());
//
// Server hints are read when the response arrives: Retry-After (delay-seconds
// or an HTTP-date, through resil::parse_retry_after against the system clock
// at that moment) and a millisecond pushback header (grpc-retry-pushback-ms
// by default; negative means "don't retry"). The rate-limit fields
// (RateLimit, X-RateLimit-*, retry-after-ms, ...; resil/rate_limit_fields.hpp) are
// read on demand: rate_limit(). resil::curl::classify turns all of this into
// a verdict (resil/curl/classification.hpp).
//
// Fakes and fallbacks build responses with response::from_parts (as if a
// server had answered) and response::from_failure (as if the transfer had failed).
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../enum_name.hpp"
#include "../clock.hpp"
#include "../detail/platform.hpp"
#include "../rate_limit_fields.hpp"
#include "../retry_after.hpp"
#include "detail/text.hpp"
#include "fields.hpp"

namespace resil::curl {

namespace detail {
struct response_access;
}

/// How the transfer of one attempt ended. Only `completed` carries an HTTP
/// status; whether the others may have reached the server is in
/// response::may_have_reached_server().
enum class transport_status : std::uint8_t {
    completed,                 ///< a whole response arrived (any HTTP status)
    deadline_exceeded,         ///< not started: no time was left (no I/O at all)
    cancelled,                 ///< the context's stop token fired (before or during the transfer)
    connect_failed,            ///< refused, unreachable, name not resolved (CURLE 5, 6, 7)
    connect_timeout,           ///< no connection in time (code 28 before anything was sent)
    tls_handshake_failed,      ///< the TLS handshake failed, a retry may pass: reset, an internal error (CURLE 35)
    tls_certificate_rejected,  ///< the peer's certificate was not accepted (CURLE 58, 59, 60, 77, 83, 90, 91)
    read_timeout,              ///< silence longer than the read limit (resil's timer; reported as code 28)
    total_timeout,             ///< the attempt's total limit passed (code 28 once connected)
    connection_lost,           ///< reset, closed, or a short body (CURLE 18, 52, 55, 56)
    protocol_error,            ///< the server's reply was not valid HTTP (CURLE 1 once sent, 8, 16, 61, 92, ...)
    body_too_large,            ///< the body (received or announced) exceeded client_options::max_body_bytes
    headers_too_large,         ///< the header fields exceeded client_options::max_header_bytes
    invalid_request,           ///< libcurl refused the request itself (CURLE 1, 3, 43, ...)
    other_error,               ///< any other libcurl failure; see curl_code()
    // Streamed bodies (client::stream, resil/curl/streaming.hpp):
    first_byte_timeout,        ///< no body byte within stream_options::first_byte of the request's send (code 28)
    stream_interrupted,        ///< the stream ended early after bytes reached the sink; the cause: interrupted_by()
    /// The peer refused the TLS handshake with an alert a retry would get
    /// again: no client certificate, one it does not accept, no TLS version,
    /// cipher or application protocol (ALPN) in common (CURLE 35, 98, and
    /// over TLS 1.3 CURLE 55 or 56 once the client's side of the handshake
    /// ended). Nothing reached the server's application; never retried.
    tls_handshake_refused,
};

/// The status's name, e.g. "read_timeout".
[[nodiscard]] constexpr enum_name to_string(transport_status s) noexcept {
    switch (s) {
        case transport_status::completed: return "completed";
        case transport_status::deadline_exceeded: return "deadline_exceeded";
        case transport_status::cancelled: return "cancelled";
        case transport_status::connect_failed: return "connect_failed";
        case transport_status::connect_timeout: return "connect_timeout";
        case transport_status::tls_handshake_failed: return "tls_handshake_failed";
        case transport_status::tls_certificate_rejected: return "tls_certificate_rejected";
        case transport_status::read_timeout: return "read_timeout";
        case transport_status::total_timeout: return "total_timeout";
        case transport_status::connection_lost: return "connection_lost";
        case transport_status::protocol_error: return "protocol_error";
        case transport_status::body_too_large: return "body_too_large";
        case transport_status::headers_too_large: return "headers_too_large";
        case transport_status::invalid_request: return "invalid_request";
        case transport_status::other_error: return "other_error";
        case transport_status::first_byte_timeout: return "first_byte_timeout";
        case transport_status::stream_interrupted: return "stream_interrupted";
        case transport_status::tls_handshake_refused: return "tls_handshake_refused";
    }
    return "unknown";
}

/// Where the time of one attempt went, measured by libcurl from the start of
/// the transfer. Zero for what did not happen.
struct transfer_timings {
    duration connect{};     ///< TCP connected (zero on a reused connection)
    duration first_byte{};  ///< first response byte received
    duration total{};       ///< the whole transfer
    bool reused_connection = false;  ///< sent on a kept-alive connection
};

/// The default name of the millisecond pushback header.
inline constexpr std::string_view default_pushback_header = "grpc-retry-pushback-ms";

/// What one attempt produced: the HTTP response if one arrived, otherwise how
/// the transfer failed, and in both cases whether the request may have reached
/// the server; the server's hints (Retry-After, pushback, rate-limit fields)
/// read from it. A plain value.
class response {
public:
    /// A response as if a server had sent it: for fakes in tests and for
    /// fallbacks. Reads Retry-After (against `now`) and the default pushback
    /// header like a real one. Throws std::invalid_argument for a status
    /// outside [100, 999] or an invalid header field.
    [[nodiscard]] static response from_parts(int status, std::initializer_list<header_field> headers = {},
                                             std::string body = {},
                                             std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
        if (status < 100 || status > 999)
            throw std::invalid_argument("resil::curl::response: status must be in [100, 999], got " +
                                        std::to_string(status));
        response r;
        r.s_.transport_ = transport_status::completed;
        r.s_.status_ = status;
        r.s_.may_have_reached_ = true;
        for (const auto& h : headers) {
            if (!detail::is_token(h.name))
                throw std::invalid_argument("resil::curl::response: bad header name " + detail::quote_for_error(h.name));
            for (const char c : h.value)
                if (detail::is_forbidden_in_value(c))
                    throw std::invalid_argument("resil::curl::response: bad value for header " + std::string(h.name));
            r.headers_.add(h.name, detail::trim_ows(h.value));
        }
        r.body_ = std::move(body);
        r.read_server_hints(default_pushback_header, now);
        return r;
    }

    /// A failed transfer, as the client reports one: for fakes in tests.
    /// `code` is the libcurl code to report (e.g. CURLE_COULDNT_CONNECT).
    /// Throws std::invalid_argument for transport_status::completed.
    [[nodiscard]] static response from_failure(transport_status status, CURLcode code, bool may_have_reached_server) {
        if (status == transport_status::completed)
            throw std::invalid_argument("resil::curl::response::from_failure: a completed transfer needs from_parts");
        response r;
        r.s_.transport_ = status;
        r.s_.code_ = code;
        r.s_.may_have_reached_ = may_have_reached_server;
        return r;
    }

    /// Records what the request was, as the client does: whether it carried an
    /// idempotency key, and whether it was safe to repeat (idempotent or keyed).
    /// The classifier reads both (409 on a keyed request is retryable, ...).
    response& set_request_traits(bool carried_idempotency_key, bool repeatable) & noexcept {
        s_.keyed_ = carried_idempotency_key;
        s_.repeatable_ = repeatable || carried_idempotency_key;
        return *this;
    }
    /// set_request_traits() on a temporary.
    response&& set_request_traits(bool carried_idempotency_key, bool repeatable) && noexcept {
        return std::move(set_request_traits(carried_idempotency_key, repeatable));
    }

    /// True when a whole response arrived with a 2xx status.
    [[nodiscard]] bool ok() const noexcept { return completed() && s_.status_ >= 200 && s_.status_ <= 299; }
    /// True when a whole response arrived, whatever its status.
    [[nodiscard]] bool completed() const noexcept { return s_.transport_ == transport_status::completed; }
    /// The HTTP status; for a transfer that failed, the status line received
    /// before it failed, or 0 when none was.
    [[nodiscard]] int status() const noexcept { return s_.status_; }
    /// How the transfer ended: completed, or which failure.
    [[nodiscard]] transport_status transport() const noexcept { return s_.transport_; }
    /// libcurl's code for the transfer (CURLE_OK when completed). resil's own
    /// limits report CURLE_OPERATION_TIMEDOUT (read timeout, no time left)
    /// and CURLE_ABORTED_BY_CALLBACK (cancelled).
    [[nodiscard]] CURLcode curl_code() const noexcept { return s_.code_; }
    /// libcurl's error text for a failed transfer; empty otherwise.
    [[nodiscard]] std::string_view error_message() const noexcept { return error_; }
    /// False only when the request cannot have reached the server's
    /// application: no byte of it can have left this process (refused,
    /// connect timeout, not started), or the server refused the TLS
    /// handshake (transport_status::tls_handshake_refused: over TLS 1.3 the
    /// request may have been written after the client's side of the
    /// handshake, and the server's TLS layer discarded it). Then repeating it
    /// is safe whatever the method.
    [[nodiscard]] bool may_have_reached_server() const noexcept { return s_.may_have_reached_; }

    /// The header fields of the final response (not of 1xx or redirects).
    [[nodiscard]] header_list headers() const noexcept { return header_list{headers_}; }
    /// Fields sent after a chunked body (trailers), kept apart from the head:
    /// they never replace a header field and are never read for hints.
    [[nodiscard]] header_list trailers() const noexcept { return header_list{trailers_}; }
    /// The first field named `name` (any letter case), if any.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept {
        return headers_.find(name);
    }
    /// The field line named `name` at `nth` among those lines (0: the
    /// first), if there are that many: a field sent on several lines.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name, std::size_t nth) const noexcept {
        return headers_.find(name, nth);
    }
    /// The body received; empty when none.
    [[nodiscard]] const std::string& body() const& noexcept { return body_; }
    /// The body, moved out.
    [[nodiscard]] std::string body() && noexcept { return std::move(body_); }

    /// The server's Retry-After as a duration (at most retry_after_max), if it
    /// sent a valid one with a status other than 2xx; a past date reads as zero.
    [[nodiscard]] std::optional<duration> retry_after() const noexcept { return s_.retry_after_; }
    /// The pushback header's value in milliseconds, if valid and the status is
    /// not 2xx; negative means "don't retry".
    [[nodiscard]] std::optional<std::chrono::milliseconds> pushback() const noexcept { return s_.pushback_; }
    /// The system-clock moment the server hints were read against (Retry-After
    /// dates, Unix-time resets): when a response other than 2xx arrived, or
    /// from_parts's `now`; empty when they were not read.
    [[nodiscard]] std::optional<std::chrono::system_clock::time_point> received_at() const noexcept {
        return s_.received_at_;
    }
    /// The rate-limit fields of the response (resil/rate_limit_fields.hpp), parsed
    /// now from its header fields (a RateLimit field from every line it came
    /// on), without allocating; Unix-time and RFC 3339 resets are
    /// measured from received_at(), or from this moment when that is empty
    /// (a 2xx from the client).
    [[nodiscard]] rate_limit_info rate_limit() const noexcept {
        return rate_limit(s_.received_at_ ? *s_.received_at_ : std::chrono::system_clock::now());
    }
    /// As rate_limit(), with resets measured from `now`.
    [[nodiscard]] RESIL_DECL rate_limit_info rate_limit(std::chrono::system_clock::time_point now) const noexcept;
    /// The request carried an Idempotency-Key (added by the client or the caller).
    [[nodiscard]] bool carried_idempotency_key() const noexcept { return s_.keyed_; }
    /// The request was idempotent or keyed: repeating it is harmless.
    [[nodiscard]] bool repeatable() const noexcept { return s_.repeatable_; }
    /// When each phase of the transfer ended (libcurl's timings).
    [[nodiscard]] const transfer_timings& timings() const noexcept { return s_.timings_; }
    /// Body bytes handed to a stream's sink (client::stream); 0 otherwise.
    [[nodiscard]] std::size_t delivered_bytes() const noexcept { return s_.delivered_; }
    /// For transport_status::stream_interrupted, what ended the stream:
    /// read_timeout (the idle limit or the read limit), connection_lost (a
    /// cut), total_timeout, body_too_large, cancelled (the stop token or the
    /// sink's stream_action::stop), ...; `completed` otherwise.
    [[nodiscard]] transport_status interrupted_by() const noexcept { return s_.interrupted_by_; }
    /// The HTTP version of the response whose status line status() reports:
    /// 10, 11, 20 or 30 (CURLINFO_HTTP_VERSION), also when the transfer
    /// failed after that head (a stream cut after its 200). From the
    /// clients, 0 exactly when status() is 0 (no status line arrived);
    /// from_parts and from_failure leave it 0.
    [[nodiscard]] int http_version() const noexcept { return s_.http_version_; }

private:
    friend struct detail::response_access;
    response() = default;

    // Back to what a new response holds, keeping the buffers of the body,
    // the fields and the error text: a response filled again and again
    // (client::perform into a response, client::recycle) allocates only
    // when a reply outgrows them. Every other member is in `s_`, reset as a
    // whole.
    RESIL_DECL void clear_keeping_buffers() noexcept;

    // Hints matter only when an attempt failed: a 2xx is never retried, so
    // its fields are not searched (this runs for every response).
    RESIL_DECL void read_server_hints(std::string_view pushback_header,
                                      std::chrono::system_clock::time_point now) noexcept;

    detail::field_store headers_;
    detail::field_store trailers_;
    std::string body_;
    std::string error_;
    // Every member but the buffers, reset as one by clear_keeping_buffers:
    // one added here cannot be forgotten there.
    struct state {
        std::optional<duration> retry_after_{};
        std::optional<std::chrono::milliseconds> pushback_{};
        std::optional<std::chrono::system_clock::time_point> received_at_{};
        transfer_timings timings_{};
        std::size_t delivered_ = 0;
        int status_ = 0;
        int http_version_ = 0;
        CURLcode code_ = CURLE_OK;
        transport_status transport_ = transport_status::completed;
        transport_status interrupted_by_ = transport_status::completed;
        bool may_have_reached_ = false;
        bool keyed_ = false;
        bool repeatable_ = false;
    };
    state s_{};
};

#if RESIL_DETAIL_BODIES
RESIL_DECL rate_limit_info response::rate_limit(std::chrono::system_clock::time_point now) const noexcept {
    return read_rate_limit(resil::detail::fields_lookup<response>{this}, now);
}

RESIL_DECL void response::clear_keeping_buffers() noexcept {
    headers_.clear();
    trailers_.clear();
    body_.clear();
    error_.clear();
    s_ = state{};
}

RESIL_DECL void response::read_server_hints(std::string_view pushback_header,
                                           std::chrono::system_clock::time_point now) noexcept {
    s_.retry_after_.reset();
    s_.pushback_.reset();
    s_.received_at_ = now;
    if (s_.status_ >= 200 && s_.status_ <= 299) return;
    if (auto value = headers_.find("Retry-After")) {
        if (auto wait = parse_retry_after(*value, now)) s_.retry_after_ = std::chrono::duration_cast<duration>(*wait);
    }
    if (!pushback_header.empty()) {
        if (auto value = headers_.find(pushback_header)) {
            if (auto ms = detail::parse_milliseconds(*value)) s_.pushback_ = std::chrono::milliseconds{*ms};
        }
    }
}
#endif

namespace detail {

/// How the client and libcurl's callbacks fill a response as the transfer
/// reports it; not for users (they build responses with from_parts and
/// from_failure).
struct response_access {
    [[nodiscard]] static response blank() { return response{}; }
    /// Blank again, as blank() makes one, with its buffers kept.
    static void clear(response& r) noexcept { r.clear_keeping_buffers(); }
    static int& status(response& r) noexcept { return r.s_.status_; }
    static transport_status& transport(response& r) noexcept { return r.s_.transport_; }
    static CURLcode& code(response& r) noexcept { return r.s_.code_; }
    static bool& may_have_reached(response& r) noexcept { return r.s_.may_have_reached_; }
    static std::string& error(response& r) noexcept { return r.error_; }
    static transfer_timings& timings(response& r) noexcept { return r.s_.timings_; }
    static std::size_t& delivered(response& r) noexcept { return r.s_.delivered_; }
    static transport_status& interrupted_by(response& r) noexcept { return r.s_.interrupted_by_; }
    static int& http_version(response& r) noexcept { return r.s_.http_version_; }
    static std::string& body(response& r) noexcept { return r.body_; }
    static field_store& headers(response& r) noexcept { return r.headers_; }
    static field_store& trailers(response& r) noexcept { return r.trailers_; }
    static void read_server_hints(response& r, std::string_view pushback_header,
                                  std::chrono::system_clock::time_point now) noexcept {
        r.read_server_hints(pushback_header, now);
    }
};

}  // namespace detail
}  // namespace resil::curl
