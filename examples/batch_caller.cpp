// A batch caller: a job that sends a few hundred items to a rate-limited API,
// with nobody waiting on any single item. Unlike an interactive caller it can
// afford to wait and retry — but politely:
//
//   - it retries once, with full jitter, inside a retry budget of 10 % of its
//     requests (so a struggling server sees at most ~10 % extra load);
//   - it honours Retry-After (the server knows better how long to wait);
//   - it paces itself with a token bucket, each attempt waiting for its token
//     but never past the item's deadline;
//   - it adapts its pace: +5 requests/s for every second without a 429 or 503
//     (additive increase), halved on a 429 or 503, at most once a second
//     (multiplicative decrease).
//
//   $ ./example_batch_caller
//
// The server is simulated: it enforces the team's quota with its own
// resil::token_bucket (25 requests/s, bursts of 10), answering 429 with
// Retry-After, and it has a bad spell (pods restarting: 503 without
// Retry-After) from 9 s to 15 s. Everything runs on resil's manual clock with
// a fixed jitter seed, so the output is the same on every run. The job is one
// loop, one item at a time: while it waits (for a token, or before a retry),
// it sends nothing.
//
// Changing the pace builds a new client-side bucket (a bucket's rate is fixed
// at construction; a new one also starts with a clean slate). That is safe
// here because the job is one thread and the swap happens between attempts;
// a job with many workers would share the pace through an
// std::atomic<std::shared_ptr<bucket>>, or adapt its number of workers instead.
//
// What the reader should see in the table:
//   seconds 0-4   the pace grows 10, 15, 20, 25, 30/s: +5 per quiet second.
//   second 5      past the quota, the server's burst of 10 runs out: a 429
//                 with Retry-After: 1. The pace halves (35 -> 17) and the
//                 retry waits the 1 s the server asked for (only 13 sent).
//   seconds 9-14  the 503s: the pace halves every second (32, 16, 8, 4) down
//                 to its floor of 2/s; each failed item is retried once, after
//                 a full-jitter wait under 200 ms, until in second 13 the retry
//                 budget is spent: the window then holds seconds 4-13, about
//                 127 items, so floor(12.7) = 12 retries, and 14 were made
//                 (1 at 5 s, 13 since 9 s). 6 retries are refused.
//   from 15 s     the pace climbs again, +5/s per second, with a 429 at 21 s.
//   in all        415 requests for 400 items: 15 retries, 3.8 % of first
//                 attempts; 381 items done, 19 kept for the job's next run
//                 (13 whose one retry failed too, 6 refused by the budget).
//                 The items' 10 s deadline never binds here: it is the bound
//                 on how long an item may wait for a token or a retry.
#include <resil/backoff.hpp>
#include <resil/context.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/events.hpp>
#include <resil/outcome.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/token_bucket.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

using clock_type = resil::testing::manual_clock;
using bucket = resil::basic_token_bucket<clock_type>;

struct reply {
    int status = 0;
    std::optional<std::chrono::seconds> retry_after;
};

// One row of the per-second table.
struct second_stats {
    int sent = 0, ok = 0, too_many = 0, unavailable = 0, retried = 0, refused = 0;
    double pace = 0;
};

struct table {
    clock_type clock;
    resil::time_point start;
    std::vector<second_stats> rows;

    second_stats& now() {
        const auto s = static_cast<std::size_t>(std::chrono::floor<std::chrono::seconds>(clock.now() - start).count());
        if (rows.size() <= s) rows.resize(s + 1);
        return rows[s];
    }
};

// The API, simulated: the team's quota as a token bucket on the server side,
// 20 ms per request, and a bad moment between 9 s and 10 s.
class api_server {
public:
    api_server(clock_type clock, table& stats)
        : clock_(clock), stats_(&stats), start_(clock.now()), quota_({.rate = 25, .burst = 10}, clock) {}

    reply handle() {
        auto& row = stats_->now();
        ++row.sent;
        const auto since_start = clock_.now() - start_;
        reply r{200, std::nullopt};
        if (since_start >= 9s && since_start < 15s) {
            r = {503, std::nullopt};  // restarting: no idea for how long, so no Retry-After
            ++row.unavailable;
        } else if (const auto token = quota_.try_acquire(); !token) {
            r = {429, token.retry_after};  // whole seconds, rounded up, at least 1 s
            ++row.too_many;
        } else {
            ++row.ok;
        }
        clock_.advance(20ms);
        return r;
    }

private:
    clock_type clock_;
    table* stats_;
    resil::time_point start_;
    bucket quota_;
};

// The client's pace: additive increase, multiplicative decrease.
class aimd_pacer {
public:
    aimd_pacer(clock_type clock, double initial_rate)
        : clock_(clock), rate_(initial_rate), last_change_(clock.now()), last_decrease_(clock.now() - 1h) {
        rebuild();
    }

    [[nodiscard]] const bucket& current() const { return *bucket_; }
    [[nodiscard]] double rate() const { return rate_; }

