// resil/balancer/affinity.hpp — a call's affinity key: what the ring_hash,
// maglev and rendezvous policies (balancing_policy) send to the same endpoint
// while the set and its health stay the same (a user id, a tenant, a cache key).
//
//   resil::balancer lb{replicas, {.policy = resil::balancing_policy::maglev,
//                                 .affinity = {.load_bound_factor = 1.25}}};
//   auto lease = lb.pick(now, resil::affinity_key{user_id});      // one pick
//   resil::tried_endpoints tried{resil::affinity_key{"tenant-7"}}; // a pipeline's call:
//   resil::call_endpoint(lb, ctx, tried, send);                    //   its retries go to the key's next candidate
//
// Keys are hashed with XXH64 (seed 0), as Envoy and gRPC hash a request's
// header value: a string's bytes, an integer's 8 bytes little-endian (so an
// id and its neighbours land far apart, unlike std::hash, the identity for
// integers in libstdc++). A key already hashed by the caller is taken as it
// is (from_hash).
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

#include "detail/xxhash64.hpp"

namespace resil {

/// A call's affinity key, kept as its 64-bit hash. A default-constructed
/// key is none: a hash policy then draws a random hash for the pick (as gRPC
/// does for a request without its hash header). A plain value.
class affinity_key {
public:
    /// No key.
    constexpr affinity_key() noexcept = default;
    /// XXH64 of the string's bytes, seed 0 (the empty string is a key too).
    explicit affinity_key(std::string_view key) noexcept : hash_(detail::xxhash64(key)), set_(true) {}
    /// The same, from a C string.
    explicit affinity_key(const char* key) noexcept : affinity_key(std::string_view(key)) {}
    /// XXH64 of the integer's 8 bytes, little-endian, seed 0 (negative values
    /// as their two's complement).
    template <std::integral I>
        requires(!std::same_as<I, bool> && !std::same_as<I, char>)
    explicit affinity_key(I id) noexcept
        : hash_(detail::xxhash64_of(static_cast<std::uint64_t>(id))), set_(true) {}
    /// A key whose hash the caller made (a good 64-bit hash: its high bits
    /// choose the ring point, its value modulo the table size the Maglev entry).
    [[nodiscard]] static constexpr affinity_key from_hash(std::uint64_t hash) noexcept {
        affinity_key k;
        k.hash_ = hash;
        k.set_ = true;
        return k;
    }

    /// True when it holds a key.
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return set_; }
    /// The key's hash (0 for none).
    [[nodiscard]] constexpr std::uint64_t hash() const noexcept { return hash_; }

    /// Same key (same hash), or both none.
    friend constexpr bool operator==(const affinity_key&, const affinity_key&) = default;

private:
    std::uint64_t hash_ = 0;
    bool set_ = false;
};

}  // namespace resil
