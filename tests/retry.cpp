#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/idempotency_key.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../examples/retry_storm.hpp"
#include "catch.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

namespace {

// A tiny HTTP-like response for the tests.
struct response {
    int status = 200;
    std::optional<resil::duration> retry_after{};
};

resil::classification classify_response(const response& r) {
    if (r.status < 400) return verdict::success;
    if (r.status == 429 || r.status == 503) return {verdict::retryable, {r.retry_after, false}};
    if (r.status == 504) return verdict::ambiguous;
    return verdict::permanent;
}

}  // namespace

TEST_CASE("retry storm without jitter: the wave comes back whole") {
    const auto r = retry_storm::simulate(false, 7);
    CHECK(r.served == 150);
    CHECK(r.gave_up == 850);
    CHECK(r.peak == 1000);
    CHECK(r.attempts == 2850);
}

TEST_CASE("retry storm with full jitter: the same clients spread out, for every seed") {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const auto r = retry_storm::simulate(true, seed);
        INFO("seed " << seed << ": " << r.served << " served, peak " << r.peak << ", " << r.attempts << " attempts");
        CHECK(r.served >= 990);
        CHECK(r.peak <= 75);
        CHECK(r.attempts <= 1150);
        CHECK(r.served + r.gave_up == 1000);
    }
}

TEST_CASE("retry policy: a retryable failure is retried until it succeeds") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto out = pipe([&] { return ++calls < 3 ? response{503} : response{200}; }, classify_response);
    REQUIRE(out.ok());
    CHECK(out->status == 200);
    CHECK(calls == 3);
    CHECK(clock.sleeps() == 2);
    // Full jitter, base 100 ms: the waits are below 200 ms and 400 ms.
    CHECK(clock.slept() < 600ms);
}

TEST_CASE("retry policy: attempts are bounded and the last response is kept") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    auto out = pipe([&] { ++calls; return response{503}; }, classify_response);
    CHECK_FALSE(out.ok());
    CHECK(out.reason() == reason::retries_exhausted);
    REQUIRE(out.has_value());
    CHECK(out->status == 503);
    CHECK(calls == 3);
    CHECK(out.dont_retry());  // tells the layers above not to add their own retries
}

TEST_CASE("retry policy: permanent failures are never retried") {
    manual_clock clock;
    for (int status : {400, 401, 403, 404, 413, 422}) {
        int calls = 0;
        auto pipe = resil::pipeline(clock, resil::retry_policy{});
        auto out = pipe([&] { ++calls; return response{status}; }, classify_response);
        CHECK(calls == 1);
        CHECK(out.reason() == reason::failed);
        CHECK(out.verdict() == verdict::permanent);
    }
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: the backoff doubles up to the cap (exponential, no jitter)") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 6,
                                                            .backoff = resil::exponential_backoff{50ms, 1s}}});
    auto out = pipe([] { return response{503}; }, classify_response);
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(clock.sleeps() == 5);
    CHECK(clock.slept() == 100ms + 200ms + 400ms + 800ms + 1000ms);
}

TEST_CASE("retry policy: Retry-After wins over a shorter backoff") {
    manual_clock clock;
    int calls = 0;
    std::vector<resil::events::retry_scheduled> scheduled;
    auto pipe = resil::pipeline(clock, resil::retry_policy{})
                    .with_listener([&](const resil::events::retry_scheduled& e) { scheduled.push_back(e); });
    auto out = pipe([&] { return ++calls == 1 ? response{429, 2s} : response{200}; }, classify_response);
    REQUIRE(out.ok());
    REQUIRE(scheduled.size() == 1);
    CHECK(scheduled[0].delay == 2s);
    CHECK(scheduled[0].from_retry_after);
    CHECK(scheduled[0].attempt == 1);
    CHECK(clock.slept() == 2s);
}

