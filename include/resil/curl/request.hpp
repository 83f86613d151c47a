// resil/curl/request.hpp — what to send: method, URL, headers, body, and
// whether repeating it is harmless.
//
//   auto get  = resil::curl::request::get("http://inventory.internal/items/42");
//   auto post = resil::curl::request::post("http://payments.internal/charges", R"({"cents":500})")
//                   .add_header("Content-Type", "application/json");
//   auto put  = resil::curl::request::put(url, body).set_idempotent(false);  // this PUT appends
//
// A request is checked as it is built: a malformed URL, a scheme other than
// http/https, a method or header name that is not an RFC 9110 token, or a
// header value with CR, LF or another control character throws
// std::invalid_argument at once, before any network I/O (no header injection).
// A request is a plain value: build it once, send it on every attempt.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../detail/platform.hpp"
#include "../validation.hpp"
#include "connections.hpp"
#include "detail/text.hpp"
#include "fields.hpp"

namespace resil::curl {

class request;
namespace detail {
/// The transfer set-up's way to the request's ready-to-send header lines.
struct request_access {
    static const field_store& fields(const request& r) noexcept;
};
}  // namespace detail

/// RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are
/// idempotent; every other method (POST, PATCH, ...) is not. Case-sensitive,
/// as method names are.
[[nodiscard]] constexpr bool is_idempotent_method(std::string_view method) noexcept {
    return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" || method == "PUT" ||
           method == "DELETE";
}

namespace detail {

/// Why `url` cannot be sent (static text), or nothing when it is acceptable:
/// non-empty, no spaces or control characters, an "http://" or "https://"
/// scheme (any letter case) and a non-empty authority. The rest is libcurl's
/// to judge (CURLE_URL_MALFORMAT, classified permanent).
[[nodiscard]] constexpr std::optional<std::string_view> invalid_url_reason(std::string_view url) noexcept {
    if (url.empty()) return "the URL is empty";
    for (const char c : url) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7F) return "the URL contains a space or a control character";
    }
    const auto colon = url.find("://");
    if (colon == std::string_view::npos || colon == 0) return "the URL has no scheme (expected http:// or https://)";
    const auto scheme = url.substr(0, colon);
    if (!iequals(scheme, "http") && !iequals(scheme, "https")) return "unsupported URL scheme (only http and https)";
    const auto rest = url.substr(colon + 3);
    if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#')
        return "the URL has no host";
    return std::nullopt;
}

}  // namespace detail

/// What to send: method, URL, headers, body, and whether repeating it is
/// harmless. Checked as it is built (std::invalid_argument before any I/O for a
/// bad URL, method or header); a plain value, built once and sent on every
/// attempt.
class request {
public:
    /// A request with any method (an RFC 9110 token, e.g. "PROPFIND").
    /// Throws std::invalid_argument for a bad method or URL.
    request(std::string method, std::string url) : method_(std::move(method)), url_(std::move(url)) {
        if (!detail::is_token(method_)) throw_bad_method(method_);
        if (auto why = detail::invalid_url_reason(url_)) throw_bad_url(*why, url_);
    }

    /// A GET of `url`.
    [[nodiscard]] static request get(std::string url) { return {"GET", std::move(url)}; }
    /// A HEAD of `url`.
    [[nodiscard]] static request head(std::string url) { return {"HEAD", std::move(url)}; }
    /// A POST of `body` to `url`: not idempotent, so the client sends it keyed.
    [[nodiscard]] static request post(std::string url, std::string body) {
        return std::move(request{"POST", std::move(url)}.set_body(std::move(body)));
    }
    /// A PUT of `body` to `url`: idempotent unless set_idempotent(false).
    [[nodiscard]] static request put(std::string url, std::string body) {
        return std::move(request{"PUT", std::move(url)}.set_body(std::move(body)));
    }
    /// A PATCH of `body` to `url`: not idempotent.
    [[nodiscard]] static request patch(std::string url, std::string body) {
        return std::move(request{"PATCH", std::move(url)}.set_body(std::move(body)));
    }
    /// DELETE (the trailing underscore because `delete` is a keyword).
    [[nodiscard]] static request delete_(std::string url) { return {"DELETE", std::move(url)}; }
    /// An OPTIONS request to `url`.
    [[nodiscard]] static request options(std::string url) { return {"OPTIONS", std::move(url)}; }

    /// Adds a header field, sent in the order added. Leading and trailing
    /// spaces of `value` are dropped; an empty value is sent as an empty
    /// field. Throws std::invalid_argument when `name` is not a token or
    /// `value` holds CR, LF, NUL or another control character (HTAB is fine).
    /// A field the adapter would add itself (Idempotency-Key, the deadline
    /// header, Expect, User-Agent) replaces the adapter's.
    request& add_header(std::string_view name, std::string_view value) & {
        if (!detail::is_token(name)) throw_bad_header_name(name);
        for (const char c : value)
            if (detail::is_forbidden_in_value(c)) throw_bad_header_value(name, value);
        headers_.add(name, detail::trim_ows(value));
        return *this;
    }
    /// add_header() on a temporary, for chaining.
    request&& add_header(std::string_view name, std::string_view value) && {
        return std::move(add_header(name, value));
    }

