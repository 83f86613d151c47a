// resil/balancer/options.hpp — what a balancer is told and what it tells:
// its pickers, outlier ejection and failover options, its counts, and one
// endpoint's status.
//
//   resil::balancer lb{endpoints, {.policy = resil::balancing_policy::peak_ewma,
//                                  .outlier = {.consecutive_failures = 5, .base_ejection_time = 30s}}};
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "../enum_name.hpp"
#include "../circuit_breaker/options.hpp"
#include "../clock.hpp"
#include "../events.hpp"
#include "../validation.hpp"
#include "endpoint.hpp"

namespace resil {

/// How a balancer chooses among the usable endpoints (resil/balancer/balancer.hpp).
/// ring_hash, maglev and rendezvous send a call's affinity key (resil/balancer/affinity.hpp)
/// to the same endpoint while the set and its health stay the same.
enum class balancing_policy : std::uint8_t {
    round_robin,
    random,
    least_outstanding,
    power_of_two_choices,
    peak_ewma,
    ring_hash,   ///< a ring of hashed points per endpoint (Envoy's and gRPC's ring_hash)
    maglev,      ///< Maglev's lookup table (Envoy's maglev)
    rendezvous,  ///< highest random weight, −w / ln(x) (Envoy's rendezvous_hash)
};

/// The policy's name, e.g. "power_of_two_choices".
[[nodiscard]] constexpr enum_name to_string(balancing_policy p) noexcept {
    switch (p) {
        case balancing_policy::round_robin: return "round_robin";
        case balancing_policy::random: return "random";
        case balancing_policy::least_outstanding: return "least_outstanding";
        case balancing_policy::power_of_two_choices: return "power_of_two_choices";
        case balancing_policy::peak_ewma: return "peak_ewma";
        case balancing_policy::ring_hash: return "ring_hash";
        case balancing_policy::maglev: return "maglev";
        case balancing_policy::rendezvous: return "rendezvous";
    }
    return "unknown";
}

/// What a call on an endpoint came to, for passive health.
enum class endpoint_result : std::uint8_t {
    success,  ///< an answer (a 4xx too: the endpoint answered); ends a run of failures
    failure,  ///< a 5xx or a connect failure: counts towards ejection
};

/// Passive health: Envoy's consecutive-5xx outlier detection and its defaults.
struct outlier_detection_options {
    /// Failures in a row that eject an endpoint; 0 turns ejection off.
    std::uint32_t consecutive_failures = 5;
    /// The first ejection's length; with multiplier n one lasts n times as long ...
    duration base_ejection_time = std::chrono::seconds{30};
    /// ... but never longer than this (the multiplier stops growing there).
    duration max_ejection_time = std::chrono::seconds{300};
    /// The multiplier falls by one for each such interval the endpoint
    /// spent un-ejected (Envoy: one per detection `interval`, 10 s).
    duration ejection_decay_interval = std::chrono::seconds{10};
    /// The largest share of the set ejected at once (at least one endpoint
    /// may be, unless the set has only one).
    double max_ejection_share = 0.1;

    /// The largest `consecutive_failures` validate() accepts.
    static constexpr std::uint32_t max_consecutive_failures = 1000;
    /// The largest base_ejection_time, max_ejection_time and
    /// ejection_decay_interval validate() accepts.
    static constexpr duration max_ejection_limit = std::chrono::hours{24};

    /// The first field out of its range, with what it must be and what it was;
    /// nothing when every field is valid.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_in_range("consecutive_failures", consecutive_failures, std::uint32_t{0},
                                              max_consecutive_failures))
            return bad;
        if (auto bad = detail::check_in_range("base_ejection_time", base_ejection_time, duration{std::chrono::milliseconds{1}},
                                              max_ejection_limit))
            return bad;
        if (auto bad = detail::check_in_range("max_ejection_time", max_ejection_time, base_ejection_time,
                                              max_ejection_limit))
            return bad;
        if (auto bad = detail::check_in_range("ejection_decay_interval", ejection_decay_interval,
                                              duration{std::chrono::milliseconds{1}}, max_ejection_limit))
            return bad;
        return detail::check_that(max_ejection_share >= 0.0 && max_ejection_share <= 1.0, "max_ejection_share",
                                  "in [0, 1]", max_ejection_share);
    }
    /// Field-by-field equality.
    friend bool operator==(const outlier_detection_options&, const outlier_detection_options&) = default;
};

