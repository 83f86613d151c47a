// Protecting a dependency: a gateway pod that calls a model server, with a
// bound on requests in flight (MAX_INFLIGHT = 16: the 17th is refused at the
// door) and a circuit breaker in front of the model (when most calls fail,
// stop calling and answer at once until a probe says it is back).
//
//   $ ./example_protect_dependency
//
// Why both. A slow dependency is worse than a dead one: every request waits
// its full timeout, holding memory, a connection and a slot. The limit keeps
// that from taking the pod down — requests beyond 16 get a 503 in microseconds
// instead of queueing without bound until their callers are long gone. The
// breaker then spares everyone the wait: once open, requests are answered at
// once (503 with Retry-After: the time to the breaker's next probe), the pod's
// slots stay free, and the model gets room to recover.
//
// The traffic is simulated on resil's manual clock: 100 requests/s (one every
// 10 ms), each taking 40 ms of the gateway's own work plus the model call,
// capped at 150 ms. An event queue holds the requests in flight, each with its
// two permits (a slot and the breaker's) until its simulated end, so the
// output is the same on every run. What the reader should see:
//   part 1: 16 slots taken; the 17th request is shed at once (0 µs of
//       simulated time; the real cost, printed on stderr, is well under a
//       microsecond: one compare-and-swap).
//   part 2, per second:
//     0-2 s   the model answers in 40 ms: 80 ms per request, 8 in flight.
//     3 s     it hangs: each request now holds its slot 40 + 150 = 190 ms.
//             100/s × 0.19 s = 19 would be in flight, but there are 16 slots:
//             3 of every 19 arrivals (≈ 16 %) are shed; the rest get a 504.
//     6 s     failures pass 50 % of the calls in the breaker's 10 s window
//             (300 successes from the healthy seconds against ~84 failures
//             a second): it opens. From then on every request gets a 503 with
//             Retry-After at once, and nothing is in flight.
//     36 s    30 s later, half-open: 5 probes find the model healthy again
//             (it recovered at 25 s, unseen while open); the breaker closes.
//   part 3: what callers got while it was open: 503 and Retry-After counting
//       down 30, 20, 10 s; answered in 0 µs.
#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/events.hpp>
#include <resil/outcome.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

using clock_type = resil::testing::manual_clock;
using breaker_type = resil::basic_circuit_breaker<clock_type>;

constexpr std::uint32_t max_inflight = 16;
constexpr resil::duration gateway_work = 40ms;  // receive, decode, resize
constexpr resil::duration model_cap = 150ms;    // the model call's timeout

double seconds(resil::duration d) { return std::chrono::duration<double>(d).count(); }

// The Retry-After header value: whole seconds, rounded up.
long long retry_after_header(resil::duration wait) {
    return static_cast<long long>(std::chrono::ceil<std::chrono::seconds>(wait).count());
}

void part_one_the_17th() {
    std::puts("part 1: MAX_INFLIGHT = 16");
    const clock_type clock;
    const resil::concurrency_limit limit{{.max_in_flight = max_inflight}};

    // Sixteen requests in flight: each holds its permit while it works.
    std::vector<resil::concurrency_limit::permit> working;
    for (std::uint32_t i = 0; i < max_inflight; ++i) working.push_back(limit.try_acquire());
    std::printf("  16 requests working: %u in flight\n", limit.in_flight());

    const auto before = clock.now();
    const auto seventeenth = limit.try_acquire();  // never waits, never queues
    std::printf("  the 17th: %s -> 503, answered after %.0f µs of simulated time (shed so far: %llu)\n",
                seventeenth ? "admitted" : "shed", seconds(clock.now() - before) * 1e6,
                static_cast<unsigned long long>(limit.shed()));

    // The real cost of a shed, on stderr: it depends on the machine, so it
    // stays out of the output the tests compare.
    resil::duration best = 1h;
    for (int i = 0; i < 1000; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto p = limit.try_acquire();
        const auto t1 = std::chrono::steady_clock::now();
        if (!p) best = std::min<resil::duration>(best, t1 - t0);
    }
    std::fflush(stdout);
    std::fprintf(stderr, "  (on this machine a shed takes %lld ns, best of 1000)\n",
                 static_cast<long long>(best.count()));

    clock.advance(190ms);
    working.erase(working.begin());  // the first one finished: its slot is free
    const auto next = limit.try_acquire();
    std::printf("  190 ms later one finishes; the next request is %s (%u in flight)\n\n",
                next ? "admitted" : "shed", limit.in_flight());
}

// One request in flight (the queue keys it by its end): its slot and its breaker permit.
struct in_flight {
    resil::concurrency_limit::permit slot;
    breaker_type::permit call;
    resil::verdict verdict;  // how the model call will have gone
};

// A row of the per-second table.
struct second_row {
    int arrived = 0, ok = 0, timed_out = 0, shed = 0, open = 0;
    std::uint32_t peak_in_flight = 0;
    resil::circuit_state state = resil::circuit_state::closed;
    friend bool operator==(const second_row&, const second_row&) = default;
};

