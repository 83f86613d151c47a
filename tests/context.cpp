#include <resil/context.hpp>
#include <resil/detail/thread_jitter.hpp>
#include <resil/idempotency_key.hpp>
#include <resil/testing/manual_clock.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;

TEST_CASE("context: the idempotency key is made once, on first use") {
    resil::context ctx;
    CHECK_FALSE(ctx.has_idempotency_key());
    CHECK_FALSE(ctx.safe_to_repeat());
    const auto first = ctx.idempotency_key();
    CHECK(ctx.has_idempotency_key());
    CHECK(ctx.safe_to_repeat());
    CHECK(first.version() == 4);
    CHECK(ctx.idempotency_key() == first);
}

TEST_CASE("context: call options carry the caller's key, version, idempotency and deadline") {
    manual_clock clock;
    const auto key = resil::idempotency_key::v4();
    resil::basic_context<manual_clock> keyed{resil::basic_call_options<manual_clock>{
        .deadline = resil::basic_deadline<manual_clock>::after(250ms, clock), .idempotency_key = key}};
    CHECK(keyed.idempotency_key() == key);
    CHECK(keyed.remaining() == 250ms);
    clock.advance(70ms);
    CHECK(keyed.remaining() == 180ms);

    resil::context v7{resil::call_options{.idempotent = true, .new_key_version = resil::key_version::v7}};
    CHECK(v7.idempotent());
    CHECK(v7.safe_to_repeat());
    CHECK(v7.idempotency_key().version() == 7);
}

TEST_CASE("context: attempt timeouts are clamped to the deadline at the time they are read") {
    manual_clock clock;
    resil::basic_context<manual_clock> ctx{clock};
    ctx.set_timeouts({.connect = 20ms, .read = 100ms, .total = 150ms});
    CHECK(ctx.attempt_timeouts() == resil::timeouts{.connect = 20ms, .read = 100ms, .total = 150ms});
    ctx.tighten_deadline(clock.now() + 250ms);
    clock.advance(160ms);
    CHECK(ctx.attempt_timeouts() == resil::timeouts{.connect = 20ms, .read = 90ms, .total = 90ms});
    ctx.tighten_deadline(clock.now() + 1h);  // never loosens
    CHECK(ctx.remaining() == 90ms);
}

TEST_CASE("context: cached_now reuses the last clock reading") {
    manual_clock clock;
    resil::basic_context<manual_clock> ctx{clock};
    const auto t = ctx.now();
    clock.advance(5ms);
    CHECK(ctx.cached_now() == t);
    CHECK(ctx.now() == t + 5ms);
}

TEST_CASE("context: an injected jitter engine is used as is") {
    resil::jitter_engine engine{42};
    resil::jitter_engine same{42};
    resil::context ctx{resil::call_options{.jitter = &engine}};
    CHECK(ctx.jitter()() == same());
}

TEST_CASE("context: a forked child draws a jitter sequence of its own") {
    // Pre-forked workers must not retry in lockstep: the child's per-thread
    // engine is reseeded, so its draws differ from the parent's next draws.
    resil::context ctx;
    (void)ctx.jitter()();  // the parent's engine exists before the fork
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        resil::context child_ctx;
        std::array<std::uint64_t, 4> draws{};
        for (auto& d : draws) d = child_ctx.jitter()();
        const auto written = ::write(pipe_fds[1], draws.data(), sizeof draws);
        ::_exit(written == static_cast<ssize_t>(sizeof draws) ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    std::array<std::uint64_t, 4> child_draws{};
    const auto got = ::read(pipe_fds[0], child_draws.data(), sizeof child_draws);
    ::close(pipe_fds[0]);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(got == static_cast<ssize_t>(sizeof child_draws));
    std::array<std::uint64_t, 4> parent_draws{};
    for (auto& d : parent_draws) d = ctx.jitter()();
    CHECK(child_draws != parent_draws);
}

TEST_CASE("context: the limits of an attempt come from one reading, or none with under 1 ms left") {
    resil::testing::manual_clock clock;
    resil::basic_context<resil::testing::manual_clock> ctx(
        resil::basic_call_options<resil::testing::manual_clock>{.deadline = resil::basic_deadline<resil::testing::manual_clock>::after(250ms, clock)});
    ctx.set_timeouts({.connect = 20ms, .read = 100ms, .total = 150ms});
    clock.advance(170ms);
    auto limits = ctx.limits_for_attempt();
    REQUIRE(limits);
    CHECK(limits->started == clock.now());
    CHECK(limits->timeouts == resil::timeouts{.connect = 20ms, .read = 80ms, .total = 80ms});
    clock.advance(79ms);
    limits = ctx.limits_for_attempt();
    REQUIRE(limits);
    CHECK(limits->timeouts == resil::timeouts{.connect = 1ms, .read = 1ms, .total = 1ms});
    clock.advance(std::chrono::microseconds{500});
    CHECK_FALSE(ctx.limits_for_attempt());

    resil::basic_context<resil::testing::manual_clock> unbounded(clock);
    const auto free_limits = unbounded.limits_for_attempt();
    REQUIRE(free_limits);
    CHECK(free_limits->timeouts == resil::timeouts{});
    CHECK(free_limits->started == clock.now());
}

TEST_CASE("context: owns the clock; the deadline it hands out is built from it") {
    manual_clock clock;
    resil::basic_context<manual_clock> ctx{clock};
    CHECK(ctx.deadline_instant() == resil::time_point::max());
    CHECK_FALSE(ctx.deadline().is_set());
    ctx.tighten_deadline(clock.now() + 250ms);
    const auto dl = ctx.deadline();  // a value, on the context's clock
    CHECK(dl.when() == ctx.deadline_instant());
    clock.advance(100ms);
    CHECK(dl.remaining() == 150ms);
    CHECK(ctx.remaining() == 150ms);
    CHECK(ctx.remaining(clock.now() + 50ms) == 100ms);  // the pure form

    // Restoring an instant keeps the clock; set_deadline adopts the deadline's.
    ctx.set_deadline_instant(resil::time_point::max());
    CHECK(ctx.remaining() == resil::duration::max());
    manual_clock other;
    other.advance(1h);
    ctx.set_deadline(resil::basic_deadline<manual_clock>::after(10ms, other));
    CHECK(ctx.now() == other.now());
    CHECK(ctx.remaining() == 10ms);

    // A context made from call options reads the upstream deadline's clock.
    resil::basic_context<manual_clock> from_options{
        resil::basic_call_options<manual_clock>{.deadline = resil::basic_deadline<manual_clock>::after(5ms, other)}};
    CHECK(from_options.now() == other.now());
    CHECK(from_options.remaining() == 5ms);
}
