// resil/curl/transport_options.hpp — the transport options of a libcurl
// client (TLS, proxy, HTTP version, redirects) and their checks, without
// libcurl's header: what resil::curl::client_options holds, and what
// resil::http::client_options::transport holds too (resil/http.hpp parses
// no libcurl header). resil/curl/transport.hpp sets them on a handle; its
// banner says what each does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "../detail/platform.hpp"
#include "../enum_name.hpp"
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

}  // namespace detail
}  // namespace resil::curl
