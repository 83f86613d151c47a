// resil/fault_injection.hpp in the blocking pipeline: off unless enabled,
// exact at probabilities 0 and 1, a seeded share near p, delays on the
// manual clock that never outlive the deadline or the stop token, and
// retries, breakers and fallbacks reacting to injected failures as to real
// ones. (The asynchronous pipeline's equivalence: tests/asio_pipeline.cpp.)
#include <resil/circuit_breaker.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/fault_injection.hpp>
#include <resil/pipeline.hpp>
#include <resil/policy_checklist.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::fault_injection;
using resil::fault_injection_options;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;
namespace events = resil::events;

static_assert(resil::policy_checklist<fault_injection>);
static_assert(!std::is_copy_constructible_v<fault_injection>);
static_assert(resil::policy_steps<fault_injection, resil::basic_context<manual_clock>, resil::outcome<int>>);

namespace {

resil::classification classify_status(int status) {
    if (status >= 500) return verdict::retryable;
    if (status >= 400) return verdict::permanent;
    return verdict::success;
}

struct event_log {
    std::vector<std::string>* lines;
    void operator()(const events::fault_injected& e) const {
        lines->push_back("fault_injected " + std::string(resil::to_string(e.kind)) + " " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(e.delay).count()) +
                         "ms " + std::string(resil::to_string(e.verdict)));
    }
    void operator()(const events::rejected& e) const {
        lines->push_back("rejected " + std::string(resil::to_string(e.reason)));
    }
    void operator()(const events::deadline_exceeded&) const { lines->push_back("deadline_exceeded"); }
    void operator()(const events::retry_scheduled& e) const {
        lines->push_back("retry_scheduled " + std::to_string(e.attempt) + " " +
                         std::string(resil::to_string(e.verdict)));
    }
    void operator()(const events::fallback_used& e) const {
        lines->push_back("fallback_used " + std::string(resil::to_string(e.reason)));
    }
};

fault_injection_options aborting(double p, verdict v = verdict::retryable) {
    return {.enabled = true, .abort = {.probability = p, .verdict = v}};
}

std::string error_of(const fault_injection_options& o) {
    const auto bad = o.validate();
    return bad ? bad->message() : "";
}

}  // namespace

TEST_CASE("fault injection: off unless enabled; the defaults inject nothing") {
    const fault_injection_options defaults{};
    CHECK_FALSE(defaults.enabled);
    CHECK(defaults.delay.probability == 0.0);
    CHECK(defaults.abort.probability == 0.0);
    CHECK(defaults.abort.verdict == verdict::retryable);
    CHECK(defaults.tag.empty());
    CHECK_FALSE(defaults.validate());

    // Configured at 100 %, but not enabled: every call runs, untouched.
    manual_clock clock;
    fault_injection faults{{.enabled = false,
                            .delay = {.probability = 1.0, .latency = 1s},
                            .abort = {.probability = 1.0}}};
    CHECK_FALSE(faults.enabled());
    auto pipe = resil::pipeline(clock, std::ref(faults));
    int calls = 0;
    for (int i = 0; i < 100; ++i) CHECK(pipe([&] { ++calls; return 200; }, classify_status).ok());
    CHECK(calls == 100);
    CHECK(clock.slept() == 0s);
    CHECK(faults.metrics() == resil::fault_injection_metrics{});
}

TEST_CASE("fault injection: bad options are refused with the field, its range and the value") {
    CHECK(error_of({.delay = {.probability = 1.5}}) == "`delay.probability` must be in [0, 1], got 1.5");
    CHECK(error_of({.delay = {.probability = -0.1}}) == "`delay.probability` must be in [0, 1], got -0.1");
    CHECK(error_of({.delay = {.probability = 0.5, .latency = 2h}}) == "`delay.latency` must be in [0s, 1h], got 2h");
    CHECK(error_of({.delay = {.latency = -1ms}}) == "`delay.latency` must be in [0s, 1h], got -1ms");
    CHECK(error_of({.abort = {.probability = 2.0}}) == "`abort.probability` must be in [0, 1], got 2");
    CHECK(error_of({.abort = {.verdict = verdict::success}}) ==
          "`abort.verdict` must be retryable, permanent or ambiguous, got success");
    CHECK(error_of({.abort = {.verdict = verdict::ambiguous, .never_sent = true}}) ==
          "`abort.never_sent` must be false with an ambiguous verdict (an ambiguous failure may have reached the "
          "server), got true");
    CHECK(error_of({.abort = {.retry_after = 25h}}) == "`abort.retry_after` must be in [0s, 1h], got 25h");
    CHECK(error_of({.tag = std::string(65, 'x')}) == "`tag` must be at most 64 characters long, got 65");
    CHECK(error_of({.tag = std::string(64, 'x')}).empty());
    // NaN is in no range.
    CHECK(error_of({.abort = {.probability = std::numeric_limits<double>::quiet_NaN()}}) ==
          "`abort.probability` must be in [0, 1], got nan");
    // Disabled options are checked too: turning them on later cannot fail.
    CHECK_THROWS_WITH(fault_injection({.delay = {.probability = 1.5}}),
                      "resil::fault_injection: `delay.probability` must be in [0, 1], got 1.5");
}

