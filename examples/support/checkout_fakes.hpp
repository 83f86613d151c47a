// examples/support/checkout_fakes.hpp — the dependencies of the example
// checkout service (examples/service_checkout.cpp), started on 127.0.0.1 by
// the example itself: an inventory service on three replicas, a payment
// provider and its backup (each with its own store of idempotency keys, as
// two companies have), a pricing API that sends RateLimit fields, and a
// Redis for the quota the service's replicas share (when redis-server is
// installed). Not resil-facing code: it stands for the network.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../tests/support/fault_server.hpp"
#include "../../tests/support/payment_provider.hpp"
#include "../../tests/support/redis_server.hpp"

namespace checkout {

class fakes {
public:
    fakes() : primary_("provider-a"), backup_("provider-b") {
        for (auto& replica : inventory_) {
            replica = std::make_unique<resil_test::fault_server>();
            replica->on("/items", {resil_test::action::respond(200, R"({"in_stock":true})")});
        }
        pricing_.on("/prices", {resil_test::action::respond(
                                   200, R"({"price":1999})",
                                   {{"RateLimit-Policy", R"("default";q=1000;w=1)"},
                                    {"RateLimit", R"("default";r=900;t=1)"}})});
        if (resil_test::redis_server::binary()) redis_.emplace();
    }

    /// The inventory replicas' addresses, in the order of the service file.
    [[nodiscard]] std::vector<std::string> inventory() const {
        std::vector<std::string> out;
        for (const auto& r : inventory_) out.push_back(r->url(""));
        return out;
    }
    [[nodiscard]] std::string payments_primary() const { return primary_.url(""); }
    [[nodiscard]] std::string payments_backup() const { return backup_.url(""); }
    [[nodiscard]] std::string pricing() const { return pricing_.url(""); }
    /// The Redis port, or nothing when redis-server is not installed.
    [[nodiscard]] std::optional<std::uint16_t> redis_port() const {
        if (!redis_) return std::nullopt;
        return redis_->port();
    }

    /// A replica's process dies: its connections are refused from now on.
    void kill_inventory_replica(std::size_t i) { inventory_.at(i)->stop(); }
    /// The payment provider dies while charging the next request: the charge
    /// is made, the answer never sent (the ambiguous failure keys exist for).
    void kill_primary_provider_mid_charge() {
        primary_.die_on_next_request(resil_test::payment_provider::death::after_charging);
    }

    /// Requests each inventory replica read.
    [[nodiscard]] std::array<std::size_t, 3> inventory_requests() const {
        std::array<std::size_t, 3> out{};
        for (std::size_t i = 0; i < inventory_.size(); ++i) out[i] = inventory_[i]->requests("/items").size();
        return out;
    }
    [[nodiscard]] int charges(const std::string& key) const { return primary_.charges(key) + backup_.charges(key); }
    [[nodiscard]] int charges_by_primary() const { return primary_.total_charges(); }
    [[nodiscard]] int charges_by_backup() const { return backup_.total_charges(); }
    /// Operations (idempotency keys) charged by both providers: the failure
    /// idempotency scopes exist to prevent.
    [[nodiscard]] int double_charges() const {
        int n = 0;
        const auto at_backup = backup_.charged_keys();
        for (const auto& key : primary_.charged_keys()) n += static_cast<int>(at_backup.count(key));
        return n;
    }

private:
    std::array<std::unique_ptr<resil_test::fault_server>, 3> inventory_;
    resil_test::payment_provider primary_;
    resil_test::payment_provider backup_;
    resil_test::fault_server pricing_;
    std::optional<resil_test::redis_server> redis_;
};

}  // namespace checkout
