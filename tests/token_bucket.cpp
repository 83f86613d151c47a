#include <resil/context.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/token_bucket.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::time_point;
using resil::token_bucket_status;
using resil::testing::manual_clock;
using bucket_t = resil::basic_token_bucket<manual_clock>;
namespace gcra = resil::detail::gcra;

namespace {

// The instant `num / den` seconds after t0, in whole nanoseconds (rounded down).
time_point at(time_point t0, std::int64_t num, std::int64_t den) {
    return t0 + duration{num * 1'000'000'000 / den};
}

// A manual clock whose sleep_for runs a hook first: lets a test act "during"
// a sleep, or make the sleep end early as a stop request would.
class scripted_clock {
public:
    using hook = std::function<bool(duration)>;  // returns what sleep_for returns

    [[nodiscard]] time_point now() const noexcept { return time_.now(); }
    bool sleep_for(duration d, std::stop_token stop = {}) const {
        if (*on_sleep_) return (*on_sleep_)(d);
        return time_.sleep_for(d, stop);
    }
    void set_hook(hook h) const { *on_sleep_ = std::move(h); }
    [[nodiscard]] const manual_clock& time() const noexcept { return time_; }

private:
    manual_clock time_;
    std::shared_ptr<hook> on_sleep_ = std::make_shared<hook>();
};
static_assert(resil::clock<scripted_clock>);

struct rejection_log {
    std::vector<resil::events::rejected>* seen;
    void operator()(const resil::events::rejected& e) const { seen->push_back(e); }
};

}  // namespace

// ---------------------------------------------------------------------------
// The classic example and other golden traces on the manual clock.

TEST_CASE("token bucket: 50/s burst 100, 300 requests in the first second -> 149 pass, then 50 of 50 at the rate") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 50, .burst = 100}, clock};

    int passed = 0, rejected = 0;
    resil::token_bucket_result last_rejection;
    for (std::int64_t i = 0; i < 300; ++i) {
        clock.advance_to(at(t0, i, 300));
        const auto r = bucket.try_acquire();
        if (r) {
            ++passed;
        } else {
            REQUIRE(r.status == token_bucket_status::rejected);
            ++rejected;
            last_rejection = r;
        }
    }
    CHECK(passed == 149);
    CHECK(rejected == 151);
    // The last request comes at 299/300 s; the next token arrives at 1 s.
    CHECK(last_rejection.wait == 1s - duration{299'000'000'000 / 300});
    CHECK(last_rejection.retry_after == 1s);

    for (std::int64_t i = 0; i < 50; ++i) {
        clock.advance_to(t0 + 1s + duration{i * 20'000'000});
        INFO("request " << i << " at 1 + " << i << "/50 s");
        CHECK(bucket.try_acquire());
    }
    CHECK(bucket.available() == 0);
    clock.advance(3s);
    CHECK(bucket.tokens() == 100.0);
    CHECK(bucket.available() == 100);
}

TEST_CASE("token bucket: 20/s burst 40, 100 requests in 0.5 s -> about 50 pass, full again within 2 s") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 20, .burst = 40}, clock};
    int passed = 0;
    for (std::int64_t i = 0; i < 100; ++i) {
        clock.advance_to(at(t0, i, 200));  // i × 5 ms
        if (bucket.try_acquire()) ++passed;
    }
    CHECK(passed >= 49);
    CHECK(passed <= 51);
    CHECK(passed == 49);  // exactly 40 + ⌊20/s × 0.495 s⌋
    const auto last = clock.now();
    CHECK(bucket.tokens(last) < 1.0);
    CHECK(bucket.tokens(last + 1900ms) < 40.0);
    CHECK(bucket.tokens(last + 2s) == 40.0);
    CHECK(bucket.available(last + 2s) == 40);
}

namespace {

// The naive limiter the bucket replaces: N per window, the count reset at
// each window's start.
struct fixed_window_counter {
    std::int64_t limit;
    duration window;
    std::int64_t current_window = -1;
    std::int64_t count = 0;

    bool allow(duration since_start) {
        const auto w = since_start / window;
        if (w != current_window) {
            current_window = w;
            count = 0;
        }
        if (count >= limit) return false;
        ++count;
        return true;
    }
};

// The most grants inside any half-open window [t, t + width), t ranging over
// the grant times (the maximum is always attained at one of them).
std::size_t max_in_any_window(const std::vector<time_point>& grants, duration width) {
    std::size_t best = 0, first = 0;
    for (std::size_t last = 0; last < grants.size(); ++last) {
        while (grants[last] - grants[first] >= width) ++first;
        best = std::max(best, last - first + 1);
    }
    return best;
}

}  // namespace

TEST_CASE("token bucket vs fixed window: 3,000/min lets 6,000 through in 2 s; 50/s burst 150 never more than 250") {
    // Edge burst: 3,000 requests in the last second of a minute, 3,000 in the
    // first second of the next.
    std::vector<duration> edge_trace;
    for (std::int64_t i = 0; i < 3000; ++i) edge_trace.push_back(59s + duration{i * 1'000'000'000 / 3000});
    for (std::int64_t i = 0; i < 3000; ++i) edge_trace.push_back(60s + duration{i * 1'000'000'000 / 3000});

    fixed_window_counter window{3000, 60s};
    int window_allowed = 0;
    for (auto t : edge_trace) window_allowed += window.allow(t) ? 1 : 0;
    CHECK(window_allowed == 6000);  // twice the "per minute" limit within 2 s

    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 50, .burst = 150}, clock};
    std::vector<time_point> grants;
    for (auto t : edge_trace) {
        clock.advance_to(t0 + t);
        if (bucket.try_acquire()) grants.push_back(clock.now());
    }
    CHECK(grants.size() <= 250);
    CHECK(grants.size() >= 249);  // the full burst plus 2 s of refill, to the token
    CHECK(max_in_any_window(grants, 2s) <= 250);

    // A dense trace: one request per millisecond for 10 s.
    manual_clock dense_clock;
    const auto d0 = dense_clock.now();
    bucket_t dense{{.rate = 50, .burst = 150}, dense_clock};
    std::vector<time_point> dense_grants;
    for (std::int64_t ms = 0; ms < 10'000; ++ms) {
        dense_clock.advance_to(d0 + duration{ms * 1'000'000});
        if (dense.try_acquire()) dense_grants.push_back(dense_clock.now());
    }
    const auto busiest = max_in_any_window(dense_grants, 2s);
    CHECK(busiest <= 250);
    CHECK(busiest >= 249);
    // After the burst is spent the rate rules: 100 in every later 2 s.
    CHECK(dense_grants.size() == 649);  // 150 + ⌊9.999 s × 50/s⌋
}

// ---------------------------------------------------------------------------
// Answers and their units.

TEST_CASE("token bucket: Retry-After is the wait rounded up to whole seconds, at least 1") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 0.5, .burst = 1}, clock};
    REQUIRE(bucket.try_acquire());

    auto r = bucket.try_acquire();
    CHECK(r.status == token_bucket_status::rejected);
    CHECK(r.wait == 2s);
    CHECK(r.retry_after == 2s);

    r = bucket.try_acquire(t0 + 500ms);
    CHECK(r.wait == 1500ms);
    CHECK(r.retry_after == 2s);

    r = bucket.try_acquire(t0 + 1999ms);
    CHECK(r.wait == 1ms);
    CHECK(r.retry_after == 1s);

    r = bucket.try_acquire(t0 + 2s);
    CHECK(r);
    CHECK(r.wait == 0ns);
    CHECK(r.retry_after == 0s);
}