TEST_CASE("fault injection: an abort at probability 1 fails every call as an attempt, without running it") {
    manual_clock clock;
    fault_injection faults{{.enabled = true,
                            .abort = {.probability = 1.0, .verdict = verdict::retryable, .retry_after = 2s}}};
    std::vector<std::string> lines;
    auto pipe = resil::pipeline(clock, std::ref(faults)).with_listener(event_log{&lines});
    int calls = 0;
    for (int i = 0; i < 1000; ++i) {
        const auto out = pipe([&] { ++calls; return 200; }, classify_status);
        REQUIRE_FALSE(out.ok());
        CHECK(out.reason() == reason::injected_fault);
        CHECK(out.verdict() == verdict::retryable);
        CHECK(out.attempted());  // a failed attempt, not a rejection: outer policies judge it
        CHECK_FALSE(out.has_value());
        CHECK(out.retry_after() == 2s);
        CHECK_FALSE(out.never_sent());
        CHECK_THROWS_AS(out.value(), resil::bad_outcome_access);
    }
    CHECK(calls == 0);
    CHECK(faults.metrics() == resil::fault_injection_metrics{.delays = 0, .delays_cut = 0, .aborts = 1000});
    REQUIRE(lines.size() == 1000);
    CHECK(lines.front() == "fault_injected abort 0ms retryable");
}

TEST_CASE("fault injection: probability 0 never injects, 1 always, whatever the draws") {
    manual_clock clock;
    fault_injection never{{.enabled = true, .delay = {.probability = 0.0, .latency = 1s}, .abort = {.probability = 0.0}}};
    fault_injection always{{.enabled = true, .delay = {.probability = 1.0, .latency = 1ms}, .abort = {.probability = 1.0}}};
    auto quiet = resil::pipeline(clock, std::ref(never));
    auto loud = resil::pipeline(clock, std::ref(always));
    int calls = 0;
    for (std::uint64_t seed = 0; seed < 2000; ++seed) {
        resil::jitter_engine jitter{seed};
        resil::basic_context<manual_clock> a{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline{clock}, .jitter = &jitter}};
        CHECK(quiet.execute(a, [&](auto&) { ++calls; return 200; }, classify_status).ok());
        resil::basic_context<manual_clock> b{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline{clock}, .jitter = &jitter}};
        CHECK(loud.execute(b, [&](auto&) { ++calls; return 200; }, classify_status).reason() == reason::injected_fault);
    }
    CHECK(calls == 2000);
    CHECK(never.metrics() == resil::fault_injection_metrics{});
    CHECK(always.metrics() == resil::fault_injection_metrics{.delays = 2000, .delays_cut = 0, .aborts = 2000});
    CHECK(clock.slept() == 2000ms);
}

TEST_CASE("fault injection: a share near p over many calls, drawn from the call's seeded engine") {
    // Seeded: the same draws on every run and platform (resil::jitter_engine
    // and unit_interval are resil's own arithmetic), so the bounds below are
    // checked against one fixed sequence, not a chance.
    manual_clock clock;
    resil::jitter_engine jitter{2024};
    fault_injection faults{{.enabled = true, .delay = {.probability = 0.1, .latency = 5ms},
                            .abort = {.probability = 0.3}}};
    auto pipe = resil::pipeline(clock, std::ref(faults));
    constexpr int n = 20'000;
    int failed = 0;
    for (int i = 0; i < n; ++i) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline{clock}, .jitter = &jitter}};
        if (pipe.execute(ctx, [](auto&) { return 200; }, classify_status).reason() == reason::injected_fault) ++failed;
    }
    const auto m = faults.metrics();
    CHECK(m.aborts == static_cast<std::uint64_t>(failed));
    // Binomial: sd = sqrt(n p (1 - p)) = 64.8 for 0.3, 42.4 for 0.1; 4 sd either side.
    CHECK(m.aborts > 6000 - 260);
    CHECK(m.aborts < 6000 + 260);
    CHECK(m.delays > 2000 - 170);
    CHECK(m.delays < 2000 + 170);
    CHECK(clock.slept() == m.delays * 5ms);
    // The same seed, the same faults: a staging run can be replayed.
    resil::jitter_engine again{2024};
    fault_injection replay{faults.options()};
    auto pipe2 = resil::pipeline(clock, std::ref(replay));
    for (int i = 0; i < n; ++i) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline{clock}, .jitter = &again}};
        (void)pipe2.execute(ctx, [](auto&) { return 200; }, classify_status);
    }
    CHECK(replay.metrics() == m);
}