    /// What the server said about one attempt. Called between attempts, never
    /// while an acquire() on the current bucket is in progress.
    void observe(int status) {
        const auto now = clock_.now();
        if (status == 429 || status == 503) {
            // Halve at most once a second: the pushbacks that follow at once
            // were caused by the pace already halved.
            if (now - last_decrease_ < 1s) return;
            rate_ = std::max(min_rate, std::floor(rate_ / 2));  // whole requests/s keep the table readable
            last_decrease_ = now;
        } else if (status == 200) {
            // Grow only after a whole second without a change.
            if (now - last_change_ < 1s) return;
            rate_ = std::min(max_rate, rate_ + step);
        } else {
            return;
        }
        last_change_ = now;
        rebuild();
    }

private:
    static constexpr double min_rate = 2;
    static constexpr double max_rate = 50;
    static constexpr double step = 5;

    // Burst 1: the client spaces its requests evenly instead of bursting.
    void rebuild() { bucket_.emplace(resil::token_bucket_options{.rate = rate_, .burst = 1}, clock_); }

    clock_type clock_;
    double rate_;
    resil::time_point last_change_;
    resil::time_point last_decrease_;
    std::optional<bucket> bucket_;
};

// A policy of our own (any type with this execute() is one): each attempt
// waits for a token of the current pace, never past the call's deadline. It
// sits inside the retry policy, so retries are paced like first attempts.
struct paced {
    const aimd_pacer* pacer;

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        if (const auto token = pacer->current().acquire(ctx); !token) {  // sleeps until the token, or refuses
            ctx.emit(resil::events::rejected{resil::reason::rate_limited, token.wait});
            return decltype(next(ctx))::rejected(resil::reason::rate_limited, token.wait);
        }
        return std::forward<Next>(next)(ctx);
    }
};

resil::classification classify(const reply& r) {
    if (r.status == 200) return resil::verdict::success;
    if (r.status == 429 || r.status == 503)
        return {resil::verdict::retryable, resil::server_hint{r.retry_after, false}};
    return resil::verdict::permanent;
}

// Counts retries and budget refusals into the table.
struct retry_counter {
    table* stats;
    void operator()(const resil::events::retry_scheduled&) const { ++stats->now().retried; }
    void operator()(const resil::events::budget_refused&) const { ++stats->now().refused; }
};

}  // namespace

int main() {
    const clock_type clock;
    table stats{clock, clock.now(), {}};
    api_server server{clock, stats};
    aimd_pacer pacer{clock, 10};
    resil::jitter_engine jitter{7};  // fixed seed: the same waits on every run

    // Retries may not exceed 10 % of the items (first attempts) of the last
    // 10 s. No reserve (min_per_second = 0): the reserve lets a quiet client
    // retry now and then, and this job is never quiet.
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 0, .window = 10s}};

    // Outermost first: each item has 10 s in all; one retry at most (two
    // attempts) after a full-jitter wait, uniform in [0, 200 ms) before the
    // first retry, or the server's Retry-After when longer; every attempt paced.
    const auto job = resil::pipeline(clock, resil::deadline_policy{10s},
                                     resil::retry_policy{{.max_attempts = 2,
                                                          .backoff = resil::full_jitter{100ms, 2s},
                                                          .budget = &budget}},
                                     paced{&pacer})
                         .with_listener(retry_counter{&stats});

    constexpr int items = 400;
    std::array<int, resil::reason_count> gave_up{};
    int done = 0;
    for (int item = 0; item < items; ++item) {
        resil::basic_context<clock_type> ctx{resil::basic_call_options<clock_type>{.jitter = &jitter}};
        const auto out = job.execute(
            ctx,
            [&] {
                const auto r = server.handle();
                pacer.observe(r.status);  // safe: the token for this attempt is already taken
                stats.now().pace = pacer.rate();
                return r;
            },
            classify);
        if (out)
            ++done;
        else
            ++gave_up[static_cast<std::size_t>(out.reason())];  // the job keeps these for its next run
    }

    std::puts("400 items; server quota 25/s (bursts of 10), 503s from 9 s to 15 s; the job starts at 10/s\n");
    std::puts("second  sent   ok  429  503  retried  budget refused  pace at the end (req/s)");
    double pace = 10;
    second_stats total;
    for (std::size_t s = 0; s < stats.rows.size(); ++s) {
        const auto& r = stats.rows[s];
        if (r.pace > 0) pace = r.pace;
        std::printf("%6zu  %4d %4d %4d %4d  %7d  %14d  %5.0f\n", s, r.sent, r.ok, r.too_many, r.unavailable, r.retried,
                    r.refused, pace);
        total.sent += r.sent;
        total.ok += r.ok;
        total.too_many += r.too_many;
        total.unavailable += r.unavailable;
        total.retried += r.retried;
        total.refused += r.refused;
    }
    std::printf(" total  %4d %4d %4d %4d  %7d  %14d\n", total.sent, total.ok, total.too_many, total.unavailable,
                total.retried, total.refused);

    const int first_attempts = total.sent - total.retried;
    std::printf("\n%d requests for %d items: %d retries, %.1f %% of the %d first attempts (budget: 10 %%)\n",
                total.sent, items, total.retried, 100.0 * total.retried / first_attempts, first_attempts);
    std::printf("%d items done; kept for the next run: %d\n", done, items - done);
    for (std::size_t r = 0; r < gave_up.size(); ++r)
        if (gave_up[r] != 0)
            std::printf("  %-18s %d\n", std::string(resil::to_string(static_cast<resil::reason>(r))).c_str(),
                        gave_up[r]);
}
