// resil/curl/describe.hpp — one line saying how a client is configured, for
// a start-up log: limits, TLS (loudly when certificate verification is
// off), proxy (never its password), HTTP version, redirects.
//
//   log(resil::curl::describe(http.options()));
//   // "limits connect 10s read 1m total 5m; max body 67108864 B; max header 262144 B;
//   //  tls verified (system CA store), minimum library default; proxy none set (libcurl reads
//   //  http_proxy/https_proxy/no_proxy from the environment); HTTP/2 over TLS (ALPN, else
//   //  HTTP/1.1); redirects off"
//   // verification off reads "tls CERTIFICATE VERIFICATION OFF (accept_invalid_certificates: ...)"
#pragma once

#include <string>
#include <string_view>

#include "../duration_text.hpp"
#include "../timeouts.hpp"
#include "options.hpp"
#include "transport.hpp"

namespace resil::curl {

/// How `options` configure a client, in one line (see the banner). Secrets
/// (the key password, the proxy password) are never shown; the proxy URL is
/// shown without any user:password part.
[[nodiscard]] inline std::string describe(const client_options& options) {
    std::string out;
    const auto limit = [](std::chrono::milliseconds v) {
        return v == resil::timeouts::no_limit ? std::string("none") : resil::format_duration(v);
    };
    out += "limits connect " + limit(options.limits.connect) + " read " + limit(options.limits.read) + " total " +
           limit(options.limits.total);
    out += "; max body " + std::to_string(options.max_body_bytes) + " B; max header " +
           std::to_string(options.max_header_bytes) + " B";

    const auto& tls = options.tls;
    if (tls.accept_invalid_certificates) {
        out += "; tls CERTIFICATE VERIFICATION OFF (accept_invalid_certificates: any server certificate and "
               "host name accepted)";
    } else {
        out += "; tls verified (";
        if (tls.ca_file.empty() && tls.ca_directory.empty()) out += "system CA store";
        if (!tls.ca_file.empty()) out += "CA file " + tls.ca_file;
        if (!tls.ca_directory.empty()) out += (tls.ca_file.empty() ? "CA directory " : ", CA directory ") + tls.ca_directory;
        out += ")";
    }
    out += ", minimum ";
    out += to_string(tls.minimum_version);
    if (!tls.client_certificate.empty()) out += ", client certificate " + tls.client_certificate;
    if (!tls.pinned_public_key.empty()) out += ", pinned key " + tls.pinned_public_key;

    const auto& proxy = options.proxy;
    if (proxy.url.empty()) {
        out += "; proxy none set (libcurl reads http_proxy/https_proxy/no_proxy from the environment)";
    } else {
        // "scheme://user:secret@host" shows as "scheme://host".
        std::string_view url = proxy.url;
        const auto scheme_end = url.find("://");
        const auto at = url.find('@', scheme_end == std::string_view::npos ? 0 : scheme_end + 3);
        const auto slash = url.find('/', scheme_end == std::string_view::npos ? 0 : scheme_end + 3);
        out += "; proxy ";
        if (at != std::string_view::npos && scheme_end != std::string_view::npos && at < slash) {
            out += url.substr(0, scheme_end + 3);
            out += url.substr(at + 1);
        } else {
            out += url;
        }
        if (!proxy.username.empty()) out += " as " + proxy.username;
        if (!proxy.no_proxy.empty()) out += ", not for " + proxy.no_proxy;
    }
    out += "; ";
    out += to_string(options.http_version);
    if (options.redirects.max > 0) {
        out += "; redirects up to " + std::to_string(options.redirects.max) + " (repeatable requests only";
        out += options.redirects.allow_https_to_http ? ", HTTPS TO HTTP ALLOWED)" : ")";
    } else {
        out += "; redirects off";
    }
    return out;
}

}  // namespace resil::curl
