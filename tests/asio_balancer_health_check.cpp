// Active health checks driven by an Asio executor: the same checker as the
// blocking drivers, woken by a steady_timer.
#include <resil/asio/health_check.hpp>
#include <resil/balancer.hpp>

#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

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
                                  // A probe later than its timeout fails: 50 ms, not a few, so
                                  // that a loaded machine's delay does not take "a" out.
                                  {.interval = 50ms, .timeout = 50ms, .unhealthy_threshold = 2}};
    asio::io_context io;
    resil::asio::health_check_timer driver{io.get_executor(), checker};
    const auto t0 = std::chrono::steady_clock::now();
    driver.start();
    // Three rounds of two probes (at 0, 50 and 100 ms), however loaded the machine is (bounded: 5 s).
    while (probes.load() < 6 && std::chrono::steady_clock::now() - t0 < 5s) io.run_one_for(100ms);
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    const int seen = probes.load();
    CHECK(seen >= 6);
    CHECK(seen <= 2 * static_cast<int>(elapsed / 50ms + 1));  // never more often than every 50 ms
    const auto status = lb.status(resil::steady_clock{}.now());
    CHECK_FALSE(status[0].failing_checks);
    CHECK(status[1].failing_checks);
    driver.stop();
    io.restart();
    io.run_for(120ms);
    CHECK(probes.load() == seen);
}

TEST_CASE("asio health checks on a pool of threads: stop() waits for the round under way; the checker may go after it") {
    std::vector<resil::endpoint> many;
    for (const char* address : {"h0:80", "h1:80", "h2:80", "h3:80", "h4:80", "h5:80", "h6:80", "h7:80", "h8:80", "h9:80"})
        many.push_back({.address = address});
    resil::balancer lb{many};
    std::atomic<int> started{0}, finished{0};
    asio::thread_pool pool{2};
    {
        auto checker = std::make_unique<resil::health_checker>(
            lb,
            [&](const std::string&, resil::duration) {
                started.fetch_add(1);
                std::this_thread::sleep_for(20ms);
                finished.fetch_add(1);
                return true;
            },
            resil::health_check_options{.interval = 1s, .timeout = 100ms});
        resil::asio::health_check_timer driver{pool.get_executor(), *checker};
        driver.start();
        const auto t0 = std::chrono::steady_clock::now();
        while (started.load() < 1 && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(1ms);
        REQUIRE(started.load() >= 1);
        driver.stop();
        // Returned only once the round ended: no probe under way, none left of the ten.
        CHECK(finished.load() == started.load());
        CHECK(started.load() <= 2);
        checker.reset();  // safe after stop() (AddressSanitizer: no use after free)
        std::this_thread::sleep_for(50ms);
        CHECK(finished.load() == started.load());
    }
    pool.join();
}
