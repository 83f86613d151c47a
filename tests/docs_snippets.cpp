// The usage snippets of the per-policy pages in docs/ (circuit_breaker,
// token_bucket, concurrency_limit, fallback, idempotency_key, backoff,
// retry_after, clock), compiled and run on the manual clock with the numbers
// the pages quote, so documented code cannot rot. Each TEST_CASE names the
// page and section it mirrors: change the two together.
#include <resil/resil.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;

namespace docs {

// The response type the pages assume, and its classifier (found by ADL).
struct reply {
    int status = 200;
    std::optional<duration> retry_after{};
};

resil::classification classify(const reply& r) {
    if (r.status < 400) return verdict::success;
    if (r.status == 429 || r.status == 503) return {verdict::retryable, {r.retry_after, false}};
    if (r.status == 504) return verdict::ambiguous;  // a timeout: it may have been served
    if (r.status >= 500) return verdict::retryable;
    return verdict::permanent;  // 400, 401, 403, 404, 413, 422: the request itself is wrong
}

}  // namespace docs

using docs::reply;

// ---------------------------------------------------------------------------
// docs/circuit_breaker.md

namespace docs {

// "By hand": a server handler guarding its dependency.
template <class Breaker, class Call>
reply guarded(Breaker& breaker, Call&& call_dependency) {
    if (auto permit = breaker.try_acquire()) {
        const reply response = call_dependency();
        breaker.record(permit, classify(response).verdict);
        return response;
    } else {
        return reply{503, permit.retry_after()};  // time left until the next probe
    }
}

}  // namespace docs

TEST_CASE("docs/circuit_breaker.md usage: opens at 20 failures, plan B at once for 30 s, 5 probes close it") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> triton_breaker{
        {.failure_ratio = 0.5, .window = 10s, .min_calls = 20, .open_for = 30s, .half_open_probes = 5}, clock};
    resil::fallback_policy category_picker{[](const auto& /*failed*/) { return reply{299}; }};
    const auto pipe = resil::pipeline(clock, category_picker, resil::deadline_policy{250ms}, std::ref(triton_breaker),
                                      resil::timeout_policy{{.total = 150ms}});

    int reached = 0;
    const auto triton_down = [&] {
        ++reached;
        return reply{503};
    };
    for (int i = 0; i < 19; ++i) CHECK(pipe(triton_down)->status == 299);
    CHECK(triton_breaker.state() == resil::circuit_state::closed);  // 19 calls: below min_calls
    CHECK(pipe(triton_down)->status == 299);
    CHECK(triton_breaker.state() == resil::circuit_state::open);  // 20 of 20 failed
    CHECK(category_picker.count(reason::failed) == 20);

    clock.advance(10s);
    for (int i = 0; i < 100; ++i) {
        const auto out = pipe(triton_down);
        REQUIRE(out.ok());
        CHECK(out.fallback_reason() == reason::circuit_open);
    }
    CHECK(reached == 20);  // nothing reached the dependency while open
    CHECK(category_picker.count(reason::circuit_open) == 100);

    const auto rejected = docs::guarded(triton_breaker, triton_down);
    CHECK(rejected.status == 503);
    CHECK(rejected.retry_after == duration{20s});
    CHECK(reached == 20);

    clock.advance(20s);
    for (int i = 0; i < 5; ++i) CHECK(pipe([] { return reply{200}; })->status == 200);
    CHECK(triton_breaker.state() == resil::circuit_state::closed);
    CHECK(docs::guarded(triton_breaker, [] { return reply{200}; }).status == 200);
}

TEST_CASE("docs/circuit_breaker.md anti-patterns: min_calls too low opens on 2 failures out of 3 at 4 a.m.") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> sensible{{}, clock};  // min_calls = 20
    resil::basic_circuit_breaker<manual_clock> jumpy{{.min_calls = 3}, clock};
    for (const auto v : {verdict::retryable, verdict::success, verdict::retryable}) {
        for (auto* b : {&sensible, &jumpy}) {
            auto permit = b->try_acquire();
            REQUIRE(permit);
            b->record(permit, v);
        }
    }
    CHECK(sensible.state() == resil::circuit_state::closed);
    CHECK(jumpy.state() == resil::circuit_state::open);  // 2 of 3 is "67 % failed"
}