TEST_CASE("token bucket: a request larger than the burst is refused for good, with no wait") {
    manual_clock clock;
    bucket_t bucket{{.rate = 10, .burst = 5}, clock};
    const auto r = bucket.try_acquire(6);
    CHECK_FALSE(r);
    CHECK(r.status == token_bucket_status::exceeds_burst);
    CHECK(r.wait == 0ns);
    CHECK(r.retry_after == 0s);
    CHECK(bucket.available() == 5);  // nothing taken
    CHECK(bucket.try_acquire(5));    // the whole burst is fine
    CHECK(bucket.try_acquire(std::numeric_limits<std::int64_t>::max()).status == token_bucket_status::exceeds_burst);
}

TEST_CASE("token bucket: n = 0 is granted and takes nothing; a negative n is an error") {
    manual_clock clock;
    bucket_t bucket{{.rate = 1, .burst = 1}, clock};
    REQUIRE(bucket.try_acquire());
    CHECK(bucket.try_acquire(0));
    CHECK(bucket.try_acquire(1).status == token_bucket_status::rejected);
    CHECK_THROWS_AS(bucket.try_acquire(-1), std::invalid_argument);
    CHECK_THROWS_AS(bucket.acquire(resil::basic_deadline<manual_clock>::after(1s, clock), -3), std::invalid_argument);
}

TEST_CASE("token bucket: multi-token requests take several at once and wait for all of them") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 100, .burst = 10}, clock};
    CHECK(bucket.try_acquire(7));
    CHECK(bucket.available() == 3);
    const auto r = bucket.try_acquire(5);
    CHECK(r.status == token_bucket_status::rejected);
    CHECK(r.wait == 20ms);  // 2 more tokens at 10 ms each
    CHECK(bucket.available() == 3);  // a rejection takes nothing
    CHECK(bucket.try_acquire(t0 + 20ms, 5));
    CHECK(bucket.available(t0 + 20ms) == 0);
}

TEST_CASE("token bucket: tokens() counts the fraction refilling; available() the whole ones") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 50, .burst = 100}, clock};
    CHECK(bucket.tokens() == 100.0);
    REQUIRE(bucket.try_acquire(100));
    CHECK(bucket.tokens() == 0.0);
    CHECK(bucket.tokens(t0 + 10ms) == Approx(0.5));
    CHECK(bucket.available(t0 + 10ms) == 0);
    CHECK(bucket.tokens(t0 + 30ms) == Approx(1.5));
    CHECK(bucket.available(t0 + 30ms) == 1);
    CHECK(bucket.tokens(t0 + 1h) == 100.0);  // never above the burst
}

TEST_CASE("token bucket: an instant before the bucket's origin counts as the origin") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 1, .burst = 2}, clock};
    CHECK(bucket.tokens(t0 - 30min) == 2.0);
    CHECK(bucket.try_acquire(t0 - 30min));
    CHECK(bucket.try_acquire(t0 - 1h));
    const auto r = bucket.try_acquire(t0 - 1h);
    CHECK(r.status == token_bucket_status::rejected);
    CHECK(r.wait == 1s);  // measured from the origin
}

// ---------------------------------------------------------------------------
// Arithmetic: exactness, range, overflow.