/// The key-affinity pickers (ring_hash, maglev, rendezvous): their tables'
/// sizes and the load bound. Defaults are Envoy's.
struct affinity_options {
    /// ring_hash: the fewest points on a priority group's ring (Envoy's
    /// minimum_ring_size, 1024); the lightest endpoint gets a whole number of
    /// points and each other as many times more as its weight is.
    std::uint64_t min_ring_size = 1024;
    /// ring_hash: the most points on one group's ring (Envoy's
    /// maximum_ring_size, 8,388,608; 12 bytes a point).
    std::uint64_t max_ring_size = 8388608;
    /// maglev: the lookup table's size per group, a prime (Envoy's 65537; 4 bytes an entry).
    std::uint64_t maglev_table_size = 65537;
    /// Bounded load ("consistent hashing with bounded loads"): an endpoint
    /// takes a key's call only while its calls in flight + 1 ≤ ⌈factor ×
    /// (calls in flight on the balancer + 1) × its weight ÷ its group's
    /// weight⌉; a full one passes the call to the key's next candidate. 0 (the
    /// default) turns the bound off; else in (1, 100], e.g. 1.25 (Envoy's
    /// hash_balance_factor and HAProxy's hash-balance-factor are this × 100).
    double load_bound_factor = 0.0;

    static constexpr std::uint64_t max_ring_limit = 8388608;  ///< the largest max_ring_size validate() accepts
    static constexpr std::uint64_t max_maglev_table_size = 5000011;  ///< Envoy's largest (a prime)
    static constexpr double max_load_bound_factor = 100.0;  ///< the largest load_bound_factor validate() accepts

    /// The first field out of its range; nothing when every field is valid.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_in_range("min_ring_size", min_ring_size, std::uint64_t{1}, max_ring_limit))
            return bad;
        if (auto bad = detail::check_in_range("max_ring_size", max_ring_size, min_ring_size, max_ring_limit))
            return bad;
        if (auto bad = detail::check_that(maglev_table_size >= 2 && maglev_table_size <= max_maglev_table_size &&
                                              is_prime(maglev_table_size),
                                          "maglev_table_size", "a prime in [2, 5000011]", maglev_table_size))
            return bad;
        return detail::check_that(load_bound_factor == 0.0 ||
                                      (load_bound_factor > 1.0 && load_bound_factor <= max_load_bound_factor),
                                  "load_bound_factor", "0 (off) or in (1, 100]", load_bound_factor);
    }
    /// Field-by-field equality.
    friend bool operator==(const affinity_options&, const affinity_options&) = default;

private:
    [[nodiscard]] static constexpr bool is_prime(std::uint64_t n) noexcept {
        if (n < 2) return false;
        for (std::uint64_t d = 2; d * d <= n; ++d)
            if (n % d == 0) return false;
        return true;
    }
};

/// Options of a balancer: the picking policy, peak EWMA's decay, outlier
/// ejection, panic and failover thresholds, an optional breaker per endpoint,
/// and hooks for ejections and returns. The defaults are the documented ones
/// (Envoy's, Finagle's).
struct balancer_options {
    /// How an endpoint is picked. Default power_of_two_choices.
    balancing_policy policy = balancing_policy::power_of_two_choices;
    /// peak_ewma: how fast the latency average forgets (Finagle's and Linkerd's 10 s).
    duration decay_time = std::chrono::seconds{10};
    /// peak_ewma: the latency an endpoint not measured yet is taken to have
    /// while it has calls in flight (Finagle uses a huge penalty; 1 s here
    /// keeps the arithmetic finite while still sending elsewhere first).
    duration unmeasured_penalty = std::chrono::seconds{1};
    /// ring_hash, maglev, rendezvous: table sizes and the load bound.
    affinity_options affinity{};
    /// Outlier ejection: consecutive failures take an endpoint out for a while.
    /// On by default.
    outlier_detection_options outlier{};
    /// Below this share of usable endpoints, a group is balanced over all of
    /// them (Envoy's healthy_panic_threshold, 50 %); 0 turns panic mode off.
    double panic_threshold = 0.5;
    /// A priority group takes every call while at least this share of it is
    /// usable; below, the groups share the calls by health (usable share ÷
    /// this, at most 1), as Envoy's priority load with its overprovisioning
    /// factor 1.4 (about ÷ 0.71).
    double failover_threshold = 0.7;
    /// A circuit breaker per endpoint, with these options (none by default;
    /// its on_state_change hears every endpoint's, each event naming its
    /// endpoint in breaker_state_changed::endpoint). An endpoint whose breaker
    /// is open is not usable until its open_for ends: it does not count when
    /// a group is chosen, and is picked in its group only when no other is
    /// left; resil::call_endpoint asks the breaker before each call.
    std::optional<circuit_breaker_options> endpoint_breaker{};
    /// Told of ejections and returns, on the thread that caused them; must not throw.
    std::function<void(const events::endpoint_ejected&)> on_ejected{};
    /// Told when an ejected endpoint comes back, on the thread that noticed;
    /// must not throw.
    std::function<void(const events::endpoint_returned&)> on_returned{};

