// Active health checks driven by an Asio executor: the same checker as the
// blocking drivers, woken by a steady_timer.
#include <resil/asio/health_check.hpp>
#include <resil/balancer.hpp>

#include <asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <string>

#include "catch.hpp"

using namespace std::chrono_literals;

TEST_CASE("asio health checks: probes every interval on the executor, take a failing endpoint out, stop on stop()") {
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}}};
    std::atomic<int> probes{0};
    resil::health_checker checker{lb,
                                  [&](const std::string& address, resil::duration) {
                                      probes.fetch_add(1);
                                      return address != "b:80";
                                  },
                                  {.interval = 10ms, .timeout = 5ms, .unhealthy_threshold = 2}};
    asio::io_context io;
    resil::asio::health_check_timer driver{io.get_executor(), checker};
    const auto t0 = std::chrono::steady_clock::now();
    driver.start();
    // Three rounds of two probes (at 0, 10 and 20 ms), however loaded the machine is (bounded: 5 s).
    while (probes.load() < 6 && std::chrono::steady_clock::now() - t0 < 5s) io.run_one_for(100ms);
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    const int seen = probes.load();
    CHECK(seen >= 6);
    CHECK(seen <= 2 * static_cast<int>(elapsed / 10ms + 1));  // never more often than every 10 ms
    const auto status = lb.status(resil::steady_clock{}.now());
    CHECK_FALSE(status[0].failing_checks);
    CHECK(status[1].failing_checks);
    driver.stop();
    io.restart();
    io.run_for(40ms);
    CHECK(probes.load() == seen);
}