TEST_CASE("token bucket: high rates are exact, not rounded to whole nanoseconds per token") {
    // 6e8/s is 1.67 ns per token: a bucket counting whole nanoseconds would
    // run at 5e8/s.
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 6e8, .burst = 1'000'000'000}, clock};
    REQUIRE(bucket.try_acquire(1'000'000'000));
    const auto refilled = bucket.available(t0 + 1s);
    CHECK(refilled <= 600'000'000);
    CHECK(refilled >= 599'999'999);

    // And over a long time, no drift: 3/s for a million seconds.
    manual_clock slow_clock;
    const auto s0 = slow_clock.now();
    bucket_t slow{{.rate = 3, .burst = 4'000'000}, slow_clock};
    REQUIRE(slow.try_acquire(4'000'000));
    const auto after = slow.available(s0 + 1'000'000s);
    CHECK(after <= 3'000'000);
    CHECK(after >= 2'999'999);
}

TEST_CASE("token bucket: the ends of the documented range neither overflow nor misbehave") {
    SECTION("1e-3 per second: one token per 1000 s") {
        manual_clock clock;
        const auto t0 = clock.now();
        bucket_t bucket{{.rate = 1e-3, .burst = 1}, clock};
        REQUIRE(bucket.try_acquire());
        const auto r = bucket.try_acquire();
        CHECK(r.wait == 1000s);
        CHECK(r.retry_after == 1000s);
        CHECK(bucket.try_acquire(t0 + 1000s));
    }
    SECTION("1e9 per second with a burst of 1e15") {
        manual_clock clock;
        const auto t0 = clock.now();
        bucket_t bucket{{.rate = 1e9, .burst = 1'000'000'000'000'000}, clock};
        REQUIRE(bucket.try_acquire(1'000'000'000'000'000));
        const auto r = bucket.try_acquire(1'000'000'000'000'000);
        CHECK(r.wait == 1'000'000s);
        CHECK(bucket.available(t0 + 1ms) == 1'000'000);
        CHECK(bucket.available(t0 + 1'000'000s) == 1'000'000'000'000'000);
    }
    SECTION("the longest refill allowed: burst / rate = 1e9 s") {
        manual_clock clock;
        bucket_t bucket{{.rate = 1e-3, .burst = 1'000'000}, clock};
        REQUIRE(bucket.try_acquire(1'000'000));
        const auto r = bucket.try_acquire(1'000'000);
        CHECK(r.wait == duration{1'000'000'000'000'000'000});
        CHECK(r.retry_after == std::chrono::seconds{1'000'000'000});
    }
    SECTION("a bucket older than 73 years stops refilling instead of overflowing") {
        manual_clock clock;
        const auto t0 = clock.now();
        bucket_t bucket{{.rate = 1e9, .burst = 1000}, clock};
        const auto far = t0 + std::chrono::hours{24 * 365 * 200};
        CHECK(bucket.try_acquire(far, 1000));
        CHECK(bucket.tokens(far) == 0.0);
        CHECK(bucket.tokens(time_point::max()) == 0.0);  // time stands still past the clamp
        const auto r = bucket.try_acquire(time_point::max());
        CHECK(r.status == token_bucket_status::rejected);
        CHECK(r.wait > 0ns);
        CHECK(r.wait < 1h);
    }
}

TEST_CASE("token bucket: options outside their range are refused with a clear message") {
    using opts = resil::token_bucket_options;
    const auto nan = std::numeric_limits<double>::quiet_NaN();
    const auto inf = std::numeric_limits<double>::infinity();
    for (const auto& bad : {opts{.rate = 0}, opts{.rate = -1}, opts{.rate = nan}, opts{.rate = inf},
                            opts{.rate = 2e9}, opts{.rate = 1e-4}, opts{.burst = 0}, opts{.burst = -5},
                            opts{.burst = 2'000'000'000'000'000}, opts{.rate = 1e-3, .burst = 10'000'000},
                            opts{.max_wait = -1ms}}) {
        CHECK_THROWS_AS(resil::token_bucket{bad}, std::invalid_argument);
    }
    try {
        resil::token_bucket b{{.rate = 0, .burst = 10}};
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "resil::token_bucket: `rate` must be in [0.001, 1e9], got 0");
    }
    const resil::token_bucket fine{{.rate = 1e9, .burst = 1, .max_wait = 1s}};
    CHECK(fine.options() == opts{.rate = 1e9, .burst = 1, .max_wait = 1s});
    CHECK(resil::token_bucket{}.options() == opts{.rate = 50, .burst = 100});
}

TEST_CASE("token bucket options: validate() names the field, its range and the value") {
    using opts = resil::token_bucket_options;
    const auto nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(opts{}.validate());
    CHECK(opts{.rate = 0}.validate()->field == "rate");
    CHECK(opts{.rate = 0}.validate()->message() == "`rate` must be in [0.001, 1e9], got 0");
    CHECK(opts{.rate = 2e9}.validate()->message() == "`rate` must be in [0.001, 1e9], got 2e9");
    CHECK(opts{.rate = nan}.validate()->message() == "`rate` must be in [0.001, 1e9], got nan");
    CHECK(opts{.burst = 0}.validate()->message() == "`burst` must be in [1, 1000000000000000], got 0");
    CHECK(opts{.burst = -5}.validate()->message() == "`burst` must be in [1, 1000000000000000], got -5");
    CHECK(opts{.rate = 1e-3, .burst = 10'000'000}.validate()->message() ==
          "`burst` must be at most 1000000 at rate 0.001 (burst / rate, the time to refill an empty bucket, at most "
          "1e9 s), got 10000000");
    CHECK(opts{.rate = 0.0015, .burst = 1'500'001}.validate()->message() ==
          "`burst` must be at most 1500000 at rate 0.0015 (burst / rate, the time to refill an empty bucket, at most "
          "1e9 s), got 1500001");
    CHECK(opts{.max_wait = -1ms}.validate()->message() == "`max_wait` must be at least 0s, got -1ms");

    // The limits themselves are valid, and the largest burst named is the boundary.
    CHECK_FALSE(opts{.rate = opts::min_rate, .burst = opts::min_burst}.validate());
    CHECK_FALSE(opts{.rate = opts::max_rate, .burst = opts::max_burst, .max_wait = opts::min_max_wait}.validate());
    CHECK_FALSE(opts{.rate = 1e-3, .burst = 1'000'000}.validate());
    for (const double rate : {1e-3, 0.0015, 0.003, 0.7, 1.0 / 3.0, 12.5, 999'999.9, 1e6, 1e9}) {
        INFO("rate " << rate);
        const auto top = resil::detail::gcra::largest_burst(rate);
        CHECK(resil::detail::gcra::valid(rate, top));
        if (top < opts::max_burst) CHECK_FALSE(resil::detail::gcra::valid(rate, top + 1));
    }
    CHECK(resil::detail::gcra::largest_burst(nan) == 0);

    // The constructor throws the same message, named after the policy.
    CHECK_THROWS_WITH(resil::token_bucket({.max_wait = -1ms}),
                      "resil::token_bucket: `max_wait` must be at least 0s, got -1ms");
    CHECK_THROWS_WITH(resil::token_bucket({.burst = 0}),
                      "resil::token_bucket: `burst` must be in [1, 1000000000000000], got 0");
}

TEST_CASE("token bucket: status names") {
    CHECK(resil::to_string(token_bucket_status::granted) == "granted");
    CHECK(resil::to_string(token_bucket_status::rejected) == "rejected");
    CHECK(resil::to_string(token_bucket_status::exceeds_burst) == "exceeds_burst");
    CHECK(resil::to_string(token_bucket_status::cancelled) == "cancelled");
}

TEST_CASE("gcra core: 128-bit and portable arithmetic agree; first_ns_at is the exact inverse of to_units") {
    std::mt19937_64 rng{20240611};
    for (int i = 0; i < 20000; ++i) {
        const auto a = rng() >> 2;                      // < 2^62
        const auto b = gcra::one_q32 + (rng() >> 32);   // [2^32, 2^33)
        REQUIRE(gcra::mul_q32(a, b) == gcra::mul_q32_portable(a, b));
        const auto n = rng() >> 1;                      // < 2^63
        REQUIRE(gcra::div_q32_ceil(n, b) == gcra::div_q32_ceil_portable(n, b));
    }
    CHECK(gcra::div_q32_ceil_portable(0, gcra::one_q32) == 0);
    CHECK(gcra::div_q32_ceil_portable(1, gcra::one_q32) == 1);
    CHECK(gcra::div_q32_ceil_portable(5, 2 * gcra::one_q32 - 1) == 3);

    for (double rate : {1e-3, 0.7, 3.0, 50.0, 333.0, 1e6, 6e8, 9.99e8, 1e9}) {
        const auto p = gcra::make_params(rate, 1);
        INFO("rate " << rate);
        CHECK(p.token_units >= 1);
        CHECK(p.units_per_ns_q32 >= gcra::one_q32);
        CHECK(p.units_per_ns_q32 < 2 * gcra::one_q32);
        // Never faster than the rate: one token takes at least 1e9 / rate ns.
        CHECK(static_cast<double>(gcra::first_ns_at(p, p.token_units)) >= std::floor(1e9 / rate));
        for (int i = 0; i < 2000; ++i) {
            const auto units = static_cast<std::int64_t>((rng() >> 3) | 1);  // in [1, 2^61)
            const auto t = gcra::first_ns_at(p, units);
            if (t > gcra::max_elapsed_ns) continue;
            REQUIRE(gcra::to_units(p, t) >= units);
            REQUIRE(gcra::to_units(p, t - 1) < units);
        }
    }
    const auto p50 = gcra::make_params(50, 100);
    CHECK(p50.token_units == 20'000'000);
    CHECK(p50.units_per_ns_q32 == gcra::one_q32);  // exact: 50 divides 1e9
    CHECK(p50.tolerance == 2'000'000'000);
}

TEST_CASE("gcra core: the wait by multiply-and-check equals the exact 128-bit division, for every f") {
    // first_ns_at() estimates ⌈units · 2^32 / f⌉ with the reciprocal ⌊2^96 / f⌋
    // and steps up by multiplication: it must land on the division's answer.
    std::mt19937_64 rng{20251130};
    std::vector<std::uint64_t> factors{gcra::one_q32, gcra::one_q32 + 1, gcra::one_q32 + 4, gcra::one_q32 + 12345,
                                       gcra::one_q32 * 3 / 2, 2 * gcra::one_q32 - 2, 2 * gcra::one_q32 - 1};
    for (int i = 0; i < 64; ++i) factors.push_back(gcra::one_q32 + (rng() >> 32));
    for (double rate : {0.7, 3.0, 7.0, 333.0, 1e6, 3e8, 6e8, 9.99e8})
        factors.push_back(gcra::make_params(rate, 1).units_per_ns_q32);
    constexpr auto top = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    for (const auto f : factors) {
        INFO("f " << f);
        gcra::params p;
        p.units_per_ns_q32 = f;
        p.ns_per_unit_q64 = gcra::reciprocal_q64(f);
        CHECK((p.ns_per_unit_q64 == 0) == (f == gcra::one_q32));
        std::vector<std::uint64_t> units{1, 2, 3, f - 1, f, f + 1, top - 1, top};
        for (int i = 0; i < 2000; ++i) units.push_back((rng() >> 1) | 1);   // in [1, 2^63)
        for (int i = 0; i < 500; ++i) units.push_back(rng() >> (1 + rng() % 62));  // every magnitude
        for (const auto u : units) {
            if (u == 0) continue;
            INFO("units " << u);
            REQUIRE(static_cast<std::uint64_t>(gcra::first_ns_at(p, static_cast<std::int64_t>(u))) ==
                    gcra::div_q32_ceil(u, f));
        }
    }
    // make_params keeps the reciprocal it computes.
    CHECK(gcra::make_params(7, 1).ns_per_unit_q64 == gcra::reciprocal_q64(gcra::make_params(7, 1).units_per_ns_q32));
    CHECK(gcra::make_params(50, 1).ns_per_unit_q64 == 0);  // f = 1 exactly: no estimate needed
}

TEST_CASE("gcra core: decide grants within the tolerance and reserves within a lookahead") {
    const auto p = gcra::make_params(1, 2);  // 1e9 units per token, tolerance 2e9
    auto d = gcra::decide(p, 0, 0, 2);
    CHECK(d.conforming);
    CHECK(d.new_tat == 2'000'000'000);
    d = gcra::decide(p, d.new_tat, 0, 1);
    CHECK_FALSE(d.conforming);
    CHECK(d.ready_at == 1'000'000'000);
    d = gcra::decide(p, 2'000'000'000, 0, 1, 1'000'000'000);
    CHECK(d.conforming);  // a reservation one second ahead
    CHECK(gcra::tokens(p, d.new_tat, 0) == 0.0);
    CHECK(gcra::whole_tokens(p, 2'500'000'000, 1'000'000'000) == 0);
    CHECK(gcra::tokens(p, 2'500'000'000, 1'000'000'000) == Approx(0.5));
    CHECK(gcra::valid(50, 100));
    CHECK_FALSE(gcra::valid(std::numeric_limits<double>::quiet_NaN(), 1));
}

// ---------------------------------------------------------------------------
// Concurrency.

TEST_CASE("token bucket: threads hammering one bucket never get more than rate × t + burst") {
    manual_clock clock;
    const auto t0 = clock.now();
    constexpr double rate = 1000;
    constexpr std::int64_t burst = 50;
    bucket_t bucket{{.rate = rate, .burst = burst}, clock};

    constexpr int hammers = 3;
    std::atomic<bool> done{false};
    std::vector<std::vector<time_point>> grants(hammers);
    std::vector<std::thread> threads;
    for (int h = 0; h < hammers; ++h) {
        threads.emplace_back([&, h] {
            auto& mine = grants[static_cast<std::size_t>(h)];
            for (int i = 0; i < 2000 || !done.load(); ++i) {
                // Some threads read the clock themselves, others let the bucket.
                if (h % 2 == 0) {
                    const auto now = clock.now();
                    if (bucket.try_acquire(now)) mine.push_back(now);
                } else if (bucket.try_acquire()) {
                    mine.push_back(clock.now());  // no earlier than the bucket's own read
                }
            }
        });
    }
    std::thread advancer([&] {
        for (int step = 0; step < 500; ++step) {
            clock.advance(1ms);
            std::this_thread::yield();
        }
        done = true;
    });
    advancer.join();
    for (auto& t : threads) t.join();

    std::vector<time_point> all;
    for (auto& g : grants) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    const auto elapsed = std::chrono::duration<double>(clock.now() - t0).count();
    CHECK(static_cast<double>(all.size()) <= rate * elapsed + burst);
    CHECK(all.size() >= static_cast<std::size_t>(burst));  // the full bucket is always there to take
    // The invariant holds at every instant, not just at the end: at most
    // rate × t + burst grants decided at or before t.
    for (std::size_t k = 0; k < all.size(); ++k) {
        const auto t = std::chrono::duration<double>(all[k] - t0).count();
        INFO("grant " << k << " at " << t << " s");
        REQUIRE(static_cast<double>(k + 1) <= rate * t + burst);
    }
}

// ---------------------------------------------------------------------------
// Blocking acquire.

TEST_CASE("token bucket: acquire waits the right time on the manual clock") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 10, .burst = 5}, clock};
    const auto within_1s = resil::basic_deadline<manual_clock>::after(1s, clock);

    auto r = bucket.acquire(within_1s, 5);  // available: no sleep
    CHECK(r);
    CHECK(r.wait == 0ns);
    CHECK(clock.sleeps() == 0);

    r = bucket.acquire(within_1s);
    CHECK(r);
    CHECK(r.wait == 100ms);
    CHECK(clock.slept() == 100ms);
    CHECK(clock.now() - t0 == 100ms);

    r = bucket.acquire(within_1s, 3);  // 300 ms more, ending at 400 ms: fits
    CHECK(r);
    CHECK(r.wait == 300ms);
    CHECK(clock.now() - t0 == 400ms);
    CHECK(bucket.available() == 0);
}

TEST_CASE("token bucket: acquire gives up at once when the wait would pass the deadline") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 10, .burst = 5}, clock};
    REQUIRE(bucket.try_acquire(5));

    const auto r = bucket.acquire(resil::basic_deadline<manual_clock>::after(250ms, clock), 3);
    CHECK(r.status == token_bucket_status::rejected);
    CHECK(r.wait == 300ms);
    CHECK(r.retry_after == 1s);
    CHECK(clock.sleeps() == 0);
    CHECK(clock.now() == t0);
    CHECK(bucket.tokens() == 0.0);  // nothing reserved

    // A wait ending exactly at the deadline is fine.
    CHECK(bucket.acquire(resil::basic_deadline<manual_clock>::after(300ms, clock), 3));
    CHECK(clock.now() - t0 == 300ms);
    // An expired deadline still takes what is there now.
    clock.advance(100ms);
    CHECK(bucket.acquire(resil::basic_deadline<manual_clock>::at(t0, clock)));
    CHECK(bucket.acquire(resil::basic_deadline<manual_clock>::at(t0, clock)).status == token_bucket_status::rejected);
    // No deadline: waits as long as it takes.
    CHECK(bucket.acquire(resil::basic_deadline<manual_clock>{clock}, 5));
    CHECK(clock.now() - t0 == 900ms);
    // Too many is refused for good, without waiting.
    CHECK(bucket.acquire(resil::basic_deadline<manual_clock>{clock}, 6).status == token_bucket_status::exceeds_burst);
    CHECK(clock.now() - t0 == 900ms);
}

TEST_CASE("token bucket: acquire takes a context's deadline and stop token") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 10, .burst = 1}, clock};
    std::stop_source stop;
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
        .deadline = resil::basic_deadline<manual_clock>::after(150ms, clock), .stop = stop.get_token()}};
    CHECK(bucket.acquire(ctx));
    CHECK(bucket.acquire(ctx));  // 100 ms later
    CHECK(clock.now() - t0 == 100ms);
    CHECK(bucket.acquire(ctx).status == token_bucket_status::rejected);  // would end at 200 ms
    clock.advance(100ms);
    stop.request_stop();
    CHECK(bucket.acquire(ctx).status == token_bucket_status::cancelled);  // even with a token there
    CHECK(bucket.available() == 1);
}

TEST_CASE("token bucket: a stop during the wait cancels it and gives the reservation back") {
    scripted_clock clock;
    const auto t0 = clock.now();
    resil::basic_token_bucket<scripted_clock> bucket{{.rate = 10, .burst = 2}, clock};
    REQUIRE(bucket.try_acquire(2));

    duration asked{};
    clock.set_hook([&](duration d) {
        asked = d;
        clock.time().advance(d / 2);  // the stop arrives halfway
        return false;
    });
    const auto r = bucket.acquire(resil::basic_deadline<scripted_clock>::after(1s, clock), 2);
    CHECK(r.status == token_bucket_status::cancelled);
    CHECK(asked == 200ms);
    // Given back: at 100 ms the bucket holds its refill of one token.
    CHECK(clock.now() - t0 == 100ms);
    CHECK(bucket.available() == 1);
    CHECK(bucket.try_acquire());
}

TEST_CASE("token bucket: waiters reserve in order; a cancelled reservation others built on is forfeited") {
    scripted_clock clock;
    const auto t0 = clock.now();
    resil::basic_token_bucket<scripted_clock> bucket{{.rate = 10, .burst = 1}, clock};
    REQUIRE(bucket.try_acquire());
    const auto deadline = resil::basic_deadline<scripted_clock>::after(1s, clock);

    std::vector<duration> sleeps;
    resil::token_bucket_result second;
    clock.set_hook([&](duration d) {
        sleeps.push_back(d);
        if (sleeps.size() == 1) {
            // While the first waiter sleeps, a second one queues behind it...
            second = bucket.acquire(deadline);
            return false;  // ...and then the first is cancelled.
        }
        clock.time().advance(d);
        return true;
    });
    const auto first = bucket.acquire(deadline);
    CHECK(first.status == token_bucket_status::cancelled);
    REQUIRE(sleeps.size() == 2);
    CHECK(sleeps[0] == 100ms);
    CHECK(sleeps[1] == 200ms);  // behind the first reservation
    CHECK(second);
    CHECK(clock.now() - t0 == 200ms);
    // The first reservation was not returned: the second was built on it, so
    // at 200 ms the bucket is still empty.
    CHECK(bucket.available() == 0);
    CHECK(bucket.tokens() == 0.0);
}

TEST_CASE("token bucket: acquire in two halves (start_acquire, finish_acquire) waits on the caller's own timer, as acquire") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 10, .burst = 2}, clock};
    const auto deadline = resil::basic_deadline<manual_clock>::after(1s, clock);
    // Tokens there: granted at once, nothing to wait for.
    auto now = bucket.start_acquire(deadline, 2);
    CHECK_FALSE(now.waits());
    CHECK(now.result().status == token_bucket_status::granted);
    // Empty: reserved, the wait is until the instant they exist.
    auto later = bucket.start_acquire(deadline, 2);
    REQUIRE(later.waits());
    CHECK(later.until() == t0 + 200ms);
    clock.advance(200ms);  // the caller's timer
    const auto granted = bucket.finish_acquire(later, true);
    CHECK(granted.status == token_bucket_status::granted);
    CHECK(granted.wait == 200ms);
    CHECK(bucket.available() == 0);
    // Beyond the deadline: rejected at once with the wait, as acquire.
    auto too_late = bucket.start_acquire(resil::basic_deadline<manual_clock>::after(100ms, clock), 2);
    CHECK_FALSE(too_late.waits());
    CHECK(too_late.result().status == token_bucket_status::rejected);
    CHECK(too_late.result().wait == 200ms);
    // A wait cut short gives the reservation back.
    auto cut = bucket.start_acquire(deadline, 1);
    REQUIRE(cut.waits());
    CHECK(cut.until() == clock.now() + 100ms);
    clock.advance(50ms);
    CHECK(bucket.finish_acquire(cut, false).status == token_bucket_status::cancelled);
    clock.advance(50ms);
    CHECK(bucket.available() == 1);
    // A stop already requested: cancelled, nothing reserved.
    std::stop_source stop;
    stop.request_stop();
    const auto stopped = bucket.start_acquire(deadline, 1, stop.get_token());
    CHECK_FALSE(stopped.waits());
    CHECK(stopped.result().status == token_bucket_status::cancelled);
    CHECK(bucket.available() == 1);
}

