// How many times a pipeline reads the clock: once per attempt on the
// success path, whatever policies it holds, plus one as a failed attempt ends
// and one at each end a listener times. Pinned with a clock that counts its
// readings, on manual time, so the timelines stay exact.
#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/metrics.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/token_bucket.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

namespace {

// Manual time that counts its readings; copies share time and count.
class counting_clock {
public:
    [[nodiscard]] resil::time_point now() const noexcept {
        reads_->fetch_add(1, std::memory_order_relaxed);
        return time_.now();
    }
    bool sleep_for(resil::duration d, std::stop_token stop = {}) const { return time_.sleep_for(d, std::move(stop)); }
    bool sleep_until(resil::time_point t, std::stop_token stop = {}) const {
        return time_.sleep_until(t, std::move(stop));
    }
    void advance(resil::duration d) const { time_.advance(d); }
    /// Readings since the last call of this function.
    [[nodiscard]] int take_reads() const { return reads_->exchange(0); }
    friend bool operator==(const counting_clock& a, const counting_clock& b) noexcept { return a.reads_ == b.reads_; }

private:
    manual_clock time_;
    std::shared_ptr<std::atomic<int>> reads_ = std::make_shared<std::atomic<int>>(0);
};
static_assert(resil::clock<counting_clock>);

using breaker_type = resil::basic_circuit_breaker<counting_clock>;

// A policy of a user's: notes the reading each attempt starts with.
struct reading_probe {
    std::vector<resil::time_point>* seen;
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        seen->push_back(ctx.cached_now());
        return next(ctx);
    }
};

// Retries after 1 ms, on manual time: a wait reads no clock.
resil::retry_options quick_retries(resil::retry_budget* budget = nullptr) {
    return {.max_attempts = 3, .backoff = resil::exponential_backoff{.base = 1ms, .cap = 1ms, .multiplier = 1.0}, .budget = budget};
}

}  // namespace

TEST_CASE("clock reads: the five-policy pipeline reads the clock once per successful call") {
    counting_clock clock;
    resil::retry_budget budget;
    breaker_type breaker{{}, clock};
    auto pipe = resil::pipeline(clock, resil::fallback_policy{[] { return -1; }}, resil::deadline_policy{250ms},
                                resil::retry_policy{quick_retries(&budget)}, std::ref(breaker),
                                resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    (void)clock.take_reads();  // the breaker's construction
    for (int i = 0; i < 5; ++i) {
        auto out = pipe([&](auto& ctx) {
            CHECK(ctx.timeouts().total == 150ms);  // the policies ran on that one reading
            return i;
        }, resil::always_success);
        REQUIRE(out.ok());
        CHECK(clock.take_reads() == 1);
    }
    CHECK(breaker.metrics().calls == 5);
    CHECK(budget.balance(clock.now()) > 0);
}

TEST_CASE("clock reads: a failed attempt adds one reading as it ends, shared by the breaker and the retry") {
    counting_clock clock;
    resil::retry_budget budget;
    breaker_type breaker{{}, clock};
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, resil::retry_policy{quick_retries(&budget)},
                                std::ref(breaker), resil::timeout_policy{{.total = 150ms}});
    (void)clock.take_reads();
    int calls = 0;
    auto out = pipe([&] { return ++calls; },
                    [](int n) { return n == 1 ? verdict::retryable : verdict::success; });
    REQUIRE(out.ok());
    CHECK(calls == 2);
    // Attempt 1 starts (1), fails (1: the breaker's record, the retry's
    // deadline check and budget withdrawal); attempt 2 starts after the
    // wait (1) and succeeds (0).
    CHECK(clock.take_reads() == 3);
    const auto m = breaker.metrics();
    CHECK(m.calls == 2);
    CHECK(m.failures == 1);
}

TEST_CASE("clock reads: without a deadline, the first policy that needs time reads it for the others") {
    counting_clock clock;
    (void)clock.take_reads();

    SECTION("a budget's deposit and a breaker's window share one reading") {
        resil::retry_budget budget;
        breaker_type breaker{{}, clock};
        (void)clock.take_reads();
        auto pipe = resil::pipeline(clock, resil::retry_policy{quick_retries(&budget)}, std::ref(breaker),
                                    resil::timeout_policy{{.total = 150ms}});
        REQUIRE(pipe([] { return 1; }, resil::always_success).ok());
        CHECK(clock.take_reads() == 1);
    }
    SECTION("a time-window breaker alone reads once") {
        breaker_type breaker{{}, clock};
        (void)clock.take_reads();
        auto pipe = resil::pipeline(clock, std::ref(breaker));
        REQUIRE(pipe([] { return 1; }, resil::always_success).ok());
        CHECK(clock.take_reads() == 1);
    }
    SECTION("a count-window breaker, a retry without budget and a timeout read nothing") {
        breaker_type breaker{{.mode = resil::breaker_mode::count_window}, clock};
        resil::concurrency_limit limit{{.max_in_flight = 4}};
        (void)clock.take_reads();
        auto pipe = resil::pipeline(clock, resil::retry_policy{quick_retries()}, std::ref(breaker), std::ref(limit),
                                    resil::timeout_policy{{.total = 150ms}});
        REQUIRE(pipe([] { return 1; }, resil::always_success).ok());
        CHECK(clock.take_reads() == 0);
    }
}

