// resil/http/redis_quota.hpp — the quota shared through Redis of a
// resil::http::dependency (dependency_options::shared_quota): included once
// in a program that sets it, it lets dependencies build a
// resil::redis::rate_limiter on the options' key. Needs the resil::redis
// CMake target (hiredis); the dependency's own headers never do.
//
//   #include <resil/http/dependency.hpp>
//   #include <resil/http/redis_quota.hpp>          // in any source file of the program
//
//   resil::http::dependency pricing{{
//       .name = "pricing",
//       .endpoints = {{.address = "https://pricing.internal"}},
//       .shared_quota = resil::redis::rate_limiter_options{
//           .rate = 50, .burst = 100, .host = "10.0.0.7", .key = "pricing-api",
//           .on_failure = resil::redis::failure_policy::fail_open, .expected_pods = 10},
//   }};
//   if (auto* l = resil::http::shared_quota_limiter(pricing)) log(l->metrics().store_failures);
//
// Each attempt takes one permit from the quota, inside the retry, the
// breaker and the limits, before the per-attempt timeouts (the "quota"
// layer of docs/dependency.md): a refusal is reason::rate_limited with the
// wait as Retry-After; when Redis cannot decide, the limiter's failure
// policy answers (fail open through its local bucket, or fail closed with
// reason::quota_unavailable), and events::quota_store_failed is counted in
// the dependency's metrics. With `max_wait`, an attempt first waits up to
// that long (never past the call's deadline) for a permit reserved in Redis.
// Every dependency and every process naming the same key (key_prefix +
// "{" + key + "}") shares one quota; the Asio face
// (resil/http/async_redis_quota.hpp) asks the same key through a
// resil::redis::async_rate_limiter of the same limiter.
//
// With RESIL_SEPARATE_COMPILATION this header declares only (the quota is
// compiled in resil/http/redis_separate_compilation.hpp): include
// <resil/redis/rate_limiter.hpp> too to use the limiter shared_quota_limiter
// returns.
//
// How it is found: this header registers a factory (a function pointer set
// during static initialisation) that the dependency's constructor calls; a
// dependency with a shared quota built in a program without this header
// throws std::invalid_argument saying to include it. Build dependencies
// from main() on (not from another static initialiser, whose order against
// the registration C++ leaves open).
//
// Thread-safety: the limiter is shared by every call of the dependency, on
// every thread (resil::redis::rate_limiter is thread-safe).
#pragma once

#include <memory>

#include "../detail/platform.hpp"
#include "../redis/options.hpp"
#include "dependency.hpp"

// The quota's class wherever the limiter's is parsed anyway (the Asio face,
// resil/http/async_redis_quota.hpp, reads it), and header-only.
#if RESIL_DETAIL_BODIES || defined(RESIL_DETAIL_REDIS_RATE_LIMITER)
#define RESIL_DETAIL_REDIS_QUOTA_CLASS 1
#include <chrono>
#include <stop_token>

#include "../clock.hpp"
#include "../deadline.hpp"
#include "../detail/saturate.hpp"
#include "../metrics.hpp"
#include "../rate_limit_decision.hpp"
#include "../redis/rate_limiter.hpp"
#include "detail/dependency_state.hpp"
#else
// With RESIL_SEPARATE_COMPILATION the quota and its limiter are compiled
// once (resil/http/redis_separate_compilation.hpp): a file that includes
// this header parses neither hiredis nor the limiter.
namespace resil::redis {
class rate_limiter;
}  // namespace resil::redis
#endif

namespace resil::http {

namespace detail {

/// Makes the dependencies of this program able to build a Redis quota
/// (dependency_options::shared_quota); what including this header does, once.
RESIL_DECL bool register_redis_quota() noexcept;

#if defined(RESIL_DETAIL_REDIS_QUOTA_CLASS)
/// A dependency's shared quota in Redis: a resil::redis::rate_limiter on the
/// options' key, asked as the limiter asks as a pipeline policy.
class redis_quota final : public shared_quota {
public:
    explicit redis_quota(const redis::rate_limiter_options& options) : limiter_(options) {}

    [[nodiscard]] rate_limit_decision admit(time_point deadline, std::stop_token stop) const override {
        // As rate_limiter::execute: a reservation's wait only with max_wait.
        const auto patience = limiter_.options().max_wait;
        if (patience > std::chrono::milliseconds::zero()) {
            const time_point until =
                std::min(deadline, resil::detail::saturating_add(steady_clock{}.now(), duration{patience}));
            return limiter_.acquire(resil::deadline::at(until), 1, std::move(stop));
        }
        return limiter_.try_acquire(resil::deadline::at(deadline));
    }

    void watched_by(resil::metrics& m) const override { m.watch_quota(limiter_); }

    [[nodiscard]] const redis::rate_limiter& limiter() const noexcept { return limiter_; }

private:
    redis::rate_limiter limiter_;
};

inline std::unique_ptr<shared_quota> make_redis_quota(const redis::rate_limiter_options& options) {
    return std::make_unique<redis_quota>(options);
}
#endif

#if RESIL_DETAIL_BODIES
RESIL_DECL bool register_redis_quota() noexcept {
    shared_quota_maker() = &make_redis_quota;
    return true;
}
#endif

/// Registers the factory once per program (every file including this header
/// sets the same pointer). Not in the compiled source of a
/// RESIL_SEPARATE_COMPILATION program, which every such program links, with
/// a Redis quota or not.
#if !defined(RESIL_DETAIL_SOURCE)
inline const bool redis_quota_registered = register_redis_quota();
#endif

}  // namespace detail

/// The Redis limiter of `d`'s shared quota (its counters, redis_down(),
/// last_error(), fallback bucket), or null when `d` has none. It lives as
/// long as `d`. Throws std::logic_error on a moved-from dependency.
[[nodiscard]] RESIL_DECL const redis::rate_limiter* shared_quota_limiter(const dependency& d);

#if RESIL_DETAIL_BODIES
RESIL_DECL const redis::rate_limiter* shared_quota_limiter(const dependency& d) {
    const auto* q = dynamic_cast<const detail::redis_quota*>(d.state().shared.get());
    return q != nullptr ? &q->limiter() : nullptr;
}
#endif

}  // namespace resil::http