TEST_CASE("fault injection: a delay waits on the call's clock before the call runs") {
    manual_clock clock;
    fault_injection faults{{.enabled = true, .delay = {.probability = 1.0, .latency = 300ms}}};
    std::vector<std::string> lines;
    auto pipe = resil::pipeline(clock, std::ref(faults)).with_listener(event_log{&lines});
    const auto start = clock.now();
    resil::time_point ran_at{};
    const auto out = pipe([&] { ran_at = clock.now(); return 200; }, classify_status);
    CHECK(out.ok());
    CHECK(ran_at - start == 300ms);
    CHECK(clock.sleeps() == 1);
    CHECK(lines == std::vector<std::string>{"fault_injected delay 300ms success"});
    CHECK(faults.metrics() == resil::fault_injection_metrics{.delays = 1, .delays_cut = 0, .aborts = 0});
}

TEST_CASE("fault injection: a delay never outlives the deadline: the call fails deadline_exceeded at it") {
    manual_clock clock;
    fault_injection faults{{.enabled = true, .delay = {.probability = 1.0, .latency = 1h}}};
    std::vector<std::string> lines;
    auto pipe = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(faults)).with_listener(event_log{&lines});
    const auto start = clock.now();
    int calls = 0;
    const auto out = pipe([&] { ++calls; return 200; }, classify_status);
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK(calls == 0);
    CHECK(clock.now() - start == 250ms);  // not an hour
    CHECK(lines == std::vector<std::string>{"fault_injected delay 250ms success", "deadline_exceeded",
                                            "rejected deadline_exceeded"});
    CHECK(faults.metrics() == resil::fault_injection_metrics{.delays = 1, .delays_cut = 1, .aborts = 0});

    // A delay that fits runs the call with what is left.
    fault_injection short_delay{{.enabled = true, .delay = {.probability = 1.0, .latency = 100ms}}};
    auto fits = resil::pipeline(clock, resil::deadline_policy{250ms}, std::ref(short_delay));
    resil::duration left{};
    CHECK(fits([&](resil::basic_context<manual_clock>& ctx) { left = ctx.remaining(); return 200; }, classify_status)
              .ok());
    CHECK(left == 150ms);
}

namespace {
// Asks the call to stop on its way in, as a caller cancelling mid-call would.
struct stop_on_entry {
    std::stop_source* source;
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        source->request_stop();
        return next(ctx);
    }
};
}  // namespace

TEST_CASE("fault injection: a delay ends when the call's stop token fires; the call fails cancelled") {
    manual_clock clock;
    fault_injection faults{{.enabled = true, .delay = {.probability = 1.0, .latency = 10s}, .abort = {.probability = 1.0}}};
    std::stop_source source;
    auto pipe = resil::pipeline(clock, stop_on_entry{&source}, std::ref(faults));
    resil::basic_context<manual_clock> ctx{
        resil::basic_call_options<manual_clock>{.deadline = resil::basic_deadline{clock}, .stop = source.get_token()}};
    const auto start = clock.now();
    int calls = 0;
    const auto out = pipe.execute(ctx, [&](auto&) { ++calls; return 200; }, classify_status);
    CHECK(out.reason() == reason::cancelled);
    CHECK(calls == 0);
    CHECK(clock.now() == start);  // no time passed
    // The delay was injected and cut; the abort never came.
    CHECK(faults.metrics() == resil::fault_injection_metrics{.delays = 1, .delays_cut = 1, .aborts = 0});
}

TEST_CASE("fault injection: with a tag, only calls carrying that fault tag are eligible") {
    manual_clock clock;
    fault_injection faults{{.enabled = true, .tag = "payments-chaos", .abort = {.probability = 1.0}}};
    auto pipe = resil::pipeline(clock, std::ref(faults));
    const auto call = [&](std::string_view tag) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline{clock}, .fault_tag = tag}};
        return pipe.execute(ctx, [](auto&) { return 200; }, classify_status).reason();
    };
    CHECK(call("") == reason::none);
    CHECK(call("payments") == reason::none);
    CHECK(call("payments-chaos") == reason::injected_fault);
    // Set on the context itself, e.g. from a request header by the handler.
    resil::basic_context<manual_clock> ctx{clock};
    ctx.set_fault_tag("payments-chaos");
    CHECK(ctx.fault_tag() == "payments-chaos");
    CHECK(pipe.execute(ctx, [](auto&) { return 200; }, classify_status).reason() == reason::injected_fault);
    CHECK(faults.metrics().aborts == 2);
}

