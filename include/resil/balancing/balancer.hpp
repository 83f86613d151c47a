// resil/balancing/balancer.hpp — client-side balancing over a set of
// replicas: which endpoint the next call goes to, with passive health
// (outlier ejection), panic mode and failover between priority groups.
//
//   resil::balancer lb{{{.address = "http://10.0.0.1:8080"}, {.address = "http://10.0.0.2:8080"}},
//                      {.policy = resil::balancing_policy::peak_ewma}};
//   if (auto lease = lb.pick(clock.now())) {
//       auto r = client.get(lease.address() + "/v1/items");
//       lease.finish(clock.now(), r.status() >= 500 ? resil::endpoint_result::failure
//                                                   : resil::endpoint_result::success);
//   }                                               // a lease dropped unfinished records nothing
//   lb.replace(new_list);                           // after a DNS or discovery change
//
// Policies (balancing_policy):
//   round_robin         each endpoint in turn; weights by a smooth (EDF) schedule
//   random              uniform, or weighted by the weights
//   least_outstanding   the fewest calls in flight per unit of weight (a scan)
//   power_of_two_choices  two random endpoints (weighted draws), the one with
//                       fewer calls in flight per unit of weight
//   peak_ewma           two random endpoints, the lower cost = latency EWMA ×
//                       (calls in flight + 1) / weight (Finagle, Linkerd): the
//                       EWMA jumps to a slower sample at once (peak) and decays
//                       towards faster ones over `decay_time`; an endpoint not
//                       measured yet costs 0 while idle (so it gets measured)
//                       and `unmeasured_penalty` while busy.
//
// Passive health (Envoy's outlier detection defaults): `consecutive_failures`
// (5) failures in a row — 5xx answers and connect failures, reported as
// endpoint_result::failure — eject an endpoint for base_ejection_time (30 s) ×
// its ejection multiplier, at most max_ejection_time (300 s). The multiplier
// grows by one per ejection while base × it < max + base (Envoy's rule), and
// falls by one for each ejection_decay_interval (10 s) the endpoint spent
// un-ejected since its last ejection ended, so an incident a day later starts
// at 30 s again. At most max_ejection_share (10 %) of the set is ejected at
// once, and at least one endpoint may always be ejected unless the set has one
// endpoint: one is always kept; an ejection the cap refuses starts the run of
// failures again, as Envoy's does. An ejected endpoint comes back exactly when
// its time is up. When fewer than panic_threshold (50 %) of a group are
// usable, the group is balanced over all its endpoints (better than
// overloading the few left); an endpoint whose breaker is open is not usable.
//
// Priority groups and idempotency scopes: calls go to the first group with
// failover_threshold of its endpoints usable; a pick given a call's
// tried_endpoints moves to the next group with an untried endpoint when its
// group has none, and offers a call held to an idempotency scope (an attempt
// that may have reached a server, of a call that may not be repeated) only
// that scope's usable endpoints (resil/balancing/call.hpp).
//
// Thread-safe, and picks take no lock: the set is an immutable snapshot
// behind one atomic pointer, replaced by replace() (writers serialize on a
// mutex among themselves only). Each endpoint's counters (calls in flight,
// latency, failures, ejection) live in an object the snapshots share, so an
// endpoint kept by a replacement keeps its state, and a call finishing on an
// old snapshot releases the count the new one sees. A pick reads the
// snapshot inside a per-thread-stripe reader count (two epochs, as in
// userspace RCU) held for the pick only; the lease it returns pins its own
// snapshot by a count in that snapshot (per stripe), so a long-lived lease
// keeps one snapshot alive, never the ones replaced after it. A replaced
// snapshot is freed by a later replace() or reclaim() once two epochs have
// passed and no lease holds it. A pick writes its thread's stripes and the
// chosen endpoint's in-flight count; round-robin's cursor is per stripe.
// Nothing is allocated per pick.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../circuit_breaker.hpp"
#include "../clock.hpp"
#include "../detail/saturate.hpp"
#include "../detail/stripes.hpp"
#include "../detail/thread_jitter.hpp"
#include "../events.hpp"
#include "../jitter.hpp"
#include "../reason.hpp"
#include "../validation.hpp"
#include "endpoint.hpp"

namespace resil {

/// How a balancer chooses among the usable endpoints (banner above).
enum class balancing_policy : std::uint8_t { round_robin, random, least_outstanding, power_of_two_choices, peak_ewma };

[[nodiscard]] constexpr std::string_view to_string(balancing_policy p) noexcept {
    switch (p) {
        case balancing_policy::round_robin: return "round_robin";
        case balancing_policy::random: return "random";
        case balancing_policy::least_outstanding: return "least_outstanding";
        case balancing_policy::power_of_two_choices: return "power_of_two_choices";
        case balancing_policy::peak_ewma: return "peak_ewma";
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

    static constexpr std::uint32_t max_consecutive_failures = 1000;
    static constexpr duration max_ejection_limit = std::chrono::hours{24};

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
    friend bool operator==(const outlier_detection_options&, const outlier_detection_options&) = default;
};

struct balancer_options {
    balancing_policy policy = balancing_policy::power_of_two_choices;
    /// peak_ewma: how fast the latency average forgets (Finagle's and Linkerd's 10 s).
    duration decay_time = std::chrono::seconds{10};
    /// peak_ewma: the latency an endpoint not measured yet is taken to have
    /// while it has calls in flight (Finagle uses a huge penalty; 1 s here
    /// keeps the arithmetic finite while still sending elsewhere first).
    duration unmeasured_penalty = std::chrono::seconds{1};
    outlier_detection_options outlier{};
    /// Below this share of usable endpoints, a group is balanced over all of
    /// them (Envoy's healthy_panic_threshold, 50 %); 0 turns panic mode off.
    double panic_threshold = 0.5;
    /// A priority group takes the calls while at least this share of it is
    /// usable; below, the next group does (Envoy's overprovisioning factor
    /// 1.4 makes this about 0.71). When no group reaches it, the group with
    /// the largest usable share does.
    double failover_threshold = 0.7;
    /// A circuit breaker per endpoint, with these options (none by default;
    /// its on_state_change hears every endpoint's). An endpoint whose breaker
    /// is open is not usable until its open_for ends: it does not count when
    /// a group is chosen, and is picked in its group only when no other is
    /// left; resil::call_endpoint asks the breaker before each call.
    std::optional<circuit_breaker_options> endpoint_breaker{};
    /// Told of ejections and returns, on the thread that caused them; must not throw.
    std::function<void(const events::endpoint_ejected&)> on_ejected{};
    std::function<void(const events::endpoint_returned&)> on_returned{};

    static constexpr duration min_decay_time = std::chrono::milliseconds{1};
    static constexpr duration max_decay_time = std::chrono::hours{1};

    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::check_that(static_cast<std::uint8_t>(policy) <= 4, "policy",
                                          "one of round_robin, random, least_outstanding, power_of_two_choices, peak_ewma",
                                          static_cast<std::uint32_t>(policy)))
            return bad;
        if (auto bad = detail::check_in_range("decay_time", decay_time, min_decay_time, max_decay_time)) return bad;
        if (auto bad = detail::check_in_range("unmeasured_penalty", unmeasured_penalty, duration::zero(),
                                              duration{std::chrono::minutes{10}}))
            return bad;
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
    std::uint64_t ejections = 0;
    std::uint64_t returns = 0;
    std::uint64_t panic_picks = 0;     ///< picks made over a whole group in panic mode
    std::uint64_t failover_picks = 0;  ///< picks from a group other than the first
    std::uint64_t no_endpoint = 0;     ///< picks that found no endpoint
    /// Picks of a call held to an idempotency scope that found no endpoint of it
    /// (tried_endpoints; counted in no_endpoint too).
    std::uint64_t no_endpoint_in_scope = 0;
    std::uint64_t replacements = 0;
};

/// One endpoint as the balancer sees it now.
struct endpoint_status {
    resil::endpoint endpoint;
    std::uint32_t outstanding = 0;
    /// peak_ewma: the latency average as a pick at `now` reads it (decayed
    /// towards 0 since its last sample); 0 until measured.
    duration latency_ewma{};
    bool ejected = false;
    std::uint32_t times_ejected = 0;
    bool failing_checks = false;  ///< active health checks took it out
    /// Its circuit breaker's state (balancer_options::endpoint_breaker); none without one.
    std::optional<circuit_state> breaker{};
};

/// What one call knows of where its attempts went: the endpoints it tried,
/// so a retry prefers another (Envoy's previous-hosts rule), and the
/// idempotency scope it is held to. One per call; copies of the call running
/// at once (hedged copies) share it. Fixed size, no allocation.
///
/// Tried endpoints: past `capacity` the oldest are forgotten. Its cells are
/// atomic; a copy that picks after another has added its endpoint avoids it
/// (two copies picking at the same instant may not see each other: it is a
/// preference, not a lock).
///
/// The scope: an attempt that may have reached an endpoint (anything but
/// "known never sent") of a call that may not be repeated anywhere (not
/// idempotent) holds the call to that endpoint's idempotency scope: only
/// that scope's store knows the call's key. While such an attempt is in
/// flight, and for good once one may have been processed, balancer::pick
/// offers only endpoints of that scope. Unlike the tried set this is a
/// lock: enter_scope() refuses a copy whose pick raced into another scope.
/// resil::call_endpoint (and resil::asio::call_endpoint) keep both.
class tried_endpoints {
public:
    static constexpr std::size_t capacity = 8;
    tried_endpoints() = default;
    tried_endpoints(const tried_endpoints&) = delete;
    tried_endpoints& operator=(const tried_endpoints&) = delete;

