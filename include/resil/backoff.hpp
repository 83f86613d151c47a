// resil/backoff.hpp — how long to wait before retry n: capped exponential
// backoff with jitter. Pure math: no clock inside, the random source is
// passed in, and every computation saturates instead of overflowing.
//
//   resil::full_jitter policy{.base = 100ms, .cap = 1s};      // the default strategy
//   resil::jitter_engine rng{seed};
//   auto wait = policy.delay(1, {}, rng);                       // uniform in [0, 200 ms)
//
//   resil::backoff chosen = resil::equal_jitter{50ms, 2s};     // chosen at run time (options, config)
//   if (auto why = chosen.invalid_reason()) throw std::invalid_argument(std::string(*why));
//
// Retries are numbered 1, 2, 3, … and the ceiling before retry n is
// min(cap, base · multiplierⁿ): base 100 ms gives 200, 400, 800 ms. Jitter
// spreads clients that failed together, so their retries do not arrive together
// (full jitter: "Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
//
// Determinism: jitter turns engine bits into [0, 1) itself (unit_interval)
// rather than through <random>'s distributions, whose algorithms differ between
// standard libraries, so a seeded engine gives the same delays everywhere.
#pragma once

#include <bit>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <type_traits>

#include "clock.hpp"
#include "detail/saturate.hpp"

namespace resil {

// ---------------------------------------------------------------------------
// Random source

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

    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

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

// ---------------------------------------------------------------------------
// The ceiling

/// min(cap, base · multiplierʳᵉᵗʳʸ) — the longest wait before retry `retry`
/// (numbered from 1; retry 0 gives base). Never above `cap`, never negative,
/// at most 64 steps for any `retry` (UINT64_MAX included), no overflow:
///  - base or cap <= 0 gives zero; base >= cap gives cap;
///  - a multiplier that is NaN or <= 1 gives a constant `base` (no growth);
///  - an infinite or huge multiplier reaches `cap` at retry 1.
/// Computed with plain IEEE multiplications (no std::pow), so results are the
/// same on every platform and exact for a power-of-two multiplier.
[[nodiscard]] constexpr duration backoff_ceiling(duration base, duration cap, double multiplier,
                                                 std::uint64_t retry) noexcept {
    if (cap <= duration::zero() || base <= duration::zero()) return duration::zero();
    if (base >= cap) return cap;
    if (retry == 0 || !(multiplier > 1.0)) return base;
    const double base_ns = static_cast<double>(base.count());
    const double cap_ns = static_cast<double>(cap.count());
    // multiplierʳᵉᵗʳʸ by squaring, leaving as soon as it reaches cap/base.
    const double limit = cap_ns / base_ns;
    double factor = 1.0;
    double power = multiplier;
    for (std::uint64_t n = retry;;) {
        if (n & 1U) {
            factor *= power;
            if (!(factor < limit)) return cap;
        }
        n >>= 1U;
        if (n == 0) break;
        // Some bit of n is still set, so factor will grow by at least `power`.
        power *= power;
        if (!(power < limit)) return cap;
    }
    const double scaled = base_ns * factor;
    if (!(scaled < cap_ns)) return cap;
    const auto ns = static_cast<detail::ticks>(scaled);
    return ns < cap.count() ? duration{ns} : cap;
}

// ---------------------------------------------------------------------------
// Strategies. Each is an aggregate with documented defaults; `delay(retry,
// previous, rng)` returns the wait before retry `retry` (1, 2, …) given the
// previous delay (zero before the first retry). All are values: copy freely;
// delay() is const and does not allocate; the engine is the caller's.

/// No jitter: exactly the ceiling. Synchronised clients stay synchronised, so
/// prefer full_jitter unless a deterministic schedule is the point.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
struct exponential_backoff {
    duration base = std::chrono::milliseconds{100};
    duration cap = std::chrono::seconds{1};
    double multiplier = 2.0;

