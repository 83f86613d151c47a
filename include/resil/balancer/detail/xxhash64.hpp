// resil/balancer/detail/xxhash64.hpp — XXH64 (xxHash, 64-bit, by Yann
// Collet), the hash Envoy's and gRPC's ring_hash and Envoy's Maglev use for
// host names and request keys: the same bytes and seed give the same value
// as the reference XXH64 (checked against libxxhash in tests). Also a
// 64-bit mixer for values that are already hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace resil::detail {

inline constexpr std::uint64_t xxh_prime1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t xxh_prime2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t xxh_prime3 = 0x165667B19E3779F9ULL;
inline constexpr std::uint64_t xxh_prime4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr std::uint64_t xxh_prime5 = 0x27D4EB2F165667C5ULL;

[[nodiscard]] constexpr std::uint64_t rotl64(std::uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

// Little-endian reads, whatever the host's order (the value must not depend on it).
[[nodiscard]] inline std::uint64_t read_le64(const unsigned char* p) noexcept {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
[[nodiscard]] inline std::uint32_t read_le32(const unsigned char* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

[[nodiscard]] constexpr std::uint64_t xxh64_round(std::uint64_t acc, std::uint64_t input) noexcept {
    acc += input * xxh_prime2;
    acc = rotl64(acc, 31);
    return acc * xxh_prime1;
}
[[nodiscard]] constexpr std::uint64_t xxh64_merge(std::uint64_t acc, std::uint64_t v) noexcept {
    acc ^= xxh64_round(0, v);
    return acc * xxh_prime1 + xxh_prime4;
}
/// XXH64's final avalanche: a bijective 64-bit mixer.
[[nodiscard]] constexpr std::uint64_t xxh64_avalanche(std::uint64_t h) noexcept {
    h ^= h >> 33;
    h *= xxh_prime2;
    h ^= h >> 29;
    h *= xxh_prime3;
    h ^= h >> 32;
    return h;
}

/// XXH64 of `len` bytes at `data` with `seed`.
[[nodiscard]] inline std::uint64_t xxhash64(const void* data, std::size_t len, std::uint64_t seed = 0) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    const auto* const end = p + len;
    std::uint64_t h;
    if (len >= 32) {
        std::uint64_t v1 = seed + xxh_prime1 + xxh_prime2, v2 = seed + xxh_prime2, v3 = seed, v4 = seed - xxh_prime1;
        const auto* const limit = end - 32;
        do {
            v1 = xxh64_round(v1, read_le64(p));
            v2 = xxh64_round(v2, read_le64(p + 8));
            v3 = xxh64_round(v3, read_le64(p + 16));
            v4 = xxh64_round(v4, read_le64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = xxh64_merge(h, v1);
        h = xxh64_merge(h, v2);
        h = xxh64_merge(h, v3);
        h = xxh64_merge(h, v4);
    } else {
        h = seed + xxh_prime5;
    }
    h += static_cast<std::uint64_t>(len);
    while (end - p >= 8) {
        h ^= xxh64_round(0, read_le64(p));
        h = rotl64(h, 27) * xxh_prime1 + xxh_prime4;
        p += 8;
    }
    if (end - p >= 4) {
        h ^= static_cast<std::uint64_t>(read_le32(p)) * xxh_prime1;
        h = rotl64(h, 23) * xxh_prime2 + xxh_prime3;
        p += 4;
    }
    while (p < end) {
        h ^= static_cast<std::uint64_t>(*p) * xxh_prime5;
        h = rotl64(h, 11) * xxh_prime1;
        ++p;
    }
    return xxh64_avalanche(h);
}

/// XXH64 of a string's bytes.
[[nodiscard]] inline std::uint64_t xxhash64(std::string_view s, std::uint64_t seed = 0) noexcept {
    return xxhash64(s.data(), s.size(), seed);
}

/// XXH64 of an integer's 8 bytes, little-endian (the same on every host).
[[nodiscard]] inline std::uint64_t xxhash64_of(std::uint64_t v, std::uint64_t seed = 0) noexcept {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));
    return xxhash64(bytes, sizeof bytes, seed);
}

}  // namespace resil::detail
