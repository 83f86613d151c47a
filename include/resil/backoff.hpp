// resil/backoff.hpp — how long to wait before retry n: capped exponential
// backoff with jitter. Pure math: no clock inside, the random source
// (resil/jitter.hpp) is passed in, and every computation saturates instead of
// overflowing.
//
//   resil::full_jitter policy{.base = 100ms, .cap = 1s};      // the default strategy
//   resil::jitter_engine rng{seed};
//   auto wait = policy.delay(1, {}, rng);                       // uniform in [0, 200 ms)
//
//   resil::backoff chosen = resil::equal_jitter{50ms, 2s};     // chosen at run time (options, config)
//   resil::throw_if_invalid("my_service", chosen.validate());  // "`cap` must be at least the base (50ms), got 10ms"
//
// Retries are numbered 1, 2, 3, … and the ceiling before retry n is
// min(cap, base · multiplierⁿ): base 100 ms gives 200, 400, 800 ms. Jitter
// spreads clients that failed together, so their retries do not arrive together
// (full jitter: "Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
//
// Shape: exponential_backoff, full_jitter and equal_jitter are one aggregate,
// exponential_strategy<Draw>, with `base`, `cap`, `multiplier`, ceiling() and
// validate() written once; they differ only in how they draw below the
// ceiling. Being plain aggregates, they take both `full_jitter{100ms, 1s}` and
// `full_jitter{.base = 100ms, .cap = 1s}`.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "clock.hpp"
#include "detail/saturate.hpp"
#include "jitter.hpp"
#include "validation.hpp"

namespace resil {

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
// Kinds

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

// ---------------------------------------------------------------------------
// Strategies. Each is an aggregate with documented defaults; `delay(retry,
// previous, rng)` returns the wait before retry `retry` (1, 2, …) given the
// previous delay (zero before the first retry). All are values: copy freely;
// delay() is const and does not allocate; the engine is the caller's.
// validate() names the first invalid field (resil/validation.hpp).

namespace detail {
/// The limits every strategy puts on `base` and `cap`: base at least
/// `min_base`, cap at least base.
[[nodiscard]] inline validation_result validate_base_and_cap(duration base, duration cap, duration min_base) {
    if (auto bad = check_at_least("base", base, min_base)) return bad;
    if (cap >= base) return std::nullopt;  // the message is built only when needed
    return check_that(false, "cap", {"at least the base (", format_duration(base), ")"}, cap);
}
}  // namespace detail

/// A capped exponential strategy: the ceiling before retry n is
/// min(cap, base · multiplierⁿ), and `Draw` picks the delay below it
/// (Draw::draw(ceiling, rng)). exponential_backoff, full_jitter and
/// equal_jitter are its instances. Defaults: base 100 ms, cap 1 s, multiplier 2.
template <class Draw>
struct exponential_strategy {
    /// The ceiling before retry 0; must be at least min_base. Default 100 ms.
    duration base = std::chrono::milliseconds{100};
    /// The longest wait; must be at least `base`. Default 1 s.
    duration cap = std::chrono::seconds{1};
    /// Growth per retry; finite and at least min_multiplier (1: a constant
    /// delay). Default 2.
    double multiplier = 2.0;

    ///@{
    /// The bounds validate() checks: min_X and max_X are the smallest and
    /// largest `X` it accepts.
    static constexpr duration min_base = duration{1};
    static constexpr double min_multiplier = 1.0;
    ///@}

