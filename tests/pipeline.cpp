#include <resil/circuit_breaker.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include "catch.hpp"

#include "support/allocation_counter.hpp"

using resil_test::allocations;

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

namespace {

// A user-written policy: records the order policies run in.
struct tracer {
    std::vector<std::string>* log;
    std::string name;
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        log->push_back(name + " in");
        auto out = next(ctx);
        log->push_back(name + " out");
        return out;
    }
};

struct move_only {
    std::unique_ptr<int> value;
};
resil::classification classify(const move_only& m) { return m.value ? verdict::success : verdict::retryable; }

struct no_default {
    explicit no_default(int v) : value(v) {}
    int value;
};

int answer() { return 42; }

struct service {
    int base = 40;
    int add(int x) const { return base + x; }
};

}  // namespace

TEST_CASE("pipeline: policies run outer to inner in the order written") {
    std::vector<std::string> log;
    auto pipe = resil::pipeline(tracer{&log, "a"}, tracer{&log, "b"}, tracer{&log, "c"});
    auto out = pipe([&] { log.push_back("call"); return 1; }, resil::always_success);
    CHECK(out.ok());
    CHECK(log == std::vector<std::string>{"a in", "b in", "c in", "call", "c out", "b out", "a out"});
}

TEST_CASE("pipeline: move-only and non-default-constructible results") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    int calls = 0;
    auto out = pipe([&] { return ++calls < 2 ? move_only{} : move_only{std::make_unique<int>(7)}; });
    REQUIRE(out.ok());
    CHECK(*out->value == 7);
    move_only taken = std::move(out).value();
    CHECK(*taken.value == 7);

    auto out2 = pipe([] { return no_default{5}; }, resil::always_success);
    REQUIRE(out2.ok());
    CHECK(out2->value == 5);
}

TEST_CASE("pipeline: function pointers, member calls and void callables") {
    auto pipe = resil::pipeline(resil::retry_policy{});
    CHECK(pipe(&answer, resil::always_success).value() == 42);

    service s;
    CHECK(pipe(std::bind_front(&service::add, &s, 2), resil::always_success).value() == 42);

    int touched = 0;
    auto out = pipe([&] { ++touched; });
    CHECK(out.ok());
    CHECK(touched == 1);
}

TEST_CASE("pipeline: the callable may take the context") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms},
                                resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    auto out = pipe(
        [&](resil::basic_context<manual_clock>& ctx) {
            CHECK(ctx.attempt() == 1);  // no retry policy: the one attempt is the first
            CHECK(ctx.deadline().is_set());
            CHECK(ctx.remaining() == 250ms);
            const auto t = ctx.attempt_timeouts();
            CHECK(t.connect == 20ms);
            CHECK(t.total == 150ms);
            clock.advance(160ms);  // time spent before the model call: 250 - 160 = 90 ms left
            CHECK(ctx.attempt_timeouts().total == 90ms);
            CHECK(ctx.attempt_timeouts().read == 90ms);
            CHECK(ctx.attempt_timeouts().connect == 20ms);
            return 1;
        },
        resil::always_success);
    CHECK(out.ok());
}

TEST_CASE("deadline policy: an inner deadline never extends an outer one") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{300ms}, resil::deadline_policy{5s});
    auto out = pipe([](resil::basic_context<manual_clock>& ctx) { return ctx.remaining(); }, resil::always_success);
    CHECK(out.value() == 300ms);
}

TEST_CASE("deadline policy: an upstream deadline already passed rejects before any attempt") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms});
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
        .deadline = resil::basic_deadline<manual_clock>::at(clock.now() - 1ms, clock)}};
    int calls = 0;
    auto out = pipe.execute(ctx, [&] { return ++calls; }, resil::always_success);
    CHECK(calls == 0);
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK_FALSE(out.has_value());
    CHECK_THROWS_AS(out.value(), resil::bad_outcome_access);
}

