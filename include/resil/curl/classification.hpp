// resil/curl/classification.hpp — judges one attempt's response for the
// retry policy: success, retryable, permanent, or ambiguous (may have reached
// the server: retried only when the operation is idempotent or keyed).
//
//   auto out = pipe([&](resil::context& ctx) { return http.perform(req, ctx); });
//   // no classifier argument: resil::curl::classify is found by ADL
//
// HTTP status (a whole response arrived)
//   2xx, 3xx                  success
//   408, 421, 429, 503        retryable: the server did not act on the request
//                             (after 408 and 421 the client opens a new connection)
//   500, 502, 504             retryable when the request was idempotent or keyed;
//                             otherwise ambiguous (the server, or the one behind a
//                             gateway, may have acted before failing)
//   409                       retryable on a keyed request (the key's first use is
//                             still in progress), permanent otherwise
//   403 with an exhausted     retryable: a rate limit, as GitHub answers its primary
//   quota and its reset       one (x-ratelimit-remaining: 0 and x-ratelimit-reset);
//                             the hint is the reset (see below)
//   other 4xx, 501, other 5xx permanent
// Transport (no whole response)
//   not started, refused, DNS, connect timeout, a TLS handshake  retryable (never sent)
//   that failed otherwise than by a refusal (reset, timeout,
//   the server's internal error)
//   the server refused the TLS handshake (an alert: no client   permanent (never sent:
//   certificate or one it does not accept, no TLS version or    tls_handshake_refused)
//   cipher in common) — also over TLS 1.3, where the alert
//   comes after the client's side of the handshake
//   read/total/first-byte timeout, reset, closed, short body,  ambiguous once anything
//   a reply that is not HTTP, cancelled, a replay libcurl wanted was sent, else retryable
//   malformed URL, rejected certificate, body or header fields  permanent
//   over the limit, a stream interrupted after bytes reached
//   the caller (whatever the method)
//   anything else                                               ambiguous once sent, else permanent
// Hints (on failures only), the first that applies:
//   1. Retry-After and the client's pushback header (grpc-retry-pushback-ms):
//      the longer of the two; a negative pushback sets "don't retry" instead;
//   2. retry-after-ms;
//   3. on a 429, a 503 or a 403, the reset of an exhausted quota (RateLimit: r=0
//      with its t, X-RateLimit-Remaining: 0 with its reset, ...;
//      resil/rate_limit_fields.hpp) — elsewhere an exhausted quota is not why the
//      attempt failed;
// then raised to a floor (pushback_options::floor, 50 ms by default), so
// that "Retry-After: 0" is no hot loop; max attempts and the deadline still
// bound the retries. Without any of them, the retry policy's backoff decides.
#pragma once

#include <algorithm>

#include "../outcome.hpp"
#include "../detail/platform.hpp"
#include "../rate_limit_fields.hpp"
#include "response.hpp"

