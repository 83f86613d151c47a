// resil/asio/pipeline.hpp: cancellation from outside (a cancellation signal,
// the deadline, io_context.stop()) and every kind of completion token. A
// completion runs at most once, and nothing is touched after it is gone
// (this binary runs under ASan/UBSan and TSan in CI).
#include <resil/asio.hpp>
#include <resil/resil.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include "catch.hpp"

using namespace std::chrono_literals;

namespace {

// Real time: these tests are about a timer that never fires by itself.
constexpr auto long_time = 10s;
constexpr auto soon = 20ms;
constexpr auto bounded = 2s;  // far below long_time, far above soon

resil::classification classify_status(int status) {
    if (status == 429) return {resil::verdict::retryable, resil::server_hint{5s, false}};
    return status >= 500 ? resil::verdict::retryable : resil::verdict::success;
}

// A dependency that answers after `long_time` unless cut short, and says
// whether the context's stop token fired.
struct slow_dependency {
    std::atomic<bool>* stopped;
    ::asio::awaitable<int> operator()(resil::context& ctx) const {
        std::stop_callback on_stop(ctx.stop_token(), [s = stopped] { s->store(true); });
        ::asio::steady_timer timer{co_await ::asio::this_coro::executor, long_time};
        co_await timer.async_wait(::asio::use_awaitable);
        co_return 200;
    }
};

struct completion_log {
    int completions = 0;
    std::optional<resil::outcome<int>> out;
    std::exception_ptr error;
    auto handler() {
        return [this](std::exception_ptr e, resil::outcome<int> o) {
            ++completions;
            error = e;
            out.emplace(std::move(o));
        };
    }
};

void emit_after(::asio::io_context& io, ::asio::steady_timer& timer, ::asio::cancellation_signal& signal,
                ::asio::cancellation_type type = ::asio::cancellation_type::terminal) {
    (void)io;
    timer.expires_after(soon);
    timer.async_wait([&signal, type](const std::error_code&) { signal.emit(type); });
}

}  // namespace

TEST_CASE("asio cancellation: a signal during the wait between attempts ends the call at once, once") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{{.max_attempts = 3}});
    int calls = 0;
    auto too_many = [&calls]() -> ::asio::awaitable<int> {
        ++calls;
        co_return 429;  // Retry-After 5 s
    };
    for (auto type : {::asio::cancellation_type::terminal, ::asio::cancellation_type::partial,
                      ::asio::cancellation_type::total}) {
        calls = 0;
        ::asio::cancellation_signal signal;
        ::asio::steady_timer timer{io};
        completion_log log;
        resil::asio::async_call(pipe, io.get_executor(), too_many, classify_status,
                                ::asio::bind_cancellation_slot(signal.slot(), log.handler()));
        emit_after(io, timer, signal, type);
        const auto t0 = std::chrono::steady_clock::now();
        io.restart();
        io.run();
        CHECK(std::chrono::steady_clock::now() - t0 < bounded);
        REQUIRE(log.completions == 1);
        CHECK(!log.error);
        CHECK(log.out->reason() == resil::reason::cancelled);
        CHECK(log.out->has_value());  // the last answer there was
        CHECK(calls == 1);
        signal.emit(::asio::cancellation_type::terminal);  // after completion: nothing happens
        io.restart();
        io.run();
        CHECK(log.completions == 1);
    }
}

TEST_CASE("asio cancellation: a signal reaches the attempt in flight and the context's stop token") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{}, resil::timeout_policy{{.total = 30s}});
    std::atomic<bool> stopped{false};
    ::asio::cancellation_signal signal;
    ::asio::steady_timer timer{io};
    completion_log log;
    resil::asio::async_call(pipe, io.get_executor(), slow_dependency{&stopped}, classify_status,
                            ::asio::bind_cancellation_slot(signal.slot(), log.handler()));
    emit_after(io, timer, signal);
    const auto t0 = std::chrono::steady_clock::now();
    io.run();
    CHECK(std::chrono::steady_clock::now() - t0 < bounded);
    REQUIRE(log.completions == 1);
    CHECK(!log.error);
    CHECK(log.out->reason() == resil::reason::cancelled);
    CHECK(log.out->verdict() == resil::verdict::ambiguous);  // it may have reached the server
    CHECK(stopped.load());
}

