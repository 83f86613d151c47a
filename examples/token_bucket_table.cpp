// The token bucket, by the numbers: what a rate limit of r tokens per second
// with a burst of B lets through, and what the clients it refuses are told.
//
//   $ ./example_token_bucket_table
//
// Everything runs on resil's manual clock, so the requests arrive at exact
// instants and the output is the same on every run and every machine. What
// the reader should see (each number follows from r and B alone):
//
//   r = 50/s, B = 100, 300 requests spread over the first second
//       -> 149 pass, 151 get 429 · Retry-After: 1 s. The bucket starts full
//          (100) and 50 more drip in during that second, but the last request
//          arrives at 0.997 s, a moment before the 50th new token: 149, not 150.
//   then 50 requests at the agreed 50/s -> 50 of 50 pass (a client that stays
//       under r never sees a 429).
//   3 idle seconds later the bucket is full again: 100 tokens, never more.
//   r = 20/s, B = 40, 100 requests in 0.5 s -> about 50 pass (40 from the
//       bucket + 20 × 0.5 that drip in): 49, as the last request comes at
//       0.495 s, before the 10th new token. Empty, it takes 40 / 20 = 2 s to refill.
//   A fixed window of 3,000 per minute lets 6,000 through in 2 s (3,000 at the
//       end of one minute, 3,000 at the start of the next); a bucket with the
//       same sustained rate (50/s) and B = 150 lets at most 150 + 50 × 2 = 250
//       (249 here, the last request again arriving just before the last token).
#include <resil/testing/manual_clock.hpp>
#include <resil/token_bucket.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>

using namespace std::chrono_literals;

namespace {

using bucket = resil::basic_token_bucket<resil::testing::manual_clock>;

// The instant of request i of n spread evenly over `span` (integer
// nanoseconds, so the schedule is exact: request i of 300 in 1 s is at i/300 s).
resil::duration spread(std::int64_t i, std::int64_t n, resil::duration span) {
    return resil::duration{span.count() * i / n};
}

struct tally {
    int passed = 0;
    int refused = 0;
    std::chrono::seconds last_retry_after{};  // what the last refused client was told
};

// Sends n requests spread over `span`, starting at `start`, to a bucket that
// answers each one at once, as a server does: a token, or 429 with Retry-After.
tally send(const bucket& b, const resil::testing::manual_clock& clock, resil::time_point start, std::int64_t n,
           resil::duration span) {
    tally t;
    for (std::int64_t i = 0; i < n; ++i) {
        clock.advance_to(start + spread(i, n, span));
        if (const auto r = b.try_acquire()) {
            ++t.passed;
        } else {
            ++t.refused;
            t.last_retry_after = r.retry_after;  // whole seconds, rounded up, at least 1 s
        }
    }
    return t;
}

// The classic fixed window: at most `limit` requests per calendar minute. It
// only counts, so it says nothing about how they are spread inside the minute.
class fixed_window {
public:
    fixed_window(int limit, resil::time_point origin) : limit_(limit), origin_(origin) {}
    bool try_acquire(resil::time_point now) {
        const auto minute = std::chrono::floor<std::chrono::minutes>(now - origin_).count();
        if (minute != minute_) {
            minute_ = minute;
            used_ = 0;
        }
        if (used_ >= limit_) return false;
        ++used_;
        return true;
    }

private:
    int limit_;
    resil::time_point origin_;
    std::int64_t minute_ = -1;
    int used_ = 0;
};

void rate_50_burst_100() {
    std::puts("A client with r = 50 tokens/s and B = 100 (the bucket starts full)");
    const resil::testing::manual_clock clock;
    const bucket moderation{{.rate = 50, .burst = 100}, clock};
    const auto t0 = clock.now();

    const auto first = send(moderation, clock, t0, 300, 1s);
    std::printf("  300 requests in the first second: %d pass, %d get 429 · Retry-After: %lld s\n", first.passed,
                first.refused, static_cast<long long>(first.last_retry_after.count()));

    const auto steady = send(moderation, clock, t0 + 1s, 50, 1s);
    std::printf("  then 50 requests at 50/s:         %d of 50 pass\n", steady.passed);

    clock.advance(3s);
    std::printf("  tokens after 3 idle seconds:      %.0f (the burst B: it never holds more)\n", moderation.tokens());
}

void rate_20_burst_40() {
    std::puts("\nr = 20 tokens/s, B = 40, full; 100 requests arrive in 0.5 s");
    const resil::testing::manual_clock clock;
    const bucket b{{.rate = 20, .burst = 40}, clock};
    const auto t0 = clock.now();

    const auto burst = send(b, clock, t0, 100, 500ms);
    std::printf("  %d pass, %d get 429 (≈ 40 in the bucket + 20 × 0.5 s dripping in)\n", burst.passed,
                burst.refused);

    // How long until the bucket is full again: what is missing, at r per second.
    const double missing = 40.0 - b.tokens();
    std::printf("  tokens left: %.1f; full again after %.2f s of quiet (40 / 20 = 2 s from empty)\n", b.tokens(),
                missing / 20.0);
    clock.advance(2s);
    std::printf("  tokens 2 s later: %.0f\n", b.tokens());
}

void window_versus_bucket() {
    std::puts("\nA quota of 3,000 requests per minute; a client sends as fast as it is let through");
    const resil::testing::manual_clock clock;
    const auto t0 = clock.now();

    // The burst straddles a minute boundary: the last second of minute 0 and
    // the first second of minute 1, 6,000 requests each second.
    const auto burst_start = t0 + 59s;
    constexpr std::int64_t attempts = 12'000;

    fixed_window window{3000, t0};
    const bucket b{{.rate = 50, .burst = 150}, clock};  // 3,000 / 60 s = 50/s sustained
    int window_passed = 0;
    int bucket_passed = 0;
    // Both limiters see the same requests at the same instants; the bucket
    // starts full at t0, as if the client had been quiet all minute.
    for (std::int64_t i = 0; i < attempts; ++i) {
        clock.advance_to(burst_start + spread(i, attempts, 2s));
        if (window.try_acquire(clock.now())) ++window_passed;
        if (b.try_acquire()) ++bucket_passed;
    }
    std::printf("  fixed window, 3,000/min:        %5d pass in 2 s (%d/s: 60 times the sustained 50/s)\n",
                window_passed, window_passed / 2);
    std::printf("  token bucket, r = 50/s, B = 150: %4d pass in 2 s (at most B + r × 2 = 250)\n", bucket_passed);
    std::puts("  the window caps each minute's total (for billing); the bucket caps the rate at every instant\n"
              "  (for capacity): a burst of 150, then 50/s.");
}

}  // namespace

int main() {
    rate_50_burst_100();
    rate_20_burst_40();
    window_versus_bucket();
}
