// Adaptive limits under a capacity drop: a dependency serving 100 requests a
// second loses 60% of its capacity at t = 60 s for two minutes, while a client
// keeps offering 80 a second. Six ways to call it, compared:
//
//   $ ./example_adaptive_simulation [--svg docs/adaptive_simulation.svg]
//
//   none        every request is sent
//   fixed 16    resil::concurrency_limit, MAX_INFLIGHT = 16 (a guess)
//   AIMD        resil::adaptive_limit, AIMD (+1 per round, x0.9 on 503/timeout)
//   Gradient2   resil::adaptive_limit, Gradient2 (latency against its long average)
//   SRE K=2     resil::adaptive_throttle (reject locally, p = (req - 2 acc) / (req + 1))
//   SRE 10 s    the same with a 10 s window instead of the default 2 min
//
// Then Gradient2 and AIMD with other options, among them the rules of
// Netflix's concurrency-limits where resil's defaults differ from them
// (Gradient2Limit's drops read as latency samples, AIMDLimit's +1 per success
// and cut on every drop).
//
// The dependency is one FIFO server: 10 ms of work per request (25 ms during
// the drop), 20 ms of network, a queue of at most 100 (then 503 at once).
// The client waits 250 ms, then gives up — but the server still does the
// work of a request it has queued: wasted capacity, which is how a fixed
// limit that is too high collapses (the client's slot is free again while its
// abandoned request still sits in the queue).
//
// Everything runs on resil's manual clock with a seeded engine and integer
// nanoseconds (no transcendental functions), so the output is the same on
// every run and every machine. The policies are driven through their decision
// cores (try_acquire / complete / record), as an asynchronous caller does.
#include <resil/adaptive_limit.hpp>
#include <resil/adaptive_throttle.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/jitter.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "support/svg.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::time_point;
using resil::testing::manual_clock;