TEST_CASE("interactive call: a 429 with Retry-After 1 s inside a 300 ms deadline gives up at once, and plan B is counted") {
    manual_clock clock;
    resil::fallback_policy plan_b{[] { return response{299}; }};  // the category picker
    auto pipe = resil::pipeline(clock, plan_b, resil::deadline_policy{300ms}, resil::retry_policy{});
    int calls = 0;
    auto out = pipe([&] { ++calls; return response{429, 1s}; }, classify_response);
    REQUIRE(out.ok());
    CHECK(out->status == 299);
    CHECK(out.fallback_reason() == reason::retry_after_exceeds_deadline);
    CHECK(calls == 1);
    CHECK(clock.sleeps() == 0);  // not a single wait
    CHECK(plan_b.count(reason::retry_after_exceeds_deadline) == 1);
    CHECK(plan_b.metrics().total() == 1);
}

TEST_CASE("retry policy: a backoff that does not fit in the deadline is not slept") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{150ms},
                                resil::retry_policy{{.backoff = resil::exponential_backoff{100ms, 1s}}});
    auto out = pipe([] { return response{503}; }, classify_response);
    // 150 ms were left: the call gave up early, it did not time out.
    CHECK(out.reason() == reason::backoff_exceeds_deadline);
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: a Retry-After beyond max_wait is not slept, even without a deadline") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    // A server (or a parser bug upstream) asking for a year.
    auto out = pipe([] { return response{503, std::chrono::hours{24 * 365}}; }, classify_response);
    CHECK(out.reason() == reason::retry_after_exceeds_deadline);
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: a POST that timed out is not retried without a key") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto out = pipe([&] { ++calls; return response{504}; }, classify_response);  // ambiguous
    CHECK(calls == 1);
    CHECK(out.reason() == reason::unsafe_to_retry);
}

TEST_CASE("retry policy: with a key the POST is retried, and every attempt sends the same key") {
    manual_clock clock;
    std::vector<std::string> keys_seen;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto out = pipe(
        [&](resil::basic_context<manual_clock>& ctx) {
            keys_seen.push_back(ctx.idempotency_key().to_string());  // the adapter sends this header
            return keys_seen.size() < 3 ? response{504} : response{201};
        },
        classify_response);
    REQUIRE(out.ok());
    REQUIRE(keys_seen.size() == 3);
    CHECK(keys_seen[0].size() == 36);
    CHECK(keys_seen[1] == keys_seen[0]);
    CHECK(keys_seen[2] == keys_seen[0]);

    // A second operation gets a key of its own.
    std::string other;
    (void)pipe([&](resil::basic_context<manual_clock>& ctx) { other = ctx.idempotency_key().to_string(); return response{201}; },
               classify_response);
    CHECK(other != keys_seen[0]);
}

TEST_CASE("retry policy: an operation marked idempotent retries ambiguous failures") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.deadline = resil::basic_deadline<manual_clock>{clock}, .idempotent = true}};
    auto out = pipe.execute(ctx, [&] { return ++calls < 2 ? response{504} : response{200}; }, classify_response);
    CHECK(out.ok());
    CHECK(calls == 2);
    CHECK(ctx.attempt() == 2);
}

TEST_CASE("retry policy: a \"don't retry\" hint is obeyed") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto out = pipe(
        [&] { ++calls; return response{503}; },
        [](const response&) { return resil::classification{verdict::retryable, {std::nullopt, true}}; });
    CHECK(calls == 1);
    CHECK(out.reason() == reason::dont_retry);
}

TEST_CASE("retry policy: cancellation through the stop token wakes a sleeping retry at once") {
    std::stop_source stop;
    auto pipe = resil::pipeline(resil::retry_policy{});
    resil::context ctx{resil::call_options{.stop = stop.get_token()}};
    std::jthread canceller([&] {
        std::this_thread::sleep_for(30ms);
        stop.request_stop();
    });
    const auto t0 = std::chrono::steady_clock::now();
    // The server asks for 50 s; the caller gives up after 30 ms.
    auto out = pipe.execute(ctx, [] { return response{503, 50s}; }, classify_response);
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(out.reason() == reason::cancelled);
    CHECK(waited < 10s);  // far below 50 s even on a loaded machine
}