TEST_CASE("fault injection: a retry retries injected retryable failures, with their Retry-After, until exhausted") {
    manual_clock clock;
    fault_injection faults{{.enabled = true, .abort = {.probability = 1.0, .retry_after = 40ms}}};
    std::vector<std::string> lines;
    auto pipe = resil::pipeline(clock,
                                resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 2ms}}},
                                std::ref(faults))
                    .with_listener(event_log{&lines});
    const auto start = clock.now();
    const auto out = pipe([] { return 200; }, classify_status);
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(clock.now() - start == 80ms);  // two waits of the injected Retry-After (above the backoff's 2 ms cap)
    CHECK(faults.metrics().aborts == 3);
    CHECK(lines == std::vector<std::string>{"fault_injected abort 0ms retryable", "retry_scheduled 1 retryable",
                                            "fault_injected abort 0ms retryable", "retry_scheduled 2 retryable",
                                            "fault_injected abort 0ms retryable"});
}

TEST_CASE("fault injection: injected permanent and ambiguous failures are judged as real ones") {
    manual_clock clock;
    SECTION("permanent: not retried, the injected reason stays") {
        fault_injection faults{aborting(1.0, verdict::permanent)};
        auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}}, std::ref(faults));
        const auto out = pipe([] { return 200; }, classify_status);
        CHECK(out.reason() == reason::injected_fault);
        CHECK(out.verdict() == verdict::permanent);
        CHECK(faults.metrics().aborts == 1);
    }
    SECTION("ambiguous, for an operation neither idempotent nor keyed: not retried") {
        fault_injection faults{aborting(1.0, verdict::ambiguous)};
        auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}}, std::ref(faults));
        const auto out = pipe([] { return 200; }, classify_status);
        CHECK(out.reason() == reason::unsafe_to_retry);
        CHECK(faults.metrics().aborts == 1);
    }
    SECTION("never sent: the outcome says so (a balanced call may move to another scope)") {
        fault_injection faults{{.enabled = true, .abort = {.probability = 1.0, .never_sent = true}}};
        auto pipe = resil::pipeline(clock, std::ref(faults));
        const auto out = pipe([] { return 200; }, classify_status);
        CHECK(out.never_sent());
        CHECK(resil::classify(out).never_sent);
    }
}

TEST_CASE("fault injection: at 100 %, the breaker opens on injected failures and the fallback answers plan B") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3, .open_for = 30s,
         .half_open_probes = 1},
        clock};
    fault_injection faults{aborting(1.0)};
    resil::fallback_policy plan_b{[](const auto&) { return 299; }};
    std::vector<std::string> lines;
    auto pipe = resil::pipeline(clock, plan_b, resil::deadline_policy{10s},
                                resil::retry_policy{{.max_attempts = 4, .backoff = resil::full_jitter{10ms, 50ms}}},
                                std::ref(breaker), std::ref(faults))
                    .with_listener(event_log{&lines});
    int calls = 0;
    const auto first = pipe([&] { ++calls; return 200; }, classify_status);
    CHECK(first.ok());
    CHECK(*first == 299);                       // plan B
    CHECK(first.from_fallback());
    CHECK(first.fallback_reason() == reason::circuit_open);  // the third failure opened it, the retry was refused
    CHECK(breaker.state() == resil::circuit_state::open);
    CHECK(faults.metrics().aborts == 3);

    lines.clear();
    const auto second = pipe([&] { ++calls; return 200; }, classify_status);
    CHECK(*second == 299);
    CHECK(second.fallback_reason() == reason::circuit_open);
    CHECK(faults.metrics().aborts == 3);  // the breaker refused before the fault policy was reached
    CHECK(lines == std::vector<std::string>{"rejected circuit_open", "fallback_used circuit_open"});
    CHECK(calls == 0);
    CHECK(plan_b.metrics()[reason::circuit_open] == 2);

    // Faults turned off (a new policy from the same options, disabled): the
    // breaker's probe passes and closes it.
    clock.advance(31s);
    auto options = faults.options();
    options.enabled = false;
    fault_injection off{options};
    auto healthy = resil::pipeline(clock, plan_b, std::ref(breaker), std::ref(off));
    const auto third = healthy([&] { ++calls; return 200; }, classify_status);
    CHECK(third.ok());
    CHECK(*third == 200);
    CHECK_FALSE(third.from_fallback());
    CHECK(breaker.state() == resil::circuit_state::closed);
}

TEST_CASE("fault injection: a fallback alone answers injected failures, counted as injected_fault") {
    manual_clock clock;
    fault_injection faults{aborting(1.0)};
    resil::fallback_policy plan_b{[] { return 299; }};
    auto pipe = resil::pipeline(clock, plan_b, std::ref(faults));
    for (int i = 0; i < 5; ++i) {
        const auto out = pipe([] { return 200; }, classify_status);
        CHECK(*out == 299);
        CHECK(out.fallback_reason() == reason::injected_fault);
    }
    CHECK(plan_b.metrics()[reason::injected_fault] == 5);
}