namespace {

constexpr int seconds_total = 420;
constexpr duration drop_start = 60s, drop_end = 180s;
constexpr duration timeout = 250ms;
constexpr duration network = 20ms;  // both ways together
constexpr std::size_t server_queue = 100;
constexpr duration mean_gap = 12'500us;  // 80 requests a second

enum class strategy { none, fixed, aimd, gradient2, sre, sre_short };
constexpr std::array strategies{strategy::none, strategy::fixed, strategy::aimd, strategy::gradient2, strategy::sre,
                                strategy::sre_short};

const char* name_of(strategy s) {
    switch (s) {
        case strategy::none: return "none";
        case strategy::fixed: return "fixed 16";
        case strategy::aimd: return "AIMD";
        case strategy::gradient2: return "Gradient2";
        case strategy::sre: return "SRE K=2";
        case strategy::sre_short: return "SRE 10 s";
    }
    return "?";
}

// What one second looked like, for the plot.
struct second_stats {
    int offered = 0, sent = 0, ok = 0;
    std::uint32_t limit = 0;  // at the end of the second (0: no limit)
    duration p99{};           // of the answers received that second (timeouts count as 250 ms)
};

struct result {
    strategy which{};
    std::vector<second_stats> seconds;
    int ok_in_drop = 0, sent_in_drop = 0, accepted_in_drop = 0, timeouts = 0, rejected_locally = 0;
    duration p50_in_drop{}, p99_in_drop{};  // of every answer received from 60 s to 180 s (timeouts as 250 ms)
    std::optional<int> recovered_after;  // seconds after t = 180 s
};

duration percentile_of(std::vector<duration> v, std::size_t pct) {
    if (v.empty()) return duration::zero();
    const auto k = (v.size() * pct + 99) / 100 - 1;  // nearest rank
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

// What a run may change: the adaptive limits' options (the documented
// defaults unless a variant below asks for others), and how an overload
// reaches them.
struct run_options {
    resil::adaptive_limit_options aimd{};
    resil::adaptive_limit_options gradient{.algorithm = resil::adaptive_algorithm::gradient2};
    // concurrency-limits' Gradient2Limit reads no drop: a 503 or a timeout is
    // one more latency sample, never a cut.
    bool overload_as_latency_sample = false;
};

// One run: arrivals, the server's FIFO, the client's answers, in time order.
result simulate(strategy which, const run_options& run = {}) {
    manual_clock clock;
    const time_point t0 = clock.now();
    resil::jitter_engine rng{2024};

    resil::concurrency_limit fixed{{.max_in_flight = 16}};
    using limit_t = resil::basic_adaptive_limit<manual_clock>;
    limit_t aimd{run.aimd, clock};
    limit_t gradient{run.gradient, clock};
    resil::basic_adaptive_throttle<manual_clock> throttle{
        {.k = 2.0, .window = which == strategy::sre_short ? duration{10s} : duration{2min}}, clock, 1};
    const bool throttled = which == strategy::sre || which == strategy::sre_short;
    limit_t* adaptive = which == strategy::aimd ? &aimd : which == strategy::gradient2 ? &gradient : nullptr;

    struct request {
        time_point sent{};
        resil::concurrency_limit::permit fixed_permit;
        limit_t::permit limit_permit;
        resil::basic_adaptive_throttle<manual_clock>::ticket ticket;
    };
    std::vector<request> requests;
    requests.reserve(30'000);

    // The events: an arrival (id < 0), or a request's answer reaching the client.
    struct event {
        time_point at;
        int id;        // the request, or -1 for the next arrival
        bool overload; // a 503 (or a timeout)
        bool timed_out;
        bool operator>(const event& o) const { return at != o.at ? at > o.at : id > o.id; }
    };
    std::priority_queue<event, std::vector<event>, std::greater<>> events;
    events.push({t0, -1, false, false});

    time_point server_free = t0;
    std::deque<time_point> server_finishes;  // of requests queued or in service
    result r;
    r.which = which;
    r.seconds.resize(seconds_total);
    std::vector<std::vector<duration>> latencies(seconds_total);
    std::vector<duration> drop_latencies;
    const time_point end = t0 + std::chrono::seconds{seconds_total};

    while (!events.empty()) {
        const auto e = events.top();
        events.pop();
        if (e.at >= end) break;
        clock.advance_to(e.at);
        const auto now = e.at;
        const auto since = now - t0;
        const auto second = static_cast<std::size_t>(since / 1s);
        const bool in_drop = since >= drop_start && since < drop_end;
        auto& sec = r.seconds[second];
        sec.limit = adaptive ? adaptive->limit() : which == strategy::fixed ? fixed.limit() : 0;

        if (e.id < 0) {  // an arrival: decide, maybe send
            events.push({now + mean_gap / 2 + duration{static_cast<duration::rep>(rng() % static_cast<std::uint64_t>(mean_gap.count()))}, -1, false, false});
            ++sec.offered;
            request q;
            q.sent = now;
            bool admitted = true;
            switch (which) {
                case strategy::none: break;
                case strategy::fixed: admitted = static_cast<bool>(q.fixed_permit = fixed.try_acquire()); break;
                case strategy::aimd:
                case strategy::gradient2: admitted = static_cast<bool>(q.limit_permit = adaptive->try_acquire(now)); break;
                case strategy::sre:
                case strategy::sre_short: admitted = static_cast<bool>(q.ticket = throttle.try_acquire(now, resil::unit_interval(rng))); break;
            }
            if (!admitted) {
                ++r.rejected_locally;
                continue;
            }
            ++sec.sent;
            if (in_drop) ++r.sent_in_drop;
            // The server: a 503 at once when its queue is full, else FIFO.
            const auto arrives = now + network / 2;
            while (!server_finishes.empty() && server_finishes.front() <= arrives) server_finishes.pop_front();
            event answer{};
            answer.id = static_cast<int>(requests.size());
            if (server_finishes.size() >= server_queue) {
                answer.at = arrives + 1ms + network / 2;
                answer.overload = true;
            } else {
                const auto start = std::max(arrives, server_free);
                const auto in_drop_then = start - t0 >= drop_start && start - t0 < drop_end;
                server_free = start + (in_drop_then ? 25ms : 10ms);
                server_finishes.push_back(server_free);
                answer.at = server_free + network / 2;
            }
            if (answer.at - now > timeout) {  // the client stops waiting; the server works on
                answer = {now + timeout, answer.id, true, true};
            }
            requests.push_back(std::move(q));
            events.push(answer);
            continue;
        }

        // An answer (or a timeout) for request e.id.
        auto& q = requests[static_cast<std::size_t>(e.id)];
        const auto latency = now - q.sent;
        latencies[second].push_back(latency);
        if (in_drop) drop_latencies.push_back(latency);
        const bool ok = !e.overload;
        if (ok) {
            ++sec.ok;
            if (q.sent - t0 >= drop_start && q.sent - t0 < drop_end) ++r.ok_in_drop;
        }
        if (e.timed_out) ++r.timeouts;
        if (!e.overload && q.sent - t0 >= drop_start && q.sent - t0 < drop_end) ++r.accepted_in_drop;
        const auto signal = e.overload ? resil::load_signal::overload : resil::load_signal::accepted;
        q.fixed_permit.release();
        if (adaptive)
            adaptive->complete(std::move(q.limit_permit),
                               run.overload_as_latency_sample ? resil::load_signal::accepted : signal, now);
        if (throttled) throttle.record(std::move(q.ticket), signal, now);
    }

    for (int s = 0; s < seconds_total; ++s) {
        r.seconds[static_cast<std::size_t>(s)].p99 = percentile_of(latencies[static_cast<std::size_t>(s)], 99);
    }
    r.p50_in_drop = percentile_of(drop_latencies, 50);
    r.p99_in_drop = percentile_of(drop_latencies, 99);
    // Recovered: the first second from t = 180 s starting 5 seconds in a row that each
    // answer at least 90% of what was offered.
    const auto good = [&](int s) {
        const auto& x = r.seconds[static_cast<std::size_t>(s)];
        return x.offered > 0 && x.ok * 10 >= x.offered * 9;
    };
    for (int s = 180; s + 5 <= seconds_total && !r.recovered_after; ++s) {
        bool all = true;
        for (int i = 0; i < 5; ++i) all = all && good(s + i);
        if (all) r.recovered_after = s - 180;
    }
    return r;
}

// Three panels over time, one line per strategy: requests sent to the
// dependency per second, the concurrency limit, the p99 latency of each
// second's answers.
void write_svg(const char* path, const std::vector<result>& results) {
    constexpr int width = 900, panel = 200, left = 60, top = 30, gap = 50;
    constexpr int plot_w = width - left - 150;
    const char* colors[] = {"#888888", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"};
    example_svg::file svg{path, width, top + 3 * (panel + gap)};
    if (!svg) return;
    struct axis {
        const char* title;
        double max;
    };
    const axis panels[] = {{"requests sent to the dependency per second", 100.0},
                           {"concurrency limit (in flight)", 50.0},
                           {"p99 latency of the answers (ms)", 300.0}};
    for (int k = 0; k < 3; ++k) {
        const int y0 = top + k * (panel + gap);
        svg.add("<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", left, y0 - 8, panels[k].title);
        // The capacity drop, shaded.
        const double x60 = left + plot_w * 60.0 / seconds_total, x180 = left + plot_w * 180.0 / seconds_total;
        svg.add("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f3e6e6\"/>\n", x60, y0, x180 - x60,
                panel);
        svg.add("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", left, y0,
                plot_w, panel);
        for (int tick = 0; tick <= 4; ++tick) {
            const double v = panels[k].max * tick / 4.0;
            svg.add("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", left - 4,
                    y0 + panel - panel * tick / 4.0 + 4, v);
        }
        for (int t = 0; t <= seconds_total; t += 60)
            svg.add("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d s</text>\n",
                    left + plot_w * static_cast<double>(t) / seconds_total, y0 + panel + 14, t);
        for (std::size_t i = 0; i < results.size(); ++i) {
            const auto& r = results[i];
            if (k == 1 && (r.which == strategy::none || r.which == strategy::sre || r.which == strategy::sre_short))
                continue;  // no concurrency limit to draw
            std::vector<std::pair<double, double>> points;
            for (int t = 0; t < seconds_total; ++t) {
                const auto& x = r.seconds[static_cast<std::size_t>(t)];
                double v = k == 0   ? x.sent
                           : k == 1 ? x.limit
                                    : static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(x.p99).count());
                v = std::min(v, panels[k].max);
                points.emplace_back(left + plot_w * (t + 0.5) / seconds_total, y0 + panel - panel * v / panels[k].max);
            }
            svg.polyline(colors[i], points);
        }
    }
    for (std::size_t i = 0; i < results.size(); ++i)
        svg.add("<text x=\"%d\" y=\"%zu\" fill=\"%s\">%s</text>\n", left + plot_w + 15, top + 20 + 18 * i, colors[i],
                name_of(results[i].which));
    svg.add("<text x=\"%d\" y=\"%zu\" fill=\"#b07070\">capacity 40/s</text>\n", left + plot_w + 15,
            top + 20 + 18 * results.size() + 10);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<result> results;
    for (auto s : strategies) results.push_back(simulate(s));

    std::printf("capacity 100/s, 40/s from t = 60 s to 180 s; 80 requests/s offered; timeout 250 ms\n\n");
    std::printf("%-10s %11s %10s %12s %10s %9s %9s %10s\n", "strategy", "goodput/s", "p50/p99 ms", "sent in drop",
                "sent/acc", "timeouts", "shed", "recovery");
    std::printf("%-10s %11s %10s %12s %10s %9s %9s %10s\n", "", "(60-180 s)", "(60-180 s)", "(60-180 s)", "(60-180 s)",
                "", "locally", "after 180s");
    for (const auto& r : results) {
        const double goodput = r.ok_in_drop / 120.0;
        const double ratio = r.accepted_in_drop == 0 ? 0.0 : static_cast<double>(r.sent_in_drop) / r.accepted_in_drop;
        char recovery[32];
        if (r.recovered_after)
            std::snprintf(recovery, sizeof recovery, "%d s", *r.recovered_after);
        else
            std::snprintf(recovery, sizeof recovery, "never");
        char latency[32];
        std::snprintf(latency, sizeof latency, "%lld/%lld",
                      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(r.p50_in_drop).count()),
                      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(r.p99_in_drop).count()));
        std::printf("%-10s %11.1f %10s %12d %10.2f %9d %9d %10s\n", name_of(r.which), goodput, latency,
                    r.sent_in_drop, ratio, r.timeouts, r.rejected_locally, recovery);
    }

    // Why Gradient2 keeps less here than AIMD: each answer whose latency is
    // within rtt_tolerance of the long average raises the limit by about
    // queue_size x smoothing (0.8), up to +0.8 x limit per round trip, while
    // an overload cuts x0.9 once per round. Once the server's queue has
    // drained, answers come back faster than the long average (which the
    // overload raised), so the limit climbs from 9 to 17 in a few hundred
    // milliseconds, the queue fills past what 250 ms allows, and the abandoned
    // requests cost the server seconds of work. Each option below slows the
    // climb or speeds the cut; the last row is Gradient2Limit's own handling
    // of a 503 or a timeout (a latency sample like any other).
    struct variant {
        const char* name;
        run_options run;
    };
    constexpr auto g2 = resil::adaptive_algorithm::gradient2;
    const variant gradient_variants[] = {
        {"defaults (queue_size 4, smoothing 0.2)", {.gradient = {.algorithm = g2}}},
        {"queue_size 1", {.gradient = {.algorithm = g2, .queue_size = 1}}},
        {"smoothing 0.05", {.gradient = {.algorithm = g2, .smoothing = 0.05}}},
        {"long_window 6000", {.gradient = {.algorithm = g2, .long_window = 6000}}},
        {"queue_size 1, smoothing 0.1", {.gradient = {.algorithm = g2, .smoothing = 0.1, .queue_size = 1}}},
        {"cut_once_per_round = false", {.gradient = {.algorithm = g2, .cut_once_per_round = false}}},
        {"Gradient2Limit: drops as latency samples", {.overload_as_latency_sample = true}},
    };
    // AIMD's default is TCP's rule (+1 per round of successes, one cut per
    // round); concurrency-limits' AIMDLimit adds 1 per success and cuts on
    // every drop, from a floor of 20.
    const variant aimd_variants[] = {
        {"defaults (TCP's rule)", {}},
        {"AIMDLimit's rule", {.aimd = {.cut_once_per_round = false, .increase_per_success = true}}},
        {"AIMDLimit's rule, min_limit 20",
         {.aimd = {.min_limit = 20, .cut_once_per_round = false, .increase_per_success = true}}},
    };
    const auto table = [](const char* title, strategy which, const auto& variants) {
        std::printf("\n%-40s %10s %10s %9s\n", title, "goodput/s", "sent/acc", "timeouts");
        for (const auto& v : variants) {
            const auto r = simulate(which, v.run);
            std::printf("%-40s %10.1f %10.2f %9d\n", v.name, r.ok_in_drop / 120.0,
                        r.accepted_in_drop == 0 ? 0.0 : static_cast<double>(r.sent_in_drop) / r.accepted_in_drop,
                        r.timeouts);
        }
    };
    table("Gradient2 with other options", strategy::gradient2, gradient_variants);
    table("AIMD with other options", strategy::aimd, aimd_variants);
    if (argc == 3 && std::strcmp(argv[1], "--svg") == 0) write_svg(argv[2], results);
    return 0;
}