TEST_CASE("deadline policy: a call that fails after its deadline passed reports deadline_exceeded") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{100ms});
    auto out = pipe([&] { clock.advance(150ms); return 0; }, [](int) { return verdict::ambiguous; });
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK(out.has_value());
}

TEST_CASE("deadline and timeout policies refuse nonsense") {
    CHECK_THROWS_AS(resil::deadline_policy{0ms}, std::invalid_argument);
    CHECK_THROWS_AS(resil::deadline_policy{-5s}, std::invalid_argument);
    CHECK_THROWS_AS(resil::timeout_policy({.connect = 0ms}), std::invalid_argument);
    CHECK_THROWS_AS(resil::timeout_policy({.read = -1ms}), std::invalid_argument);
}

TEST_CASE("pipelines nest: an inner pipeline's outcome is judged by what it says") {
    manual_clock clock;
    int bottom = 0;
    auto inner = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2}});
    auto outer = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2}});
    auto out = outer([&] { return inner([&] { return ++bottom; }, [](int) { return verdict::retryable; }); });
    // The inner layer retried and then said "don't retry": the outer did not add its own.
    CHECK(bottom == 2);
    CHECK_FALSE(out.ok());
}

TEST_CASE("outcome::attempts says how many times the callable ran, with or without a listener") {
    manual_clock clock;
    int runs = 0;
    auto retrying = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    // Two failures, then a success: three attempts.
    auto ok = retrying([&] { return ++runs; }, [](int n) { return n < 3 ? verdict::retryable : verdict::success; });
    CHECK(ok.ok());
    CHECK(ok.attempts() == 3);
    // Retries ran out: every attempt counted.
    auto exhausted = retrying([] { return 0; }, [](int) { return verdict::retryable; });
    CHECK(exhausted.reason() == reason::retries_exhausted);
    CHECK(exhausted.attempts() == 3);
    // A permanent failure is not retried.
    auto permanent = retrying([] { return 0; }, [](int) { return verdict::permanent; });
    CHECK(permanent.attempts() == 1);
    // One attempt without a retry policy.
    auto plain = resil::pipeline(clock)([] { return 1; }, resil::always_success);
    CHECK(plain.attempts() == 1);

    // A fallback's value keeps the count of the attempts that failed before it.
    auto with_plan_b = resil::pipeline(clock, resil::fallback_policy{[] { return -1; }},
                                       resil::retry_policy{{.max_attempts = 2}});
    auto planned = with_plan_b([] { return 1; }, [](int) { return verdict::retryable; });
    CHECK(planned.from_fallback());
    CHECK(planned.attempts() == 2);

    // Refused before any attempt: 0.
    std::stop_source stop;
    stop.request_stop();
    resil::context cancelled{resil::call_options{.stop = stop.get_token()}};
    auto refused = resil::pipeline(resil::retry_policy{})
                       .execute(cancelled, [] { return 1; }, resil::always_success);
    CHECK(refused.reason() == reason::cancelled);
    CHECK(refused.attempts() == 0);
}

TEST_CASE("outcome::attempts: a breaker inside a retry refusing an attempt counts only those that ran") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 1, .open_for = 10s}, clock};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}}, std::ref(breaker));
    int runs = 0;
    // The first attempt fails and opens the breaker, which refuses the second.
    auto first = pipe([&] { return ++runs; }, [](int) { return verdict::retryable; });
    CHECK(first.reason() == reason::circuit_open);
    CHECK(runs == 1);
    CHECK(first.attempts() == 1);
    // The next call is refused before any attempt.
    auto second = pipe([&] { return ++runs; }, [](int) { return verdict::retryable; });
    CHECK(second.reason() == reason::circuit_open);
    CHECK(runs == 1);
    CHECK(second.attempts() == 0);
}

