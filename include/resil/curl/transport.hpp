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

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "../enum_name.hpp"
#include "../detail/platform.hpp"
#include "../validation.hpp"
#include "detail/text.hpp"

namespace resil::curl {

/// The oldest TLS version a client accepts.
enum class tls_version : std::uint8_t {
    library_default,  ///< what libcurl and its TLS library allow (Debian 12's OpenSSL: TLS 1.2)
    tls1_2,
    tls1_3,
};

/// TLS to the server (and to an https:// proxy: the same CA file, CA
/// directory and verification switch). Empty strings mean libcurl's defaults
/// (the system CA store, no client certificate, no pinning).
struct tls_options {
    /// PEM file of CA certificates to trust instead of the system store (CURLOPT_CAINFO).
    std::string ca_file{};
    /// Directory of hashed CA certificates (c_rehash) to trust (CURLOPT_CAPATH).
    std::string ca_directory{};
    /// PEM client certificate for mutual TLS (CURLOPT_SSLCERT); may hold the key too.
    std::string client_certificate{};
    /// PEM private key of the client certificate (CURLOPT_SSLKEY).
    std::string private_key{};
    /// Passphrase of an encrypted private key (CURLOPT_KEYPASSWD); never shown by describe().
    std::string private_key_password{};
    /// CURLOPT_PINNEDPUBLICKEY: a PEM/DER public key file, or
    /// "sha256//<base64>" hashes joined by ';'. The server's key must match.
    std::string pinned_public_key{};
    /// Refuse servers that cannot speak at least this version (CURLOPT_SSLVERSION).
    tls_version minimum_version = tls_version::library_default;
    /// Turns off BOTH the check that the server's certificate chains to a
    /// trusted CA and the check that it names the host (CURLOPT_SSL_VERIFYPEER
    /// and CURLOPT_SSL_VERIFYHOST = 0): anyone on the path can then read and
    /// change the traffic. For tests against self-signed servers only;
    /// describe() says so loudly. Default false.
    bool accept_invalid_certificates = false;

    /// The first invalid field: every file named must be readable now, the CA
    /// directory a readable directory, a key or key password needs a client
    /// certificate, a "sha256//" pin must hold base64 SHA-256 hashes.
    [[nodiscard]] validation_result validate() const;
};

/// A forward proxy for every request. With `url` empty libcurl reads the
/// usual environment variables (http_proxy, https_proxy, no_proxy), as curl(1) does.
struct proxy_options {
    /// "http://host:port" or "https://host:port" (TLS to the proxy); a
    /// request to an https:// URL goes through a CONNECT tunnel (CURLOPT_PROXY).
    std::string url{};
    /// Hosts reached directly, comma-separated ("localhost,.internal,10.0.0.0/8";
    /// "*" for all), as CURLOPT_NOPROXY reads them.
    std::string no_proxy{};
    /// Credentials for the proxy, sent with Basic authentication
    /// (CURLOPT_PROXYUSERNAME, CURLOPT_PROXYPASSWORD); never shown by describe().
    std::string username{};
    /// The proxy password (with `username`); empty for none.
    std::string password{};

    /// The first invalid field: a URL that is empty or http(s):// with a host,
    /// no control characters or spaces anywhere, a password only with a username.
    [[nodiscard]] validation_result validate() const;
};

/// The HTTP version a client asks for (CURLOPT_HTTP_VERSION).
enum class http_version : std::uint8_t {
    http1_1,                ///< HTTP/1.1 only
    http2_tls,              ///< HTTP/2 when the TLS server offers it (ALPN), else 1.1; http:// URLs use 1.1
    http2_prior_knowledge,  ///< HTTP/2 without asking, also on http:// (h2c): only for servers known to speak it
};

/// Following redirects (CURLOPT_FOLLOWLOCATION, CURLOPT_MAXREDIRS,
/// CURLOPT_POSTREDIR, CURLOPT_REDIR_PROTOCOLS_STR). Following one sends the
/// request again, to the Location, so only a request that may be repeated
/// (idempotent, or carrying an idempotency key) follows; one that may not
/// gets the 3xx as it is, whatever the status — an operation that may not be
/// repeated reaches a server at most once. What a followed redirect sends
/// (RFC 9110 §15.4): 301, 302, 307 and 308 the same method and body; 303 a
/// GET without the body after a GET or POST (a HEAD stays a HEAD), and a 303
/// to any other method is returned as it is (libcurl would keep that method
/// and drop the body). docs/curl.md, "Redirects", has the table.
struct redirect_options {
    /// How many redirects one attempt follows; 0 (the default) follows none
    /// and returns the 3xx as it is. Only http:// and https:// targets are
    /// followed. One more redirect than `max` ends the attempt with
    /// transport_status::invalid_request (CURLE_TOO_MANY_REDIRECTS,
    /// permanent). At most 50.
    int max = 0;

