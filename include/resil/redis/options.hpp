// resil/redis/options.hpp — the options of resil::redis::rate_limiter: the
// quota (rate, burst), where it lives (server, key), how long a round trip
// may take, what happens when Redis cannot answer, and optional leasing.
//
//   resil::redis::rate_limiter_options o{
//       .rate = 50, .burst = 100,
//       .host = "10.0.0.7", .port = 6379,
//       .key = "payments-api",                  // stored as "resil:rl:{payments-api}"
//       .on_failure = resil::redis::failure_policy::fail_open,
//       .expected_pods = 10,                    // fail open at 5/s, burst 10 per pod
//   };
//
// Every field is checked by validate(), the only copy of the ranges; the
// limiter's constructor throws std::invalid_argument with its message.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../enum_name.hpp"
#include "../detail/gcra.hpp"
#include "../validation.hpp"
#include "detail/node_list.hpp"

namespace resil::redis {

/// What a decision does when Redis cannot make it (unreachable, slower than
/// the reply timeout or the caller's deadline, or answering an error).
enum class failure_policy : std::uint8_t {
    /// Decide locally, through a token bucket of rate / expected_pods and
    /// burst / expected_pods: an outage of Redis keeps the fleet near its
    /// quota instead of lifting every limit.
    fail_open,
    /// Reject with reason::quota_unavailable (not rate_limited: nothing says
    /// the quota is spent).
    fail_closed,
};

/// The policy's name: "fail_open" or "fail_closed".
[[nodiscard]] constexpr enum_name to_string(failure_policy p) noexcept {
    return p == failure_policy::fail_open ? "fail_open" : "fail_closed";
}

/// Options of a Redis rate limiter: the quota (rate, burst, key), the server
/// and its timeouts, connections, the failure policy and the fail-open bucket,
/// leasing. The defaults are the documented ones; `key` is required.
struct rate_limiter_options {
    /// Permits added per second to the shared quota, in [0.001, 1e6]. Default 50.
    double rate = 50.0;
    /// Permits the quota holds when full (the largest weight ever granted),
    /// in [1, 1e12], with burst / rate at most 1e9 s. Default 100.
    std::int64_t burst = 100;

    /// The Redis server. A numeric address avoids a DNS lookup, which no
    /// timeout of hiredis bounds. Default 127.0.0.1:6379.
    std::string host = "127.0.0.1";
    /// The Redis server's port. Default 6379.
    int port = 6379;
    /// A Redis Cluster instead of one server (host and port are then not
    /// used): some of its nodes, "host:port" separated by commas (e.g.
    /// "10.0.0.7:7000, 10.0.0.8:7000"), at most max_cluster_seeds. The
    /// slot map is read from any of them (CLUSTER SLOTS); MOVED and ASK are
    /// followed. Empty (the default): one server.
    std::string cluster_nodes{};
    /// A primary watched by Sentinel instead of one server (host and port
    /// are then not used): the sentinels, "host:port" separated by commas,
    /// at most max_cluster_seeds. The primary is the one they name
    /// (SENTINEL get-master-addr-by-name sentinel_master) whose ROLE says
    /// master; found again after a lost connection or a READONLY reply.
    /// Empty (the default): no Sentinel. Not with cluster_nodes.
    std::string sentinels{};
    /// The name the sentinels monitor the primary under (e.g. "mymaster"):
    /// required with sentinels, 1 to max_key_length printable ASCII
    /// characters without spaces.
    std::string sentinel_master{};
    /// Redirections (MOVED, ASK) one decision follows before it counts as a
    /// failure of Redis; in [0, 16]. Default 5 (as hiredis-cluster).
    int max_redirections = 5;
    /// The quota's name: 1 to max_key_length printable ASCII characters
    /// without spaces, '{' or '}'. Every limiter naming the same key (in any
    /// process) shares one quota. Required.
    std::string key{};
    /// Put in front of the key; the key itself goes in braces, a Redis
    /// Cluster hash tag: "<prefix>{<key>}". Same characters as key, may be empty.
    std::string key_prefix = "resil:rl:";