TEST_CASE("outcome::attempts: judged exceptions count as runs; a fallback over a refusal keeps the runs before it") {
    manual_clock clock;
    int runs = 0;
    auto judged = resil::classifier{[](int) { return verdict::success; },
                                    [](const std::exception_ptr&) { return verdict::retryable; }};
    auto retrying = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    // Two throws, then a value.
    auto out = retrying(
        [&] {
            if (++runs < 3) throw std::runtime_error("down");
            return runs;
        },
        judged);
    REQUIRE(out.ok());
    CHECK(out.attempts() == 3);

    // fallback → retry → breaker: the second attempt is refused (adds 0),
    // and the fallback's value keeps the one run.
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 1, .open_for = 10s}, clock};
    auto guarded = resil::pipeline(clock, resil::fallback_policy{[] { return -1; }},
                                   resil::retry_policy{{.max_attempts = 3}}, std::ref(breaker));
    runs = 0;
    auto planned = guarded([&] { return ++runs; }, [](int) { return verdict::retryable; });
    CHECK(planned.from_fallback());
    CHECK(planned.fallback_reason() == reason::circuit_open);
    CHECK(runs == 1);
    CHECK(planned.attempts() == 1);
    // The next call is refused at once: the fallback's value says 0.
    auto refused = guarded([&] { return ++runs; }, [](int) { return verdict::retryable; });
    CHECK(refused.from_fallback());
    CHECK(refused.attempts() == 0);
}

TEST_CASE("outcome::attempts: a listener changes nothing of the count") {
    manual_clock clock;
    std::uint32_t heard = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 4}})
                    .with_listener([&](const resil::events::call_finished& e) { heard = e.attempts; });
    int runs = 0;
    auto out = pipe([&] { return ++runs; }, [](int n) { return n < 4 ? verdict::retryable : verdict::success; });
    CHECK(out.attempts() == 4);
    CHECK(heard == 4);
}

TEST_CASE("outcome::attempts: a nested pipeline counts once in the outer one") {
    manual_clock clock;
    int bottom = 0;
    auto inner = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    auto outer = resil::pipeline(clock);
    auto out = outer([&] { return inner([&] { return ++bottom; }, [](int n) { return n < 2 ? verdict::retryable : verdict::success; }); });
    REQUIRE(out.ok());
    CHECK(out.attempts() == 1);
    CHECK(out->attempts() == 2);
}

TEST_CASE("fallback: counts every use by reason, copies share the counters") {
    manual_clock clock;
    resil::fallback_policy plan_b{[](const resil::outcome<int>& failed) { return failed.has_value() ? -*failed : -1; }};
    auto pipe = resil::pipeline(clock, plan_b, resil::retry_policy{{.max_attempts = 2}});
    auto out = pipe([] { return 7; }, [](int) { return verdict::retryable; });
    REQUIRE(out.ok());
    CHECK(*out == -7);
    CHECK(out.from_fallback());
    CHECK(out.fallback_reason() == reason::retries_exhausted);
    auto out2 = pipe([] { return 8; }, [](int) { return verdict::permanent; });
    CHECK(*out2 == -8);
    CHECK(plan_b.count(reason::retries_exhausted) == 1);
    CHECK(plan_b.count(reason::failed) == 1);
    CHECK(plan_b.metrics().total() == 2);
    auto ok = pipe([] { return 9; }, [](int) { return verdict::success; });
    CHECK(*ok == 9);
    CHECK_FALSE(ok.from_fallback());
    CHECK(plan_b.metrics().total() == 2);
}

