// resil/redis/asio_rate_limiter.hpp alone: every asynchronous decision, and
// the limiter as a policy of resil::asio::pipeline (with a retry around it
// and a listener), run by co_await.
#include <resil/redis/asio_rate_limiter.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <stop_token>

namespace resil_entry_points {

::asio::awaitable<void> redis_asio_rate_limiter(const ::asio::any_io_executor& ex,
                                                const resil::redis::rate_limiter& limiter, std::stop_token stop) {
    using namespace std::chrono_literals;
    resil::redis::async_rate_limiter quota{limiter, ex};
    resil::redis::rate_limit_result r = co_await quota.async_try_acquire();
    r = co_await quota.async_try_acquire(resil::deadline::after(1s), 2);
    r = co_await quota.async_try_acquire_for("tenant", 1, resil::deadline::after(1s));
    r = co_await quota.async_acquire(resil::deadline::after(1s), 1, stop);
    r = co_await quota.async_acquire_for("tenant", resil::deadline::after(1s));
    auto pipe = resil::asio::pipeline(resil::retry_policy{}, std::ref(quota));
    resil::outcome<int> out = co_await pipe([]() -> ::asio::awaitable<int> { co_return 1; }, resil::always_success);
    const auto heard = pipe.with_listener([](const auto&) {});
    out = co_await heard([](resil::context&) -> ::asio::awaitable<int> { co_return 2; }, resil::always_success);
    (void)r;
    (void)out;
}

}  // namespace resil_entry_points
