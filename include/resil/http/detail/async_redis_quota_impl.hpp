// resil/http/detail/async_redis_quota_impl.hpp — the definitions of
// resil/http/async_redis_quota.hpp: the Redis quota asked through a
// resil::redis::async_rate_limiter, and its registration. Included where the
// bodies are compiled.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include "../../clock.hpp"
#include "../../deadline.hpp"
#include "../../detail/saturate.hpp"
#include "../../rate_limit_decision.hpp"
#include "../../redis/asio_rate_limiter.hpp"
#include "../async_redis_quota.hpp"
#include "async_shared_quota.hpp"

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

RESIL_DECL bool register_async_redis_quota() noexcept {
    async_shared_quota_maker() = &make_async_redis_quota;
    return true;
}

}  // namespace resil::http::detail
