// The Asio driver of DNS discovery (resil/discovery/asio.hpp) against a real
// dnsmasq: the set found on the executor, a pod added seen by a later
// lookup, nothing run after stop().
#include <resil/discovery/asio.hpp>

#include <asio/thread_pool.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/dnsmasq_server.hpp"

using namespace std::chrono_literals;

TEST_CASE("dns_discovery_timer: lookups on the executor, again after each TTL, none after stop()") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test"}, 0};
    resil::balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    resil::dns_discovery discovery{{.name = "svc.test", .port = 8080, .ipv6 = false, .nameserver = dns.nameserver(),
                                    .min_ttl = 50ms, .max_ttl = 50ms, .query_timeout = 1s, .query_attempts = 1},
                                   lb};
    const auto wait_for = [&](const std::vector<std::string>& want) {
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (lb.addresses() != want && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(5ms);
        return lb.addresses() == want;
    };
    asio::thread_pool lookups{1};
    {
        resil::asio::dns_discovery_timer driver{lookups.get_executor(), discovery};
        driver.start();
        CHECK(wait_for({"http://10.0.0.1:8080"}));
        dns.set_hosts({"10.0.0.1 svc.test", "10.0.0.2 svc.test"}, "svc.test");
        CHECK(wait_for({"http://10.0.0.1:8080", "http://10.0.0.2:8080"}));
        driver.stop();
        const auto lookups_at_stop = discovery.metrics().lookups;
        std::this_thread::sleep_for(200ms);
        CHECK(discovery.metrics().lookups == lookups_at_stop);
        // Started again, it looks up again.
        driver.start();
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (discovery.metrics().lookups == lookups_at_stop && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(5ms);
        CHECK(discovery.metrics().lookups > lookups_at_stop);
    }
    lookups.join();
}