    /// Removes every header field named `name` (any letter case), e.g. to
    /// replace one in a copy of a request.
    request& remove_header(std::string_view name) & {
        headers_.remove(name);
        return *this;
    }
    /// remove_header() on a temporary, for chaining.
    request&& remove_header(std::string_view name) && { return std::move(remove_header(name)); }

    /// The body (any bytes). Sent with a Content-Length; for POST with no
    /// Content-Type header, libcurl sends application/x-www-form-urlencoded.
    /// Throws std::invalid_argument for HEAD, whose response never has a
    /// body to wait for.
    request& set_body(std::string body) & {
        if (method_ == "HEAD") throw_head_with_body();
        body_ = std::move(body);
        has_body_ = true;
        return *this;
    }
    /// set_body() on a temporary, for chaining.
    request&& set_body(std::string body) && { return std::move(set_body(std::move(body))); }

    /// Overrides the method's default idempotency (is_idempotent_method): say
    /// true for a POST that is safe to repeat, false for a PUT that is not.
    request& set_idempotent(bool yes) & {
        idempotent_ = yes;
        return *this;
    }
    /// set_idempotent() on a temporary, for chaining.
    request&& set_idempotent(bool yes) && { return std::move(set_idempotent(yes)); }

    /// Sends the request to one chosen replica: the connection goes to
    /// `target` (CURLOPT_CONNECT_TO, ahead of client_options::connections.
    /// connect_to) while the URL's host stays the Host header and the name
    /// TLS verifies. Only the URL's own host and port go there: a followed
    /// redirect elsewhere goes where its URL says. A kept-alive connection
    /// is reused only by requests to the same endpoint. Throws
    /// std::invalid_argument for an invalid endpoint (endpoint::validate).
    request& connect_to(endpoint target) & {
        if (auto bad = target.validate()) throw_bad_endpoint(*bad);
        endpoint_ = std::move(target);
        return *this;
    }
    /// connect_to() on a temporary, for chaining.
    request&& connect_to(endpoint target) && { return std::move(connect_to(std::move(target))); }
    /// Back to the URL's own host (and the client-wide overrides).
    request& clear_connect_to() & {
        endpoint_.reset();
        return *this;
    }
    /// The endpoint given to connect_to, if any.
    [[nodiscard]] const std::optional<endpoint>& pinned_endpoint() const noexcept { return endpoint_; }

    /// The method, e.g. "GET".
    [[nodiscard]] const std::string& method() const noexcept { return method_; }
    /// The URL.
    [[nodiscard]] const std::string& url() const noexcept { return url_; }
    /// The body; empty when none was set.
    [[nodiscard]] const std::string& body() const noexcept { return body_; }
    /// True once set_body was called (an empty body is still sent, with
    /// Content-Length: 0).
    [[nodiscard]] bool has_body() const noexcept { return has_body_; }
    /// The header fields added, in order.
    [[nodiscard]] header_list headers() const noexcept { return header_list{headers_}; }
    /// The first header field named `name` (any letter case), if any.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept {
        return headers_.find(name);
    }
    /// Whether repeating the request is harmless: the explicit setting, or
    /// the method's default.
    [[nodiscard]] bool idempotent() const noexcept { return idempotent_.value_or(is_idempotent_method(method_)); }

private:
    // The refusals, out of line and cold (detail/platform.hpp): the message
    // building is compiled once per translation unit, not into every caller.
    [[noreturn]] RESIL_DETAIL_COLD static void throw_bad_method(std::string_view method) {
        throw std::invalid_argument(resil::detail::concat(
            {"resil::curl::request: the method must be an HTTP token, got ", detail::quote_for_error(method)}));
    }
    [[noreturn]] RESIL_DETAIL_COLD static void throw_bad_url(std::string_view why, std::string_view url) {
        throw std::invalid_argument(
            resil::detail::concat({"resil::curl::request: ", why, ": ", detail::quote_for_error(url)}));
    }
    [[noreturn]] RESIL_DETAIL_COLD static void throw_bad_header_name(std::string_view name) {
        throw std::invalid_argument(resil::detail::concat(
            {"resil::curl::request: a header name must be an HTTP token, got ", detail::quote_for_error(name)}));
    }
    [[noreturn]] RESIL_DETAIL_COLD static void throw_bad_header_value(std::string_view name, std::string_view value) {
        throw std::invalid_argument(resil::detail::concat({"resil::curl::request: the value of header ", name,
                                                           " contains CR, LF or another control character: ",
                                                           detail::quote_for_error(value)}));
    }
    [[noreturn]] RESIL_DETAIL_COLD static void throw_bad_endpoint(const invalid_option& bad) {
        resil::detail::throw_invalid("resil::curl::request: connect_to", bad);
    }
    [[noreturn]] RESIL_DETAIL_COLD static void throw_head_with_body() {
        throw std::invalid_argument("resil::curl::request: a HEAD request has no body");
    }

    friend struct detail::request_access;

    std::string method_;
    std::string url_;
    std::string body_;
    detail::field_store headers_;
    std::optional<bool> idempotent_{};
    bool has_body_ = false;
    std::optional<endpoint> endpoint_{};
};

inline const detail::field_store& detail::request_access::fields(const request& r) noexcept { return r.headers_; }

}  // namespace resil::curl
