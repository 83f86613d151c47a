// resil/balancer/balancer.hpp — client-side balancing over a set of
// replicas: which endpoint the next call goes to, with passive health
// (outlier ejection), panic mode and failover between priority groups.
//
//   resil::balancer lb{{{.address = "http://10.0.0.1:8080"}, {.address = "http://10.0.0.2:8080"}},
//                      {.policy = resil::balancing_policy::peak_ewma}};
//   if (auto lease = lb.pick(clock.now())) {
//       auto r = client.get(lease.address() + "/v1/items");
//       lease.record_and_end(clock.now(), r.status() >= 500 ? resil::endpoint_result::failure
//                                                           : resil::endpoint_result::success);
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
//   ring_hash, maglev, rendezvous  the call's affinity key (affinity.hpp) to
//                       the same endpoint (Envoy's ring_hash, maglev,
//                       rendezvous_hash); an endpoint that cannot take it
//                       (ejected, tried by this call, full under the load
//                       bound) passes it to the key's next candidate, the
//                       same one for every caller (detail/affinity_pickers.hpp).
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
// Priority groups and idempotency scopes: the first group takes every call
// while failover_threshold of it is usable; below, the groups share them by
// health, as Envoy's priority load. A pick given a call's tried_endpoints
// moves to the next group with an untried endpoint when its group has none,
// and offers a call held to an idempotency scope (an attempt that may have
// reached a server, of a call that may not be repeated) only that scope's
// usable endpoints (resil/balancer/call.hpp).
//
// The parts: options.hpp (what it is told, its counts), tried_endpoints.hpp
// (what one call knows), detail/snapshot.hpp (the set and each endpoint's
// state), detail/pickers.hpp (the pickers), detail/peak_ewma.hpp,
// detail/outlier_ejection.hpp, detail/priority_load.hpp,
// detail/affinity_pickers.hpp (the key pickers' tables, built by replace()).
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
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../circuit_breaker.hpp"
#include "../clock.hpp"
#include "../detail/platform.hpp"
#include "../detail/saturate.hpp"
#include "../detail/stripes.hpp"
#include "../detail/thread_jitter.hpp"
#include "../events.hpp"
#include "../jitter.hpp"
#include "../reason.hpp"
#include "../validation.hpp"
#include "affinity.hpp"
#include "detail/affinity_pickers.hpp"
#include "detail/outlier_ejection.hpp"
#include "detail/peak_ewma.hpp"
#include "detail/pickers.hpp"
#include "detail/priority_load.hpp"
#include "detail/snapshot.hpp"
#include "endpoint.hpp"
#include "options.hpp"
#include "tried_endpoints.hpp"

namespace resil {

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

/// The right to send one call to one endpoint. Ending it (record_and_end(),
/// end_unrecorded(), or its destructor) ends the endpoint's in-flight count;
/// record_and_end() and record_and_keep() record the latency and the result.
/// Movable, not copyable; an empty lease (no endpoint was available)
/// converts to false. One thread at a time.
class endpoint_lease {
public:
    endpoint_lease() = default;
    /// Takes over `o`'s pick; `o` holds nothing after.
    endpoint_lease(endpoint_lease&& o) noexcept { take(o); }
    /// Finishes the pick it holds (as its destructor does), then takes over
    /// `o`'s.
    endpoint_lease& operator=(endpoint_lease&& o) noexcept {
        if (this != &o) {
            end_unrecorded();
            take(o);
        }
        return *this;
    }
    endpoint_lease(const endpoint_lease&) = delete;
    endpoint_lease& operator=(const endpoint_lease&) = delete;
    ~endpoint_lease() { end_unrecorded(); }

    /// True when it holds an endpoint (the pick found one).
    [[nodiscard]] explicit operator bool() const noexcept { return snapshot_ != nullptr; }

    /// The endpoint (valid while the lease is held).
    [[nodiscard]] const resil::endpoint& target() const noexcept { return snapshot_->endpoints[index_]; }
    /// The picked endpoint's address.
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

    /// Records the call's result and ends the lease: latency `now -
    /// started()` and `result` are recorded, then the endpoint's in-flight
    /// count goes down. Does nothing on an empty lease; records nothing after
    /// record_and_keep() (a call is recorded once), only ends the lease.
    inline void record_and_end(time_point now, endpoint_result result) noexcept;

