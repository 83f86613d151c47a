// resil/discovery/dns_discovery.hpp — endpoints found by DNS: a name
// resolved into a balancer's endpoints (all A / AAAA records, or SRV for
// ports, weights and priorities), again after the records' TTL (clamped to
// [min_ttl, max_ttl]) or a set interval, each change applied with
// balancer::replace() — endpoints that stay keep their state (ejection,
// latency, calls in flight), removed ones finish the calls they have, new
// ones start cold.
//
//   resil::balancer lb{{{.address = "http://10.0.0.1:8000"}}};
//   resil::dns_discovery triton{{.name = "triton.ml.svc.cluster.local", .port = 8000}, lb};
//   resil::dns_discovery_thread refresher{triton};   // looks up now, then after each TTL
//   ...                                              // its destructor stops and joins it
//
// A lookup that fails (timeout, the server down, SERVFAIL, a malformed reply)
// or finds nothing (NXDOMAIN, no records) keeps the last good set, counts it
// (metrics().failures / .empty, the on_lookup event) and comes again after
// retry_after_failure, doubled for each further one in a row (at most
// max_ttl): a resolver down changes nothing, and an empty answer never
// empties the balancer.
//
// The drivers: dns_discovery_thread (a thread of its own, this header) and
// resil::asio::dns_discovery_timer (resil/discovery/asio.hpp). Or call
// refresh(now) yourself, as the tests do with the manual clock.
//
// Thread-safe: refresh() calls are serialized (one lookup at a time);
// metrics(), current() and options() may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../balancer/balancer.hpp"
#include "../clock.hpp"
#include "../validation.hpp"
#include "detail/dns_resolver.hpp"
#include "options.hpp"

namespace resil {

/// A DNS name kept resolved into an endpoint set (see the banner).
class dns_discovery {
public:
    /// Receives each new set (sorted by address), only when it differs
    /// from the last one applied. Called on the thread that looked up.
    using apply_function = std::function<void(const std::vector<endpoint>&)>;
    /// Does one lookup in place of DNS (see the third constructor).
    using lookup_function = std::function<dns_answer()>;

    /// Applies each change with `apply` (a dependency's: `[&](auto& e) {
    /// payments.replace_endpoints(e); }`). Throws std::invalid_argument when
    /// options.validate() names a field.
    dns_discovery(dns_discovery_options options, apply_function apply)
        : options_(checked(std::move(options))),
          apply_(std::move(apply)),
          resolver_(std::make_unique<detail::dns_resolver>(options_)) {}
    /// Asks `lookup` instead of DNS (a simulation, another resolver): the
    /// same TTL clamping, comparison, failure handling and counts. Its
    /// `nameserver`, `records`, `port`, `scheme`, address families and query
    /// options are then unused; `name` names the source in events.
    dns_discovery(dns_discovery_options options, apply_function apply, lookup_function lookup)
        : options_(checked(std::move(options))), apply_(std::move(apply)), lookup_(std::move(lookup)) {}
    /// The same, applying each change with lb.replace().
    dns_discovery(dns_discovery_options options, balancer& lb, lookup_function lookup)
        : dns_discovery(std::move(options), [&lb](const std::vector<endpoint>& e) { lb.replace(e); }, std::move(lookup)) {}
    /// Applies each change with lb.replace(); `lb` must outlive it. The
    /// balancer's own set stands until the first lookup that resolves.
    dns_discovery(dns_discovery_options options, balancer& lb)
        : dns_discovery(std::move(options), [&lb](const std::vector<endpoint>& e) { lb.replace(e); }) {}

    dns_discovery(const dns_discovery&) = delete;
    dns_discovery& operator=(const dns_discovery&) = delete;

    /// Looks the name up once (blocking: at most query_timeout ×
    /// query_attempts per query), applies the set when it changed, and
    /// returns when the next lookup is due: now + the records' smallest TTL
    /// clamped to [min_ttl, max_ttl] (or + interval), or after a failed or
    /// empty lookup now + retry_after_failure × 2^(failures in a row − 1),
    /// at most max_ttl.
    time_point refresh(time_point now) {
        const std::lock_guard lock(refresh_);
        auto result = lookup();
        lookups_.fetch_add(1, std::memory_order_relaxed);
        events::dns_lookup event{};
        event.name = options_.name;
        event.outcome = result.outcome;
        duration wait{};
        if (result.outcome == dns_lookup_outcome::resolved) {
            event.found = result.endpoints.size();
            wait = options_.interval != duration::zero()
                       ? options_.interval
                       : std::clamp(duration{std::chrono::seconds{result.ttl}}, options_.min_ttl, options_.max_ttl);
            if (result.endpoints != applied_) {
                count_difference(result.endpoints, event);
                try {
                    apply_(result.endpoints);
                } catch (const std::exception& e) {
                    // Refused (an apply function of the user's threw): the
                    // last set applied stands, and the lookup counts as failed.
                    return failed(now, event, dns_lookup_outcome::failed, std::string("applying the set: ") + e.what());
                }
                {
                    const std::lock_guard set_lock(set_);
                    applied_ = std::move(result.endpoints);
                }
                changes_.fetch_add(1, std::memory_order_relaxed);
                added_.fetch_add(event.added, std::memory_order_relaxed);
                removed_.fetch_add(event.removed, std::memory_order_relaxed);
                endpoints_.store(event.found, std::memory_order_relaxed);
            }
            // Only once the set is applied (or unchanged): a refused apply
            // is a failure in the same run as the lookups before it.
            failing_in_row_.store(0, std::memory_order_relaxed);
        } else {
            return failed(now, event, result.outcome, result.error);
        }
        event.next_in = wait;
        if (options_.on_lookup) options_.on_lookup(event);
        return now + wait;
    }