    void add(const void* id) noexcept {
        const auto at = next_.fetch_add(1, std::memory_order_acq_rel);
        ids_[at % capacity].store(id, std::memory_order_release);
    }
    [[nodiscard]] bool contains(const void* id) const noexcept {
        const std::size_t n = size();
        for (std::size_t i = 0; i < n; ++i)
            if (ids_[i].load(std::memory_order_acquire) == id) return true;
        return false;
    }
    [[nodiscard]] std::size_t size() const noexcept {
        return std::min<std::size_t>(next_.load(std::memory_order_acquire), capacity);
    }
    /// Forgets the endpoints and the scope. Not while another thread uses it.
    void clear() noexcept {
        for (auto& id : ids_) id.store(nullptr, std::memory_order_relaxed);
        next_.store(0, std::memory_order_relaxed);
        scope_.store(0, std::memory_order_release);
    }

    /// The scope later attempts must stay in (an endpoint_lease's scope()),
    /// or 0 when they may go anywhere.
    [[nodiscard]] std::uint32_t held_scope() const noexcept { return held(scope_.load(std::memory_order_acquire)); }
    /// The call may be repeated anywhere (idempotent): no scope holds it.
    void mark_idempotent() noexcept { scope_.fetch_or(idempotent_bit, std::memory_order_acq_rel); }
    [[nodiscard]] bool idempotent() const noexcept {
        return (scope_.load(std::memory_order_acquire) & idempotent_bit) != 0;
    }
    /// An attempt is about to be sent to an endpoint of `scope`: false (and
    /// nothing changed) when the call is held to another scope, e.g. by a copy
    /// that entered since this one picked. Each true is followed by one
    /// leave_scope().
    [[nodiscard]] bool enter_scope(std::uint32_t scope) noexcept {
        auto w = scope_.load(std::memory_order_acquire);
        for (;;) {
            if (in_flight(w) == max_in_flight) return false;
            const auto h = held(w);
            if (h != 0 && h != scope) return false;
            const auto next = ((w & idempotent_bit) != 0 || h != 0 ? w : (w & ~scope_mask) | scope) + in_flight_one;
            if (scope_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire))
                return true;
        }
    }
    /// The attempt that entered has ended. `may_have_been_processed`:
    /// anything but "known never sent" (refused connection, DNS, a TLS
    /// handshake refused, a breaker's refusal): the call stays in the scope
    /// for good. Otherwise, once no attempt of the call is in flight, it is
    /// free to go anywhere again.
    void leave_scope(bool may_have_been_processed) noexcept {
        auto w = scope_.load(std::memory_order_acquire);
        for (;;) {
            auto next = w - in_flight_one;
            if (may_have_been_processed) next |= processed_bit;
            if (in_flight(next) == 0 && (next & processed_bit) == 0) next &= ~scope_mask;
            if (scope_.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) return;
        }
    }

private:
    // scope_: bits 0-31 the scope, 32-47 attempts in flight in it, then the
    // flags. One word, so that entering and leaving race-free without a lock.
    static constexpr std::uint64_t scope_mask = 0xFFFF'FFFFULL;
    static constexpr std::uint64_t in_flight_one = 1ULL << 32;
    static constexpr std::uint64_t max_in_flight = 0xFFFF;
    static constexpr std::uint64_t processed_bit = 1ULL << 48;
    static constexpr std::uint64_t idempotent_bit = 1ULL << 49;
    [[nodiscard]] static constexpr std::uint64_t in_flight(std::uint64_t w) noexcept { return (w >> 32) & max_in_flight; }
    [[nodiscard]] static constexpr std::uint32_t held(std::uint64_t w) noexcept {
        if ((w & idempotent_bit) != 0 || (in_flight(w) == 0 && (w & processed_bit) == 0)) return 0;
        return static_cast<std::uint32_t>(w & scope_mask);
    }

    std::atomic<const void*> ids_[capacity] = {};
    std::atomic<std::size_t> next_{0};
    std::atomic<std::uint64_t> scope_{0};
};

namespace detail {

/// An endpoint's mutable state, shared by every snapshot listing the
/// endpoint. Its own cache lines: picks of other endpoints never touch it.
struct alignas(stripe_alignment) endpoint_state {
    std::atomic<std::uint32_t> outstanding{0};
    std::atomic<std::uint32_t> consecutive_failures{0};
    std::atomic<std::uint32_t> times_ejected{0};  ///< the ejection multiplier
    /// When the last ejection ended or will end (ns); the multiplier decays from there.
    std::atomic<std::int64_t> last_ejection_end{0};
    /// Nanoseconds since the clock's epoch; 0: not ejected.
    std::atomic<std::int64_t> ejected_until{0};
    /// Peak EWMA of the latency in ns (0: not measured), and when it was last updated.
    std::atomic<double> ewma_ns{0.0};
    std::atomic<std::int64_t> ewma_at{0};
    /// Set by active health checks (resil/balancing/health_check.hpp).
    std::atomic<bool> failing_checks{false};
    /// With balancer_options::endpoint_breaker only.
    std::unique_ptr<circuit_breaker> breaker{};

    [[nodiscard]] bool ejected_at(std::int64_t now_ns) const noexcept {
        const auto until = ejected_until.load(std::memory_order_acquire);
        return until != 0 && now_ns < until;
    }
    /// Out of the set: ejected, or failing its health checks.
    [[nodiscard]] bool unusable_at(std::int64_t now_ns) const noexcept {
        return failing_checks.load(std::memory_order_relaxed) || ejected_at(now_ns);
    }
};

/// One immutable version of the endpoint set.
struct balancer_snapshot {
    std::vector<endpoint> endpoints;  ///< sorted by priority (stable)
    std::vector<std::shared_ptr<endpoint_state>> states;
    std::vector<endpoint_state*> state_of;  ///< states[i].get(), read on every pick
    std::vector<std::uint32_t> weight;
    /// Each endpoint's idempotency scope, as the balancer numbers scopes (never 0).
    std::vector<std::uint32_t> scope_of;
    /// Group g is endpoints [group_begin[g], group_begin[g + 1]).
    std::vector<std::uint32_t> group_begin;
    /// Per group: the weights summed up to and including each endpoint (weighted draws).
    std::vector<std::uint64_t> cumulative;
    std::vector<std::uint64_t> group_weight;
    std::vector<bool> group_uniform;
    /// Round-robin: the smooth weighted schedule of each group, and where each starts.
    std::vector<std::uint32_t> schedule;
    std::vector<std::uint32_t> schedule_begin;
    stripes<std::atomic<std::uint64_t>> cursors;
    /// Leases holding this snapshot, per stripe: a lease adds to its
    /// thread's stripe and takes the same stripe back, so each stays >= 0.
    stripes<std::atomic<std::int64_t>> leases;

