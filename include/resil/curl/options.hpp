// resil/curl/options.hpp — what a resil::curl::client is configured with, and
// the one place those options are checked.
//
//   resil::curl::client http({.limits = {2s, 10s, 30s}, .max_body_bytes = 8 << 20});
//   if (auto bad = options.validate()) log(bad->message());   // "`max_body_bytes` must be at least 1, got 0"
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "../idempotency_key_type.hpp"
#include "../timeouts.hpp"
#include "../detail/platform.hpp"
#include "../validation.hpp"
#include "connections.hpp"
#include "detail/text.hpp"
#include "response.hpp"
#include "share.hpp"
#include "transport.hpp"

namespace resil::curl {

/// How the client sends the operation's idempotency key.
enum class key_header_format : std::uint8_t {
    quoted,    ///< `Idempotency-Key: "8e03978e-..."`, an RFC 9651 string, as the IETF draft specifies
    unquoted,  ///< `Idempotency-Key: 8e03978e-...`, as some providers document it
    none,      ///< never add the header (a caller may still add its own)
};

namespace detail {
/// "`field` <requirement>, got "<text>"": out of line and cold, as every
/// refusal (resil/detail/platform.hpp).
[[nodiscard]] RESIL_DETAIL_COLD inline invalid_option invalid_text(std::string_view field, std::string_view requirement,
                                                                  std::string_view text) {
    return {std::string(field), resil::detail::concat({requirement, ", got ", quote_for_error(text)})};
}
}  // namespace detail

/// Options of a client; the defaults are the documented ones.
struct client_options {
    /// Upper bounds of every attempt, applied on top of the context's
    /// timeouts (the smaller wins), so a call without a timeout policy or a
    /// deadline still cannot hang: a server trickling a byte a minute is cut
    /// off by the total. Default: connect 10 s, read (silence) 60 s, total 5 min.
    resil::timeouts limits{std::chrono::seconds{10}, std::chrono::seconds{60}, std::chrono::minutes{5}};
    /// The longest of `limits` short of no_limit: a year.
    static constexpr std::chrono::milliseconds longest_limit{std::chrono::hours{24 * 365}};
    /// How to send the idempotency key of non-idempotent requests. Default quoted.
    key_header_format idempotency_key = key_header_format::quoted;
    /// The header field carrying the idempotency key, both the one the client
    /// adds and a request's own (some providers name it otherwise, e.g.
    /// X-Idempotency-Key). An HTTP token; default Idempotency-Key.
    std::string idempotency_key_header = std::string(idempotency_key::header_name);
    /// Send what is left of the attempt's budget, min(deadline, total limit),
    /// in resil::timeout_header_name (grpc-timeout) so the next hop can stop
    /// when this one does. Default off: not every server should learn it.
    bool propagate_deadline = false;
    /// Bodies larger than this end the transfer (transport_status::body_too_large,
    /// permanent); a Content-Length over it is refused before the body is
    /// read. Default 64 MiB; at least 1.
    std::size_t max_body_bytes = std::size_t{64} << 20;
    /// Header fields (and trailers) larger than this in total end the
    /// transfer (transport_status::headers_too_large, permanent), so a server
    /// sending endless fields cannot grow memory. Default 256 KiB; at least 1.
    std::size_t max_header_bytes = std::size_t{256} << 10;
    /// The millisecond pushback header read from responses; empty to ignore
    /// pushback. Default grpc-retry-pushback-ms.
    std::string pushback_header = std::string(default_pushback_header);
    /// The User-Agent sent; empty (the default) sends none, as libcurl does.
    /// A request's own User-Agent header wins. (libcurl formats this header
    /// anew for every transfer: about 1 µs each on a small server.)
    std::string user_agent{};

