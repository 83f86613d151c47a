// DNS discovery against a real dnsmasq started here (tests/support/
// dnsmasq_server.hpp): pods added and removed by rewriting its hosts file,
// the resolver killed, TTLs clamped, SRV ports and weights, on the manual
// clock (refresh(now) driven by the test) and on a thread of its own.
#include <resil/discovery.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/dnsmasq_server.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::dns_discovery;
using resil::dns_discovery_options;
using resil::dns_lookup_outcome;
using resil::endpoint;
using resil::testing::manual_clock;

namespace {

std::string invalid(const dns_discovery_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : std::string{};
}

std::vector<std::string> addresses_of(const std::vector<endpoint>& set) {
    std::vector<std::string> out;
    for (const auto& e : set) out.push_back(e.address);
    return out;
}

/// Picks per address over `n` round-robin picks, each lease ended at once.
std::map<std::string, int> spread(const balancer& lb, manual_clock& clock, int n) {
    std::map<std::string, int> out;
    for (int i = 0; i < n; ++i) {
        auto lease = lb.pick(clock.now());
        REQUIRE(lease);
        ++out[std::string(lease.address())];
        lease.record_and_end(clock.now(), resil::endpoint_result::success);
    }
    return out;
}

dns_discovery_options options_for(const resil_test::dnsmasq_server& dns) {
    return {.name = "svc.test", .port = 8080, .ipv6 = false, .nameserver = dns.nameserver(),
            .min_ttl = 2s, .max_ttl = 60s, .query_timeout = 1s, .query_attempts = 1};
}

}  // namespace

TEST_CASE("dns_discovery_options: every field is checked in the house form") {
    dns_discovery_options o{.name = "svc.test"};
    CHECK(invalid(o).empty());
    CHECK(invalid({.name = ""}) ==
          "`name` must be a DNS name (labels of letters, digits, '-', '_'; at most 253 characters), got \"\"");
    CHECK(invalid({.name = "a..b"}).starts_with("`name` must be a DNS name"));
    CHECK(invalid({.name = std::string(64, 'a') + ".test"}).starts_with("`name` must be a DNS name"));
    CHECK(invalid({.name = "_http._tcp.svc.test."}).empty());
    CHECK(invalid({.name = "x.test", .port = 0}) == "`port` must be in [1, 65535], got 0");
    CHECK(invalid({.name = "x.test", .scheme = "ftp"}) == "`scheme` must be \"http\", \"https\" or \"\", got \"ftp\"");
    CHECK(invalid({.name = "x.test", .ipv4 = false, .ipv6 = false}) == "`ipv6` must be true when `ipv4` is false, got false");
    CHECK(invalid({.name = "x.test", .nameserver = "localhost:53"}) ==
          "`nameserver` must be empty or an IPv4 address and port (\"127.0.0.1:53\"), got \"localhost:53\"");
    CHECK(invalid({.name = "x.test", .nameserver = "127.0.0.1:0"}).starts_with("`nameserver`"));
    CHECK(invalid({.name = "x.test", .nameserver = "127.0.0.256:53"}).starts_with("`nameserver`"));
    CHECK(invalid({.name = "x.test", .nameserver = "127.0.0.1:5353"}).empty());
    CHECK(invalid({.name = "x.test", .interval = 1ms}) == "`interval` must be in [10ms, 24h], got 1ms");
    CHECK(invalid({.name = "x.test", .min_ttl = 0s}) == "`min_ttl` must be in [10ms, 24h], got 0s");
    CHECK(invalid({.name = "x.test", .min_ttl = 10s, .max_ttl = 5s}) == "`max_ttl` must be in [10s, 24h], got 5s");
    CHECK(invalid({.name = "x.test", .retry_after_failure = 48h}) ==
          "`retry_after_failure` must be in [10ms, 24h], got 48h");
    CHECK(invalid({.name = "x.test", .query_timeout = 1500ms}) == "`query_timeout` must be whole seconds, got 1.5s");
    CHECK(invalid({.name = "x.test", .query_timeout = 0s}) == "`query_timeout` must be in [1s, 30s], got 0s");
    CHECK(invalid({.name = "x.test", .query_attempts = 0}) == "`query_attempts` must be in [1, 5], got 0");
    balancer lb{{{.address = "http://a:80"}}};
    CHECK_THROWS_WITH(dns_discovery({.name = "x.test", .port = 0}, lb),
                      "resil::dns_discovery: `port` must be in [1, 65535], got 0");
}