    /// The last set applied (empty before the first lookup that resolved).
    [[nodiscard]] std::vector<endpoint> current() const {
        const std::lock_guard lock(set_);
        return applied_;
    }

    /// Its counts now.
    [[nodiscard]] dns_discovery_metrics metrics() const noexcept {
        dns_discovery_metrics m;
        m.lookups = lookups_.load(std::memory_order_relaxed);
        m.failures = failures_.load(std::memory_order_relaxed);
        m.empty = empty_.load(std::memory_order_relaxed);
        m.changes = changes_.load(std::memory_order_relaxed);
        m.added = added_.load(std::memory_order_relaxed);
        m.removed = removed_.load(std::memory_order_relaxed);
        m.endpoints = endpoints_.load(std::memory_order_relaxed);
        m.failing_in_row = failing_in_row_.load(std::memory_order_relaxed);
        return m;
    }

    /// The options it was built with.
    [[nodiscard]] const dns_discovery_options& options() const noexcept { return options_; }

private:
    /// The resolver's answer; a lookup that threw (out of memory) as a failed one.
    detail::dns_result lookup() noexcept {
        try {
            if (!resolver_) {
                auto answer = lookup_();
                auto& e = answer.endpoints;
                std::sort(e.begin(), e.end(), [](const endpoint& a, const endpoint& b) { return a.address < b.address; });
                e.erase(std::unique(e.begin(), e.end(), [](const endpoint& a, const endpoint& b) { return a.address == b.address; }),
                        e.end());
                if (answer.outcome == dns_lookup_outcome::resolved && e.empty()) {
                    answer.outcome = dns_lookup_outcome::empty;
                    answer.error = "no records";
                }
                return answer;
            }
            return resolver_->lookup();
        } catch (const std::exception& e) {
            detail::dns_result out;
            out.error = e.what();
            return out;
        }
    }

    /// Counts a failed or empty lookup, tells the listener, and returns
    /// when the next is due: retry_after_failure doubled per failure in a
    /// row, at most max_ttl.
    time_point failed(time_point now, events::dns_lookup& event, dns_lookup_outcome outcome, const std::string& error) {
        event.outcome = outcome;
        event.found = event.added = event.removed = 0;
        (outcome == dns_lookup_outcome::failed ? failures_ : empty_).fetch_add(1, std::memory_order_relaxed);
        const auto in_row = failing_in_row_.fetch_add(1, std::memory_order_relaxed) + 1;
        auto wait = options_.retry_after_failure;
        for (std::uint64_t i = 1; i < in_row && wait < options_.max_ttl; ++i) wait *= 2;
        wait = std::min(wait, std::max(options_.max_ttl, options_.retry_after_failure));
        event.error = error;
        event.next_in = wait;
        if (options_.on_lookup) options_.on_lookup(event);
        return now + wait;
    }

    static dns_discovery_options checked(dns_discovery_options o) {
        throw_if_invalid("resil::dns_discovery", o.validate());
        return o;
    }

    /// Added and removed addresses between the applied set and `fresh` (both sorted).
    void count_difference(const std::vector<endpoint>& fresh, events::dns_lookup& event) const {
        std::size_t i = 0;
        std::size_t j = 0;
        while (i < applied_.size() || j < fresh.size()) {
            if (j == fresh.size() || (i < applied_.size() && applied_[i].address < fresh[j].address)) {
                ++event.removed;
                ++i;
            } else if (i == applied_.size() || fresh[j].address < applied_[i].address) {
                ++event.added;
                ++j;
            } else {
                ++i;
                ++j;
            }
        }
    }

    dns_discovery_options options_;
    apply_function apply_;
    lookup_function lookup_;
    std::unique_ptr<detail::dns_resolver> resolver_;  // none with a lookup function
    std::mutex refresh_;     // one lookup at a time
    mutable std::mutex set_; // applied_ for current()
    std::vector<endpoint> applied_;
    std::atomic<std::uint64_t> lookups_{0}, failures_{0}, empty_{0}, changes_{0}, added_{0}, removed_{0}, endpoints_{0},
        failing_in_row_{0};
};

/// Runs a dns_discovery on a thread of its own: a lookup at once, then each
/// when refresh() says it is due, until destroyed (or stop()). The
/// destructor stops and joins it: it waits for a lookup under way, at most
/// query_timeout × query_attempts per query. Clock: steady_clock, or a clock
/// of yours whose sleep_for honours the stop token.
template <resil::clock Clock = resil::steady_clock>
class basic_dns_discovery_thread {
public:
    /// Starts the thread; `source` must outlive it.
    explicit basic_dns_discovery_thread(dns_discovery& source, Clock clock = {})
        : source_(source), clock_(std::move(clock)), thread_([this](std::stop_token stop) { run(std::move(stop)); }) {}
    basic_dns_discovery_thread(const basic_dns_discovery_thread&) = delete;
    basic_dns_discovery_thread& operator=(const basic_dns_discovery_thread&) = delete;
    ~basic_dns_discovery_thread() { stop(); }

    /// Stops the lookups and joins the thread (a lookup under way ends first).
    void stop() noexcept {
        thread_.request_stop();
        if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
    }

private:
    void run(std::stop_token stop) {
        while (!stop.stop_requested()) {
            const auto next = source_.refresh(clock_.now());
            if (!resil::sleep_until(clock_, next, stop)) return;
        }
    }

    dns_discovery& source_;
    Clock clock_;
    std::jthread thread_;
};

/// A dns_discovery on a thread of its own, on the steady clock.
using dns_discovery_thread = basic_dns_discovery_thread<>;

}  // namespace resil