TEST_CASE("docs/circuit_breaker.md modes: count window, consecutive failures, slow calls") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> by_count{
        {.mode = resil::breaker_mode::count_window, .window_calls = 100, .min_calls = 20}, clock};
    resil::basic_circuit_breaker<manual_clock> in_a_row{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 5}, clock};
    resil::basic_circuit_breaker<manual_clock> slow_is_failed{{.min_calls = 1, .slow_call_threshold = 2s}, clock};

    CHECK(by_count.options().window_calls == 100);
    for (int i = 0; i < 4; ++i) in_a_row.record(in_a_row.try_acquire(), verdict::retryable);
    CHECK(in_a_row.state() == resil::circuit_state::closed);
    in_a_row.record(in_a_row.try_acquire(), verdict::ambiguous);
    CHECK(in_a_row.state() == resil::circuit_state::open);

    slow_is_failed.record(slow_is_failed.try_acquire(), verdict::success, 3s);  // a success, but too slow
    CHECK(slow_is_failed.state() == resil::circuit_state::open);
    CHECK(slow_is_failed.metrics().slow_calls == 1);
}

TEST_CASE("docs/circuit_breaker.md events: transitions counted through the breaker's hook") {
    manual_clock clock;
    resil::metrics triton{"triton"};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.min_calls = 1, .open_for = 30s, .half_open_probes = 1, .on_state_change = triton.breaker_hook()}, clock};
    breaker.record(breaker.try_acquire(), verdict::retryable);
    clock.advance(30s);
    breaker.record(breaker.try_acquire(), verdict::success);
    const auto s = triton.snapshot();
    CHECK(s.breaker_opened == 1);
    CHECK(s.breaker_half_opened == 1);
    CHECK(s.breaker_closed == 1);
    CHECK(s.time_open == duration{30s});

    breaker.isolate();  // maintenance: held open until reset()
    CHECK_FALSE(breaker.try_acquire().retry_after().has_value());
    breaker.reset();
    CHECK(breaker.state() == resil::circuit_state::closed);
}

TEST_CASE("docs/circuit_breaker.md ordering: a retry outside the breaker does not retry an open circuit") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.min_calls = 1, .open_for = 30s}, clock};
    breaker.record(breaker.try_acquire(), verdict::retryable);
    REQUIRE(breaker.state() == resil::circuit_state::open);
    const auto pipe = resil::pipeline(clock, resil::retry_policy{}, std::ref(breaker));
    int reached = 0;
    const auto out = pipe([&] {
        ++reached;
        return reply{200};
    });
    CHECK(out.reason() == reason::circuit_open);
    CHECK(out.retry_after() == duration{30s});
    CHECK(reached == 0);
    CHECK(clock.sleeps() == 0);
}

// ---------------------------------------------------------------------------
// docs/token_bucket.md

