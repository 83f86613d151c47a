// resil/http/async_redis_quota.hpp — the quota shared through Redis on the
// Asio face of a resil::http::dependency: included once in a program whose
// dependencies set dependency_options::shared_quota and are used through
// async_dependency (dependency.on(io)). Needs resil::redis and resil::asio
// (and resil::curl, as the face does).
//
//   #include <resil/http/async_dependency.hpp>
//   #include <resil/http/async_redis_quota.hpp>    // includes redis_quota.hpp too
//
//   resil::http::dependency pricing{options};       // options.shared_quota set
//   auto face = pricing.on(io);                     // asks Redis without blocking
//
// Each face asks through a resil::redis::async_rate_limiter of its own, on
// the face's executor, deciding for the dependency's rate_limiter
// (resil/http/redis_quota.hpp): the same key in Redis, the same lease,
// fallback bucket, backoff and counters as the blocking calls, so both
// faces (and every process naming the key) share one quota, with the same
// reasons and events. The round trip is awaited as the limiter's own layer
// of resil::asio::pipeline awaits it, in the "quota" layer of the
// asynchronous pipeline. Registered as redis_quota.hpp registers (a
// factory set during static initialisation); a face of a dependency with a
// shared quota in a program without this header throws
// std::invalid_argument saying to include it.
#pragma once

#include "../asio/config.hpp"  // first: before any Asio header

#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include "../clock.hpp"
#include "../deadline.hpp"
#include "../detail/saturate.hpp"
#include "../rate_limit_decision.hpp"
#include "../redis/asio_rate_limiter.hpp"
#include "async_dependency.hpp"
#include "detail/async_shared_quota.hpp"
#include "redis_quota.hpp"

namespace resil::http::detail {

/// The Asio face of a redis_quota: an async_rate_limiter of its limiter.
class async_redis_quota final : public async_shared_quota {
public:
    async_redis_quota(const redis::rate_limiter& limiter, const ::asio::any_io_executor& ex) : limiter_(limiter, ex) {}

    [[nodiscard]] ::asio::awaitable<rate_limit_decision> admit(time_point deadline,
                                                              std::stop_token stop) const override {
        const auto patience = limiter_.options().max_wait;
        if (patience > std::chrono::milliseconds::zero()) {
            const time_point until =
                std::min(deadline, resil::detail::saturating_add(steady_clock{}.now(), duration{patience}));
            co_return co_await limiter_.async_acquire(resil::deadline::at(until), 1, std::move(stop));
        }
        co_return co_await limiter_.async_try_acquire(resil::deadline::at(deadline));
    }

private:
    redis::async_rate_limiter limiter_;
};

inline std::unique_ptr<async_shared_quota> make_async_redis_quota(const shared_quota& quota,
                                                                  const ::asio::any_io_executor& ex) {
    const auto* redis = dynamic_cast<const redis_quota*>(&quota);
    if (redis == nullptr)
        throw std::logic_error("resil::http::async_dependency: the shared quota is not the Redis one");
    return std::make_unique<async_redis_quota>(redis->limiter(), ex);
}

/// Registers the factory once per program.
inline const bool async_redis_quota_registered = (async_shared_quota_maker() = &make_async_redis_quota, true);

}  // namespace resil::http::detail