TEST_CASE("clock reads: a token bucket on the pipeline's time line takes the attempt's reading") {
    counting_clock clock;
    breaker_type breaker{{}, clock};
    resil::basic_token_bucket<counting_clock> bucket{{.rate = 1000, .burst = 10}, clock};
    (void)clock.take_reads();
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(breaker), std::ref(bucket),
                                resil::timeout_policy{{.total = 150ms}});
    REQUIRE(pipe([] { return 1; }, resil::always_success).ok());
    CHECK(clock.take_reads() == 1);
    CHECK(bucket.available(clock.now()) == 9);

    SECTION("and a wait for a token drops it") {
        resil::basic_token_bucket<counting_clock> slow{{.rate = 10, .burst = 1, .max_wait = 200ms}, clock};
        std::vector<resil::time_point> seen;
        auto waiting = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(slow), reading_probe{&seen});
        const auto t0 = clock.now();
        REQUIRE(waiting([] { return 1; }, resil::always_success).ok());  // the burst's token
        REQUIRE(waiting([] { return 2; }, resil::always_success).ok());  // waits 100 ms for the next
        REQUIRE(seen.size() == 2);
        CHECK(seen[0] == t0);
        CHECK(seen[1] == t0 + 100ms);  // read after the wait, not before it
    }
}

TEST_CASE("clock reads: durations cost one reading at each end that is timed") {
    counting_clock clock;
    breaker_type breaker{{}, clock};
    resil::metrics m{"dep"};
    (void)clock.take_reads();

    SECTION("a listener timing attempts and calls: the start is shared, each end is read") {
        auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(breaker)).with_listener(std::ref(m));
        REQUIRE(pipe([&] {
                    clock.advance(7ms);
                    return 1;
                }, resil::always_success)
                    .ok());
        CHECK(clock.take_reads() == 3);  // the start, the attempt's end, the call's end
        const auto l = m.latencies();
        CHECK(l.attempt.count() == 1);
        CHECK(l.attempt.sum == 7ms);
        CHECK(l.call.sum == 7ms);
    }
    SECTION("a slow-call threshold reads the attempt's end") {
        breaker_type slow{{.min_calls = 1, .slow_call_threshold = 5ms}, clock};
        (void)clock.take_reads();
        auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(slow));
        REQUIRE(pipe([&] {
                    clock.advance(7ms);
                    return 1;
                }, resil::always_success)
                    .ok());
        CHECK(clock.take_reads() == 2);
        CHECK(slow.metrics().slow_calls == 1);  // 7 ms from the shared start reading to the end's
    }
}

TEST_CASE("clock reads: a breaker on another time line reads its own clock") {
    counting_clock pipeline_clock;
    counting_clock breaker_clock;  // not a copy: another time line
    breaker_type breaker{{}, breaker_clock};
    (void)breaker_clock.take_reads();
    auto pipe = resil::pipeline(pipeline_clock, resil::deadline_policy{250ms}, std::ref(breaker));
    REQUIRE(pipe([] { return 1; }, resil::always_success).ok());
    CHECK(pipeline_clock.take_reads() == 1);
    CHECK(breaker_clock.take_reads() == 1);
    CHECK_FALSE(resil::same_time_line(pipeline_clock, breaker_clock));
    CHECK(resil::same_time_line(pipeline_clock, counting_clock{pipeline_clock}));
    CHECK(resil::same_time_line(resil::steady_clock{}, resil::steady_clock{}));
}

TEST_CASE("clock reads: a breaker used by hand reads its clock as it records") {
    counting_clock clock;
    breaker_type breaker{{}, clock};
    (void)clock.take_reads();
    auto p = breaker.try_acquire();
    REQUIRE(p);
    CHECK(clock.take_reads() == 0);
    breaker.record(p, verdict::success);
    CHECK(clock.take_reads() == 1);
}