// ---------------------------------------------------------------------------
// As a pipeline policy.

TEST_CASE("token bucket policy: rejects with rate_limited and the wait as retry_after") {
    manual_clock clock;
    bucket_t bucket{{.rate = 1, .burst = 2}, clock};
    std::vector<resil::events::rejected> seen;
    const auto pipe = resil::pipeline(clock, std::ref(bucket)).with_listener(rejection_log{&seen});
    int calls = 0;
    auto call = [&] { return ++calls; };

    CHECK(pipe(call, resil::always_success).ok());
    CHECK(pipe(call, resil::always_success).ok());
    clock.advance(250ms);
    const auto out = pipe(call, resil::always_success);
    CHECK_FALSE(out.ok());
    CHECK_FALSE(out.attempted());
    CHECK(out.reason() == resil::reason::rate_limited);
    REQUIRE(out.retry_after());
    CHECK(*out.retry_after() == 750ms);
    CHECK(calls == 2);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].reason == resil::reason::rate_limited);
    CHECK(seen[0].retry_after == std::optional<duration>{750ms});
    CHECK(clock.sleeps() == 0);
    CHECK(bucket.metrics() == resil::token_bucket_metrics{.granted = 2, .rejected = 1});
}

TEST_CASE("token bucket policy: with max_wait it paces calls, within the deadline") {
    manual_clock clock;
    const auto t0 = clock.now();
    bucket_t bucket{{.rate = 10, .burst = 1, .max_wait = 500ms}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(bucket));
    auto call = [] { return 1; };

    CHECK(pipe(call, resil::always_success).ok());
    CHECK(pipe(call, resil::always_success).ok());  // waited 100 ms for its token
    CHECK(clock.slept() == 100ms);
    CHECK(clock.now() - t0 == 100ms);

    // A deadline shorter than the wait: rejected at once, no sleep.
    const auto tight = resil::pipeline(clock, resil::deadline_policy{50ms}, std::ref(bucket));
    const auto out = tight(call, resil::always_success);
    CHECK(out.reason() == resil::reason::rate_limited);
    CHECK(out.retry_after() == std::optional<duration>{100ms});
    CHECK(clock.sleeps() == 1);

    // max_wait bounds the wait even without a deadline.
    bucket_t patient{{.rate = 1, .burst = 1, .max_wait = 500ms}, clock};
    REQUIRE(patient.try_acquire());
    const auto slow = resil::pipeline(clock, std::ref(patient));
    CHECK(slow(call, resil::always_success).reason() == resil::reason::rate_limited);
    CHECK(clock.sleeps() == 1);

    // A stop token cancels the wait.
    std::stop_source stop;
    stop.request_stop();
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.stop = stop.get_token()}};
    CHECK(pipe.execute(ctx, call, resil::always_success).reason() == resil::reason::cancelled);

    // The grant that waited is counted once, when its wait ended; the call
    // cancelled before it started never asked the bucket.
    CHECK(bucket.metrics() == resil::token_bucket_metrics{.granted = 2, .rejected = 1});
    CHECK(patient.metrics() == resil::token_bucket_metrics{.granted = 1, .rejected = 1});
}