TEST_CASE("docs/token_bucket.md the classic numbers: 50/s, burst 100, 300 requests in 1 s -> 149 pass, 151 get 429") {
    manual_clock clock;
    const auto t0 = clock.now();
    resil::basic_token_bucket<manual_clock> moderation{{.rate = 50, .burst = 100}, clock};
    int passed = 0;
    int rejected = 0;
    std::chrono::seconds last_retry_after{};
    for (std::int64_t i = 0; i < 300; ++i) {
        clock.advance_to(t0 + duration{i * 1'000'000'000 / 300});
        if (const auto r = moderation.try_acquire()) {
            ++passed;
        } else {
            ++rejected;
            last_retry_after = r.retry_after;
        }
    }
    CHECK(passed == 149);
    CHECK(rejected == 151);
    CHECK(last_retry_after == 1s);
    int on_pace = 0;
    for (std::int64_t i = 0; i < 50; ++i) {
        clock.advance_to(t0 + 1s + duration{i * 20'000'000});
        on_pace += moderation.try_acquire() ? 1 : 0;
    }
    CHECK(on_pace == 50);
    clock.advance(3s);
    CHECK(moderation.available() == 100);
}

TEST_CASE("docs/token_bucket.md the classic numbers: 20/s, burst 40, 100 requests in 0.5 s -> 49 pass, full in 2 s") {
    manual_clock clock;
    const auto t0 = clock.now();
    resil::basic_token_bucket<manual_clock> bucket{{.rate = 20, .burst = 40}, clock};
    int passed = 0;
    for (std::int64_t i = 0; i < 100; ++i) {
        clock.advance_to(t0 + duration{i * 5'000'000});
        passed += bucket.try_acquire() ? 1 : 0;
    }
    CHECK(passed == 49);
    CHECK(bucket.available(clock.now() + 2s) == 40);
}

namespace docs {

// "Server side": one bucket per verified identity, answered with 429 and Retry-After.
struct http_answer {
    int status = 200;
    std::string retry_after;  // the header's value; empty when none
};

template <class Clock>
class rate_limiter {
public:
    explicit rate_limiter(Clock clock) : clock_(std::move(clock)) {}

    http_answer admit(const std::string& verified_identity) {
        // (Guard the map with your own lock if several threads admit at once.)
        auto& bucket = buckets_.try_emplace(verified_identity, resil::token_bucket_options{.rate = 50, .burst = 100},
                                            clock_).first->second;
        if (const auto r = bucket.try_acquire(); !r) {
            if (r.status == resil::token_bucket_status::exceeds_burst) return {413, {}};
            return {429, std::to_string(r.retry_after.count())};
        }
        return {200, {}};
    }

private:
    Clock clock_;
    std::map<std::string, resil::basic_token_bucket<Clock>, std::less<>> buckets_;
};

}  // namespace docs

TEST_CASE("docs/token_bucket.md server side: one bucket per verified identity, 429 with Retry-After") {
    manual_clock clock;
    docs::rate_limiter<manual_clock> limiter{clock};
    for (int i = 0; i < 100; ++i) REQUIRE(limiter.admit("team-moderation").status == 200);
    const auto refused = limiter.admit("team-moderation");
    CHECK(refused.status == 429);
    CHECK(refused.retry_after == "1");
    CHECK(limiter.admit("team-search").status == 200);  // behind the same IP, a bucket of its own
}

TEST_CASE("docs/token_bucket.md client side: pacing a batch within a deadline, and in a pipeline") {
    manual_clock clock;
    const auto t0 = clock.now();
    resil::basic_token_bucket<manual_clock> pace{{.rate = 10, .burst = 1}, clock};
    int sent = 0;
    for (int item = 0; item < 5; ++item)
        if (pace.acquire(resil::basic_deadline<manual_clock>::after(5s, clock))) ++sent;
    CHECK(sent == 5);
    CHECK(clock.now() - t0 == 400ms);  // 1 at once, then one per 100 ms

    // A wait that would end after the deadline is not started.
    const auto late = pace.acquire(resil::basic_deadline<manual_clock>::after(50ms, clock));
    CHECK(late.status == resil::token_bucket_status::rejected);
    CHECK(late.wait == 100ms);
    CHECK(clock.now() - t0 == 400ms);

    resil::basic_token_bucket<manual_clock> paced{{.rate = 10, .burst = 1, .max_wait = 500ms}, clock};
    const auto pipe = resil::pipeline(clock, resil::deadline_policy{2s}, resil::retry_policy{}, std::ref(paced));
    const auto before = clock.now();
    for (int i = 0; i < 3; ++i) CHECK(pipe([] { return reply{200}; }).ok());
    CHECK(clock.now() - before == 200ms);  // the second and third calls waited for their tokens

    resil::basic_token_bucket<manual_clock> strict{{.rate = 1, .burst = 1}, clock};  // max_wait 0: reject at once
    const auto server_pipe = resil::pipeline(clock, resil::retry_policy{}, std::ref(strict));
    CHECK(server_pipe([] { return reply{200}; }).ok());
    const auto out = server_pipe([] { return reply{200}; });
    CHECK(out.reason() == reason::rate_limited);
    CHECK(out.retry_after() == duration{1s});
}

// ---------------------------------------------------------------------------
// docs/concurrency_limit.md

TEST_CASE("docs/concurrency_limit.md usage: 16 in flight, the 17th is shed at once") {
    resil::concurrency_limit limit{{.max_in_flight = 16}};
    std::vector<resil::concurrency_limit::permit> in_flight;
    for (int i = 0; i < 16; ++i) in_flight.push_back(limit.try_acquire());
    CHECK(limit.in_flight() == 16);

    int handled = 0;
    const auto handle = [&] {
        if (auto permit = limit.try_acquire()) {
            ++handled;  // released when `permit` goes away
            return 200;
        }
        return 503;  // shed, in microseconds
    };
    CHECK(handle() == 503);
    CHECK(limit.shed() == 1);

    manual_clock clock;
    const auto pipe = resil::pipeline(clock, resil::retry_policy{}, std::ref(limit));
    const auto out = pipe([] { return reply{200}; });
    CHECK(out.reason() == reason::shed);
    CHECK_FALSE(out.attempted());
    CHECK(clock.sleeps() == 0);  // a shed call is not retried

    in_flight.pop_back();  // one call ends
    CHECK(handle() == 200);
    CHECK(handled == 1);
    CHECK(pipe([] { return reply{200}; }).ok());
    CHECK(limit.admitted() == 18);
    CHECK(limit.shed() == 2);
}

TEST_CASE("docs/concurrency_limit.md ordering: inside the retry, no slot is held during the wait") {
    manual_clock clock;
    resil::concurrency_limit limit{{.max_in_flight = 1}};
    std::vector<std::uint32_t> held_during_call;
    const auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2}}, std::ref(limit));
    const auto out = pipe([&] {
        held_during_call.push_back(limit.in_flight());
        return reply{503};
    });
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(held_during_call == std::vector<std::uint32_t>{1, 1});
    CHECK(limit.admitted() == 2);  // one permit per attempt, given back before the wait
    CHECK(limit.in_flight() == 0);
}

// ---------------------------------------------------------------------------
// docs/fallback.md

