// resil/jitter.hpp — the random source of resil's backoff: a small seeded
// engine (jitter_engine) and the conversion of its bits to [0, 1) and to a
// duration below a span. No clock, no global state: the engine is the caller's.
//
//   resil::jitter_engine rng{42};                 // equal seeds, equal sequences
//   double u = resil::unit_interval(rng);         // in [0, 1), 53 random bits
//
// unit_interval is our own arithmetic rather than <random>'s distributions:
// their algorithms differ between standard libraries, and seeded golden delays
// must be identical on libstdc++ and libc++.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <limits>
#include <random>

#include "clock.hpp"
#include "detail/saturate.hpp"

namespace resil {

namespace detail {
/// SplitMix64 (Steele, Lea, Flood 2014), used to expand one 64-bit seed into
/// jitter_engine's state. A UniformRandomBitGenerator in its own right.
class splitmix64 {
public:
    using result_type = std::uint64_t;
    constexpr explicit splitmix64(std::uint64_t state) noexcept : state_(state) {}
    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }
    constexpr result_type operator()() noexcept {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15U);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9U;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebU;
        return z ^ (z >> 31);
    }

private:
    std::uint64_t state_;
};
}  // namespace detail

/// The engine resil uses for jitter: xoshiro256** 1.0 (Blackman and Vigna),
/// seeded through SplitMix64. Small (32 bytes), fast, copyable, and a standard
/// UniformRandomBitGenerator with 64-bit results.
///
/// NOT cryptographic: its output is predictable from a few samples. Jitter
/// needs spread, not secrecy; never use it for keys, tokens or idempotency keys.
/// One instance per thread (it is not thread-safe); seed each differently.
class jitter_engine {
public:
    /// 64-bit results.
    using result_type = std::uint64_t;

    /// The seed of a default-constructed engine.
    static constexpr std::uint64_t default_seed = 0x5eed5eed5eed5eedULL;

    constexpr jitter_engine() noexcept : jitter_engine(default_seed) {}
    /// Any 64-bit value is a good seed, 0 included; equal seeds give equal sequences.
    constexpr explicit jitter_engine(std::uint64_t seed_value) noexcept { seed(seed_value); }

    /// Restarts the sequence as if constructed with `seed_value`.
    constexpr void seed(std::uint64_t seed_value) noexcept {
        detail::splitmix64 expand{seed_value};
        // SplitMix64 is a bijection of its counter, so four consecutive
        // outputs are never all zero, the one state xoshiro cannot leave.
        for (auto& word : state_) word = expand();
    }

    /// The smallest result: 0.
    static constexpr result_type min() noexcept { return 0; }
    /// The largest result: 2^64 - 1.
    static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

    /// The next 64 random bits.
    constexpr result_type operator()() noexcept {
        const std::uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = std::rotl(state_[3], 45);
        return result;
    }

    /// Equal when the states are: they will produce the same sequence.
    friend constexpr bool operator==(const jitter_engine&, const jitter_engine&) = default;

private:
    std::uint64_t state_[4] = {};
};

static_assert(std::uniform_random_bit_generator<jitter_engine>);
static_assert(std::uniform_random_bit_generator<detail::splitmix64>);

/// A double in [0, 1) with 53 random bits, built from the engine's own output
/// (never 1.0, even for an engine returning max() every time). The result for
/// a given engine state is the same on every standard library.
///
/// Engines with a power-of-two range are read exactly (one call of a 64-bit
/// engine, two of a 32-bit one); other ranges (minstd_rand) are combined in
/// floating point with enough calls to cover 53 bits.
template <std::uniform_random_bit_generator URBG>
[[nodiscard]] constexpr double unit_interval(URBG& rng) noexcept {
    constexpr auto lowest = static_cast<std::uint64_t>(URBG::min());
    constexpr std::uint64_t range = static_cast<std::uint64_t>(URBG::max()) - lowest;  // outputs − 1
    constexpr double ulp = 0x1.0p-53;
    if constexpr ((range & (range + 1)) == 0) {
        constexpr int bits = std::bit_width(range);
        if constexpr (bits >= 53) {
            const std::uint64_t x = static_cast<std::uint64_t>(rng()) - lowest;
            return static_cast<double>(x >> (bits - 53)) * ulp;
        } else {
            // Concatenate calls; bits pushed past bit 63 are dropped, the rest
            // are still independent random bits.
            std::uint64_t acc = 0;
            int have = 0;
            while (have < 53) {
                acc = (acc << bits) | (static_cast<std::uint64_t>(rng()) - lowest);
                have += bits;
            }
            const int kept = have < 64 ? have : 64;
            return static_cast<double>(acc >> (kept - 53)) * ulp;
        }
    } else {
        constexpr double radix = static_cast<double>(range) + 1.0;
        constexpr int calls = [] {
            int n = 0;
            for (double span = 1.0; span < 0x1.0p53; span *= radix) ++n;
            return n;
        }();
        double sum = 0.0;
        double scale = 1.0;
        for (int i = 0; i < calls; ++i) {
            sum += static_cast<double>(static_cast<std::uint64_t>(rng()) - lowest) * scale;
            scale *= radix;
        }
        const double u = sum / scale;
        return u < 1.0 ? u : 1.0 - ulp;  // rounding may reach 1.0; the interval is half-open
    }
}

namespace detail {
/// floor(u · span) for u in [0, 1): a duration in [0, span) (zero when span <= 0).
[[nodiscard]] constexpr duration scale_below(duration span, double u) noexcept {
    if (span <= duration::zero()) return duration::zero();
    const double scaled = u * static_cast<double>(span.count());
    // span as a double may round up past span itself; keep the interval half-open.
    if (!(scaled < static_cast<double>(span.count()))) return span - duration{1};
    const auto ticks_below = static_cast<ticks>(scaled);
    return duration{ticks_below < span.count() ? ticks_below : span.count() - 1};
}

template <class URBG>
[[nodiscard]] constexpr duration uniform_below(duration span, URBG& rng) noexcept {
    if (span <= duration::zero()) return duration::zero();
    return scale_below(span, unit_interval(rng));
}
}  // namespace detail

}  // namespace resil
