// examples/support/checkout_fakes.cpp — the example checkout service's
// fake dependencies (checkout_fakes.hpp), on the test suite's servers.
#include "checkout_fakes.hpp"

#include "../../tests/support/fault_server.hpp"
#include "../../tests/support/payment_provider.hpp"
#include "../../tests/support/redis_server.hpp"

namespace checkout {

struct fakes::servers {
    std::array<std::unique_ptr<resil_test::fault_server>, 3> inventory;
    resil_test::payment_provider primary{"provider-a"};
    resil_test::payment_provider backup{"provider-b"};
    resil_test::fault_server pricing;
    std::optional<resil_test::redis_server> redis;
};

fakes::fakes() : servers_(std::make_unique<servers>()) {
    for (auto& replica : servers_->inventory) {
        replica = std::make_unique<resil_test::fault_server>();
        replica->on("/items", {resil_test::action::respond(200, R"({"in_stock":true})")});
    }
    servers_->pricing.on("/prices", {resil_test::action::respond(
                                        200, R"({"price":1999})",
                                        {{"RateLimit-Policy", R"("default";q=1000;w=1)"},
                                         {"RateLimit", R"("default";r=900;t=1)"}})});
    if (resil_test::redis_server::binary()) servers_->redis.emplace();
}

fakes::~fakes() = default;

std::vector<std::string> fakes::inventory() const {
    std::vector<std::string> out;
    for (const auto& r : servers_->inventory) out.push_back(r->url(""));
    return out;
}
std::string fakes::payments_primary() const { return servers_->primary.url(""); }
std::string fakes::payments_backup() const { return servers_->backup.url(""); }
std::string fakes::pricing() const { return servers_->pricing.url(""); }
std::optional<std::uint16_t> fakes::redis_port() const {
    if (!servers_->redis) return std::nullopt;
    return servers_->redis->port();
}

void fakes::kill_inventory_replica(std::size_t i) { servers_->inventory.at(i)->stop(); }
void fakes::kill_primary_provider_mid_charge() {
    servers_->primary.die_on_next_request(resil_test::payment_provider::death::after_charging);
}

std::array<std::size_t, 3> fakes::inventory_requests() const {
    std::array<std::size_t, 3> out{};
    for (std::size_t i = 0; i < servers_->inventory.size(); ++i) {
        out[i] = servers_->inventory[i]->requests("/items").size();
    }
    return out;
}
int fakes::charges(const std::string& key) const {
    return servers_->primary.charges(key) + servers_->backup.charges(key);
}
int fakes::charges_by_primary() const { return servers_->primary.total_charges(); }
int fakes::charges_by_backup() const { return servers_->backup.total_charges(); }
int fakes::double_charges() const {
    int n = 0;
    const auto at_backup = servers_->backup.charged_keys();
    for (const auto& key : servers_->primary.charged_keys()) n += static_cast<int>(at_backup.count(key));
    return n;
}

}  // namespace checkout