    /// min(cap, base · multiplierʳᵉᵗʳʸ).
    [[nodiscard]] constexpr duration ceiling(std::uint64_t retry) const noexcept {
        return backoff_ceiling(base, cap, multiplier, retry);
    }
    /// The ceiling; `previous` and `rng` are unused.
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration /*previous*/, URBG& /*rng*/) const noexcept {
        return ceiling(retry);
    }
    friend constexpr bool operator==(const exponential_backoff&, const exponential_backoff&) = default;
};

/// Full jitter, the default: uniform in [0, ceiling). On average half the
/// ceiling, and the widest spread of clients.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
struct full_jitter {
    duration base = std::chrono::milliseconds{100};
    duration cap = std::chrono::seconds{1};
    double multiplier = 2.0;

    [[nodiscard]] constexpr duration ceiling(std::uint64_t retry) const noexcept {
        return backoff_ceiling(base, cap, multiplier, retry);
    }
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration /*previous*/, URBG& rng) const noexcept {
        return detail::uniform_below(ceiling(retry), rng);
    }
    friend constexpr bool operator==(const full_jitter&, const full_jitter&) = default;
};

/// Equal jitter: ceiling/2 + uniform in [0, ceiling/2), i.e. [ceiling/2, ceiling).
/// Never waits less than half the ceiling, at the cost of less spread.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
struct equal_jitter {
    duration base = std::chrono::milliseconds{100};
    duration cap = std::chrono::seconds{1};
    double multiplier = 2.0;

    [[nodiscard]] constexpr duration ceiling(std::uint64_t retry) const noexcept {
        return backoff_ceiling(base, cap, multiplier, retry);
    }
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration /*previous*/, URBG& rng) const noexcept {
        const auto top = ceiling(retry);
        const auto half = top / 2;
        return half + detail::uniform_below(top - half, rng);
    }
    friend constexpr bool operator==(const equal_jitter&, const equal_jitter&) = default;
};

/// Decorrelated jitter (AWS): min(cap, uniform in [base, max(base, 3 · previous))).
/// Grows from the previous delay instead of the retry number; `previous` <= 0
/// (the first retry) counts as base, so the first delay is in [base, 3·base). The result is
/// always within [min(base, cap), cap]; zero if base or cap <= 0.
/// Defaults: base 100 ms, cap 1 s.
struct decorrelated_jitter {
    duration base = std::chrono::milliseconds{100};
    duration cap = std::chrono::seconds{1};

    /// The growth bound of the upper end: 3 · previous.
    static constexpr detail::ticks growth = 3;

    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t /*retry*/, duration previous, URBG& rng) const noexcept {
        if (cap <= duration::zero() || base <= duration::zero()) return duration::zero();
        if (base >= cap) return cap;
        const auto from = previous > duration::zero() ? previous : base;
        const duration tripled{detail::saturating_mul_nonnegative(from.count(), growth)};
        const auto upper = tripled > base ? tripled : base;
        const auto drawn = base + detail::uniform_below(upper - base, rng);
        return drawn < cap ? drawn : cap;
    }
    friend constexpr bool operator==(const decorrelated_jitter&, const decorrelated_jitter&) = default;
};

// ---------------------------------------------------------------------------
// Run-time choice

/// Which strategy a resil::backoff holds.
enum class backoff_kind : std::uint8_t { exponential, full_jitter, equal_jitter, decorrelated_jitter };

/// "exponential", "full_jitter", "equal_jitter", "decorrelated_jitter".
[[nodiscard]] constexpr std::string_view backoff_kind_name(backoff_kind kind) noexcept {
    switch (kind) {
        case backoff_kind::exponential: return "exponential";
        case backoff_kind::full_jitter: return "full_jitter";
        case backoff_kind::equal_jitter: return "equal_jitter";
        case backoff_kind::decorrelated_jitter: return "decorrelated_jitter";
    }
    return "unknown";
}