TEST_CASE("events: one listener sees attempts, retries and the fallback, each once") {
    manual_clock clock;
    std::vector<std::string> seen;
    auto listener = [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, resil::events::attempt_started>) seen.push_back("start " + std::to_string(e.attempt));
        else if constexpr (std::is_same_v<E, resil::events::attempt_finished>) seen.push_back("finish " + std::string(resil::to_string(e.verdict)));
        else if constexpr (std::is_same_v<E, resil::events::retry_scheduled>) seen.push_back("retry");
        else if constexpr (std::is_same_v<E, resil::events::retries_exhausted>) seen.push_back("exhausted");
        else if constexpr (std::is_same_v<E, resil::events::fallback_used>) seen.push_back("fallback " + std::string(resil::to_string(e.reason)));
        else if constexpr (std::is_same_v<E, resil::events::call_finished>)
            seen.push_back("call " + std::string(resil::to_string(e.reason)) + " after " + std::to_string(e.attempts) +
                           (e.from_fallback ? " (fallback)" : ""));
        else seen.push_back("other");
    };
    auto pipe = resil::pipeline(clock, resil::fallback_policy{[] { return 0; }}, resil::retry_policy{{.max_attempts = 2}})
                    .with_listener(listener);
    (void)pipe([] { return 1; }, [](int) { return verdict::retryable; });
    CHECK(seen == std::vector<std::string>{"start 1", "finish retryable", "retry", "start 2", "finish retryable",
                                           "exhausted", "fallback retries_exhausted",
                                           "call retries_exhausted after 2 (fallback)"});
}

namespace {
// A policy in front of a shared quota's store that could not decide and
// admitted the call (as resil::redis::rate_limiter failing open does).
struct store_down_policy {
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        ctx.emit(resil::events::quota_store_failed{true, true});
        return next(ctx);
    }
};
}  // namespace

TEST_CASE("events: a listener of quota_store_failed alone is a listener") {
    manual_clock clock;
    std::vector<resil::events::quota_store_failed> seen;
    struct store_listener {
        std::vector<resil::events::quota_store_failed>* seen;
        void operator()(const resil::events::quota_store_failed& e) const { seen->push_back(e); }
    };
    auto pipe = resil::pipeline(clock, store_down_policy{}).with_listener(store_listener{&seen});
    CHECK(pipe([] { return 1; }, resil::always_success).ok());
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].fail_open);
    CHECK(seen[0].admitted);
}

#ifndef RESIL_TEST_TSAN
TEST_CASE("pipeline: a call allocates nothing") {
    resil::retry_budget budget;
    auto pipe = resil::pipeline(resil::fallback_policy{[] { return 0; }}, resil::deadline_policy{1s},
                                resil::retry_policy{{.budget = &budget}}, resil::timeout_policy{{.total = 100ms}});
    (void)pipe([] { return 1; }, resil::always_success);  // warm the per-thread jitter engine
    const auto before = allocations.load();
    for (int i = 0; i < 1000; ++i) {
        auto out = pipe([i] { return i; }, resil::always_success);
        REQUIRE(out.ok());
    }
    CHECK(allocations.load() == before);
}
#endif

namespace {
struct timing {
    std::vector<resil::duration>* seen;
    static constexpr bool times_attempts = true;
    void operator()(const resil::events::attempt_finished& e) const { seen->push_back(e.elapsed); }
};
}  // namespace

TEST_CASE("events: attempt durations are measured only for a listener that asks for them") {
    manual_clock clock;
    std::vector<resil::duration> untimed;
    auto plain = resil::pipeline(clock, resil::retry_policy{})
                     .with_listener([&](const resil::events::attempt_finished& e) { untimed.push_back(e.elapsed); });
    (void)plain([&] { clock.advance(40ms); return 1; }, resil::always_success);
    REQUIRE(untimed.size() == 1);
    CHECK(untimed[0] == resil::duration::zero());

    std::vector<resil::duration> timed;
    auto measured = resil::pipeline(clock, resil::retry_policy{}).with_listener(timing{&timed});
    (void)measured([&] { clock.advance(40ms); return 1; }, resil::always_success);
    REQUIRE(timed.size() == 1);
    CHECK(timed[0] == 40ms);
}

TEST_CASE("pipeline: an escaping exception leaves the caller's context whole and is reported once") {
    manual_clock clock;
    std::stop_source stop;
    std::vector<resil::events::call_finished> finished;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, resil::timeout_policy{{.total = 100ms}})
                    .with_listener([&](const resil::events::call_finished& e) { finished.push_back(e); });
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.stop = stop.get_token()}};
    CHECK_THROWS_AS(pipe.execute(ctx, []() -> int { throw std::runtime_error("bug"); }, resil::always_success),
                    std::runtime_error);
    CHECK(ctx.stop_token().stop_possible());     // still the caller's token
    CHECK_FALSE(ctx.deadline().is_set());        // the 250 ms deadline was the call's, not the caller's
    CHECK(ctx.timeouts() == resil::timeouts{});  // and so were the timeouts
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].threw);
    CHECK(finished[0].reason == reason::failed);
}