TEST_CASE("docs/fallback.md usage: plan B for every failure, counted by reason") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.min_calls = 2, .open_for = 30s}, clock};
    resil::fallback_policy category_picker{[](const resil::outcome<reply>& failed) {
        (void)failed;  // why it failed: failed.reason(), and the last reply if any
        return reply{299};
    }};
    const auto pipe =
        resil::pipeline(clock, category_picker, resil::deadline_policy{300ms}, resil::retry_policy{}, std::ref(breaker));

    auto out = pipe([] { return reply{429, 1s}; });  // Retry-After: 1 does not fit in 300 ms
    REQUIRE(out.ok());
    CHECK(out->status == 299);
    CHECK(out.from_fallback());
    CHECK(out.fallback_reason() == reason::retry_after_exceeds_deadline);

    out = pipe([] { return reply{422}; });  // permanent: not retried, and plan B hides it
    CHECK(out.fallback_reason() == reason::failed);
    out = pipe([] { return reply{503}; });  // 2 failures of 3 calls: opens; the retry then finds it open
    CHECK(out.fallback_reason() == reason::circuit_open);
    out = pipe([] { return reply{200}; });
    CHECK(out.fallback_reason() == reason::circuit_open);

    CHECK(category_picker.count(reason::retry_after_exceeds_deadline) == 1);
    CHECK(category_picker.count(reason::failed) == 1);
    CHECK(category_picker.count(reason::circuit_open) == 2);
    CHECK(category_picker.metrics().total() == 4);
}

TEST_CASE("docs/fallback.md fail-open and fail-closed") {
    manual_clock clock;
    // Fail-open (moderation): when the reviewer does not answer, publish and review later.
    resil::fallback_policy publish_unreviewed{[] { return reply{202}; }};
    const auto moderation = resil::pipeline(clock, publish_unreviewed, resil::deadline_policy{300ms});
    CHECK(moderation([] { return reply{503}; })->status == 202);
    CHECK(publish_unreviewed.count(reason::failed) == 1);

    // Fail-closed (payment, sign-in): no fallback; the caller sees why.
    const auto payment = resil::pipeline(clock, resil::deadline_policy{300ms});
    const auto out = payment([] { return reply{503}; });
    CHECK_FALSE(out.ok());
    CHECK(out.reason() == reason::failed);
}

TEST_CASE("docs/fallback.md ordering: a fallback inside the retry turns every failure into a success") {
    manual_clock clock;
    int calls = 0;
    const auto failing = [&] {
        ++calls;
        return reply{503};
    };
    const auto outermost = resil::pipeline(clock, resil::fallback_policy{[] { return reply{299}; }},
                                           resil::retry_policy{{.max_attempts = 3}});
    CHECK(outermost(failing)->status == 299);
    CHECK(calls == 3);  // retried first, plan B last

    calls = 0;
    const auto innermost = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}},
                                           resil::fallback_policy{[] { return reply{299}; }});
    CHECK(innermost(failing)->status == 299);
    CHECK(calls == 1);  // the retry never saw a failure
}

// ---------------------------------------------------------------------------
// docs/idempotency_key.md

TEST_CASE("docs/idempotency_key.md usage: one key per operation, the same on every attempt") {
    manual_clock clock;
    const auto pipe = resil::pipeline(clock, resil::deadline_policy{5s}, resil::retry_policy{});
    std::vector<std::string> sent;
    const auto out = pipe([&](resil::basic_context<manual_clock>& ctx) {
        sent.emplace_back(ctx.idempotency_key().text().view());  // the Idempotency-Key header
        return sent.size() < 3 ? reply{504} : reply{201};       // two timeouts, then created
    });
    REQUIRE(out.ok());
    REQUIRE(sent.size() == 3);
    CHECK(sent[1] == sent[0]);
    CHECK(sent[2] == sent[0]);

    // Without a key (and not idempotent), a timeout is not retried: it may have happened.
    int calls = 0;
    const auto unkeyed = pipe([&] {
        ++calls;
        return reply{504};
    });
    CHECK(unkeyed.reason() == reason::unsafe_to_retry);
    CHECK(calls == 1);
}