    /// Records the call's result as record_and_end() does, but keeps the
    /// lease (end it with end_unrecorded() after): returns the ejection this
    /// result caused, if any, e.g. to log it with the call (the endpoint's
    /// address is valid until the lease ends). A second call records nothing.
    [[nodiscard]] inline std::optional<events::endpoint_ejected> record_and_keep(time_point now, endpoint_result result) noexcept;

    /// Ends the lease without recording anything (a cancelled call, or after
    /// record_and_keep()). Does nothing on an empty lease; the destructor
    /// does the same.
    void end_unrecorded() noexcept;

    /// The former name of record_and_end(), kept for one release.
    [[deprecated("renamed record_and_end")]] void finish(time_point now, endpoint_result result) noexcept {
        record_and_end(now, result);
    }
    /// The former name of record_and_keep(), kept for one release.
    [[deprecated("renamed record_and_keep")]] [[nodiscard]] std::optional<events::endpoint_ejected> record(
        time_point now, endpoint_result result) noexcept {
        return record_and_keep(now, result);
    }
    /// The former name of end_unrecorded(), kept for one release.
    [[deprecated("renamed end_unrecorded")]] void release() noexcept { end_unrecorded(); }

private:
    friend class balancer;
    void take(endpoint_lease& o) noexcept {
        owner_ = std::exchange(o.owner_, nullptr);
        snapshot_ = std::exchange(o.snapshot_, nullptr);
        index_ = o.index_;
        stripe_ = o.stripe_;
        recorded_ = o.recorded_;
        in_flight_counted_ = o.in_flight_counted_;
        started_ = o.started_;
        refusal_ = o.refusal_;
    }
    const balancer* owner_ = nullptr;
    detail::balancer_snapshot* snapshot_ = nullptr;
    std::uint32_t index_ = 0;
    std::uint32_t stripe_ = 0;  ///< the stripe of snapshot_->leases this lease counts in
    bool recorded_ = false;     ///< record_and_keep() was called: record_and_end() only ends the lease
    bool in_flight_counted_ = false;  ///< counted in the balancer's calls in flight (the load bound)
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
    /// A balancer over `endpoints`, from a braced list. Throws
    /// std::invalid_argument when validate_endpoints() or options.validate()
    /// names a field.
    balancer(std::initializer_list<endpoint> endpoints, balancer_options options = {})
        : balancer(std::span<const endpoint>(endpoints.begin(), endpoints.size()), std::move(options)) {}
    /// A balancer over `endpoints`. Throws std::invalid_argument when
    /// validate_endpoints() or options.validate() names a field.
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
    /// replace() from a vector.
    void replace(const std::vector<endpoint>& endpoints) { replace(std::span<const endpoint>(endpoints)); }
    /// replace() from a braced list.
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
    /// lease when the set is empty. Draws from `rng`. ring_hash, maglev and
    /// rendezvous hash `tried`'s affinity key (tried_endpoints::key()); with
    /// none, a random hash from `rng`.
    [[nodiscard]] endpoint_lease pick(time_point now, jitter_engine& rng, const tried_endpoints* tried = nullptr) const {
        return pick_for(now, rng, tried, tried != nullptr ? tried->key() : affinity_key{});
    }
    /// The same, drawing from this thread's jitter engine.
    [[nodiscard]] endpoint_lease pick(time_point now, const tried_endpoints* tried = nullptr) const {
        return pick(now, detail::thread_jitter(), tried);
    }
    /// The same for a call with affinity key `key` (used by ring_hash,
    /// maglev and rendezvous; the other policies ignore it): the key's first
    /// candidate that is usable, not in `tried` and (with
    /// affinity_options::load_bound_factor) not full. No allocation.
    [[nodiscard]] endpoint_lease pick(time_point now, const affinity_key& key, const tried_endpoints* tried = nullptr) const {
        return pick_for(now, detail::thread_jitter(), tried, key);
    }

    /// The options it was built with.
    [[nodiscard]] const balancer_options& options() const noexcept { return options_; }

