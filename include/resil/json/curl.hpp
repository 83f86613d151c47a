// resil/json/curl.hpp — the JSON keys of the libcurl client's options
// (resil/curl/options.hpp, transport.hpp, connections.hpp, share.hpp,
// streaming.hpp, sse_stream.hpp), read and written by resil::json::read and
// write as every options type is: strict, with the JSON path and a "did you
// mean" in every error, the ranges and the files left to each type's
// validate() (a CA file named must be readable when it is read).
//
//   auto o = resil::json::read<resil::curl::client_options>(j["transport"], "transport");
//   // {"limits": {"connect": "2s"}, "http_version": "http1_1",
//   //  "tls": {"ca_file": "/etc/ca.pem", "minimum_version": "tls1_3"},
//   //  "proxy": {"url": "http://proxy.internal:3128", "username": "svc", "password": "..."},
//   //  "redirects": {"max": 3}, "connections": {"max_connection_age": "5m"}}
//   // {"tls": {"ca_fil": "x"}} → config_error
//   //   "transport.tls.ca_fil: unknown key; did you mean "ca_file"? (expected one of: ...)"
//
// Code, not configuration (neither read nor written): client_options'
// `shared` (a shared_cache object, made in code and shared by clients) and
// `configure_handle` (a function). Secrets — tls.private_key_password and
// proxy.password — are read but never written, so that configuration shown
// in a log or a status page cannot leak them; a file written by write()
// lacks them (docs/configuration.md, "Secrets").
//
// Unlike the rest of resil::json, this header needs libcurl's headers: it
// is not in resil/json.hpp, and a program that includes it links both the
// resil::json and the resil::curl CMake targets.
#pragma once

#include <array>
#include <string_view>

#include "../curl/connections.hpp"
#include "../curl/options.hpp"
#include "../curl/share.hpp"
#include "../curl/sse_stream.hpp"
#include "../curl/streaming.hpp"
#include "../curl/transport.hpp"
#include "conversions.hpp"
#include "detail/options_instances.hpp"
#include "fields.hpp"
#include "read.hpp"
#include "sse.hpp"
#include "write.hpp"

namespace resil::json::detail {

template <>
struct enumerators<curl::key_header_format> {
    static constexpr std::string_view what = "an idempotency key format";
    static constexpr std::array values{curl::key_header_format::quoted, curl::key_header_format::unquoted,
                                       curl::key_header_format::none};
    static constexpr std::array<std::string_view, 3> names{"quoted", "unquoted", "none"};
};

template <>
struct enumerators<curl::tls_version> {
    static constexpr std::string_view what = "a TLS version";
    static constexpr std::array values{curl::tls_version::library_default, curl::tls_version::tls1_2,
                                       curl::tls_version::tls1_3};
    static constexpr std::array<std::string_view, 3> names{"library_default", "tls1_2", "tls1_3"};
};

template <>
struct enumerators<curl::http_version> {
    static constexpr std::string_view what = "an HTTP version";
    static constexpr std::array values{curl::http_version::http1_1, curl::http_version::http2_tls,
                                       curl::http_version::http2_prior_knowledge};
    static constexpr std::array<std::string_view, 3> names{"http1_1", "http2_tls", "http2_prior_knowledge"};
};

/// The private key's passphrase is a secret: read, never written.
template <>
struct fields<curl::tls_options> {
    using T = curl::tls_options;
    static constexpr auto list = field_list{
        key("ca_file", &T::ca_file),
        key("ca_directory", &T::ca_directory),
        key("client_certificate", &T::client_certificate),
        key("private_key", &T::private_key),
        key<as_secret>("private_key_password", &T::private_key_password),
        key("pinned_public_key", &T::pinned_public_key),
        key("minimum_version", &T::minimum_version),
        key("accept_invalid_certificates", &T::accept_invalid_certificates),
    };
};

/// The password is a secret: read, never written.
template <>
struct fields<curl::proxy_options> {
    using T = curl::proxy_options;
    static constexpr auto list = field_list{key("url", &T::url), key("no_proxy", &T::no_proxy),
                                            key("username", &T::username), key<as_secret>("password", &T::password)};
};

template <>
struct fields<curl::redirect_options> {
    using T = curl::redirect_options;
    static constexpr auto list = field_list{key("max", &T::max), key("allow_https_to_http", &T::allow_https_to_http)};
};

/// Durations libcurl applies are whole seconds ("90s", "5m"; "1.5s" is
/// refused); max_idle_for_unrepeatable is whole milliseconds.
template <>
struct fields<curl::connection_options> {
    using T = curl::connection_options;
    static constexpr auto list = field_list{
        key("resolve", &T::resolve),
        key("connect_to", &T::connect_to),
        key("dns_cache_lifetime", &T::dns_cache_lifetime),
        key("max_connection_age", &T::max_connection_age),
        key("max_connection_idle", &T::max_connection_idle),
        key("max_idle_for_unrepeatable", &T::max_idle_for_unrepeatable),
        key("tcp_keepalive", &T::tcp_keepalive),
        key("tcp_keepalive_idle", &T::tcp_keepalive_idle),
        key("tcp_keepalive_interval", &T::tcp_keepalive_interval),
    };
};

/// Every client option but `shared` and `configure_handle` (code, not
/// configuration). `limits` is an object of "connect", "read" and "total"
/// (null: no limit), as the pipeline's "timeouts".
template <>
struct fields<curl::client_options> {
    using T = curl::client_options;
    static constexpr auto list = field_list{
        key("limits", &T::limits),
        key("idempotency_key", &T::idempotency_key),
        key("idempotency_key_header", &T::idempotency_key_header),
        key("propagate_deadline", &T::propagate_deadline),
        key("max_body_bytes", &T::max_body_bytes),
        key("max_header_bytes", &T::max_header_bytes),
        key("pushback_header", &T::pushback_header),
        key("user_agent", &T::user_agent),
        key("tls", &T::tls),
        key("proxy", &T::proxy),
        key("http_version", &T::http_version),
        key("redirects", &T::redirects),
        key("connections", &T::connections),
    };
};

template <>
struct fields<curl::shared_cache_options> {
    using T = curl::shared_cache_options;
    static constexpr auto list = field_list{key("dns", &T::dns), key("tls_sessions", &T::tls_sessions)};
};

/// Both null for "no limit", as a timeout.
template <>
struct fields<curl::stream_options> {
    using T = curl::stream_options;
    static constexpr auto list = field_list{key<as_limit>("first_byte", &T::first_byte), key<as_limit>("idle", &T::idle)};
};

template <>
struct fields<curl::sse_stream_options> {
    using T = curl::sse_stream_options;
    static constexpr auto list = field_list{key("reader", &T::reader),
                                            key("require_event_stream", &T::require_event_stream),
                                            key("resume", &T::resume)};
};

}  // namespace resil::json::detail

// Compiled once with RESIL_SEPARATE_COMPILATION (json/detail/options_instances.hpp).
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::tls_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::proxy_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::redirect_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::connection_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::client_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::shared_cache_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::stream_options)
RESIL_JSON_DETAIL_EXTERN_OPTIONS(resil::curl::sse_stream_options)