    /// How servers are reached (resil/curl/transport.hpp): TLS trust, client
    /// certificate, pinning and minimum version; a proxy; the HTTP version
    /// (default http2_tls: HTTP/2 where a TLS server offers it, as libcurl
    /// and curl(1) do, else HTTP/1.1); redirects (default off).
    tls_options tls{};
    /// The proxy (proxy_options). Default: none set, so libcurl reads the
    /// usual environment variables (http_proxy, https_proxy, no_proxy).
    proxy_options proxy{};
    /// The HTTP version asked for. Default http2_tls: HTTP/2 where a TLS
    /// server offers it, else HTTP/1.1.
    resil::curl::http_version http_version = http_version::http2_tls;
    /// Which redirects are followed, and how many. Default: none followed.
    redirect_options redirects{};
    // Where connections go and how long they live, the cache shared with
    // other clients, and the raw handle hook (resil/curl/connections.hpp, share.hpp).
    /// Resolve and connect-to overrides, DNS cache lifetime, connection age
    /// and idle limits, TCP keepalive. Defaults: libcurl's.
    connection_options connections{};
    /// A DNS and TLS-session cache shared with other clients (typically one
    /// per thread); null (the default): this client's own. The client holds
    /// it until its libcurl handle is gone.
    std::shared_ptr<shared_cache> shared{};
    /// Called once with the client's libcurl easy handle, after resil set its
    /// own options (when the client is made), for anything resil does not
    /// cover. It may break what resil relies on: the write, header and
    /// PREREQ callbacks and their data (the PREREQ function is what keeps an
    /// unsafe request from being sent twice), CURLOPT_ERRORBUFFER, NOSIGNAL,
    /// the timeouts. The per-request options are resil's: it sets the URL
    /// (CURLOPT_URL and, parsed once, CURLOPT_CURLU), method, body, headers,
    /// timeouts, CURLOPT_FRESH_CONNECT and CURLOPT_CONNECT_TO again whenever
    /// its own value changes, overwriting the hook's, so setting them here
    /// has no reliable effect (use the request and the fields above). Its
    /// exceptions leave the client's constructor. Default none.
    std::function<void(CURL*)> configure_handle{};

    /// The first invalid field, if any: each limit in [1ms, longest_limit]
    /// (no_limit is fine), both size limits at least 1, the idempotency key header an HTTP
    /// token, the pushback header an HTTP token (or empty), the User-Agent free
    /// of control characters, the transport options valid (transport.hpp:
    /// every file they name readable now), the connections as
    /// connection_options::validate says.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result client_options::validate() const {
    using std::chrono::milliseconds;
    const milliseconds one{1};
    // At most a year short of no_limit: a limit of centuries would overflow
    // the nanosecond clock arithmetic of the transfer.
    const auto limit = [&](std::string_view field, milliseconds v) -> validation_result {
        if (auto bad = resil::detail::check_at_least(field, v, one)) return bad;
        if (v == resil::timeouts::no_limit) return std::nullopt;
        return resil::detail::check_in_range(field, v, one, longest_limit);
    };
    if (auto bad = limit("limits.connect", limits.connect)) return bad;
    if (auto bad = limit("limits.read", limits.read)) return bad;
    if (auto bad = limit("limits.total", limits.total)) return bad;
    if (auto bad = resil::detail::check_at_least("max_body_bytes", max_body_bytes, std::size_t{1})) return bad;
    if (auto bad = resil::detail::check_at_least("max_header_bytes", max_header_bytes, std::size_t{1})) return bad;
    if (!detail::is_token(idempotency_key_header))
        return detail::invalid_text("idempotency_key_header", "must be an HTTP token", idempotency_key_header);
    if (!pushback_header.empty() && !detail::is_token(pushback_header))
        return detail::invalid_text("pushback_header", "must be an HTTP token or empty", pushback_header);
    for (const char c : user_agent)
        if (detail::is_forbidden_in_value(c))
            return detail::invalid_text("user_agent", "must hold no control character", user_agent);
    if (auto bad = detail::validate_transport(tls, proxy, http_version, redirects)) return bad;
    if (auto bad = connections.validate()) return bad->within("connections");
    return std::nullopt;
}
#endif

}  // namespace resil::curl