TEST_CASE("dns discovery: a pod added gets traffic after one refresh, a removed one none, a kept one its state") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test", "10.0.0.2 svc.test"}, 1};
    manual_clock clock;
    balancer lb{{{.address = "http://192.0.2.1:8080"}},  // until the first lookup
                {.policy = resil::balancing_policy::round_robin}};
    std::vector<resil::events::dns_lookup> seen;
    auto options = options_for(dns);
    std::vector<std::string> errors;
    options.on_lookup = [&](const resil::events::dns_lookup& e) {
        seen.push_back(e);
        errors.emplace_back(e.error);
    };
    dns_discovery discovery{options, lb};

    // The first lookup: the records' TTL (1 s) is below min_ttl (2 s).
    auto next = discovery.refresh(clock.now());
    CHECK(next == clock.now() + 2s);
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080", "http://10.0.0.2:8080"});
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].outcome == dns_lookup_outcome::resolved);
    CHECK(seen[0].found == 2);
    CHECK(seen[0].added == 2);
    CHECK(seen[0].removed == 0);
    CHECK(seen[0].next_in == 2s);

    // A lookup finding the same set applies nothing.
    clock.advance_to(next);
    next = discovery.refresh(clock.now());
    CHECK(lb.metrics().replacements == 1);
    CHECK(discovery.metrics().changes == 1);
    CHECK(discovery.metrics().lookups == 2);

    // A call in flight on 10.0.0.1 across the change: the kept endpoint keeps it.
    auto lease = lb.pick(clock.now());
    while (lease.address() != "http://10.0.0.1:8080") lease = lb.pick(clock.now());
    // A third pod, and 10.0.0.2 gone, in one rewrite.
    dns.set_hosts({"10.0.0.1 svc.test", "10.0.0.3 svc.test"}, "svc.test");
    clock.advance_to(next);
    next = discovery.refresh(clock.now());  // one refresh
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080", "http://10.0.0.3:8080"});
    CHECK(seen.back().added == 1);
    CHECK(seen.back().removed == 1);
    const auto status = lb.status(clock.now());
    REQUIRE(status.size() == 2);
    CHECK(status[0].outstanding == 1);  // 10.0.0.1's call in flight, counted across the replace()
    CHECK(status[1].outstanding == 0);  // 10.0.0.3 starts cold
    lease.record_and_end(clock.now(), resil::endpoint_result::success);
    // Round robin: the new pod takes its share at once, the removed one nothing.
    const auto picks = spread(lb, clock, 100);
    CHECK(picks.at("http://10.0.0.3:8080") == 50);
    CHECK(picks.at("http://10.0.0.1:8080") == 50);
    CHECK(picks.count("http://10.0.0.2:8080") == 0);
    CHECK(discovery.metrics().added == 3);
    CHECK(discovery.metrics().removed == 1);
    CHECK(discovery.metrics().endpoints == 2);

    // The resolver killed: the set stays, the failure is counted, and the
    // next lookup comes after retry_after_failure, doubled in a row.
    dns.stop();
    clock.advance_to(next);
    next = discovery.refresh(clock.now());
    CHECK(next == clock.now() + 1s);
    CHECK(seen.back().outcome == dns_lookup_outcome::failed);
    CHECK_FALSE(errors.back().empty());
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080", "http://10.0.0.3:8080"});
    clock.advance_to(next);
    next = discovery.refresh(clock.now());
    CHECK(next == clock.now() + 2s);
    CHECK(discovery.metrics().failures == 2);
    CHECK(discovery.metrics().failing_in_row == 2);
    CHECK(lb.metrics().replacements == 2);
    const auto after = spread(lb, clock, 10);
    CHECK(after.at("http://10.0.0.1:8080") == 5);
    CHECK(after.at("http://10.0.0.3:8080") == 5);
}

