// resil::json: policy options read from and written to JSON. Malformed
// configurations each get their exact message; generated options survive
// options → JSON text → options unchanged; the example file parses.
#include <resil/json.hpp>

#include <resil/backoff.hpp>
#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/timeouts.hpp>
#include <resil/token_bucket.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::verdict;
using std::chrono::milliseconds;
namespace rj = resil::json;

namespace {

// ---------------------------------------------------------------------------
// Field-by-field equality where the options types have no operator==.

bool same(const resil::circuit_breaker_options& a, const resil::circuit_breaker_options& b) {
    return a.mode == b.mode && a.failure_ratio == b.failure_ratio && a.window == b.window &&
           a.window_calls == b.window_calls && a.min_calls == b.min_calls &&
           a.consecutive_failures == b.consecutive_failures && a.slow_call_threshold == b.slow_call_threshold &&
           a.open_for == b.open_for && a.half_open_probes == b.half_open_probes && a.probe_timeout == b.probe_timeout &&
           a.failure_verdicts == b.failure_verdicts;
}

template <class T>
bool same_optional(const std::optional<T>& a, const std::optional<T>& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return true;
    if constexpr (std::is_same_v<T, resil::circuit_breaker_options>)
        return same(*a, *b);
    else
        return *a == *b;
}

bool same(const rj::pipeline_config& a, const rj::pipeline_config& b) {
    return same_optional(a.deadline, b.deadline) && same_optional(a.timeouts, b.timeouts) &&
           same_optional(a.retry, b.retry) && same_optional(a.retry_budget, b.retry_budget) &&
           same_optional(a.circuit_breaker, b.circuit_breaker) && same_optional(a.token_bucket, b.token_bucket) &&
           same_optional(a.concurrency_limit, b.concurrency_limit);
}

std::string error_of(const std::string& text) {
    try {
        (void)rj::parse_config(text);
    } catch (const rj::config_error& e) {
        return e.what();
    }
    return "(accepted)";
}

// ---------------------------------------------------------------------------
// A seeded generator of valid options: uniform picks from resil's own engine,
// so the cases are the same on every platform.

class generator {
public:
    explicit generator(std::uint64_t seed) : rng_(seed) {}

    std::uint64_t between(std::uint64_t lo, std::uint64_t hi) {  // inclusive
        return lo + rng_() % (hi - lo + 1);
    }
    bool coin(double p = 0.5) { return resil::unit_interval(rng_) < p; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * resil::unit_interval(rng_); }
    double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }

