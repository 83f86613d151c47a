#include <resil/circuit_breaker.hpp>
#include <resil/coarse_clock.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <latch>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "catch.hpp"

#include "support/allocation_counter.hpp"
#include "support/stripe_sharing.hpp"

using resil_test::allocations;
using resil_test::counting_allocations;

using namespace std::chrono_literals;
using resil::circuit_state;
using resil::duration;
using resil::reason;
using resil::time_point;
using resil::verdict;
using resil::testing::manual_clock;
using breaker_type = resil::basic_circuit_breaker<manual_clock>;

namespace {

// A manual clock that counts its reads, to show which paths read time.
class counting_clock {
public:
    [[nodiscard]] time_point now() const noexcept {
        reads_->fetch_add(1, std::memory_order_relaxed);
        return inner_.now();
    }
    bool sleep_for(duration d, std::stop_token stop = {}) const noexcept { return inner_.sleep_for(d, stop); }
    void advance(duration d) const noexcept { inner_.advance(d); }
    [[nodiscard]] int reads() const noexcept { return reads_->load(std::memory_order_relaxed); }

private:
    manual_clock inner_;
    std::shared_ptr<std::atomic<int>> reads_ = std::make_shared<std::atomic<int>>(0);
};
static_assert(resil::clock<counting_clock>);

template <class Breaker>
void call(Breaker& breaker, verdict v) {
    auto permit = breaker.try_acquire();
    REQUIRE(permit.admitted());
    breaker.record(permit, v);
}

template <class Breaker>
void calls(Breaker& breaker, int n, verdict v) {
    for (int i = 0; i < n; ++i) call(breaker, v);
}

std::string error_of(const resil::circuit_breaker_options& options) {
    try {
        breaker_type breaker{options, manual_clock{}};
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}

struct change {
    time_point at;
    resil::events::breaker_state_changed event;
};

}  // namespace

TEST_CASE("circuit breaker: the classic timeline — opens ~5 s into an outage, rejects for 30 s, probes, recovers") {
    // 500 requests/s, each taking 20 ms. Everything succeeded for the 10 s
    // before t = 0; from t = 0 every call fails, until t = 50 s.
    manual_clock clock;
    std::vector<change> changes;
    breaker_type breaker{{.failure_ratio = 0.5,
                          .window = 10s,
                          .min_calls = 20,
                          .open_for = 30s,
                          .half_open_probes = 5,
                          .on_state_change = [&](const auto& e) { changes.push_back({clock.now(), e}); }},
                         clock};

    const auto t0 = clock.now() + 20s;
    const auto recovered = t0 + 50s;
    constexpr auto tick = 2ms;
    constexpr auto latency = 20ms;
    struct in_flight {
        breaker_type::permit permit;
        time_point done;
        verdict result;
    };
    struct rejection {
        time_point at;
        duration retry_after;
    };
    std::deque<in_flight> flying;
    std::vector<time_point> admitted;  // when calls reached the dependency
    std::vector<rejection> rejected;   // each one answered by plan B at once

    for (auto now = t0 - 10s; now < t0 + 80s; now += tick) {
        clock.advance_to(now);
        while (!flying.empty() && flying.front().done <= now) {
            breaker.record(flying.front().permit, flying.front().result);
            flying.pop_front();
        }
        auto permit = breaker.try_acquire();
        if (permit) {
            admitted.push_back(now);
            const bool healthy = now < t0 || now >= recovered;
            flying.push_back({std::move(permit), now + latency, healthy ? verdict::success : verdict::retryable});
        } else {
            REQUIRE(permit.retry_after().has_value());
            rejected.push_back({now, *permit.retry_after()});
        }
    }

    const auto admitted_in = [&](time_point from, time_point to) {  // [from, to)
        return std::count_if(admitted.begin(), admitted.end(), [&](time_point t) { return t >= from && t < to; });
    };
    const auto rejected_in = [&](time_point from, time_point to) {
        return std::count_if(rejected.begin(), rejected.end(), [&](const rejection& r) { return r.at >= from && r.at < to; });
    };

    REQUIRE(changes.size() == 5);
    for (const auto& c : changes) CHECK(c.event.at == c.at);  // each event carries its time

    // Opens about 5 s in: the failures then outnumber the successes left in the window.
    CHECK(changes[0].event.from == circuit_state::closed);
    CHECK(changes[0].event.to == circuit_state::open);
    const auto opened = changes[0].at;
    CHECK(opened - t0 >= 4500ms);
    CHECK(opened - t0 <= 5500ms);
    CHECK(changes[0].event.failure_ratio > 0.5);
    CHECK(changes[0].event.calls_in_window >= 20);

    // Open for 30 s: no call reaches the dependency; 15,000 are answered at
    // once, each told how long until the next probe.
    CHECK(changes[1].event.from == circuit_state::open);
    CHECK(changes[1].event.to == circuit_state::half_open);
    const auto half_open = changes[1].at;
    CHECK(half_open - opened >= 30s);
    CHECK(half_open - opened < 30s + tick);
    CHECK(half_open - t0 >= 34500ms);
    CHECK(half_open - t0 <= 35600ms);
    CHECK(admitted_in(opened, half_open) == 0);
    CHECK(rejected_in(opened, half_open) == 15'000);
    for (const auto& r : rejected)
        if (r.at >= opened && r.at < half_open) REQUIRE(r.retry_after == opened + 30s - r.at);

    // Half-open lets exactly 5 probes through; they fail, and it opens again.
    CHECK(changes[2].event.from == circuit_state::half_open);
    CHECK(changes[2].event.to == circuit_state::open);
    const auto reopened = changes[2].at;
    CHECK(reopened - half_open == latency);  // the first probe's failure
    CHECK(admitted_in(half_open, reopened + tick) == 5);

    // Open for another 30 s; then the probes find the dependency recovered.
    CHECK(changes[3].event.from == circuit_state::open);
    CHECK(changes[3].event.to == circuit_state::half_open);
    CHECK(changes[3].at - reopened == 30s);
    CHECK(admitted_in(reopened + tick, changes[3].at) == 0);
    CHECK(changes[4].event.from == circuit_state::half_open);
    CHECK(changes[4].event.to == circuit_state::closed);
    CHECK(changes[4].event.calls_in_window == 5);
    CHECK(admitted_in(changes[3].at, changes[4].at) == 5);

    // Closed again: every call flows, into a window cleared when it closed.
    const auto closed = changes[4].at;
    CHECK(rejected_in(closed + tick, t0 + 80s) == 0);
    CHECK(admitted_in(closed + tick, t0 + 80s) == (t0 + 80s - closed - tick) / tick);
    CHECK(breaker.state() == circuit_state::closed);
    const auto m = breaker.metrics();
    CHECK(m.failures_in_window == 0);
    CHECK(m.calls_in_window > 4000);
    CHECK(m.transitions == 5);
    CHECK(m.rejections == rejected.size());
    CHECK(m.calls == admitted.size() - flying.size());
}

TEST_CASE("circuit breaker: the 4 a.m. rule — 2 failures out of 3 calls never open it") {
    manual_clock clock;
    breaker_type breaker{{}, clock};
    call(breaker, verdict::retryable);
    call(breaker, verdict::success);
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().failures_in_window == 2);
    CHECK(breaker.metrics().calls_in_window == 3);
    clock.advance(1h);
    calls(breaker, 19, verdict::retryable);  // the window has forgotten the first three
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: the ratio must be strictly exceeded, with min_calls reached") {
    manual_clock clock;
    breaker_type breaker{{.failure_ratio = 0.5, .min_calls = 20}, clock};
    calls(breaker, 10, verdict::success);
    calls(breaker, 10, verdict::retryable);  // 10 of 20: exactly half
    CHECK(breaker.state() == circuit_state::closed);
    call(breaker, verdict::retryable);  // 11 of 21
    CHECK(breaker.state() == circuit_state::open);
}

TEST_CASE("circuit breaker: a zero ratio opens on the first failure once min_calls is reached") {
    manual_clock clock;
    breaker_type breaker{{.failure_ratio = 0.0, .min_calls = 5}, clock};
    calls(breaker, 3, verdict::retryable);
    CHECK(breaker.state() == circuit_state::closed);
    calls(breaker, 1, verdict::success);
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::open);
}

TEST_CASE("circuit breaker: failures older than the window are forgotten") {
    manual_clock clock;
    breaker_type breaker{{.window = 10s, .min_calls = 4}, clock};
    calls(breaker, 3, verdict::retryable);
    clock.advance(11s);
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().calls_in_window == 1);
    calls(breaker, 3, verdict::retryable);
    CHECK(breaker.state() == circuit_state::open);
    CHECK(breaker.metrics().calls == 7);
}

TEST_CASE("circuit breaker: count-based window counts the last N calls") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::count_window, .failure_ratio = 0.5, .window_calls = 10,
                          .min_calls = 10},
                         clock};
    calls(breaker, 9, verdict::retryable);  // 9 of 9, but fewer than min_calls
    CHECK(breaker.state() == circuit_state::closed);
    breaker.reset();
    calls(breaker, 5, verdict::retryable);
    calls(breaker, 5, verdict::success);  // 5 of 10: not more than half
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().failures_in_window == 5);
    calls(breaker, 3, verdict::success);  // the three oldest failures slide out
    CHECK(breaker.metrics().failures_in_window == 2);
    CHECK(breaker.metrics().calls_in_window == 10);
    clock.advance(24h);  // time does not matter in this mode
    calls(breaker, 5, verdict::retryable);  // the last 10: 5 successes, 5 failures
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().failures_in_window == 5);
    call(breaker, verdict::retryable);  // 6 of 10
    CHECK(breaker.state() == circuit_state::open);
    CHECK(breaker.metrics().calls == 9 + 19);
}