/// The kind named exactly as backoff_kind_name() spells it; empty otherwise.
[[nodiscard]] constexpr std::optional<backoff_kind> parse_backoff_kind(std::string_view name) noexcept {
    for (const auto kind : {backoff_kind::exponential, backoff_kind::full_jitter, backoff_kind::equal_jitter,
                            backoff_kind::decorrelated_jitter}) {
        if (backoff_kind_name(kind) == name) return kind;
    }
    return std::nullopt;
}

/// One of the strategies above, chosen at run time — the type of a
/// `backoff` option or a configuration entry. Implicitly constructible from
/// each strategy, so `.backoff = resil::full_jitter{100ms, 1s}` reads naturally.
/// Default: full_jitter{100 ms, 1 s}. A value type; delay() is const, does not
/// allocate and dispatches with a switch (no virtual call).
class backoff {
public:
    /// full_jitter{100 ms, 1 s, ×2}.
    constexpr backoff() noexcept : backoff(full_jitter{}) {}
    constexpr backoff(exponential_backoff s) noexcept  // NOLINT(google-explicit-constructor)
        : kind_(backoff_kind::exponential), base_(s.base), cap_(s.cap), multiplier_(s.multiplier) {}
    constexpr backoff(full_jitter s) noexcept  // NOLINT(google-explicit-constructor)
        : kind_(backoff_kind::full_jitter), base_(s.base), cap_(s.cap), multiplier_(s.multiplier) {}
    constexpr backoff(equal_jitter s) noexcept  // NOLINT(google-explicit-constructor)
        : kind_(backoff_kind::equal_jitter), base_(s.base), cap_(s.cap), multiplier_(s.multiplier) {}
    constexpr backoff(decorrelated_jitter s) noexcept  // NOLINT(google-explicit-constructor)
        : kind_(backoff_kind::decorrelated_jitter),
          base_(s.base),
          cap_(s.cap),
          multiplier_(static_cast<double>(decorrelated_jitter::growth)) {}

    [[nodiscard]] constexpr backoff_kind kind() const noexcept { return kind_; }
    [[nodiscard]] constexpr duration base() const noexcept { return base_; }
    [[nodiscard]] constexpr duration cap() const noexcept { return cap_; }
    /// The growth factor per retry; 3 for decorrelated_jitter (its fixed bound).
    [[nodiscard]] constexpr double multiplier() const noexcept { return multiplier_; }

    /// The wait before retry `retry` (1, 2, …) after a previous delay of
    /// `previous` (zero before the first retry). Always within [0, cap()].
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration previous, URBG& rng) const noexcept {
        switch (kind_) {
            case backoff_kind::exponential:
                return exponential_backoff{base_, cap_, multiplier_}.delay(retry, previous, rng);
            case backoff_kind::equal_jitter:
                return equal_jitter{base_, cap_, multiplier_}.delay(retry, previous, rng);
            case backoff_kind::decorrelated_jitter:
                return decorrelated_jitter{base_, cap_}.delay(retry, previous, rng);
            case backoff_kind::full_jitter:
                break;
        }
        return full_jitter{base_, cap_, multiplier_}.delay(retry, previous, rng);
    }

    /// Why this configuration is unusable (static text), or empty when fine:
    /// base must be positive, cap at least base, multiplier finite and >= 1.
    [[nodiscard]] constexpr std::optional<std::string_view> invalid_reason() const noexcept {
        if (base_ <= duration::zero()) return "backoff base must be positive";
        if (cap_ < base_) return "backoff cap must be at least the base";
        // Written so that NaN fails too.
        if (!(multiplier_ >= 1.0 && multiplier_ <= std::numeric_limits<double>::max())) {
            return "backoff multiplier must be finite and at least 1";
        }
        return std::nullopt;
    }

    friend constexpr bool operator==(const backoff&, const backoff&) = default;

private:
    backoff_kind kind_;
    duration base_;
    duration cap_;
    double multiplier_;
};

}  // namespace resil
