// resil/asio/pipeline.hpp alone: an asynchronous pipeline of every policy
// it drives, run by co_await (fresh context, the caller's context) and by
// async_call with a callback, over a result type of the user's.
#include <resil/asio/pipeline.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <exception>
#include <functional>

namespace resil_entry_points {

struct answer {
    int status = 200;
};
inline resil::classification classify(const answer& a) {
    return a.status < 500 ? resil::verdict::success : resil::verdict::retryable;
}

::asio::awaitable<void> asio_pipeline(const ::asio::any_io_executor& ex, resil::circuit_breaker& breaker,
                                      resil::token_bucket& bucket, resil::concurrency_limit& limit) {
    using namespace std::chrono_literals;
    auto pipe = resil::asio::pipeline(
        resil::fallback_policy{[](const resil::outcome<answer>&) { return answer{503}; }}, resil::deadline_policy{1s},
        resil::retry_policy{}, std::ref(breaker), std::ref(bucket), std::ref(limit),
        resil::timeout_policy{{.total = 500ms}});
    auto fn = [](resil::context&) -> ::asio::awaitable<answer> { co_return answer{}; };
    resil::outcome<answer> out = co_await pipe(fn);
    resil::context ctx;
    out = co_await pipe.execute(ctx, fn, [](const answer& a) { return a.status == 200 ? resil::verdict::success
                                                                                      : resil::verdict::permanent; });
    resil::asio::async_call(pipe, ex, fn, [](std::exception_ptr, resil::outcome<answer>) {});
    const auto heard = pipe.with_listener([](const auto&) {});
    out = co_await heard([]() -> ::asio::awaitable<answer> { co_return answer{}; });
}

}  // namespace resil_entry_points
