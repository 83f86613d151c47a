// resil/detail/gcra.hpp — the pure arithmetic of resil's token bucket: the
// Generic Cell Rate Algorithm (GCRA) on one integer, with no clock inside.
//
// GCRA keeps a single number per bucket, the theoretical arrival time (TAT):
// the instant at which the bucket would be full again. n tokens are granted
// at `now` when max(TAT, now) + n·T − now ≤ τ, where T is the time one token
// takes to refill and τ = B·T the burst tolerance; granting sets TAT to
// max(TAT, now) + n·T and a rejection changes nothing. It is exactly a token
// bucket of rate 1/T and capacity B that starts full, in one word.
//
// Units. T = 1e9 / rate ns is rarely a whole number of nanoseconds, and
// rounding it would make a 6e8/s bucket run at 5e8/s. So time is counted in
// "units" chosen so that one token is exactly K = ⌈1e9 / rate⌉ units: a unit
// is at most 1 ns, and nanoseconds since the bucket's origin convert to units
// by one fixed-point multiply, units = ⌊ns · f⌋ with f = rate·K / 1e9 in
// [1, 2) held in Q32. That conversion is a pure function of the clock
// reading, so nothing accumulates: no drift, whatever the rate. f is rounded
// down, so the bucket is never faster than its rate (at most 2⁻³² slower),
// and for rates dividing 1e9 (1, 2, 50, 1000, ...) f is exactly 1.
//
// Range, which keeps every intermediate value inside int64: rate in
// [1e-3, 1e9] per second, burst in [1, 1e15], burst / rate (the time to refill
// an empty bucket) at most 1e9 s, bucket lifetime up to 2⁶¹ ns (73 years; after
// that time stands still for the bucket), waits up to 2⁵⁹ ns (18 years).
#pragma once

#include <cmath>
#include <cstdint>

namespace resil::detail::gcra {

inline constexpr double min_rate = 1e-3;
inline constexpr double max_rate = 1e9;
inline constexpr std::int64_t min_burst = 1;
inline constexpr std::int64_t max_burst = 1'000'000'000'000'000;  // 1e15
inline constexpr double max_refill_seconds = 1e9;
/// Nanoseconds since the origin beyond which time is clamped (73 years).
inline constexpr std::int64_t max_elapsed_ns = std::int64_t{1} << 61;
/// The longest wait a reservation may look ahead (18 years).
inline constexpr std::int64_t max_lookahead_ns = std::int64_t{1} << 59;

inline constexpr int fraction_bits = 32;
inline constexpr std::uint64_t one_q32 = std::uint64_t{1} << fraction_bits;

/// A bucket's constants, derived once from its rate and burst.
struct params {
    std::int64_t burst = 1;              ///< B: tokens when full
    std::int64_t token_units = 1;        ///< K: units per token (exact)
    std::int64_t tolerance = 1;          ///< τ = B·K: how far TAT may run ahead of now
    std::uint64_t units_per_ns_q32 = one_q32;  ///< f in Q32, in [2³², 2³³)
    /// ⌊2⁹⁶ / f⌋ (1/f in Q64), or 0 when f is exactly one (2³²): lets
    /// first_ns_at() multiply instead of divide (see there).
    std::uint64_t ns_per_unit_q64 = 0;

