// resil/curl/detail/tls_refusal.hpp — whether a failed transfer's TLS
// handshake was refused by the server, read from libcurl's error text: a
// refusal is never sent and permanent (transport_status::tls_handshake_refused).
//
//   "OpenSSL/3.0.22: error:0A000410:SSL routines::sslv3 alert handshake failure"   (TLS 1.2, CURLE 35)
//   "OpenSSL SSL_read: OpenSSL/3.0.22: error:0A00045C:SSL routines::tlsv13 alert
//    certificate required, errno 0"                                                 (TLS 1.3, CURLE 56)
//
// libcurl reports an OpenSSL failure with the error code OpenSSL put on its
// queue, printed in hex whatever the build's error strings. Its reason is
// 1000 + the alert's number for an alert the peer sent (SSL_AD_REASON_OFFSET).
// The code is read, not the words: LibreSSL and OpenSSL 1.1 pack it as
// lib << 24 | reason (12 bits), OpenSSL 3 as lib << 23 | reason (23 bits); the
// SSL library is 20 in all of them, and the two packings never mistake one
// for the other. libcurl's other TLS backends (GnuTLS, wolfSSL, Schannel,
// ...) print no such code: there a refusal stays tls_handshake_failed
// (retryable, never sent) or, over TLS 1.3, connection_lost (ambiguous).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace resil::curl::detail {

struct tls_refusal {
    /// The reason of the first OpenSSL error code in `error_text` (libcurl's
    /// error buffer), when it is one of the SSL library's; nothing otherwise.
    [[nodiscard]] static constexpr std::optional<std::uint32_t> ssl_reason(std::string_view error_text) noexcept {
        constexpr std::string_view tag = "error:";
        for (std::size_t at = error_text.find(tag); at != std::string_view::npos;
             at = error_text.find(tag, at + 1)) {
            const auto hex = error_text.substr(at + tag.size());
            if (hex.size() < 9 || hex[8] != ':') continue;
            std::uint32_t code = 0;
            bool digits = true;
            for (std::size_t i = 0; i < 8 && digits; ++i) {
                const char c = hex[i];
                const int v = c >= '0' && c <= '9'   ? c - '0'
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                     : -1;
                digits = v >= 0;
                code = code << 4 | static_cast<std::uint32_t>(v < 0 ? 0 : v);
            }
            if (!digits) continue;
            constexpr std::uint32_t ssl_library = 20;  // ERR_LIB_SSL
            if ((code & 0x80000000u) != 0) return std::nullopt;  // OpenSSL 3: a system error (errno)
            if ((code >> 23 & 0xFFu) == ssl_library) return code & 0x7FFFFFu;  // OpenSSL 3
            if ((code >> 24 & 0xFFu) == ssl_library) return code & 0xFFFu;     // OpenSSL 1.1, LibreSSL
            return std::nullopt;
        }
        return std::nullopt;
    }

    /// The peer's TLS alert that a retry would draw again: it refused who
    /// the client is or what it offers. Not the alerts of a failure that
    /// may pass (internal_error, a bad record MAC, decode or decrypt errors,
    /// an unknown PSK identity, which a full handshake may replace).
    [[nodiscard]] static constexpr bool is_refusal_alert(std::uint32_t alert) noexcept {
        switch (alert) {
            case 40:   // handshake_failure: no acceptable parameters, or (TLS 1.2) no client certificate
            case 42:   // bad_certificate
            case 43:   // unsupported_certificate
            case 44:   // certificate_revoked
            case 45:   // certificate_expired
            case 46:   // certificate_unknown
            case 48:   // unknown_ca: the client certificate's issuer is not trusted
            case 49:   // access_denied
            case 70:   // protocol_version: no TLS version in common
            case 71:   // insufficient_security: no cipher strong enough for the server
            case 109:  // missing_extension
            case 110:  // unsupported_extension
            case 112:  // unrecognized_name: the server serves no such name (SNI)
            case 116:  // certificate_required (TLS 1.3)
            case 120:  // no_application_protocol: no ALPN protocol in common
                return true;
            default: return false;
        }
    }

    /// Whether `error_text` says the handshake was refused for good: the
    /// peer sent a refusal alert, or the client found no TLS version in
    /// common with the server's choice (SSL_R_UNSUPPORTED_PROTOCOL).
    [[nodiscard]] static constexpr bool refused(std::string_view error_text) noexcept {
        const auto reason = ssl_reason(error_text);
        if (!reason) return false;
        constexpr std::uint32_t alert_offset = 1000;      // SSL_AD_REASON_OFFSET
        constexpr std::uint32_t unsupported_protocol = 258;  // SSL_R_UNSUPPORTED_PROTOCOL
        if (*reason == unsupported_protocol) return true;
        return *reason >= alert_offset && *reason < alert_offset + 256 && is_refusal_alert(*reason - alert_offset);
    }
};

}  // namespace resil::curl::detail
