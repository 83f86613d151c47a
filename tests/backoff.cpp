// resil/backoff.hpp: the ceiling, the strategies and the run-time choice.
#include <resil/backoff.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "catch.hpp"
#include "support/stuck_engine.hpp"

using namespace std::chrono_literals;
using resil::duration;

namespace {

constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_value = std::numeric_limits<double>::infinity();
constexpr std::uint64_t max_retry = std::numeric_limits<std::uint64_t>::max();

using resil_test::stuck64;

double ms(duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

// ---------------------------------------------------------------------------
// backoff_ceiling

TEST_CASE("backoff ceiling: base 100 ms doubles to 200, 400, 800 ms before retries 1 to 3") {
    CHECK(resil::backoff_ceiling(100ms, 10s, 2.0, 1) == 200ms);
    CHECK(resil::backoff_ceiling(100ms, 10s, 2.0, 2) == 400ms);
    CHECK(resil::backoff_ceiling(100ms, 10s, 2.0, 3) == 800ms);
    CHECK(resil::backoff_ceiling(100ms, 10s, 2.0, 0) == 100ms);
}

TEST_CASE("backoff ceiling: base 50 ms, cap 1 s, 5 retries wait at most 2,500 ms in all") {
    const std::vector<duration> expected{100ms, 200ms, 400ms, 800ms, 1000ms};
    duration total{};
    for (std::uint64_t retry = 1; retry <= 5; ++retry) {
        const auto ceiling = resil::backoff_ceiling(50ms, 1s, 2.0, retry);
        CHECK(ceiling == expected[retry - 1]);
        total += ceiling;
    }
    CHECK(total == 2500ms);
    static_assert(resil::backoff_ceiling(50ms, 1s, 2.0, 5) == 1s, "usable at compile time");
}

TEST_CASE("backoff ceiling: a fractional multiplier is exact where the arithmetic is") {
    CHECK(resil::backoff_ceiling(100ms, 10s, 1.5, 1) == 150ms);
    CHECK(resil::backoff_ceiling(100ms, 10s, 1.5, 3) == 337'500us);  // 1.5³ = 3.375
    CHECK(resil::backoff_ceiling(100ms, 10s, 1.0, 7) == 100ms);      // multiplier 1: constant
}

TEST_CASE("backoff ceiling: saturates at cap for any retry, multiplier and base") {
    const std::vector<std::uint64_t> retries{1, 2, 62, 63, 64, 65, 1'000, 10'000, max_retry - 1, max_retry};
    const std::vector<double> multipliers{1.0000001, 1.5, 2.0, 3.0, 10.0, 1e10, 1e300,
                                          std::numeric_limits<double>::max(), inf_value};
    struct config {
        duration base, cap;
    };
    const std::vector<config> configs{
        {100ms, 1s},
        {1ns, 1s},
        {1ns, duration::max()},
        {duration::max() / 2, duration::max()},
        {duration::max() / 2 + 1ns, duration::max()},
        {duration::max() - 1ns, duration::max()},
        {100ms, duration::max()},
    };
    for (const auto& c : configs) {
        for (const double m : multipliers) {
            duration previous{0};
            for (const auto retry : retries) {
                INFO("base " << c.base.count() << "ns cap " << c.cap.count() << "ns multiplier " << m << " retry "
                              << retry);
                const auto ceiling = resil::backoff_ceiling(c.base, c.cap, m, retry);
                CHECK(ceiling <= c.cap);
                CHECK(ceiling >= c.base);
                CHECK(ceiling >= previous);  // never shrinks as retries grow
                previous = ceiling;
            }
        }
    }
    // Past the exponent where base·mⁿ crosses cap, the answer is cap exactly.
    CHECK(resil::backoff_ceiling(100ms, 1s, 2.0, 64) == 1s);
    CHECK(resil::backoff_ceiling(100ms, 1s, 2.0, 10'000) == 1s);
    CHECK(resil::backoff_ceiling(100ms, 1s, 2.0, max_retry) == 1s);
    CHECK(resil::backoff_ceiling(duration::max() / 2, duration::max(), 2.0, 1) == duration::max());
    CHECK(resil::backoff_ceiling(duration::max() / 2, duration::max(), 2.0, max_retry) == duration::max());
    CHECK(resil::backoff_ceiling(1ns, duration::max(), 2.0, 62) == duration{std::int64_t{1} << 62});
    CHECK(resil::backoff_ceiling(1ns, duration::max(), 2.0, 63) == duration::max());
    CHECK(resil::backoff_ceiling(100ms, 1s, inf_value, 1) == 1s);
    CHECK(resil::backoff_ceiling(100ms, 1s, 1e300, max_retry) == 1s);
}

TEST_CASE("backoff ceiling: NaN, shrinking or non-positive inputs never yield a negative or over-cap wait") {
    CHECK(resil::backoff_ceiling(100ms, 1s, nan_value, 3) == 100ms);
    CHECK(resil::backoff_ceiling(100ms, 1s, -inf_value, 3) == 100ms);
    CHECK(resil::backoff_ceiling(100ms, 1s, 0.5, 3) == 100ms);
    CHECK(resil::backoff_ceiling(100ms, 1s, -2.0, max_retry) == 100ms);
    CHECK(resil::backoff_ceiling(0ns, 1s, 2.0, 3) == 0ns);
    CHECK(resil::backoff_ceiling(-5s, 1s, 2.0, 3) == 0ns);
    CHECK(resil::backoff_ceiling(100ms, 0ns, 2.0, 3) == 0ns);
    CHECK(resil::backoff_ceiling(100ms, -1s, 2.0, 3) == 0ns);
    CHECK(resil::backoff_ceiling(duration::min(), duration::min(), nan_value, max_retry) == 0ns);
    CHECK(resil::backoff_ceiling(5s, 1s, 2.0, 1) == 1s);  // base above cap: cap
}

// ---------------------------------------------------------------------------
// Strategies

TEST_CASE("full jitter: seeded golden delays for seed 42, retries 1 to 3") {
    // Floor of unit_interval · ceiling (200, 400, 800 ms), one draw each.
    resil::jitter_engine rng{42};
    const resil::full_jitter policy{};
    CHECK(policy.delay(1, 0ns, rng) == 16'772'594ns);
    CHECK(policy.delay(2, 0ns, rng) == 151'592'100ns);
    CHECK(policy.delay(3, 0ns, rng) == 544'034'728ns);
}

TEST_CASE("equal and decorrelated jitter: seeded golden delays for seed 42") {
    resil::jitter_engine rng{42};
    const resil::equal_jitter equal{};
    CHECK(equal.delay(1, 0ns, rng) == 108'386'297ns);
    CHECK(equal.delay(2, 0ns, rng) == 275'796'050ns);
    CHECK(equal.delay(3, 0ns, rng) == 672'017'364ns);

    rng.seed(42);
    const resil::decorrelated_jitter decorrelated{};
    duration previous{0};
    for (const auto expected : {116'772'594ns, 194'865'495ns, 429'546'646ns}) {
        previous = decorrelated.delay(0, previous, rng);
        CHECK(previous == expected);
    }
}

TEST_CASE("full jitter: base 50 ms, cap 1 s, 5 retries wait 1,250 ms on average") {
    // Each delay is uniform on [0, cᵢ), variance cᵢ²/12; over the ceilings
    // 100, 200, 400, 800, 1000 ms one sequence has standard deviation
    // sqrt(1,850,000 / 12) ≈ 393 ms. The mean of 100,000 sequences then has a
    // standard error of ≈ 1.24 ms; the tolerance of 8 ms is about 6.5 of those.
    constexpr int sequences = 100'000;
    const resil::full_jitter policy{.base = 50ms, .cap = 1s};
    resil::jitter_engine rng{2024};
    double sum_ms = 0.0;
    for (int s = 0; s < sequences; ++s) {
        duration previous{0};
        for (std::uint64_t retry = 1; retry <= 5; ++retry) {
            previous = policy.delay(retry, previous, rng);
            sum_ms += ms(previous);
        }
    }
    CHECK(sum_ms / sequences == Approx(1250.0).margin(8.0));
}

TEST_CASE("every strategy stays within its bounds over many draws, and spreads across them") {
    constexpr int draws = 20'000;
    resil::jitter_engine rng{99};
    for (std::uint64_t retry = 1; retry <= 8; ++retry) {
        const resil::full_jitter full{.base = 10ms, .cap = 1s};
        const resil::equal_jitter equal{.base = 10ms, .cap = 1s};
        const resil::exponential_backoff plain{.base = 10ms, .cap = 1s};
        const auto ceiling = full.ceiling(retry);
        INFO("retry " << retry << " ceiling " << ms(ceiling) << " ms");
        duration full_lo = duration::max(), full_hi = duration::min();
        duration equal_lo = duration::max(), equal_hi = duration::min();
        for (int i = 0; i < draws; ++i) {
            const auto f = full.delay(retry, 0ns, rng);
            REQUIRE(f >= 0ns);
            REQUIRE(f < ceiling);
            full_lo = std::min(full_lo, f);
            full_hi = std::max(full_hi, f);
            const auto e = equal.delay(retry, 0ns, rng);
            REQUIRE(e >= ceiling / 2);
            REQUIRE(e < ceiling);
            equal_lo = std::min(equal_lo, e);
            equal_hi = std::max(equal_hi, e);
            REQUIRE(plain.delay(retry, 0ns, rng) == ceiling);
        }
        // With 20,000 draws the extremes come within 0.1 % of each end
        // (missing a 0.1 % band has probability 0.999²⁰⁰⁰⁰ ≈ 2e-9).
        CHECK(ms(full_lo) < ms(ceiling) * 0.001);
        CHECK(ms(full_hi) > ms(ceiling) * 0.999);
        CHECK(ms(equal_lo) < ms(ceiling) * 0.5005);
        CHECK(ms(equal_hi) > ms(ceiling) * 0.9995);
    }

    const resil::decorrelated_jitter decorrelated{.base = 10ms, .cap = 1s};
    duration previous{0};
    duration lo = duration::max(), hi = duration::min();
    for (int i = 0; i < draws; ++i) {
        const auto d = decorrelated.delay(static_cast<std::uint64_t>(i) + 1, previous, rng);
        REQUIRE(d >= 10ms);
        REQUIRE(d <= 1s);
        REQUIRE(d < std::max(duration{10ms} * 3, previous * 3));  // grows at most threefold
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        previous = d;
    }
    CHECK(lo < 20ms);
    CHECK(hi == 1s);  // min(cap, …) lands on cap often once the range passes it
}

TEST_CASE("decorrelated jitter: the first retry draws from [base, 3·base)") {
    const resil::decorrelated_jitter policy{.base = 100ms, .cap = 10s};
    resil::jitter_engine rng{5};
    for (int i = 0; i < 1'000; ++i) {
        const auto d = policy.delay(1, 0ns, rng);
        REQUIRE(d >= 100ms);
        REQUIRE(d < 300ms);
        const auto after_negative = policy.delay(1, -3s, rng);  // nonsense previous counts as base
        REQUIRE(after_negative >= 100ms);
        REQUIRE(after_negative < 300ms);
        // A previous delay under base/3 leaves an empty range [base, base): base.
        REQUIRE(policy.delay(2, 10ms, rng) == 100ms);
        const auto after_150 = policy.delay(2, 150ms, rng);  // [100, 450) ms
        REQUIRE(after_150 >= 100ms);
        REQUIRE(after_150 < 450ms);
    }
}

TEST_CASE("jittered strategies saturate with huge inputs: never negative, never wrapped") {
    resil::jitter_engine rng{3};
    stuck64 top{stuck64::max()};
    const auto big = duration::max() / 2;
    const resil::full_jitter full{.base = big, .cap = duration::max(), .multiplier = 1e300};
    const resil::equal_jitter equal{.base = big, .cap = duration::max(), .multiplier = inf_value};
    const resil::exponential_backoff plain{.base = big, .cap = duration::max(), .multiplier = nan_value};
    const resil::decorrelated_jitter decorrelated{.base = big, .cap = duration::max()};
    for (const auto retry : {std::uint64_t{1}, std::uint64_t{64}, std::uint64_t{10'000}, max_retry}) {
        for (int i = 0; i < 100; ++i) {
            for (const auto d : {full.delay(retry, duration::max(), rng), equal.delay(retry, duration::max(), rng),
                                 plain.delay(retry, duration::max(), rng),
                                 decorrelated.delay(retry, duration::max(), rng),
                                 decorrelated.delay(retry, duration::max() - 1ns, top),
                                 full.delay(retry, 0ns, top), equal.delay(retry, 0ns, top)}) {
                REQUIRE(d >= 0ns);
            }
        }
    }
    const resil::full_jitter capped_full{.base = 100ms, .cap = 1s, .multiplier = 1e300};
    const resil::equal_jitter capped_equal{.base = 100ms, .cap = 1s, .multiplier = inf_value};
    const resil::decorrelated_jitter capped_decorrelated{.base = 100ms, .cap = 1s};
    for (const auto retry : {std::uint64_t{64}, std::uint64_t{10'000}, max_retry}) {
        for (int i = 0; i < 1'000; ++i) {
            const auto f = capped_full.delay(retry, duration::max(), rng);
            REQUIRE((f >= 0ns && f < 1s));
            const auto e = capped_equal.delay(retry, duration::max(), rng);
            REQUIRE((e >= 500ms && e < 1s));
            const auto d = capped_decorrelated.delay(retry, duration::max(), rng);
            REQUIRE((d >= 100ms && d <= 1s));
        }
    }
    CHECK(full.delay(max_retry, 0ns, top) < duration::max());
    CHECK(equal.delay(max_retry, 0ns, top) < duration::max());
    CHECK(equal.delay(max_retry, 0ns, top) >= duration::max() / 2);
    CHECK(plain.delay(max_retry, 0ns, top) == big);  // NaN multiplier: no growth
    // Drawn from [base, max) with the top engine output: just below max, not max.
    CHECK(decorrelated.delay(1, duration::max(), top) < duration::max());
    CHECK(decorrelated.delay(1, duration::max(), top) > duration::max() - 1us);
    const resil::decorrelated_jitter lower_cap{.base = big, .cap = duration::max() - 1s};
    CHECK(lower_cap.delay(1, duration::max(), top) == duration::max() - 1s);

    const resil::full_jitter broken{.base = -1s, .cap = -1s};
    CHECK(broken.delay(3, 0ns, rng) == 0ns);
    const resil::decorrelated_jitter broken_decorrelated{.base = 0ns, .cap = 1s};
    CHECK(broken_decorrelated.delay(3, 5s, rng) == 0ns);
    const resil::decorrelated_jitter inverted{.base = 2s, .cap = 1s};
    CHECK(inverted.delay(3, 5s, rng) == 1s);
}

TEST_CASE("a zero ceiling draws nothing and waits nothing") {
    stuck64 rng{12345};
    const resil::full_jitter zero_cap{.base = 0ns, .cap = 0ns};
    CHECK(zero_cap.delay(1, 0ns, rng) == 0ns);
    CHECK(rng.calls == 0);
}

// ---------------------------------------------------------------------------
// resil::backoff

TEST_CASE("backoff: the default is full jitter, 100 ms base, 1 s cap, doubling") {
    const resil::backoff b;
    CHECK(b.kind() == resil::backoff_kind::full_jitter);
    CHECK(b.base() == 100ms);
    CHECK(b.cap() == 1s);
    CHECK(b.multiplier() == 2.0);
    CHECK(b == resil::backoff{resil::full_jitter{100ms, 1s}});
    CHECK_FALSE(b.invalid_reason());
}

TEST_CASE("backoff: implicitly built from each strategy, and delays exactly like it") {
    struct example {
        resil::backoff chosen;
        resil::backoff_kind kind;
    };
    const std::vector<example> examples{
        {resil::exponential_backoff{50ms, 2s, 3.0}, resil::backoff_kind::exponential},
        {resil::full_jitter{50ms, 2s, 3.0}, resil::backoff_kind::full_jitter},
        {resil::equal_jitter{50ms, 2s, 3.0}, resil::backoff_kind::equal_jitter},
        {resil::decorrelated_jitter{50ms, 2s}, resil::backoff_kind::decorrelated_jitter},
    };
    for (const auto& e : examples) {
        CHECK(e.chosen.kind() == e.kind);
        CHECK(e.chosen.base() == 50ms);
        CHECK(e.chosen.cap() == 2s);
    }
    CHECK(examples[0].chosen.multiplier() == 3.0);
    CHECK(examples[3].chosen.multiplier() == 3.0);  // decorrelated's fixed growth bound

    auto same_as_struct = [](const resil::backoff& chosen, const auto& strategy) {
        resil::jitter_engine a{11}, b{11};
        duration prev_a{0}, prev_b{0};
        for (std::uint64_t retry = 1; retry <= 12; ++retry) {
            prev_a = chosen.delay(retry, prev_a, a);
            prev_b = strategy.delay(retry, prev_b, b);
            if (prev_a != prev_b) return false;
        }
        return a == b;  // and consumed the same number of draws
    };
    CHECK(same_as_struct(examples[0].chosen, resil::exponential_backoff{50ms, 2s, 3.0}));
    CHECK(same_as_struct(examples[1].chosen, resil::full_jitter{50ms, 2s, 3.0}));
    CHECK(same_as_struct(examples[2].chosen, resil::equal_jitter{50ms, 2s, 3.0}));
    CHECK(same_as_struct(examples[3].chosen, resil::decorrelated_jitter{50ms, 2s}));
    CHECK_FALSE(same_as_struct(examples[1].chosen, resil::equal_jitter{50ms, 2s, 3.0}));
}

TEST_CASE("backoff: equality compares kind and every parameter") {
    const resil::backoff full = resil::full_jitter{100ms, 1s};
    CHECK(full != resil::backoff{resil::equal_jitter{100ms, 1s}});
    CHECK(full != resil::backoff{resil::full_jitter{100ms, 2s}});
    CHECK(full != resil::backoff{resil::full_jitter{200ms, 1s}});
    CHECK(full != resil::backoff{resil::full_jitter{100ms, 1s, 1.5}});
}

TEST_CASE("backoff: invalid configurations are named") {
    using namespace std::string_view_literals;
    CHECK(resil::backoff{resil::full_jitter{0ns, 1s}}.invalid_reason() == "backoff base must be positive"sv);
    CHECK(resil::backoff{resil::full_jitter{-1ms, 1s}}.invalid_reason() == "backoff base must be positive"sv);
    CHECK(resil::backoff{resil::decorrelated_jitter{2s, 1s}}.invalid_reason() ==
          "backoff cap must be at least the base"sv);
    const auto bad_multiplier = "backoff multiplier must be finite and at least 1"sv;
    CHECK(resil::backoff{resil::equal_jitter{1ms, 1s, 0.5}}.invalid_reason() == bad_multiplier);
    CHECK(resil::backoff{resil::equal_jitter{1ms, 1s, nan_value}}.invalid_reason() == bad_multiplier);
    CHECK(resil::backoff{resil::equal_jitter{1ms, 1s, inf_value}}.invalid_reason() == bad_multiplier);
    CHECK(resil::backoff{resil::equal_jitter{1ms, 1s, -2.0}}.invalid_reason() == bad_multiplier);
    CHECK_FALSE(resil::backoff{resil::exponential_backoff{1s, 1s, 1.0}}.invalid_reason());  // constant delay is fine
}

TEST_CASE("backoff strategies: validate() names the field, the limit and the value") {
    using resil::decorrelated_jitter;
    using resil::equal_jitter;
    using resil::exponential_backoff;
    using resil::full_jitter;
    CHECK_FALSE(full_jitter{}.validate());
    CHECK_FALSE(equal_jitter{}.validate());
    CHECK_FALSE(exponential_backoff{}.validate());
    CHECK_FALSE(decorrelated_jitter{}.validate());

    const auto zero_base = full_jitter{0ns, 1s}.validate();
    REQUIRE(zero_base);
    CHECK(zero_base->field == "base");
    CHECK(zero_base->message() == "`base` must be at least 1ns, got 0s");
    CHECK(full_jitter{-1ms, 1s}.validate()->message() == "`base` must be at least 1ns, got -1ms");
    CHECK(decorrelated_jitter{0ns, 1s}.validate()->message() == "`base` must be at least 1ns, got 0s");

    CHECK(decorrelated_jitter{2s, 1s}.validate()->message() == "`cap` must be at least the base (2s), got 1s");
    CHECK(exponential_backoff{200ms, 100ms}.validate()->message() ==
          "`cap` must be at least the base (200ms), got 100ms");

    CHECK(equal_jitter{1ms, 1s, 0.5}.validate()->message() == "`multiplier` must be finite and at least 1, got 0.5");
    CHECK(equal_jitter{1ms, 1s, nan_value}.validate()->message() ==
          "`multiplier` must be finite and at least 1, got nan");
    CHECK(equal_jitter{1ms, 1s, inf_value}.validate()->message() ==
          "`multiplier` must be finite and at least 1, got inf");
    CHECK(full_jitter{1ms, 1s, -2.0}.validate()->message() == "`multiplier` must be finite and at least 1, got -2");
    CHECK(full_jitter{1ms, 1s, -2.0}.validate()->field == "multiplier");

    // The limits themselves are valid: a constant delay, a 1 ns base, base == cap.
    CHECK_FALSE(exponential_backoff{1s, 1s, exponential_backoff::min_multiplier}.validate());
    CHECK_FALSE(full_jitter{full_jitter::min_base, full_jitter::min_base}.validate());
    CHECK_FALSE(decorrelated_jitter{decorrelated_jitter::min_base, 1ns}.validate());
    CHECK_FALSE(full_jitter{1ms, 1s, std::numeric_limits<double>::max()}.validate());
    // The first invalid field is the one named.
    CHECK(full_jitter{0ns, -1s, nan_value}.validate()->field == "base");
    CHECK(full_jitter{2s, 1s, nan_value}.validate()->field == "cap");
}

TEST_CASE("backoff: validate() is the held strategy's, and throws through throw_if_invalid") {
    const resil::backoff broken = resil::equal_jitter{.base = 50ms, .cap = 10ms};
    const auto bad = broken.validate();
    REQUIRE(bad);
    CHECK(bad->message() == "`cap` must be at least the base (50ms), got 10ms");
    CHECK(bad->within("backoff").message() == "`backoff.cap` must be at least the base (50ms), got 10ms");
    CHECK(resil::backoff{resil::decorrelated_jitter{0ns, 1s}}.validate()->message() ==
          "`base` must be at least 1ns, got 0s");
    CHECK(resil::backoff{resil::exponential_backoff{1ms, 1s, 0.5}}.validate()->message() ==
          "`multiplier` must be finite and at least 1, got 0.5");
    CHECK_FALSE(resil::backoff{}.validate());
    CHECK_THROWS_WITH(resil::throw_if_invalid("resil::retry_policy", broken.validate()),
                      "resil::retry_policy: `cap` must be at least the base (50ms), got 10ms");
}

TEST_CASE("backoff: the strategy held is a std::variant, in the order of backoff_kind") {
    const resil::backoff chosen = resil::equal_jitter{50ms, 2s, 3.0};
    const auto* held = std::get_if<resil::equal_jitter>(&chosen.strategy());
    REQUIRE(held);
    CHECK(*held == resil::equal_jitter{50ms, 2s, 3.0});
    CHECK(chosen.strategy().index() == static_cast<std::size_t>(resil::backoff_kind::equal_jitter));
    CHECK(std::visit([](const auto& s) { return s.cap; }, chosen.strategy()) == 2s);
    static_assert(std::is_aggregate_v<resil::full_jitter> && std::is_aggregate_v<resil::decorrelated_jitter>,
                  "strategies are aggregates: positional and designated initialisers both work");
    static_assert(!std::is_same_v<resil::full_jitter, resil::equal_jitter>);
    static_assert(resil::backoff{resil::full_jitter{.base = 10ms}}.cap() == 1s, "usable at compile time");
}

TEST_CASE("backoff kinds round-trip through their names") {
    for (const auto kind : {resil::backoff_kind::exponential, resil::backoff_kind::full_jitter,
                            resil::backoff_kind::equal_jitter, resil::backoff_kind::decorrelated_jitter}) {
        CHECK(resil::parse_backoff_kind(resil::backoff_kind_name(kind)) == kind);
    }
    CHECK(resil::backoff_kind_name(resil::backoff_kind::full_jitter) == "full_jitter");
    CHECK_FALSE(resil::parse_backoff_kind(""));
    CHECK_FALSE(resil::parse_backoff_kind("Full_Jitter"));
    CHECK_FALSE(resil::parse_backoff_kind("full_jitter "));
    CHECK_FALSE(resil::parse_backoff_kind("none"));
}