TEST_CASE("docs/idempotency_key.md by hand, across restarts, and on the server") {
    const auto key = resil::idempotency_key::v4();  // once per operation
    const auto text = key.text();                   // 36 characters, no allocation
    std::vector<std::string_view> headers;
    for (int attempt = 0; attempt < 3; ++attempt) headers.push_back(text.view());
    CHECK(std::all_of(headers.begin(), headers.end(), [&](std::string_view h) { return h == headers[0]; }));
    CHECK(key.version() == 4);
    CHECK(text.view().size() == 36);
    CHECK(resil::idempotency_key::header_name == "Idempotency-Key");

    // A key kept with the operation (e.g. in the job's row) survives a restart.
    resil::context ctx{resil::call_options{.idempotency_key = key}};
    CHECK(ctx.idempotency_key() == key);
    CHECK(ctx.safe_to_repeat());

    // Server side: refuse what is not a UUID.
    CHECK(resil::idempotency_key::parse(text.view()) == key);
    CHECK_FALSE(resil::idempotency_key::parse("refund-42"));
    CHECK_FALSE(resil::idempotency_key::parse("{" + key.to_string() + "}"));
    // The field's value as resil's clients send it (a structured-field
    // string), and bare; parse() alone takes the bare text only.
    CHECK(resil::idempotency_key::parse_field("\"" + key.to_string() + "\"") == key);
    CHECK(resil::idempotency_key::parse_field(" " + key.to_string() + "\t") == key);
    CHECK_FALSE(resil::idempotency_key::parse("\"" + key.to_string() + "\""));
    for (const std::string& bad : std::vector<std::string>{"\"" + key.to_string(), "\"\"", "\"refund-42\"", "'" + key.to_string() + "'", ""})
        CHECK_FALSE(resil::idempotency_key::parse_field(bad));

    // v7: time-ordered, for keys stored in a B-tree index.
    const auto first = resil::idempotency_key::v7();
    const auto second = resil::idempotency_key::v7();
    const auto first_text = first.text();
    const auto second_text = second.text();
    CHECK(first < second);
    CHECK(first_text.view() < second_text.view());
    resil::context v7_ctx{resil::call_options{.new_key_version = resil::key_version::v7}};
    CHECK(v7_ctx.idempotency_key().version() == 7);
}

// ---------------------------------------------------------------------------
// docs/backoff.md

TEST_CASE("docs/backoff.md the classic numbers: base 50 ms, cap 1 s, 5 retries") {
    const std::vector<duration> ceilings{100ms, 200ms, 400ms, 800ms, 1000ms};
    duration total{};
    for (std::uint64_t retry = 1; retry <= 5; ++retry) {
        CHECK(resil::backoff_ceiling(50ms, 1s, 2.0, retry) == ceilings[retry - 1]);
        total += resil::backoff_ceiling(50ms, 1s, 2.0, retry);
    }
    CHECK(total == 2500ms);

    // Full jitter waits half of that on average: 1,250 ms.
    const resil::full_jitter policy{.base = 50ms, .cap = 1s};
    resil::jitter_engine rng{2024};
    constexpr int sequences = 20'000;
    double sum_ms = 0;
    for (int s = 0; s < sequences; ++s)
        for (std::uint64_t retry = 1; retry <= 5; ++retry)
            sum_ms += std::chrono::duration<double, std::milli>(policy.delay(retry, 0ns, rng)).count();
    CHECK(sum_ms / sequences == Approx(1250.0).margin(20.0));  // ≈ 7 standard errors

    // Through a retry policy without jitter: exactly the ceilings.
    manual_clock clock;
    const auto pipe = resil::pipeline(
        clock, resil::retry_policy{{.max_attempts = 6, .backoff = resil::exponential_backoff{50ms, 1s}}});
    CHECK(pipe([] { return reply{503}; }).reason() == reason::retries_exhausted);
    CHECK(clock.sleeps() == 5);
    CHECK(clock.slept() == 2500ms);
}

TEST_CASE("docs/backoff.md usage: strategies, run-time choice, validation, a seeded engine") {
    resil::jitter_engine rng{42};
    const resil::full_jitter policy{.base = 100ms, .cap = 1s};
    const auto wait = policy.delay(1, {}, rng);  // uniform in [0, 200 ms)
    CHECK(wait == 16'772'594ns);

    const auto kind = resil::parse_backoff_kind("equal_jitter");  // e.g. from a configuration file
    REQUIRE(kind);
    const resil::backoff chosen = resil::equal_jitter{50ms, 2s};
    CHECK(chosen.kind() == *kind);
    CHECK_FALSE(chosen.validate());
    CHECK_NOTHROW(resil::throw_if_invalid("my_service", chosen.validate()));
    const resil::backoff broken = resil::full_jitter{.base = 0ms, .cap = 1s};
    REQUIRE(broken.validate());
    CHECK(broken.validate()->message() == "`base` must be at least 1ns, got 0s");
    CHECK_THROWS_WITH(resil::throw_if_invalid("my_service", broken.validate()),
                      "my_service: `base` must be at least 1ns, got 0s");
    CHECK_THROWS_AS(resil::retry_policy({.backoff = broken}), std::invalid_argument);

    // The ceiling saturates: a huge retry number waits the cap, never a negative or wrapped delay.
    CHECK(resil::backoff_ceiling(100ms, 1s, 2.0, 1'000'000) == 1s);

    // A seeded engine makes a test's waits exact.
    manual_clock clock;
    resil::jitter_engine seeded{42};
    resil::basic_context<manual_clock> ctx{
        resil::basic_call_options<manual_clock>{.deadline = resil::basic_deadline<manual_clock>{clock}, .jitter = &seeded}};
    const auto pipe = resil::pipeline(clock, resil::retry_policy{});
    int calls = 0;
    const auto out = pipe.execute(ctx, [&] { return ++calls == 1 ? reply{503} : reply{200}; });
    CHECK(out.ok());
    CHECK(clock.slept() == 16'772'594ns);
}