TEST_CASE("retry policy: a stop requested before the call runs nothing") {
    manual_clock clock;
    std::stop_source stop;
    stop.request_stop();
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.stop = stop.get_token()}};
    int calls = 0;
    auto out = pipe.execute(ctx, [&] { ++calls; return response{503}; }, classify_response);
    CHECK(calls == 0);
    CHECK(out.reason() == reason::cancelled);
    CHECK_FALSE(out.has_value());
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: a stop requested during an attempt ends retries without sleeping") {
    manual_clock clock;
    std::stop_source stop;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.stop = stop.get_token()}};
    int calls = 0;
    auto out = pipe.execute(ctx, [&] { ++calls; stop.request_stop(); return response{503}; }, classify_response);
    CHECK(calls == 1);
    CHECK(out.reason() == reason::cancelled);
    REQUIRE(out.has_value());
    CHECK(out->status == 503);
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: exceptions propagate unchanged without an exception classifier") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    CHECK_THROWS_AS(pipe([&]() -> response { ++calls; throw std::runtime_error("boom"); }, classify_response),
                    std::runtime_error);
    CHECK(calls == 1);
}

TEST_CASE("retry policy: an exception classifier makes exceptions retryable, and value() rethrows the last") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto judge = resil::classifier{[](const response& r) { return classify_response(r); },
                                   [](const std::exception_ptr&) { return verdict::retryable; }};
    auto out = pipe([&]() -> response { ++calls; throw std::runtime_error("connection reset"); }, judge);
    CHECK(calls == 3);
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(out.exception() != nullptr);
    CHECK_THROWS_AS(out.value(), std::runtime_error);
}

TEST_CASE("retry policy: invalid options are refused with a clear message") {
    CHECK_THROWS_WITH(resil::retry_policy({.max_attempts = 0}), "resil::retry_policy: `max_attempts` must be in [1, 100], got 0");
    CHECK_THROWS_AS(resil::retry_policy({.max_attempts = 1000}), std::invalid_argument);
    CHECK_THROWS_AS(resil::retry_policy({.max_wait = -1s}), std::invalid_argument);
    CHECK_THROWS_AS(resil::retry_policy({.backoff = resil::full_jitter{0ms, 1s}}), std::invalid_argument);
}

TEST_CASE("retry policy: every retry is reported with attempt, delay and verdict; exhaustion once") {
    manual_clock clock;
    std::vector<resil::events::retry_scheduled> retries;
    int exhausted = 0;
    struct listener {
        std::vector<resil::events::retry_scheduled>* retries;
        int* exhausted;
        void operator()(const resil::events::retry_scheduled& e) const { retries->push_back(e); }
        void operator()(const resil::events::retries_exhausted&) const { ++*exhausted; }
    };
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 4}}).with_listener(listener{&retries, &exhausted});
    (void)pipe([] { return response{503}; }, classify_response);
    REQUIRE(retries.size() == 3);
    for (std::uint32_t i = 0; i < 3; ++i) {
        CHECK(retries[i].attempt == i + 1);
        CHECK(retries[i].verdict == verdict::retryable);
        CHECK(retries[i].delay < resil::backoff_ceiling(100ms, 1s, 2.0, i + 1));
    }
    CHECK(exhausted == 1);
}

namespace {
// A layer of a call chain: a pipeline with its own retry policy around the
// layer below. `bottom` counts what reaches the last service.
template <class Below>
auto layer(manual_clock clock, std::uint32_t retries, bool tell_callers, Below below) {
    return [clock, retries, tell_callers, below] {
        auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = retries + 1,
                                                                .tell_callers_dont_retry = tell_callers}});
        return pipe(below);
    };
}
}  // namespace

