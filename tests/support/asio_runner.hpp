// tests/support/asio_runner.hpp — an io_context run by a thread of its own
// for the Asio tests that drive it from the test's thread: `get(a)` awaits
// `a` there and returns its result (bounded: throws after `bound`), and the
// thread's longest stall is measured by a timer ticking every 5 ms (how late
// it fired), so a test can show that nothing blocked the loop for long.
//
//   resil_test::asio_runner runner;
//   auto r = runner.get(limiter.async_try_acquire());
//   CHECK(runner.longest_stall() < 100ms);
#pragma once

#include <resil/asio/config.hpp>  // first: before any Asio header

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <thread>

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_future.hpp>

namespace resil_test {

class asio_runner {
public:
    asio_runner() : work_(io_.get_executor()), tick_(io_) {
        arm();
        thread_ = std::thread([this] { io_.run(); });
    }
    asio_runner(const asio_runner&) = delete;
    asio_runner& operator=(const asio_runner&) = delete;
    ~asio_runner() {
        work_.reset();
        io_.stop();
        thread_.join();
    }

    [[nodiscard]] asio::io_context& io() noexcept { return io_; }

    /// `a` awaited on the loop; its result, or what it threw.
    template <class T>
    T get(asio::awaitable<T> a, std::chrono::milliseconds bound = std::chrono::seconds{30}) {
        auto f = asio::co_spawn(io_, std::move(a), asio::use_future);
        if (f.wait_for(bound) != std::future_status::ready)
            throw std::runtime_error("the awaited operation did not complete in time");
        return f.get();
    }

    /// The longest a 5 ms tick fired late since the last reset.
    [[nodiscard]] std::chrono::microseconds longest_stall() const noexcept {
        return std::chrono::microseconds{stall_us_.load()};
    }
    void reset_stall() noexcept { stall_us_.store(0); }

private:
    void arm() {
        due_ = std::chrono::steady_clock::now() + std::chrono::milliseconds{5};
        tick_.expires_at(due_);
        tick_.async_wait([this](const std::error_code& ec) {
            if (ec) return;
            const auto late =
                std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - due_).count();
            if (late > stall_us_.load()) stall_us_.store(late);
            arm();
        });
    }

    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    asio::steady_timer tick_;
    std::chrono::steady_clock::time_point due_{};
    std::atomic<std::int64_t> stall_us_{0};
    std::thread thread_;
};

}  // namespace resil_test
