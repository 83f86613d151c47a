// resil/discovery/asio.hpp alone: the timer driving a DNS discovery source
// on an executor, started and stopped.
#include <resil/discovery/asio.hpp>

#include <asio/thread_pool.hpp>

namespace resil_entry_points {

void discovery_asio_timer(::asio::thread_pool& lookups, resil::dns_discovery& source) {
    resil::asio::dns_discovery_timer driver(lookups.get_executor(), source);
    driver.start();
    driver.stop();
}

}  // namespace resil_entry_points