    /// Bound of one TCP connect, in [1 ms, 60 s], also clamped to what is
    /// left of the caller's deadline. Default 50 ms.
    std::chrono::milliseconds connect_timeout{50};
    /// Bound of one reply (each read and write of the socket), in [1 ms,
    /// 60 s], also clamped to the caller's deadline. Default 20 ms.
    std::chrono::milliseconds reply_timeout{20};
    /// Connections to Redis, each used by one thread at a time; in [1, 256].
    /// Default 8.
    int connections = 8;
    /// After a failure, Redis is not asked again (decisions go straight to
    /// the failure policy) for a backoff that doubles from reconnect_backoff
    /// up to reconnect_backoff_max, with jitter; one thread then probes.
    /// Each in [1 ms, 1 min], min ≤ max. Defaults 50 ms and 2 s.
    std::chrono::milliseconds reconnect_backoff{50};
    /// The longest backoff before Redis is asked again (see reconnect_backoff).
    /// Default 2 s.
    std::chrono::milliseconds reconnect_backoff_max{2000};

    /// What a decision Redis cannot make comes to: fail_open (a local bucket of
    /// rate / expected_pods) or fail_closed (refused). Default fail_open.
    failure_policy on_failure = failure_policy::fail_open;
    /// Pods sharing the quota, for the fail-open bucket (rate / pods, burst /
    /// pods, at least 1); in [1, 100000]. Default 1.
    int expected_pods = 1;

    /// Leasing: take up to `lease` permits per round trip and spend them in
    /// this process; 0 or 1 turn it off. In [0, 1000000], at most burst.
    /// Leased permits unspent for `lease_ttl` are dropped (never returned:
    /// errs on the side of the limit). Admissions may run ahead of the
    /// shared quota by at most `lease` − 1 per limiter object.
    std::int64_t lease = 0;
    std::chrono::milliseconds lease_ttl{1000};  ///< in [1 ms, 1 h]

    /// In a pipeline only: how long a call may wait for its permit (never
    /// past the call's deadline), in [0, 24 h]. Default zero.
    std::chrono::milliseconds max_wait{0};

