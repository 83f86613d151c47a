// The dependency floor of examples/service_checkout.cpp: the headers of Asio,
// nlohmann/json, libcurl, hiredis and prometheus-cpp that the service (and the
// resil headers it includes) use, each given trivial work — two timers awaited
// together in a coroutine on an io_context, a JSON parse, an easy handle, a
// Redis connection (blocking and on an event loop), a counter on an exposer.
// What any service built on those libraries compiles without resil:
// scripts/compile_time.sh reports the service's rows as multiples of it.
#include <asio/any_io_executor.hpp>
#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_state.hpp>
#include <asio/co_spawn.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/recycling_allocator.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <curl/curl.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>
#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>

using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    // JSON: a file's text parsed, a field read.
    std::ifstream in(argc > 1 ? argv[1] : "service.json");
    const auto config = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
    const std::string url = config.is_object() ? config.value("url", std::string("http://127.0.0.1/")) : "";

    // libcurl: an easy handle, one transfer.
    CURL* easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 250L);
    const CURLcode rc = curl_easy_perform(easy);
    curl_easy_cleanup(easy);

    // hiredis: a blocking connection and one command, and one on an event loop.
    redisContext* redis = redisConnect("127.0.0.1", 6379);
    if (redis != nullptr && redis->err == 0) freeReplyObject(redisCommand(redis, "PING"));
    redisFree(redis);
    redisAsyncContext* async_redis = redisAsyncConnect("127.0.0.1", 6379);
    if (async_redis != nullptr) redisAsyncFree(async_redis);

    // prometheus-cpp: a counter on an exposer.
    auto registry = std::make_shared<prometheus::Registry>();
    auto& calls = prometheus::BuildCounter().Name("calls_total").Help("calls").Register(*registry);
    calls.Add({{"result", "ok"}}).Increment();
    prometheus::Exposer exposer{"127.0.0.1:0"};
    exposer.RegisterCollectable(registry);

    // Asio: two timers awaited together in a coroutine, its result through a future.
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread io_thread([&] { io.run(); });
    auto [a, b] = asio::co_spawn(io, [&]() -> asio::awaitable<std::tuple<int, int>> {
        asio::steady_timer t1(io, 1ms), t2(io, 2ms);
        co_await (t1.async_wait(asio::use_awaitable) && t2.async_wait(asio::use_awaitable));
        co_return std::tuple{1, 2};
    }, asio::use_future).get();
    io.stop();
    io_thread.join();

    std::printf("%d %d %d\n", static_cast<int>(rc), a, b);
}