TEST_CASE("asio cancellation: the deadline cuts the attempt in flight short, in a coroutine too") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::deadline_policy{50ms}, resil::retry_policy{});
    std::atomic<bool> stopped{false};
    std::optional<resil::outcome<int>> out;
    std::chrono::steady_clock::duration took{};
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            const auto t0 = std::chrono::steady_clock::now();
            out.emplace(co_await pipe(slow_dependency{&stopped}, classify_status));
            took = std::chrono::steady_clock::now() - t0;
        },
        ::asio::detached);
    io.run();
    REQUIRE(out);
    CHECK(out->reason() == resil::reason::deadline_exceeded);
    CHECK(took >= 45ms);
    CHECK(took < bounded);
    CHECK(stopped.load());
}

TEST_CASE("asio cancellation: a coroutine's own cancellation reaches a call it awaits") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{});
    std::atomic<bool> stopped{false};
    std::optional<resil::outcome<int>> out;
    ::asio::cancellation_signal signal;
    ::asio::steady_timer timer{io};
    int finished = 0;
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> { out.emplace(co_await pipe(slow_dependency{&stopped}, classify_status)); },
        ::asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr) { ++finished; }));
    emit_after(io, timer, signal);
    io.run();
    CHECK(finished == 1);
    REQUIRE(out);
    CHECK(out->reason() == resil::reason::cancelled);
    CHECK(stopped.load());
}

TEST_CASE("asio cancellation: io_context.stop() mid-call never completes it, and frees everything") {
    for (int where = 0; where < 2; ++where) {
        completion_log log;
        std::atomic<bool> stopped{false};
        auto pipe = resil::asio::pipeline(resil::deadline_policy{30s}, resil::retry_policy{{.max_attempts = 3}});
        {
            ::asio::io_context io;
            ::asio::cancellation_signal signal;
            if (where == 0) {  // in flight
                resil::asio::async_call(pipe, io.get_executor(), slow_dependency{&stopped}, classify_status,
                                        ::asio::bind_cancellation_slot(signal.slot(), log.handler()));
            } else {  // waiting between attempts
                resil::asio::async_call(
                    pipe, io.get_executor(), []() -> ::asio::awaitable<int> { co_return 429; }, classify_status,
                    ::asio::bind_cancellation_slot(signal.slot(), log.handler()));
            }
            ::asio::steady_timer timer{io, soon};
            timer.async_wait([&io](const std::error_code&) { io.stop(); });
            const auto t0 = std::chrono::steady_clock::now();
            io.run();
            CHECK(std::chrono::steady_clock::now() - t0 < bounded);
        }  // destroyed with the call suspended: its frames go, its handler is never called
        CHECK(log.completions == 0);
    }
}

TEST_CASE("asio completion tokens: callback, use_future, deferred, use_awaitable") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 2ms}}});
    int calls = 0;
    auto flaky = [&calls]() -> ::asio::awaitable<int> { co_return ++calls % 2 == 1 ? 503 : 200; };

    SECTION("callback") {
        completion_log log;
        resil::asio::async_call(pipe, io.get_executor(), flaky, classify_status, log.handler());
        io.run();
        REQUIRE(log.completions == 1);
        CHECK(log.out->ok());
        CHECK(**log.out == 200);
    }
    SECTION("use_future") {
        auto future = resil::asio::async_call(pipe, io.get_executor(), flaky, classify_status, ::asio::use_future);
        std::thread runner([&io] { io.run(); });
        const auto out = future.get();
        runner.join();
        CHECK(out.ok());
        CHECK(calls == 2);
    }
    SECTION("deferred") {
        auto op = resil::asio::async_call(pipe, io.get_executor(), flaky, classify_status,
                                          ::asio::experimental::deferred);
        CHECK(calls == 0);  // nothing runs until the deferred operation is started
        completion_log log;
        std::move(op)(log.handler());
        io.run();
        REQUIRE(log.completions == 1);
        CHECK(log.out->ok());
    }
    SECTION("use_awaitable") {
        std::optional<resil::outcome<int>> out;
        ::asio::co_spawn(
            io,
            [&]() -> ::asio::awaitable<void> {
                out.emplace(co_await resil::asio::async_call(pipe, co_await ::asio::this_coro::executor, flaky,
                                                             classify_status, ::asio::use_awaitable));
            },
            ::asio::detached);
        io.run();
        REQUIRE(out);
        CHECK(out->ok());
    }
    SECTION("an exception nobody judged reaches the completion, once") {
        auto throws = []() -> ::asio::awaitable<int> {
            throw std::runtime_error("boom");
            co_return 0;
        };
        completion_log log;
        resil::asio::async_call(pipe, io.get_executor(), throws, classify_status, log.handler());
        auto future = resil::asio::async_call(pipe, io.get_executor(), throws, classify_status, ::asio::use_future);
        io.run();
        REQUIRE(log.completions == 1);
        CHECK(log.error);
        CHECK(log.out->reason() == resil::reason::failed);
        CHECK_THROWS_AS(future.get(), std::runtime_error);
    }
    SECTION("a judged exception is retried like a result") {
        int thrown = 0;
        auto throws_once = [&thrown]() -> ::asio::awaitable<int> {
            if (thrown++ == 0) throw std::runtime_error("boom");
            co_return 200;
        };
        completion_log log;
        resil::asio::async_call(
            pipe, io.get_executor(), throws_once,
            resil::classifier{[](int status) { return classify_status(status); },
                              [](const std::exception_ptr&) { return resil::verdict::retryable; }},
            log.handler());
        io.run();
        REQUIRE(log.completions == 1);
        CHECK(log.out->ok());
        CHECK(thrown == 2);
    }
}