    /// min(cap, base · multiplierʳᵉᵗʳʸ); see backoff_ceiling().
    [[nodiscard]] constexpr duration ceiling(std::uint64_t retry) const noexcept {
        return backoff_ceiling(base, cap, multiplier, retry);
    }
    /// The wait before retry `retry`, drawn below ceiling(retry); `previous` is unused.
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration /*previous*/, URBG& rng) const noexcept {
        return Draw::draw(ceiling(retry), rng);
    }
    /// The first invalid field: `base` below min_base, `cap` below `base`, or
    /// `multiplier` NaN, infinite or below min_multiplier.
    [[nodiscard]] validation_result validate() const {
        if (auto bad = detail::validate_base_and_cap(base, cap, min_base)) return bad;
        // Written so that NaN fails too.
        const bool finite_growth = multiplier >= min_multiplier && multiplier <= std::numeric_limits<double>::max();
        if (finite_growth) return std::nullopt;
        return detail::check_that(false, "multiplier", {"finite and at least ", detail::format_option_value(min_multiplier)},
                                  multiplier);
    }
    /// Field-by-field equality.
    friend constexpr bool operator==(const exponential_strategy&, const exponential_strategy&) = default;
};

/// How each exponential strategy draws below its ceiling.
namespace jitter_draw {
/// Exactly the ceiling; draws nothing.
struct none {
    /// The ceiling itself: no jitter.
    template <class URBG>
    [[nodiscard]] static constexpr duration draw(duration ceiling, URBG& /*rng*/) noexcept {
        return ceiling;
    }
};
/// Uniform in [0, ceiling).
struct full {
    /// Full jitter: uniform in [0, ceiling].
    template <class URBG>
    [[nodiscard]] static constexpr duration draw(duration ceiling, URBG& rng) noexcept {
        return detail::uniform_below(ceiling, rng);
    }
};
/// ceiling/2 + uniform in [0, ceiling/2): [ceiling/2, ceiling).
struct equal {
    /// Equal jitter: ceiling/2 plus uniform in [0, ceiling/2].
    template <class URBG>
    [[nodiscard]] static constexpr duration draw(duration ceiling, URBG& rng) noexcept {
        const auto half = ceiling / 2;
        return half + detail::uniform_below(ceiling - half, rng);
    }
};
}  // namespace jitter_draw

/// No jitter: exactly the ceiling. Synchronised clients stay synchronised, so
/// prefer full_jitter unless a deterministic schedule is the point.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
using exponential_backoff = exponential_strategy<jitter_draw::none>;

/// Full jitter, the default: uniform in [0, ceiling). On average half the
/// ceiling, and the widest spread of clients.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
using full_jitter = exponential_strategy<jitter_draw::full>;

/// Equal jitter: ceiling/2 + uniform in [0, ceiling/2), i.e. [ceiling/2, ceiling).
/// Never waits less than half the ceiling, at the cost of less spread.
/// Defaults: base 100 ms, cap 1 s, multiplier 2.
using equal_jitter = exponential_strategy<jitter_draw::equal>;

/// Decorrelated jitter (AWS): min(cap, uniform in [base, max(base, 3 · previous))).
/// Grows from the previous delay instead of the retry number; `previous` <= 0
/// (the first retry) counts as base, so the first delay is in [base, 3·base). The result is
/// always within [min(base, cap), cap]; zero if base or cap <= 0.
/// Defaults: base 100 ms, cap 1 s.
struct decorrelated_jitter {
    /// The shortest wait; must be at least min_base. Default 100 ms.
    duration base = std::chrono::milliseconds{100};
    /// The longest wait; must be at least `base`. Default 1 s.
    duration cap = std::chrono::seconds{1};

    /// The growth bound of the upper end: 3 · previous.
    static constexpr detail::ticks growth = 3;
    /// The smallest `base` validate() accepts.
    static constexpr duration min_base = duration{1};

    /// Decorrelated jitter's next delay: uniform in [base, 3 × previous],
    /// capped at `cap`. The retry number is unused: each delay depends on the
    /// previous one.
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
    /// The first invalid field: `base` below min_base or `cap` below `base`.
    [[nodiscard]] validation_result validate() const { return detail::validate_base_and_cap(base, cap, min_base); }
    /// Field-by-field equality.
    friend constexpr bool operator==(const decorrelated_jitter&, const decorrelated_jitter&) = default;
};

// ---------------------------------------------------------------------------
// Run-time choice

