// resil/http.hpp — a ready-made resilient HTTP client: the README's pipeline
// (deadline → retry with a budget → circuit breaker → per-attempt timeouts)
// around the libcurl client, configured by plain options, behind a class
// whose header parses in about the time of <string>, <chrono> and
// <filesystem> (no libcurl header).
//
//   resil::http::client catalog{{.deadline = 250ms,
//                                .timeouts = {.connect = 20ms, .read = 100ms, .total = 150ms},
//                                .retry = {.max_attempts = 3}}};   // one per dependency, any thread
//   auto out = catalog.get(url);
//   if (!out) show_plan_b(out.reason());   // "circuit_open", "retries_exhausted", ...
//   else use(out.body());
//
// It is exactly the pipeline a user would write with resil/pipeline.hpp and
// resil/curl.hpp (the same policies, the same libcurl client, the same
// classification, Idempotency-Key on every attempt of a POST), built once
// from these options. Needs the resil::curl CMake target. It is the simple
// face, one URL at a time; client_options::transport reaches TLS (private
// CA, mTLS), proxied and HTTP/2 servers. Endpoints behind a balancer,
// hedging, limits, pacing and quotas are resil::http::dependency's
// (resil/http/dependency.hpp), which returns the same response. For
// listeners, fallback, a clock of your own or streaming, build the pipeline
// yourself: both use the same policies.
//
// Why a separate class: a file that builds the pipeline itself instantiates
// it and parses the policies' and libcurl's headers; a file that uses this
// client parses the declarations below only, provided its definitions are
// compiled elsewhere. Header-only (the default), this header includes them
// (resil/http/detail/client_impl.hpp) and costs what the pipeline costs.
// With RESIL_SEPARATE_COMPILATION they are compiled once, in the source file
// that includes <resil/curl/separate_compilation.hpp> (docs/compile_time.md).
//
// Thread-safety: one client per dependency, shared by every thread. The
// breaker and the budget are the client's, shared by its calls; each call
// borrows a libcurl client (and its kept-alive connections) from the
// client's pool and gives it back, so a client holds as many libcurl
// clients as calls ever ran on it at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "curl/transport_options.hpp"
#include "detail/platform.hpp"
#include "http/response.hpp"
#include "reason.hpp"

namespace resil::json {
struct pipeline_config;
}  // namespace resil::json

