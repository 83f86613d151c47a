// resil/http/detail/client_impl.hpp — the definitions of resil::http::client
// (resil/http.hpp): the pipeline it stands for, built once from its options,
// and the pool of libcurl clients its calls borrow. Included by resil/http.hpp
// where the bodies are compiled: in every file header-only, in the one source
// file of a RESIL_SEPARATE_COMPILATION program otherwise.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../backoff.hpp"
#include "../../circuit_breaker.hpp"
#include "../../curl/classification.hpp"
#include "../../curl/client.hpp"
#include "../../curl/request.hpp"
#include "client_pool.hpp"
#include "../../deadline_policy.hpp"
#include "../../json/pipeline_config.hpp"
#include "../../pipeline.hpp"
#include "../../retry.hpp"
#include "../../retry_budget.hpp"
#include "../../timeout_policy.hpp"
#include "../../timeouts.hpp"
#include "../../validation.hpp"
#include "../../http.hpp"
#include "response_access.hpp"

namespace resil::http {

namespace detail {

/// The policies' own options, as a client_options stands for them: one
/// translation, used by validate() and by the client alike.
struct policy_options {
    deadline_policy_options deadline;
    resil::timeouts timeouts;
    retry_options retry;
    std::optional<retry_budget_options> budget;
    std::optional<circuit_breaker_options> breaker;
};

/// Milliseconds as resil::duration (nanoseconds), saturated instead of
/// overflowing: a value beyond ±292 years becomes duration's max or min, which
/// every policy's validate() refuses (none allows more than 24 h).
constexpr duration to_duration(std::chrono::milliseconds ms) noexcept {
    constexpr auto most = std::chrono::duration_cast<std::chrono::milliseconds>(duration::max());
    if (ms >= most) return duration::max();
    if (ms <= -most) return duration::min();
    return ms;
}

inline policy_options to_policy_options(const client_options& o) {
    policy_options p{};
    p.deadline.budget = to_duration(o.deadline);
    p.timeouts = resil::timeouts{.connect = o.timeouts.connect, .read = o.timeouts.read, .total = o.timeouts.total};
    p.retry.max_attempts = o.retry.max_attempts;
    p.retry.backoff = full_jitter{to_duration(o.retry.backoff_base), to_duration(o.retry.backoff_cap)};
    p.retry.max_wait = to_duration(o.retry.max_wait);
    if (o.retry_budget.enabled) {
        p.budget = retry_budget_options{.ratio = o.retry_budget.ratio,
                                        .min_per_second = o.retry_budget.min_per_second,
                                        .window = to_duration(o.retry_budget.window)};
    }
    if (o.circuit_breaker.enabled) {
        circuit_breaker_options b{};
        b.failure_ratio = o.circuit_breaker.failure_ratio;
        b.window = to_duration(o.circuit_breaker.window);
        b.min_calls = o.circuit_breaker.min_calls;
        b.open_for = to_duration(o.circuit_breaker.open_for);
        b.half_open_probes = o.circuit_breaker.half_open_probes;
        p.breaker = std::move(b);
    }
    return p;
}

/// The first invalid field of `p`, named as client_options names it.
inline validation_result validate(const policy_options& p, std::string_view idempotency_key_header,
                                  key_header_format idempotency_key, const transport_settings& transport) {
    if (auto bad = p.deadline.validate()) return invalid_option{"deadline", bad->requirement};
    if (auto bad = p.timeouts.validate()) return bad->within("timeouts");
    if (auto bad = p.retry.validate()) {
        if (bad->field.starts_with("backoff.")) {  // backoff.base / backoff.cap are flat here
            return invalid_option{resil::detail::concat({"retry.backoff_", std::string_view(bad->field).substr(8)}), bad->requirement};
        }
        return bad->within("retry");
    }
    if (p.budget) {
        if (auto bad = p.budget->validate()) return bad->within("retry_budget");
    }
    if (p.breaker) {
        if (auto bad = p.breaker->validate()) return bad->within("circuit_breaker");
    }
    if (idempotency_key != key_header_format::quoted && idempotency_key != key_header_format::unquoted &&
        idempotency_key != key_header_format::none) {
        return invalid_option{"idempotency_key",
                              resil::detail::concat({"must be quoted, unquoted or none, got ",
                                                     std::to_string(static_cast<unsigned>(idempotency_key))})};
    }
    curl::client_options c{};
    c.idempotency_key_header = std::string(idempotency_key_header);
    if (auto bad = c.validate()) return bad;
    if (auto bad = curl::detail::validate_transport(transport.tls, transport.proxy, transport.http_version,
                                                    transport.redirects))
        return bad->within("transport");
    return std::nullopt;
}

/// The pipelines a client runs, with and without a breaker: the README's,
/// in the recommended order.
inline auto make_pipeline(const policy_options& p, circuit_breaker& breaker) {
    return resil::pipeline(deadline_policy{p.deadline}, retry_policy{p.retry}, std::ref(breaker),
                           timeout_policy{p.timeouts});
}
inline auto make_pipeline(const policy_options& p) {
    return resil::pipeline(deadline_policy{p.deadline}, retry_policy{p.retry}, timeout_policy{p.timeouts});
}

struct client_state {
    client_options options;
    policy_options policies;
    // Shared by every call of the client; built before the pipelines that
    // point at them, and never moved (the state is on the heap).
    std::optional<retry_budget> budget;
    std::optional<circuit_breaker> breaker;
    std::optional<decltype(make_pipeline(std::declval<const policy_options&>(),
                                         std::declval<circuit_breaker&>()))>
        with_breaker;
    std::optional<decltype(make_pipeline(std::declval<const policy_options&>()))> without_breaker;