TEST_CASE("circuit breaker: consecutive-failures mode opens after N in a row") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3}, clock};
    calls(breaker, 2, verdict::retryable);
    call(breaker, verdict::success);  // breaks the run
    calls(breaker, 2, verdict::retryable);
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().failures_in_window == 2);
    call(breaker, verdict::ambiguous);
    CHECK(breaker.state() == circuit_state::open);
    const auto m = breaker.metrics();
    CHECK(m.calls == 6);
    CHECK(m.failures == 5);
}

TEST_CASE("circuit breaker: slow calls count as failures, only when the rule is on") {
    manual_clock clock;
    SECTION("rule on: measured from try_acquire") {
        breaker_type breaker{{.min_calls = 4, .slow_call_threshold = 100ms}, clock};
        for (int i = 0; i < 4; ++i) {
            auto permit = breaker.try_acquire();
            clock.advance(i < 2 ? 150ms : 100ms);  // exactly the threshold is not slow
            breaker.record(permit, verdict::success);
        }
        CHECK(breaker.state() == circuit_state::closed);  // 2 of 4
        CHECK(breaker.metrics().slow_calls == 2);
        auto permit = breaker.try_acquire();
        clock.advance(101ms);
        breaker.record(permit, verdict::success);
        CHECK(breaker.state() == circuit_state::open);  // 3 of 5
        CHECK(breaker.metrics().failures == 3);
    }
    SECTION("rule on: the duration the caller measured") {
        breaker_type breaker{{.min_calls = 2, .slow_call_threshold = 100ms}, clock};
        breaker.record(breaker.try_acquire(), verdict::success, 2s);
        breaker.record(breaker.try_acquire(), verdict::success, 2s);
        CHECK(breaker.state() == circuit_state::open);
    }
    SECTION("rule off: a slow success is a success") {
        breaker_type breaker{{.min_calls = 2}, clock};
        for (int i = 0; i < 2; ++i) {
            auto permit = breaker.try_acquire();
            clock.advance(1h);
            breaker.record(permit, verdict::success, 1h);
        }
        CHECK(breaker.state() == circuit_state::closed);
        CHECK(breaker.metrics().slow_calls == 0);
    }
}

TEST_CASE("circuit breaker: a closed breaker admits without reading the clock; recording reads it once") {
    counting_clock clock;
    resil::basic_circuit_breaker<counting_clock> breaker{{}, clock};
    const auto before = clock.reads();
    auto permit = breaker.try_acquire();
    CHECK(clock.reads() == before);
    breaker.record(permit, verdict::success);
    CHECK(clock.reads() == before + 1);
    auto failed = breaker.try_acquire();
    breaker.record(failed, verdict::retryable);  // a failure also evaluates the window: same reading
    CHECK(clock.reads() == before + 2);

    resil::basic_circuit_breaker<counting_clock> timed{{.slow_call_threshold = 1s}, clock};
    const auto start = clock.reads();
    auto p = timed.try_acquire();  // the slow-call rule needs the start
    timed.record(p, verdict::success);
    CHECK(clock.reads() == start + 2);
}

TEST_CASE("circuit breaker: permanent verdicts do not count as failures by default") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 5}, clock};
    calls(breaker, 50, verdict::permanent);  // e.g. 404s from the caller's own bug
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().failures == 0);
    CHECK(breaker.metrics().calls == 50);

    breaker_type strict{{.min_calls = 5, .failure_verdicts = {verdict::retryable, verdict::ambiguous, verdict::permanent}},
                        clock};
    calls(strict, 5, verdict::permanent);
    CHECK(strict.state() == circuit_state::open);
}

TEST_CASE("circuit breaker: isolate() holds it open until reset()") {
    manual_clock clock;
    std::vector<resil::events::breaker_state_changed> changes;
    breaker_type breaker{{.on_state_change = [&](const auto& e) { changes.push_back(e); }}, clock};
    const auto isolated_at = clock.now();
    breaker.isolate();
    CHECK(breaker.state() == circuit_state::open);
    CHECK(breaker.isolated());
    clock.advance(24h);
    auto permit = breaker.try_acquire();
    CHECK_FALSE(permit.admitted());
    CHECK_FALSE(permit.retry_after().has_value());  // no probe is coming
    breaker.isolate();                              // already isolated: no change
    breaker.reset();
    CHECK(breaker.state() == circuit_state::closed);
    CHECK_FALSE(breaker.isolated());
    call(breaker, verdict::success);
    REQUIRE(changes.size() == 2);
    CHECK(changes[0].from == circuit_state::closed);
    CHECK(changes[0].to == circuit_state::open);
    CHECK(changes[1].from == circuit_state::open);
    CHECK(changes[1].to == circuit_state::closed);
    CHECK(changes[0].at == isolated_at);
    CHECK(changes[1].at == isolated_at + 24h);
    CHECK(breaker.metrics().transitions == 2);
    CHECK(breaker.metrics().rejections == 1);
}

TEST_CASE("circuit breaker: reset() closes an open breaker with an empty window") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 5}, clock};
    calls(breaker, 5, verdict::retryable);
    REQUIRE(breaker.state() == circuit_state::open);
    breaker.reset();
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().calls_in_window == 0);
    calls(breaker, 4, verdict::retryable);  // a fresh window: 4 < min_calls
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: the retry-after of a rejection shrinks as time passes") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 30s}, clock};
    call(breaker, verdict::retryable);
    REQUIRE(breaker.state() == circuit_state::open);
    CHECK(breaker.try_acquire().retry_after() == duration{30s});
    clock.advance(1s);
    CHECK(breaker.try_acquire().retry_after() == duration{29s});
    clock.advance(19s);
    CHECK(breaker.try_acquire().retry_after() == duration{10s});
    clock.advance(9999ms);
    CHECK(breaker.try_acquire().retry_after() == duration{1ms});
    clock.advance(1ms);
    auto probe = breaker.try_acquire();
    CHECK(probe.admitted());
    CHECK(probe.probe());
    CHECK(breaker.state() == circuit_state::half_open);
}

TEST_CASE("circuit breaker: half-open admits exactly its probes; all must succeed to close") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 30s, .half_open_probes = 3}, clock};
    call(breaker, verdict::retryable);
    clock.advance(30s);
    std::vector<breaker_type::permit> probes;
    for (int i = 0; i < 10; ++i)
        if (auto p = breaker.try_acquire()) probes.push_back(std::move(p));
    REQUIRE(probes.size() == 3);
    breaker.record(probes[0], verdict::success);
    breaker.record(probes[1], verdict::success);
    CHECK(breaker.state() == circuit_state::half_open);
    CHECK_FALSE(breaker.try_acquire().admitted());  // successes free no slot
    breaker.record(probes[2], verdict::success);
    CHECK(breaker.state() == circuit_state::closed);
    CHECK(breaker.metrics().calls_in_window == 0);  // the window was cleared
}

TEST_CASE("circuit breaker: a failed probe opens it again for the whole duration") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 10s, .half_open_probes = 5}, clock};
    call(breaker, verdict::retryable);
    clock.advance(10s);
    auto first = breaker.try_acquire();
    auto second = breaker.try_acquire();
    breaker.record(first, verdict::success);
    clock.advance(2s);
    breaker.record(second, verdict::ambiguous);
    CHECK(breaker.state() == circuit_state::open);
    CHECK(breaker.try_acquire().retry_after() == duration{10s});
}

TEST_CASE("circuit breaker: probes that never report back time out, so half-open cannot get stuck") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 30s, .half_open_probes = 2, .probe_timeout = 5s}, clock};
    CHECK(breaker.options().probe_timeout == duration{5s});
    call(breaker, verdict::retryable);
    clock.advance(30s);
    auto lost1 = breaker.try_acquire();  // these callers hang forever
    auto lost2 = breaker.try_acquire();
    REQUIRE(lost1.probe());
    REQUIRE(lost2.probe());
    clock.advance(4s);
    auto waiting = breaker.try_acquire();
    CHECK_FALSE(waiting.admitted());
    CHECK(waiting.retry_after() == duration{1s});
    clock.advance(1s);
    auto timed_out = breaker.try_acquire();  // the probes' time is up: open again
    CHECK_FALSE(timed_out.admitted());
    CHECK(timed_out.retry_after() == duration{30s});
    CHECK(breaker.state() == circuit_state::open);
    clock.advance(30s);
    auto fresh = breaker.try_acquire();
    CHECK(fresh.probe());
    breaker.record(lost1, verdict::success);  // late answers of an old round decide nothing
    breaker.record(lost2, verdict::success);
    CHECK(breaker.state() == circuit_state::half_open);
}