    [[nodiscard]] std::int64_t leases_held() const noexcept {
        std::int64_t n = 0;
        for (std::size_t i = 0; i < leases.size(); ++i) n += leases[i].load(std::memory_order_acquire);
        return n;
    }

    [[nodiscard]] std::size_t groups() const noexcept { return group_begin.empty() ? 0 : group_begin.size() - 1; }
};

/// A smooth weighted round-robin order of `weights` (earliest deadline
/// first: endpoint i's k-th turn is due at (k - 1/2) / w_i, ties to the lower
/// index), each weight divided by their gcd, so the length is their sum, at
/// most `limit` (weights are scaled down to fit, each keeping a turn).
[[nodiscard]] inline std::vector<std::uint32_t> smooth_schedule(std::span<const std::uint32_t> weights,
                                                                std::size_t limit = 65536) {
    std::vector<std::uint64_t> w(weights.begin(), weights.end());
    std::uint64_t g = 0;
    for (auto x : w) g = std::gcd(g, x);
    std::uint64_t sum = 0;
    for (auto& x : w) sum += (x /= std::max<std::uint64_t>(g, 1));
    if (sum > limit) {
        const auto total = sum;
        sum = 0;
        for (auto& x : w) sum += (x = std::max<std::uint64_t>(1, x * limit / total));
    }
    // Due times compared as (2k - 1) * sum / (2 w), kept exact as fractions
    // by cross-multiplying: (2k_a - 1) * w_b vs (2k_b - 1) * w_a.
    struct turn {
        std::uint64_t twice_k_minus_1;
        std::uint64_t weight;
        std::uint32_t index;
        bool operator>(const turn& o) const noexcept {
            const auto a = twice_k_minus_1 * o.weight, b = o.twice_k_minus_1 * weight;
            return a != b ? a > b : index > o.index;
        }
    };
    std::priority_queue<turn, std::vector<turn>, std::greater<>> queue;
    for (std::uint32_t i = 0; i < w.size(); ++i) queue.push({1, w[i], i});
    std::vector<std::uint32_t> order;
    order.reserve(sum);
    while (order.size() < sum) {
        auto t = queue.top();
        queue.pop();
        order.push_back(t.index);
        t.twice_k_minus_1 += 2;
        queue.push(t);
    }
    return order;
}

[[nodiscard]] constexpr std::int64_t ns_of(time_point t) noexcept { return t.time_since_epoch().count(); }

/// A uniform index below n (n < 2^32) from 64 random bits.
[[nodiscard]] constexpr std::uint32_t below(std::uint64_t bits, std::uint32_t n) noexcept {
    return static_cast<std::uint32_t>(((bits >> 32) * n) >> 32);
}

}  // namespace detail

class balancer;

namespace detail {
/// How active health checks reach the balancer (set_checked_health is private).
struct balancer_health_access {
    static bool set_checked_health(const balancer& lb, std::string_view address, bool healthy) noexcept;
};
/// How call_endpoint counts an attempt that found no endpoint after the
/// pick (every endpoint's breaker refused): as a pick that found none.
struct balancer_call_access {
    static void count_no_endpoint(const balancer& lb, bool in_scope) noexcept;
};
}  // namespace detail

/// The right to send one call to one endpoint. Ends the endpoint's in-flight
/// count when finished or destroyed; finish() also records the latency and
/// the result. Movable, not copyable; an empty lease (no endpoint was
/// available) converts to false.
class endpoint_lease {
public:
    endpoint_lease() = default;
    endpoint_lease(endpoint_lease&& o) noexcept { take(o); }
    endpoint_lease& operator=(endpoint_lease&& o) noexcept {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }
    endpoint_lease(const endpoint_lease&) = delete;
    endpoint_lease& operator=(const endpoint_lease&) = delete;
    ~endpoint_lease() { release(); }

    [[nodiscard]] explicit operator bool() const noexcept { return snapshot_ != nullptr; }

    /// The endpoint (valid while the lease is held).
    [[nodiscard]] const resil::endpoint& target() const noexcept { return snapshot_->endpoints[index_]; }
    [[nodiscard]] const std::string& address() const noexcept { return target().address; }
    /// Its position in the set the pick saw (sorted by priority).
    [[nodiscard]] std::size_t index() const noexcept { return index_; }
    /// Identifies the endpoint across replacements, for tried_endpoints.
    [[nodiscard]] const void* id() const noexcept { return snapshot_->state_of[index_]; }
    /// The endpoint's idempotency scope, numbered by the balancer (stable
    /// across replacements): what tried_endpoints::enter_scope() takes.
    [[nodiscard]] std::uint32_t scope() const noexcept { return snapshot_->scope_of[index_]; }
    /// Why an empty lease is empty: reason::no_endpoint, or
    /// reason::no_endpoint_in_scope when the call is held to an idempotency
    /// scope none of whose endpoints can take it; reason::none for a lease
    /// that holds an endpoint.
    [[nodiscard]] resil::reason refusal() const noexcept { return refusal_; }
    /// The endpoint's circuit breaker (balancer_options::endpoint_breaker), or null.
    [[nodiscard]] circuit_breaker* breaker() const noexcept { return snapshot_->state_of[index_]->breaker.get(); }
    /// When the pick was made.
    [[nodiscard]] time_point started() const noexcept { return started_; }

    /// Records the call: latency `now - started()` and its result; then
    /// releases the lease. Does nothing on an empty lease; records nothing
    /// after record() (a call is recorded once).
    inline void finish(time_point now, endpoint_result result) noexcept;

    /// Records the call as finish() does but keeps the lease (release() it
    /// after): returns the ejection this result caused, if any, e.g. to
    /// log it with the call (its address is valid until the lease is released).
    /// A second record() records nothing.
    [[nodiscard]] inline std::optional<events::endpoint_ejected> record(time_point now, endpoint_result result) noexcept;

    /// Releases the lease without recording anything (a cancelled call).
    void release() noexcept;

private:
    friend class balancer;
    void take(endpoint_lease& o) noexcept {
        owner_ = std::exchange(o.owner_, nullptr);
        snapshot_ = std::exchange(o.snapshot_, nullptr);
        index_ = o.index_;
        stripe_ = o.stripe_;
        recorded_ = o.recorded_;
        started_ = o.started_;
        refusal_ = o.refusal_;
    }
    const balancer* owner_ = nullptr;
    detail::balancer_snapshot* snapshot_ = nullptr;
    std::uint32_t index_ = 0;
    std::uint32_t stripe_ = 0;  ///< the stripe of snapshot_->leases this lease counts in
    bool recorded_ = false;     ///< record() was called: finish() only releases
    resil::reason refusal_ = reason::none;
    time_point started_{};
};

/// The balancer (banner above). One per replicated dependency, shared by
/// every thread calling it; not copyable.
class balancer {
public:
    /// Owns no clock: every member that depends on time takes `now`, read
    /// by its driver (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::caller_now;

    /// Throws std::invalid_argument on an empty list, an invalid endpoint or
    /// invalid options: "resil::balancer: `endpoints` must be non-empty, got 0".
    explicit balancer(std::span<const endpoint> endpoints, balancer_options options = {})
        : options_(checked(endpoints, std::move(options))) {
        current_.store(build(endpoints).release(), std::memory_order_seq_cst);
    }
    balancer(std::initializer_list<endpoint> endpoints, balancer_options options = {})
        : balancer(std::span<const endpoint>(endpoints.begin(), endpoints.size()), std::move(options)) {}
    explicit balancer(const std::vector<endpoint>& endpoints, balancer_options options = {})
        : balancer(std::span<const endpoint>(endpoints), std::move(options)) {}

    balancer(const balancer&) = delete;
    balancer& operator=(const balancer&) = delete;

    /// Every lease must be released first.
    ~balancer() {
        delete current_.load(std::memory_order_acquire);
        for (auto& r : retired_) delete r.snapshot;
    }

