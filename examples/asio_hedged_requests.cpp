// Hedged requests: the p99 of calls to a replica with a slow tail, without
// hedging and with a copy sent at the p95 (resil::asio::hedged).
//
// The replica is simulated in this process so that the example runs
// anywhere: one answer in 20 takes 200 ms, the others 1 ms; a hedge goes to
// another replica, which answers in 1 ms. 200 calls run 8 at a time on one
// io_context thread. The measured figures go to stderr (they vary from run
// to run); stdout says what they show, and a test compares it.
//
// Against a real server the copy is the client's call, unchanged:
//   co_await resil::asio::hedged(hedge, ctx,
//       [&](resil::context& c, auto token) { return http.async_perform(req, c, std::move(token)); });
#include <resil/asio.hpp>
#include <resil/hedge.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr int calls = 200;
constexpr int in_flight = 8;

// Call i's first copy is slow when i % 20 == 7: 5 % of calls.
bool slow_call(int i) { return i % 20 == 7; }

struct tally {
    int copies = 0;          // requests the replicas received
    int slow_cancelled = 0;  // slow answers cut short: a hedge answered first
    int refused = 0;         // copies the retry budget refused
};

// Hears the hedge's events (resil::events::hedge_*).
struct hedge_listener {
    tally* t;
    void operator()(const resil::events::hedge_refused&) const { ++t->refused; }
};

// One copy of call i: copy 0 goes to the usual replica, the others to
// another one. Returns "ok", or "cancelled" when cut short.
asio::awaitable<std::string> replica(int i, int copy, tally& t) {
    ++t.copies;
    asio::steady_timer timer(co_await asio::this_coro::executor, copy == 0 && slow_call(i) ? 200ms : 1ms);
    std::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        if (copy == 0 && slow_call(i)) ++t.slow_cancelled;
        co_return "cancelled";
    }
    co_return "ok";
}

resil::verdict judge(const std::string& answer) {
    return answer == "ok" ? resil::verdict::success : resil::verdict::ambiguous;
}

steady::duration p99(std::vector<steady::duration> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() * 99 / 100 - 1];
}

double ms(steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Runs the calls, hedged by `hedge` or not; returns each call's latency.
std::vector<steady::duration> run(const resil::hedge_policy* hedge, tally& t) {
    asio::io_context io;
    std::vector<steady::duration> took;
    for (int w = 0; w < in_flight; ++w) {
        asio::co_spawn(
            io,
            [&, w]() -> asio::awaitable<void> {
                for (int i = w; i < calls; i += in_flight) {
                    resil::context ctx;
                    ctx.mark_idempotent();  // a GET: safe to send twice
                    const auto t0 = steady::now();
                    if (hedge) {
                        int copy = 0;
                        (void)co_await resil::asio::hedged(
                            *hedge, ctx, [&](resil::context& c) {
                                // What a client says of its request: a GET may be sent twice.
                                c.mark_repeatable(true);
                                return replica(i, copy++, t);
                            }, judge,
                            hedge_listener{&t});
                    } else {
                        (void)co_await replica(i, 0, t);
                    }
                    took.push_back(steady::now() - t0);
                }
            },
            asio::detached);
    }
    io.run();
    return took;
}

}  // namespace

int main() {
    // The delay is the p95 of the last second's latencies once 50 are known
    // (20 ms until then), capped at 50 ms: with exactly 5 % slow answers the
    // p95 sits on the edge between the fast and the slow ones.
    resil::retry_budget budget{{.ratio = 0.1}};  // hedges share the retries' throttle
    resil::hedge_policy hedge{{.max_hedges = 1,
                               .delay = 20ms,
                               .percentile = 0.95,
                               .max_delay = 50ms,
                               .window = 1s,
                               .min_samples = 50,
                               .budget = &budget}};
    tally plain_tally;
    tally hedged_tally;
    const auto plain = p99(run(nullptr, plain_tally));
    const auto hedged = p99(run(&hedge, hedged_tally));
    const int extra = hedged_tally.copies - calls;

    std::fprintf(stderr,
                 "measured: p99 %.1f ms without hedging, %.1f ms hedged; %d extra requests, %d refused by the "
                 "budget; last delay %.1f ms\n",
                 ms(plain), ms(hedged), extra, hedged_tally.refused, ms(hedge.delay(resil::steady_clock{}.now())));
    std::printf("%d calls, %d at a time, to a replica where 1 answer in 20 takes 200 ms and the rest 1 ms\n", calls,
                in_flight);
    std::printf("without hedging, the p99 is a slow answer (200 ms or more): %s\n", plain >= 200ms ? "yes" : "no");
    // What hedging gains depends on timing (a loaded machine may delay a
    // copy): shown, not checked, on stderr.
    std::fprintf(stderr, "hedged at the p95, the p99 is at most half of that: %s\n", hedged * 2 <= plain ? "yes" : "no");
    std::fprintf(stderr, "extra requests, at most 10 %% of the calls: %s\n", extra * 10 <= calls ? "yes" : "no");
    std::fprintf(stderr, "slow answers overtaken by a hedge, their request cancelled: %d of %d\n",
                 hedged_tally.slow_cancelled, calls / 20);
    return 0;
}
