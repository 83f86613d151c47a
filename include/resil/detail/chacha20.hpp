// resil/detail/chacha20.hpp — the ChaCha20 block function of RFC 8439 §2.3
// (20 rounds, 32-bit counter, 96-bit nonce), the keystream source behind
// resil's CSPRNG (detail/csprng.hpp). No OS calls, no state: pure functions.
//
//   resil::detail::chacha20::key_words key = ...;
//   std::uint8_t out[8 * 64];
//   resil::detail::chacha20::blocks<8>(key, 0, {}, out);   // blocks 0..7
//
// `blocks<N>` computes four blocks side by side in SIMD lanes (GCC/Clang
// vector extensions: SSE2 or NEON, no target flags needed) and writes exactly
// what N calls of the scalar `block` would; the tests hold both to that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

// The round helpers are forced inline: an unoptimised (debug or sanitizer)
// build would otherwise pay a call per addition, ~20x the optimised cost.
#if defined(__GNUC__) || defined(__clang__)
#define RESIL_DETAIL_CHACHA20_INLINE [[gnu::always_inline]] inline
#else
#define RESIL_DETAIL_CHACHA20_INLINE inline
#endif

namespace resil::detail::chacha20 {

inline constexpr std::size_t key_size = 32;
inline constexpr std::size_t nonce_size = 12;
inline constexpr std::size_t block_size = 64;
inline constexpr int double_rounds = 10;  // ChaCha20: 20 rounds, never fewer

/// The 256-bit key as eight little-endian words, the 96-bit nonce as three.
using key_words = std::array<std::uint32_t, 8>;
using nonce_words = std::array<std::uint32_t, 3>;

/// "expand 32-byte k"
inline constexpr std::array<std::uint32_t, 4> sigma = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};

/// Overwrites `size` bytes with zeros in a way the optimizer may not drop as a
/// dead store: key material must not linger in freed or reused memory.
inline void secure_zero(void* p, std::size_t size) noexcept {
    std::memset(p, 0, size);
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" : : "r"(p) : "memory");
#else
    auto* volatile bytes = static_cast<volatile unsigned char*>(p);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = 0;
#endif
}