// ---------------------------------------------------------------------------
// docs/retry_after.md

namespace docs {

// A client's own response type: the classifier turns the header into a hint.
struct http_reply {
    int status = 200;
    std::string retry_after;  // the Retry-After header's value; empty when absent
};

resil::classification classify(const http_reply& r) {
    if (r.status < 400) return verdict::success;
    if (r.status == 429 || r.status == 503) {
        resil::server_hint hint;
        if (const auto wait = resil::parse_retry_after(r.retry_after, std::chrono::system_clock::now()))
            hint.retry_after = *wait;
        return {verdict::retryable, hint};
    }
    return r.status >= 500 ? verdict::retryable : verdict::permanent;
}

}  // namespace docs

TEST_CASE("docs/retry_after.md parsing: delay-seconds, HTTP-dates, garbage") {
    using std::chrono::sys_days;
    using std::chrono::system_clock;
    const auto now = system_clock::now();
    CHECK(resil::parse_retry_after("120", now) == 120s);
    CHECK(resil::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now) == 0s);  // already past
    CHECK_FALSE(resil::parse_retry_after("-5", now));
    CHECK_FALSE(resil::parse_retry_after("1.5", now));
    CHECK(resil::parse_retry_after("99999999999999999999", now) == resil::retry_after_max);

    const auto ninety_before =
        sys_days{std::chrono::year{1994} / 11 / 6} + 8h + 49min + 37s - 90s;  // the RFC's example instant, −90 s
    for (const std::string_view date : {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                                        "Sun Nov  6 08:49:37 1994"})
        CHECK(resil::parse_retry_after(date, ninety_before) == 90s);
}

TEST_CASE("docs/retry_after.md through the retry policy: it wins over the backoff, or gives up at once") {
    manual_clock clock;
    resil::jitter_engine rng{42};
    const auto call_with = [&](resil::duration deadline, docs::http_reply first) {
        resil::basic_context<manual_clock> ctx{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline<manual_clock>::after(deadline, clock), .jitter = &rng}};
        const auto pipe = resil::pipeline(clock, resil::retry_policy{});
        int calls = 0;
        return pipe.execute(ctx, [&] { return ++calls == 1 ? first : docs::http_reply{200, {}}; });
    };

    // Batch caller, 5 s left: waits what the server asked (1 s, more than the backoff's ≤ 200 ms).
    auto before = clock.slept();
    CHECK(call_with(5s, {429, "1"}).ok());
    CHECK(clock.slept() - before == 1s);

    // Interactive caller, 300 ms left: 1 s does not fit; gives up at once for plan B.
    before = clock.slept();
    const auto interactive = call_with(300ms, {429, "1"});
    CHECK(interactive.reason() == reason::retry_after_exceeds_deadline);
    CHECK(clock.slept() == before);

    // Garbage or absurd values never make anyone sleep for years.
    before = clock.slept();
    CHECK(call_with(std::chrono::hours{24 * 365 * 100}, {503, "99999999999"}).reason() ==
          reason::retry_after_exceeds_deadline);  // 2^31 s > max_wait (60 s)
    CHECK(clock.slept() == before);
    CHECK(call_with(5s, {503, "soon"}).ok());  // unreadable: the backoff decides
    CHECK(clock.slept() - before < 200ms);

    // Retry-After: 0 is not a busy loop: the backoff still applies.
    rng.seed(42);
    before = clock.slept();
    CHECK(call_with(5s, {503, "0"}).ok());
    CHECK(clock.slept() - before == 16'772'594ns);
}

// ---------------------------------------------------------------------------
// docs/clock.md

namespace docs {

struct quote {
    int status = 200;
    int price = 0;
};

resil::verdict classify(const quote& q) {
    if (q.status < 400) return verdict::success;
    if (q.status == 504) return verdict::ambiguous;
    return q.status >= 500 || q.status == 429 ? verdict::retryable : verdict::permanent;
}

// Your code, written against any resil::clock: production passes none (the
// real clock), tests pass a manual one.
template <resil::clock Clock, class Send>
std::optional<int> fetch_price(const Clock& clock, resil::basic_circuit_breaker<Clock>& breaker, Send&& send) {
    const auto pipe = resil::pipeline(clock, resil::deadline_policy{300ms}, resil::retry_policy{{.max_attempts = 2}},
                                      std::ref(breaker));
    const auto out = pipe([&](resil::basic_context<Clock>& ctx) {
        ctx.mark_idempotent();          // a GET: safe to repeat
        return send(ctx.remaining());  // the transport gives up when this runs out
    });
    if (!out) return std::nullopt;
    return out->price;
}

}  // namespace docs