TEST_CASE("token bucket: metrics() counts every answer once, whichever member gave it") {
    scripted_clock clock;
    resil::basic_token_bucket<scripted_clock> bucket{{.rate = 10, .burst = 2}, clock};
    CHECK(bucket.metrics() == resil::token_bucket_metrics{});
    CHECK(bucket.try_acquire(2));
    CHECK_FALSE(bucket.try_acquire(1));
    CHECK(bucket.try_acquire(3).status == token_bucket_status::exceeds_burst);
    CHECK(bucket.try_acquire(0));  // takes nothing: not counted
    const resil::basic_deadline<scripted_clock> none{clock};
    CHECK(bucket.acquire(none, 1));  // waits 100 ms
    CHECK(bucket.acquire(none, 5).status == token_bucket_status::exceeds_burst);
    CHECK(bucket.acquire(resil::basic_deadline<scripted_clock>::at(clock.now() + 10ms, clock), 1).status ==
          token_bucket_status::rejected);
    // A wait cut short: cancelled, not granted.
    clock.set_hook([](duration) { return false; });
    CHECK(bucket.acquire(none, 1).status == token_bucket_status::cancelled);
    std::stop_source stop;
    stop.request_stop();
    CHECK(bucket.acquire(none, 1, stop.get_token()).status == token_bucket_status::cancelled);
    CHECK(bucket.metrics() ==
          resil::token_bucket_metrics{.granted = 2, .rejected = 2, .exceeds_burst = 2, .cancelled = 2});

    // In a pipeline: a wait cut short is cancelled, not granted.
    resil::basic_token_bucket<scripted_clock> paced{{.rate = 10, .burst = 1, .max_wait = 1s}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(paced));
    clock.set_hook({});
    CHECK(pipe([] { return 1; }, resil::always_success).ok());
    clock.set_hook([](duration) { return false; });
    CHECK(pipe([] { return 1; }, resil::always_success).reason() == resil::reason::cancelled);
    CHECK(paced.metrics() == resil::token_bucket_metrics{.granted = 1, .cancelled = 1});
}

