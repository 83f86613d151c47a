// resil/http/detail/dependency_impl.hpp — the definitions of
// resil::http::dependency (resil/http/dependency.hpp): its state built from
// the options, the metrics wired in, and the blocking call. Included where
// the bodies are compiled, as resil/http/detail/client_impl.hpp is.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../balancer/call.hpp"
#include "../../balancer/tried_endpoints.hpp"
#include "../../context.hpp"
#include "../dependency.hpp"
#include "dependency_state.hpp"
#include "response_access.hpp"

namespace resil::http {

namespace detail {

/// Every hook of the dependency's metrics, in one place: its breakers'
/// transitions (the whole dependency's and each endpoint's) and the
/// balancer's ejections and returns. A hook the user set is called too.
inline void wire_metrics(dependency_options& o, resil::metrics& m) {
    auto chain_breaker = [](circuit_breaker_options& b, resil::metrics::breaker_hook_type hook) {
        b.on_state_change = [user = std::move(b.on_state_change), hook](const events::breaker_state_changed& e) {
            hook(e);
            if (user) user(e);
        };
    };
    // The parts the dependency has, so their series exist from the first
    // scrape and no other part's do (the breakers' and the balancer's are
    // known from their hooks; the quota's from watch_quota()).
    using part = resil::metrics::part;
    part parts = part::balancing;
    if (o.retry.max_attempts > 1) parts = parts | part::retry;
    if (o.concurrency_limit) parts = parts | part::load_shedding;
    if (o.adaptive_limit) parts = parts | part::adaptive_limiting;
    if (o.pacing) parts = parts | part::pacing;
    if (o.quota) parts = parts | part::rate_limiting;
    if (o.shared_quota) parts = parts | part::quota;
    if (o.hedge) parts = parts | part::hedging;
    if (o.faults && o.faults->enabled) parts = parts | part::fault_injection;
    m.declare(parts);
    if (o.circuit_breaker) chain_breaker(*o.circuit_breaker, m.breaker_hook());
    if (o.balancing.endpoint_breaker) chain_breaker(*o.balancing.endpoint_breaker, m.endpoint_breaker_hook());
    o.balancing.on_ejected = [user = std::move(o.balancing.on_ejected), &m](const events::endpoint_ejected& e) {
        m(e);
        if (user) user(e);
    };
    o.balancing.on_returned = [user = std::move(o.balancing.on_returned), &m](const events::endpoint_returned& e) {
        m(e);
        if (user) user(e);
    };
}

inline const dependency_options& validated(const dependency_options& o) {
    throw_if_invalid("resil::http::dependency", o.validate());
    if (o.shared_quota && shared_quota_maker() == nullptr) {
        throw std::invalid_argument(
            "resil::http::dependency: `shared_quota` needs the Redis quota: include <resil/http/redis_quota.hpp> "
            "in the program and link resil::redis, got a program without it");
    }
    return o;
}

inline retry_options with_budget(retry_options r, std::optional<retry_budget>& budget) {
    r.budget = budget ? &*budget : nullptr;
    return r;
}

inline dependency_options wired(dependency_options o, resil::metrics& m) {
    wire_metrics(o, m);
    return o;
}

inline std::optional<retry_budget> make_budget(const dependency_options& o) {
    if (!o.retry_budget) return std::nullopt;
    return std::optional<retry_budget>{std::in_place, *o.retry_budget};
}

RESIL_DECL dependency_state::dependency_state(dependency_options o)
    : options(validated(o)),
      metrics(options.name),
      budget(make_budget(options)),
      deadline(options.deadline),
      retry(with_budget(options.retry, budget)),
      timeouts(options.timeouts),
      lb(options.endpoints, wired(options, metrics).balancing) {
    auto w = wired(options, metrics);  // the breakers' hooks
    if (w.circuit_breaker) breaker.emplace(*w.circuit_breaker);
    if (w.concurrency_limit) limit.emplace(*w.concurrency_limit);
    if (w.adaptive_limit) adaptive.emplace(*w.adaptive_limit);
    if (w.pacing) pacing.emplace(*w.pacing);
    if (w.quota) quota.emplace(*w.quota);
    if (w.shared_quota) {
        shared = shared_quota_maker()(*w.shared_quota);
        shared->watched_by(metrics);  // decisions by source and the connection, read at export
    }
    if (w.faults) faults.emplace(*w.faults);
    if (w.hedge) {
        auto h = *w.hedge;
        h.budget = budget ? &*budget : nullptr;  // hedges and retries share one throttle
        hedge.emplace(h);
    }
    metrics.watch_balancer(lb);  // picks per endpoint, read at export
    curl_options = options.transport;
    blocking.emplace(blocking_pipeline(*this));
    pool.open(curl_options);
    if (options.health_check) {
        probe_client = std::make_unique<curl::client>(curl_options);
        const std::string path = options.health_check->path;
        checker = std::make_unique<health_checker>(
            lb,
            [this, path](const std::string& address, duration timeout) {
                resil::context ctx{resil::call_options{.deadline = resil::deadline::after(timeout)}};
                const auto r = probe_client->perform(curl::request::get(address + path), ctx);
                return r.ok();
            },
            options.health_check->probe);
        checker_thread = std::make_unique<health_check_thread>(*checker);
    }
}

RESIL_DECL dependency_state::~dependency_state() {
    checker_thread.reset();  // stops probing before the checker and its client go
}

}  // namespace detail

RESIL_DECL dependency::dependency(dependency_options options)
    : state_(new detail::dependency_state(std::move(options))) {}

RESIL_DECL dependency::dependency(dependency&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

RESIL_DECL dependency& dependency::operator=(dependency&& other) noexcept {
    if (this != &other) {
        delete state_;
        state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
}

RESIL_DECL dependency::~dependency() { delete state_; }

RESIL_DECL detail::dependency_state& dependency::state() const {
    if (state_ == nullptr) throw std::logic_error("resil::http::dependency: used after being moved from");
    return *state_;
}

RESIL_DECL resil::metrics& dependency::metrics() const { return state().metrics; }
RESIL_DECL const resil::balancer& dependency::balancer() const { return state().lb; }
RESIL_DECL const dependency_options& dependency::options() const { return state().options; }

RESIL_DECL void dependency::replace_endpoints(std::vector<endpoint> endpoints) {
    auto& s = state();
    if (endpoints.empty())
        resil::detail::throw_invalid("resil::http::dependency",
                                     invalid_option{"endpoints", "must name at least one endpoint, got none"});
    throw_if_invalid("resil::http::dependency", validate_endpoints(endpoints));
    s.lb.replace(endpoints);
}

RESIL_DECL response dependency::perform(const request& req) {
    auto& s = state();
    // Checked before any I/O: a request libcurl would refuse is the caller's error.
    {
        curl::request check{req.method, "http://check.invalid"};
        for (const auto& [n, v] : req.headers) check.add_header(n, v);
    }
    auto http = s.pool.borrow();

    resil::tried_endpoints tried;
    std::uint32_t attempts = 0;
    std::string answered;
    auto attempt = [&](resil::context& ctx) {
        return resil::call_endpoint(s.lb, ctx, tried, [&](const endpoint& ep) {
            ++attempts;
            answered = ep.address;
            auto r = http->perform(detail::dependency_state::to_curl(req, ep), ctx);
            s.observe(r);
            return r;
        });
    };
    auto out = [&] {
        if (req.fault_tag.empty()) return (*s.blocking)(attempt);
        resil::context ctx;
        ctx.set_fault_tag(req.fault_tag);
        return s.blocking->execute(ctx, attempt);
    }();
    auto result = detail::response_access::make(out, attempts, std::move(answered));
    if (out.has_value() && out->has_value()) http->recycle(std::move(**out));
    return result;
}

RESIL_DECL response dependency::get(std::string_view path, std::span<const header> headers) {
    request req{.method = "GET", .path = std::string(path)};
    for (const auto& h : headers) req.headers.emplace_back(std::string(h.name), std::string(h.value));
    return perform(req);
}

RESIL_DECL response dependency::post(std::string_view path, std::string_view body, std::span<const header> headers) {
    request req{.method = "POST", .path = std::string(path), .body = std::string(body)};
    for (const auto& h : headers) req.headers.emplace_back(std::string(h.name), std::string(h.value));
    return perform(req);
}

}  // namespace resil::http
