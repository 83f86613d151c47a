// A checkout service's three dependencies, as resil::metrics sees them after
// a short incident: inventory (3 replicas behind a balancer, one ejected;
// retry; one breaker), payments (a primary and a backup, a breaker each, the
// primary's open; retry; hedging; an adaptive limit) and pricing (a paced bucket and a Redis
// quota on its local fallback; retry). The tests of the exports and of the
// operator files (ops/) read their text from here, so the series the rules
// are tested with are the ones resil writes.
#pragma once

#include <resil/balancer.hpp>
#include <resil/events.hpp>
#include <resil/metrics.hpp>
#include <resil/redis/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace resil_test {

/// Stands for a resil::redis::rate_limiter (what metrics::watch_quota reads).
struct fake_quota_limiter {
    resil::redis::rate_limiter_metrics figures{};
    bool down = false;
    [[nodiscard]] resil::redis::rate_limiter_metrics metrics() const noexcept { return figures; }
    [[nodiscard]] bool redis_down() const noexcept { return down; }
};

struct checkout_metrics {
    using part = resil::metrics::part;

    resil::metrics inventory{"inventory"};
    resil::metrics payments{"payments"};
    resil::metrics pricing{"pricing"};
    std::unique_ptr<resil::balancer> replicas;
    std::unique_ptr<resil::balancer> providers;
    fake_quota_limiter quota;

    checkout_metrics() {
        using namespace std::chrono_literals;
        namespace events = resil::events;
        const resil::time_point t0{};

        // inventory: a breaker for the whole dependency, 3 replicas.
        inventory.declare(part::retry);
        (void)inventory.breaker_hook();
        resil::balancer_options lb;
        lb.policy = resil::balancing_policy::round_robin;
        lb.outlier.consecutive_failures = 2;
        lb.outlier.max_ejection_share = 0.5;
        lb.on_ejected = std::ref(inventory);
        lb.on_returned = std::ref(inventory);
        replicas = std::make_unique<resil::balancer>(
            std::vector<resil::endpoint>{{.address = "http://inventory-0:8080"},
                                         {.address = "http://inventory-1:8080"},
                                         {.address = "http://inventory-2:8080"}},
            lb);
        inventory.watch_balancer(*replicas);
        for (int i = 0; i < 9; ++i) {
            auto lease = replicas->pick(t0 + i * 10ms);
            const bool bad = lease.address() == "http://inventory-2:8080";
            lease.record_and_end(t0 + i * 10ms + 5ms, bad ? resil::endpoint_result::failure : resil::endpoint_result::success);
        }
        call(inventory, 1, resil::verdict::success, 12ms, resil::reason::none);
        call(inventory, 2, resil::verdict::retryable, 30ms, resil::reason::retries_exhausted);

        // payments: a breaker per provider; the backup's opens.
        payments.declare(part::retry | part::hedging);
        resil::balancer_options providers_lb;
        providers_lb.policy = resil::balancing_policy::round_robin;
        resil::circuit_breaker_options per_provider;
        per_provider.on_state_change = payments.endpoint_breaker_hook();
        providers_lb.endpoint_breaker = per_provider;
        providers = std::make_unique<resil::balancer>(
            std::vector<resil::endpoint>{{.address = "https://payments-primary.example"},
                                         {.address = "https://payments-backup.example", .priority = 1}},
            providers_lb);
        payments.watch_balancer(*providers);
        for (int i = 0; i < 4; ++i) {
            auto lease = providers->pick(t0);
            if (lease.address() == "https://payments-primary.example" && i == 3) lease.breaker()->isolate();
            lease.record_and_end(t0, resil::endpoint_result::success);
        }
        payments(events::limit_changed{20, 18, resil::load_signal::overload, 1});  // an adaptive limit
        payments(events::hedge_started{1, 80ms});
        payments(events::hedge_won{1, 80ms});
        payments(events::hedge_cancelled{0});
        payments(events::hedge_refused{1});
        call(payments, 1, resil::verdict::success, 90ms, resil::reason::none);
        payments(events::rejected{resil::reason::circuit_open, 30s});
        payments(events::fallback_used{resil::reason::circuit_open});
        payments(events::call_finished{resil::reason::circuit_open, 0, true, false, 1ms});

        // pricing: paced by the server's RateLimit fields, a quota in Redis, now down.
        pricing.declare(part::retry | part::pacing);
        quota.figures.round_trips = 120;
        quota.figures.lease_grants = 40;
        quota.figures.fail_open_admitted = 9;
        quota.figures.fail_open_rejected = 1;
        quota.down = true;
        pricing.watch_quota(quota);
        pricing(events::pace_changed{2.0, 5, resil::duration::zero(), 1});
        pricing(events::quota_store_failed{true, true});
        call(pricing, 1, resil::verdict::success, 40ms, resil::reason::none);
    }
    checkout_metrics(const checkout_metrics&) = delete;
    checkout_metrics& operator=(const checkout_metrics&) = delete;

    [[nodiscard]] std::string text() const { return resil::prometheus_text({inventory, payments, pricing}); }

private:
    // A call of `attempts` attempts, each `verdict` in `each`, ending in `why`.
    static void call(resil::metrics& m, std::uint32_t attempts, resil::verdict v, resil::duration each,
                     resil::reason why) {
        namespace events = resil::events;
        for (std::uint32_t a = 1; a <= attempts; ++a) {
            m(events::attempt_started{a});
            m(events::attempt_finished{a, v, each});
            if (a < attempts) m(events::retry_scheduled{a, retry_wait, v, false});
        }
        if (why == resil::reason::retries_exhausted) m(events::retries_exhausted{attempts});
        m(events::call_finished{why, attempts, false, false, each * attempts});
    }
    static constexpr resil::duration retry_wait = std::chrono::milliseconds{100};
};

}  // namespace resil_test