TEST_CASE("token bucket: counts from many threads add up exactly, with one stripe or many") {
    for (const std::size_t stripes : {std::size_t{1}, std::size_t{4}, resil::detail::default_stripe_count()}) {
        INFO(stripes << " stripes");
        resil::token_bucket bucket{{.rate = 0.001, .burst = 1}, {}, stripes};
        REQUIRE(bucket.try_acquire());
        constexpr int threads = 4, each = 10'000;
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < each; ++i) (void)bucket.try_acquire();
            });
        pool.clear();
        CHECK(bucket.metrics() == resil::token_bucket_metrics{.granted = 1, .rejected = threads * each});
        // Grants from many threads too: a bucket that never runs dry.
        resil::token_bucket fast{{.rate = 1e9, .burst = 1'000'000'000}, {}, stripes};
        std::atomic<int> refused{0};  // Catch's assertions are not for other threads
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < each; ++i)
                    if (!fast.try_acquire()) refused.fetch_add(1);
            });
        pool.clear();
        CHECK(refused.load() == 0);
        CHECK(fast.metrics() == resil::token_bucket_metrics{.granted = threads * each});
    }
}

TEST_CASE("token bucket on the real clock: grants the burst, then rejects with a sub-second wait") {
    resil::token_bucket bucket{{.rate = 1, .burst = 3}};
    CHECK(bucket.try_acquire(3));
    const auto r = bucket.try_acquire();
    CHECK(r.status == token_bucket_status::rejected);
    CHECK(r.wait > 0ns);
    CHECK(r.wait <= 1s);
    CHECK(r.retry_after == 1s);
    CHECK(bucket.available() <= 1);
}