    /// Replaces the set without blocking picks. Endpoints whose address is
    /// in the old set keep their state (in-flight count, latency, ejection).
    /// An empty list is accepted (picks then find no endpoint); an invalid
    /// one throws std::invalid_argument and changes nothing.
    void replace(std::span<const endpoint> endpoints) {
        throw_if_invalid("resil::balancer", validate_endpoints(endpoints));
        std::lock_guard lock(writer_);
        auto fresh = build(endpoints);
        auto* old = current_.exchange(fresh.release(), std::memory_order_seq_cst);
        retired_.push_back({old, epoch_.load(std::memory_order_seq_cst)});
        replacements_.fetch_add(1, std::memory_order_relaxed);
        health_changes_.fetch_add(1, std::memory_order_seq_cst);
        reclaim_locked();
    }
    void replace(const std::vector<endpoint>& endpoints) { replace(std::span<const endpoint>(endpoints)); }
    void replace(std::initializer_list<endpoint> endpoints) {
        replace(std::span<const endpoint>(endpoints.begin(), endpoints.size()));
    }

    /// Frees replaced snapshots no lease holds any more (replace() does it too).
    void reclaim() {
        std::lock_guard lock(writer_);
        reclaim_locked();
    }

    /// Replaced snapshots not freed yet: those leases still hold, and those
    /// replaced within the last two epochs (for tests and memory checks).
    [[nodiscard]] std::size_t retained_snapshots() {
        std::lock_guard lock(writer_);
        return retired_.size();
    }

    /// Chooses an endpoint at `now`, preferring ones not in `tried`; an empty
    /// lease when the set is empty. Draws from `rng`.
    [[nodiscard]] endpoint_lease pick(time_point now, jitter_engine& rng, const tried_endpoints* tried = nullptr) const;
    /// The same, drawing from this thread's jitter engine.
    [[nodiscard]] endpoint_lease pick(time_point now, const tried_endpoints* tried = nullptr) const {
        return pick(now, detail::thread_jitter(), tried);
    }

    [[nodiscard]] const balancer_options& options() const noexcept { return options_; }

    [[nodiscard]] balancer_metrics metrics() const noexcept {
        balancer_metrics m;
        m.ejections = ejections_.load(std::memory_order_relaxed);
        m.returns = returns_.load(std::memory_order_relaxed);
        m.panic_picks = panic_picks_.total();
        m.failover_picks = failover_picks_.total();
        m.no_endpoint = no_endpoint_.load(std::memory_order_relaxed);
        m.no_endpoint_in_scope = no_endpoint_in_scope_.load(std::memory_order_relaxed);
        m.replacements = replacements_.load(std::memory_order_relaxed);
        return m;
    }

    /// Every endpoint of the current set at `now` (allocates; for status pages and tests).
    [[nodiscard]] std::vector<endpoint_status> status(time_point now) const {
        std::vector<endpoint_status> out;
        const scoped_reader scope{this, enter()};
        const auto* s = scope.guard.snapshot;
        for (std::size_t i = 0; i < s->endpoints.size(); ++i) {
            const auto& st = *s->state_of[i];
            out.push_back({s->endpoints[i], st.outstanding.load(std::memory_order_relaxed),
                           duration{static_cast<std::int64_t>(decayed_latency(st, detail::ns_of(now)))},
                           st.ejected_at(detail::ns_of(now)), st.times_ejected.load(std::memory_order_relaxed),
                           st.failing_checks.load(std::memory_order_relaxed),
                           st.breaker ? std::optional{st.breaker->state()} : std::nullopt});
        }
        return out;
    }

    /// The addresses of the current set (allocates; for health checkers).
    [[nodiscard]] std::vector<std::string> addresses() const {
        const scoped_reader scope{this, enter()};
        std::vector<std::string> out;
        for (const auto& e : scope.guard.snapshot->endpoints) out.push_back(e.address);
        return out;
    }

    /// Endpoints in the current set.
    [[nodiscard]] std::size_t size() const noexcept {
        const auto guard = enter();
        const auto n = guard.snapshot->endpoints.size();
        leave(guard.reader);
        return n;
    }

private:
    friend class endpoint_lease;
    friend struct detail::balancer_health_access;
    friend struct detail::balancer_call_access;

    /// Active health: takes the endpoint at `address` out of the set
    /// (healthy = false) or puts it back. Returns false when the current set
    /// has no such endpoint. Reached through detail::balancer_health_access
    /// only (resil::health_checker): not for every holder of a balancer.
    bool set_checked_health(std::string_view address, bool healthy) const noexcept {
        const auto guard = enter();
        const auto* s = guard.snapshot;
        bool found = false;
        for (std::size_t i = 0; i < s->endpoints.size() && !found; ++i) {
            if (s->endpoints[i].address != address) continue;
            found = true;
            if (s->state_of[i]->failing_checks.exchange(!healthy, std::memory_order_relaxed) != !healthy)
                health_changes_.fetch_add(1, std::memory_order_acq_rel);
        }
        leave(guard.reader);
        return found;
    }


    struct retired_snapshot {
        detail::balancer_snapshot* snapshot;
        std::uint64_t epoch;
    };
    struct reader_guard {
        detail::balancer_snapshot* snapshot;
        std::uint32_t reader;
    };
    /// Leaves on every path out of a scope that may throw (allocations).
    struct scoped_reader {
        const balancer* owner;
        reader_guard guard;
        scoped_reader(const balancer* b, reader_guard g) noexcept : owner(b), guard(g) {}
        scoped_reader(const scoped_reader&) = delete;
        scoped_reader& operator=(const scoped_reader&) = delete;
        ~scoped_reader() { owner->leave(guard.reader); }
    };
    /// Reader counts, per stripe and epoch parity: cell (stripe * 2 + parity).
    struct reader_cells {
        std::atomic<std::int64_t> by_parity[2]{};
    };

    static balancer_options checked(std::span<const endpoint> endpoints, balancer_options options) {
        if (endpoints.empty())
            throw_if_invalid("resil::balancer",
                             detail::check_that(false, "endpoints", "non-empty", std::size_t{0}));
        throw_if_invalid("resil::balancer", validate_endpoints(endpoints));
        throw_if_invalid("resil::balancer", options.validate());
        return options;
    }

    /// Protects the current snapshot until leave(): counts this thread in the
    /// current epoch, then reads the pointer. A writer frees a snapshot it
    /// replaced only after two epoch changes, each made when no reader of the
    /// epoch before was left (seq_cst orders the count against the pointer).
    [[nodiscard]] reader_guard enter() const noexcept {
        const auto stripe = static_cast<std::uint32_t>(detail::this_thread_stripe() & (readers_.size() - 1));
        const auto parity = static_cast<std::uint32_t>(epoch_.load(std::memory_order_seq_cst) & 1);
        readers_[stripe].by_parity[parity].fetch_add(1, std::memory_order_seq_cst);
        return {current_.load(std::memory_order_seq_cst), stripe * 2 + parity};
    }
    void leave(std::uint32_t reader) const noexcept {
        readers_[reader / 2].by_parity[reader % 2].fetch_sub(1, std::memory_order_release);
    }
    [[nodiscard]] std::int64_t readers_of(std::uint64_t parity) const noexcept {
        std::int64_t n = 0;
        for (std::size_t i = 0; i < readers_.size(); ++i)
            n += readers_[i].by_parity[parity & 1].load(std::memory_order_seq_cst);
        return n;
    }
    void reclaim_locked() {
        // Advance the epoch while the readers of the previous one are gone
        // (at most twice: enough to free everything retired before now).
        for (int step = 0; step < 2; ++step) {
            const auto e = epoch_.load(std::memory_order_seq_cst);
            if (readers_of(e + 1) != 0) break;  // parity of e - 1
            epoch_.store(e + 1, std::memory_order_seq_cst);
        }
        // Two epochs on, no pick can still be reading a snapshot, so its
        // lease counts only fall: all zero means no lease is left.
        const auto e = epoch_.load(std::memory_order_seq_cst);
        std::erase_if(retired_, [e](const retired_snapshot& r) {
            if (r.epoch + 2 > e || r.snapshot->leases_held() != 0) return false;
            delete r.snapshot;
            return true;
        });
    }

    [[nodiscard]] std::unique_ptr<detail::balancer_snapshot> build(std::span<const endpoint> endpoints);
    /// Numbers the idempotency scopes of `s` (built from `old`, or from
    /// nothing) so that a number never comes to stand for another key store.
    void number_scopes(detail::balancer_snapshot& s, const detail::balancer_snapshot* old,
                       std::span<const std::uint32_t> old_index);
    /// A number no scope had before (never 0).
    std::uint32_t fresh_scope() noexcept {
        if (++last_scope_ == 0) ++last_scope_;
        return last_scope_;
    }