TEST_CASE("dns discovery: NXDOMAIN keeps the last good set; TTLs are clamped; a fixed interval wins") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test"}, 30};
    manual_clock clock;
    balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    auto options = options_for(dns);
    options.max_ttl = 10s;
    dns_discovery discovery{options, lb};
    CHECK(discovery.refresh(clock.now()) == clock.now() + 10s);  // TTL 30 s, clamped to 10 s
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080"});

    dns.set_hosts({"10.0.0.9 other.test"}, "svc.test");  // no pod ready: NXDOMAIN
    CHECK(discovery.refresh(clock.now()) == clock.now() + 1s);
    CHECK(discovery.metrics().empty == 1);
    CHECK(discovery.metrics().failures == 0);
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080"});
    CHECK(discovery.current() == std::vector<endpoint>{{.address = "http://10.0.0.1:8080"}});

    options.max_ttl = 60s;
    options.interval = 250ms;
    options.scheme = "";
    dns.set_hosts({"10.0.0.1 svc.test"}, "svc.test");
    dns_discovery fixed{options, [&](const std::vector<endpoint>& set) { lb.replace(set); }};
    CHECK(fixed.refresh(clock.now()) == clock.now() + 250ms);
    CHECK(lb.addresses() == std::vector<std::string>{"10.0.0.1:8080"});

    options.interval = {};
    options.min_ttl = 40s;  // TTL 30 s, raised to the floor
    dns_discovery floor{options, lb};
    CHECK(floor.refresh(clock.now()) == clock.now() + 40s);
}

TEST_CASE("dns discovery: AAAA records become bracketed addresses") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test", "fd00::1 svc.test"}, 1};
    manual_clock clock;
    balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    auto options = options_for(dns);
    options.ipv6 = true;
    dns_discovery both{options, lb};
    both.refresh(clock.now());
    CHECK(lb.addresses() == std::vector<std::string>{"http://10.0.0.1:8080", "http://[fd00::1]:8080"});
    options.ipv4 = false;
    dns_discovery v6{options, lb};
    v6.refresh(clock.now());
    CHECK(lb.addresses() == std::vector<std::string>{"http://[fd00::1]:8080"});
}

TEST_CASE("dns discovery: SRV records give ports, weights and priority groups") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 pod-a.svc.test", "10.0.0.2 pod-b.svc.test", "10.0.0.3 pod-c.svc.test"},
                                   5,
                                   {"-W", "_http._tcp.svc.test,pod-a.svc.test,8080,0,5",
                                    "-W", "_http._tcp.svc.test,pod-b.svc.test,8081,0,0",
                                    "-W", "_http._tcp.svc.test,pod-c.svc.test,9090,20,1"}};
    manual_clock clock;
    balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    auto options = options_for(dns);
    options.name = "_http._tcp.svc.test";
    options.records = resil::dns_records::srv;
    dns_discovery discovery{options, lb};
    CHECK(discovery.refresh(clock.now()) == clock.now() + 5s);
    const auto set = discovery.current();
    REQUIRE(set.size() == 3);
    CHECK(set[0] == endpoint{.address = "http://10.0.0.1:8080", .weight = 5, .priority = 0});
    CHECK(set[1] == endpoint{.address = "http://10.0.0.2:8081", .weight = 1, .priority = 0});  // weight 0 as 1
    CHECK(set[2] == endpoint{.address = "http://10.0.0.3:9090", .weight = 1, .priority = 1});
    CHECK(lb.addresses() == addresses_of(set));
}

TEST_CASE("dns discovery: on its own thread, a pod added is in the set within one refresh, and stop joins") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test"}, 0};
    balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    auto options = options_for(dns);
    options.min_ttl = 50ms;
    options.max_ttl = 50ms;
    dns_discovery discovery{options, lb};
    const auto wait_for = [&](const std::vector<std::string>& want) {
        // Generous: a loaded machine may take long to schedule the thread.
        const auto give_up = std::chrono::steady_clock::now() + 20s;
        while (lb.addresses() != want && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(5ms);
        return lb.addresses() == want;
    };
    {
        resil::dns_discovery_thread refresher{discovery};
        CHECK(wait_for({"http://10.0.0.1:8080"}));
        dns.set_hosts({"10.0.0.1 svc.test", "10.0.0.2 svc.test"}, "svc.test");
        const auto lookups_before = discovery.metrics().lookups;
        CHECK(wait_for({"http://10.0.0.1:8080", "http://10.0.0.2:8080"}));
        // Found by the first lookup after the change, or the one after it
        // (one under way when the file changed may have read the old one).
        CHECK(discovery.metrics().lookups - lookups_before <= 2);
    }
    const auto lookups = discovery.metrics().lookups;
    std::this_thread::sleep_for(200ms);
    CHECK(discovery.metrics().lookups == lookups);  // joined: nothing runs after its destruction
}