/// One of the strategies above, chosen at run time — the type of a
/// `backoff` option or a configuration entry. Implicitly constructible from
/// each strategy, so `.backoff = resil::full_jitter{100ms, 1s}` reads naturally.
/// Default: full_jitter{100 ms, 1 s}. A value type holding a std::variant;
/// delay() is const, does not allocate and makes no virtual call.
class backoff {
public:
    /// The alternatives, in the order of backoff_kind.
    using strategy_type = std::variant<exponential_backoff, full_jitter, equal_jitter, decorrelated_jitter>;

    /// full_jitter{100 ms, 1 s, ×2}.
    constexpr backoff() noexcept : strategy_(full_jitter{}) {}
    /// From any of the four strategies; implicit, so `.backoff =
    /// resil::full_jitter{100ms, 1s}` reads naturally.
    template <class Strategy>
        requires(std::is_same_v<Strategy, exponential_backoff> || std::is_same_v<Strategy, full_jitter> ||
                 std::is_same_v<Strategy, equal_jitter> || std::is_same_v<Strategy, decorrelated_jitter>)
    constexpr backoff(Strategy s) noexcept : strategy_(s) {}  // NOLINT(google-explicit-constructor)

    /// The strategy held, for std::visit or std::get_if.
    [[nodiscard]] constexpr const strategy_type& strategy() const noexcept { return strategy_; }
    /// Which strategy it holds.
    [[nodiscard]] constexpr backoff_kind kind() const noexcept {
        return static_cast<backoff_kind>(strategy_.index());
    }
    /// The strategy's base delay.
    [[nodiscard]] constexpr duration base() const noexcept {
        return std::visit([](const auto& s) { return s.base; }, strategy_);
    }
    /// The strategy's cap: no delay exceeds it.
    [[nodiscard]] constexpr duration cap() const noexcept {
        return std::visit([](const auto& s) { return s.cap; }, strategy_);
    }
    /// The growth factor per retry; 3 for decorrelated_jitter (its fixed bound).
    [[nodiscard]] constexpr double multiplier() const noexcept {
        return std::visit(
            [](const auto& s) {
                if constexpr (requires { s.multiplier; }) {
                    return s.multiplier;
                } else {
                    return static_cast<double>(s.growth);
                }
            },
            strategy_);
    }

    /// The wait before retry `retry` (1, 2, …) after a previous delay of
    /// `previous` (zero before the first retry). Always within [0, cap()].
    template <std::uniform_random_bit_generator URBG>
    [[nodiscard]] constexpr duration delay(std::uint64_t retry, duration previous, URBG& rng) const noexcept {
        return std::visit([&](const auto& s) { return s.delay(retry, previous, rng); }, strategy_);
    }

    /// The held strategy's validate(): `base`, `cap` or `multiplier`.
    [[nodiscard]] validation_result validate() const {
        return std::visit([](const auto& s) { return s.validate(); }, strategy_);
    }

    /// The same check as validate(), as the short text earlier versions gave
    /// ("backoff base must be positive", "backoff cap must be at least the
    /// base", "backoff multiplier must be finite and at least 1"); empty when
    /// valid. Prefer validate(), which names the field and the value.
    [[nodiscard]] std::optional<std::string_view> invalid_reason() const {
        const auto bad = validate();
        if (!bad) return std::nullopt;
        if (bad->field == "base") return "backoff base must be positive";
        if (bad->field == "cap") return "backoff cap must be at least the base";
        return "backoff multiplier must be finite and at least 1";
    }

    /// Field-by-field equality.
    friend constexpr bool operator==(const backoff&, const backoff&) = default;

private:
    strategy_type strategy_;
};

static_assert(backoff{exponential_backoff{}}.kind() == backoff_kind::exponential &&
                  backoff{full_jitter{}}.kind() == backoff_kind::full_jitter &&
                  backoff{equal_jitter{}}.kind() == backoff_kind::equal_jitter &&
                  backoff{decorrelated_jitter{}}.kind() == backoff_kind::decorrelated_jitter,
              "backoff_kind follows the order of backoff::strategy_type");

}  // namespace resil
