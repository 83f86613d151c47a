// A checkout service with three dependencies, each declared once in one JSON
// file (examples/service.json): an inventory service on three replicas, a
// payment provider and its backup (two companies: their idempotency keys are
// not shared), and a pricing API that sends RateLimit fields and whose quota
// the service's replicas share through Redis. Inventory and pricing are
// asked side by side on Asio; the payment is a blocking keyed POST. Metrics
// are served on a port for Prometheus while it runs.
//
//   $ ./example_service_checkout [service.json] [--write-metrics FILE]
//
// It starts its own fake dependencies on 127.0.0.1 (examples/support/
// checkout_fakes.hpp; Redis needs redis-server), then runs 90 checkouts in
// three rounds: all well; one inventory replica killed (its calls retried on
// the others, the replica ejected); the primary payment provider dying
// while it charges (that one payment's outcome is unknown and is NOT sent to
// the backup, which does not know its key; the later ones go to the backup).
// docs/service.md walks through it.
#include <resil/http/async_dependency.hpp>
#include <resil/http/async_redis_quota.hpp>
#include <resil/http/dependency.hpp>
#include <resil/http/redis_quota.hpp>
#include <resil/json/service_config.hpp>
#include <resil/prometheus.hpp>

#include <asio/experimental/awaitable_operators.hpp>
#include <asio/use_future.hpp>
#include <prometheus/exposer.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>

#include "support/checkout_fakes.hpp"

#ifndef RESIL_EXAMPLE_SERVICE_FILE
#define RESIL_EXAMPLE_SERVICE_FILE "service.json"
#endif

using namespace asio::experimental::awaitable_operators;

namespace {

struct tally {
    int ok = 0;
    std::map<std::string, int> failed;  // "<dependency>: <reason>" -> calls
};

void print_round(std::string_view title, const tally& t) {
    std::printf("%s: %d of 30 checkouts paid\n", title.data(), t.ok);
    for (const auto& [what, n] : t.failed) std::printf("  %d x %s\n", n, what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    std::string file = RESIL_EXAMPLE_SERVICE_FILE, metrics_file;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--write-metrics" && i + 1 < argc) metrics_file = argv[++i];
        else file = argv[i];
    }
    checkout::fakes fakes;

    // --- resil: the three dependencies, from the file ----------------------
    const auto service = resil::json::load_service_config(file);
    auto options = [&](std::string_view name) { return resil::json::dependency_options_of(service, name); };
    auto inventory_options = options("inventory"), payments_options = options("payments");
    auto pricing_options = options("pricing");
    // The file names fixed ports; the fakes listen on ephemeral ones.
    for (std::size_t i = 0; i < 3; ++i) inventory_options.endpoints[i].address = fakes.inventory()[i];
    payments_options.endpoints[0].address = fakes.payments_primary();
    payments_options.endpoints[1].address = fakes.payments_backup();
    pricing_options.endpoints[0].address = fakes.pricing();
    pricing_options.shared_quota->port = fakes.redis_port().value();
    resil::http::dependency inventory{inventory_options}, payments{payments_options}, pricing{pricing_options};

    // Metrics on a port (prometheus-cpp's exposer), the three dependencies'.
    prometheus::Exposer exposer{"127.0.0.1:0"};
    exposer.RegisterCollectable(
        resil::prometheus::make_collectable({inventory.metrics(), payments.metrics(), pricing.metrics()}));
    std::printf("metrics served on 127.0.0.1 (port %s)\n", exposer.GetListeningPorts().empty() ? "none" : "ephemeral");

    // Inventory and pricing on Asio, one thread; the payment blocking.
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread io_thread([&] { io.run(); });
    auto inventory_on_io = inventory.on(io);
    auto pricing_on_io = pricing.on(io);

    auto checkout = [&](int order, tally& t) {
        const auto item = "/items?id=" + std::to_string(order);
        auto [stock, price] = asio::co_spawn(io, [&]() -> asio::awaitable<std::tuple<resil::http::response, resil::http::response>> {
            co_return co_await (inventory_on_io.async_get(item, asio::use_awaitable) &&
                                pricing_on_io.async_get("/prices?id=" + std::to_string(order), asio::use_awaitable));
        }, asio::use_future).get();
        if (!stock) return ++t.failed["inventory: " + std::string(to_string(stock.reason()))], void();
        if (!price) return ++t.failed["pricing: " + std::string(to_string(price.reason()))], void();
        auto paid = payments.post("/charge", "order=" + std::to_string(order) + "&amount=1999");
        if (!paid) return ++t.failed["payments: unknown outcome (" + std::string(paid.endpoint() == fakes.payments_primary() ? "provider-a" : "provider-b") + " may have charged it)"], void();
        ++t.ok;
    };

    tally first, second, third;
    for (int order = 1; order <= 30; ++order) checkout(order, first);
    print_round("round 1, all well", first);

    fakes.kill_inventory_replica(1);
    for (int order = 31; order <= 60; ++order) checkout(order, second);
    print_round("round 2, inventory replica 2 killed", second);

    fakes.kill_primary_provider_mid_charge();
    for (int order = 61; order <= 90; ++order) checkout(order, third);
    print_round("round 3, provider-a died while charging", third);

    // What the metrics say, by endpoint (named here for a stable output).
    std::map<std::string, std::string> names{{fakes.payments_primary(), "provider-a"},
                                             {fakes.payments_backup(), "provider-b"}};
    for (std::size_t i = 0; i < 3; ++i) names[fakes.inventory()[i]] = "inventory-" + std::to_string(i + 1);
    std::map<std::string, std::string> lines;  // by name, for a stable order
    for (const auto& e : inventory.metrics().endpoints())
        lines[names[e.address]] = std::string("ejected ") + (e.ejected ? "yes" : "no");
    for (const auto& e : payments.metrics().endpoints())  // a breaker each, closed until it says otherwise
        lines[names[e.address]] = std::string("ejected ") + (e.ejected ? "yes" : "no") + ", breaker " +
                                  to_string(e.breaker.value_or(resil::circuit_state::closed));
    for (const auto& [name, line] : lines) std::printf("%-12s %s\n", name.c_str(), line.c_str());
    std::printf("charges: provider-a %d, provider-b %d; orders charged twice: %d\n", fakes.charges_by_primary(),
                fakes.charges_by_backup(), fakes.double_charges());
    const auto q = pricing.metrics().quota().value();  // by Redis, or by its fallback when it was slow
    std::printf("pricing quota: %llu decisions\n",
                static_cast<unsigned long long>(q.redis + q.lease + q.local_fallback + q.refused));

    if (!metrics_file.empty())
        std::ofstream(metrics_file) << resil::prometheus_text({inventory.metrics(), payments.metrics(), pricing.metrics()});
    io.stop();  // the Redis quota's connection keeps a read pending: run() would not return
    io_thread.join();
}
