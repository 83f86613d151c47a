// A tour of resil's primitives, each with readable output: the clock seam,
// full-jitter backoff, a deadline with its per-attempt timeouts, Retry-After
// parsing, and idempotency keys. Run it with scripts/demo.sh.
#include <resil/backoff.hpp>
#include <resil/clock.hpp>
#include <resil/deadline.hpp>
#include <resil/idempotency_key.hpp>
#include <resil/retry_after.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeouts.hpp>
#include <resil/version.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stop_token>
#include <string_view>
#include <thread>

using namespace std::chrono_literals;

namespace {

double to_ms(resil::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

long long ms(std::chrono::milliseconds d) { return static_cast<long long>(d.count()); }

void section(const char* title) { std::printf("\n== %s ==\n", title); }

void real_clock() {
    section("resil::steady_clock: real time, interruptible sleeps");
    const resil::steady_clock clock;

    auto start = clock.now();
    const bool slept = clock.sleep_for(20ms);
    std::printf("  sleep_for(20ms)                         -> %-5s after %6.1f ms\n", slept ? "true" : "false",
                to_ms(clock.now() - start));

    // A stop request (a cancelled call, a shutdown) wakes a long sleep at once:
    // nothing keeps waiting for nobody.
    std::stop_source stop;
    start = clock.now();
    std::jthread canceller([&] {
        std::this_thread::sleep_for(30ms);
        stop.request_stop();
    });
    const bool full = clock.sleep_for(10s, stop.get_token());
    std::printf("  sleep_for(10s), stop requested at 30 ms -> %-5s after %6.1f ms\n", full ? "true" : "false",
                to_ms(clock.now() - start));
}

void manual_clock() {
    section("resil::testing::manual_clock: virtual time for tests");
    const resil::testing::manual_clock clock;
    const auto start = clock.now();
    const resil::steady_clock wall;
    const auto wall_start = wall.now();

    // Policies get a copy; the test keeps one to drive time. Copies share one time line.
    const auto policy_copy = clock;
    for (const auto d : {100ms, 200ms, 400ms}) policy_copy.sleep_for(d, {});
    clock.advance(30s);
    std::printf("  sleeps of 100, 200, 400 ms, then advance(30s)\n");
    std::printf("  virtual time passed: %.1f ms in %lld sleeps (%.0f ms slept); wall time: %.3f ms\n",
                to_ms(clock.now() - start), static_cast<long long>(clock.sleeps()), to_ms(clock.slept()),
                to_ms(wall.now() - wall_start));

    std::stop_source cancelled;
    cancelled.request_stop();
    const auto before = clock.now();
    const bool slept = clock.sleep_for(1s, cancelled.get_token());
    std::printf("  sleep_for(1s) after a stop request      -> %s, time moved %.1f ms\n", slept ? "true" : "false",
                to_ms(clock.now() - before));
}

void backoff() {
    section("resil::full_jitter{100ms, 1s}: wait uniform[0, min(cap, base * 2^n)) before retry n");
    const resil::full_jitter policy{.base = 100ms, .cap = 1s};
    // Three clients that failed at the same instant: jitter spreads their retries.
    resil::jitter_engine clients[] = {resil::jitter_engine{1}, resil::jitter_engine{2}, resil::jitter_engine{3}};
    std::printf("  retry   ceiling    client A   client B   client C\n");
    resil::duration previous{};
    for (std::uint64_t retry = 1; retry <= 5; ++retry) {
        std::printf("  %5llu %7.0f ms", static_cast<unsigned long long>(retry), to_ms(policy.ceiling(retry)));
        for (auto& rng : clients) std::printf(" %7.1f ms", to_ms(policy.delay(retry, previous, rng)));
        std::printf("\n");
    }
    std::printf("  (the ceiling stops at the 1 s cap; seeded engines give the same delays on every platform)\n");
}

void deadline() {
    section("resil::deadline: 250 ms for the whole call, each hop clamped to what is left");
    const resil::testing::manual_clock clock;
    const auto dl = resil::basic_deadline<resil::testing::manual_clock>::after(250ms, clock);
    const resil::timeouts per_attempt{.connect = 20ms, .read = 100ms, .total = 150ms};
    std::printf("  per attempt: connect %lld ms, read %lld ms, total %lld ms\n", ms(per_attempt.connect),
                ms(per_attempt.read), ms(per_attempt.total));

    const auto start = clock.now();
    for (const auto at : {70ms, 160ms, 260ms}) {
        clock.advance_to(start + at);
        const auto allowed = per_attempt.clamp_to(dl);
        std::printf("  at %3lld ms: %5.1f ms left, clamp(150ms) = %5.1f ms, expired: %s\n"
                    "             this attempt: connect %lld, read %lld, total %lld ms; grpc-timeout: %.*s\n",
                    static_cast<long long>(at.count()), to_ms(dl.remaining()), to_ms(dl.clamp(150ms)),
                    dl.expired() ? "yes" : "no", ms(allowed.connect), ms(allowed.read), ms(allowed.total),
                    static_cast<int>(resil::encode_timeout_header(dl.remaining()).view().size()),
                    resil::encode_timeout_header(dl.remaining()).view().data());
    }
    std::printf("  (0 ms means out of time: give up and take plan B, never \"no limit\")\n");
}

void retry_after() {
    section("resil::parse_retry_after: delay-seconds or an HTTP-date in any of its three forms");
    using namespace std::chrono;
    // A fixed "now" keeps the output reproducible: Sunday 1 March 2026, 12:00:00 UTC.
    const system_clock::time_point now = sys_days{2026y / March / 1} + 12h;
    std::printf("  now = Sun, 01 Mar 2026 12:00:00 GMT\n");
    struct example {
        std::string_view value;
        const char* form;
    };
    const example examples[] = {
        {"120", "delay-seconds"},
        {"Sun, 01 Mar 2026 12:01:30 GMT", "IMF-fixdate"},
        {"Sunday, 01-Mar-26 12:01:30 GMT", "RFC 850"},
        {"Sun Mar  1 12:01:30 2026", "asctime"},
        {"Sun, 01 Mar 2026 11:00:00 GMT", "already past"},
        {"-5", "malformed"},
        {"in a minute", "malformed"},
        {"99999999999999999999", "absurd: capped at 2^31 s"},
    };
    for (const auto& [value, form] : examples) {
        const auto wait = resil::parse_retry_after(value, now);
        const int width = static_cast<int>(value.size());
        std::printf("  \"%.*s\"%*s -> ", width, value.data(), width < 32 ? 32 - width : 0, "");
        if (wait)
            std::printf("%lld s (%s)\n", static_cast<long long>(wait->count()), form);
        else
            std::printf("nothing usable (%s): use the backoff formula\n", form);
    }
}

void idempotency_keys() {
    section("resil::idempotency_key: one key per operation, the same on every attempt");
    const auto v4 = resil::idempotency_key::v4();
    const auto first_v7 = resil::idempotency_key::v7();
    const auto second_v7 = resil::idempotency_key::v7();
    std::printf("  v4: %s (version %d)\n", v4.text().c_str(), v4.version());
    std::printf("  v7: %s (version %d)\n", first_v7.text().c_str(), first_v7.version());
    std::printf("  v7: %s (later, so it sorts after: %s)\n", second_v7.text().c_str(),
                first_v7 < second_v7 ? "yes" : "no");
    const auto key_text = v4.text();
    for (int attempt = 1; attempt <= 3; ++attempt)
        std::printf("  attempt %d sends %.*s: %s\n", attempt,
                    static_cast<int>(resil::idempotency_key::header_name.size()),
                    resil::idempotency_key::header_name.data(), key_text.c_str());
    const auto parsed = resil::idempotency_key::parse(key_text.view());
    std::printf("  parse(its text) gives it back: %s; parse(\"not-a-uuid\"): %s\n",
                parsed && *parsed == v4 ? "yes" : "no",
                resil::idempotency_key::parse("not-a-uuid") ? "a key" : "empty");
}

}  // namespace

int main() {
    std::printf("resil %d.%d.%d: primitives demo\n", RESIL_VERSION_MAJOR, RESIL_VERSION_MINOR, RESIL_VERSION_PATCH);
    real_clock();
    manual_clock();
    backoff();
    deadline();
    retry_after();
    idempotency_keys();
    return 0;
}
