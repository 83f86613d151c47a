// resil/asio/waiter.hpp alone: waits on a real clock and on the manual
// clock (virtual time), with and without a stop token.
#include <resil/asio/waiter.hpp>

#include <asio/awaitable.hpp>

#include <chrono>
#include <stop_token>

namespace resil_entry_points {

::asio::awaitable<bool> asio_waiter(std::stop_token stop) {
    using namespace std::chrono_literals;
    resil::steady_clock real;
    resil::testing::manual_clock manual;
    bool reached = co_await resil::asio::wait_for(real, 10ms);
    reached = reached && co_await resil::asio::wait_until(real, real.now() + 10ms, stop);
    reached = reached && co_await resil::asio::wait_for(manual, 10ms, stop);
    co_return reached && co_await resil::asio::wait_until(manual, manual.now() + 10ms);
}

}  // namespace resil_entry_points