TEST_CASE("amplification: layers that each retry multiply the attempts at the bottom") {
    manual_clock clock;
    int bottom = 0;
    auto service = [&bottom] { ++bottom; return response{503}; };
    auto response_classifier = [](const response& r) { return classify_response(r); };
    auto base = [&] { return resil::pipeline(clock)(service, response_classifier); };

    SECTION("2 layers x 2 retries -> 9") {
        auto l1 = layer(clock, 2, false, base);
        auto l2 = layer(clock, 2, false, l1);
        (void)l2();
        CHECK(bottom == 9);
    }
    SECTION("4 layers x 1 retry -> 16") {
        auto l1 = layer(clock, 1, false, base);
        auto l2 = layer(clock, 1, false, l1);
        auto l3 = layer(clock, 1, false, l2);
        auto l4 = layer(clock, 1, false, l3);
        (void)l4();
        CHECK(bottom == 16);
    }
    SECTION("3 layers x 3 retries -> 64") {
        auto l1 = layer(clock, 3, false, base);
        auto l2 = layer(clock, 3, false, l1);
        auto l3 = layer(clock, 3, false, l2);
        (void)l3();
        CHECK(bottom == 64);
    }
    SECTION("the same 3 x 3 where a layer that gives up says \"don't retry\" upward -> 4") {
        auto l1 = layer(clock, 3, true, base);
        auto l2 = layer(clock, 3, true, l1);
        auto l3 = layer(clock, 3, true, l2);
        (void)l3();
        CHECK(bottom == 4);
    }
}

TEST_CASE("amplification: a 10% budget at one layer keeps the bottom within 1.1x the requests plus the floor") {
    manual_clock clock;
    constexpr int requests = 10'000;
    for (std::uint32_t floor_per_second : {0u, 10u}) {
        resil::retry_budget budget{{.ratio = 0.10, .min_per_second = floor_per_second}};
        // Short waits, so that the run stays at hundreds of requests per second.
        auto pipe = resil::pipeline(
            clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 2ms}, .budget = &budget}});
        int bottom = 0;
        int refused = 0;
        const auto t0 = clock.now();
        for (int i = 0; i < requests; ++i) {
            auto out = pipe([&] { ++bottom; return response{503}; }, classify_response);  // 100 % failure
            if (out.reason() == reason::budget_exhausted) ++refused;
            clock.advance(1ms);  // 1,000 requests per second
        }
        const double seconds = std::chrono::duration<double>(clock.now() - t0).count();
        // The floor may add min_per_second retries for every second of the run
        // (plus one window's reserve at the start).
        const double floor_allowance = floor_per_second * (seconds + 10.0);
        INFO("floor " << floor_per_second << "/s: bottom saw " << bottom << " over " << seconds << " s");
        CHECK(bottom <= 1.1 * requests + floor_allowance);
        CHECK(bottom >= requests);  // every request got its first attempt
        CHECK(refused > 0);         // the budget did refuse retries
        if (floor_per_second == 0) CHECK(bottom <= 11'000);
    }
}

TEST_CASE("retry budget: several threads never get more retries than the ratio allows") {
    manual_clock clock;  // frozen: every deposit stays in the window
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 10, .window = 10s}};
    constexpr int threads = 4;
    constexpr int deposits_per_thread = 5'000;
    std::atomic<int> granted{0};
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < deposits_per_thread; ++i) {
                    budget.deposit(clock.now());
                    if (budget.try_withdraw(clock.now())) granted.fetch_add(1);
                    if (budget.try_withdraw(clock.now())) granted.fetch_add(1);
                }
            });
    }
    // 20,000 requests → 2,000 retries, plus the reserve of 10/s × 10 s.
    CHECK(granted.load() == 2'000 + 100);
    CHECK(budget.balance(clock.now()) == 0);
}