// ---------------------------------------------------------------------------
// Clock readings out of step: late, lagging, leading.

namespace {

// A manual clock whose next reading can be ahead of its time (another CPU's
// clock, a bogus value) and whose reads can take time (a preemption right
// after reading). Sleeps are the manual clock's.
class skewed_clock {
public:
    [[nodiscard]] time_point now() const noexcept {
        const auto t = time_.now() + duration{state_->lead_next.exchange(0)};
        time_.advance(duration{state_->after_read.load()});
        return t;
    }
    bool sleep_for(duration d, const std::stop_token& stop = {}) const { return time_.sleep_for(d, stop); }
    bool sleep_until(time_point t, const std::stop_token& stop = {}) const { return time_.sleep_until(t, stop); }
    void lead_next_read(duration d) const { state_->lead_next = d.count(); }
    void each_read_takes(duration d) const { state_->after_read = d.count(); }
    [[nodiscard]] const manual_clock& time() const noexcept { return time_; }

private:
    struct state {
        std::atomic<std::int64_t> lead_next{0};
        std::atomic<std::int64_t> after_read{0};
    };
    manual_clock time_;
    std::shared_ptr<state> state_ = std::make_shared<state>();
};
static_assert(resil::clock<skewed_clock>);

// Splitmix64: the same sequence on every standard library.
struct splitmix {
    std::uint64_t s;
    std::uint64_t operator()() {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
    }
};

// The largest number of instants in `times` inside any [a, a + len] window
// beyond rate × len + burst (0 when the bound holds everywhere).
double worst_excess(std::vector<double> times, double rate, double burst) {
    std::sort(times.begin(), times.end());
    double worst = 0;
    for (std::size_t i = 0; i < times.size(); ++i)
        for (std::size_t j = i; j < times.size(); ++j)
            worst = std::max(worst, static_cast<double>(j - i + 1) - (rate * (times[j] - times[i]) + burst));
    return worst;
}

}  // namespace

TEST_CASE("token bucket: acquire wakes at the instant its tokens exist, however long it took to start sleeping") {
    skewed_clock clock;
    const auto t0 = clock.time().now();
    resil::basic_token_bucket<skewed_clock> bucket{{.rate = 10, .burst = 1}, clock};
    REQUIRE(bucket.try_acquire(t0));
    // The acquiring thread is preempted for 7 ms right after reading the
    // clock: it must still wake at t0 + 100 ms, not 7 ms later.
    clock.each_read_takes(7ms);
    const auto r = bucket.acquire(resil::basic_deadline<skewed_clock>::at(t0 + 1s, clock));
    CHECK(r);
    CHECK(r.wait == 100ms);  // decided from the reading at entry
    CHECK(clock.time().now() == t0 + 100ms);
}

TEST_CASE("token bucket: a reading ahead of the clock does not wake acquire before its tokens exist") {
    skewed_clock clock;
    const auto t0 = clock.time().now();
    resil::basic_token_bucket<skewed_clock> bucket{{.rate = 10, .burst = 1}, clock};
    REQUIRE(bucket.try_acquire(t0));
    clock.lead_next_read(60ms);  // this thread's reading is 60 ms ahead of the others'
    const auto r = bucket.acquire(resil::basic_deadline<skewed_clock>::at(t0 + 1s, clock));
    CHECK(r);
    CHECK(clock.time().now() == t0 + 100ms);  // the next token, not 60 ms early
}

TEST_CASE("gcra core: readings in any order never grant more than r·t + B in any interval of readings") {
    // GCRA dates a grant at its reading (a reservation at the instant its
    // tokens exist). Readings arriving late, early or far ahead, reservations
    // and their refunds: the bound holds over every interval of those dates.
    splitmix rng{42};
    for (int trial = 0; trial < 20'000; ++trial) {
        const auto burst = static_cast<std::int64_t>(1 + rng() % 4);
        const auto p = gcra::make_params(1e9, burst);  // one unit per token
        std::int64_t tat = 0;
        struct reservation {
            std::int64_t before, after;
            bool kept;
        };
        std::vector<reservation> held;
        std::vector<std::pair<double, std::ptrdiff_t>> grants;  // date, reservation or -1
        for (int op = 0; op < 12; ++op) {
            const auto kind = rng() % 4;
            if (kind == 3) {  // cancel a reservation: give it back only if it is the last change
                if (held.empty()) continue;
                auto& h = held[rng() % held.size()];
                if (h.kept && tat == h.after) tat = h.before;
                h.kept = false;
                continue;
            }
            const auto now = static_cast<std::int64_t>(rng() % 20);
            const auto n = static_cast<std::int64_t>(1 + rng() % static_cast<std::uint64_t>(burst));
            const auto lookahead = kind == 2 ? static_cast<std::int64_t>(rng() % 10) : 0;
            const auto d = gcra::decide(p, tat, now, n, lookahead);
            if (!d.conforming) continue;
            std::ptrdiff_t index = -1;
            if (d.ready_at > now) {
                held.push_back({tat, d.new_tat, true});
                index = static_cast<std::ptrdiff_t>(held.size()) - 1;
            }
            tat = d.new_tat;
            for (std::int64_t i = 0; i < n; ++i)
                grants.emplace_back(static_cast<double>(std::max(now, d.ready_at)), index);
        }
        std::vector<double> dates;
        for (const auto& [date, index] : grants)
            if (index < 0 || held[static_cast<std::size_t>(index)].kept) dates.push_back(date);
        INFO("trial " << trial);
        REQUIRE(worst_excess(dates, 1.0, static_cast<double>(burst)) <= 0.0);
    }
}