    /// Recounts the usable endpoints of each group and returns ejected ones
    /// whose time is up; one thread at a time (the others use the counts as they are).
    void refresh(detail::balancer_snapshot& s, std::int64_t now_ns) const;

    std::optional<events::endpoint_ejected> record(detail::balancer_snapshot& s, std::uint32_t index,
                                                   time_point started, time_point now,
                                                   endpoint_result result) const noexcept;
    std::optional<events::endpoint_ejected> try_eject(detail::balancer_snapshot& s, std::uint32_t index,
                                                      std::int64_t now_ns) const noexcept;

    [[nodiscard]] double cost(const detail::endpoint_state& st, std::int64_t now_ns, std::uint32_t weight) const noexcept;
    /// The group a call goes to while the first is not healthy enough to take
    /// them all: Envoy's priority load. Each group's health is its usable
    /// share ÷ failover_threshold (Envoy: × the overprovisioning factor), at
    /// most 1; in priority order each group takes that share of what is left,
    /// the healths scaled up when they sum below 1. A group is in panic (its
    /// calls balanced over all of its endpoints) only when they sum below 1
    /// and its usable share is below panic_threshold; when every group is (or
    /// nothing is usable), the groups share the calls by their sizes.
    std::size_t choose_group(const detail::balancer_snapshot& s, jitter_engine& rng, bool& panic) const noexcept {
        const auto groups = s.groups();
        double health[endpoint::max_priority + 1];
        bool in_panic[endpoint::max_priority + 1];
        double total = 0.0;
        bool all_panic = true;
        for (std::size_t g = 0; g < groups; ++g) {
            const auto size = static_cast<double>(s.group_begin[g + 1] - s.group_begin[g]);
            const double usable = usable_[g].load(std::memory_order_relaxed);
            const double share = usable / size;
            health[g] = options_.failover_threshold > 0.0 ? std::min(1.0, share / options_.failover_threshold)
                                                           : (usable > 0.0 ? 1.0 : 0.0);
            total += health[g];
            in_panic[g] = usable < options_.panic_threshold * size;
            all_panic = all_panic && in_panic[g];
        }
        total = std::min(1.0, total);
        const double u = unit_interval(rng);
        double reached = 0.0;
        if (total > 0.0 && !(all_panic && total < 1.0)) {
            for (std::size_t g = 0; g < groups; ++g) {
                reached += health[g] / total;
                if (u < reached) {
                    panic = total < 1.0 && in_panic[g];
                    return g;
                }
            }
            for (std::size_t g = groups; g-- > 0;)  // rounding: the last group with any load
                if (health[g] > 0.0) {
                    panic = total < 1.0 && in_panic[g];
                    return g;
                }
        }
        // Nothing usable, or every group in panic: by the groups' sizes,
        // over all of their endpoints (no endpoint at all with panic mode off).
        panic = options_.panic_threshold > 0.0;
        if (!panic) return 0;
        const auto all = static_cast<double>(s.endpoints.size());
        reached = 0.0;
        for (std::size_t g = 0; g < groups; ++g) {
            reached += static_cast<double>(s.group_begin[g + 1] - s.group_begin[g]) / all;
            if (u < reached) return g;
        }
        return groups - 1;
    }

    /// The pick off the common path: a call held to idempotency scope `hold`
    /// (0: none), or a retry whose group (skip_group) has no fresh endpoint.
    /// The first group with a fresh endpoint (else, when held, a usable one),
    /// and in it one of the best-ranked (below); none when there is none.
    RESIL_DETAIL_COLD std::uint32_t pick_off_path(const detail::balancer_snapshot& s, std::int64_t now_ns,
                                                  jitter_engine& rng, const tried_endpoints* tried, std::uint32_t hold,
                                                  std::size_t skip_group) const noexcept {
        constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
        // 2 = usable and fresh (untried, its breaker not refusing), 1 = usable, 0 = not to be picked.
        auto rank = [&](std::uint32_t i, bool panic) noexcept -> int {
            const auto& st = *s.state_of[i];
            if (hold != 0 && s.scope_of[i] != hold) return 0;
            if (!panic && st.unusable_at(now_ns)) return 0;
            if (tried != nullptr && tried->contains(&st)) return 1;
            if (st.breaker && st.breaker->refusing_for() > duration::zero())
                return 1;
            return 2;
        };
        auto in_panic = [&](std::size_t g) noexcept {
            const auto size = s.group_begin[g + 1] - s.group_begin[g];
            return hold == 0 && static_cast<double>(usable_[g].load(std::memory_order_relaxed)) <
                                    options_.panic_threshold * static_cast<double>(size);
        };
        // The group: the first with a fresh endpoint, else (a held call) the first with a usable one.
        std::size_t group = s.groups();
        int wanted = 2;
        for (; wanted >= (hold != 0 ? 1 : 2) && group == s.groups(); --wanted)
            for (std::size_t g = 0; g < s.groups() && group == s.groups(); ++g) {
                if (g == skip_group) continue;
                const bool panic = in_panic(g);
                for (auto i = s.group_begin[g]; i < s.group_begin[g + 1]; ++i)
                    if (rank(i, panic) >= wanted) {
                        group = g;
                        break;
                    }
            }
        if (group == s.groups()) return none;
        // Within it, among the best-ranked: for round-robin and random a draw
        // by weight (the schedule's order is the common path's); else the
        // fewest calls in flight per weight (peak EWMA: the lowest cost),
        // from a random start.
        const bool panic = in_panic(group);
        const auto b = s.group_begin[group], size = s.group_begin[group + 1] - b;
        if (options_.policy == balancing_policy::round_robin || options_.policy == balancing_policy::random) {
            int best = 0;
            std::uint64_t total = 0;
            for (auto i = b; i < b + size; ++i) {
                const int r = rank(i, panic);
                if (r > best) {
                    best = r;
                    total = 0;
                }
                if (r == best && r > 0) total += s.weight[i];
            }
            if (best == 0) return none;
            auto target = static_cast<std::uint64_t>(unit_interval(rng) * static_cast<double>(total));
            std::uint32_t last = none;
            for (auto i = b; i < b + size; ++i) {
                if (rank(i, panic) != best) continue;
                last = i;
                if (target < s.weight[i]) return i;
                target -= s.weight[i];
            }
            return last;  // rounding
        }
        const auto start = detail::below(rng(), size);
        std::uint32_t chosen = none;
        int chosen_rank = 0;
        double chosen_measure = 0.0;
        for (std::uint32_t k = 0; k < size; ++k) {
            const auto i = b + (start + k) % size;
            const int r = rank(i, panic);
            if (r == 0 || r < chosen_rank) continue;
            const double measure =
                options_.policy == balancing_policy::peak_ewma
                    ? cost(*s.state_of[i], now_ns, s.weight[i])
                    : (static_cast<double>(s.state_of[i]->outstanding.load(std::memory_order_relaxed)) + 1.0) / s.weight[i];
            if (r > chosen_rank || measure < chosen_measure) {
                chosen = i;
                chosen_rank = r;
                chosen_measure = measure;
            }
        }
        return chosen;
    }

    /// The peak EWMA at `now_ns`, decayed since its last sample; 0 when not measured.
    [[nodiscard]] double decayed_latency(const detail::endpoint_state& st, std::int64_t now_ns) const noexcept;

    balancer_options options_;
    std::atomic<detail::balancer_snapshot*> current_{nullptr};
    std::atomic<std::uint64_t> epoch_{2};
    detail::stripes<reader_cells> readers_{};
    std::mutex writer_;
    std::vector<retired_snapshot> retired_;
    /// The last scope number handed out (written under writer_ only, by build()).
    std::uint32_t last_scope_ = 0;

