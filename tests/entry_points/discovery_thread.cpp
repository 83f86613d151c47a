// resil/discovery/dns_discovery.hpp alone: the thread driving a DNS
// discovery source, on the steady clock and on the manual clock.
#include <resil/discovery/dns_discovery.hpp>
#include <resil/testing/manual_clock.hpp>

namespace resil_entry_points {

void discovery_thread(resil::dns_discovery& source, resil::testing::manual_clock clock) {
    resil::dns_discovery_thread steady(source);
    resil::basic_dns_discovery_thread<resil::testing::manual_clock> manual(source, clock);
    manual.stop();
}

}  // namespace resil_entry_points