TEST_CASE("docs/clock.md testing your own code: slow, flaky and dead dependencies in virtual time") {
    manual_clock clock;
    resil::basic_circuit_breaker<manual_clock> breaker{{.min_calls = 20, .open_for = 30s}, clock};

    // A dependency that answers in 400 ms: the transport gives up when its time runs out.
    const auto slow = [&](duration allowed) {
        const auto took = std::min<duration>(400ms, allowed);
        clock.advance(took);
        return took < 400ms ? docs::quote{504} : docs::quote{200, 42};
    };
    auto t0 = clock.now();
    CHECK_FALSE(docs::fetch_price(clock, breaker, slow));
    CHECK(clock.now() - t0 == 300ms);  // gave up at the deadline, with no time left to retry
    CHECK(clock.sleeps() == 0);

    // Fails once, then answers: one wait of at most 200 ms, in no real time.
    int calls = 0;
    const auto flaky = [&](duration) { return ++calls == 1 ? docs::quote{503} : docs::quote{200, 42}; };
    CHECK(docs::fetch_price(clock, breaker, flaky) == 42);
    CHECK(clock.sleeps() == 1);
    CHECK(clock.slept() < 200ms);

    // Down: 10 calls of 2 attempts open a fresh breaker; then it answers at once for 30 s.
    resil::basic_circuit_breaker<manual_clock> fresh{{.min_calls = 20, .open_for = 30s}, clock};
    int reached = 0;
    const auto down = [&](duration) {
        ++reached;
        return docs::quote{503};
    };
    for (int i = 0; i < 10; ++i) CHECK_FALSE(docs::fetch_price(clock, fresh, down));
    CHECK(reached == 20);
    CHECK(fresh.state() == resil::circuit_state::open);
    CHECK_FALSE(docs::fetch_price(clock, fresh, down));
    CHECK(reached == 20);  // rejected without calling
    clock.advance(30s);
    CHECK(docs::fetch_price(clock, fresh, [](duration) { return docs::quote{200, 42}; }) == 42);  // a probe
    CHECK(fresh.state() == resil::circuit_state::half_open);
}

TEST_CASE("docs/clock.md the three clocks") {
    // Real time.
    const resil::steady_clock real;
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(real.sleep_for(1h, stop.get_token()));  // a requested stop: no sleep at all

    // Virtual time: copies share one time line; a new clock is another one.
    manual_clock clock;
    const auto t0 = clock.now();
    const manual_clock handed_to_the_code = clock;
    CHECK(clock.sleep_for(250ms));
    clock.advance(1h);
    CHECK(handed_to_the_code.now() - t0 == 1h + 250ms);
    CHECK(clock.sleeps() == 1);
    CHECK(clock.slept() == 250ms);
    const manual_clock unrelated;
    CHECK(unrelated.now() != clock.now());

    // The coarse clock: a breaker that tolerates a few ms of staleness.
    resil::basic_circuit_breaker<resil::coarse_steady_clock> breaker{{.open_for = 30s}};
    CHECK(breaker.state() == resil::circuit_state::closed);
    CHECK(resil::coarse_steady_clock::resolution() >= duration::zero());
    CHECK(resil::coarse_steady_clock{}.now() <= real.now());
}

namespace docs {

// A clock of your own: anything copyable with now() and sleep_for(d, stop).
class counting_clock {
public:
    [[nodiscard]] resil::time_point now() const noexcept {
        ++*reads_;
        return time_.now();
    }
    bool sleep_for(duration d, std::stop_token stop = {}) const { return time_.sleep_for(d, std::move(stop)); }
    [[nodiscard]] long reads() const noexcept { return *reads_; }

private:
    manual_clock time_;
    std::shared_ptr<long> reads_ = std::make_shared<long>(0);
};
static_assert(resil::clock<counting_clock>);

}  // namespace docs

TEST_CASE("docs/clock.md a clock of your own") {
    docs::counting_clock clock;
    resil::basic_circuit_breaker<docs::counting_clock> breaker{{}, clock};
    auto permit = breaker.try_acquire();  // a closed breaker admits without reading the clock
    CHECK(clock.reads() == 0);
    breaker.record(permit, verdict::success);
    CHECK(clock.reads() == 1);
}

// ---------------------------------------------------------------------------
// The pages show the snippets on the real clock; these are those forms,
// compiled and run along paths that never sleep.