    // libcurl clients not in use: a call takes one (or makes one when all are
    // busy) and gives it back. The lock is held for a pop and a push, next
    // to a transfer of at least tens of microseconds.
    client_pool pool;

    client_state(client_options o, policy_options p) : options(std::move(o)), policies(std::move(p)) {
        if (auto bad = validate(policies, options.idempotency_key_header, options.idempotency_key, options.transport)) {
            resil::detail::throw_invalid("resil::http::client", *bad);
        }
        curl::client_options curl_options;
        curl_options.idempotency_key_header = options.idempotency_key_header;
        curl_options.tls = options.transport.tls;
        curl_options.proxy = options.transport.proxy;
        curl_options.http_version = options.transport.http_version;
        curl_options.redirects = options.transport.redirects;
        switch (options.idempotency_key) {
            case key_header_format::quoted: curl_options.idempotency_key = curl::key_header_format::quoted; break;
            case key_header_format::unquoted: curl_options.idempotency_key = curl::key_header_format::unquoted; break;
            case key_header_format::none: curl_options.idempotency_key = curl::key_header_format::none; break;
        }
        if (policies.budget) {
            budget.emplace(*policies.budget);
            policies.retry.budget = &*budget;
        }
        if (policies.breaker) {
            breaker.emplace(*policies.breaker);
            with_breaker.emplace(make_pipeline(policies, *breaker));
        } else {
            without_breaker.emplace(make_pipeline(policies));
        }
        pool.open(std::move(curl_options));
    }
};

}  // namespace detail

RESIL_DECL std::string client_options::validate() const {
    if (auto bad = detail::validate(detail::to_policy_options(*this), idempotency_key_header, idempotency_key,
                                    transport)) {
        return bad->message();
    }
    return {};
}

RESIL_DECL client::client(const client_options& options)
    : state_(new detail::client_state(options, detail::to_policy_options(options))) {}

RESIL_DECL client::client(const json::pipeline_config& config, const client_options& defaults) : state_(nullptr) {
    if (config.token_bucket || config.concurrency_limit) {
        throw std::invalid_argument(
            "resil::http::client: the configuration has a token_bucket or concurrency_limit section, which this "
            "client has no policy for (build a pipeline: resil/pipeline.hpp)");
    }
    auto policies = detail::to_policy_options(defaults);
    auto options = defaults;  // what options() reports: the file's sections over the defaults
    if (config.deadline) {
        policies.deadline.budget = *config.deadline;
        options.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(*config.deadline);
    }
    if (config.timeouts) {
        policies.timeouts = *config.timeouts;
        options.timeouts = {config.timeouts->connect, config.timeouts->read, config.timeouts->total};
    }
    if (config.retry) {
        policies.retry = *config.retry;
        options.retry.max_attempts = config.retry->max_attempts;
        // The file may name another kind of backoff: options() shows its
        // base and cap, the policy runs the kind the file gave.
        options.retry.backoff_base = std::chrono::duration_cast<std::chrono::milliseconds>(config.retry->backoff.base());
        options.retry.backoff_cap = std::chrono::duration_cast<std::chrono::milliseconds>(config.retry->backoff.cap());
        options.retry.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(config.retry->max_wait);
    }
    if (config.retry_budget) {
        policies.budget = *config.retry_budget;
        options.retry_budget = {true, config.retry_budget->ratio, config.retry_budget->min_per_second,
                                std::chrono::duration_cast<std::chrono::milliseconds>(config.retry_budget->window)};
    }
    if (config.circuit_breaker) {
        policies.breaker = *config.circuit_breaker;
        const auto& b = *config.circuit_breaker;
        options.circuit_breaker = {true,
                                   b.failure_ratio,
                                   std::chrono::duration_cast<std::chrono::milliseconds>(b.window),
                                   b.min_calls,
                                   std::chrono::duration_cast<std::chrono::milliseconds>(b.open_for),
                                   b.half_open_probes};
    }
    state_ = new detail::client_state(std::move(options), std::move(policies));
}

RESIL_DECL client::client(client&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

RESIL_DECL client& client::operator=(client&& other) noexcept {
    if (this != &other) {
        delete state_;
        state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
}

RESIL_DECL client::~client() { delete state_; }

RESIL_DECL const client_options& client::options() const {
    if (state_ == nullptr) throw std::logic_error("resil::http::client: used after being moved from");
    return state_->options;
}

RESIL_DECL response client::perform(std::string_view method, std::string_view url, std::string_view body,
                                    std::span<const header> headers) {
    if (state_ == nullptr) throw std::logic_error("resil::http::client: used after being moved from");
    curl::request req{std::string(method), std::string(url)};
    // A method that may carry content sends its body even when empty, so
    // the server sees Content-Length: 0 (some answer 411 without it).
    const bool without_content =
        method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" || method == "DELETE";
    if (!body.empty() || !without_content) req.set_body(std::string(body));
    for (const auto& h : headers) req.add_header(h.name, h.value);

    auto& s = *state_;
    auto http = s.pool.borrow();
    std::uint32_t attempts = 0;
    auto call = [&](resil::context& ctx) {
        ++attempts;
        return http->perform(req, ctx);
    };
    auto out = s.with_breaker ? (*s.with_breaker)(call) : (*s.without_breaker)(call);
    auto result = detail::response_access::make(out, attempts);
    // The reply's header buffers go back to the libcurl client, for its next
    // request (the body went to `result`).
    if (out.has_value()) http->recycle(std::move(*out));
    return result;
}

RESIL_DECL response client::get(std::string_view url, std::span<const header> headers) {
    return perform("GET", url, {}, headers);
}

RESIL_DECL response client::post(std::string_view url, std::string_view body, std::span<const header> headers) {
    return perform("POST", url, body, headers);
}

}  // namespace resil::http