TEST_CASE("token bucket: threads whose readings lag and lead each other never get more than r·t + B") {
    manual_clock clock;
    const auto t0 = clock.now();
    constexpr double rate = 1000;
    constexpr std::int64_t burst = 20;
    bucket_t bucket{{.rate = rate, .burst = burst}, clock};
    constexpr int threads = 8;
    std::vector<std::vector<double>> dates(threads);
    std::atomic<int> ready{0};
    {
        std::vector<std::jthread> pool;
        for (int id = 0; id < threads; ++id)
            pool.emplace_back([&, id] {
                ready.fetch_add(1);
                while (ready.load() < threads + 1) std::this_thread::yield();
                // Each thread's clock is out of step with the others' by up to ±1.2 ms.
                const auto skew = duration{(id - threads / 2) * 300'000};
                for (int i = 0; i < 3'000; ++i) {
                    const auto reading = clock.now() + skew;
                    if (bucket.try_acquire(reading))
                        dates[static_cast<std::size_t>(id)].push_back(
                            std::chrono::duration<double>(reading - t0).count());
                }
            });
        ready.fetch_add(1);
        while (ready.load() < threads + 1) std::this_thread::yield();
        for (int step = 0; step < 100; ++step) {
            clock.advance(100us);
            std::this_thread::yield();
        }
    }
    std::vector<double> all;
    for (const auto& d : dates) all.insert(all.end(), d.begin(), d.end());
    CHECK(all.size() >= static_cast<std::size_t>(burst));
    // 1e-9: the bound is exact in integer units; leave room for the doubles.
    CHECK(worst_excess(all, rate, static_cast<double>(burst)) <= 1e-9);
}

// ---------------------------------------------------------------------------
// The answer: resil::rate_limit_decision, with where the bucket stands.

namespace {

// The IETF reset from the bucket's public readings alone: the least wait
// after `now` at which it holds one whole token more than at `now` (zero
// when full). The same reference the Redis limiter's test holds its own
// answers to (tests/redis_exact.cpp).
template <class Bucket>
duration reset_by_search(const Bucket& bucket, time_point now, std::int64_t burst, double rate) {
    const auto whole = bucket.available(now);
    if (whole >= burst) return duration::zero();
    std::int64_t lo = 0, hi = static_cast<std::int64_t>(2e9 / rate) + 2;
    REQUIRE(bucket.available(now + duration{hi}) > whole);
    while (hi - lo > 1) {  // available(now + lo) == whole < available(now + hi)
        const auto mid = lo + (hi - lo) / 2;
        (bucket.available(now + duration{mid}) > whole ? hi : lo) = mid;
    }
    return duration{hi};
}

}  // namespace

TEST_CASE("token bucket: the answer is a rate_limit_decision; remaining and reset are the bucket's own readings") {
    static_assert(std::is_same_v<resil::token_bucket_result, resil::rate_limit_decision>);
    static_assert(std::is_same_v<token_bucket_status, resil::rate_limit_status>);
    // Rates whose token is not a whole number of nanoseconds (units finer than 1 ns) too.
    for (const double rate : {50.0, 7.3, 3e8 / 7}) {
        manual_clock clock;
        const std::int64_t burst = 5;
        bucket_t bucket{{.rate = rate, .burst = burst}, clock};
        std::mt19937_64 rng{20240601};
        std::uint64_t granted = 0, rejected = 0;
        for (int i = 0; i < 400; ++i) {
            INFO("rate " << rate << ", request " << i);
            clock.advance(duration{static_cast<std::int64_t>(rng() % (static_cast<std::uint64_t>(2e9 / rate) + 1))});
            const auto n = static_cast<std::int64_t>(rng() % 3) + 1;
            const auto r = bucket.try_acquire(n);
            const auto now = clock.now();
            CHECK(r.source == resil::decided_by::local);
            CHECK(r.remaining == bucket.available(now));
            CHECK(r.reset == reset_by_search(bucket, now, burst, rate));
            if (r) {
                ++granted;
                CHECK(r.wait == duration::zero());
            } else {
                ++rejected;
                CHECK(r.status == token_bucket_status::rejected);
                CHECK(r.remaining < n);
                CHECK(r.reset <= r.wait);  // one more token comes no later than the n asked for
            }
        }
        CHECK(granted > 50);  // both kinds of answer were checked
        CHECK(rejected > 50);
    }
}

TEST_CASE("token bucket: a full bucket has no reset; answers nobody decided carry no standing") {
    manual_clock clock;
    bucket_t bucket{{.rate = 10, .burst = 3}, clock};
    auto r = bucket.try_acquire(0);  // nothing asked: the bucket is not read
    CHECK(r == resil::rate_limit_decision{});
    r = bucket.try_acquire(4);
    CHECK(r.status == token_bucket_status::exceeds_burst);
    CHECK(r.source == resil::decided_by::none);
    CHECK(r.remaining == 0);
    r = bucket.try_acquire(1);
    CHECK(r.remaining == 2);
    CHECK(r.reset == 100ms);
    clock.advance(100ms);
    CHECK(bucket.try_acquire(0).remaining == 0);  // still nobody asked
    r = bucket.try_acquire(3);
    CHECK(r);
    CHECK(r.remaining == 0);
    CHECK(r.reset == 100ms);
    clock.advance(300ms);
    CHECK(bucket.available() == 3);  // full again
    std::stop_source stop;
    stop.request_stop();
    r = bucket.acquire(resil::basic_deadline<manual_clock>{clock}, 1, stop.get_token());
    CHECK(r.status == token_bucket_status::cancelled);
    CHECK(r.source == resil::decided_by::none);
}

TEST_CASE("token bucket: a grant that waited says where the bucket stands when the wait ends") {
    manual_clock clock;
    bucket_t bucket{{.rate = 4, .burst = 2}, clock};
    REQUIRE(bucket.try_acquire(2));
    clock.advance(100ms);
    // The next token exists 150 ms from now; the one after it 250 ms after that.
    const auto r = bucket.acquire(resil::basic_deadline<manual_clock>{clock}, 1);
    REQUIRE(r);
    CHECK(r.wait == 150ms);
    CHECK(r.source == resil::decided_by::local);
    CHECK(r.remaining == 0);
    CHECK(r.reset == 250ms);
    CHECK(r.reset == reset_by_search(bucket, clock.now(), 2, 4.0));  // the clock is now at the end of the wait
}