TEST_CASE("circuit breaker: turned away in half-open, a caller is told to come back after as long as the probes have been out") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 30s, .half_open_probes = 2}, clock};  // probe_timeout 30 s
    call(breaker, verdict::retryable);
    clock.advance(30s);
    auto first = breaker.try_acquire();
    auto second = breaker.try_acquire();
    REQUIRE(first.probe());
    REQUIRE(second.probe());
    const auto hint = [&] {
        auto p = breaker.try_acquire();
        REQUIRE_FALSE(p.admitted());
        REQUIRE(p.retry_after().has_value());
        return *p.retry_after();
    };
    CHECK(hint() == breaker_type::retry_soon);  // the probes have just gone out: never zero
    clock.advance(10ms);
    CHECK(hint() == duration{10ms});  // not the 29.99 s left of the probe timeout
    clock.advance(990ms);
    CHECK(hint() == duration{1s});
    clock.advance(19s);  // 20 s out, 10 s left: never past the probe timeout
    CHECK(hint() == duration{10s});
    clock.advance(9999ms);
    CHECK(hint() == duration{1ms});
    breaker.record(first, verdict::success);
    breaker.record(second, verdict::success);
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: a caller following the half-open hint finds the breaker closed soon after the probes") {
    // Probes taking 50 ms: a caller turned away 30 ms in comes back at 60 ms
    // and is admitted, instead of 30 s later.
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 30s, .half_open_probes = 1}, clock};
    call(breaker, verdict::retryable);
    clock.advance(30s);
    auto probe = breaker.try_acquire();
    REQUIRE(probe.probe());
    clock.advance(30ms);
    auto turned_away = breaker.try_acquire();
    REQUIRE_FALSE(turned_away.admitted());
    const auto wait = *turned_away.retry_after();
    CHECK(wait == duration{30ms});
    clock.advance(20ms);
    breaker.record(probe, verdict::success);
    REQUIRE(breaker.state() == circuit_state::closed);
    clock.advance(wait - 20ms);
    CHECK(breaker.try_acquire().admitted());
}

TEST_CASE("circuit breaker: the half-open hint is never zero and never past the probes' timeout") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .half_open_probes = 1, .probe_timeout = 700ms}, clock};
    call(breaker, verdict::retryable);
    clock.advance(1s);
    auto probe = breaker.try_acquire();
    REQUIRE(probe.probe());
    for (auto out = 0ms; out < 700ms; out += 7ms) {
        auto p = breaker.try_acquire();
        REQUIRE_FALSE(p.admitted());
        const auto wait = *p.retry_after();
        CHECK(wait > duration::zero());
        CHECK(wait <= duration{700ms - out});
        CHECK(wait == std::min<duration>(700ms - out, std::max<duration>(breaker_type::retry_soon, out)));
        clock.advance(7ms);
    }
}

TEST_CASE("circuit breaker: probe_timeout defaults to open_for") {
    breaker_type breaker{{.open_for = 7s}, manual_clock{}};
    CHECK(breaker.options().probe_timeout == duration{7s});
    CHECK(breaker_type{{}, manual_clock{}}.options().probe_timeout == duration{30s});
}

TEST_CASE("circuit breaker: a released or dropped probe frees its slot") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .half_open_probes = 1}, clock};
    call(breaker, verdict::retryable);
    clock.advance(1s);
    auto probe = breaker.try_acquire();
    REQUIRE(probe.probe());
    CHECK_FALSE(breaker.try_acquire().admitted());
    breaker.release(probe);
    {
        auto again = breaker.try_acquire();
        REQUIRE(again.probe());
        CHECK_FALSE(breaker.try_acquire().admitted());
    }  // dropped without a verdict
    auto last = breaker.try_acquire();
    REQUIRE(last.probe());
    breaker.record(last, verdict::success);
    CHECK(breaker.state() == circuit_state::closed);
    breaker.record(last, verdict::retryable);  // a spent permit is ignored
    CHECK(breaker.metrics().failures == 1);
}

TEST_CASE("circuit breaker: a moved permit keeps its slot; the moved-from one admits nothing") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .half_open_probes = 1}, clock};
    call(breaker, verdict::retryable);
    clock.advance(1s);
    auto probe = breaker.try_acquire();
    REQUIRE(probe.probe());
    breaker_type::permit moved = std::move(probe);
    CHECK_FALSE(probe.admitted());  // NOLINT(bugprone-use-after-move): checking what a move leaves
    CHECK(moved.probe());
    breaker.record(probe, verdict::retryable);  // ignored: it holds nothing
    CHECK(breaker.state() == circuit_state::half_open);
    breaker.record(moved, verdict::success);
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: results of calls admitted before a change of state decide nothing") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 2}, clock};
    auto a = breaker.try_acquire();
    auto b = breaker.try_acquire();
    auto c = breaker.try_acquire();
    breaker.record(a, verdict::retryable);
    breaker.record(b, verdict::retryable);
    REQUIRE(breaker.state() == circuit_state::open);
    breaker.reset();
    breaker.record(c, verdict::retryable);  // from before the reset
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::closed);  // one failure in the new run, not two
    CHECK(breaker.metrics().calls == 4);
}

TEST_CASE("circuit breaker: invalid options throw with clear messages") {
    // The constructor throws validate()'s message; tests/circuit_breaker_options.cpp
    // checks every message of validate() itself.
    const auto nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(error_of({.failure_ratio = 1.5}) ==
          "resil::circuit_breaker: `failure_ratio` must be in [0, 1) (it opens when the ratio is strictly above it), got 1.5");
    CHECK(error_of({.failure_ratio = 1.0}).find("`failure_ratio` must be in [0, 1)") != std::string::npos);
    CHECK(error_of({.failure_ratio = -0.1}).find("got -0.1") != std::string::npos);
    CHECK(error_of({.failure_ratio = nan}).find("failure_ratio") != std::string::npos);
    CHECK(error_of({.window = 0s}) == "resil::circuit_breaker: `window` must be in [10ms, 24h], got 0s");
    CHECK(error_of({.window = 25h}) == "resil::circuit_breaker: `window` must be in [10ms, 24h], got 25h");
    CHECK(error_of({.window = 9999us}).find("got 9999us") != std::string::npos);
    CHECK(error_of({.window_calls = 0}).find("`window_calls` must be in [1, 1000000], got 0") != std::string::npos);
    CHECK(error_of({.min_calls = 0}).find("`min_calls` must be at least 1") != std::string::npos);
    CHECK(error_of({.mode = resil::breaker_mode::count_window, .window_calls = 10, .min_calls = 11}) ==
          "resil::circuit_breaker: `min_calls` must be at most window_calls (10) in count_window mode, or the breaker "
          "could never open, got 11");
    CHECK(error_of({.consecutive_failures = 0}).find("`consecutive_failures` must be in") != std::string::npos);
    CHECK(error_of({.slow_call_threshold = 0ms}).find("`slow_call_threshold` must be positive") != std::string::npos);
    CHECK(error_of({.open_for = 0s}).find("`open_for` must be in [1ms, 24h]") != std::string::npos);
    CHECK(error_of({.open_for = -5s}) == "resil::circuit_breaker: `open_for` must be in [1ms, 24h], got -5s");
    CHECK(error_of({.open_for = 500us}).find("got 500us") != std::string::npos);
    CHECK(error_of({.half_open_probes = 0}).find("`half_open_probes` must be in [1, 1000], got 0") != std::string::npos);
    CHECK(error_of({.half_open_probes = 1001}).find("got 1001") != std::string::npos);
    CHECK(error_of({.probe_timeout = -1s}).find("`probe_timeout` must be") != std::string::npos);
    CHECK(error_of({.failure_verdicts = {verdict::success}}) ==
          "resil::circuit_breaker: `failure_verdicts` must not contain success, got {success}");
    CHECK(error_of({.mode = static_cast<resil::breaker_mode>(7)}).find("mode") != std::string::npos);
    CHECK(error_of({}) == "(no error)");
    CHECK(error_of({.half_open_probes = 1000, .probe_timeout = 24h}) == "(no error)");
}

TEST_CASE("circuit breaker: options() shows the options in force") {
    breaker_type breaker{{.failure_ratio = 0.25, .window = 60s, .min_calls = 100, .open_for = 5s, .half_open_probes = 2},
                         manual_clock{}};
    const auto& o = breaker.options();
    CHECK(o.mode == resil::breaker_mode::time_window);
    CHECK(o.failure_ratio == 0.25);
    CHECK(o.window == duration{60s});
    CHECK(o.min_calls == 100);
    CHECK(o.open_for == duration{5s});
    CHECK(o.half_open_probes == 2);
    CHECK(o.failure_verdicts.contains(verdict::retryable));
    CHECK(o.failure_verdicts.contains(verdict::ambiguous));
    CHECK_FALSE(o.failure_verdicts.contains(verdict::permanent));
    CHECK_FALSE(o.slow_call_threshold.has_value());
}

TEST_CASE("circuit breaker: an exception from the state-change hook does not break it") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .on_state_change = [](const auto&) { throw std::runtime_error("listener"); }},
                         clock};
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::open);
    CHECK_FALSE(breaker.try_acquire().admitted());
}

TEST_CASE("circuit breaker: admitting and recording allocate nothing") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1000, .open_for = 1s}, clock};
    int admitted = 0;
    int rejected = 0;
    const auto before = allocations.load();
    for (int i = 0; i < 1000; ++i) {
        clock.advance(1ms);
        auto permit = breaker.try_acquire();
        admitted += permit ? 1 : 0;
        breaker.record(permit, i % 3 == 0 ? verdict::retryable : verdict::success);
    }
    breaker.isolate();
    for (int i = 0; i < 100; ++i) rejected += breaker.try_acquire().admitted() ? 0 : 1;
    const auto after = allocations.load();
    if (counting_allocations) CHECK(after == before);
    CHECK(admitted == 1000);
    CHECK(rejected == 100);
}

// ---- through a pipeline ----

namespace {

struct response {
    int status = 200;
};
resil::classification classify(const response& r) {
    if (r.status < 400) return verdict::success;
    if (r.status >= 500) return verdict::retryable;
    return verdict::permanent;
}

// An inner limit that turns every call away (like a full concurrency limit).
struct refuse_everything {
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        using result = decltype(next(ctx));
        (void)ctx;
        (void)next;
        return result::rejected(reason::shed);
    }
};