    friend constexpr bool operator==(const params&, const params&) = default;
};

/// Whether an empty bucket of `burst` tokens refills at `rate` within
/// max_refill_seconds. False for a NaN rate.
[[nodiscard]] constexpr bool refills_in_time(double rate, std::int64_t burst) noexcept {
    return static_cast<double>(burst) / rate <= max_refill_seconds;
}

/// Whether (rate, burst) is inside the documented range. Written so that NaN
/// fails every comparison.
[[nodiscard]] constexpr bool valid(double rate, std::int64_t burst) noexcept {
    return rate >= min_rate && rate <= max_rate && burst >= min_burst && burst <= max_burst &&
           refills_in_time(rate, burst);
}

/// The largest burst in [min_burst, max_burst] that refills in time at
/// `rate`; 0 for a rate outside [min_rate, max_rate].
[[nodiscard]] inline std::int64_t largest_burst(double rate) noexcept {
    if (!(rate >= min_rate && rate <= max_rate)) return 0;
    const double estimate = rate * max_refill_seconds;  // in [1e6, 1e18]
    auto b = estimate >= static_cast<double>(max_burst) ? max_burst : static_cast<std::int64_t>(estimate);
    // The division in refills_in_time rounds: step to its exact boundary.
    while (b > min_burst && !refills_in_time(rate, b)) --b;
    while (b < max_burst && refills_in_time(rate, b + 1)) ++b;
    return b;
}

/// ⌊a · b / 2³²⌋ for a < 2⁶², b < 2³³ without a 128-bit type: the portable path,
/// also checked against the 128-bit one in the tests.
[[nodiscard]] constexpr std::uint64_t mul_q32_portable(std::uint64_t a, std::uint64_t b) noexcept {
    const std::uint64_t a_hi = a >> 32, a_lo = a & 0xffff'ffffu;
    const std::uint64_t b_hi = b >> 32, b_lo = b & 0xffff'ffffu;
    // a·b / 2³² = a_hi·b + a_lo·b_hi + a_lo·b_lo / 2³², each term exact in 64 bits.
    return a_hi * b + a_lo * b_hi + ((a_lo * b_lo) >> 32);
}

/// ⌈n · 2³² / d⌉ for n < 2⁶³, 2³² ≤ d < 2³³ without a 128-bit type (bitwise long
/// division; only rejections need it).
[[nodiscard]] constexpr std::uint64_t div_q32_ceil_portable(std::uint64_t n, std::uint64_t d) noexcept {
    // The dividend n·2³² has 95 significant bits: feed them high to low.
    std::uint64_t quotient = 0, remainder = 0;
    for (int bit = 94; bit >= 0; --bit) {
        const std::uint64_t next = bit >= 32 ? (n >> (bit - 32)) & 1u : 0u;
        remainder = (remainder << 1) | next;  // < 2d < 2³⁴: no overflow
        quotient <<= 1;
        if (remainder >= d) {
            remainder -= d;
            quotient |= 1u;
        }
    }
    return quotient + (remainder != 0 ? 1u : 0u);
}

#if defined(__SIZEOF_INT128__)
__extension__ using uint128 = unsigned __int128;
[[nodiscard]] constexpr std::uint64_t mul_q32(std::uint64_t a, std::uint64_t b) noexcept {
    return static_cast<std::uint64_t>((static_cast<uint128>(a) * b) >> 32);
}
[[nodiscard]] constexpr std::uint64_t div_q32_ceil(std::uint64_t n, std::uint64_t d) noexcept {
    const uint128 num = static_cast<uint128>(n) << 32;
    return static_cast<std::uint64_t>((num + d - 1) / d);
}
#else
[[nodiscard]] constexpr std::uint64_t mul_q32(std::uint64_t a, std::uint64_t b) noexcept { return mul_q32_portable(a, b); }
[[nodiscard]] constexpr std::uint64_t div_q32_ceil(std::uint64_t n, std::uint64_t d) noexcept {
    return div_q32_ceil_portable(n, d);
}
#endif

/// ⌊2⁹⁶ / f⌋ for f in (2³², 2³³), which is below 2⁶⁴; 0 for f = 2³² (the
/// quotient, 2⁶⁴, would not fit; first_ns_at() needs no estimate then) and
/// where there is no 128-bit type (first_ns_at() divides).
[[nodiscard]] constexpr std::uint64_t reciprocal_q64(std::uint64_t f) noexcept {
#if defined(__SIZEOF_INT128__)
    if (f <= one_q32) return 0;
    return static_cast<std::uint64_t>((static_cast<uint128>(1) << 96) / f);
#else
    (void)f;
    return 0;
#endif
}

/// The constants for a valid (rate, burst); see valid().
[[nodiscard]] inline params make_params(double rate, std::int64_t burst) noexcept {
    params p;
    p.burst = burst;
    p.token_units = static_cast<std::int64_t>(std::ceil(1e9 / rate));
    if (p.token_units < 1) p.token_units = 1;
    p.tolerance = burst * p.token_units;
    const double f = rate * static_cast<double>(p.token_units) / 1e9;  // in [1, 2)
    auto q = static_cast<std::uint64_t>(std::floor(f * static_cast<double>(one_q32)));
    // Guard the documented invariant against the last bit of double rounding.
    if (q < one_q32) q = one_q32;
    if (q >= 2 * one_q32) q = 2 * one_q32 - 1;
    p.units_per_ns_q32 = q;
    p.ns_per_unit_q64 = reciprocal_q64(q);
    return p;
}

/// Clamps nanoseconds since the origin to [0, max_elapsed_ns].
[[nodiscard]] constexpr std::int64_t clamp_elapsed(std::int64_t ns) noexcept {
    return ns < 0 ? 0 : (ns > max_elapsed_ns ? max_elapsed_ns : ns);
}

/// Nanoseconds from `origin` to `t` (two readings of one clock, as counts),
/// clamped to [0, max_elapsed_ns]: a reading before the origin is 0, and past
/// it the difference is exact in unsigned arithmetic (one comparison, no
/// saturating steps).
[[nodiscard]] constexpr std::int64_t elapsed_ns(std::int64_t t, std::int64_t origin) noexcept {
    if (t <= origin) return 0;
    const auto ns = static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(origin);
    constexpr auto top = static_cast<std::uint64_t>(max_elapsed_ns);
    return static_cast<std::int64_t>(ns < top ? ns : top);
}

/// Units at `ns` nanoseconds after the origin (clamped): ⌊ns · f⌋. Monotonic.
[[nodiscard]] constexpr std::int64_t to_units(const params& p, std::int64_t ns) noexcept {
    return static_cast<std::int64_t>(mul_q32(static_cast<std::uint64_t>(clamp_elapsed(ns)), p.units_per_ns_q32));
}

/// The first nanosecond (since the origin) at which to_units reaches `units`:
/// the smallest t with to_units(p, t) >= units, i.e. ⌈units · 2³² / f⌉. 0 for
/// units <= 0. Every rejection computes it (the exact wait), so it avoids the
/// 128-bit division (tens of cycles): an estimate by multiplying with
/// ⌊2⁹⁶ / f⌋ is at most 1.5 below the exact quotient (units < 2⁶³), and at
/// most two checks by multiplication step it up to the exact answer.
[[nodiscard]] constexpr std::int64_t first_ns_at(const params& p, std::int64_t units) noexcept {
    if (units <= 0) return 0;
    const auto u = static_cast<std::uint64_t>(units);
    if (p.units_per_ns_q32 == one_q32) return units;  // f = 1: a unit is a nanosecond
#if defined(__SIZEOF_INT128__)
    if (p.ns_per_unit_q64 != 0) {
        auto t = static_cast<std::uint64_t>((static_cast<uint128>(u) * p.ns_per_unit_q64) >> 64);
        while (mul_q32(t, p.units_per_ns_q32) < u) ++t;
        return static_cast<std::int64_t>(t);
    }
#endif
    return static_cast<std::int64_t>(div_q32_ceil(u, p.units_per_ns_q32));
}

/// What GCRA says about taking n tokens.
struct decision {
    bool conforming = false;  ///< granted within the burst tolerance (plus any lookahead)
    std::int64_t new_tat = 0;  ///< the TAT to store when granting
    std::int64_t ready_at = 0;  ///< units at which the n tokens exist (≤ now when available now)
};

/// Tokens granted ahead of time (a lookahead): the word replaced and the one
/// stored (to undo it while it is still the last change), and when the tokens
/// exist, in ns since the bucket's origin and from the reading it was made at.
struct reservation {
    std::int64_t old_tat = 0;
    std::int64_t new_tat = 0;
    std::int64_t ready_ns = 0;
    std::int64_t wait_ns = 0;
    bool pending = false;  ///< the tokens do not exist yet: the holder waits
};

/// Decides on n tokens (1 ≤ n ≤ burst) at `now` units given `tat`. A positive
/// `lookahead` (units) also grants tokens that will exist within it: a
/// reservation, whose holder waits until `ready_at`.
[[nodiscard]] constexpr decision decide(const params& p, std::int64_t tat, std::int64_t now, std::int64_t n,
                                        std::int64_t lookahead = 0) noexcept {
    decision d;
    d.new_tat = (tat > now ? tat : now) + n * p.token_units;
    d.ready_at = d.new_tat - p.tolerance;
    d.conforming = d.ready_at - now <= lookahead;
    return d;
}

/// Tokens in the bucket at `now` units given `tat`, in [0, burst], with the
/// fraction of the one refilling. (Reservations can leave TAT beyond the
/// tolerance: the bucket then holds 0.)
[[nodiscard]] constexpr double tokens(const params& p, std::int64_t tat, std::int64_t now) noexcept {
    const std::int64_t ahead = tat > now ? tat - now : 0;
    if (ahead >= p.tolerance) return 0.0;
    const std::int64_t free_units = p.tolerance - ahead;
    // Whole tokens exactly, then the fraction: keeps large buckets exact.
    const std::int64_t whole = free_units / p.token_units;
    const std::int64_t part = free_units % p.token_units;
    return static_cast<double>(whole) + static_cast<double>(part) / static_cast<double>(p.token_units);
}

/// Whole tokens in the bucket at `now` units given `tat`, in [0, burst].
[[nodiscard]] constexpr std::int64_t whole_tokens(const params& p, std::int64_t tat, std::int64_t now) noexcept {
    const std::int64_t ahead = tat > now ? tat - now : 0;
    if (ahead >= p.tolerance) return 0;
    return (p.tolerance - ahead) / p.token_units;
}

/// The units at which the bucket next gains a whole token, at `now` units
/// given `tat`; 0 when it is full (nothing more to gain). The IETF RateLimit
/// field's reset ("until additional quota is made available") is the time
/// to that instant: first_ns_at() of it, less now.
[[nodiscard]] constexpr std::int64_t next_token_at(const params& p, std::int64_t tat, std::int64_t now) noexcept {
    const std::int64_t whole = whole_tokens(p, tat, now);
    if (whole >= p.burst) return 0;
    // whole_tokens(p, tat, t) = ⌊(τ − (tat − t)) / K⌋ reaches whole + 1 at
    // t = tat − τ + (whole + 1)·K (past now: the fraction is below one K).
    return tat - p.tolerance + (whole + 1) * p.token_units;
}

/// A rejection's Retry-After: the wait in whole seconds rounded up, at least
/// 1 s (a wait below 1 ns counts as 1 ns). For waits below 2⁶² ns, which
/// every limiter's waits are (the rounding addend cannot overflow).
/// Unsigned: a division by a constant is then one multiply and a shift.
[[nodiscard]] constexpr std::int64_t retry_after_seconds(std::int64_t wait_ns) noexcept {
    constexpr std::uint64_t ns_per_s = 1'000'000'000;
    const auto ns = static_cast<std::uint64_t>(wait_ns > 0 ? wait_ns : 1);
    return static_cast<std::int64_t>((ns + (ns_per_s - 1)) / ns_per_s);
}

}  // namespace resil::detail::gcra
