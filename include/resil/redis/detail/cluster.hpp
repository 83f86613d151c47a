// resil/redis/detail/cluster.hpp — what the Redis limiter needs to talk to
// a Redis Cluster, or to a primary behind Sentinel, on hiredis 0.14 (which
// has no cluster client): a key's slot (CRC16 of its hash tag), the node
// list of the options, the slot map learnt with CLUSTER SLOTS (or the
// primary the sentinels name), a pool of blocking connections per node, and
// the reading of a MOVED / ASK redirect and of the topology replies. The
// map and the readers are shared by the blocking path (refresh() here) and
// the Asio one (asio_cluster_path.hpp, which awaits the same steps).
//
// The map is read without a lock on every decision (one relaxed atomic per
// slot, nodes never removed while the limiter lives); it is written by one
// refresh at a time (CLUSTER SLOTS from a seed or a known node) and by a
// MOVED, which sets its slot at once and asks for a refresh.
#pragma once

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../../clock.hpp"
#include "connection.hpp"
#include "health.hpp"
#include "node_list.hpp"

namespace resil::redis::detail {

inline constexpr std::size_t cluster_slots = 16384;

// CRC16-XMODEM's table: one step per byte.
inline constexpr auto crc16_table = [] {
    std::array<std::uint16_t, 256> t{};
    for (unsigned i = 0; i < 256; ++i) {
        auto c = static_cast<std::uint16_t>(i << 8);
        for (int b = 0; b < 8; ++b) c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
        t[i] = c;
    }
    return t;
}();

/// CRC16-XMODEM (poly 0x1021, init 0): Redis Cluster's key hash.
[[nodiscard]] constexpr std::uint16_t crc16(std::string_view s) noexcept {
    std::uint16_t crc = 0;
    for (const char ch : s)
        crc = static_cast<std::uint16_t>((crc << 8) ^
                                         crc16_table[((crc >> 8) ^ static_cast<unsigned char>(ch)) & 0xffu]);
    return crc;
}

/// The key's slot: the hash of what lies between the first '{' and the next
/// '}' when that is not empty, else of the whole key (the cluster spec's rule).
[[nodiscard]] constexpr std::uint16_t key_slot(std::string_view key) noexcept {
    if (const auto open = key.find('{'); open != std::string_view::npos) {
        if (const auto close = key.find('}', open + 1); close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return static_cast<std::uint16_t>(crc16(key) & (cluster_slots - 1));
}

/// A redirect read from an error reply: "MOVED <slot> <host>:<port>" or
/// "ASK <slot> <host>:<port>"; an empty host means the node that answered.
struct redirect {
    bool ask = false;
    int slot = -1;
    node_address to;
};

/// Whether `text` is a redirect; `from_host` fills an empty host.
[[nodiscard]] inline bool read_redirect(std::string_view text, const std::string& from_host, redirect& out) {
    std::size_t skip = 0;
    if (text.substr(0, 6) == "MOVED ") {
        out.ask = false;
        skip = 6;
    } else if (text.substr(0, 4) == "ASK ") {
        out.ask = true;
        skip = 4;
    } else {
        return false;
    }
    text.remove_prefix(skip);
    const auto space = text.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 5) return false;
    int slot = 0;
    for (const char c : text.substr(0, space)) {
        if (c < '0' || c > '9') return false;
        slot = slot * 10 + (c - '0');
    }
    if (slot >= static_cast<int>(cluster_slots)) return false;
    std::string_view where = text.substr(space + 1);
    std::string filled;
    if (!where.empty() && where.front() == ':') {
        filled = from_host + std::string(where);
        where = filled;
    }
    if (!parse_node_address(where, out.to)) return false;
    out.slot = slot;
    return true;
}

/// The slot map and a pool of connections per node. Thread-safe: lookups
/// are lock-free; adding a node and refreshing take a mutex each.
class cluster_map {
public:
    /// Nodes ever known (seeds and those the cluster named): beyond it, a
    /// new node is not added (a decision it would need fails).
    static constexpr std::size_t max_nodes = 1024;

    struct node {
        node(node_address a, int connections)
            : address(std::move(a)), name(address.host + ":" + std::to_string(address.port)), pool(connections) {}
        node_address address;
        std::string name;  ///< "host:port"
        detail::pool pool;
    };

    /// A cluster's map, seeded with some of its nodes; or, with a
    /// `sentinel_master` name, the primary that `seeds` (sentinels) name.
    cluster_map(std::vector<node_address> seeds, int connections_per_node, std::string sentinel_master = {})
        : seeds_(std::move(seeds)),
          connections_(connections_per_node),
          sentinel_master_(std::move(sentinel_master)),
          nodes_(new std::unique_ptr<node>[max_nodes]) {
        for (auto& s : owner_) s.store(0, std::memory_order_relaxed);
        for (const auto& s : seeds_) (void)intern(s);
    }

    /// The node that owns `slot` as far as the map knows; null when unknown.
    [[nodiscard]] node* owner(std::uint16_t slot) const noexcept {
        const auto i = sentinel() ? primary_.load(std::memory_order_acquire) : owner_[slot].load(std::memory_order_acquire);
        return i == 0 ? nullptr : nodes_[i - 1].get();
    }

    /// Whether the nodes are sentinels naming one primary (not a cluster).
    [[nodiscard]] bool sentinel() const noexcept { return !sentinel_master_.empty(); }

    /// A node to ask when the map does not know the slot: a seed (it will
    /// redirect), taken in turn.
    [[nodiscard]] node* any() const noexcept {
        const auto n = count_.load(std::memory_order_acquire);
        if (n == 0) return nullptr;
        return nodes_[next_any_.fetch_add(1, std::memory_order_relaxed) % n].get();
    }

    /// The node of that address, added when new; null when max_nodes are known.
    node* intern(const node_address& a) {
        const auto n = count_.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < n; ++i)
            if (nodes_[i]->address == a) return nodes_[i].get();
        std::lock_guard<std::mutex> lock(add_mutex_);
        const auto m = count_.load(std::memory_order_relaxed);
        for (std::size_t i = n; i < m; ++i)
            if (nodes_[i]->address == a) return nodes_[i].get();
        if (m == max_nodes) return nullptr;
        nodes_[m] = std::make_unique<node>(a, connections_);
        count_.store(m + 1, std::memory_order_release);
        return nodes_[m].get();
    }

    /// A MOVED: the slot is that node's from now on (a refresh confirms).
    void moved(std::uint16_t slot, node* to) noexcept {
        owner_[slot].store(index_of(to), std::memory_order_release);
        stale_.store(true, std::memory_order_release);
    }

    /// After a redirect, a failed connection or CLUSTERDOWN: the map may be old.
    void mark_stale() noexcept { stale_.store(true, std::memory_order_release); }

    /// Whether this caller should refresh the map now: it is stale (or has
    /// never been read) and no refresh ran within `spacing`; one caller at a
    /// time gets true and must call end_refresh().
    [[nodiscard]] bool begin_refresh(std::chrono::nanoseconds spacing) noexcept {
        if (!stale_.load(std::memory_order_acquire)) return false;
        const auto now = steady_ns();
        if (now - last_refresh_ns_.load(std::memory_order_relaxed) < spacing.count()) return false;
        bool expected = false;
        if (!refreshing_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
        last_refresh_ns_.store(now, std::memory_order_relaxed);
        return true;
    }

    /// CLUSTER SLOTS from a seed or a known node, each tried with
    /// `connect_timeout` and `reply_timeout`, never past `end`: the map
    /// replaced by the first good answer. False (`error` set) when none gave one.
    bool refresh(time_point end, std::chrono::microseconds connect_timeout, std::chrono::microseconds reply_timeout,
                 std::string& error) {
        if (sentinel()) return find_primary(end, connect_timeout, reply_timeout, error);
        const auto n = sources();
        // The seeds first (they are the first nodes), then the nodes learnt.
        for (std::size_t i = 0; i < n; ++i) {
            const node& from = *source_node(i);
            const auto now = steady_clock{}.now();
            if (end <= now) {
                if (error.empty()) error = "no time left to read the cluster's slot map";
                return false;
            }
            const auto left = std::chrono::duration_cast<std::chrono::microseconds>(end - now);
            connection c;
            if (!c.connect(from.address.host, from.address.port, std::min(left, connect_timeout), reply_timeout,
                           error))
                continue;
            const auto reply_end = std::min(end, steady_clock{}.now() + reply_timeout);
            const char* argv[] = {"CLUSTER", "SLOTS"};
            const std::size_t lens[] = {7, 5};
            reply_ptr r = c.command(2, argv, lens, reply_end, error);
            if (!r) continue;
            if (take_slots(r.get(), from.address.host, error)) {
                answered_by(i);
                return true;
            }
        }
        return false;
    }

    // ---- The steps of a refresh, shared by the blocking refresh() above
    // and the Asio path's (asio_cluster_path.hpp): whom to ask, in which
    // order, and the reading of what they answer. Only the one refresher
    // (begin_refresh() true) calls them.

    /// How many sources a refresh may ask: the sentinels, or the nodes known.
    [[nodiscard]] std::size_t sources() const noexcept {
        return sentinel() ? seeds_.size() : count_.load(std::memory_order_acquire);
    }
    /// A cluster's i-th node to ask in turn (the one that last answered first).
    [[nodiscard]] node* source_node(std::size_t i) const noexcept {
        const auto n = count_.load(std::memory_order_acquire);
        return nodes_[(i + refresh_from_) % n].get();
    }
    /// Sentinel: the i-th sentinel to ask in turn (the one that last answered first).
    [[nodiscard]] const node_address& source_sentinel(std::size_t i) const noexcept {
        return seeds_[(i + refresh_from_) % seeds_.size()];
    }
    /// The i-th source answered: the next refresh starts from it.
    void answered_by(std::size_t i) noexcept { refresh_from_ = (i + refresh_from_) % sources(); }
    /// The name the sentinels monitor the primary under.
    [[nodiscard]] const std::string& sentinel_master() const noexcept { return sentinel_master_; }

    /// SENTINEL get-master-addr-by-name's reply from sentinel `s`: the
    /// primary's address in `out`, or false with `error`.
    [[nodiscard]] bool read_primary_address(const redisReply* r, const node_address& s, node_address& out,
                                            std::string& error) const {
        if (r->type == REDIS_REPLY_ERROR) {
            error = s.host + ":" + std::to_string(s.port) + " answered " + std::string(r->str, r->len);
            return false;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_STRING) {
            error = "sentinel " + s.host + ":" + std::to_string(s.port) + " knows no primary named \"" +
                    sentinel_master_ + "\"";
            return false;
        }
        const std::string host(r->element[0]->str, r->element[0]->len);
        const std::string port(r->element[1]->str, r->element[1]->len);
        if (!parse_node_address(host + ":" + port, out)) {
            error = "sentinel named a malformed address";
            return false;
        }
        return true;
    }

    /// ROLE's reply from `primary`, named by sentinel `s`: whether it says
    /// master (else `error`).
    [[nodiscard]] static bool read_role(const redisReply* r, const node_address& s, const node_address& primary,
                                        std::string& error) {
        if (r->type == REDIS_REPLY_ERROR) {
            error = primary.host + ":" + std::to_string(primary.port) + " answered " + std::string(r->str, r->len);
            return false;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING &&
            std::string_view(r->element[0]->str, r->element[0]->len) == "master")
            return true;
        error = "the primary sentinel " + s.host + ":" + std::to_string(s.port) + " names, " + primary.host + ":" +
                std::to_string(primary.port) + ", is not a master (yet)";
        return false;
    }

    /// Sentinel: `primary` (its ROLE checked) decides from now on.
    bool set_primary(const node_address& primary, std::string& error) {
        node* p = intern(primary);
        if (p == nullptr) {
            error = "more than " + std::to_string(max_nodes) + " nodes named";
            return false;
        }
        primary_.store(index_of(p), std::memory_order_release);
        return true;
    }

    void end_refresh(bool ok) noexcept {
        if (ok) stale_.store(false, std::memory_order_release);
        refreshing_.store(false, std::memory_order_release);
    }

    /// The node's "host:port" that owns `slot`, or empty.
    [[nodiscard]] std::string owner_name(std::uint16_t slot) const {
        const node* n = owner(slot);
        return n ? n->name : std::string{};
    }

    /// CLUSTER SLOTS's reply from a node of host `queried`: [[start, end,
    /// [host, port, id, ...], replicas...], ...]; the map replaced, or false
    /// (`error` set, the map unchanged).
    bool take_slots(const redisReply* r, const std::string& queried, std::string& error) {
        if (r->type == REDIS_REPLY_ERROR) {
            error = "CLUSTER SLOTS answered " + std::string(r->str, r->len);
            return false;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            error = "CLUSTER SLOTS answered no slot ranges";
            return false;
        }
        std::vector<std::uint16_t> next(cluster_slots, 0);  // off the stack: 32 KiB, once per refresh
        for (std::size_t i = 0; i < r->elements; ++i) {
            const redisReply* range = r->element[i];
            if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
                range->element[0]->type != REDIS_REPLY_INTEGER || range->element[1]->type != REDIS_REPLY_INTEGER ||
                range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2) {
                error = "CLUSTER SLOTS answered a malformed range";
                return false;
            }
            const long long from = range->element[0]->integer;
            const long long to = range->element[1]->integer;
            const redisReply* master = range->element[2];
            if (from < 0 || to < from || to >= static_cast<long long>(cluster_slots) ||
                master->element[0]->type != REDIS_REPLY_STRING || master->element[1]->type != REDIS_REPLY_INTEGER) {
                error = "CLUSTER SLOTS answered a malformed range";
                return false;
            }
            node_address a;
            a.host.assign(master->element[0]->str, master->element[0]->len);
            if (a.host.empty() || a.host == "?") a.host = queried;  // "the node you asked"
            a.port = static_cast<int>(master->element[1]->integer);
            if (a.port < 1 || a.port > 65535) {
                error = "CLUSTER SLOTS answered a malformed port";
                return false;
            }
            node* owner = intern(a);
            if (owner == nullptr) {
                error = "the cluster named more than " + std::to_string(max_nodes) + " nodes";
                return false;
            }
            const auto index = index_of(owner);
            for (long long s = from; s <= to; ++s) next[static_cast<std::size_t>(s)] = index;
        }
        for (std::size_t s = 0; s < cluster_slots; ++s) owner_[s].store(next[s], std::memory_order_release);
        return true;
    }

private:
    // Sentinel: SENTINEL get-master-addr-by-name from each sentinel in turn
    // (the last that answered first), then ROLE on the node it names, which
    // must say master (a sentinel may not have seen the failover yet).
    bool find_primary(time_point end, std::chrono::microseconds connect_timeout,
                      std::chrono::microseconds reply_timeout, std::string& error) {
        const auto n = sources();
        for (std::size_t i = 0; i < n; ++i) {
            const node_address& s = source_sentinel(i);
            node_address primary;
            if (!ask(s, {"SENTINEL", "get-master-addr-by-name", sentinel_master_}, end, connect_timeout,
                     reply_timeout, error,
                     [&](const redisReply* r) { return read_primary_address(r, s, primary, error); }))
                continue;
            if (!ask(primary, {"ROLE"}, end, connect_timeout, reply_timeout, error,
                     [&](const redisReply* r) { return read_role(r, s, primary, error); }))
                continue;
            if (!set_primary(primary, error)) return false;
            answered_by(i);
            return true;
        }
        return false;
    }

    // One command on a fresh connection, its reply given to `take`.
    template <class Take>
    static bool ask(const node_address& a, std::vector<std::string> args, time_point end,
                    std::chrono::microseconds connect_timeout, std::chrono::microseconds reply_timeout,
                    std::string& error, Take take) {
        const auto now = steady_clock{}.now();
        if (end <= now) {
            error = "no time left to find the primary";
            return false;
        }
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(end - now);
        connection c;
        if (!c.connect(a.host, a.port, std::min(left, connect_timeout), reply_timeout, error)) return false;
        std::vector<const char*> argv;
        std::vector<std::size_t> lens;
        for (const auto& s : args) {
            argv.push_back(s.data());
            lens.push_back(s.size());
        }
        reply_ptr r = c.command(static_cast<int>(argv.size()), argv.data(), lens.data(),
                                std::min(end, steady_clock{}.now() + reply_timeout), error);
        if (!r) return false;
        return take(r.get());
    }

    std::uint16_t index_of(const node* n) const noexcept {
        const auto c = count_.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < c; ++i)
            if (nodes_[i].get() == n) return static_cast<std::uint16_t>(i + 1);
        return 0;
    }

    std::vector<node_address> seeds_;
    int connections_;
    std::string sentinel_master_;                                 // empty: a cluster
    std::atomic<std::uint16_t> primary_{0};                       // Sentinel: the primary's index + 1
    std::array<std::atomic<std::uint16_t>, cluster_slots> owner_;  // node index + 1; 0: unknown
    std::unique_ptr<std::unique_ptr<node>[]> nodes_;
    std::atomic<std::size_t> count_{0};
    mutable std::atomic<std::size_t> next_any_{0};
    std::mutex add_mutex_;
    std::atomic<bool> stale_{true};
    std::atomic<bool> refreshing_{false};
    std::atomic<std::int64_t> last_refresh_ns_{INT64_MIN / 2};
    std::size_t refresh_from_ = 0;  // written by the one refresher
};

}  // namespace resil::redis::detail