TEST_CASE("docs: the real-clock forms of the snippets compile and run without sleeping") {
    // circuit_breaker.md
    resil::circuit_breaker triton_breaker{
        {.failure_ratio = 0.5, .window = 10s, .min_calls = 20, .open_for = 30s, .half_open_probes = 5}};
    resil::fallback_policy category_picker{[](const auto& /*failed*/) { return reply{299}; }};
    const auto pipe = resil::pipeline(category_picker, resil::deadline_policy{250ms}, std::ref(triton_breaker),
                                      resil::timeout_policy{{.total = 150ms}});
    const auto out = pipe([&](resil::context& ctx) {
        CHECK(ctx.attempt_timeouts().total <= 150ms);
        return reply{200};
    });
    CHECK(out.ok());
    CHECK_FALSE(out.from_fallback());
    CHECK(docs::guarded(triton_breaker, [] { return reply{200}; }).status == 200);
    const resil::circuit_breaker by_count{
        {.mode = resil::breaker_mode::count_window, .window_calls = 100, .min_calls = 20}};
    const resil::circuit_breaker in_a_row{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 5}};
    const resil::circuit_breaker slow_is_failed{{.slow_call_threshold = 2s}};
    CHECK(by_count.options().mode == resil::breaker_mode::count_window);
    CHECK(in_a_row.options().consecutive_failures == 5);
    CHECK(slow_is_failed.options().slow_call_threshold == std::optional<duration>{2s});
    resil::metrics triton{"triton"};
    resil::circuit_breaker hooked{{.on_state_change = triton.breaker_hook()}};
    hooked.isolate();
    CHECK(triton.snapshot().breaker_opened == 1);

    // token_bucket.md
    std::map<std::string, resil::token_bucket, std::less<>> buckets;
    auto& bucket = buckets.try_emplace("team-moderation", resil::token_bucket_options{.rate = 50, .burst = 100})
                       .first->second;
    CHECK(bucket.try_acquire());
    resil::token_bucket pace{{.rate = 10, .burst = 1}};
    CHECK(pace.acquire(resil::deadline::after(5s)));  // the bucket starts full: no wait
    resil::token_bucket paced{{.rate = 10, .burst = 1, .max_wait = 500ms}};
    const auto paced_pipe = resil::pipeline(resil::deadline_policy{2s}, resil::retry_policy{}, std::ref(paced));
    CHECK(paced_pipe([] { return reply{200}; }).ok());
    resil::token_bucket strict{{.rate = 1, .burst = 1}};
    const auto guarded = resil::pipeline(resil::retry_policy{}, std::ref(strict));
    CHECK(guarded([] { return reply{200}; }).ok());
    const auto limited = guarded([] { return reply{200}; });
    CHECK(limited.reason() == reason::rate_limited);
    REQUIRE(limited.retry_after());
    CHECK(*limited.retry_after() <= duration{1s});

    // fallback.md: a Retry-After that does not fit is not waited for, on the real clock either.
    resil::circuit_breaker breaker;
    resil::fallback_policy picker{[](const resil::outcome<reply>& failed) {
        (void)failed;
        return reply{299};
    }};
    const auto with_plan_b =
        resil::pipeline(picker, resil::deadline_policy{300ms}, resil::retry_policy{}, std::ref(breaker));
    const auto start = resil::steady_clock{}.now();
    const auto answered = with_plan_b([] { return reply{429, 1s}; });
    CHECK(answered.fallback_reason() == reason::retry_after_exceeds_deadline);
    CHECK(resil::steady_clock{}.now() - start < 1s);

    // idempotency_key.md
    const auto keyed_pipe = resil::pipeline(resil::deadline_policy{5s}, resil::retry_policy{});
    std::string sent;
    CHECK(keyed_pipe([&](resil::context& ctx) {
              const auto key = ctx.idempotency_key().text();
              sent = std::string(key.view());
              return reply{201};
          }).ok());
    CHECK(sent.size() == 36);
    const auto stored = resil::idempotency_key::v4();
    resil::context ctx{resil::call_options{.idempotency_key = stored}};
    CHECK(keyed_pipe.execute(ctx, [&](resil::context& c) { return c.idempotency_key() == stored ? reply{201} : reply{400}; })
              .ok());

    // backoff.md
    const resil::retry_policy retry{{.max_attempts = 3, .backoff = resil::full_jitter{100ms, 1s}}};
    CHECK(retry.options().backoff == resil::backoff{});

    // clock.md
    resil::steady_clock clock;
    std::stop_source stop;
    stop.request_stop();
    CHECK_FALSE(clock.sleep_for(100ms, stop.get_token()));
    const resil::basic_circuit_breaker<resil::coarse_steady_clock> coarse{{.open_for = 30s}};
    CHECK(coarse.state() == resil::circuit_state::closed);
}