TEST_CASE("asio pipeline: a callable taking a completion token, and one returning awaitable<void>") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{});
    std::optional<resil::outcome<int>> answered;
    std::optional<resil::outcome<resil::unit>> done;
    // An Asio-style operation completing with (error_code, int), as a client's would.
    auto with_token = [](resil::context&, auto token) {
        return ::asio::async_initiate<decltype(token), void(std::error_code, int)>(
            [](auto handler) {
                auto ex = ::asio::get_associated_executor(handler);
                ::asio::post(ex, [h = std::move(handler)]() mutable { std::move(h)(std::error_code{}, 200); });
            },
            token);
    };
    ::asio::co_spawn(
        io,
        [&]() -> ::asio::awaitable<void> {
            answered.emplace(co_await pipe(with_token, classify_status));
            done.emplace(co_await pipe([]() -> ::asio::awaitable<void> { co_return; }));
        },
        ::asio::detached);
    io.run();
    REQUIRE(answered);
    CHECK(answered->ok());
    REQUIRE(done);
    CHECK(done->ok());
}

TEST_CASE("asio cancellation: the caller's stop token, fired from another thread, ends a wait and an attempt") {
    for (int where = 0; where < 2; ++where) {
        auto pipe = resil::asio::pipeline(resil::retry_policy{{.max_attempts = 3}});
        std::stop_source caller;
        std::atomic<bool> stopped{false};
        std::optional<resil::outcome<int>> out;
        resil::context ctx{resil::call_options{.stop = caller.get_token()}};
        {
            ::asio::io_context io;
            ::asio::co_spawn(
                io,
                [&]() -> ::asio::awaitable<void> {
                    if (where == 0)  // waiting between attempts (Retry-After 5 s)
                        out.emplace(co_await pipe.execute(
                            ctx, []() -> ::asio::awaitable<int> { co_return 429; }, classify_status));
                    else  // in flight: the callable watches the stop token
                        out.emplace(co_await pipe.execute(ctx, slow_dependency{&stopped}, classify_status));
                },
                ::asio::detached);
            std::thread canceller([&caller] {
                std::this_thread::sleep_for(soon);
                caller.request_stop();
            });
            std::thread runner([&io] { io.run(); });
            if (where == 1) {
                // The fake dependency waits on a timer: stop it once its stop token fired.
                while (!stopped.load()) std::this_thread::sleep_for(1ms);
                io.stop();
            }
            canceller.join();
            runner.join();
        }  // a call stopped in flight gives the context back as its frames go
        if (where == 0) {
            REQUIRE(out);
            CHECK(out->reason() == resil::reason::cancelled);
        } else {
            CHECK(stopped.load());
        }
        // The caller's context keeps the caller's own token.
        CHECK(ctx.stop_token() == caller.get_token());
    }
}

TEST_CASE("asio cancellation: an upstream deadline passed to async_call cuts the attempt in flight") {
    ::asio::io_context io;
    auto pipe = resil::asio::pipeline(resil::retry_policy{});
    std::atomic<bool> stopped{false};
    completion_log log;
    resil::asio::async_call(pipe, io.get_executor(),
                            resil::call_options{.deadline = resil::deadline::after(50ms), .idempotent = true},
                            slow_dependency{&stopped}, classify_status, log.handler());
    const auto t0 = std::chrono::steady_clock::now();
    io.run();
    const auto took = std::chrono::steady_clock::now() - t0;
    REQUIRE(log.completions == 1);
    CHECK(!log.error);
    CHECK(log.out->reason() == resil::reason::deadline_exceeded);
    CHECK(took >= 45ms);
    CHECK(took < bounded);
    CHECK(stopped.load());
}