TEST_CASE("dns discovery: an apply function that throws keeps the last set and counts a failure") {
    resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test"}, 1};
    manual_clock clock;
    int applied = 0;
    bool refuse = false;
    dns_discovery discovery{options_for(dns), [&](const std::vector<endpoint>&) {
                                if (refuse) throw std::runtime_error("refused");
                                ++applied;
                            }};
    discovery.refresh(clock.now());
    CHECK(applied == 1);
    refuse = true;
    dns.set_hosts({"10.0.0.2 svc.test"}, "svc.test");
    CHECK(discovery.refresh(clock.now()) == clock.now() + 1s);
    CHECK(discovery.metrics().failures == 1);
    CHECK(discovery.current() == std::vector<endpoint>{{.address = "http://10.0.0.1:8080"}});
    refuse = false;
    discovery.refresh(clock.now());
    CHECK(applied == 2);
    CHECK(discovery.current() == std::vector<endpoint>{{.address = "http://10.0.0.2:8080"}});
}

TEST_CASE("dns discovery: a lookup function stands in for DNS, with the same comparison, clamping and counts") {
    manual_clock clock;
    balancer lb{{{.address = "http://192.0.2.1:8080"}}};
    resil::dns_answer answer{.outcome = dns_lookup_outcome::resolved,
                             .endpoints = {{.address = "http://b:80"}, {.address = "http://a:80"}, {.address = "http://b:80"}},
                             .ttl = 3600};
    dns_discovery source{{.name = "sim.test", .max_ttl = 30s}, lb, [&] { return answer; }};
    CHECK(source.refresh(clock.now()) == clock.now() + 30s);
    CHECK(lb.addresses() == std::vector<std::string>{"http://a:80", "http://b:80"});  // sorted, repeats dropped
    answer = {.outcome = dns_lookup_outcome::resolved};                                 // resolved, but nothing
    CHECK(source.refresh(clock.now()) == clock.now() + 1s);
    CHECK(source.metrics().empty == 1);
    answer = {.outcome = dns_lookup_outcome::failed, .error = "simulated"};
    CHECK(source.refresh(clock.now()) == clock.now() + 2s);
    CHECK(source.metrics().failures == 1);
    CHECK(lb.addresses() == std::vector<std::string>{"http://a:80", "http://b:80"});
    answer = {.outcome = dns_lookup_outcome::resolved, .endpoints = {{.address = "not an address"}}, .ttl = 5};
    const auto next = source.refresh(clock.now());
    CHECK(next == clock.now() + 4s);  // replace() refused it: a failure, the set kept
    CHECK(source.metrics().failures == 2);
    CHECK(lb.addresses() == std::vector<std::string>{"http://a:80", "http://b:80"});
}

TEST_CASE("dns replies: a malformed one is an error, never a read past its end") {
    // A header announcing one answer, and nothing after it.
    const std::vector<unsigned char> truncated{0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0};
    CHECK(resil::detail::read_dns_reply(truncated).error.starts_with("malformed reply"));
    CHECK(resil::detail::read_dns_reply(std::span<const unsigned char>{}).error.starts_with("malformed reply"));
    // An A record of 3 bytes: name (root), type A, class IN, TTL 5, length 3.
    const std::vector<unsigned char> short_a{0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0,
                                             0,    0,    1,    0,    1, 0, 0, 0, 5, 0, 3, 10, 0, 0};
    CHECK(resil::detail::read_dns_reply(short_a).error == "malformed reply: an A record is not 4 bytes");
    // The same record with 4 bytes reads.
    const std::vector<unsigned char> good_a{0x12, 0x34, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0,
                                            0,    0,    1,    0,    1, 0, 0, 0, 5, 0, 4, 10, 0, 0, 7};
    const auto reply = resil::detail::read_dns_reply(good_a);
    CHECK(reply.error.empty());
    REQUIRE(reply.addresses.size() == 1);
    CHECK(reply.addresses[0].text == "10.0.0.7");
    CHECK(reply.addresses[0].ttl == 5);
}
