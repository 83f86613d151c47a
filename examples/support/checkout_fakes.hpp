// examples/support/checkout_fakes.hpp — the dependencies of the example
// checkout service (examples/service_checkout.cpp), started on 127.0.0.1 by
// the example itself: an inventory service on three replicas, a payment
// provider and its backup (each with its own store of idempotency keys, as
// two companies have), a pricing API that sends RateLimit fields, and a
// Redis for the quota the service's replicas share (when redis-server is
// installed). Not resil-facing code: it stands for the network, and is
// compiled in its own file (checkout_fakes.cpp), so that the service's file
// holds the service alone (and scripts/compile_time.sh times that).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace checkout {

class fakes {
public:
    fakes();
    ~fakes();
    fakes(const fakes&) = delete;
    fakes& operator=(const fakes&) = delete;

    /// The inventory replicas' addresses, in the order of the service file.
    [[nodiscard]] std::vector<std::string> inventory() const;
    [[nodiscard]] std::string payments_primary() const;
    [[nodiscard]] std::string payments_backup() const;
    [[nodiscard]] std::string pricing() const;
    /// The Redis port, or nothing when redis-server is not installed.
    [[nodiscard]] std::optional<std::uint16_t> redis_port() const;

    /// A replica's process dies: its connections are refused from now on.
    void kill_inventory_replica(std::size_t i);
    /// The payment provider dies while charging the next request: the charge
    /// is made, the answer never sent (the ambiguous failure keys exist for).
    void kill_primary_provider_mid_charge();

    /// Requests each inventory replica read.
    [[nodiscard]] std::array<std::size_t, 3> inventory_requests() const;
    [[nodiscard]] int charges(const std::string& key) const;
    [[nodiscard]] int charges_by_primary() const;
    [[nodiscard]] int charges_by_backup() const;
    /// Operations (idempotency keys) charged by both providers: the failure
    /// idempotency scopes exist to prevent.
    [[nodiscard]] int double_charges() const;

private:
    struct servers;
    std::unique_ptr<servers> servers_;
};

}  // namespace checkout