TEST_CASE("clock reads: a success counts at its attempt's start, a failure at its end") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.window = 10s, .min_calls = 100}, clock};
    auto pipe = resil::pipeline(clock, std::ref(breaker));

    // Long attempts: 4 s each, in a 10 s window of 1 s buckets.
    REQUIRE(pipe([&] {
                clock.advance(4s);
                return 1;
            }, resil::always_success)
                .ok());
    REQUIRE_FALSE(pipe([&] {
                      clock.advance(4s);
                      return 0;
                  }, [](int) { return verdict::retryable; })
                      .ok());
    auto m = breaker.metrics();
    CHECK(m.calls_in_window == 2);
    CHECK(m.failures_in_window == 1);

    // 7 s later the success (counted at t = 0) has left the window; the
    // failure (counted at t = 8 s, as it ended) is still in it.
    clock.advance(7s);
    m = breaker.metrics();
    CHECK(m.calls_in_window == 1);
    CHECK(m.failures_in_window == 1);

    // A failure that took longer than the whole window still counts in it.
    REQUIRE_FALSE(pipe([&] {
                      clock.advance(30s);
                      return 0;
                  }, [](int) { return verdict::retryable; })
                      .ok());
    m = breaker.metrics();
    CHECK(m.calls_in_window == 1);
    CHECK(m.failures_in_window == 1);
    CHECK(m.calls == 3);
}

TEST_CASE("clock reads: a long success counts as it ends once other calls have moved the window on") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.window = 10s, .min_calls = 100}, clock};
    auto pipe = resil::pipeline(clock, std::ref(breaker));
    // A 12 s success, during which another call fails: the window has moved
    // past the success's start, so the success is counted at its end and
    // stays in the window beside that failure. (Counted at its start, 12 s
    // ago, it would have fallen out of a 10 s window at once.)
    REQUIRE(pipe([&] {
                clock.advance(12s);
                REQUIRE_FALSE(pipe([] { return 0; }, [](int) { return verdict::retryable; }).ok());
                return 1;
            }, resil::always_success)
                .ok());
    const auto m = breaker.metrics();
    CHECK(m.calls_in_window == 2);
    CHECK(m.failures_in_window == 1);
    CHECK(m.calls == 2);
}

TEST_CASE("clock reads: a wait in the bucket's acquire(ctx), or a new clock, drops the reading") {
    manual_clock clock;
    resil::basic_token_bucket<manual_clock> bucket{{.rate = 10, .burst = 1}, clock};
    resil::basic_context<manual_clock> ctx{clock};
    const auto t0 = ctx.cached_now();
    REQUIRE(bucket.acquire(ctx));  // the burst's token, no wait
    REQUIRE(bucket.acquire(ctx));  // waits 100 ms
    CHECK(ctx.cached_now() == t0 + 100ms);
    manual_clock other{clock.now() + 1h};
    ctx.set_clock(other);
    CHECK(ctx.cached_now() == other.now());
}

TEST_CASE("clock reads: the reading of one call never stands for the next, nor for a wait") {
    counting_clock clock;
    resil::retry_budget budget;
    std::vector<resil::time_point> seen;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{200ms},
                                resil::retry_policy{{.max_attempts = 2,
                                                     .backoff = resil::exponential_backoff{.base = 40ms, .cap = 40ms,
                                                                                           .multiplier = 1.0},
                                                     .budget = &budget}},
                                reading_probe{&seen}, resil::timeout_policy{{.total = 150ms}});
    const auto t0 = clock.now();
    auto out = pipe([&] {
        clock.advance(30ms);
        return 0;
    }, [](int) { return verdict::retryable; });
    CHECK_FALSE(out.ok());
    // Attempt 2 starts after attempt 1 (30 ms) and the wait (40 ms): the
    // reading taken as attempt 1 failed does not stand for it.
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == t0);
    CHECK(seen[1] == t0 + 70ms);

    // A second call reads afresh: its deadline is 200 ms from its own start.
    clock.advance(1s);
    resil::basic_context<counting_clock> again;
    (void)pipe.execute(again, [&](auto& c) {
        CHECK(c.remaining() == 200ms);
        return 1;
    }, resil::always_success);
    CHECK(seen.back() == t0 + 100ms + 1s);  // two attempts of 30 ms, a 40 ms wait, 1 s
}

TEST_CASE("clock reads: a failed attempt is judged on the time it ended, not the time it started") {
    counting_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{100ms},
                                resil::retry_policy{{.max_attempts = 3,
                                                     .backoff = resil::exponential_backoff{.base = 40ms, .cap = 40ms,
                                                                                           .multiplier = 1.0}}});
    int calls = 0;
    auto out = pipe([&] {
        ++calls;
        clock.advance(70ms);
        return 0;
    }, [](int) { return verdict::retryable; });
    // 30 ms are left after the attempt: a 40 ms wait does not fit. (Judged
    // on the attempt's start reading, 100 ms would seem left.)
    CHECK(calls == 1);
    CHECK(out.reason() == reason::backoff_exceeds_deadline);
}