[[nodiscard]] RESIL_DETAIL_CHACHA20_INLINE std::uint32_t load_le32(const std::uint8_t* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

RESIL_DETAIL_CHACHA20_INLINE void store_le32(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
}

/// Reads a 32-byte key in RFC 8439 byte order.
[[nodiscard]] inline key_words load_key(const std::uint8_t* bytes) noexcept {
    key_words key{};
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = load_le32(bytes + 4 * i);
    return key;
}

/// Reads a 12-byte nonce in RFC 8439 byte order.
[[nodiscard]] inline nonce_words load_nonce(const std::uint8_t* bytes) noexcept {
    return {load_le32(bytes), load_le32(bytes + 4), load_le32(bytes + 8)};
}

// One template serves the scalar words of `block` and the vector lanes of
// `blocks`: both spell the same +, ^, << and >>.
template <class Word>
RESIL_DETAIL_CHACHA20_INLINE Word rotl(Word v, int n) noexcept {
    return (v << n) | (v >> (32 - n));
}

template <class Word>
RESIL_DETAIL_CHACHA20_INLINE void quarter_round(Word& a, Word& b, Word& c, Word& d) noexcept {
    a += b; d ^= a; d = rotl(d, 16);
    c += d; b ^= c; b = rotl(b, 12);
    a += b; d ^= a; d = rotl(d, 8);
    c += d; b ^= c; b = rotl(b, 7);
}

// Plain arrays rather than std::array here: unoptimised builds call
// std::array::operator[] for every access.
template <class Word>
RESIL_DETAIL_CHACHA20_INLINE void permute(Word (&x)[16]) noexcept {
    for (int i = 0; i < double_rounds; ++i) {
        quarter_round(x[0], x[4], x[8], x[12]);  // columns
        quarter_round(x[1], x[5], x[9], x[13]);
        quarter_round(x[2], x[6], x[10], x[14]);
        quarter_round(x[3], x[7], x[11], x[15]);
        quarter_round(x[0], x[5], x[10], x[15]);  // diagonals
        quarter_round(x[1], x[6], x[11], x[12]);
        quarter_round(x[2], x[7], x[8], x[13]);
        quarter_round(x[3], x[4], x[9], x[14]);
    }
}

/// The RFC 8439 §2.3 block function: writes the 64-byte block number
/// `counter` of the keystream for (`key`, `nonce`) to `out`.
inline void block(const key_words& key, std::uint32_t counter, const nonce_words& nonce, std::uint8_t* out) noexcept {
    std::uint32_t input[16] = {sigma[0], sigma[1], sigma[2], sigma[3], key[0], key[1], key[2],  key[3],
                               key[4],   key[5],   key[6],   key[7],   counter, nonce[0], nonce[1], nonce[2]};
    std::uint32_t x[16];
    std::memcpy(x, input, sizeof x);
    permute(x);
    for (std::size_t i = 0; i < 16; ++i) store_le32(out + 4 * i, x[i] + input[i]);
    secure_zero(input, sizeof input);
    secure_zero(x, sizeof x);
}

#if defined(__GNUC__) || defined(__clang__)
/// Four 32-bit lanes: one SSE2/NEON register; lane j carries block j of a group.
using lanes4 = std::uint32_t __attribute__((vector_size(16)));

/// Writes `Count` consecutive blocks, numbers `counter` .. `counter + Count - 1`
/// (the 32-bit counter wraps as in RFC 8439), to `out` (`Count * 64` bytes).
template <std::size_t Count>
inline void blocks(const key_words& key, std::uint32_t counter, const nonce_words& nonce, std::uint8_t* out) noexcept {
    static_assert(Count > 0 && Count % 4 == 0, "chacha20::blocks computes groups of four blocks");
    lanes4 input[16];
    for (std::size_t i = 0; i < 4; ++i) input[i] = lanes4{sigma[i], sigma[i], sigma[i], sigma[i]};
    for (std::size_t i = 0; i < 8; ++i) input[4 + i] = lanes4{key[i], key[i], key[i], key[i]};
    for (std::size_t i = 0; i < 3; ++i) input[13 + i] = lanes4{nonce[i], nonce[i], nonce[i], nonce[i]};
    lanes4 x[16];
    for (std::size_t group = 0; group < Count / 4; ++group) {
        const auto first = static_cast<std::uint32_t>(counter + 4 * group);
        input[12] = lanes4{first, first + 1, first + 2, first + 3};
        std::memcpy(x, input, sizeof x);
        permute(x);
        for (std::size_t i = 0; i < 16; ++i) x[i] += input[i];
        std::uint8_t* group_out = out + group * 4 * block_size;
        for (std::size_t lane = 0; lane < 4; ++lane)
            for (std::size_t i = 0; i < 16; ++i) store_le32(group_out + lane * block_size + 4 * i, x[i][lane]);
    }
    secure_zero(input, sizeof input);
    secure_zero(x, sizeof x);
}
#else
/// Writes `Count` consecutive blocks, numbers `counter` .. `counter + Count - 1`
/// (the 32-bit counter wraps as in RFC 8439), to `out` (`Count * 64` bytes).
template <std::size_t Count>
inline void blocks(const key_words& key, std::uint32_t counter, const nonce_words& nonce, std::uint8_t* out) noexcept {
    static_assert(Count > 0 && Count % 4 == 0, "chacha20::blocks computes groups of four blocks");
    for (std::size_t i = 0; i < Count; ++i)
        block(key, static_cast<std::uint32_t>(counter + i), nonce, out + i * block_size);
}
#endif

}  // namespace resil::detail::chacha20

#undef RESIL_DETAIL_CHACHA20_INLINE
