// resil/curl/detail/transfer_result.hpp — what a transfer that ended comes
// to: libcurl's code and what resil's own limits saw mapped onto a
// transport_status, whether the request may have reached the server, the
// status, timings and server hints. Shared by every way of driving a transfer.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "../options.hpp"
#include "../response.hpp"
#include "capture.hpp"
#include "handles.hpp"
#include "tls_refusal.hpp"

namespace resil::curl::detail {

/// How a transfer ended, seen from the loop that drove it.
enum class transfer_end : std::uint8_t {
    finished,      ///< libcurl finished it (successfully or not): its code says how
    read_timeout,  ///< resil's read-inactivity timer fired
    total_limit,   ///< resil's absolute end of the attempt passed
    cancelled,     ///< the stop token fired
    multi_error,   ///< libcurl's multi interface failed
    first_byte_timeout,  ///< a stream's first-byte timer fired (detail/stream.hpp)
    idle_timeout,        ///< a stream's idle timer fired
};

struct transfer_result {
    using A = response_access;

    /// Reads what libcurl knows of the ended transfer into `r` and names its
    /// outcome. `code`: libcurl's result when the transfer finished on its own.
    static void read(easy_state& s, response& r, transfer_end end, CURLcode code, const client_options& options) {
        CURL* e = s.easy;
        const auto& t = s.transfer;
        long status = 0;
        long request_size = 0;
        long new_connections = 0;
        curl_off_t pretransfer = 0;
        curl_off_t connect_us = 0;
        curl_off_t first_byte_us = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &new_connections);
        curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
        curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connect_us);
        curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &first_byte_us);

        A::status(r) = static_cast<int>(status);
        // Nothing of the request can have reached the server unless libcurl
        // was about to send it (a proxy's CONNECT counts in the request size
        // but comes before) and counted request bytes, or the server already
        // answered, or libcurl had sent it once before it wanted to send it again.
        const bool sent = (t.sends > 0 && (request_size > 0 || t.received > 0)) || t.replay_refused;
        const bool connected = pretransfer > 0 || sent;
        A::may_have_reached(r) = sent;
        A::timings(r).connect = std::chrono::microseconds{connect_us};
        A::timings(r).first_byte = std::chrono::microseconds{first_byte_us};
        A::timings(r).reused_connection = new_connections == 0 && connected;

        const auto fail = [&](transport_status why, CURLcode c, std::string_view message) {
            A::transport(r) = why;
            A::code(r) = c;
            A::error(r) = message;
        };
        switch (end) {
            case transfer_end::read_timeout:
                fail(transport_status::read_timeout, CURLE_OPERATION_TIMEDOUT,
                     "no data received or sent for longer than the read timeout");
                break;
            case transfer_end::total_limit:
                fail(connected ? transport_status::total_timeout : transport_status::connect_timeout,
                     CURLE_OPERATION_TIMEDOUT, "the attempt's total time limit passed");
                break;
            case transfer_end::cancelled:
                fail(transport_status::cancelled, CURLE_ABORTED_BY_CALLBACK, "cancelled through the stop token");
                break;
            case transfer_end::multi_error:
                // `code` says why where the caller knows (CURLE_OUT_OF_MEMORY:
                // the async client could not keep watching the call).
                fail(transport_status::other_error, code == CURLE_OK ? CURLE_FAILED_INIT : code,
                     "libcurl's multi interface failed");
                break;
            case transfer_end::first_byte_timeout:
                fail(transport_status::first_byte_timeout, CURLE_OPERATION_TIMEDOUT,
                     "no body byte within the stream's first_byte limit after the request was sent");
                break;
            case transfer_end::idle_timeout:
                fail(transport_status::read_timeout, CURLE_OPERATION_TIMEDOUT,
                     "no body byte for longer than the stream's idle limit");
                break;
            case transfer_end::finished:
                if (t.replay_refused) {
                    fail(transport_status::connection_lost, code,
                         "the reused connection closed before any answer; libcurl's own resend on a new "
                         "connection was refused, so that every send is the caller's decision");
                } else if (t.headers_too_large) {
                    fail(transport_status::headers_too_large, code, "the header fields exceed max_header_bytes");
                } else if (t.malformed) {
                    fail(transport_status::protocol_error, code, "a header line holds CR or NUL (RFC 9110 §5.5)");
                } else if (t.redirect_refused) {
                    // The redirect would have sent the request again (capture::may_send):
                    // its 3xx is the answer, whose body libcurl skipped.
                    A::code(r) = CURLE_OK;
                    A::transport(r) = transport_status::completed;
                    A::status(r) = t.block_status;
                } else if (code == CURLE_UNSUPPORTED_PROTOCOL && t.redirect_pending) {
                    disallowed_redirect(s, r, code);
                } else if (t.stream.done) {
                    A::code(r) = CURLE_OK;  // the sink has what it needs: a whole answer to the caller
                    A::transport(r) = transport_status::completed;
                } else if (t.stream.stopped) {
                    fail(transport_status::cancelled, code,
                         t.stream.thrown ? "the stream's sink threw" : "the stream's sink stopped it");
                } else if (t.too_large && t.stream.sink) {
                    fail(transport_status::body_too_large, code, "the streamed body exceeds max_body_bytes");
                } else if (long proxy_code = 0; code != CURLE_OK && t.sends == 0 &&
                           curl_easy_getinfo(e, CURLINFO_HTTP_CONNECTCODE, &proxy_code) == CURLE_OK &&
                           proxy_code >= 300) {
                    // The proxy answered CONNECT with an error (libcurl 7.88:
                    // CURLE_RECV_ERROR): the server never saw the request. A
                    // 4xx (forbidden, 407 credentials) will not change on a
                    // retry; a 5xx (the proxy could not reach the server) may.
                    fail(proxy_code < 500 ? transport_status::invalid_request : transport_status::connect_failed, code,
                         s.error[0] != '\0' ? s.error.data() : curl_easy_strerror(code));
                } else if (handshake_refused(code, s.error.data(), t, new_connections)) {
                    fail(transport_status::tls_handshake_refused, code,
                         s.error[0] != '\0' ? s.error.data() : curl_easy_strerror(code));
                    A::may_have_reached(r) = false;
                } else {
                    A::code(r) = code;
                    A::transport(r) = transport_of(code, connected, sent, t);
                    if (code != CURLE_OK) A::error(r) = s.error[0] != '\0' ? s.error.data() : curl_easy_strerror(code);
                }
                break;
        }
        if (A::transport(r) == transport_status::completed) capture::settle_body(r);
        if (t.stream.sink) stream_end(r, t.stream);
        if (A::transport(r) != transport_status::completed && !A::may_have_reached(r)) A::status(r) = 0;
        // Whenever a head arrived, as status(): a stream cut after its 200 still came over HTTP/2.
        if (A::status(r) != 0) read_http_version(s, r);
        // The server did not act on the request and wants another connection
        // (421), or dropped this one (408): the next attempt opens a new one.
        if (A::status(r) == 421 || A::status(r) == 408) s.fresh_connection_next = true;
        if (A::status(r) != 0 && (A::status(r) < 200 || A::status(r) > 299))
            A::read_server_hints(r, options.pushback_header, std::chrono::system_clock::now());
    }

    // libcurl refused the Location's scheme before connecting to it: an
    // https:// request redirected to http:// (redirects.allow_https_to_http
    // off), or to a scheme other than http(s). A failure path: may allocate.
    RESIL_DETAIL_COLD static void disallowed_redirect(const easy_state& s, response& r, CURLcode code) {
        A::transport(r) = transport_status::invalid_request;
        A::code(r) = code;
        std::string& error = A::error(r);
        error = "a redirect to a disallowed scheme was not followed (an https:// request follows https:// "
                "redirects only, unless redirects.allow_https_to_http): ";
        error += s.error[0] != '\0' ? s.error.data() : curl_easy_strerror(code);
    }

    // The first-byte rule (resil/curl/streaming.hpp): once the sink got a
    // byte, or refused the head, an early end is stream_interrupted, which
    // the classifier never retries; the cause stays readable.
    static void stream_end(response& r, const stream_state& s) {
        A::delivered(r) = s.delivered;
        if (A::transport(r) == transport_status::completed || (s.delivered == 0 && !s.stopped)) return;
        A::interrupted_by(r) = A::transport(r);
        A::transport(r) = transport_status::stream_interrupted;
        A::may_have_reached(r) = true;
        // A failure path: the message may allocate.
        std::string& error = A::error(r);
        const std::string cause = std::move(error);
        error = "the stream was interrupted after ";
        error += std::to_string(s.delivered);
        error += " bytes reached the caller (";
        error += to_string(A::interrupted_by(r));
        error += ": ";
        error += cause;
        error += ")";
    }

    // The server refused the TLS handshake (detail/tls_refusal.hpp): its
    // application saw nothing, and a retry would be refused alike. Over TLS
    // 1.2 and before, the refusal ends the handshake itself (CURLE 35, or 98
    // when OpenSSL names a missing client certificate there): nothing of the
    // request was written. Over TLS 1.3 the client's side of the handshake
    // ends with its Finished, before the server has judged the client's
    // certificate: libcurl takes the handshake for done
    // (CURLINFO_APPCONNECT_TIME_T is set), writes the request
    // (CURLINFO_REQUEST_SIZE counts it) and meets the alert at its first
    // read (CURLE 56) or write (55). The bytes written do not decide it: a
    // server's TLS layer hands no data on to its application before it has
    // accepted the client's Finished (RFC 8446 §4.4.4; libcurl 7.88 sends no
    // 0-RTT early data), so what decides is that the refusal is an alert of
    // the handshake — on a connection opened for this transfer (a reused one
    // finished its handshake long ago) before any byte of an answer (a
    // followed redirect means a server got the request). A server asking for
    // a certificate after the handshake (TLS 1.3 post-handshake
    // authentication, which libcurl answers) has read the request, but
    // refuses it without a certificate rather than act on it. A reset or a
    // timeout during the handshake leaves no alert: it stays retryable.
    static bool handshake_refused(CURLcode code, const char* error, const transfer_state& t,
                                  long new_connections) noexcept {
        if (t.received != 0 || t.replay_refused) return false;
        switch (code) {
            case CURLE_SSL_CLIENTCERT: return true;
            case CURLE_SSL_CONNECT_ERROR: return tls_refusal::refused(error);
            case CURLE_SEND_ERROR:
            case CURLE_RECV_ERROR: return new_connections > 0 && tls_refusal::refused(error);
            default: return false;
        }
    }

    // The response's HTTP version; the connection of a whole HTTP/2 answer
    // is remembered, so a resend after a send on it is known to be a
    // refused stream (capture::may_send).
    static void read_http_version(easy_state& s, response& r) noexcept {
        long version = 0;
        curl_easy_getinfo(s.easy, CURLINFO_HTTP_VERSION, &version);
        switch (version) {
            case CURL_HTTP_VERSION_1_0: A::http_version(r) = 10; break;
            case CURL_HTTP_VERSION_1_1: A::http_version(r) = 11; break;
            case CURL_HTTP_VERSION_2_0: A::http_version(r) = 20; break;
            case CURL_HTTP_VERSION_3: A::http_version(r) = 30; break;
            default: A::http_version(r) = 0; break;
        }
        if (A::http_version(r) != 20 || A::transport(r) != transport_status::completed) return;
        auto& known = s.transfer.http2_connection;
        const char* ip = nullptr;
        curl_easy_getinfo(s.easy, CURLINFO_PRIMARY_IP, &ip);
        curl_easy_getinfo(s.easy, CURLINFO_PRIMARY_PORT, &known.primary_port);
        curl_easy_getinfo(s.easy, CURLINFO_LOCAL_PORT, &known.local_port);
        known.ip[0] = '\0';
        if (ip && std::strlen(ip) < known.ip.size()) std::memcpy(known.ip.data(), ip, std::strlen(ip) + 1);
    }

    // `connected`: a connection existed; `sent`: a byte of the request may
    // have left (or an answer arrived).
    static transport_status transport_of(CURLcode code, bool connected, bool sent,
                                         const transfer_state& t) noexcept {
        switch (code) {
            case CURLE_OK: return transport_status::completed;
            case CURLE_COULDNT_RESOLVE_PROXY:
            case CURLE_COULDNT_RESOLVE_HOST:
            case CURLE_COULDNT_CONNECT: return transport_status::connect_failed;
            case CURLE_OPERATION_TIMEDOUT:
                return connected ? transport_status::total_timeout : transport_status::connect_timeout;
            case CURLE_SSL_CONNECT_ERROR: return transport_status::tls_handshake_failed;
            case CURLE_PEER_FAILED_VERIFICATION:
            case CURLE_SSL_CERTPROBLEM:
            case CURLE_SSL_CIPHER:
            case CURLE_SSL_CACERT_BADFILE:
            case CURLE_SSL_ISSUER_ERROR:
            case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            case CURLE_SSL_INVALIDCERTSTATUS: return transport_status::tls_certificate_rejected;
            case CURLE_PARTIAL_FILE:
            case CURLE_GOT_NOTHING:
            case CURLE_SEND_ERROR:
            case CURLE_RECV_ERROR: return transport_status::connection_lost;
            case CURLE_WEIRD_SERVER_REPLY:
            case CURLE_HTTP2:
            case CURLE_HTTP2_STREAM:
            case CURLE_BAD_CONTENT_ENCODING:
            case CURLE_HTTP3: return transport_status::protocol_error;
            case CURLE_WRITE_ERROR:
                if (t.too_large) return transport_status::body_too_large;
                return transport_status::other_error;
            case CURLE_FILESIZE_EXCEEDED: return transport_status::body_too_large;
            case CURLE_UNSUPPORTED_PROTOCOL:
                // A redirect to a disallowed scheme is refused before it is followed.
                if (t.redirect_pending) return transport_status::invalid_request;
                [[fallthrough]];
            case CURLE_BAD_FUNCTION_ARGUMENT:
                // The scheme and every option were checked before any I/O:
                // once the request went out, these are libcurl's words for a
                // reply that is not HTTP (a bad status line, HTTP/0.9, an
                // unknown version; a header or trailer line with no colon).
                return sent ? transport_status::protocol_error : transport_status::invalid_request;
            case CURLE_URL_MALFORMAT:
            case CURLE_TOO_MANY_REDIRECTS: return transport_status::invalid_request;
            default: return transport_status::other_error;
        }
    }
};

}  // namespace resil::curl::detail