struct event_log {
    std::vector<resil::events::rejected>* rejected;
    std::vector<resil::events::breaker_state_changed>* changes;
    void operator()(const resil::events::rejected& e) const { rejected->push_back(e); }
    void operator()(const resil::events::breaker_state_changed& e) const { changes->push_back(e); }
};

}  // namespace

TEST_CASE("circuit breaker: in a pipeline, an open circuit is plan B, counted by reason") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 20, .open_for = 30s}, clock};
    resil::fallback_policy plan_b{[] { return response{299}; }};
    std::vector<resil::events::rejected> rejected;
    std::vector<resil::events::breaker_state_changed> changes;
    const auto pipe = resil::pipeline(clock, plan_b, std::ref(breaker)).with_listener(event_log{&rejected, &changes});

    int reached = 0;
    const auto failing = [&] {
        ++reached;
        return response{503};
    };
    for (int i = 0; i < 20; ++i) {
        auto out = pipe(failing);
        CHECK(out.fallback_reason() == reason::failed);
    }
    CHECK(reached == 20);
    CHECK(breaker.state() == circuit_state::open);
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].to == circuit_state::open);
    CHECK(changes[0].calls_in_window == 20);
    CHECK(changes[0].failure_ratio == 1.0);

    clock.advance(10s);
    for (int i = 0; i < 100; ++i) {
        auto out = pipe(failing);
        REQUIRE(out.ok());
        CHECK(out.value().status == 299);
        CHECK(out.fallback_reason() == reason::circuit_open);
    }
    CHECK(reached == 20);  // nothing reached the dependency
    CHECK(plan_b.count(reason::circuit_open) == 100);
    REQUIRE(rejected.size() == 100);
    CHECK(rejected[0].reason == reason::circuit_open);
    CHECK(rejected[0].retry_after == duration{20s});

    // Without a fallback, the caller sees the rejection and its retry-after.
    const auto bare = resil::pipeline(clock, std::ref(breaker));
    auto out = bare(failing);
    CHECK_FALSE(out.ok());
    CHECK_FALSE(out.attempted());
    CHECK(out.reason() == reason::circuit_open);
    CHECK(out.retry_after() == duration{20s});

    // Recovery through the pipeline: 5 successful probes close it.
    clock.advance(20s);
    for (int i = 0; i < 5; ++i) CHECK(pipe([] { return response{200}; }).ok());
    CHECK(breaker.state() == circuit_state::closed);
    REQUIRE(changes.size() == 3);
    CHECK(changes[1].to == circuit_state::half_open);
    CHECK(changes[2].to == circuit_state::closed);
    CHECK(changes[2].at == clock.now());
    CHECK(changes[1].at == changes[0].at + 30s);
}

TEST_CASE("circuit breaker: in a pipeline, a permanent failure is not a failure of the dependency") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 5}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(breaker));
    for (int i = 0; i < 50; ++i) CHECK(pipe([] { return response{404}; }).reason() == reason::failed);
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: in a pipeline, an inner rejection gives the probe back without counting") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .half_open_probes = 2}, clock};
    call(breaker, verdict::retryable);
    clock.advance(1s);
    const auto refused = resil::pipeline(clock, std::ref(breaker), refuse_everything{});
    for (int i = 0; i < 10; ++i) CHECK(refused([] { return response{200}; }).reason() == reason::shed);
    CHECK(breaker.state() == circuit_state::half_open);
    CHECK(breaker.metrics().calls == 1);
    // Both probe slots are still free.
    auto a = breaker.try_acquire();
    auto b = breaker.try_acquire();
    CHECK(a.probe());
    CHECK(b.probe());
}

TEST_CASE("circuit breaker: in a pipeline, a callable that throws gives its probe back") {
    manual_clock clock;
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .half_open_probes = 1}, clock};
    call(breaker, verdict::retryable);
    clock.advance(1s);
    const auto pipe = resil::pipeline(clock, std::ref(breaker));
    CHECK_THROWS_AS(pipe([]() -> response { throw std::logic_error("bug"); }), std::logic_error);
    CHECK(breaker.state() == circuit_state::half_open);
    CHECK(pipe([] { return response{200}; }).ok());  // the slot was free
    CHECK(breaker.state() == circuit_state::closed);
}

// ---- threads ----

TEST_CASE("circuit breaker: threads hammering one breaker — every call admitted or rejected, counts add up") {
    const auto mode = GENERATE(resil::breaker_mode::time_window, resil::breaker_mode::count_window,
                               resil::breaker_mode::consecutive_failures);
    manual_clock clock;
    std::atomic<int> hook_calls{0};
    breaker_type breaker{{.mode = mode,
                          .window = 1s,
                          .window_calls = 50,
                          .min_calls = 20,
                          .consecutive_failures = 5,
                          .open_for = 20ms,
                          .half_open_probes = 3,
                          .on_state_change = [&](const auto&) { hook_calls.fetch_add(1); }},
                         clock};
    constexpr int threads = 4;
    constexpr int per_thread = 50'000;
    std::atomic<std::uint64_t> admitted{0};
    std::atomic<std::uint64_t> rejected{0};
    std::atomic<std::uint64_t> probes{0};
    std::atomic<int> without_retry_after{0};
    std::vector<std::thread> pool;
    std::latch start(threads);
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            start.arrive_and_wait();
            std::uint32_t seed = 12345u + static_cast<std::uint32_t>(t);
            std::uint64_t mine_admitted = 0;
            std::uint64_t mine_rejected = 0;
            for (int i = 0; i < per_thread; ++i) {
                clock.advance(50us);
                seed = seed * 1664525u + 1013904223u;
                // Bad half-seconds with 70 % failures alternate with good ones.
                const bool bad = (clock.now().time_since_epoch() / 500ms) % 2 == 0;
                const bool fails = (seed >> 8) % 100 < (bad ? 70u : 5u);
                auto permit = breaker.try_acquire();
                if (permit) {
                    ++mine_admitted;
                    if (permit.probe()) probes.fetch_add(1);
                    breaker.record(permit, fails ? verdict::retryable : verdict::success);
                } else {
                    ++mine_rejected;
                    if (!permit.retry_after() && !breaker.isolated()) without_retry_after.fetch_add(1);
                }
            }
            admitted.fetch_add(mine_admitted);
            rejected.fetch_add(mine_rejected);
        });
    }
    for (auto& th : pool) th.join();

    const auto m = breaker.metrics();
    const auto total_admitted = admitted.load();
    const auto total_rejected = rejected.load();
    CHECK(total_admitted + total_rejected == std::uint64_t{threads} * per_thread);
    CHECK(m.calls == total_admitted);
    CHECK(m.rejections == total_rejected);
    CHECK(without_retry_after.load() == 0);
    CHECK(m.transitions == static_cast<std::uint64_t>(hook_calls.load()));
    CHECK(m.transitions > 10);  // it really went round the states
    CHECK(probes.load() > 0);
    CHECK(m.failures <= m.calls);
}

TEST_CASE("circuit breaker: threads racing at the half-open moment never get more than the probes") {
    constexpr int threads = 8;
    constexpr std::uint32_t probes = 5;
    constexpr int rounds = 150;
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures,
                          .consecutive_failures = 1,
                          .open_for = 1s,
                          .half_open_probes = probes},
                         clock};
    call(breaker, verdict::retryable);
    REQUIRE(breaker.state() == circuit_state::open);

    std::barrier sync(threads + 1);
    std::atomic<int> round{0};
    std::atomic<std::uint32_t> admitted{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                sync.arrive_and_wait();  // 1: the open period is over
                std::vector<breaker_type::permit> mine;
                for (int k = 0; k < 3; ++k)
                    if (auto p = breaker.try_acquire()) mine.push_back(std::move(p));
                admitted.fetch_add(static_cast<std::uint32_t>(mine.size()));
                sync.arrive_and_wait();  // 2: everyone has tried
                sync.arrive_and_wait();  // 3: the main thread has counted
                const auto v = round.load() % 2 == 0 ? verdict::retryable : verdict::success;
                for (auto& p : mine) breaker.record(p, v);
                sync.arrive_and_wait();  // 4: all recorded
            }
        });
    }
    for (int r = 0; r < rounds; ++r) {
        round.store(r);
        admitted.store(0);
        clock.advance(1s);
        sync.arrive_and_wait();  // 1
        sync.arrive_and_wait();  // 2
        const auto raced = admitted.load();
        CHECK(raced <= probes);
        // Alone now, the main thread takes whatever slots are left: exactly
        // `probes` in all, never one more.
        std::vector<breaker_type::permit> rest;
        for (;;) {
            auto p = breaker.try_acquire();
            if (!p) break;
            REQUIRE(p.probe());
            rest.push_back(std::move(p));
        }
        REQUIRE(raced + rest.size() == probes);
        sync.arrive_and_wait();  // 3
        const auto v = r % 2 == 0 ? verdict::retryable : verdict::success;
        for (auto& p : rest) breaker.record(p, v);
        sync.arrive_and_wait();  // 4
        if (r % 2 == 0) {
            REQUIRE(breaker.state() == circuit_state::open);
        } else {
            REQUIRE(breaker.state() == circuit_state::closed);
            call(breaker, verdict::retryable);  // open it for the next round
        }
    }
    for (auto& th : pool) th.join();
}

namespace {
// A manual clock whose reads take a while, so that threads deciding to open
// the breaker all reach their claim on the change together.
class slow_clock {
public:
    [[nodiscard]] time_point now() const noexcept {
        std::this_thread::sleep_for(std::chrono::microseconds{20});
        return inner_.now();
    }
    bool sleep_for(duration d, std::stop_token stop = {}) const noexcept { return inner_.sleep_for(d, stop); }

private:
    manual_clock inner_;
};
}  // namespace