namespace resil::http {

/// Per-attempt limits (resil::timeouts, clamped to what is left of the
/// deadline). no_limit leaves a limit unset.
struct timeout_settings {
    /// A limit that is not set.
    static constexpr std::chrono::milliseconds no_limit = std::chrono::milliseconds::max();
    std::chrono::milliseconds connect = no_limit;  ///< until the connection is up
    std::chrono::milliseconds read = no_limit;     ///< the longest silence once connected
    std::chrono::milliseconds total = no_limit;    ///< the whole attempt
};

/// Retries (resil::retry_options): full-jitter exponential backoff from
/// `backoff_base` to `backoff_cap`, a server's Retry-After honoured up to
/// `max_wait`. Only what is safe to repeat is retried: idempotent methods,
/// and non-idempotent ones that carry an idempotency key.
struct retry_settings {
    std::uint32_t max_attempts = 3;                           ///< 1 turns retries off
    std::chrono::milliseconds backoff_base{100};              ///< the first wait's ceiling
    std::chrono::milliseconds backoff_cap{1000};              ///< no wait ceiling above this
    std::chrono::milliseconds max_wait{std::chrono::seconds{60}};  ///< a longer Retry-After ends the call
};

/// The retry budget (resil::retry_budget_options): retries at most `ratio`
/// of the calls in the last `window`, plus a reserve of `min_per_second` ×
/// `window` retries for a quiet client.
struct budget_settings {
    /// Whether retries draw on a budget. Default true.
    bool enabled = true;
    /// The share of calls that may be retried, in [0, 1]. Default 0.10.
    double ratio = 0.10;
    /// The reserve: retries per second allowed whatever the ratio. Default 10.
    std::uint32_t min_per_second = 10;
    /// How far back calls and retries count. Default 10 s.
    std::chrono::milliseconds window{std::chrono::seconds{10}};
};

/// The circuit breaker (resil::circuit_breaker_options, time window): open
/// for `open_for` once more than `failure_ratio` of at least `min_calls`
/// calls in the last `window` failed; then `half_open_probes` probes decide.
struct breaker_settings {
    /// Whether calls go through a breaker. Default true.
    bool enabled = true;
    /// Opens above this share of failed calls, in (0, 1]. Default 0.5.
    double failure_ratio = 0.5;
    /// How far back calls count. Default 10 s.
    std::chrono::milliseconds window{std::chrono::seconds{10}};
    /// No decision before this many calls in the window. Default 20.
    std::uint32_t min_calls = 20;
    /// How long it stays open before probing. Default 30 s.
    std::chrono::milliseconds open_for{std::chrono::seconds{30}};
    /// Probes let through when half open; they decide whether it closes.
    /// Default 5.
    std::uint32_t half_open_probes = 5;
};

/// How a non-idempotent request's idempotency key is sent.
enum class key_header_format : std::uint8_t {
    quoted,    ///< `Idempotency-Key: "8e03978e-..."`, an RFC 9651 string, as the IETF draft specifies
    unquoted,  ///< `Idempotency-Key: 8e03978e-...`, as some providers document it
    none,      ///< no key: the request is never repeated after an ambiguous failure
};

/// How the client reaches its servers: the transport parts of
/// resil::curl::client_options, given to every libcurl client of its pool.
struct transport_settings {
    /// Trust (a private CA: `tls.ca_file`), a client certificate (mTLS),
    /// a pinned key, the minimum TLS version. Default: the system's trust
    /// store, TLS 1.2 at least.
    curl::tls_options tls{};
    /// A proxy. Default: none set, so libcurl reads http_proxy, https_proxy
    /// and no_proxy from the environment.
    curl::proxy_options proxy{};
    /// The HTTP version asked for. Default http2_tls: HTTP/2 where a TLS
    /// server offers it, else HTTP/1.1.
    curl::http_version http_version = curl::http_version::http2_tls;
    /// Which redirects are followed, and how many. Default: none followed.
    curl::redirect_options redirects{};
};

/// Everything a client is configured by. The defaults are the policies',
/// except the deadline (10 s), which resil::deadline_policy requires.
struct client_options {
    /// The whole call, every attempt and wait included (resil::deadline_policy):
    /// required, in [1ms, 24h].
    std::chrono::milliseconds deadline{std::chrono::seconds{10}};
    /// Per-attempt timeouts. Default: none (the deadline bounds each attempt).
    timeout_settings timeouts{};
    /// Retries. Default: 3 attempts, full jitter from 100 ms to 1 s.
    retry_settings retry{};
    /// The retry budget. Default: 10 % of calls plus 10 per second.
    budget_settings retry_budget{};
    /// The circuit breaker. Default: opens above 50 % failures of at least 20
    /// calls in 10 s, for 30 s.
    breaker_settings circuit_breaker{};
    /// The header that carries a non-idempotent request's key, the same on
    /// every attempt (resil::curl::client_options::idempotency_key_header).
    std::string idempotency_key_header = "Idempotency-Key";
    /// Whether a non-idempotent request (POST, PATCH, ...) carries a key, and
    /// how (resil::curl::client_options::idempotency_key). A keyed request is
    /// retried after an ambiguous failure, which is safe only when the server
    /// keeps the key and answers a repeat without acting twice (the IETF
    /// Idempotency-Key draft). `none`: no key, and such a request reaches the
    /// server at most once (an ambiguous failure ends as unsafe_to_retry).
    key_header_format idempotency_key = key_header_format::quoted;
    /// TLS, proxy, HTTP version and redirects (resil/curl/transport.hpp).
    /// Files it names (a CA, a certificate) are checked by validate(): a
    /// missing one is refused at construction, naming it.
    transport_settings transport{};