namespace resil::curl {

/// The verdict for a whole response with HTTP status `status`, by the status
/// alone (classify also reads the fields: a 403 with an exhausted quota is
/// retryable there). `keyed`: the request carried an idempotency key;
/// `repeatable`: it was idempotent or keyed.
[[nodiscard]] constexpr verdict classify_status(int status, bool keyed, bool repeatable) noexcept {
    if (status >= 200 && status <= 399) return verdict::success;
    switch (status) {
        case 408:
        case 421:  // the target did not process it (RFC 9110 §15.5.20); retried on a new connection
        case 429:
        case 503: return verdict::retryable;
        case 500:
        case 502:
        case 504: return repeatable || keyed ? verdict::retryable : verdict::ambiguous;
        case 409: return keyed ? verdict::retryable : verdict::permanent;
        default: return verdict::permanent;
    }
}

/// The verdict for a transfer that ended without a whole response.
/// `may_have_reached_server`: any byte of the request may have been sent.
[[nodiscard]] constexpr verdict classify_transport(transport_status status, bool may_have_reached_server) noexcept {
    switch (status) {
        case transport_status::completed: return verdict::success;  // judged by its HTTP status instead
        case transport_status::body_too_large:
        case transport_status::headers_too_large:
        case transport_status::invalid_request:
        case transport_status::tls_certificate_rejected:
        // The server will refuse the same handshake again, and its
        // application saw nothing (detail/tls_refusal.hpp).
        case transport_status::tls_handshake_refused:
        // Part of the body already reached the caller, who acted on it: a
        // silent repeat would hand it over twice (resil/curl/streaming.hpp).
        case transport_status::stream_interrupted: return verdict::permanent;
        case transport_status::other_error: return may_have_reached_server ? verdict::ambiguous : verdict::permanent;
        case transport_status::deadline_exceeded:
        case transport_status::cancelled:
        case transport_status::connect_failed:
        case transport_status::connect_timeout:
        case transport_status::tls_handshake_failed:
        case transport_status::read_timeout:
        case transport_status::total_timeout:
        case transport_status::first_byte_timeout:
        case transport_status::connection_lost:
        case transport_status::protocol_error: break;
    }
    return may_have_reached_server ? verdict::ambiguous : verdict::retryable;
}

namespace detail {
/// A failure's classification with its server hints: out of line (and, with
/// RESIL_SEPARATE_COMPILATION, compiled once), as every failure path.
[[nodiscard]] RESIL_DECL classification classify_failure(const response& r, verdict v,
                                                         const pushback_options& options) noexcept;
}  // namespace detail

/// The classification of one attempt's response, with the rate-limit hints
/// raised to `options.floor`; see the table above. Pure; thread-safe.
[[nodiscard]] inline classification classify(const response& r, const pushback_options& options) noexcept {
    const verdict v = r.completed() ? classify_status(r.status(), r.carried_idempotency_key(), r.repeatable())
                                    : classify_transport(r.transport(), r.may_have_reached_server());
    if (v == verdict::success) return v;
    auto c = detail::classify_failure(r, v, options);
    c.never_sent = !r.completed() && !r.may_have_reached_server();
    return c;
}

#if RESIL_DETAIL_BODIES
RESIL_DECL classification detail::classify_failure(const response& r, verdict v,
                                                   const pushback_options& options) noexcept {
    const auto lookup = resil::detail::fields_lookup<response>{&r};
    // A 403 with an exhausted quota and its reset is a rate limit (GitHub
    // answers its primary rate limit so, or with 429): retried, after the
    // reset, if that fits the deadline. Any other 403 stays permanent.
    bool quota_refusal = r.status() == 429 || r.status() == 503;
    if (r.completed() && r.status() == 403 && r.received_at()) {
        const auto quota = read_rate_limit(lookup, *r.received_at());
        if (quota.exhausted() && quota.reset) {
            v = verdict::retryable;
            quota_refusal = true;
        }
    }
    server_hint hint;
    hint.retry_after = r.retry_after();
    if (const auto pushback = r.pushback()) {
        if (pushback->count() < 0) {
            hint.dont_retry = true;
        } else {
            const duration wait = *pushback;
            hint.retry_after = hint.retry_after ? std::max(*hint.retry_after, wait) : wait;
        }
    }
    // Hints were read only when a head other than 2xx arrived: otherwise
    // there is nothing to look for.
    if (!hint.retry_after && !hint.dont_retry && r.received_at()) {
        if (const auto p = pushback_from(lookup, *r.received_at(), options))
            if (p->source != pushback_source::quota_reset || quota_refusal) hint.retry_after = p->wait;
    }
    if (hint.retry_after && *hint.retry_after < options.floor) hint.retry_after = options.floor;
    return {v, hint};
}
#endif

/// classify(r, options) with the default floor (50 ms). Found by ADL, so
/// pipelines need no classifier argument for resil::curl::response.
[[nodiscard]] inline classification classify(const response& r) noexcept { return classify(r, pushback_options{}); }

/// Whether the response counts against its endpoint for outlier ejection
/// (resil/balancer.hpp; found by ADL): as Envoy's consecutive-5xx, any 5xx
/// answer (501, 505, 507 and 511 too), and a failure of the endpoint's own
/// to answer (refused, reset, timeouts, TLS, a reply that is not HTTP),
/// which Envoy counts as 5xx too. Any other answer (408, 421, 429 and every
/// other 4xx included) says the endpoint answered. The caller's own end (a
/// cancel, the deadline) and a request refused before it left (too large,
/// malformed) say nothing about it.
[[nodiscard]] inline bool endpoint_failure(const response& r) noexcept {
    switch (r.transport()) {
        case transport_status::completed: return r.status() >= 500 && r.status() <= 599;
        case transport_status::deadline_exceeded:
        case transport_status::cancelled:
        case transport_status::body_too_large:
        case transport_status::headers_too_large:
        case transport_status::invalid_request: return false;
        default: return true;
    }
}

}  // namespace resil::curl