TEST_CASE("circuit breaker: threads failing at once open it exactly once") {
    constexpr int threads = 8;
    constexpr int rounds = 200;
    std::atomic<int> opened{0};
    resil::basic_circuit_breaker<slow_clock> breaker{{.mode = resil::breaker_mode::consecutive_failures,
                          .consecutive_failures = 1,
                          .on_state_change =
                              [&](const resil::events::breaker_state_changed& e) {
                                  if (e.to == circuit_state::open) opened.fetch_add(1);
                              }}};
    std::barrier sync(threads + 1);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                auto permit = breaker.try_acquire();  // closed: every thread is admitted
                sync.arrive_and_wait();               // 1: all admitted
                breaker.record(permit, verdict::retryable);
                sync.arrive_and_wait();  // 2: all recorded
                sync.arrive_and_wait();  // 3: reset
            }
        });
    }
    int wrong_rounds = 0;
    for (int r = 0; r < rounds; ++r) {
        opened.store(0);
        sync.arrive_and_wait();  // 1
        sync.arrive_and_wait();  // 2
        if (opened.load() != 1 || breaker.state() != circuit_state::open) ++wrong_rounds;
        breaker.reset();
        sync.arrive_and_wait();  // 3
    }
    for (auto& th : pool) th.join();
    CHECK(wrong_rounds == 0);
    CHECK(breaker.metrics().transitions == 2 * rounds);  // open, then reset to closed
}

// ---- the rolling windows underneath ----

TEST_CASE("rolling time window: buckets split exactly at their boundaries") {
    resil::detail::rolling_time_window window{10s};  // 10 buckets of 1 s
    const time_point second{std::chrono::hours{1} + 7s};
    window.record(second - 1ns, true);  // the last instant of one bucket
    window.record(second, false);       // the first of the next
    CHECK(window.totals(second + 9s - 1ns).calls == 2);
    CHECK(window.totals(second + 9s).calls == 1);  // the earlier bucket just left the window
    CHECK(window.totals(second + 9s).failures == 0);
    CHECK(window.totals(second + 10s).calls == 0);
    CHECK(window.lifetime().calls == 2);
    CHECK(window.lifetime().failures == 1);
}

TEST_CASE("rolling time window: a record older than the whole window is kept out of it") {
    resil::detail::rolling_time_window window{10s};
    const time_point t{std::chrono::hours{2}};
    window.record(t, false);
    window.record(t - 40s, true);  // a thread whose clock read went stale: same slot, 40 buckets back
    CHECK(window.totals(t).calls == 1);
    CHECK(window.totals(t).failures == 0);
    CHECK(window.lifetime().calls == 2);  // counted all the same
    CHECK(window.lifetime().failures == 1);
}

TEST_CASE("rolling time window: a record stale by more than the horizon does not wipe the live bucket") {
    resil::detail::rolling_time_window window{10ms};  // 10 buckets of 1 ms
    const time_point t{std::chrono::hours{1}};
    for (int i = 0; i < 100; ++i) window.record(t, true);
    window.record(t - std::chrono::milliseconds{50}, false);  // same slot, 50 buckets back
    CHECK(window.totals(t).calls == 100);
    CHECK(window.totals(t).failures == 100);
    CHECK(window.lifetime().calls == 101);
}

TEST_CASE("rolling time window: a slot idle for longer than half the epoch range is reused, not taken for newer") {
    // 1 ms buckets: 2^23 of them pass in 2.3 hours. A ring that took an old
    // slot for a newer one would stop counting after such a pause.
    resil::detail::rolling_time_window window{10ms};
    const time_point t{std::chrono::hours{1}};
    window.record(t, true);
    for (const auto pause : {std::chrono::hours{3}, std::chrono::hours{5}, std::chrono::hours{70}}) {
        window.record(t + pause, true);
        CHECK(window.totals(t + pause).calls == 1);
    }
}

TEST_CASE("stripes: threads alive together hold different stripe indices, given back when they end") {
    constexpr int threads = 6;
    std::vector<std::size_t> index(threads);
    std::vector<std::size_t> again(threads);
    std::latch all_claimed{threads};
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                index[static_cast<std::size_t>(t)] = resil::detail::this_thread_stripe();
                all_claimed.arrive_and_wait();  // nobody ends before everyone has claimed
                again[static_cast<std::size_t>(t)] = resil::detail::this_thread_stripe();
            });
    }
    CHECK(again == index);  // a thread keeps its index
    auto sorted = index;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    for (const auto i : index) CHECK(i < resil::detail::max_stripes);
    // Given back: the indices' users are this thread's claim (if any) alone.
    std::uint32_t users = 0;
    for (const auto& u : resil::detail::stripe_index_users) users += u.load();
    CHECK(users <= 1);
    CHECK(std::has_single_bit(resil::detail::default_stripe_count()));
    CHECK(resil::detail::default_stripe_count() <= resil::detail::max_stripes);
}

TEST_CASE("stripes: each stripe on cache lines of its own, allocated once") {
    resil::detail::stripes<std::atomic<std::uint64_t>> counters{8};
    CHECK(counters.size() == 8);
    CHECK(counters.bytes() == 8 * resil::detail::stripe_alignment);
    for (std::size_t i = 0; i < counters.size(); ++i) {
        CHECK(reinterpret_cast<std::uintptr_t>(&counters[i]) % resil::detail::stripe_alignment == 0);
        CHECK(counters[i].load() == 0);
    }
    CHECK(resil::detail::stripes<int>{5}.size() == 8);   // rounded up to a power of two
    CHECK(resil::detail::stripes<int>{0}.size() == 1);
    CHECK(resil::detail::stripes<int>{1000}.size() == resil::detail::max_stripes);
    // A ring of 10 buckets (160 bytes) takes two 128-byte units; 4 stripes
    // keep 4 rings for threads that hold their stripe alone and 4 shared.
    resil::detail::rolling_time_window window{10s, 4};
    CHECK(window.stripe_count() == 8);
    resil::detail::owned_stripes<std::array<std::atomic<std::uint64_t>, 20>> rings{4};
    CHECK(rings.size() == 8);
    CHECK(rings.bytes() == 8 * 2 * resil::detail::stripe_alignment);
    for (std::size_t i = 0; i < rings.size(); ++i)
        CHECK(reinterpret_cast<std::uintptr_t>(&rings[i]) % resil::detail::stripe_alignment == 0);
}

TEST_CASE("owned stripes: a thread alone on its index writes a cell of its own; the rest share the other half") {
    // More threads alive together than there are stripe indices: some must
    // share an index, and none of those may get a cell written without a lock.
    constexpr std::size_t threads = resil::detail::max_stripes + 8;
    const resil::detail::owned_stripes<std::atomic<std::uint64_t>> cells{resil::detail::max_stripes};
    struct seen {
        const void* cell = nullptr;
        bool alone = false;
        std::size_t index = 0;
    };
    std::vector<seen> got(threads);
    std::latch all_claimed{static_cast<std::ptrdiff_t>(threads)};
    {
        std::vector<std::jthread> pool;
        for (std::size_t t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const auto c = cells.local();
                got[t] = {&c.value, c.alone, resil::detail::this_thread_stripe()};
                all_claimed.arrive_and_wait();  // nobody gives an index back before all have one
            });
    }
    const auto* first_shared = &cells[cells.size() / 2];
    std::size_t alone = 0;
    for (std::size_t t = 0; t < threads; ++t) {
        if (!got[t].alone) {
            CHECK(got[t].cell >= static_cast<const void*>(first_shared));  // one of the shared cells
            continue;
        }
        ++alone;
        CHECK(got[t].cell == static_cast<const void*>(&cells[got[t].index]));
        CHECK(got[t].cell < static_cast<const void*>(first_shared));
        for (std::size_t u = 0; u < threads; ++u)
            if (u != t) CHECK(got[u].cell != got[t].cell);  // nobody else writes it
    }
    // At most one thread per index alone (this thread may hold one index).
    CHECK(alone <= resil::detail::max_stripes);
    CHECK(alone + 1 >= resil::detail::max_stripes);
    CHECK(threads - alone >= threads - resil::detail::max_stripes);
}

TEST_CASE("owned stripes: an index given back carries its cell's writes to the next thread that holds it") {
    // Short-lived threads whose lifetimes overlap: each starts before the one
    // before it ends, so indices are given back and taken again while others
    // run; each new holder must continue from its predecessor's count.
    const resil::detail::owned_stripes<std::atomic<std::uint64_t>> cells{2};
    constexpr int threads = 160;
    constexpr std::uint64_t per_thread = 5'000;
    const auto add = [&] {
        for (std::uint64_t i = 0; i < per_thread; ++i) resil_test::add_one(cells);
    };
    {
        std::deque<std::jthread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back(add);
            if (pool.size() == 3) pool.pop_front();  // joins the oldest; two keep running
        }
    }
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < cells.size(); ++i) total += cells[i].load();
    CHECK(total == std::uint64_t{threads} * per_thread);
}

namespace {
// Records `n` successes into `window` from a thread-local destructor, which
// runs after the thread has given its stripe index back (it was constructed
// before the thread claimed one); `started` tells another thread so.
struct records_at_thread_exit {
    resil::detail::rolling_time_window* window = nullptr;
    time_point at{};
    int n = 0;
    std::atomic<bool>* started = nullptr;
    ~records_at_thread_exit() {
        if (started != nullptr) started->store(true);
        for (int i = 0; i < n; ++i) window->record(at, false);
    }
};
}  // namespace