    /// The first invalid field, as "`retry.max_attempts` must be in [1, 100],
    /// got 0", or an empty string when every field is valid. The fields are
    /// checked by the options of the policies they become.
    [[nodiscard]] RESIL_DECL std::string validate() const;
};

namespace detail {
struct client_state;
}  // namespace detail

/// A ready-made HTTP client for one dependency: a deadline, per-attempt
/// timeouts, retries with a budget and a circuit breaker around the libcurl
/// client, from plain options. Thread-safe: one client per dependency, shared
/// by every thread; each call borrows a libcurl client (and its connections)
/// from the client's pool. Move-only.
class client {
public:
    /// Builds the policies and the first libcurl client. Throws
    /// std::invalid_argument("resil::http::client: `field` must be ...")
    /// when options.validate() names a field.
    RESIL_DECL explicit client(const client_options& options = {});
    /// The sections a configuration file gave (resil::json::load_config;
    /// resil/http/config_file.hpp reads one), each over the same section of
    /// `defaults`. Throws std::invalid_argument for a section the client has
    /// no policy for (token_bucket, concurrency_limit).
    RESIL_DECL client(const json::pipeline_config& config, const client_options& defaults);

    /// Takes over `other`'s policies and connections; `other` may only be
    /// destroyed or assigned to.
    RESIL_DECL client(client&& other) noexcept;
    /// Takes over `other`'s policies and connections.
    RESIL_DECL client& operator=(client&& other) noexcept;
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    RESIL_DECL ~client();

    /// A GET (idempotent: every failure the policies judge retryable is retried).
    [[nodiscard]] response get(std::string_view url, std::initializer_list<header> headers = {}) {
        return get(url, std::span<const header>(headers.begin(), headers.size()));
    }
    /// A POST of `body`: not idempotent, so it carries an idempotency key, the
    /// same on every attempt, which lets an ambiguous failure be retried.
    [[nodiscard]] response post(std::string_view url, std::string_view body,
                                std::initializer_list<header> headers = {}) {
        return post(url, body, std::span<const header>(headers.begin(), headers.size()));
    }
    /// Any method (an RFC 9110 token); idempotent as RFC 9110 says (GET, HEAD,
    /// OPTIONS, TRACE, PUT, DELETE), keyed otherwise. Throws
    /// std::invalid_argument for a bad method, URL or header, before any I/O.
    [[nodiscard]] response perform(std::string_view method, std::string_view url, std::string_view body,
                                   std::initializer_list<header> headers = {}) {
        return perform(method, url, body, std::span<const header>(headers.begin(), headers.size()));
    }

    /// The same three with headers made at run time (a std::vector<header>,
    /// an array); each header's name and value must live until the call returns.
    [[nodiscard]] RESIL_DECL response get(std::string_view url, std::span<const header> headers);
    /// A POST with headers made at run time.
    [[nodiscard]] RESIL_DECL response post(std::string_view url, std::string_view body,
                                           std::span<const header> headers);
    /// Any method, with headers made at run time.
    [[nodiscard]] RESIL_DECL response perform(std::string_view method, std::string_view url, std::string_view body,
                                              std::span<const header> headers);

    /// The options it was built with; for a configuration file, its sections
    /// over the defaults, as far as these fields show them (a file may set a
    /// backoff kind, a breaker mode or more, which the policies run but these
    /// fields do not name).
    /// Throws std::logic_error on a moved-from client.
    [[nodiscard]] RESIL_DECL const client_options& options() const;

private:
    detail::client_state* state_;  // owned; null once moved from
};

}  // namespace resil::http

#if RESIL_DETAIL_BODIES
#include "http/detail/client_impl.hpp"
#endif