TEST_CASE("pipelines nest through execute: the inner one honours the outer deadline") {
    manual_clock clock;
    int bottom = 0;
    auto inner = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 5,
                                                             .backoff = resil::exponential_backoff{100ms, 1s}}});
    auto outer = resil::pipeline(clock, resil::deadline_policy{250ms});
    const auto t0 = clock.now();
    auto out = outer([&](resil::basic_context<manual_clock>& ctx) {
        return inner.execute(ctx, [&] { ++bottom; return 0; }, [](int) { return verdict::retryable; });
    });
    // Waits of 200 ms then 400 ms: only the first fits in 250 ms.
    CHECK(bottom == 2);
    CHECK(clock.now() - t0 <= 250ms);
    // 50 ms were still left: the retry gave up early rather than time out.
    CHECK(out.reason() == reason::backoff_exceeds_deadline);
}

TEST_CASE("pipeline: a caller's context without a deadline takes the pipeline's clock") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms});
    resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{.idempotent = true}};
    auto out = pipe.execute(ctx, [&] { clock.advance(1s); return 1; }, [](int) { return verdict::retryable; });
    CHECK(out.reason() == reason::deadline_exceeded);
}

TEST_CASE("timeout policy: an inner triad never loosens an outer one") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}},
                                resil::timeout_policy{{.connect = 1s, .read = 50ms, .total = 5s}});
    auto out = pipe([](resil::basic_context<manual_clock>& ctx) { return ctx.attempt_timeouts(); }, resil::always_success);
    CHECK(out.value() == resil::timeouts{.connect = 20ms, .read = 50ms, .total = 150ms});
}

TEST_CASE("classifiers: a generic lambda works, and exceptions are judged only on request") {
    struct reply {
        int status;
    };
    auto pipe = resil::pipeline(resil::retry_policy{{.max_attempts = 1}});
    auto out = pipe([] { return reply{503}; }, [](const auto& r) { return r.status < 500 ? verdict::success : verdict::retryable; });
    CHECK(out.verdict() == verdict::retryable);
    // A generic lambda is never asked about exceptions: they propagate.
    CHECK_THROWS_AS(pipe([]() -> reply { throw std::runtime_error("x"); }, [](const auto&) { return verdict::success; }),
                    std::runtime_error);
}

TEST_CASE("void callables: judged by their exceptions, and served by a void fallback") {
    manual_clock clock;
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{});
    auto judge = resil::classifier{resil::always_success, [](const std::exception_ptr&) { return verdict::retryable; }};
    auto out = pipe([&] { if (++calls < 3) throw std::runtime_error("flaky"); }, judge);
    CHECK(out.ok());
    CHECK(calls == 3);

    int plan_b = 0;
    resil::fallback_policy fallback{[&] { ++plan_b; }};
    auto with_fallback = resil::pipeline(clock, fallback, resil::retry_policy{{.max_attempts = 2}});
    auto served = with_fallback([] { throw std::runtime_error("down"); }, judge);
    CHECK(served.ok());
    CHECK(served.from_fallback());
    CHECK(plan_b == 1);
}

TEST_CASE("fallback: serving the stale value it was given is safe") {
    manual_clock clock;
    resil::fallback_policy stale{[](const resil::outcome<std::string>& failed) -> const std::string& { return *failed; }};
    auto pipe = resil::pipeline(clock, stale, resil::retry_policy{{.max_attempts = 1}});
    auto out = pipe([] { return std::string(100, 'x'); }, [](const std::string&) { return verdict::permanent; });
    REQUIRE(out.ok());
    CHECK(*out == std::string(100, 'x'));
}