    /// A snapshot of its counts now.
    [[nodiscard]] balancer_metrics metrics() const noexcept {
        balancer_metrics m;
        m.ejections = ejection_.ejections();
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
                           duration{static_cast<std::int64_t>(detail::decayed_latency(st, detail::ns_of(now), options_.decay_time))},
                           st.ejected_at(detail::ns_of(now)), st.times_ejected.load(std::memory_order_relaxed),
                           st.failing_checks.load(std::memory_order_relaxed),
                           st.breaker ? std::optional{st.breaker->state()} : std::nullopt,
                           st.picks.load(std::memory_order_relaxed)});
        }
        return out;
    }

    /// Picks of each endpoint of the current set, counted since it joined
    /// the set (kept by a replace() that keeps it), in the set's order
    /// (allocates; for exporters such as resil::metrics::watch_balancer).
    [[nodiscard]] std::vector<endpoint_picks> picks() const {
        std::vector<endpoint_picks> out;
        const scoped_reader scope{this, enter()};
        const auto* s = scope.guard.snapshot;
        out.reserve(s->endpoints.size());
        for (std::size_t i = 0; i < s->endpoints.size(); ++i)
            out.push_back({s->endpoints[i].address, s->state_of[i]->picks.load(std::memory_order_relaxed)});
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

    [[nodiscard]] endpoint_lease pick_for(time_point now, jitter_engine& rng, const tried_endpoints* tried,
                                          const affinity_key& key) const;
    /// The load bound is on: picks count the balancer's calls in flight.
    [[nodiscard]] bool bounded() const noexcept {
        return detail::is_hash_policy(options_.policy) && options_.affinity.load_bound_factor > 0.0;
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
    mutable detail::outlier_ejection ejection_{options_.outlier};

    mutable std::atomic<std::uint64_t> returns_{0}, no_endpoint_{0}, no_endpoint_in_scope_{0};
    /// Leases held now, over every snapshot (the load bound only; Envoy
    /// reads its cluster's upstream_rq_active the same way).
    mutable std::atomic<std::uint64_t> in_flight_{0};
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

inline void endpoint_lease::end_unrecorded() noexcept {
    if (snapshot_ == nullptr) return;
    snapshot_->state_of[index_]->outstanding.fetch_sub(1, std::memory_order_relaxed);
    if (in_flight_counted_) owner_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
    in_flight_counted_ = false;
    // Last use of the snapshot: release orders the reads above before a writer's free.
    snapshot_->leases[stripe_].fetch_sub(1, std::memory_order_release);
    snapshot_ = nullptr;
    owner_ = nullptr;
    recorded_ = false;
}

inline void endpoint_lease::record_and_end(time_point now, endpoint_result result) noexcept {
    if (snapshot_ == nullptr) return;
    if (!recorded_) (void)owner_->record(*snapshot_, index_, started_, now, result);
    end_unrecorded();
}

inline std::optional<events::endpoint_ejected> endpoint_lease::record_and_keep(time_point now, endpoint_result result) noexcept {
    if (snapshot_ == nullptr || recorded_) return std::nullopt;
    recorded_ = true;
    return owner_->record(*snapshot_, index_, started_, now, result);
}

// ---- balancer ----

// Building a set (construction, replace()) and recounting its health (after
// an ejection or a health change) are compiled once with
// RESIL_SEPARATE_COMPILATION (resil/separate_compilation.hpp); picking and
// recording, on every call, stay inline.
#if RESIL_DETAIL_BODIES
RESIL_DECL void balancer::number_scopes(detail::balancer_snapshot& s, const detail::balancer_snapshot* old,
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

RESIL_DECL std::unique_ptr<detail::balancer_snapshot> balancer::build(std::span<const endpoint> endpoints) {
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
                // The hook hears which endpoint's breaker changed.
                breaker_options.on_state_change = [this, told = std::move(breaker_options.on_state_change),
                                                   address = e.address](const events::breaker_state_changed& change) {
                    health_changes_.fetch_add(1, std::memory_order_acq_rel);
                    if (!told) return;
                    auto named = change;
                    named.endpoint = address;
                    told(named);
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
    detail::build_affinity(*s, options_.policy, options_.affinity);
    // Each stripe's cursor starts at its own place, so threads do not walk in step.
    for (std::size_t i = 0; i < s->cursors.size(); ++i)
        s->cursors[i].store(i * 0x9e3779b97f4a7c15ULL >> 40, std::memory_order_relaxed);
    return s;
}

RESIL_DECL void balancer::refresh(detail::balancer_snapshot& s, std::int64_t now_ns) const {
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
                    next_return = std::min<std::int64_t>(next_return, detail::saturating_add(now_ns, refusing.count()));
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
#endif  // RESIL_DETAIL_BODIES

inline std::optional<events::endpoint_ejected> balancer::record(detail::balancer_snapshot& s, std::uint32_t index,
                                                                time_point started, time_point now,
                                                                endpoint_result result) const noexcept {
    auto& st = *s.state_of[index];
    if (options_.policy == balancing_policy::peak_ewma) detail::record_latency(st, started, now, options_.decay_time);
    if (result == endpoint_result::success) {
        detail::outlier_ejection::count_success(st);
        return std::nullopt;
    }
    const auto now_ns = detail::ns_of(now);
    if (!ejection_.count_failure(st) || st.ejected_at(now_ns)) return std::nullopt;  // (already out: a late failure)
    refresh(s, now_ns);  // returns expired ejections (their events) first
    auto ejected = ejection_.try_eject(s, index, now_ns);
    if (ejected) {
        health_changes_.fetch_add(1, std::memory_order_acq_rel);
        if (options_.on_ejected) options_.on_ejected(*ejected);
    }
    return ejected;
}

inline endpoint_lease balancer::pick_for(time_point now, jitter_engine& rng, const tried_endpoints* tried,
                                         const affinity_key& key) const {
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

    const bool hashed = detail::is_hash_policy(options_.policy);
    const bool bound = bounded();
    const detail::key_pick_inputs keyed{s, options_.policy, !hashed ? 0 : key ? key.hash() : rng(),
                                        options_.affinity.load_bound_factor,
                                        bound ? in_flight_.load(std::memory_order_relaxed) : 0};
    const detail::off_path_inputs off_path{s, now_ns, rng, tried, usable_.get(), options_, keyed.key, keyed.in_flight};
    std::size_t group = 0;
    bool panic = false;
    std::uint32_t chosen = detail::no_pick;
    if (hold != 0) [[unlikely]] {
        chosen = detail::pick_off_path(off_path, hold, s.groups());
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
            group = detail::choose_group(s, usable_.get(), options_.failover_threshold, options_.panic_threshold, rng,
                                         panic);
        }
        // Whether endpoint i may be picked: 2 = usable and untried, 1 =
        // usable but tried (or its breaker open), 0 = not usable.
        auto rank = [&](std::uint32_t i) noexcept -> int {
            const auto& st = *s.state_of[i];
            if (!panic && st.unusable_at(now_ns)) return 0;
            if (tried != nullptr && tried->contains(&st)) return 1;
            // An open breaker refuses until its open_for ends; then its next call is a probe.
            if (st.breaker && st.breaker->refusing_for() > duration::zero()) return 1;
            return 2;
        };
        const detail::group_view in{s, group};
        int found = 0;  // the rank of the choice: below 2, another group may have a fresh endpoint
        switch (options_.policy) {
            case balancing_policy::round_robin: chosen = detail::round_robin_pick(in, rank, found); break;
            case balancing_policy::random: chosen = detail::random_pick(in, rng, rank, found); break;
            case balancing_policy::least_outstanding:
                chosen = detail::scan_pick(in, rng, rank, detail::fewer_outstanding{s}, found);
                break;
            case balancing_policy::power_of_two_choices:
                chosen = detail::two_choices_pick(in, rng, rank, detail::fewer_outstanding{s}, found);
                break;
            case balancing_policy::peak_ewma:
                chosen = detail::two_choices_pick(
                    in, rng, rank, detail::cheaper{s, now_ns, options_.decay_time, options_.unmeasured_penalty}, found);
                break;
            case balancing_policy::ring_hash:
            case balancing_policy::maglev:
            case balancing_policy::rendezvous: chosen = detail::key_pick(keyed, group, rank, found); break;
        }
        // Nothing fresh in that group (every usable endpoint tried by this
        // call, or refused by its breaker): the first group that has a fresh
        // one takes the attempt, so a retry after a refused connection fails
        // over at once.
        if (found < 2 && s.groups() > 1) [[unlikely]] {
            if (const auto fresh = detail::pick_off_path(off_path, 0, group); fresh != detail::no_pick) {
                chosen = fresh;
                for (group = 0; s.group_begin[group + 1] <= fresh; ++group) {
                }
                panic = static_cast<double>(usable_[group].load(std::memory_order_relaxed)) <
                        options_.panic_threshold * static_cast<double>(s.group_begin[group + 1] - s.group_begin[group]);
            }
        }
    }
    if (chosen == detail::no_pick) return nothing();  // everything ejected and panic mode off
    if (hold == 0) {
        // (A held call's pick is not the balancer's choice of group.)
        if (group != 0) failover_picks_.add();
        if (panic) panic_picks_.add();
    }
    s.state_of[chosen]->outstanding.fetch_add(1, std::memory_order_relaxed);
    s.state_of[chosen]->picks.fetch_add(1, std::memory_order_relaxed);  // (the line the count above owns)
    if (bound) in_flight_.fetch_add(1, std::memory_order_relaxed);
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
    lease.in_flight_counted_ = bound;
    return lease;
}

}  // namespace resil
