// resil/asio/health_check.hpp alone: the timer driving a health checker on
// an executor, started and stopped.
#include <resil/asio/health_check.hpp>

#include <asio/thread_pool.hpp>

namespace resil_entry_points {

void asio_health_check(::asio::thread_pool& probes, resil::health_checker& checker) {
    resil::asio::health_check_timer driver(probes.get_executor(), checker);
    driver.start();
    driver.stop();
}

}  // namespace resil_entry_points