    /// Off (the default): a request to an https:// URL follows https://
    /// redirects only, since an http:// one would carry its body, its
    /// idempotency key and every header (API keys) in cleartext; such a
    /// redirect ends the attempt with transport_status::invalid_request
    /// (CURLE_UNSUPPORTED_PROTOCOL, permanent), nothing sent to it. Only
    /// with `max` > 0.
    bool allow_https_to_http = false;

    /// The largest `max` validate() accepts.
    static constexpr int max_allowed = 50;

    /// The first invalid field: `max` in [0, 50]; `allow_https_to_http` only
    /// with `max` > 0 (else it would do nothing).
    [[nodiscard]] validation_result validate() const {
        if (auto bad = resil::detail::check_in_range("max", max, 0, max_allowed)) return bad;
        if (allow_https_to_http && max == 0)
            return invalid_option{"allow_https_to_http", "must be false while max is 0 (redirects off), got true"};
        return std::nullopt;
    }
};

/// The version as people read it, e.g. "TLS 1.2".
[[nodiscard]] constexpr enum_name to_string(tls_version v) noexcept {
    switch (v) {
        case tls_version::library_default: return "library default";
        case tls_version::tls1_2: return "TLS 1.2";
        case tls_version::tls1_3: return "TLS 1.3";
    }
    return "unknown";
}

/// The version as people read it, e.g. "HTTP/1.1".
[[nodiscard]] constexpr enum_name to_string(http_version v) noexcept {
    switch (v) {
        case http_version::http1_1: return "HTTP/1.1";
        case http_version::http2_tls: return "HTTP/2 over TLS (ALPN, else HTTP/1.1)";
        case http_version::http2_prior_knowledge: return "HTTP/2 with prior knowledge (h2c on http://)";
    }
    return "unknown";
}

namespace detail {

[[nodiscard]] inline bool is_readable_file(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    const std::ifstream in(path, std::ios::binary);
    return in.is_open();
}

[[nodiscard]] inline bool is_readable_directory(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) return false;
    const std::filesystem::directory_iterator listing(path, ec);
    return !ec;
}

[[nodiscard]] inline bool has_control_or_space(std::string_view s) noexcept {
    for (const char c : s)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return true;
    return false;
}

[[nodiscard]] inline bool has_control(std::string_view s) noexcept {
    for (const char c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    return false;
}

// "sha256//" and 44 base64 characters (a SHA-256 hash), ';'-separated.
[[nodiscard]] inline bool is_sha256_pin_list(std::string_view s) noexcept {
    constexpr std::string_view prefix = "sha256//";
    while (true) {
        const auto end = s.find(';');
        const auto item = s.substr(0, end);
        if (!item.starts_with(prefix) || item.size() != prefix.size() + 44) return false;
        for (const char c : item.substr(prefix.size()))
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                  c == '/' || c == '='))
                return false;
        if (end == std::string_view::npos) return true;
        s.remove_prefix(end + 1);
    }
}

[[nodiscard]] inline bool starts_with_scheme(std::string_view url, std::string_view scheme) noexcept {
    return url.size() > scheme.size() && iequals(url.substr(0, scheme.size()), scheme);
}

