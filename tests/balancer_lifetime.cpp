// Snapshot lifetime: a lease keeps the set it was picked from readable, and
// only that one: sets replaced after it are freed (run under AddressSanitizer
// in CI, which reports a read of a freed set).
#include <resil/balancer.hpp>
#include <resil/testing/manual_clock.hpp>

#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

using resil::balancer;
using resil::endpoint;
using resil::testing::manual_clock;

namespace {
std::vector<endpoint> set_of(int first, int count) {
    std::vector<endpoint> out;
    for (int i = first; i < first + count; ++i)
        out.push_back({.address = "http://10.0.0." + std::to_string(i % 250) + ":" + std::to_string(1000 + i),
                       .weight = 1 + i % 7});
    return out;
}
}  // namespace

TEST_CASE("a lease held across replacements keeps its own set readable and no other") {
    manual_clock clock;
    const auto a = set_of(0, 50), b = set_of(100, 50);
    balancer lb{a};
    auto lease = lb.pick(clock.now());
    REQUIRE(lease);
    const std::string address = lease.address();
    lb.replace(b);
    lb.replace(a);
    lb.replace(b);
    lb.reclaim();
    CHECK(lease.address() == address);  // its set is still there (ASan: no use after free)
    CHECK(lease.target().weight >= 1);
    CHECK(lb.retained_snapshots() == 1);  // the lease's own set only
    // Many more replacements while the lease is held: memory stays flat.
    for (int i = 0; i < 2000; ++i) lb.replace(i % 2 == 0 ? a : b);
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 1);
    CHECK(lease.address() == address);
    lease.record_and_end(clock.now(), resil::endpoint_result::success);
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 0);
}

TEST_CASE("leases on several old sets, released on another thread, free each set once its last lease ends") {
    manual_clock clock;
    const auto a = set_of(0, 5), b = set_of(10, 5);
    balancer lb{a};
    std::vector<resil::endpoint_lease> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(lb.pick(clock.now()));
        held.push_back(lb.pick(clock.now()));
        lb.replace(i % 2 == 0 ? b : a);
    }
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 3);  // two leases on each of three old sets
    for (const auto& l : held) CHECK_FALSE(l.address().empty());
    // The first lease of each set ends on another thread (another stripe): the sets stay.
    std::thread other([&] {
        for (std::size_t i = 0; i < held.size(); i += 2) held[i].end_unrecorded();
    });
    other.join();
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 3);
    held[1].end_unrecorded();
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 2);
    held.clear();
    lb.reclaim();
    CHECK(lb.retained_snapshots() == 0);
}