TEST_CASE("rolling time window: a thread that has given its index back no longer writes that ring alone") {
    // The next thread to take the index writes the ring alone at once; the
    // thread still recording from its thread-local destructors must use the
    // shared rings then, or one of the two loses counts.
    resil::detail::rolling_time_window window{10s, resil::detail::max_stripes};
    const time_point t{std::chrono::hours{3}};
    constexpr int rounds = 20;
    constexpr int per_thread = 100'000;
    for (int r = 0; r < rounds; ++r) {
        std::atomic<bool> given_back{false};
        std::atomic<std::size_t> leaving_index{0};
        std::atomic<std::size_t> arriving_index{1};
        std::jthread leaving{[&] {
            static thread_local records_at_thread_exit late;  // constructed before the index is claimed
            late.window = &window;  // member by member: a temporary's destructor would record too
            late.at = t;
            late.n = per_thread;
            late.started = &given_back;
            window.record(t, false);  // claims an index
            leaving_index = resil::detail::this_thread_stripe();
        }};
        std::jthread arriving{[&] {
            while (!given_back.load()) std::this_thread::yield();
            for (int i = 0; i < per_thread; ++i) window.record(t, false);  // takes the index just given back
            arriving_index = resil::detail::this_thread_stripe();
        }};
        leaving.join();
        arriving.join();
        CHECK(arriving_index.load() == leaving_index.load());
    }
    CHECK(window.totals(t).calls == std::uint64_t{rounds} * (2 * per_thread + 1));
}

TEST_CASE("rolling time window: a ring written alone holds one generation") {
    // As many rings as indices: this thread's index has a ring of its own.
    resil::detail::rolling_time_window window{10s, resil::detail::max_stripes};
    const time_point t{std::chrono::hours{3}};
    const auto owned = [] { return (resil::detail::this_thread_stripe_claim() & resil::detail::shared_stripe_bit) == 0; };
    REQUIRE(owned());  // this thread holds its index alone (tests run one at a time)
    for (int i = 0; i < 3; ++i) window.record(t, i == 0, 7);
    CHECK(window.totals(t, 7).calls == 3);
    window.begin_generation();  // the change to generation 8
    CHECK(window.totals(t, 8).calls == 0);  // the ring holds generation 7: not counted in 8
    CHECK(window.totals(t, 7).calls == 3);
    window.record(t, true, 8);  // its owner empties it for generation 8
    CHECK(window.totals(t, 8).calls == 1);
    CHECK(window.totals(t, 8).failures == 1);
    CHECK(window.totals(t, 7).calls == 0);
    window.record(t, true, 7);  // a late record of generation 7 counts outside the window
    CHECK(window.totals(t, 8).calls == 1);
    CHECK(window.lifetime().calls == 5);
    CHECK(window.lifetime().failures == 3);
}

TEST_CASE("rolling time window: an earlier generation's buckets never come back into a later window") {
    // Each generation shifts its bucket tags by a stride modulo 2^24; three
    // generations on, the tag of a bucket 2,447,765 buckets (41 min with
    // 1 ms buckets) after an old one equals the old one's. The old buckets
    // must be gone by then, in the rings threads write alone and in the
    // shared ones alike.
    constexpr std::int64_t alias = 2'447'765;  // (-3 * 0x9E3779) mod 2^24
    const time_point t{std::chrono::hours{3}};
    const time_point later = t + std::chrono::milliseconds{alias};
    const auto exercise = [&](resil::detail::rolling_time_window& window) {
        for (int i = 0; i < 5; ++i) window.record(t, true, 0);
        CHECK(window.totals(t, 0).calls == 5);
        for (int g = 1; g <= 3; ++g) window.begin_generation();  // three changes of state
        CHECK(window.totals(later, 3).calls == 0);
        window.record(later, false, 3);  // and a new record there counts
        CHECK(window.totals(later, 3).calls == 1);
        CHECK(window.totals(later, 3).failures == 0);
        CHECK(window.lifetime().calls == 6);
    };
    SECTION("a ring written alone") {
        resil::detail::rolling_time_window window{10ms, resil::detail::max_stripes};
        REQUIRE((resil::detail::this_thread_stripe_claim() & resil::detail::shared_stripe_bit) == 0);
        exercise(window);
    }
    SECTION("a shared ring") {
        // Every index taken by threads that wait: the thread after them shares.
        resil::detail::rolling_time_window window{10ms};
        std::latch claimed{static_cast<std::ptrdiff_t>(resil::detail::max_stripes)};
        std::latch done{1};
        std::vector<std::jthread> holders;
        for (std::size_t i = 0; i < resil::detail::max_stripes; ++i)
            holders.emplace_back([&] {
                (void)resil::detail::this_thread_stripe();
                claimed.count_down();
                done.wait();
            });
        claimed.wait();
        bool shared = false;
        std::jthread{[&] {  // the test thread waits: one thread asserts at a time
            shared = (resil::detail::this_thread_stripe_claim() & resil::detail::shared_stripe_bit) != 0;
            if (shared) exercise(window);
        }}.join();
        CHECK(shared);
        done.count_down();
    }
}

TEST_CASE("rolling time window: a thread sharing its index and that index's holder both count exactly") {
    // The two record into one bucket at once, long enough to run side by
    // side on two cores: had the sharer also taken the holder's ring for its
    // own, the two would overwrite each other's counts.
    resil::detail::rolling_time_window window{10s, resil::detail::max_stripes};
    const time_point t{std::chrono::hours{3}};
    constexpr int per_thread = 1'000'000;
    const auto s = resil_test::run_sharer_beside_holder([&] {
        for (int i = 0; i < per_thread; ++i) window.record(t, i % 4 == 0);
    });
    CHECK(s.sharer_shares);
    CHECK(s.holders_writing == 1);
    const auto c = window.totals(t);
    CHECK(c.calls == std::uint64_t{2} * per_thread);
    CHECK(c.failures == std::uint64_t{2} * (per_thread / 4));
    CHECK(window.lifetime().calls == std::uint64_t{2} * per_thread);
}

TEST_CASE("striped counter: adds from many threads over more stripes than cores total exactly") {
    resil::detail::striped_counter counter{16};
    constexpr int threads = 12;
    constexpr int per_thread = 50'000;
    std::atomic<std::uint64_t> seen_while_running{0};
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < per_thread; ++i) counter.add();
            });
        pool.emplace_back([&] { seen_while_running = counter.total(); });  // a read during the adds
    }
    CHECK(seen_while_running.load() <= std::uint64_t{threads} * per_thread);
    CHECK(counter.total() == std::uint64_t{threads} * per_thread);
}

TEST_CASE("rolling time window: records from many threads over many stripes total exactly") {
    resil::detail::rolling_time_window window{10s, 16};
    const time_point t{std::chrono::hours{3}};
    constexpr int threads = 12;
    constexpr int per_thread = 30'000;
    {
        std::vector<std::jthread> pool;
        for (int id = 0; id < threads; ++id)
            pool.emplace_back([&, id] {
                // Three buckets of the window; every third call fails.
                for (int i = 0; i < per_thread; ++i)
                    window.record(t + std::chrono::seconds{(i + id) % 3}, i % 3 == 0);
            });
        pool.emplace_back([&] {
            const auto c = window.totals(t + 2s);  // a read during the records
            CHECK(c.failures <= c.calls);
        });
    }
    const auto c = window.totals(t + 2s);
    CHECK(c.calls == std::uint64_t{threads} * per_thread);
    CHECK(c.failures == std::uint64_t{threads} * (per_thread / 3));
    CHECK(window.lifetime().calls == std::uint64_t{threads} * per_thread);
    // The bucket of t leaves the window at t + 10 s, in every stripe alike.
    const auto later = window.totals(t + 10s);
    CHECK(later.calls == c.calls - std::uint64_t{threads} * (per_thread / 3));
    window.clear();
    CHECK(window.totals(t + 2s).calls == 0);
    CHECK(window.lifetime().calls == std::uint64_t{threads} * per_thread);
}

TEST_CASE("rolling time window: a bucket counts more than 2^20 calls exactly") {
    // 2^20 calls per bucket and stripe used to be the limit: a 24 h window
    // (2.4 h buckets) reaches it at 121 calls a second.
    resil::detail::rolling_time_window window{10s};
    const time_point t{std::chrono::hours{1}};
    constexpr std::uint64_t full = (std::uint64_t{1} << 20) - 1;
    for (std::uint64_t i = 0; i < full + 5; ++i) window.record(t, i % 2 == 0);
    CHECK(window.totals(t).calls == full + 5);
    CHECK(window.totals(t).failures == (full + 5 + 1) / 2);
    CHECK(window.lifetime().calls == full + 5);
    CHECK(window.lifetime().failures == (full + 5 + 1) / 2);
    CHECK(window.totals(t + 1s).calls == full + 5);  // the next bucket still sees it
}

TEST_CASE("circuit breaker: a 24 h window decides exactly past 2^20 calls in one bucket") {
    manual_clock clock;
    breaker_type breaker{{.failure_ratio = 0.5, .window = 24h, .min_calls = 20}, clock};
    constexpr std::uint64_t n = (std::uint64_t{1} << 20) + 1000;
    for (std::uint64_t i = 0; i < n; ++i) {
        auto p = breaker.try_acquire();
        breaker.record(p, verdict::success);
    }
    for (std::uint64_t i = 0; i < n; ++i) {
        auto p = breaker.try_acquire();
        breaker.record(p, verdict::retryable);
    }
    auto m = breaker.metrics();
    CHECK(m.calls_in_window == 2 * n);
    CHECK(m.failures_in_window == n);
    CHECK(breaker.state() == circuit_state::closed);  // exactly half failed
    call(breaker, verdict::retryable);                // now strictly more than half
    CHECK(breaker.state() == circuit_state::open);
}