    /// Health of the current set: usable endpoints per group, recounted by
    /// refresh() when health_changes_ moved or an ejection ended.
    mutable std::atomic<std::uint64_t> health_changes_{1};
    mutable std::atomic<std::uint64_t> counted_changes_{0};
    mutable std::atomic<const detail::balancer_snapshot*> counted_snapshot_{nullptr};
    mutable std::atomic<std::int64_t> next_return_ns_{std::numeric_limits<std::int64_t>::max()};
    mutable std::atomic<bool> refreshing_{false};
    mutable std::unique_ptr<std::atomic<std::uint32_t>[]> usable_{
        new std::atomic<std::uint32_t>[endpoint::max_priority + 1]{}};
    /// Held by try_eject() only: ejections are counted against the cap one at a time.
    mutable std::mutex ejecting_;

    mutable std::atomic<std::uint64_t> ejections_{0}, returns_{0}, no_endpoint_{0}, no_endpoint_in_scope_{0};
    std::atomic<std::uint64_t> replacements_{0};
    detail::striped_counter panic_picks_{}, failover_picks_{};
};

inline bool detail::balancer_health_access::set_checked_health(const balancer& lb, std::string_view address,
                                                              bool healthy) noexcept {
    return lb.set_checked_health(address, healthy);
}

inline void detail::balancer_call_access::count_no_endpoint(const balancer& lb, bool in_scope) noexcept {
    lb.no_endpoint_.fetch_add(1, std::memory_order_relaxed);
    if (in_scope) lb.no_endpoint_in_scope_.fetch_add(1, std::memory_order_relaxed);
}

// ---- endpoint_lease ----

inline void endpoint_lease::release() noexcept {
    if (snapshot_ == nullptr) return;
    snapshot_->state_of[index_]->outstanding.fetch_sub(1, std::memory_order_relaxed);
    // Last use of the snapshot: release orders the reads above before a writer's free.
    snapshot_->leases[stripe_].fetch_sub(1, std::memory_order_release);
    snapshot_ = nullptr;
    owner_ = nullptr;
    recorded_ = false;
}

inline void endpoint_lease::finish(time_point now, endpoint_result result) noexcept {
    if (snapshot_ == nullptr) return;
    if (!recorded_) (void)owner_->record(*snapshot_, index_, started_, now, result);
    release();
}

inline std::optional<events::endpoint_ejected> endpoint_lease::record(time_point now, endpoint_result result) noexcept {
    if (snapshot_ == nullptr || recorded_) return std::nullopt;
    recorded_ = true;
    return owner_->record(*snapshot_, index_, started_, now, result);
}

// ---- balancer ----

inline void balancer::number_scopes(detail::balancer_snapshot& s, const detail::balancer_snapshot* old,
                                    std::span<const std::uint32_t> old_index) {
    constexpr auto none = std::numeric_limits<std::uint32_t>::max();
    const auto n = s.endpoints.size();
    s.scope_of.assign(n, 0);
    auto was_unnamed = [&](std::size_t i) { return old_index[i] != none && old->endpoints[old_index[i]].idempotency_scope.empty(); };
    for (std::size_t g = 0; g < s.groups(); ++g) {
        // A group's unnamed endpoints: one that was unnamed keeps its number;
        // the new ones take the number the kept ones share, if they share
        // one (new replicas of that service), else one of their own.
        std::uint32_t shared = 0;
        bool one_shared = true;
        for (auto i = s.group_begin[g]; i < s.group_begin[g + 1]; ++i)
            if (s.endpoints[i].idempotency_scope.empty() && was_unnamed(i)) {
                const auto k = old->scope_of[old_index[i]];
                one_shared = one_shared && (shared == 0 || shared == k);
                shared = k;
            }
        std::uint32_t for_new = one_shared ? shared : 0;
        for (auto i = s.group_begin[g]; i < s.group_begin[g + 1]; ++i) {
            if (!s.endpoints[i].idempotency_scope.empty()) continue;
            if (was_unnamed(i)) {
                s.scope_of[i] = old->scope_of[old_index[i]];
            } else {
                if (for_new == 0) for_new = fresh_scope();
                s.scope_of[i] = for_new;
            }
        }
    }
    // A named scope: the number the set before gave the name, else the one
    // given to it earlier in this set, else a new one. (A name that left
    // and comes back later is a new scope: the safe side.)
    for (std::size_t i = 0; i < n; ++i) {
        const auto& name = s.endpoints[i].idempotency_scope;
        if (name.empty()) continue;
        std::uint32_t k = 0;
        if (old != nullptr)
            for (std::size_t j = 0; j < old->endpoints.size() && k == 0; ++j)
                if (old->endpoints[j].idempotency_scope == name) k = old->scope_of[j];
        for (std::size_t j = 0; j < i && k == 0; ++j)
            if (s.endpoints[j].idempotency_scope == name) k = s.scope_of[j];
        s.scope_of[i] = k != 0 ? k : fresh_scope();
    }
}

inline std::unique_ptr<detail::balancer_snapshot> balancer::build(std::span<const endpoint> endpoints) {
    auto s = std::make_unique<detail::balancer_snapshot>();
    s->endpoints.assign(endpoints.begin(), endpoints.end());
    std::stable_sort(s->endpoints.begin(), s->endpoints.end(),
                     [](const endpoint& a, const endpoint& b) { return a.priority < b.priority; });
    const auto* old = current_.load(std::memory_order_acquire);  // writers hold writer_: not freed meanwhile
    constexpr auto none = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> old_index;  // where each endpoint was in `old`, or none
    old_index.reserve(s->endpoints.size());
    for (const auto& e : s->endpoints) {
        std::shared_ptr<detail::endpoint_state> kept;
        old_index.push_back(none);
        if (old != nullptr)
            for (std::size_t i = 0; i < old->endpoints.size(); ++i)
                if (old->endpoints[i].address == e.address) {
                    kept = old->states[i];
                    old_index.back() = static_cast<std::uint32_t>(i);
                }
        if (!kept) {
            kept = std::make_shared<detail::endpoint_state>();
            if (options_.endpoint_breaker) {
                // A change of the breaker's state changes which endpoints are
                // usable: the group counts are taken again at the next pick.
                auto breaker_options = *options_.endpoint_breaker;
                breaker_options.on_state_change = [this, told = std::move(breaker_options.on_state_change)](
                                                      const events::breaker_state_changed& change) {
                    health_changes_.fetch_add(1, std::memory_order_acq_rel);
                    if (told) told(change);
                };
                kept->breaker = std::make_unique<circuit_breaker>(std::move(breaker_options));
            }
        }
        s->states.push_back(std::move(kept));
        s->state_of.push_back(s->states.back().get());
        s->weight.push_back(static_cast<std::uint32_t>(e.weight));
    }
    const auto n = static_cast<std::uint32_t>(s->endpoints.size());
    for (std::uint32_t i = 0; i < n; ++i)
        if (i == 0 || s->endpoints[i].priority != s->endpoints[i - 1].priority) s->group_begin.push_back(i);
    s->group_begin.push_back(n);
    if (n == 0) s->group_begin.clear();
    number_scopes(*s, old, old_index);
    for (std::size_t g = 0; g < s->groups(); ++g) {
        const auto b = s->group_begin[g], e = s->group_begin[g + 1];
        std::uint64_t sum = 0;
        bool uniform = true;
        for (auto i = b; i < e; ++i) {
            sum += s->weight[i];
            s->cumulative.push_back(sum);
            uniform = uniform && s->weight[i] == s->weight[b];
        }
        s->group_weight.push_back(sum);
        s->group_uniform.push_back(uniform);
        s->schedule_begin.push_back(static_cast<std::uint32_t>(s->schedule.size()));
        for (auto i : detail::smooth_schedule(std::span<const std::uint32_t>(s->weight).subspan(b, e - b)))
            s->schedule.push_back(b + i);
    }
    s->schedule_begin.push_back(static_cast<std::uint32_t>(s->schedule.size()));
    // Each stripe's cursor starts at its own place, so threads do not walk in step.
    for (std::size_t i = 0; i < s->cursors.size(); ++i)
        s->cursors[i].store(i * 0x9e3779b97f4a7c15ULL >> 40, std::memory_order_relaxed);
    return s;
}