// "scheme://[user[:password]@]host[:port][/...]" names a host: the authority,
// past its user part, does not start with the port's ':' ("http://:3128").
[[nodiscard]] inline bool has_host(std::string_view url) noexcept {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) return false;
    auto authority = url.substr(scheme_end + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    return !authority.empty() && authority.front() != ':';
}

// "`field` must be <what>, got "<text>"", out of line and cold as every refusal.
[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option must_be(std::string_view field, std::string_view what,
                                                               std::string_view text) {
    return {std::string(field), resil::detail::concat({"must be ", what, ", got ", quote_for_error(text)})};
}

}  // namespace detail

inline validation_result tls_options::validate() const {
    const auto file = [](std::string_view field, const std::string& path) -> validation_result {
        if (path.empty() || detail::is_readable_file(path)) return std::nullopt;
        return detail::must_be(field, "a readable file", path);
    };
    if (auto bad = file("ca_file", ca_file)) return bad;
    if (!ca_directory.empty() && !detail::is_readable_directory(ca_directory))
        return detail::must_be("ca_directory", "a readable directory", ca_directory);
    if (auto bad = file("client_certificate", client_certificate)) return bad;
    if (auto bad = file("private_key", private_key)) return bad;
    if (!private_key.empty() && client_certificate.empty())
        return detail::must_be("private_key", "given with a client_certificate", private_key);
    if (!private_key_password.empty() && client_certificate.empty())
        return invalid_option{"private_key_password", "must be given with a client_certificate, got a password"};
    if (pinned_public_key.starts_with("sha256//")) {
        if (!detail::is_sha256_pin_list(pinned_public_key))
            return detail::must_be("pinned_public_key",
                                      "\"sha256//\" and a base64 SHA-256 hash, ';'-separated, or a file",
                                      pinned_public_key);
    } else if (auto bad = file("pinned_public_key", pinned_public_key)) {
        return bad;
    }
    switch (minimum_version) {
        case tls_version::library_default:
        case tls_version::tls1_2:
        case tls_version::tls1_3: break;
        default:
            return invalid_option{"minimum_version",
                                  resil::detail::concat({"must be library_default, tls1_2 or tls1_3, got ",
                                                         std::to_string(static_cast<int>(minimum_version))})};
    }
    return std::nullopt;
}

inline validation_result proxy_options::validate() const {
    if (!url.empty()) {
        const bool http = detail::starts_with_scheme(url, "http://");
        const bool https = detail::starts_with_scheme(url, "https://");
        if ((!http && !https) || detail::has_control_or_space(url) || !detail::has_host(url))
            return detail::must_be("url", "empty or an http:// or https:// URL with a host", url);
    }
    if (detail::has_control(no_proxy))
        return detail::must_be("no_proxy", "free of control characters", no_proxy);
    if (detail::has_control(username))
        return detail::must_be("username", "free of control characters", username);
    if (detail::has_control(password))
        return invalid_option{"password", "must be free of control characters, got one (the password is not shown)"};
    if (!password.empty() && username.empty())
        return invalid_option{"password", "must be given with a username, got a password alone"};
    return std::nullopt;
}

namespace detail {

/// Every transport option of a client, validated as one (client_options::validate).
[[nodiscard]] inline validation_result validate_transport(const tls_options& tls, const proxy_options& proxy,
                                                          http_version version, const redirect_options& redirects) {
    if (auto bad = tls.validate()) return bad->within("tls");
    if (auto bad = proxy.validate()) return bad->within("proxy");
    switch (version) {
        case http_version::http1_1:
        case http_version::http2_tls:
        case http_version::http2_prior_knowledge: break;
        default:
            return invalid_option{"http_version", resil::detail::concat({"must be http1_1, http2_tls or "
                                                                         "http2_prior_knowledge, got ",
                                                                         std::to_string(static_cast<int>(version))})};
    }
    if (auto bad = redirects.validate()) return bad->within("redirects");
    return std::nullopt;
}

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