TEST_CASE("rolling count window: counts the last N calls and survives clear()") {
    resil::detail::rolling_count_window window{100};
    for (int i = 0; i < 250; ++i) window.record(i % 5 == 0);  // every fifth fails
    CHECK(window.totals().calls == 100);
    CHECK(window.totals().failures == 20);
    window.clear();
    CHECK(window.totals().calls == 0);
    CHECK(window.totals().failures == 0);
    const auto c = window.record(true);
    CHECK(c.calls == 1);
    CHECK(c.failures == 1);
    CHECK(window.lifetime_calls() == 251);
}

TEST_CASE("coarse clock: on the steady clock's time line, at most a little behind it") {
    const resil::coarse_steady_clock coarse;
    const resil::steady_clock steady;
    const auto before = steady.now();
    const auto reading = coarse.now();
    const auto after = steady.now();
    CHECK(reading <= after);
    CHECK(reading >= before - 1s);  // one tick behind (ms), with room for a busy machine
    CHECK(coarse.now() >= reading);
#if defined(__linux__)
    CHECK(resil::coarse_steady_clock::resolution() > duration::zero());
    CHECK(resil::coarse_steady_clock::resolution() <= duration{100ms});
#endif
    // A breaker runs on it like on any clock.
    resil::basic_circuit_breaker<resil::coarse_steady_clock> breaker{{.min_calls = 1}};
    call(breaker, verdict::retryable);
    CHECK(breaker.state() == circuit_state::open);
    const auto wait = breaker.try_acquire().retry_after();
    REQUIRE(wait.has_value());
    CHECK(*wait <= duration{30s});
    CHECK(*wait > duration{29s});
}

TEST_CASE("circuit breaker: isolating a breaker that is already open reports no change of state") {
    manual_clock clock;
    std::vector<resil::events::breaker_state_changed> changes;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures,
                          .consecutive_failures = 1,
                          .on_state_change = [&](const resil::events::breaker_state_changed& e) { changes.push_back(e); }},
                         clock};
    auto p = breaker.try_acquire();
    breaker.record(p, verdict::retryable);
    REQUIRE(breaker.state() == circuit_state::open);
    REQUIRE(changes.size() == 1);
    breaker.isolate();
    CHECK(breaker.isolated());
    CHECK(breaker.state() == circuit_state::open);
    CHECK(changes.size() == 1);  // open -> open is not a change
    clock.advance(1h);
    CHECK_FALSE(breaker.try_acquire().admitted());  // held open past open_for
    breaker.reset();
    CHECK(breaker.state() == circuit_state::closed);
    REQUIRE(changes.size() == 2);
    CHECK(changes[1].from == circuit_state::open);
    CHECK(changes[1].to == circuit_state::closed);
}

namespace {
// A manual clock that runs an action (once) when it is next read: it puts
// another thread's work exactly between a breaker's clock read and what follows.
class hooked_clock {
public:
    [[nodiscard]] time_point now() const noexcept {
        if (auto action = std::exchange(*hook_, nullptr)) action();
        return inner_.now();
    }
    bool sleep_for(duration d, std::stop_token stop = {}) const noexcept { return inner_.sleep_for(d, stop); }
    void advance(duration d) const noexcept { inner_.advance(d); }
    void on_next_read(std::function<void()> action) const { *hook_ = std::move(action); }

private:
    manual_clock inner_;
    std::shared_ptr<std::function<void()>> hook_ = std::make_shared<std::function<void()>>();
};
static_assert(resil::clock<hooked_clock>);
}  // namespace

TEST_CASE("circuit breaker: a result recorded while reset() runs stays out of the window after it") {
    hooked_clock clock;
    resil::basic_circuit_breaker<hooked_clock> breaker{{.failure_ratio = 0.5, .min_calls = 2}, clock};
    auto late = breaker.try_acquire();
    REQUIRE(late.admitted());
    // The record reads the state (closed), then the clock; reset() runs in
    // between, as if on another thread.
    clock.on_next_read([&] { breaker.reset(); });
    breaker.record(late, verdict::retryable);
    auto m = breaker.metrics();
    CHECK(m.calls_in_window == 0);
    CHECK(m.failures_in_window == 0);
    CHECK(m.calls == 1);  // counted in the lifetime totals all the same
    // One failure after the reset is 1 call, below min_calls: still closed.
    // Had the late failure counted, 2 of 2 would have opened it.
    call(breaker, verdict::retryable);
    CHECK(breaker.metrics().calls_in_window == 1);
    CHECK(breaker.state() == circuit_state::closed);
}

TEST_CASE("circuit breaker: results racing reset() never land in the window after it") {
    constexpr int threads = 2;
    constexpr int rounds = 200;
    constexpr int per_round = 40;
    // Its slow reads widen the gap between a record's look at the state and
    // its write to the window, where a reset() lands.
    resil::basic_circuit_breaker<slow_clock> breaker{{.failure_ratio = 0.5, .window = 10s, .min_calls = 1'000'000}};
    using permit_type = resil::basic_circuit_breaker<slow_clock>::permit;
    std::barrier sync(threads + 1);
    std::atomic<int> recorded{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            std::vector<permit_type> permits(per_round);
            for (int r = 0; r < rounds; ++r) {
                for (auto& p : permits) p = breaker.try_acquire();  // all before the reset
                sync.arrive_and_wait();                              // 1: admitted
                for (auto& p : permits) {
                    breaker.record(p, verdict::retryable);
                    recorded.fetch_add(1, std::memory_order_relaxed);
                }
                sync.arrive_and_wait();  // 2: all recorded
            }
        });
    }
    int dirty_rounds = 0;
    for (int r = 0; r < rounds; ++r) {
        recorded.store(0);
        sync.arrive_and_wait();  // 1
        // Reset while the threads are recording: once they are under way, and
        // at the latest when they are done (bounded either way).
        while (recorded.load(std::memory_order_relaxed) < per_round / 2) std::this_thread::yield();
        breaker.reset();
        sync.arrive_and_wait();  // 2
        // Every result belongs to calls admitted before this reset.
        const auto m = breaker.metrics();
        if (m.calls_in_window != 0 || m.failures_in_window != 0) ++dirty_rounds;
        breaker.reset();  // a clean start for the next round
    }
    for (auto& th : pool) th.join();
    CHECK(dirty_rounds == 0);
    CHECK(breaker.metrics().calls == std::uint64_t{threads} * rounds * per_round);
}

TEST_CASE("circuit breaker: state changes are numbered one by one, in the events and in metrics()") {
    manual_clock clock;
    std::vector<resil::events::breaker_state_changed> changes;
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures,
                          .consecutive_failures = 1,
                          .open_for = 1s,
                          .half_open_probes = 1,
                          .on_state_change = [&](const resil::events::breaker_state_changed& e) { changes.push_back(e); }},
                         clock};
    call(breaker, verdict::retryable);  // 1: closed -> open
    clock.advance(1s);
    call(breaker, verdict::retryable);  // 2: open -> half_open, 3: half_open -> open
    clock.advance(1s);
    call(breaker, verdict::success);  // 4: open -> half_open, 5: half_open -> closed
    breaker.reset();                  // closed -> closed: no change, no number
    breaker.isolate();                // 6: closed -> open
    breaker.isolate();                // no change
    breaker.reset();                  // 7: open -> closed
    REQUIRE(changes.size() == 7);
    for (std::size_t i = 0; i < changes.size(); ++i) CHECK(changes[i].generation == i + 1);
    CHECK(breaker.metrics().transitions == 7);
}

TEST_CASE("circuit breaker: listeners on racing threads can put state changes back in order") {
    constexpr int threads = 4;
    constexpr int per_thread = 20'000;
    manual_clock clock;
    std::mutex seen_mutex;  // the test's listener, not the breaker, takes a lock
    std::vector<resil::events::breaker_state_changed> seen;
    seen.reserve(4 * threads * per_thread);
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures,
                          .consecutive_failures = 2,
                          .open_for = 1ms,
                          .half_open_probes = 2,
                          .on_state_change =
                              [&](const resil::events::breaker_state_changed& e) {
                                  const std::lock_guard lock(seen_mutex);
                                  seen.push_back(e);
                              }},
                         clock};
    std::latch start(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            start.arrive_and_wait();
            std::uint32_t seed = 777u + static_cast<std::uint32_t>(t);
            for (int i = 0; i < per_thread; ++i) {
                clock.advance(100us);
                seed = seed * 1664525u + 1013904223u;
                if (t == 0 && i % 1000 == 999) breaker.reset();
                if (auto p = breaker.try_acquire())
                    breaker.record(p, (seed >> 8) % 100 < 40 ? verdict::retryable : verdict::success);
            }
        });
    }
    for (auto& th : pool) th.join();
    REQUIRE(seen.size() == breaker.metrics().transitions);
    REQUIRE(seen.size() > 100);
    std::sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.generation < b.generation; });
    int gaps = 0;
    int broken_chain = 0;
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (seen[i].generation != i + 1) ++gaps;
        // In order, each change starts from the state the one before ended in.
        if (i > 0 && seen[i].from != seen[i - 1].to) ++broken_chain;
    }
    CHECK(gaps == 0);
    CHECK(broken_chain == 0);
    CHECK(seen.front().from == circuit_state::closed);
    CHECK(seen.back().to == breaker.state());
}

