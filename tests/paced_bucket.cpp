#include <resil/paced_bucket.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;
using bucket_t = resil::basic_paced_bucket<manual_clock>;

namespace {

std::string error_of(const resil::paced_bucket_options& o) {
    try {
        bucket_t b{o};
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// A response's header fields (names as sent; looked up in any letter case).
struct headers {
    std::vector<std::pair<std::string, std::string>> fields;
    std::optional<std::string_view> header(std::string_view name) const {
        for (const auto& [n, v] : fields) {
            if (n.size() != name.size()) continue;
            bool same = true;
            for (std::size_t i = 0; i < n.size(); ++i)
                if (std::tolower(static_cast<unsigned char>(n[i])) != std::tolower(static_cast<unsigned char>(name[i])))
                    same = false;
            if (same) return std::string_view{v};
        }
        return std::nullopt;
    }
    auto lookup() const {
        return [this](std::string_view n) { return header(n); };
    }
};

const auto wall = std::chrono::system_clock::time_point{std::chrono::seconds{1'750'000'000}};

}  // namespace

TEST_CASE("paced bucket options: one validate(); never a rate of 0") {
    CHECK(resil::paced_bucket_options{}.validate() == std::nullopt);
    CHECK(error_of({.min_rate = 0}) == "resil::paced_bucket: `min_rate` must be in [0.0001, 1e6], got 0");
    CHECK(error_of({.rate = 5, .min_rate = 0.5, .max_rate = 2}) ==
          "resil::paced_bucket: `rate` must be in [min_rate, max_rate] = [0.5, 2], got 5");
    CHECK(error_of({.max_rate = 0.00005}) ==
          "resil::paced_bucket: `max_rate` must be in [min_rate, 1e6] = [0.0001, 1e6], got 5e-5");
    // The slowest pace with the largest burst: the tolerance (burst x interval) does not overflow.
    CHECK(error_of({.rate = 1e-4, .burst = 1'000'000, .min_rate = 1e-4}).empty());
    CHECK(error_of({.burst = 0}) == "resil::paced_bucket: `burst` must be in [1, 1000000], got 0");
    CHECK(error_of({.max_wait = -1s}) == "resil::paced_bucket: `max_wait` must be in [0s, 1h], got -1s");
    // No wait of absurd length: a pipeline call never blocks for more than an hour on its token.
    CHECK(error_of({.max_wait = 1h + 1ns}) == "resil::paced_bucket: `max_wait` must be in [0s, 1h], got 3600.000000001s");
    CHECK(error_of({.max_wait = std::chrono::hours{24 * 365}}) ==
          "resil::paced_bucket: `max_wait` must be in [0s, 1h], got 8760h");
    CHECK(error_of({.max_wait = 1h}).empty());
}

TEST_CASE("paced bucket: the configured pace until a response says otherwise") {
    manual_clock clock;
    bucket_t b{{.rate = 2, .burst = 2}, clock};
    CHECK(b.try_acquire(clock.now()));
    CHECK(b.try_acquire(clock.now()));
    const auto r = b.try_acquire(clock.now());
    CHECK_FALSE(r);
    CHECK(r.wait == 500ms);
    clock.advance(500ms);
    CHECK(b.try_acquire(clock.now()));
}

TEST_CASE("paced bucket: each header form sets the pace remaining / reset") {
    struct form {
        headers h;
        double rate;
        std::int64_t burst;
    };
    const std::vector<form> forms{
        {{{{"RateLimit", "\"default\";r=50;t=10"}, {"RateLimit-Policy", "\"default\";q=100;w=60"}}}, 5.0, 5},
        {{{{"RateLimit-Limit", "100"}, {"RateLimit-Remaining", "40"}, {"RateLimit-Reset", "20"}}}, 2.0, 2},
        {{{{"X-RateLimit-Limit", "5000"}, {"X-RateLimit-Remaining", "30"}, {"X-RateLimit-Reset", "1750000060"}}}, 0.5, 1},
        {{{{"x-ratelimit-limit-requests", "100"}, {"x-ratelimit-remaining-requests", "60"},
           {"x-ratelimit-reset-requests", "6m0s"}}},
         60.0 / 360.0,
         1},
    };
    for (const auto& f : forms) {
        manual_clock clock;
        bucket_t b{{.rate = 100, .burst = 100}, clock};
        const auto change = b.observe(f.h.lookup(), clock.now(), wall);
        REQUIRE(change);
        CHECK(change->rate == Approx(f.rate).epsilon(1e-9));
        CHECK(change->burst == f.burst);
        CHECK(change->paused_for == resil::duration::zero());
        CHECK(b.rate() == Approx(f.rate).epsilon(1e-9));
        CHECK(b.burst() == f.burst);
        CHECK_FALSE(b.observe(f.h.lookup(), clock.now(), wall));  // the same pace again: no change
        CHECK(b.metrics().rate_changes == 1);
    }
}

TEST_CASE("paced bucket: a faster pace applies at once, debt at the slow pace rescaled to the new one") {
    manual_clock clock;
    bucket_t b{{}, clock};
    b.update({.remaining = 1, .reset = resil::duration{60s}}, clock.now());  // slow: 1 in 60 s
    CHECK(b.try_acquire(clock.now()));
    CHECK_FALSE(b.try_acquire(clock.now()));  // one token of debt at 10 s per token
    b.update({.remaining = 1000, .reset = resil::duration{60s}}, clock.now());  // 1000 in 60 s: 60 ms per token
    // The token owed is now 60 ms, inside a burst of 16: the next call goes at once.
    const auto r = b.try_acquire(clock.now(), 3600s);
    CHECK(r);
    CHECK(r.wait == resil::duration::zero());
    // Back to slow: the one token owed at 60 ms becomes one at 1 s (1 in 1 s), not 60 ms.
    bucket_t c{{.rate = 1000, .burst = 1}, clock};
    CHECK(c.try_acquire(clock.now()));
    c.update({.remaining = 10, .reset = resil::duration{10s}}, clock.now());
    const auto w = c.try_acquire(clock.now(), 3600s);
    CHECK(w);
    CHECK(w.wait == 1s);
}

TEST_CASE("paced bucket: slow quotas are followed down to 1e-4 per second, never faster than advertised") {
    manual_clock clock;
    const auto sent_in = [&](bucket_t& b, std::chrono::seconds span) {
        int n = 0;
        const auto t0 = clock.now();
        while (clock.now() - t0 < span) {
            if (b.try_acquire(clock.now())) ++n;
            clock.advance(100ms);
        }
        return n;
    };
    // 100 in 30 min: paced at 100 / 1800 per second, not raised to a floor.
    bucket_t b{{}, clock};
    b.update({.remaining = 100, .reset = resil::duration{1800s}}, clock.now());
    CHECK(b.rate() == Approx(100.0 / 1800).epsilon(1e-6));
    CHECK(sent_in(b, 1800s) <= 100);
    // One a day: 1 per 86,400 s is below the floor (1e-4); raised to it, the quota still grants
    // only the 3 that remain, then pauses until the reset (at most max_pause).
    bucket_t d{{.max_pause = 24h}, clock};
    d.update({.remaining = 3, .reset = resil::duration{std::chrono::hours{72}}}, clock.now());
    CHECK(d.rate() == Approx(1e-4));
    CHECK(sent_in(d, 24h) == 3);
    // A floor set higher by the caller: 100 in 1800 s raised to 1 a second, still 100 at most.
    bucket_t f{{.rate = 1, .min_rate = 1, .max_pause = 1h}, clock};
    f.update({.remaining = 100, .reset = resil::duration{1800s}}, clock.now());
    CHECK(f.rate() == Approx(1.0));
    CHECK(sent_in(f, 1800s) == 100);
    // After the reset the quota no longer binds: the pace is min_rate again.
    CHECK(sent_in(f, 10s) == 10);
}

TEST_CASE("paced bucket: an exhausted quota pauses until its reset, then the pace resumes") {
    manual_clock clock;
    bucket_t b{{.rate = 10, .burst = 1}, clock};
    const headers h{{{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "30"}}};  // delay-seconds
    const auto change = b.observe(h.lookup(), clock.now(), wall);
    REQUIRE(change);
    CHECK(change->paused_for == 30s);
    CHECK(b.metrics().pauses == 1);
    const auto r = b.try_acquire(clock.now());
    CHECK_FALSE(r);
    CHECK(r.wait == 30s);
    clock.advance(30s - 1ns);
    CHECK_FALSE(b.try_acquire(clock.now()));
    clock.advance(1ns);
    CHECK(b.try_acquire(clock.now()));
    CHECK_FALSE(b.try_acquire(clock.now()));
    clock.advance(100ms);
    CHECK(b.try_acquire(clock.now()));
}

TEST_CASE("paced bucket: absurd quotas are clamped, never 0 and never a flood; malformed ones ignored") {
    manual_clock clock;
    bucket_t b{{.rate = 10, .burst = 10}, clock};
    // A billion a second: capped at max_rate.
    b.observe(headers{{{"RateLimit-Remaining", "999999999999999"}, {"RateLimit-Reset", "1"}}}.lookup(), clock.now(), wall);
    CHECK(b.rate() == Approx(1e6));
    CHECK(b.burst() == 1'000'000);
    // One request in eleven days: raised to min_rate.
    b.observe(headers{{{"RateLimit-Remaining", "1"}, {"RateLimit-Reset", "999999"}}}.lookup(), clock.now(), wall);
    CHECK(b.rate() == Approx(1e-4));
    CHECK(b.burst() == 1);
    // An exhausted quota "for a year": paused at most max_pause (5 min).
    const auto change =
        b.observe(headers{{{"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "31536000"}}}.lookup(), clock.now(), wall);
    REQUIRE(change);
    CHECK(change->paused_for == 5min);
    // Malformed or incomplete: nothing changes.
    CHECK_FALSE(b.observe(headers{{{"X-RateLimit-Remaining", "-3"}, {"X-RateLimit-Reset", "10"}}}.lookup(), clock.now(), wall));
    CHECK_FALSE(b.observe(headers{{{"X-RateLimit-Remaining", "10"}}}.lookup(), clock.now(), wall));
    CHECK_FALSE(b.observe(headers{{{"RateLimit-Remaining", "10"}, {"RateLimit-Reset", "0"}}}.lookup(), clock.now(), wall));
    CHECK_FALSE(b.observe(headers{}.lookup(), clock.now(), wall));
    CHECK(b.rate() == Approx(1e-4));
}

TEST_CASE("paced bucket: quotas beyond any integer, resets in the past or centuries away change nothing or are clamped") {
    manual_clock clock;
    bucket_t b{{.rate = 10, .burst = 10}, clock};
    const auto observe = [&](std::vector<std::pair<std::string, std::string>> fields) {
        return b.observe(headers{std::move(fields)}.lookup(), clock.now(), wall);
    };
    // The IETF fields are Structured Field integers (at most 15 digits): longer ones are malformed, ignored.
    CHECK_FALSE(observe({{"RateLimit-Remaining", "99999999999999999999999999"}, {"RateLimit-Reset", "10"}}));
    CHECK_FALSE(observe({{"RateLimit-Remaining", "10"}, {"RateLimit-Reset", "99999999999999999999999999"}}));
    CHECK(b.rate() == Approx(10.0));
    // A reset centuries away (delay-seconds and a Go duration): the slowest pace, not 0 and no overflow.
    CHECK(observe({{"RateLimit-Remaining", "5"}, {"RateLimit-Reset", "9223372036"}}));
    CHECK(b.rate() == Approx(1e-4));
    CHECK(b.burst() == 1);
    bucket_t go{{.rate = 10, .burst = 10}, clock};
    CHECK(go.observe(headers{{{"x-ratelimit-remaining-requests", "5"}, {"x-ratelimit-reset-requests", "2562047h"}}}.lookup(),
                     clock.now(), wall));
    CHECK(go.rate() == Approx(1e-4));
    // An exhausted quota whose reset is centuries away: a pause of max_pause, and a token after it.
    const auto pause = observe({{"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "9223372036"}});
    REQUIRE(pause);
    CHECK(pause->paused_for == 5min);
    CHECK_FALSE(b.try_acquire(clock.now()).granted());
    // An X-RateLimit-Reset in Unix time already past (a skewed clock): no pace from it, no pause.
    bucket_t c{{.rate = 10, .burst = 10}, clock};
    CHECK_FALSE(c.observe(headers{{{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "1700000000"}}}.lookup(),
                          clock.now(), wall));
    CHECK(c.try_acquire(clock.now()).granted());
    // X-RateLimit counts past any integer saturate: the fastest pace, burst 1e6, never a flood.
    CHECK(c.observe(headers{{{"X-RateLimit-Remaining", "99999999999999999999999999"}, {"X-RateLimit-Reset", "1"}}}.lookup(),
                    clock.now(), wall));
    CHECK(c.rate() == Approx(1e6));
    CHECK(c.burst() == 1'000'000);
}

TEST_CASE("paced bucket pipeline policy: waits for its token and follows the response's headers") {
    manual_clock clock;
    bucket_t b{{.rate = 100, .burst = 1, .max_wait = 2s}, clock};
    std::vector<resil::events::pace_changed> changes;
    struct listener {
        std::vector<resil::events::pace_changed>* seen;
        void operator()(const resil::events::pace_changed& e) const { seen->push_back(e); }
    };
    const auto pipe = resil::pipeline(clock, std::ref(b)).with_listener(listener{&changes});
    const headers slow{{{"RateLimit-Remaining", "10"}, {"RateLimit-Reset", "10"}}};  // 1 a second
    const auto started = clock.now();
    for (int i = 0; i < 4; ++i) CHECK(pipe([&] { return slow; }, resil::always_success).ok());
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].rate == Approx(1.0));
    // The first call took the full bucket's token; the token it owes is one token at the
    // advertised pace (a second), so the next three wait one second each.
    CHECK(clock.now() - started == 3s);
    // Beyond max_wait: rejected with the wait as retry_after.
    const headers exhausted{{{"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "60"}}};
    clock.advance(1s);
    CHECK(pipe([&] { return exhausted; }, resil::always_success).ok());
    const auto out = pipe([&] { return slow; }, resil::always_success);
    CHECK(out.reason() == resil::reason::rate_limited);
    REQUIRE(out.retry_after());
    CHECK(*out.retry_after() == 60s);
}

TEST_CASE("paced bucket: threads take exactly the tokens there are") {
    manual_clock clock;
    bucket_t b{{.rate = 1, .burst = 1000}, clock};
    std::atomic<int> granted{0};
    std::vector<std::thread> pool;
    for (int n = 0; n < 4; ++n)
        pool.emplace_back([&] {
            for (int i = 0; i < 500; ++i)
                if (b.try_acquire(clock.now())) granted.fetch_add(1);
        });
    for (auto& th : pool) th.join();
    CHECK(granted.load() == 1000);
    CHECK(b.available(clock.now()) == 0);
}

TEST_CASE("paced bucket: the answer is token_bucket's; remaining and reset at the pace in force") {
    static_assert(std::is_same_v<decltype(std::declval<bucket_t&>().try_acquire()), resil::rate_limit_decision>);
    manual_clock clock;
    bucket_t b{{.rate = 4, .burst = 2}, clock};
    // The reference: the least wait after which the bucket holds one whole token more.
    const auto reset_by_search = [&b](resil::time_point now) {
        const auto whole = b.available(now);
        std::int64_t lo = 0, hi = static_cast<std::int64_t>(2e9 / b.rate()) + 2;
        if (whole >= b.burst()) return resil::duration::zero();
        REQUIRE(b.available(now + resil::duration{hi}) > whole);
        while (hi - lo > 1) {
            const auto mid = lo + (hi - lo) / 2;
            (b.available(now + resil::duration{mid}) > whole ? hi : lo) = mid;
        }
        return resil::duration{hi};
    };
    auto r = b.try_acquire(clock.now());
    CHECK(r.source == resil::decided_by::local);
    CHECK(r.remaining == 1);
    CHECK(r.reset == 250ms);
    r = b.try_acquire(clock.now());
    CHECK(r.remaining == 0);
    CHECK(r.reset == 250ms);
    r = b.try_acquire(clock.now());
    CHECK_FALSE(r);
    CHECK(r.wait == 250ms);
    CHECK(r.remaining == 0);
    CHECK(r.reset == 250ms);
    // A reservation: granted, the caller waits; the next token after it comes 250 ms later.
    r = b.try_acquire(clock.now(), 1s);
    CHECK(r);
    CHECK(r.wait == 250ms);
    CHECK(r.remaining == 0);
    CHECK(r.reset == 500ms);
    CHECK(r.reset == reset_by_search(clock.now()));
    // A new pace (10 in 5 s: 2/s, burst 2): the standing follows it.
    b.update({.remaining = 10, .reset = resil::duration{5s}}, clock.now());
    clock.advance(3s);
    r = b.try_acquire(clock.now());
    CHECK(r);
    CHECK(r.remaining == b.available(clock.now()));
    CHECK(r.reset == reset_by_search(clock.now()));
    CHECK(r.reset == 500ms);
}