inline void balancer::refresh(detail::balancer_snapshot& s, std::int64_t now_ns) const {
    bool expected = false;
    if (!refreshing_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
    const auto changes = health_changes_.load(std::memory_order_acquire);
    std::int64_t next_return = std::numeric_limits<std::int64_t>::max();
    for (std::size_t g = 0; g < s.groups(); ++g) {
        std::uint32_t usable = 0;
        for (auto i = s.group_begin[g]; i < s.group_begin[g + 1]; ++i) {
            auto& st = *s.state_of[i];
            auto until = st.ejected_until.load(std::memory_order_acquire);
            if (until != 0 && until <= now_ns &&
                st.ejected_until.compare_exchange_strong(until, 0, std::memory_order_acq_rel)) {
                st.consecutive_failures.store(0, std::memory_order_relaxed);
                returns_.fetch_add(1, std::memory_order_relaxed);
                if (options_.on_returned)
                    options_.on_returned({s.endpoints[i].address, time_point{duration{now_ns}}});
                until = 0;
            }
            if (until != 0) {
                next_return = std::min(next_return, until);
            } else if (!st.failing_checks.load(std::memory_order_relaxed)) {
                // An open breaker refuses the endpoint's calls until its
                // open_for ends: not usable for choosing a group till then.
                const auto refusing = st.breaker ? st.breaker->refusing_for() : duration::zero();
                if (refusing > duration::zero())
                    next_return = std::min(next_return, detail::saturating_add(now_ns, refusing.count()));
                else
                    ++usable;
            }
        }
        usable_[g].store(usable, std::memory_order_relaxed);
    }
    next_return_ns_.store(next_return, std::memory_order_relaxed);
    counted_snapshot_.store(&s, std::memory_order_relaxed);
    counted_changes_.store(changes, std::memory_order_release);
    refreshing_.store(false, std::memory_order_release);
}

inline double balancer::decayed_latency(const detail::endpoint_state& st, std::int64_t now_ns) const noexcept {
    double latency = st.ewma_ns.load(std::memory_order_relaxed);
    if (latency <= 0.0) return 0.0;
    // Decayed towards 0 since the last sample (read only: nothing written),
    // so an endpoint left alone after a slow spell is tried again.
    const auto idle = now_ns - st.ewma_at.load(std::memory_order_relaxed);
    if (idle > 0) latency *= std::exp(-static_cast<double>(idle) / static_cast<double>(options_.decay_time.count()));
    return latency;
}

inline double balancer::cost(const detail::endpoint_state& st, std::int64_t now_ns, std::uint32_t weight) const noexcept {
    const auto out = static_cast<double>(st.outstanding.load(std::memory_order_relaxed));
    double latency = decayed_latency(st, now_ns);
    if (latency <= 0.0) {
        if (out == 0.0) return 0.0;
        latency = static_cast<double>(options_.unmeasured_penalty.count());
    }
    return latency * (out + 1.0) / static_cast<double>(weight);
}

inline std::optional<events::endpoint_ejected> balancer::record(detail::balancer_snapshot& s, std::uint32_t index,
                                                                time_point started, time_point now,
                                                                endpoint_result result) const noexcept {
    auto& st = *s.state_of[index];
    const auto now_ns = detail::ns_of(now);
    if (options_.policy == balancing_policy::peak_ewma) {
        // Finagle's PeakEwma: reading the cost (the pick) decays it towards 0
        // and restamps it; a sample then takes the peak, or blends in by the
        // time since that stamp. A pick here writes nothing (so picks write
        // no endpoint they do not choose): the decay of this call's own pick
        // is applied now, from the last stamp to the pick's instant. Reads by
        // other picks while the call was in flight would have restamped it
        // in Finagle; that is the one difference (docs/balancing.md).
        // Two finishes racing on one endpoint may lose one sample: the
        // average is a heuristic, and a lock here would cost every call.
        const auto tau = static_cast<double>(options_.decay_time.count());
        const auto rtt = static_cast<double>(std::max<std::int64_t>(0, (now - started).count()));
        double prev = st.ewma_ns.load(std::memory_order_relaxed);
        auto at = st.ewma_at.load(std::memory_order_relaxed);
        if (const auto picked = detail::ns_of(started); prev > 0.0 && picked > at) {
            prev *= std::exp(-static_cast<double>(picked - at) / tau);
            at = picked;
        }
        double next = rtt;
        if (prev > 0.0 && rtt < prev) {
            const auto td = static_cast<double>(std::max<std::int64_t>(0, now_ns - at));
            const double w = std::exp(-td / tau);
            next = prev * w + rtt * (1.0 - w);
        }
        st.ewma_ns.store(next, std::memory_order_relaxed);
        st.ewma_at.store(now_ns, std::memory_order_relaxed);
    }
    if (result == endpoint_result::success) {
        if (st.consecutive_failures.load(std::memory_order_relaxed) != 0)
            st.consecutive_failures.store(0, std::memory_order_relaxed);
        return std::nullopt;
    }
    const auto threshold = options_.outlier.consecutive_failures;
    if (threshold == 0) return std::nullopt;
    if (st.consecutive_failures.fetch_add(1, std::memory_order_acq_rel) + 1 >= threshold)
        return try_eject(s, index, now_ns);
    return std::nullopt;
}

inline std::optional<events::endpoint_ejected> balancer::try_eject(detail::balancer_snapshot& s, std::uint32_t index,
                                                                   std::int64_t now_ns) const noexcept {
    auto& st = *s.state_of[index];
    if (st.ejected_at(now_ns)) return std::nullopt;  // already out (a late failure)
    refresh(s, now_ns);  // returns expired ejections (their events) first
    // Ejections are rare: one at a time, each counting the ejected endpoints
    // itself, so two racing ejections cannot both pass the cap.
    std::unique_lock lock(ejecting_);
    if (st.ejected_at(now_ns)) return std::nullopt;  // ejected by a failure on another thread meanwhile
    const auto n = s.endpoints.size();
    const auto share_cap = static_cast<std::size_t>(options_.outlier.max_ejection_share * static_cast<double>(n));
    const auto cap = std::min(n - 1, std::max<std::size_t>(1, share_cap));
    std::size_t count = 0;
    for (const auto* other : s.state_of) count += other->ejected_at(now_ns) ? 1 : 0;
    if (count >= cap) {
        // Refused by the cap: the run starts again (as Envoy resets its
        // consecutive-5xx count whether or not the ejection was allowed).
        st.consecutive_failures.store(0, std::memory_order_relaxed);
        return std::nullopt;
    }
    const auto base = options_.outlier.base_ejection_time.count();
    const auto longest = options_.outlier.max_ejection_time.count();
    // The multiplier: less one per decay interval spent un-ejected, then, as
    // Envoy's ejectTimeBackoff, one more while multiplier × base < max + base
    // (so it reaches 11 with 30 s and 300 s); the length is capped at max.
    std::int64_t times = st.times_ejected.load(std::memory_order_relaxed);
    const auto healthy_for = now_ns - st.last_ejection_end.load(std::memory_order_relaxed);
    if (healthy_for > 0) times -= std::min<std::int64_t>(times, healthy_for / options_.outlier.ejection_decay_interval.count());
    if (times * base < longest + base) ++times;
    const auto length = std::min(longest, base * times);
    // An expired ejection not returned yet by refresh() ends here (no event:
    // the endpoint goes straight from one ejection to the next).
    auto until = st.ejected_until.load(std::memory_order_acquire);
    if (!st.ejected_until.compare_exchange_strong(until, now_ns + length, std::memory_order_acq_rel))
        return std::nullopt;
    st.times_ejected.store(static_cast<std::uint32_t>(times), std::memory_order_relaxed);
    st.last_ejection_end.store(now_ns + length, std::memory_order_relaxed);
    st.consecutive_failures.store(0, std::memory_order_relaxed);
    lock.unlock();
    ejections_.fetch_add(1, std::memory_order_relaxed);
    health_changes_.fetch_add(1, std::memory_order_acq_rel);
    const events::endpoint_ejected event{s.endpoints[index].address, static_cast<std::uint32_t>(times), duration{length},
                                         time_point{duration{now_ns}}};
    if (options_.on_ejected) options_.on_ejected(event);
    return event;
}

inline endpoint_lease balancer::pick(time_point now, jitter_engine& rng, const tried_endpoints* tried) const {
    const auto guard = enter();
    auto& s = *guard.snapshot;
    const auto now_ns = detail::ns_of(now);
    // A call held to an idempotency scope (tried_endpoints) is offered only
    // that scope's usable endpoints, panic mode or not.
    const std::uint32_t hold = tried != nullptr ? tried->held_scope() : 0;
    auto nothing = [&]() noexcept {
        leave(guard.reader);
        no_endpoint_.fetch_add(1, std::memory_order_relaxed);
        endpoint_lease empty;
        empty.refusal_ = reason::no_endpoint;
        if (hold != 0) {
            no_endpoint_in_scope_.fetch_add(1, std::memory_order_relaxed);
            empty.refusal_ = reason::no_endpoint_in_scope;
        }
        return empty;
    };
    if (s.endpoints.empty()) return nothing();
    if (counted_changes_.load(std::memory_order_acquire) != health_changes_.load(std::memory_order_acquire) ||
        now_ns >= next_return_ns_.load(std::memory_order_relaxed) ||
        counted_snapshot_.load(std::memory_order_relaxed) != &s) [[unlikely]]
        refresh(s, now_ns);

    std::size_t group = 0;
    bool panic = false;
    std::uint32_t chosen = std::numeric_limits<std::uint32_t>::max();
    if (hold != 0) [[unlikely]] {
        chosen = pick_off_path(s, now_ns, rng, tried, hold, s.groups());
    } else {
        const auto size0 = static_cast<double>(s.group_begin[1] - s.group_begin[0]);
        const double usable0 = usable_[0].load(std::memory_order_relaxed);
        // Healthy (Envoy: health 100 %): takes every call, never in panic.
        const bool healthy0 = usable0 >= options_.failover_threshold * size0 && usable0 > 0.0;
        if (healthy0) [[likely]] {
            panic = false;
        } else if (s.groups() == 1) {
            panic = usable0 < options_.panic_threshold * size0;
        } else {
            group = choose_group(s, rng, panic);
        }
        const auto b = s.group_begin[group], e = s.group_begin[group + 1];
        const auto size = e - b;

        // Whether endpoint i may be picked: 2 = usable and untried, 1 = usable but tried (or its breaker open), 0 = not usable.
        auto rank = [&](std::uint32_t i) noexcept -> int {
            const auto& st = *s.state_of[i];
            if (!panic && st.unusable_at(now_ns)) return 0;
            if (tried != nullptr && tried->contains(&st)) return 1;
            // An open breaker refuses until its open_for ends; then its next call is a probe.
            if (st.breaker && st.breaker->refusing_for() > duration::zero())
                return 1;
            return 2;
        };
        auto draw = [&]() noexcept -> std::uint32_t {
            if (s.group_uniform[group]) return b + detail::below(rng(), size);
            const auto total = s.group_weight[group];
            const auto target = static_cast<std::uint64_t>(unit_interval(rng) * static_cast<double>(total));
            const auto first = s.cumulative.begin() + b, last = s.cumulative.begin() + e;
            const auto at = std::upper_bound(first, last, target);
            return b + static_cast<std::uint32_t>(std::min<std::ptrdiff_t>(at - first, size - 1));
        };
        // The rank of the choice made: below 2, another group may have a fresh endpoint.
        int found = 0;
        // The best-ranked endpoint by `better` over a scan from a random start.
        auto scan = [&](auto&& better) noexcept -> std::uint32_t {
            const auto start = detail::below(rng(), size);
            std::uint32_t best = e;
            int best_rank = 0;
            for (std::uint32_t k = 0; k < size; ++k) {
                const auto i = b + (start + k) % size;
                const int r = rank(i);
                if (r == 0) continue;
                if (r > best_rank || (r == best_rank && better(i, best))) {
                    best = i;
                    best_rank = r;
                }
            }
            found = best_rank;
            return best;
        };
        auto fewer_outstanding = [&](std::uint32_t a, std::uint32_t c) noexcept {
            // (out_a + 1) / w_a < (out_c + 1) / w_c, in integers.
            const std::uint64_t oa = s.state_of[a]->outstanding.load(std::memory_order_relaxed) + 1ULL;
            const std::uint64_t oc = s.state_of[c]->outstanding.load(std::memory_order_relaxed) + 1ULL;
            return oa * s.weight[c] < oc * s.weight[a];
        };
        auto cheaper = [&](std::uint32_t a, std::uint32_t c) noexcept {
            return cost(*s.state_of[a], now_ns, s.weight[a]) < cost(*s.state_of[c], now_ns, s.weight[c]);
        };
        auto never = [](std::uint32_t, std::uint32_t) noexcept { return false; };
        // Two distinct draws, compared by `better`. A draw that is not usable and
        // untried is drawn again a few times; then a scan decides (the first),
        // or the next such endpoint after the first is taken (the second).
        auto two_choices = [&](auto&& better) noexcept -> std::uint32_t {
            std::uint32_t first = e;
            for (int tries = 0; tries < 8 && first == e; ++tries)
                if (const auto i = draw(); rank(i) == 2) first = i;
            if (first == e) return scan(better);
            found = 2;
            if (size == 1) return first;
            std::uint32_t second = e;
            for (int tries = 0; tries < 8 && second == e; ++tries) {
                const auto i = s.group_uniform[group] ? b + (first - b + 1 + detail::below(rng(), size - 1)) % size : draw();
                if (i != first && rank(i) == 2) second = i;
            }
            for (std::uint32_t k = 1; k < size && second == e; ++k)
                if (const auto i = b + (first - b + k) % size; rank(i) == 2) second = i;
            if (second == e) return first;
            return better(second, first) ? second : first;
        };

        chosen = e;
        switch (options_.policy) {
            case balancing_policy::round_robin: {
                const auto sb = s.schedule_begin[group];
                const auto len = s.schedule_begin[group + 1] - sb;
                const auto c = s.cursors.local().fetch_add(1, std::memory_order_relaxed);
                for (std::uint32_t k = 0; k < len && found < 2; ++k) {
                    const auto i = s.schedule[sb + static_cast<std::uint32_t>((c + k) % len)];
                    const int r = rank(i);
                    if (r > found) {
                        chosen = i;
                        found = r;
                    }
                }
                break;
            }
            case balancing_policy::random:
                for (int tries = 0; tries < 8 && chosen == e; ++tries)
                    if (const auto i = draw(); rank(i) == 2) chosen = i;
                if (chosen == e) chosen = scan(never);
                else found = 2;
                break;
            case balancing_policy::least_outstanding: chosen = scan(fewer_outstanding); break;
            case balancing_policy::power_of_two_choices: chosen = two_choices(fewer_outstanding); break;
            case balancing_policy::peak_ewma: chosen = two_choices(cheaper); break;
        }
        if (chosen == e) chosen = std::numeric_limits<std::uint32_t>::max();
        // Nothing fresh in that group (every usable endpoint tried by this
        // call, or refused by its breaker): the first group that has a fresh
        // one takes the attempt, so a retry after a refused connection fails
        // over at once.
        if (found < 2 && s.groups() > 1) [[unlikely]] {
            if (const auto fresh = pick_off_path(s, now_ns, rng, tried, 0, group);
                fresh != std::numeric_limits<std::uint32_t>::max()) {
                chosen = fresh;
                for (group = 0; s.group_begin[group + 1] <= fresh; ++group) {
                }
                panic = static_cast<double>(usable_[group].load(std::memory_order_relaxed)) <
                        options_.panic_threshold * static_cast<double>(s.group_begin[group + 1] - s.group_begin[group]);
            }
        }
    }
    if (chosen == std::numeric_limits<std::uint32_t>::max()) return nothing();  // everything ejected and panic mode off
    if (hold == 0) {
        // (A held call's pick is not the balancer's choice of group.)
        if (group != 0) failover_picks_.add();
        if (panic) panic_picks_.add();
    }
    s.state_of[chosen]->outstanding.fetch_add(1, std::memory_order_relaxed);
    // Pinned inside the epoch guard (a writer sees it before freeing), then the guard ends.
    const auto stripe = static_cast<std::uint32_t>(detail::this_thread_stripe() & (s.leases.size() - 1));
    s.leases[stripe].fetch_add(1, std::memory_order_relaxed);
    leave(guard.reader);
    endpoint_lease lease;
    lease.owner_ = this;
    lease.snapshot_ = guard.snapshot;
    lease.index_ = chosen;
    lease.stripe_ = stripe;
    lease.started_ = now;
    return lease;
}

}  // namespace resil