TEST_CASE("circuit breaker: a rejection in the instant of a change of state says retry soon, never zero") {
    // A large count window makes reset() (which clears it) take a while, so
    // callers often arrive while the change is claimed but not yet published.
    constexpr int callers = 2;
    constexpr int rounds = 2000;
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::count_window,
                          .failure_ratio = 0.0,
                          .window_calls = 1'000'000,
                          .min_calls = 1},
                         clock};
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> rejections{0};
    std::atomic<int> zero{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < callers; ++t) {
        pool.emplace_back([&] {
            while (!done.load()) {
                auto p = breaker.try_acquire();
                if (p) continue;  // dropped unrecorded: a closed permit decides nothing
                rejections.fetch_add(1);
                const auto wait = p.retry_after();
                if (wait && *wait <= duration::zero()) zero.fetch_add(1);
            }
        });
    }
    for (int r = 0; r < rounds; ++r) {
        call(breaker, verdict::retryable);  // opens it
        breaker.reset();                    // open -> (clearing the window) -> closed
    }
    done.store(true);
    for (auto& th : pool) th.join();
    CHECK(zero.load() == 0);
    CHECK(rejections.load() > 0);
    // Through the pipeline's path too: a rejection's hint is the open time left.
    call(breaker, verdict::retryable);
    const auto wait = breaker.try_acquire().retry_after();
    REQUIRE(wait.has_value());
    CHECK(*wait == duration{30s});
    CHECK(breaker_type::retry_soon > duration::zero());
}

// ---- every mode counts each closed period apart ----

TEST_CASE("rolling count window: a record of an earlier generation stays out of the window cleared after it") {
    resil::detail::rolling_count_window window{10};
    window.clear(7);  // the breaker's closed period of generation 7
    for (int i = 0; i < 4; ++i) window.record(true, 7);
    CHECK(window.totals().failures == 4);
    window.clear(8);  // the breaker changed state: generation 8's window now
    // Records that read the state in generation 7 and land only now.
    const auto late = window.record(true, 7);
    CHECK(late.calls == 0);
    CHECK(late.failures == 0);
    window.record(false, 7);
    CHECK(window.totals().calls == 0);
    CHECK(window.totals().failures == 0);
    // Generation 8's own records count; a late success does not clear their bits.
    const auto fresh = window.record(true, 8);
    CHECK(fresh.calls == 1);
    CHECK(fresh.failures == 1);
    for (int i = 0; i < 25; ++i) window.record(false, 7);
    CHECK(window.totals().calls == 1);
    CHECK(window.totals().failures == 1);
    CHECK(window.lifetime_calls() == 4 + 2 + 1 + 25);  // every call, in a window or not
}

TEST_CASE("rolling count window: the last N calls are counted exactly, however many went round the ring") {
    for (const std::uint32_t size : {1u, 2u, 31u, 32u, 33u, 64u, 100u}) {
        resil::detail::rolling_count_window window{size};
        std::deque<bool> model;  // the last `size` results
        std::uint32_t seed = 12345u + size;
        for (int i = 0; i < 1000; ++i) {
            seed = seed * 1664525u + 1013904223u;
            const bool failed = (seed >> 8) % 3 == 0;
            const auto c = window.record(failed);
            model.push_back(failed);
            if (model.size() > size) model.pop_front();
            const auto expected = static_cast<std::uint64_t>(std::count(model.begin(), model.end(), true));
            CHECK(c.calls == model.size());
            CHECK(c.failures == expected);
        }
        CHECK(window.lifetime_calls() == 1000);
        window.clear(1);
        CHECK(window.lifetime_calls() == 1000);
        CHECK(window.totals().calls == 0);
    }
}

TEST_CASE("failure run: a record of an earlier generation neither adds to the run nor ends it") {
    resil::detail::failure_run run;
    run.clear(3);
    CHECK(run.record(true, 3) == 1);
    CHECK(run.record(true, 3) == 2);
    run.clear(4);
    CHECK(run.record(true, 3) == 0);  // read the state before the change, landed after it
    CHECK(run.current() == 0);
    CHECK(run.record(true, 4) == 1);
    CHECK(run.record(true, 4) == 2);
    CHECK(run.record(false, 3) == 0);  // a late success does not end generation 4's run
    CHECK(run.current() == 2);
    CHECK(run.record(false, 4) == 0);  // its own does
    CHECK(run.current() == 0);
}

namespace {
// Threads record results of calls admitted before each round's change of
// state, while `change` runs on the main thread; once all are recorded,
// `check` looks at the breaker. Returns the rounds `check` found wrong.
struct race_size {
    int threads = 2;
    int rounds = 400;
    int per_round = 400;  // results per thread and round
    // Each thread records half its results, then waits for the change to
    // begin before it records the rest (most of them race the change itself).
    // Off: the threads never wait, and the change comes while they are halfway.
    bool meet_the_change = true;
};

template <class Breaker, class Change, class Check>
int race_records_with(Breaker& breaker, race_size size, verdict v, Change change, Check check) {
    const int threads = size.threads;
    const int rounds = size.rounds;
    const int per_round = size.per_round;
    using permit_type = typename Breaker::permit;
    std::barrier sync(static_cast<std::ptrdiff_t>(threads) + 1);
    std::atomic<int> recorded{0};
    std::atomic<bool> changing{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            std::vector<permit_type> permits(static_cast<std::size_t>(per_round));
            for (int r = 0; r < rounds; ++r) {
                for (auto& p : permits) p = breaker.try_acquire();  // all before the change
                sync.arrive_and_wait();                              // 1: admitted
                for (int i = 0; i < per_round; ++i) {
                    if (i == per_round / 2 && size.meet_the_change)
                        while (!changing.load(std::memory_order_acquire)) std::this_thread::yield();
                    breaker.record(permits[static_cast<std::size_t>(i)], v);
                    recorded.fetch_add(1, std::memory_order_relaxed);
                }
                sync.arrive_and_wait();  // 2: all recorded
                sync.arrive_and_wait();  // 3: checked, closed again
            }
        });
    }
    int wrong_rounds = 0;
    for (int r = 0; r < rounds; ++r) {
        recorded.store(0);
        changing.store(false);
        sync.arrive_and_wait();  // 1
        // Once the threads are halfway (bounded: they get there on their own).
        while (recorded.load(std::memory_order_relaxed) < threads * (per_round / 2)) std::this_thread::yield();
        changing.store(true, std::memory_order_release);
        change();
        sync.arrive_and_wait();  // 2
        if (!check()) ++wrong_rounds;
        breaker.reset();         // a clean start for the next round
        sync.arrive_and_wait();  // 3
    }
    for (auto& th : pool) th.join();
    return wrong_rounds;
}
}  // namespace

TEST_CASE("circuit breaker: count window: results racing reset() never land in the window after it") {
    // A large window: reset() takes a while to clear it, which widens the race.
    breaker_type breaker{{.mode = resil::breaker_mode::count_window, .window_calls = 200'000, .min_calls = 200'000},
                         manual_clock{}};
    std::uint64_t fresh = 0;
    const race_size size{};
    const int dirty_rounds = race_records_with(
        breaker, size, verdict::retryable,
        [&] {
            breaker.reset();
            call(breaker, verdict::success);  // the window's only call
            fresh += 1;
        },
        [&] {
            const auto m = breaker.metrics();
            return m.calls_in_window == 1 && m.failures_in_window == 0;
        });
    CHECK(dirty_rounds == 0);
    // Every result counted in the lifetime totals all the same.
    CHECK(breaker.metrics().calls == std::uint64_t(size.threads * size.rounds * size.per_round) + fresh);
}

TEST_CASE("circuit breaker: consecutive failures: results racing reset() neither add to the run after it nor end it") {
    breaker_type breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 1'000'000},
                         manual_clock{}};
    // Late failures would lengthen the fresh run, late successes end it.
    for (const auto late : {verdict::retryable, verdict::success}) {
        INFO((late == verdict::success ? "late successes" : "late failures"));
        const int dirty_rounds = race_records_with(
            breaker, race_size{.rounds = 2000, .per_round = 100}, late,
            [&] {
                breaker.reset();
                calls(breaker, 3, verdict::retryable);  // the fresh run
            },
            [&] { return breaker.metrics().failures_in_window == 3; });
        CHECK(dirty_rounds == 0);
    }
}

TEST_CASE("circuit breaker: count window: results racing a half-open -> closed change never land in the window after it") {
    manual_clock clock;
    breaker_type breaker{{.mode = resil::breaker_mode::count_window,
                          .failure_ratio = 0.0,
                          .window_calls = 200'000,
                          .min_calls = 1,
                          .open_for = 1s,
                          .half_open_probes = 1},
                         clock};
    // More threads than cores: a thread preempted between a record's look at
    // the state (closed) and its write to the window outlasts the whole
    // closed -> open -> half-open -> closed below.
    const int dirty_rounds = race_records_with(
        breaker, race_size{.threads = 6, .rounds = 2000, .per_round = 100, .meet_the_change = false}, verdict::success,
        [&] {
            call(breaker, verdict::retryable);  // opens it
            REQUIRE(breaker.state() == circuit_state::open);
            clock.advance(1s);
            auto probe = breaker.try_acquire();
            REQUIRE(probe.probe());
            breaker.record(probe, verdict::success);  // closes it with an empty window
            REQUIRE(breaker.state() == circuit_state::closed);
        },
        [&] {
            const auto m = breaker.metrics();
            return breaker.state() == circuit_state::closed && m.calls_in_window == 0 && m.failures_in_window == 0;
        });
    CHECK(dirty_rounds == 0);
}