void part_two_the_gateway() {
    std::puts("part 2: 100 requests/s; the model hangs at 3 s and recovers at 25 s (unseen until a probe)");
    const clock_type clock;
    const auto start = clock.now();
    const resil::concurrency_limit limit{{.max_in_flight = max_inflight}};
    // The classic breaker: more than 50 % of at least 20 calls in 10 s failed
    // -> open 30 s -> 5 probes.
    std::vector<std::string> transitions;
    breaker_type breaker{{.failure_ratio = 0.5,
                          .window = 10s,
                          .min_calls = 20,
                          .open_for = 30s,
                          .half_open_probes = 5,
                          .on_state_change =
                              [&](const resil::events::breaker_state_changed& e) {
                                  char line[160];
                                  std::snprintf(line, sizeof line, "  at %6.3f s: %s -> %s", seconds(e.at - start),
                                                std::string(resil::to_string(e.from)).c_str(),
                                                std::string(resil::to_string(e.to)).c_str());
                                  std::string text = line;
                                  if (e.to == resil::circuit_state::open && e.calls_in_window > 0) {
                                      std::snprintf(line, sizeof line, " (%.1f %% of %llu calls in the window failed)",
                                                    100.0 * e.failure_ratio,
                                                    static_cast<unsigned long long>(e.calls_in_window));
                                      text += line;
                                  }
                                  transitions.push_back(text);
                              }},
                         clock};

    const auto model_hung = [&](resil::time_point t) { return t - start >= 3s && t - start < 25s; };

    std::multimap<resil::time_point, in_flight> working;  // by end time; equal ends keep arrival order
    std::vector<second_row> rows;
    std::vector<std::string> open_samples;  // what callers saw while it was open
    const auto row = [&](resil::time_point t) -> second_row& {
        const auto s = static_cast<std::size_t>(std::chrono::floor<std::chrono::seconds>(t - start).count());
        if (rows.size() <= s) rows.resize(s + 1);
        return rows[s];
    };

    // Requests that end by `t` answer their callers and report to the breaker.
    const auto finish_until = [&](resil::time_point t) {
        while (!working.empty() && working.begin()->first <= t) {
            auto done = working.extract(working.begin());
            clock.advance_to(done.key());
            auto& r = row(done.key());
            ++(done.mapped().verdict == resil::verdict::success ? r.ok : r.timed_out);  // 200, or 504
            breaker.record(done.mapped().call, done.mapped().verdict);
            r.state = breaker.state();
            // done.mapped().slot is released when `done` goes: the slot frees up.
        }
    };

    const auto end = start + 40s;
    for (auto t = start; t < end; t += 10ms) {
        finish_until(t);
        clock.advance_to(t);
        auto& r = row(t);
        ++r.arrived;

        // At the door: a slot, or 503 at once.
        auto slot = limit.try_acquire();
        if (!slot) {
            ++r.shed;
            continue;
        }
        // In front of the model: the breaker's permit, or 503 with Retry-After at once.
        auto call = breaker.try_acquire();
        r.state = breaker.state();
        if (!call) {
            ++r.open;
            const auto wait = call.retry_after().value_or(resil::duration::zero());
            const auto since = t - start;
            if (open_samples.size() < 3 && since >= 7s + 10s * static_cast<int>(open_samples.size())) {
                char line[160];
                std::snprintf(line, sizeof line,
                              "  at %6.3f s: 503 Service Unavailable · Retry-After: %lld  (next probe in %.2f s); "
                              "answered after 0 µs",
                              seconds(since), retry_after_header(wait), seconds(wait));
                open_samples.emplace_back(line);
            }
            continue;  // `slot` goes: the request never held the pod
        }
        const bool hung = model_hung(t);
        const auto takes = gateway_work + (hung ? model_cap : 40ms);
        working.emplace(t + takes, in_flight{std::move(slot), std::move(call),
                                             hung ? resil::verdict::ambiguous : resil::verdict::success});
        r.peak_in_flight = std::max(r.peak_in_flight, limit.in_flight());
    }
    finish_until(end - 1ns);
    // The requests still working at the end are left out of the table.
    for (auto& entry : working) breaker.release(entry.second.call);
    working.clear();

    std::puts("second  arrived  200 ok  504 timeout  503 shed  503 open  peak in flight  breaker at its end");
    int same = 0;  // identical seconds are folded into one line
    for (std::size_t s = 0; s < rows.size(); ++s) {
        const auto& x = rows[s];
        if (s > 0 && x == rows[s - 1]) {
            ++same;
            continue;
        }
        if (same > 0) std::printf("   ... the same for %d more second%s\n", same, same == 1 ? "" : "s");
        same = 0;
        std::printf("%6zu  %7d  %6d  %11d  %8d  %8d  %14u  %s\n", s, x.arrived, x.ok, x.timed_out, x.shed, x.open,
                    x.peak_in_flight, std::string(resil::to_string(x.state)).c_str());
    }
    if (same > 0) std::printf("   ... the same for %d more second%s\n", same, same == 1 ? "" : "s");

    const auto m = breaker.metrics();
    std::printf("shed at the door: %llu of %llu requests; the breaker rejected %llu; transitions: %llu\n",
                static_cast<unsigned long long>(limit.shed()),
                static_cast<unsigned long long>(limit.shed() + limit.admitted()),
                static_cast<unsigned long long>(m.rejections), static_cast<unsigned long long>(m.transitions));

    std::puts("the breaker's changes of state:");
    for (const auto& line : transitions) std::puts(line.c_str());

    std::puts("\npart 3: what a caller saw while the breaker was open");
    for (const auto& line : open_samples) std::puts(line.c_str());
}

}  // namespace

int main() {
    part_one_the_17th();
    part_two_the_gateway();
}
