// resil/curl/transport.hpp — how a client reaches servers: TLS (CA,
// client certificate, pinned key, minimum version), a proxy, the HTTP
// version and redirects. Client-wide: client_options::tls, ::proxy,
// ::http_version, ::redirects, set once per libcurl handle.
//
//   resil::curl::client http({.tls = {.ca_file = "/etc/my-ca.pem",
//                                     .client_certificate = "me.pem", .private_key = "me.key"},
//                             .proxy = {.url = "http://proxy.internal:3128", .no_proxy = "localhost"},
//                             .http_version = resil::curl::http_version::http2_tls,
//                             .redirects = {.max = 3}});
//
// Files named here are checked when the client is made (validate()): a
// missing or unreadable CA file, CA directory, certificate, key or pinned
// key file is a std::invalid_argument naming the file, not a failure on the
// first request. An option this libcurl cannot honour (no HTTP/2, no HTTPS
// proxy support) is refused at construction too, with a std::runtime_error
// naming the libcurl option.
#pragma once

#include <curl/curl.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "../enum_name.hpp"
#include "../detail/platform.hpp"
#include "../validation.hpp"
#include "detail/text.hpp"
#include "transport_options.hpp"

namespace resil::curl {
namespace detail {

// Not std::invalid_argument: the options are valid, this libcurl cannot
// honour them (as connection_setup's refusals).
[[noreturn]] RESIL_DETAIL_COLD inline void throw_transport_refused(const char* option, std::string_view why,
                                                                  CURLcode result) {
    throw std::runtime_error(resil::detail::concat({"resil::curl::client: this libcurl refused ", option, " (",
                                                       why, "): ", curl_easy_strerror(result)}));
}

/// Sets the transport options on a new easy handle, once. Throws
/// std::runtime_error naming the option when libcurl refuses one (e.g. a
/// libcurl built without HTTP/2 or without HTTPS-proxy support), so the
/// client is never made with an option silently missing.
inline void apply_transport(CURL* e, const tls_options& tls, const proxy_options& proxy, http_version version,
                            const redirect_options& redirects) {
    const auto set = [e](CURLoption option, auto value, const char* name, std::string_view why) {
        if (const CURLcode r = curl_easy_setopt(e, option, value); r != CURLE_OK)
            throw_transport_refused(name, why, r);
    };
    const auto set_text = [&](CURLoption option, const std::string& value, const char* name) {
        if (!value.empty()) set(option, value.c_str(), name, "tls or proxy option");
    };
    // TLS to the server. libcurl copies every string it is given.
    set_text(CURLOPT_CAINFO, tls.ca_file, "CURLOPT_CAINFO");
    set_text(CURLOPT_CAPATH, tls.ca_directory, "CURLOPT_CAPATH");
    set_text(CURLOPT_SSLCERT, tls.client_certificate, "CURLOPT_SSLCERT");
    set_text(CURLOPT_SSLKEY, tls.private_key, "CURLOPT_SSLKEY");
    set_text(CURLOPT_KEYPASSWD, tls.private_key_password, "CURLOPT_KEYPASSWD");
    set_text(CURLOPT_PINNEDPUBLICKEY, tls.pinned_public_key, "CURLOPT_PINNEDPUBLICKEY");
    switch (tls.minimum_version) {
        case tls_version::library_default: break;
        case tls_version::tls1_2:
            set(CURLOPT_SSLVERSION, long{CURL_SSLVERSION_TLSv1_2}, "CURLOPT_SSLVERSION", "minimum TLS 1.2");
            break;
        case tls_version::tls1_3:
            set(CURLOPT_SSLVERSION, long{CURL_SSLVERSION_TLSv1_3}, "CURLOPT_SSLVERSION", "minimum TLS 1.3");
            break;
    }
    const long verify = tls.accept_invalid_certificates ? 0L : 1L;
    set(CURLOPT_SSL_VERIFYPEER, verify, "CURLOPT_SSL_VERIFYPEER", "accept_invalid_certificates");
    set(CURLOPT_SSL_VERIFYHOST, verify * 2L, "CURLOPT_SSL_VERIFYHOST", "accept_invalid_certificates");

    // The proxy, and TLS to an https:// proxy with the same trust — also for
    // one libcurl takes from the environment when `url` is empty.
    if (!proxy.url.empty()) {
        if (starts_with_scheme(proxy.url, "https://") &&
            (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTPS_PROXY) == 0)
            throw_transport_refused("CURLOPT_PROXY", "an https:// proxy", CURLE_NOT_BUILT_IN);
        set(CURLOPT_PROXY, proxy.url.c_str(), "CURLOPT_PROXY", "proxy.url");
    }
    set_text(CURLOPT_PROXY_CAINFO, tls.ca_file, "CURLOPT_PROXY_CAINFO");
    set_text(CURLOPT_PROXY_CAPATH, tls.ca_directory, "CURLOPT_PROXY_CAPATH");
    set(CURLOPT_PROXY_SSL_VERIFYPEER, verify, "CURLOPT_PROXY_SSL_VERIFYPEER", "accept_invalid_certificates");
    set(CURLOPT_PROXY_SSL_VERIFYHOST, verify * 2L, "CURLOPT_PROXY_SSL_VERIFYHOST", "accept_invalid_certificates");
    set_text(CURLOPT_PROXYUSERNAME, proxy.username, "CURLOPT_PROXYUSERNAME");
    set_text(CURLOPT_PROXYPASSWORD, proxy.password, "CURLOPT_PROXYPASSWORD");
    set_text(CURLOPT_NOPROXY, proxy.no_proxy, "CURLOPT_NOPROXY");

    // libcurl refuses a version it was built without (CURLE_UNSUPPORTED_PROTOCOL).
    switch (version) {
        case http_version::http1_1:
            set(CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_1_1}, "CURLOPT_HTTP_VERSION", "HTTP/1.1");
            break;
        case http_version::http2_tls:
            set(CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_2TLS}, "CURLOPT_HTTP_VERSION", "HTTP/2 over TLS");
            break;
        case http_version::http2_prior_knowledge:
            set(CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE}, "CURLOPT_HTTP_VERSION",
                "HTTP/2 with prior knowledge");
            // libcurl before 8.0.0 fails every request on a reused h2c
            // connection with CURLE_HTTP2, sending nothing (curl#10634): each
            // request opens its own connection instead.
            if (curl_version_info(CURLVERSION_NOW)->version_num < 0x080000)
                set(CURLOPT_FORBID_REUSE, 1L, "CURLOPT_FORBID_REUSE", "h2c before libcurl 8.0.0");
            break;
    }

    // Redirects: off unless asked. Whether a request follows them, and to
    // which schemes, is set per request (detail/redirect_setup.hpp). A POST
    // stays a POST across 301 and 302 (RFC 9110 allows either; a silent GET
    // would answer for an operation never carried out) and becomes a GET on
    // a 303, as RFC 9110 §15.4.4 requires.
    set(CURLOPT_FOLLOWLOCATION, redirects.max > 0 ? 1L : 0L, "CURLOPT_FOLLOWLOCATION", "redirects.max");
    if (redirects.max > 0) {
        set(CURLOPT_MAXREDIRS, static_cast<long>(redirects.max), "CURLOPT_MAXREDIRS", "redirects.max");
        set(CURLOPT_POSTREDIR, long{CURL_REDIR_POST_301 | CURL_REDIR_POST_302}, "CURLOPT_POSTREDIR",
            "redirects.max");
    }
}

}  // namespace detail
}  // namespace resil::curl