    ///@{
    /// The bounds validate() checks, each named after the field it bounds
    /// (min_X and max_X are the smallest and largest `X` accepted);
    /// max_refill_seconds bounds burst / rate, max_backoff both reconnect
    /// backoffs.
    static constexpr double min_rate = 1e-3;
    static constexpr double max_rate = 1e6;
    static constexpr std::int64_t min_burst = 1;
    static constexpr std::int64_t max_burst = 1'000'000'000'000;
    static constexpr double max_refill_seconds = resil::detail::gcra::max_refill_seconds;
    static constexpr std::size_t max_key_length = 200;
    static constexpr std::chrono::milliseconds min_timeout{1};
    static constexpr std::chrono::milliseconds max_timeout{60'000};
    static constexpr int max_connections = 256;
    static constexpr std::chrono::milliseconds max_backoff{60'000};
    static constexpr int max_pods = 100'000;
    static constexpr std::int64_t max_lease = 1'000'000;
    static constexpr std::chrono::milliseconds max_lease_ttl{3'600'000};
    static constexpr std::chrono::milliseconds max_max_wait{86'400'000};
    static constexpr std::size_t max_cluster_seeds = 64;
    static constexpr int max_max_redirections = 16;
    ///@}

    /// The first field outside its range, in the house form
    /// ("`rate` must be in [0.001, 1e6], got 0").
    [[nodiscard]] validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const rate_limiter_options&, const rate_limiter_options&) = default;
};

namespace detail {

/// Printable ASCII without space, '{' or '}' (those would move the hash tag).
[[nodiscard]] constexpr bool valid_key_char(char c) noexcept {
    return c > ' ' && c < 0x7f && c != '{' && c != '}';
}

[[nodiscard]] constexpr bool valid_key_text(std::string_view s, bool may_be_empty) noexcept {
    if (s.empty()) return may_be_empty;
    if (s.size() > rate_limiter_options::max_key_length) return false;
    for (const char c : s)
        if (!valid_key_char(c)) return false;
    return true;
}

[[nodiscard]] inline validation_result bad_key(std::string_view field, std::string_view value, bool may_be_empty) {
    std::string shown;
    for (const char c : value.substr(0, 64)) {
        if (c >= ' ' && c < 0x7f) {
            shown += c;
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            shown += hex;
        }
    }
    if (value.size() > 64) shown += "...";
    return invalid_option{std::string(field),
                          resil::detail::concat({may_be_empty ? "must be up to " : "must be 1 to ",
                                                 std::to_string(rate_limiter_options::max_key_length),
                                                 " printable ASCII characters without spaces, '{' or '}', got \"",
                                                 shown, "\" (", std::to_string(value.size()), " characters)"})};
}

}  // namespace detail

inline validation_result rate_limiter_options::validate() const {
    using resil::detail::check_in_range;
    using resil::detail::check_that;
    if (auto bad = check_in_range("rate", rate, min_rate, max_rate)) return bad;
    if (auto bad = check_in_range("burst", burst, min_burst, max_burst)) return bad;
    if (!resil::detail::gcra::refills_in_time(rate, burst))
        return check_that(false, "burst", "at most rate × 1e9 s (the time to refill an empty quota)", burst);
    if (host.empty() || host.size() > 255 || host.find('\0') != std::string::npos)
        return invalid_option{"host", resil::detail::concat({"must be a host name or address of 1 to 255 characters, got \"",
                                                             std::string_view(host).substr(0, 64), "\" (",
                                                             std::to_string(host.size()), " characters)"})};
    if (auto bad = check_in_range("port", port, 1, 65535)) return bad;
    if (std::vector<detail::node_address> nodes;
        !cluster_nodes.empty() && !detail::parse_node_list(cluster_nodes, max_cluster_seeds, nodes))
        return invalid_option{
            "cluster_nodes",
            resil::detail::concat({"must be empty or 1 to ", std::to_string(max_cluster_seeds),
                                   " host:port separated by commas (port in [1, 65535]), got \"",
                                   std::string_view(cluster_nodes).substr(0, 64),
                                   cluster_nodes.size() > 64 ? "...\"" : "\""})};
    if (std::vector<detail::node_address> nodes;
        !sentinels.empty() && !detail::parse_node_list(sentinels, max_cluster_seeds, nodes))
        return invalid_option{
            "sentinels",
            resil::detail::concat({"must be empty or 1 to ", std::to_string(max_cluster_seeds),
                                   " host:port separated by commas (port in [1, 65535]), got \"",
                                   std::string_view(sentinels).substr(0, 64), sentinels.size() > 64 ? "...\"" : "\""})};
    if (!sentinels.empty() && !cluster_nodes.empty())
        return invalid_option{"sentinels", resil::detail::concat({"must be empty when cluster_nodes is set (a cluster "
                                                                  "finds its primaries itself), got \"",
                                                                  std::string_view(sentinels).substr(0, 64), "\""})};
    if (!sentinels.empty() && !detail::valid_key_text(sentinel_master, false))
        return detail::bad_key("sentinel_master", sentinel_master, false);
    if (sentinels.empty() && !sentinel_master.empty())
        return invalid_option{"sentinel_master",
                              resil::detail::concat({"must be empty when sentinels is, got \"",
                                                     std::string_view(sentinel_master).substr(0, 64), "\""})};
    if (auto bad = check_in_range("max_redirections", max_redirections, 0, max_max_redirections)) return bad;
    if (!detail::valid_key_text(key, false)) return detail::bad_key("key", key, false);
    if (!detail::valid_key_text(key_prefix, true)) return detail::bad_key("key_prefix", key_prefix, true);
    if (auto bad = check_in_range("connect_timeout", connect_timeout, min_timeout, max_timeout)) return bad;
    if (auto bad = check_in_range("reply_timeout", reply_timeout, min_timeout, max_timeout)) return bad;
    if (auto bad = check_in_range("connections", connections, 1, max_connections)) return bad;
    if (auto bad = check_in_range("reconnect_backoff", reconnect_backoff, min_timeout, max_backoff)) return bad;
    if (auto bad = check_in_range("reconnect_backoff_max", reconnect_backoff_max, reconnect_backoff, max_backoff))
        return bad;
    if (auto bad = check_in_range("expected_pods", expected_pods, 1, max_pods)) return bad;
    if (auto bad = check_in_range("lease", lease, std::int64_t{0}, max_lease)) return bad;
    if (lease > burst)
        return check_that(false, "lease", {"at most burst (", resil::detail::format_option_value(burst), ")"}, lease);
    if (auto bad = check_in_range("lease_ttl", lease_ttl, min_timeout, max_lease_ttl)) return bad;
    return check_in_range("max_wait", max_wait, std::chrono::milliseconds{0}, max_max_wait);
}

}  // namespace resil::redis