    /// A duration in [lo, hi], often a round number of some unit (so every
    /// text form shows up: "2m", "1.5s", "100us", ...), sometimes any count.
    duration span(duration lo, duration hi) {
        static constexpr std::int64_t units[] = {1, 1'000, 1'000'000, 1'000'000'000, 60'000'000'000, 3'600'000'000'000};
        const auto count = static_cast<std::uint64_t>(hi.count() - lo.count());
        const auto raw = lo.count() + static_cast<std::int64_t>(between(0, count));
        if (coin(0.25)) return duration{raw};
        const auto unit = units[between(0, 5)];
        const auto half = coin(0.3) ? unit / 2 : unit;  // 1.5s, 2.5m, ...
        if (half == 0) return duration{raw};
        auto rounded = raw / half * half;
        if (rounded < lo.count()) rounded += half;
        return rounded <= hi.count() ? duration{rounded} : duration{raw};
    }

    resil::verdict_set verdicts(bool allow_success) {
        bool members[4] = {allow_success && coin(0.2), coin(), coin(), coin()};
        verdict list[4]{};
        std::size_t n = 0;
        for (unsigned i = 0; i < 4; ++i)
            if (members[i]) list[n++] = static_cast<verdict>(i);
        switch (n) {
            case 0: return {};
            case 1: return {list[0]};
            case 2: return {list[0], list[1]};
            case 3: return {list[0], list[1], list[2]};
            default: return {list[0], list[1], list[2], list[3]};
        }
    }

    resil::timeouts timeouts() {
        resil::timeouts t;
        for (auto* field : {&t.connect, &t.read, &t.total})
            if (coin(0.7))
                *field = std::chrono::floor<milliseconds>(span(1ms, 48h));
        return t;
    }

    resil::backoff backoff() {
        const auto base = span(1ns, 10s);
        const auto cap = span(base, 10min);
        const double multiplier = coin(0.5) ? static_cast<double>(between(1, 4)) : uniform(1.0, 10.0);
        switch (between(0, 3)) {
            case 0: return resil::exponential_backoff{base, cap, multiplier};
            case 1: return resil::full_jitter{base, cap, multiplier};
            case 2: return resil::equal_jitter{base, cap, multiplier};
            default: return resil::decorrelated_jitter{base, cap};
        }
    }

    resil::retry_options retry() {
        resil::retry_options o;
        o.max_attempts = static_cast<std::uint32_t>(between(1, 100));
        o.backoff = backoff();
        o.retry_on = verdicts(true);
        o.max_wait = span(o.backoff.cap(), 24h);  // a cap beyond max_wait is refused
        o.tell_callers_dont_retry = coin();
        return o;
    }

    resil::retry_budget_options retry_budget() {
        return {.ratio = coin(0.2) ? static_cast<double>(between(0, 1)) : uniform(0.0, 1.0),
                .min_per_second = static_cast<std::uint32_t>(between(0, 1'000'000)),
                .window = span(10ms, 24h)};
    }

    resil::circuit_breaker_options circuit_breaker() {
        resil::circuit_breaker_options o;
        o.mode = static_cast<resil::breaker_mode>(between(0, 2));
        o.failure_ratio = coin(0.2) ? 0.0 : uniform(0.0, 0.999999);
        o.window = span(10ms, 24h);
        o.window_calls = static_cast<std::uint32_t>(between(1, 1'000'000));
        o.min_calls = static_cast<std::uint32_t>(
            o.mode == resil::breaker_mode::count_window ? between(1, o.window_calls) : between(1, 0xFFFF'FFFFu));
        o.consecutive_failures = static_cast<std::uint32_t>(between(1, 1'000'000));
        if (coin(0.4)) o.slow_call_threshold = span(1ns, 1h);
        o.open_for = span(1ms, 24h);
        o.half_open_probes = static_cast<std::uint32_t>(between(1, 1000));
        o.probe_timeout = coin(0.3) ? duration::zero() : span(1ms, 24h);
        o.failure_verdicts = verdicts(false);
        return o;
    }

    resil::token_bucket_options token_bucket() {
        resil::token_bucket_options o;
        o.rate = coin(0.3) ? static_cast<double>(between(1, 1000)) : log_uniform(0.001, 1e9);
        const double most = std::min(1e15, std::floor(o.rate * 1e9));
        o.burst = static_cast<std::int64_t>(between(1, static_cast<std::uint64_t>(std::max(1.0, most))));
        o.max_wait = coin(0.5) ? duration::zero() : span(1ns, 1h);
        return o;
    }

    rj::pipeline_config config() {
        rj::pipeline_config c;
        if (coin(0.7)) c.deadline = span(resil::deadline_policy_options::min_budget,
                                         resil::deadline_policy_options::max_budget);
        if (coin(0.7)) c.timeouts = timeouts();
        if (coin(0.7)) c.retry = retry();
        if (coin(0.7)) c.retry_budget = retry_budget();
        if (coin(0.7)) c.circuit_breaker = circuit_breaker();
        if (coin(0.7)) c.token_bucket = token_bucket();
        if (coin(0.7)) c.concurrency_limit = {static_cast<std::uint32_t>(between(1, 0xFFFF'FFFFu))};
        return c;
    }

private:
    resil::jitter_engine rng_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Durations as text

TEST_CASE("json: duration texts read exactly") {
    struct row {
        const char* text;
        std::int64_t ns;
    };
    const row rows[] = {
        {"250ms", 250'000'000},      {"1.5s", 1'500'000'000},       {"2m", 120'000'000'000},
        {"100us", 100'000},          {"1h", 3'600'000'000'000},     {"10ns", 10},
        {"0s", 0},                   {"0.5ms", 500'000},            {"1.25m", 75'000'000'000},
        {"0.001s", 1'000'000},       {"007ms", 7'000'000},          {"1.000000000s", 1'000'000'000},
        {"0.000000001s", 1},         {"2562047h", 9'223'369'200'000'000'000},
        {"9223372036854775807ns", std::numeric_limits<std::int64_t>::max()},
        {"9223372036.854775807s", std::numeric_limits<std::int64_t>::max()},
    };
    for (const auto& r : rows) {
        INFO(r.text);
        const auto parsed = rj::parse_duration(r.text);
        REQUIRE(parsed);
        CHECK((*parsed).count() == r.ns);
    }
    CHECK(rj::parse_duration<milliseconds>("1.5s") == milliseconds{1500});
    CHECK(rj::parse_duration<milliseconds>("3000us") == milliseconds{3});
    // Milliseconds hold far longer spans than nanoseconds: no overflow on the way.
    CHECK(rj::parse_duration<milliseconds>("2562047788015h") == milliseconds{9'223'372'036'854'000'000});
}

TEST_CASE("json: malformed, too precise and too long duration texts are refused") {
    using E = rj::duration_text_error;
    struct row {
        const char* text;
        E error;
    };
    const row rows[] = {
        {"", E::syntax},          {"250", E::syntax},       {"ms", E::syntax},          {"-5s", E::syntax},
        {"+5s", E::syntax},       {"5 s", E::syntax},       {" 5s", E::syntax},         {"5s ", E::syntax},
        {"1.s", E::syntax},       {".5s", E::syntax},       {"1e3ms", E::syntax},       {"5sec", E::syntax},
        {"5S", E::syntax},        {"1d", E::syntax},        {"1.5.2s", E::syntax},      {"5µs", E::syntax},
        {"0.5ns", E::too_precise}, {"1.0000000001s", E::too_precise},                   {"9223372036854775808ns", E::out_of_range},
        {"2562048h", E::out_of_range}, {"99999999999999999999999999h", E::out_of_range},
        {"0.0000000000000000000000001h", E::too_precise},
    };
    for (const auto& r : rows) {
        INFO(r.text);
        const auto parsed = rj::parse_duration(r.text);
        CHECK_FALSE(parsed);
        CHECK(parsed.error() == r.error);
    }
    CHECK(rj::parse_duration<milliseconds>("1.5ms").error() == E::too_precise);
    CHECK(rj::parse_duration<milliseconds>("100us").error() == E::too_precise);
}

TEST_CASE("json: durations are written in their shortest exact form") {
    CHECK(rj::format_duration(250ms) == "250ms");
    CHECK(rj::format_duration(1500ms) == "1.5s");
    CHECK(rj::format_duration(duration{2min}) == "2m");
    CHECK(rj::format_duration(duration{90s}) == "90s");
    CHECK(rj::format_duration(duration{90min}) == "90m");
    CHECK(rj::format_duration(duration{36h}) == "36h");
    CHECK(rj::format_duration(100us) == "100us");
    CHECK(rj::format_duration(1ns) == "1ns");
    CHECK(rj::format_duration(duration{1'000'001}) == "1000001ns");
    CHECK(rj::format_duration(1001ms) == "1.001s");
    CHECK(rj::format_duration(0s) == "0s");
    CHECK(rj::format_duration(duration{60s}) == "1m");
    CHECK(rj::format_duration(duration{150s}) == "2.5m");
    CHECK(rj::format_duration(duration{45min}) == "45m");
    CHECK(rj::format_duration(milliseconds{2}) == "2ms");
    CHECK(rj::format_duration(-250ms) == "-250ms");
    CHECK(rj::format_duration(duration::max()) == "9223372036.854775807s");
    CHECK(rj::format_duration(milliseconds::max()) == "9223372036854775.807s");
}

TEST_CASE("json: every duration reads back from its text (seeded, many cases)") {
    generator g{20261130};
    for (int i = 0; i < 20'000; ++i) {
        const auto d = g.coin(0.1) ? duration{static_cast<std::int64_t>(g.between(0, std::numeric_limits<std::int64_t>::max()))}
                                   : g.span(0ns, 48h);
        const auto text = rj::format_duration(d);
        INFO(d.count() << " → " << text);
        REQUIRE(rj::parse_duration(text) == d);
        const auto in_ms = std::chrono::floor<milliseconds>(d) * (g.coin(0.01) ? 1'000'000 : 1);
        REQUIRE(rj::parse_duration<milliseconds>(rj::format_duration(in_ms)) == in_ms);
    }
}

// ---------------------------------------------------------------------------
// Malformed configurations, each with its message

TEST_CASE("json: malformed configurations are refused with the path and the reason") {
    struct row {
        const char* config;
        const char* message;
    };
    const row rows[] = {
        // The document and its sections
        {R"([])", "must be an object, got an array"},
        {R"("retry")", R"(must be an object, got "retry")"},
        {R"({"retyr": {}})",
         R"(retyr: unknown key; did you mean "retry"? (expected one of: deadline, timeouts, retry, retry_budget, circuit_breaker, token_bucket, concurrency_limit))"},
        {R"({"timeouts": "150ms"})", R"(timeouts: must be an object, got "150ms")"},
        {R"({"retry": null})", "retry: must be an object, got null"},
        {R"({"retry": {"max_attempts": 3,}})",
         "parse error at line 1, column 30: syntax error while parsing object key - unexpected '}'; expected string literal"},
        {"", "parse error at line 1, column 1: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal"},
        {R"({"retry": {"max_attempts": 3}, "retry": {}})",
         "retry: key given twice in one object (the last would silently win)"},
        {R"({"circuit_breaker": {"window": "10s", "window": "20s"}})",
         "circuit_breaker.window: key given twice in one object (the last would silently win)"},
        // deadline
        {R"({"deadline": 250})",
         R"(deadline: must be a duration string with its unit, such as "250ms" or "250s", got the bare number 250)"},
        {R"({"deadline": "250"})",
         R"(deadline: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got "250")"},
        {R"({"deadline": "250 ms"})",
         R"(deadline: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got "250 ms")"},
        {R"({"deadline": "-5s"})",
         R"(deadline: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got "-5s")"},
        {R"({"deadline": null})",
         R"(deadline: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got null)"},
        {R"({"deadline": "0ms"})", R"(deadline: must be in [1ms, 24h], got "0ms")"},
        {R"({"deadline": "0.5ns"})", R"(deadline: must be a whole number of nanoseconds, got "0.5ns")"},
        {R"({"deadline": "9999999h"})", R"(deadline: is too long (at most 9223372036.854775807s), got "9999999h")"},
        // timeouts
        {R"({"timeouts": {"conect": "20ms"}})",
         R"(timeouts.conect: unknown key; did you mean "connect"? (expected one of: connect, read, total))"},
        {R"({"timeouts": {"connect": "1.5ms"}})", R"(timeouts.connect: must be a whole number of milliseconds, got "1.5ms")"},
        {R"({"timeouts": {"read": "0s"}})", R"(timeouts.read: must be at least 1ms, got "0s")"},
        {R"({"timeouts": {"total": true}})",
         R"(timeouts.total: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got true)"},
        // retry
        {R"({"retry": {"max_attempts": 0}})", "retry.max_attempts: must be in [1, 100], got 0"},
        {R"({"retry": {"max_attempts": 101}})", "retry.max_attempts: must be in [1, 100], got 101"},
        {R"({"retry": {"max_attempts": -1}})", "retry.max_attempts: must be in [1, 100], got -1"},
        {R"({"retry": {"max_attempts": "3"}})", R"(retry.max_attempts: must be an integer, got "3")"},
        {R"({"retry": {"max_attempts": 2.5}})", "retry.max_attempts: must be an integer, got 2.5"},
        {R"({"retry": {"max_attempt": 3}})",
         R"(retry.max_attempt: unknown key; did you mean "max_attempts"? (expected one of: max_attempts, backoff, retry_on, max_wait, tell_callers_dont_retry))"},
        {R"({"retry": {"max attempts": 3}})",
         R"(retry["max attempts"]: unknown key; did you mean "max_attempts"? (expected one of: max_attempts, backoff, retry_on, max_wait, tell_callers_dont_retry))"},
        {R"({"retry": {"budget": {"ratio": 0.1}}})",
         R"(retry.budget: unknown key (expected one of: max_attempts, backoff, retry_on, max_wait, tell_callers_dont_retry))"},
        {R"({"retry": {"backoff": "full_jitter"}})", R"(retry.backoff: must be an object, got "full_jitter")"},
        {R"({"retry": {"backoff": {"kind": "jitter"}}})",
         R"(retry.backoff.kind: must be one of "exponential", "full_jitter", "equal_jitter", "decorrelated_jitter", got "jitter")"},
        {R"({"retry": {"backoff": {"base": "0ms"}}})", R"(retry.backoff.base: must be at least 1ns, got "0ms")"},
        {R"({"retry": {"backoff": {"base": "2s"}}})",
         R"(retry.backoff.cap: must be at least the base (2s), got 1s)"},
        {R"({"retry": {"backoff": {"base": "200ms", "cap": "100ms"}}})",
         R"(retry.backoff.cap: must be at least the base (200ms), got "100ms")"},
        {R"({"retry": {"backoff": {"cap": "1y"}}})",
         R"(retry.backoff.cap: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got "1y")"},
        {R"({"retry": {"backoff": {"multiplier": 0.5}}})", "retry.backoff.multiplier: must be finite and at least 1, got 0.5"},
        {R"({"retry": {"backoff": {"multiplier": "2"}}})", R"(retry.backoff.multiplier: must be a number, got "2")"},
        {R"({"retry": {"backoff": {"kind": "decorrelated_jitter", "multiplier": 2}}})",
         "retry.backoff.multiplier: decorrelated_jitter has no multiplier (it grows from the previous delay, up to 3 times it)"},
        {R"({"retry": {"retry_on": "retryable"}})",
         R"(retry.retry_on: must be an array of verdicts such as ["retryable", "ambiguous"], got "retryable")"},
        {R"({"retry": {"retry_on": ["retryable", "retriable"]}})",
         R"(retry.retry_on[1]: must be one of "success", "retryable", "permanent", "ambiguous", got "retriable")"},
        {R"({"retry": {"retry_on": ["retryable", "retryable"]}})", R"(retry.retry_on[1]: "retryable" is listed twice)"},
        {R"({"retry": {"max_wait": "0s"}})", R"(retry.max_wait: must be in [1ms, 24h], got "0s")"},
        {R"({"retry": {"max_wait": "500ms"}})", R"(retry.backoff.cap: must be at most max_wait (500ms), got 1s)"},
        {R"({"retry": {"tell_callers_dont_retry": "yes"}})",
         R"(retry.tell_callers_dont_retry: must be true or false, got "yes")"},
        // retry_budget
        {R"({"retry_budget": {"ratio": 1.5}})", "retry_budget.ratio: must be in [0, 1], got 1.5"},
        {R"({"retry_budget": {"ratio": -0.1}})", "retry_budget.ratio: must be in [0, 1], got -0.1"},
        {R"({"retry_budget": {"window": "5ms"}})", R"(retry_budget.window: must be in [10ms, 24h], got "5ms")"},
        {R"({"retry_budget": {"min_per_second": 1000001}})",
         "retry_budget.min_per_second: must be in [0, 1000000], got 1000001"},
        // circuit_breaker
        {R"({"circuit_breaker": {"mode": "count"}})",
         R"(circuit_breaker.mode: must be one of "time_window", "count_window", "consecutive_failures", got "count")"},
        {R"({"circuit_breaker": {"failure_ratio": 1}})",
         "circuit_breaker.failure_ratio: must be in [0, 1) (it opens when the ratio is strictly above it), got 1"},
        {R"({"circuit_breaker": {"window": "36h"}})", R"(circuit_breaker.window: must be in [10ms, 24h], got "36h")"},
        {R"({"circuit_breaker": {"mode": "count_window", "window_calls": 10, "min_calls": 20}})",
         "circuit_breaker.min_calls: must be at most window_calls (10) in count_window mode, or the breaker could "
         "never open, got 20"},
        {R"({"circuit_breaker": {"mode": "count_window", "window_calls": 10}})",
         "circuit_breaker.min_calls: must be at most window_calls (10) in count_window mode, or the breaker could "
         "never open, got 20"},
        {R"({"circuit_breaker": {"consecutive_failures": 0}})", "circuit_breaker.consecutive_failures: must be in [1, 1000000], got 0"},
        {R"({"circuit_breaker": {"half_open_probes": 1001}})", "circuit_breaker.half_open_probes: must be in [1, 1000], got 1001"},
        {R"({"circuit_breaker": {"open_for": "25h"}})", R"(circuit_breaker.open_for: must be in [1ms, 24h], got "25h")"},
        {R"({"circuit_breaker": {"probe_timeout": "500us"}})",
         R"(circuit_breaker.probe_timeout: must be 0 (the same as open_for) or in [1ms, 24h], got "500us")"},
        {R"({"circuit_breaker": {"slow_call_threshold": "0s"}})",
         R"(circuit_breaker.slow_call_threshold: must be positive when set, got "0s")"},
        {R"({"circuit_breaker": {"failure_verdicts": ["success"]}})",
         "circuit_breaker.failure_verdicts: must not contain success, got {success}"},
        {R"({"circuit_breaker": {"failure_verdicts": ["retryable", 3]}})",
         "circuit_breaker.failure_verdicts[1]: must be a verdict name, got 3"},
        {R"({"circuit_breaker": {"on_state_change": "log"}})",
         "circuit_breaker.on_state_change: unknown key (expected one of: mode, failure_ratio, window, window_calls, "
         "min_calls, consecutive_failures, slow_call_threshold, open_for, half_open_probes, probe_timeout, "
         "failure_verdicts)"},
        // token_bucket
        {R"({"token_bucket": {"rate": 0}})", "token_bucket.rate: must be in [0.001, 1e9], got 0"},
        {R"({"token_bucket": {"burst": 0}})", "token_bucket.burst: must be in [1, 1000000000000000], got 0"},
        {R"({"token_bucket": {"rate": 0.001, "burst": 10000000}})",
         "token_bucket.burst: must be at most 1000000 at rate 0.001 (burst / rate, the time to refill an empty bucket, "
         "at most 1e9 s), got 10000000"},
        {R"({"token_bucket": {"max_wait": "-1s"}})",
         R"(token_bucket.max_wait: must be a duration such as "250ms", "1.5s" or "2m" (units: ns, us, ms, s, m, h), got "-1s")"},
        // concurrency_limit
        {R"({"concurrency_limit": {"max_in_flight": 0}})", "concurrency_limit.max_in_flight: must be in [1, 4294967295], got 0"},
        {R"({"concurrency_limit": {"max_in_flight": 4294967296}})",
         "concurrency_limit.max_in_flight: must be at most 4294967295, got 4294967296"},
        {R"({"concurrency_limit": {"max_inflight": 16}})",
         R"(concurrency_limit.max_inflight: unknown key; did you mean "max_in_flight"? (expected one of: max_in_flight))"},
    };
    STATIC_REQUIRE(sizeof rows / sizeof rows[0] >= 60);
    for (const auto& r : rows) {
        INFO(r.config);
        CHECK(error_of(r.config) == r.message);
    }
}

TEST_CASE("json: a config_error carries the path and the reason apart") {
    try {
        (void)rj::parse_config(R"({"retry": {"backoff": {"base": "200ms", "cap": "100ms"}}})");
        FAIL("accepted");
    } catch (const rj::config_error& e) {
        CHECK(e.path() == "retry.backoff.cap");
        CHECK(e.reason() == R"(must be at least the base (200ms), got "100ms")");
        CHECK(e.source().empty());
        const std::invalid_argument& as_std = e;  // one catch for policy and config errors
        CHECK(std::string(as_std.what()) == std::string(e.what()));
    }
}

TEST_CASE("json: missing keys take the documented defaults") {
    const auto empty = rj::parse_config("{}");
    CHECK(same(empty, rj::pipeline_config{}));
    const auto c = rj::parse_config(R"({"deadline": "250ms", "timeouts": {}, "retry": {}, "retry_budget": {},
        "circuit_breaker": {}, "token_bucket": {}, "concurrency_limit": {}})");
    CHECK(c.deadline == duration{250ms});
    CHECK(c.timeouts == resil::timeouts{});
    CHECK(c.retry == resil::retry_options{});
    CHECK(c.retry_budget == resil::retry_budget_options{});
    REQUIRE(c.circuit_breaker);
    CHECK(same(*c.circuit_breaker, resil::circuit_breaker_options{}));
    CHECK(c.token_bucket == resil::token_bucket_options{});
    CHECK(c.concurrency_limit == resil::concurrency_limit_options{});
    // A partly given backoff keeps the other defaults, whatever the kind.
    const auto b = rj::read<resil::backoff>(nlohmann::json::parse(R"({"kind": "equal_jitter", "cap": "5s"})"));
    CHECK(b == resil::backoff{resil::equal_jitter{100ms, 5s, 2.0}});
    // null means "no limit" for a timeout and "unset" for the slow-call threshold.
    const auto t = rj::read<resil::timeouts>(nlohmann::json::parse(R"({"connect": null, "total": "150ms"})"));
    CHECK(t == resil::timeouts{.total = 150ms});
}

TEST_CASE("json: written options read back as the same options (seeded, thousands of cases)") {
    generator g{0x5eed};
    for (int i = 0; i < 3'000; ++i) {
        const auto config = g.config();
        const auto json = rj::write(config);
        const auto text = json.dump(2);
        INFO("case " << i << ":\n" << text);
        // Through the text, as an operator's file would go.
        const auto back = rj::parse_config(text);
        REQUIRE(same(back, config));
        // And straight from the JSON value, in both nlohmann flavours.
        REQUIRE(same(rj::read<rj::pipeline_config>(json), config));
        REQUIRE(same(rj::read<rj::pipeline_config>(nlohmann::json(json)), config));
        // Writing what was read gives the same text.
        REQUIRE(rj::write(back).dump(2) == text);
    }
}

TEST_CASE("json: each options type round-trips on its own, with nlohmann's conversions") {
    generator g{42};
    for (int i = 0; i < 500; ++i) {
        const auto retry = g.retry();
        nlohmann::json j = retry;  // adl_serializer
        CHECK(j.get<resil::retry_options>() == retry);
        const auto breaker = g.circuit_breaker();
        nlohmann::json b = breaker;
        CHECK(same(b.get<resil::circuit_breaker_options>(), breaker));
        const auto bucket = g.token_bucket();
        CHECK(nlohmann::json(bucket).get<resil::token_bucket_options>() == bucket);
        const auto budget = g.retry_budget();
        CHECK(nlohmann::json(budget).get<resil::retry_budget_options>() == budget);
        const auto timeouts = g.timeouts();
        CHECK(nlohmann::json(timeouts).get<resil::timeouts>() == timeouts);
    }
    // A breaker's options() (probe_timeout resolved) round-trip too, and the
    // policies accept what was read.
    resil::circuit_breaker breaker{{.open_for = 5s}};
    const auto written = rj::write(breaker.options());
    CHECK(written["probe_timeout"] == "5s");
    CHECK(same(rj::read<resil::circuit_breaker_options>(written), breaker.options()));
    // The conversions are strict as well.
    CHECK_THROWS_AS(nlohmann::json::parse(R"({"max_attempts": 0})").get<resil::retry_options>(), rj::config_error);
}

TEST_CASE("json: the written form is documented key by key") {
    const auto j = rj::write(rj::pipeline_config{.deadline = 250ms,
                                                 .timeouts = resil::timeouts{.connect = 20ms, .total = 150ms},
                                                 .retry = resil::retry_options{},
                                                 .concurrency_limit = resil::concurrency_limit_options{}});
    CHECK(j.dump() ==
          R"({"deadline":"250ms","timeouts":{"connect":"20ms","read":null,"total":"150ms"},)"
          R"("retry":{"max_attempts":3,"backoff":{"kind":"full_jitter","base":"100ms","cap":"1s","multiplier":2.0},)"
          R"("retry_on":["retryable","ambiguous"],"max_wait":"1m","tell_callers_dont_retry":true},)"
          R"("concurrency_limit":{"max_in_flight":16}})");
    CHECK(rj::write(resil::backoff{resil::decorrelated_jitter{50ms, 2s}}).dump() ==
          R"({"kind":"decorrelated_jitter","base":"50ms","cap":"2s"})");
}

TEST_CASE("json: the example configuration file parses and builds every policy") {
    const auto file = std::filesystem::path(__FILE__).parent_path().parent_path() / "examples" / "config.json";
    const auto c = rj::load_config(file);
    REQUIRE(c.deadline);
    REQUIRE(c.timeouts);
    REQUIRE(c.retry);
    REQUIRE(c.retry_budget);
    REQUIRE(c.circuit_breaker);
    REQUIRE(c.token_bucket);
    REQUIRE(c.concurrency_limit);
    CHECK(*c.deadline == 250ms);
    resil::retry_budget budget{*c.retry_budget};
    auto retry = *c.retry;
    retry.budget = &budget;
    CHECK_NOTHROW(resil::retry_policy{retry});
    CHECK_NOTHROW(resil::circuit_breaker{*c.circuit_breaker});
    CHECK_NOTHROW(resil::token_bucket{*c.token_bucket});
    CHECK_NOTHROW(resil::concurrency_limit{*c.concurrency_limit});
    CHECK_NOTHROW(resil::timeout_policy{*c.timeouts});
}

TEST_CASE("json: load_config names the file in its errors") {
    const auto missing = std::filesystem::temp_directory_path() / "resil-no-such-config.json";
    try {
        (void)rj::load_config(missing);
        FAIL("accepted");
    } catch (const rj::config_error& e) {
        CHECK(e.source() == missing.string());
        CHECK(e.path().empty());
        CHECK(std::string(e.what()) == missing.string() + ": cannot open the file: it does not exist");
    }
}

// ---------------------------------------------------------------------------
// Hostile input: every failure is a config_error, never one of nlohmann's own
// exceptions (found by fuzzing; see docs/fuzzing.md).

namespace {

// The config_error the text gives; fails the test on any other exception.
std::optional<rj::config_error> config_error_of(const std::string& text) {
    try {
        (void)rj::parse_config(text);
    } catch (const rj::config_error& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace

TEST_CASE("json: a number too large for a double is a config_error naming its path") {
    struct row {
        const char* config;
        const char* path;
        const char* message;
    };
    const row rows[] = {
        {R"({"retry": {"max_attempts": 1e400}})", "retry.max_attempts",
         "retry.max_attempts: must be a number a double can hold (magnitude at most 1.8e308), got 1e400"},
        {R"({"token_bucket": {"rate": -1e400}})", "token_bucket.rate",
         "token_bucket.rate: must be a number a double can hold (magnitude at most 1.8e308), got -1e400"},
        {R"({"retry": {"retry_on": ["retryable", 1E+999]}})", "retry.retry_on[1]",
         "retry.retry_on[1]: must be a number a double can hold (magnitude at most 1.8e308), got 1E+999"},
        {R"({"retry budget": {"ratio": 2e308}})", R"(["retry budget"].ratio)",
         R"(["retry budget"].ratio: must be a number a double can hold (magnitude at most 1.8e308), got 2e308)"},
        {"1e400", "", "must be a number a double can hold (magnitude at most 1.8e308), got 1e400"},
    };
    for (const auto& r : rows) {
        INFO(r.config);
        const auto e = config_error_of(r.config);
        REQUIRE(e.has_value());
        CHECK(e->path() == r.path);
        CHECK(std::string(e->what()) == r.message);
    }
}

TEST_CASE("json: a deadline is refused outside the range deadline_policy accepts, with its path") {
    CHECK(error_of(R"({"deadline": "0.5ms"})") == R"(deadline: must be in [1ms, 24h], got "0.5ms")");
    CHECK(error_of(R"({"deadline": "24.000000001h"})") == R"(deadline: must be in [1ms, 24h], got "24.000000001h")");
    CHECK(rj::parse_config(R"({"deadline": "1ms"})").deadline == duration{1ms});
    CHECK(rj::parse_config(R"({"deadline": "24h"})").deadline == duration{24h});
}

TEST_CASE("json: huge integers are refused by range, with their path") {
    CHECK(error_of(R"({"retry": {"max_attempts": 100000000000000000000}})") ==
          "retry.max_attempts: must be an integer, got 1e+20");
    CHECK(error_of(R"({"retry": {"max_attempts": 18446744073709551615}})") ==
          "retry.max_attempts: must be in [1, 100], got 18446744073709551615");
    CHECK(error_of(R"({"concurrency_limit": {"max_in_flight": -9223372036854775809}})") ==
          "concurrency_limit.max_in_flight: must be an integer, got -9.223372036854776e+18");
    CHECK(error_of(R"({"token_bucket": {"burst": 9223372036854775808}})") ==
          "token_bucket.burst: must be in [1, " + std::to_string(resil::detail::gcra::max_burst) +
              "], got 9223372036854775808");
    CHECK(error_of(R"({"deadline": 1e308})") ==
          R"(deadline: must be a duration string with its unit, such as "1e+308ms" or "1e+308s", got the bare number 1e+308)");
}

TEST_CASE("json: deeply nested input is a config_error, not a stack overflow") {
    const std::size_t depth = 100'000;
    const std::string open(depth, '['), close(depth, ']');
    const auto nested = config_error_of(R"({"retry": {"retry_on": )" + open + close + "}}");
    REQUIRE(nested.has_value());
    CHECK(nested->path() == "retry.retry_on[0]");
    CHECK(nested->reason() == "must be a verdict name, got an array");
    const auto unterminated = config_error_of(R"({"retry": )" + open);
    REQUIRE(unterminated.has_value());
    CHECK(unterminated->path().empty());
    CHECK(unterminated->reason().rfind("parse error at line 1, column ", 0) == 0);
}

TEST_CASE("json: invalid UTF-8 is a parse error with its position") {
    const auto in_value = config_error_of("{\"retry\": {\"backoff\": {\"kind\": \"\xff\"}}}");
    REQUIRE(in_value.has_value());
    CHECK(in_value->path().empty());
    CHECK(in_value->reason().rfind("parse error at line 1, column 33: syntax error while parsing value - "
                                   "invalid string: ill-formed UTF-8 byte",
                                   0) == 0);
    const auto in_key = config_error_of("{\"re\xc3\x28try\": {}}");
    REQUIRE(in_key.has_value());
    CHECK(in_key->reason().rfind("parse error at line 1, column ", 0) == 0);
    // Valid UTF-8 in an unknown key is quoted in the path.
    const auto unicode_key = config_error_of("{\"r\xc3\xa9try\": {}}");
    REQUIRE(unicode_key.has_value());
    CHECK(unicode_key->path() == "[\"r\xc3\xa9try\"]");
}

TEST_CASE("json: load_config gives a number too large for a double as a config_error with the file") {
    const auto file = std::filesystem::temp_directory_path() / "resil-json-config-1e400.json";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << "{\n  \"retry\": {\"max_attempts\": 1e400}\n}\n";
    }
    try {
        (void)rj::load_config(file);
        FAIL("accepted");
    } catch (const rj::config_error& e) {
        CHECK(e.source() == file.string());
        CHECK(e.path() == "retry.max_attempts");
        CHECK(std::string(e.what()) ==
              file.string() + ": retry.max_attempts: must be a number a double can hold (magnitude at most 1.8e308), got 1e400");
    }
    std::filesystem::remove(file);
}