TEST_CASE("retry policy: never starts an attempt with less than a millisecond left") {
    manual_clock clock;
    std::vector<resil::timeouts> seen;
    // A Retry-After of 1 s inside a deadline of 1,000.5 ms: the wait fits,
    // but would leave half a millisecond: a 0 ms timeout, "no limit" to many
    // clients. The policy gives up instead.
    auto pipe = resil::pipeline(clock, resil::deadline_policy{1000500us}, resil::retry_policy{},
                                resil::timeout_policy{{.total = 5s}});
    auto out = pipe(
        [&](resil::basic_context<manual_clock>& ctx) {
            seen.push_back(ctx.attempt_timeouts());
            return response{429, 1s};
        },
        classify_response);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].total == 1000ms);
    CHECK(out.reason() == reason::retry_after_exceeds_deadline);
    CHECK(clock.sleeps() == 0);
}

TEST_CASE("retry policy: when an inner policy refuses a retry, the last response is kept") {
    manual_clock clock;
    int calls = 0;
    // The attempt itself eats the time: 20 ms are left, and the 20 ms backoff
    // would leave none for a second attempt, so the retry gives up early.
    auto pipe = resil::pipeline(clock, resil::deadline_policy{300ms},
                                resil::retry_policy{{.backoff = resil::exponential_backoff{10ms, 100ms}}},
                                resil::timeout_policy{{.total = 1s}});
    auto out = pipe([&] { ++calls; clock.advance(280ms); return response{503}; }, classify_response);
    CHECK(calls == 1);
    CHECK(out.reason() == reason::backoff_exceeds_deadline);
    REQUIRE(out.has_value());
    CHECK(out->status == 503);
}

TEST_CASE("retry policy: a backoff cap beyond max_wait is refused") {
    CHECK_THROWS_WITH(resil::retry_policy({.backoff = resil::full_jitter{1s, 2min}, .max_wait = 1min}),
                      "resil::retry_policy: `backoff.cap` must be at most max_wait (1m), got 2m");
}

TEST_CASE("retry options: validate names the field, its range and the value") {
    CHECK_FALSE(resil::retry_options{}.validate());
    auto bad = resil::retry_options{.max_attempts = 101}.validate();
    REQUIRE(bad);
    CHECK(bad->field == "max_attempts");
    CHECK(bad->message() == "`max_attempts` must be in [1, 100], got 101");
    bad = resil::retry_options{.max_wait = 0s}.validate();
    REQUIRE(bad);
    CHECK(bad->message() == "`max_wait` must be in [1ms, 24h], got 0s");
    bad = resil::retry_options{.backoff = resil::full_jitter{0ms, 1s}}.validate();
    REQUIRE(bad);
    CHECK(bad->field == "backoff.base");  // the backoff's own check, under its field
    CHECK_THROWS_WITH(resil::retry_policy({.max_wait = -1s}), "resil::retry_policy: `max_wait` must be in [1ms, 24h], got -1s");
    static_assert(resil::retry_options::min_attempts == 1 && resil::retry_options::max_attempts_limit == 100);
}

TEST_CASE("retry policy: giving up because the backoff would not fit is not reported as a timeout") {
    // The seed scenario: 73 ms into a 250 ms budget, the next wait (200 ms)
    // would leave nothing for the attempt after it.
    manual_clock clock;
    std::vector<std::uint32_t> deadline_events;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms},
                                resil::retry_policy{{.backoff = resil::exponential_backoff{100ms, 1s}}})
                    .with_listener([&](const resil::events::deadline_exceeded& e) { deadline_events.push_back(e.attempts); });
    auto out = pipe([&] { clock.advance(73ms); return response{503}; }, classify_response);
    CHECK(out.reason() == reason::backoff_exceeds_deadline);
    CHECK(resil::to_string(out.reason()) == "backoff_exceeds_deadline");
    CHECK(clock.sleeps() == 0);
    CHECK(deadline_events.empty());  // no deadline_exceeded event either
    CHECK(out.dont_retry());          // outer layers do not add their retries
}

TEST_CASE("retry policy: with less than the minimum attempt time left, the deadline is what was exceeded") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{100ms}, resil::retry_policy{});
    auto out = pipe([&] { clock.advance(100ms - 500us); return response{503}; }, classify_response);
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK(clock.sleeps() == 0);
}