    ///@{
    /// The bounds of `decay_time` validate() checks.
    static constexpr duration min_decay_time = std::chrono::milliseconds{1};
    static constexpr duration max_decay_time = std::chrono::hours{1};
    ///@}

    /// The first field out of its range, with its path
    /// ("outlier.consecutive_failures") and what it must be; nothing when every
    /// field is valid.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_that(static_cast<std::uint8_t>(policy) <= 7, "policy",
                                          "one of round_robin, random, least_outstanding, power_of_two_choices, "
                                          "peak_ewma, ring_hash, maglev, rendezvous",
                                          static_cast<std::uint32_t>(policy)))
            return bad;
        if (auto bad = detail::check_in_range("decay_time", decay_time, min_decay_time, max_decay_time)) return bad;
        if (auto bad = detail::check_in_range("unmeasured_penalty", unmeasured_penalty, duration::zero(),
                                              duration{std::chrono::minutes{10}}))
            return bad;
        if (auto bad = affinity.validate()) return bad->within("affinity");
        if (auto bad = outlier.validate()) return bad->within("outlier");
        if (auto bad = detail::check_that(panic_threshold >= 0.0 && panic_threshold <= 1.0, "panic_threshold",
                                          "in [0, 1]", panic_threshold))
            return bad;
        if (auto bad = detail::check_that(failover_threshold >= 0.0 && failover_threshold <= 1.0,
                                          "failover_threshold", "in [0, 1]", failover_threshold))
            return bad;
        if (endpoint_breaker)
            if (auto bad = endpoint_breaker->validate()) return bad->within("endpoint_breaker");
        return std::nullopt;
    }
};

/// Counts since construction.
struct balancer_metrics {
    /// Endpoints ejected.
    std::uint64_t ejections = 0;
    /// Ejected endpoints that came back.
    std::uint64_t returns = 0;
    std::uint64_t panic_picks = 0;     ///< picks made over a whole group in panic mode
    std::uint64_t failover_picks = 0;  ///< picks from a group other than the first
    std::uint64_t no_endpoint = 0;     ///< picks that found no endpoint
    /// Picks of a call held to an idempotency scope that found no endpoint of it
    /// (tried_endpoints; counted in no_endpoint too).
    std::uint64_t no_endpoint_in_scope = 0;
    /// Times the endpoints were replaced (replace()).
    std::uint64_t replacements = 0;
};

/// One endpoint as the balancer sees it now.
struct endpoint_status {
    /// The endpoint, as configured.
    resil::endpoint endpoint;
    /// Calls on it now.
    std::uint32_t outstanding = 0;
    /// peak_ewma: the latency average as a pick at `now` reads it (decayed
    /// towards 0 since its last sample); 0 until measured.
    duration latency_ewma{};
    /// True while it is ejected.
    bool ejected = false;
    /// The ejection multiplier: 1 after the first ejection (it decays).
    std::uint32_t times_ejected = 0;
    bool failing_checks = false;  ///< active health checks took it out
    /// Its circuit breaker's state (balancer_options::endpoint_breaker); none without one.
    std::optional<circuit_state> breaker{};
    std::uint64_t picks = 0;  ///< picks since it joined the set
};

/// How often a balancer picked one endpoint (balancer::picks()).
struct endpoint_picks {
    /// The endpoint's address (endpoint::address).
    std::string address;
    std::uint64_t picks = 0;  ///< since the endpoint joined the set
};

}  // namespace resil
