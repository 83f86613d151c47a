// resil/redis/rate_limiter.hpp against a real redis-server: the seed's
// numbers across pods, agreement with the local token bucket, the bound
// granted ≤ r·t + B over a longer run, keys and their expiry, leasing, the
// script cache being flushed, and bad input.
#include <resil/deadline.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/redis.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/token_bucket.hpp>

#include <hiredis/hiredis.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/redis_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;
using redis_time = resil::redis::detail::rate_limiter_access;

namespace {

resil_test::redis_server& server() {
    static resil_test::redis_server redis;
    return redis;
}

rate_limiter_options options_for(const std::string& key, double rate = 50, std::int64_t burst = 100) {
    rate_limiter_options o;
    o.rate = rate;
    o.burst = burst;
    o.port = server().port();
    o.key = key;
    o.connect_timeout = 500ms;  // generous: a loaded machine, sanitizers
    o.reply_timeout = 500ms;
    o.connections = 2;
    return o;
}

// Redis time for the tests' golden traces: microseconds since the script's
// epoch, far from any real TIME.
constexpr std::int64_t t0_us = 1'000'000'000'000;

}  // namespace

TEST_CASE("redis limiter: 4 pods share 50/s burst 100; 300 requests over the first second -> 149 granted, 151 rejected, Retry-After 1 s") {
    // Deterministic: the script runs at given Redis times (a test-only
    // override of TIME), the i-th request at i/300 s, round robin over four
    // limiters with their own connections. A local token bucket on the manual
    // clock sees the same instants and must decide every request alike.
    std::vector<std::unique_ptr<rate_limiter>> pods;
    for (int p = 0; p < 4; ++p) pods.push_back(std::make_unique<rate_limiter>(options_for("seed")));
    resil::testing::manual_clock clock;
    const auto c0 = clock.now();
    resil::basic_token_bucket<resil::testing::manual_clock> local{{.rate = 50, .burst = 100}, clock};

    int granted = 0, rejected = 0, disagreements = 0;
    std::vector<int> per_pod(4, 0);
    for (std::int64_t i = 0; i < 300; ++i) {
        const std::int64_t at_us = i * 1'000'000 / 300;
        clock.advance_to(c0 + std::chrono::microseconds{at_us});
        const auto r = redis_time::try_acquire_at(*pods[static_cast<std::size_t>(i % 4)], t0_us + at_us);
        const auto l = local.try_acquire();
        if (r.granted() != l.granted()) ++disagreements;
        if (r) {
            ++granted;
            ++per_pod[static_cast<std::size_t>(i % 4)];
            CHECK(r.source == decided_by::redis);
        } else {
            ++rejected;
            REQUIRE(r.status == rate_limit_status::rejected);
            CHECK(r.retry_after == 1s);
            CHECK(r.wait > 0ns);
            CHECK(r.wait <= 1s);
        }
    }
    CHECK(granted == 149);
    CHECK(rejected == 151);
    CHECK(disagreements == 0);
    for (int p : per_pod) CHECK(p > 0);  // every pod took part of the one quota

    // Then 50 of 50 at the agreed rate, from any pod.
    for (std::int64_t i = 0; i < 50; ++i) {
        INFO("request " << i << " at 1 + " << i << "/50 s");
        clock.advance_to(c0 + 1s + std::chrono::milliseconds{i * 20});
        CHECK(redis_time::try_acquire_at(*pods[static_cast<std::size_t>(i % 4)], t0_us + 1'000'000 + i * 20'000));
        CHECK(local.try_acquire());
    }
    // A rejection's wait matches the local bucket's, to the microsecond.
    clock.advance_to(c0 + 1990ms);
    const auto r = redis_time::try_acquire_at(*pods[0], t0_us + 1'990'000);
    const auto l = local.try_acquire();
    REQUIRE(r.status == rate_limit_status::rejected);
    REQUIRE(l.status == resil::token_bucket_status::rejected);
    CHECK(r.wait == l.wait);
    CHECK(r.retry_after == l.retry_after);
}

TEST_CASE("redis limiter: weights take several permits; a weight above the burst is exceeds_burst at once") {
    rate_limiter limiter{options_for("weights", 10, 100)};
    CHECK(redis_time::try_acquire_at(limiter, t0_us, 60));
    CHECK(redis_time::try_acquire_at(limiter, t0_us, 40));
    const auto r = redis_time::try_acquire_at(limiter, t0_us, 30);
    REQUIRE(r.status == rate_limit_status::rejected);
    CHECK(r.wait == 3s);  // 30 permits at 10/s
    CHECK(r.retry_after == 3s);
    CHECK(redis_time::try_acquire_at(limiter, t0_us + 3'000'000, 30));

    const auto before = limiter.metrics().round_trips;
    const auto big = limiter.try_acquire(101);
    CHECK(big.status == rate_limit_status::exceeds_burst);
    CHECK(big.retry_after == 0s);
    CHECK(limiter.metrics().round_trips == before);  // no round trip, no wait
    CHECK(limiter.try_acquire(0));                     // nothing asked: granted
    CHECK_THROWS_WITH(limiter.try_acquire(-1),
                      "resil::redis::rate_limiter: cannot take a negative number of permits, got -1");
}

TEST_CASE("redis limiter: keys are namespaced with a hash tag and expire when the quota is full again") {
    rate_limiter limiter{options_for("ttl-check", 50, 100)};
    CHECK(limiter.redis_key() == "resil:rl:{ttl-check}");
    REQUIRE(limiter.try_acquire());
    // One permit at 50/s is back in 20 ms; the key lives 1 ms longer (Redis
    // counts expiry from the command's whole millisecond: see the next test).
    const auto one = std::stoll(server().command({"PTTL", limiter.redis_key()}));
    CHECK(one > 0);
    CHECK(one <= 21);
    for (int i = 0; i < 49; ++i) REQUIRE(limiter.try_acquire());
    const auto fifty = std::stoll(server().command({"PTTL", limiter.redis_key()}));
    CHECK(fifty > 900);
    CHECK(fifty <= 1001);  // 50 permits: full again within 1 s
    // An idle quota costs no memory: the key goes once the quota is full.
    std::this_thread::sleep_for(1100ms);
    CHECK(server().command({"EXISTS", limiter.redis_key()}) == "0");

    rate_limiter_options o = options_for("x");
    o.key_prefix = "";
    CHECK(rate_limiter{o}.redis_key() == "{x}");
}

TEST_CASE("redis limiter: a key never expires before its TAT, though Redis keeps expiry in whole milliseconds") {
    // Redis sets PX from the command's millisecond, which may be up to 1 ms
    // before TIME's microsecond: a TTL of exactly the time to the TAT,
    // rounded up to milliseconds, could let the key go early, and a missing
    // key reads as a full quota (at 1e5/s, up to 100 permits too many).
    namespace gcra = resil::detail::gcra;
    rate_limiter limiter{options_for("ttl-vs-tat", 1e5, 1000)};
    const auto p = gcra::make_params(1e5, 1000);
    int early = 0, seen = 0;
    for (int i = 0; i < 200; ++i) {
        // A fresh quota each time, 3 to 8 ms of permits taken: a TTL of a few ms.
        const std::string key = "ttl-vs-tat-" + std::to_string(i);
        REQUIRE(limiter.try_acquire_for(key, 300 + (i * 37) % 500).source == decided_by::redis);
        // The value and its expiry read at one instant (a script), if the key is still there.
        const auto read = server().command(
            {"EVAL", "local v = redis.call('GET', KEYS[1]) if not v then return 0 end return {v, redis.call('PEXPIRETIME', KEYS[1])}",
             "1", "resil:rl:{" + key + "}"});
        if (read == "0") continue;  // gone already: a stalled machine
        ++seen;
        const auto space = read.find(' ');
        REQUIRE(space != std::string::npos);
        const auto value = read.substr(0, space);
        const auto expires_ms = std::stoll(read.substr(space + 1));
        // "<µs>.<q><TAT hi><TAT lo>": the TAT, exactly, in the last 20 digits.
        REQUIRE(value.size() > 31);
        const auto tat = std::stoll(value.substr(value.size() - 20, 10)) << 32 | std::stoll(value.substr(value.size() - 10));
        const auto tat_unix_ns = gcra::first_ns_at(p, tat) + 1'700'000'000'000'000'000;
        if (expires_ms * 1'000'000 < tat_unix_ns) ++early;
    }
    CAPTURE(seen);
    CHECK(seen >= 100);
    CHECK(early == 0);
}

TEST_CASE("redis limiter: a real-time run never grants more than r·t + B, whatever the split between clients") {
    constexpr double rate = 200;
    constexpr std::int64_t burst = 50;
    constexpr int clients = 4;
    std::vector<std::unique_ptr<rate_limiter>> pods;
    for (int p = 0; p < clients; ++p)
        pods.push_back(std::make_unique<rate_limiter>(options_for("long-run", rate, burst)));
    using clock = std::chrono::steady_clock;
    std::vector<std::vector<clock::time_point>> grants(clients);
    const auto start = clock::now();  // before any request: the bound holds from here
    const auto end = start + 1200ms;
    std::vector<std::thread> threads;
    for (int p = 0; p < clients; ++p) {
        threads.emplace_back([&, p] {
            std::uint64_t calls = 0;
            while (clock::now() < end) {
                // Uneven split: client p asks p + 1 times as often.
                if (++calls % static_cast<std::uint64_t>(clients - p) != 0) {
                    std::this_thread::sleep_for(200us);
                    continue;
                }
                if (pods[static_cast<std::size_t>(p)]->try_acquire()) grants[static_cast<std::size_t>(p)].push_back(clock::now());
            }
        });
    }
    for (auto& t : threads) t.join();
    std::vector<clock::time_point> all;
    for (auto& g : grants) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    // The k-th grant was answered at all[k-1]; Redis decided it no later, so
    // the quota allowed at most r·(all[k-1] − start) + B grants by then.
    std::size_t violations = 0;
    for (std::size_t k = 1; k <= all.size(); ++k) {
        const double t = std::chrono::duration<double>(all[k - 1] - start).count();
        if (static_cast<double>(k) > rate * t + static_cast<double>(burst) + 1e-9) ++violations;
    }
    CHECK(violations == 0);
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    CAPTURE(all.size(), elapsed);
    CHECK(static_cast<double>(all.size()) <= rate * elapsed + burst);
    // And the limiter is not simply refusing: most of the allowance was used.
    CHECK(static_cast<double>(all.size()) >= 0.8 * (rate * 1.2 + burst));
}

TEST_CASE("redis limiter: acquire reserves in Redis and sleeps until the permits exist, never past the deadline") {
    rate_limiter limiter{options_for("acquire", 10, 1)};
    REQUIRE(limiter.try_acquire());  // empty now: the next permit in 100 ms
    const auto t = std::chrono::steady_clock::now();
    const auto r = limiter.acquire(resil::deadline::after(1s));
    CHECK(r);
    CHECK(resil_test::since(t) >= 60ms);  // slept (100 ms less the round trip)
    CHECK(resil_test::since(t) <= 100ms + resil_test::slack);
    // The next one would exist only after the deadline: rejected at once.
    const auto t2 = std::chrono::steady_clock::now();
    const auto late = limiter.acquire(resil::deadline::after(30ms));
    CHECK(late.status == rate_limit_status::rejected);
    CHECK(resil_test::since(t2) < 30ms + resil_test::slack);
    CHECK(late.retry_after == 1s);
    // Cancelled before it starts: nothing asked.
    std::stop_source stop;
    stop.request_stop();
    CHECK(limiter.acquire(resil::deadline::after(1s), 1, stop.get_token()).status == rate_limit_status::cancelled);
}

TEST_CASE("redis limiter: SCRIPT FLUSH while running -> the next decision reloads the script and succeeds") {
    rate_limiter limiter{options_for("flush", 1000, 1000)};
    for (int i = 0; i < 5; ++i) REQUIRE(limiter.try_acquire());
    CHECK(server().command({"SCRIPT", "FLUSH"}) == "OK");
    const auto r = limiter.try_acquire();
    CHECK(r);
    CHECK(r.source == decided_by::redis);
    CHECK(limiter.metrics().script_loads == 1);
    CHECK(limiter.metrics().store_failures == 0);
    for (int i = 0; i < 5; ++i) CHECK(limiter.try_acquire());
    CHECK(limiter.metrics().script_loads == 1);
}

TEST_CASE("redis limiter: leasing takes k permits per round trip; admissions stay within the quota plus k − 1 per pod") {
    constexpr std::int64_t k = 10;
    constexpr int pods_n = 3;
    std::vector<std::unique_ptr<rate_limiter>> pods;
    for (int p = 0; p < pods_n; ++p) {
        auto o = options_for("lease", 50, 100);
        o.lease = k;
        pods.push_back(std::make_unique<rate_limiter>(o));
    }
    int granted = 0;
    std::uint64_t trips = 0;
    for (std::int64_t i = 0; i < 300; ++i) {
        if (redis_time::try_acquire_at(*pods[static_cast<std::size_t>(i % pods_n)], t0_us + i * 1'000'000 / 300)) ++granted;
    }
    for (auto& p : pods) trips += p->metrics().round_trips;
    CAPTURE(granted, trips);
    // The shared quota allowed 149; a pod's unspent lease (≤ k − 1) is
    // admission it may add later, or quota it holds back from others.
    CHECK(granted <= 149 + pods_n * (k - 1));
    CHECK(granted >= 149 - pods_n * (k - 1));
    std::uint64_t lease_grants = 0;
    for (auto& p : pods) lease_grants += p->metrics().lease_grants;
    CHECK(lease_grants > 0);
    CHECK(trips < 300);  // amortised: fewer round trips than decisions

    // The bound, exactly: one pod drains a full quota through leases; what the
    // other pods then get plus its unspent lease never exceeds B + k − 1.
    auto o = options_for("lease-bound", 1, 100);  // 1/s: no refill to speak of in the test
    o.lease = k;
    rate_limiter a{o}, b{o};
    int from_a = 0, from_b = 0;
    for (int i = 0; i < 95; ++i) from_a += redis_time::try_acquire_at(a, t0_us, 1) ? 1 : 0;
    for (int i = 0; i < 200; ++i) from_b += redis_time::try_acquire_at(b, t0_us, 1) ? 1 : 0;
    for (int i = 0; i < 200; ++i) from_a += redis_time::try_acquire_at(a, t0_us, 1) ? 1 : 0;
    CAPTURE(from_a, from_b);
    CHECK(from_a + from_b == 100);  // everything leased was spent: exact
    CHECK(from_a >= 95);
}

TEST_CASE("redis limiter: a lease's grants report the lease's permits plus what Redis reported when it was taken") {
    auto o = options_for("lease-state", 1, 100);  // 1/s: nothing refills at one instant
    o.lease = 10;
    rate_limiter limiter{o};
    // The refill: 10 taken from Redis (90 left there), 1 spent, 9 held here.
    const auto refill = redis_time::try_acquire_at(limiter, t0_us, 1);
    REQUIRE(refill.source == decided_by::redis);
    CHECK(refill.remaining == 99);
    CHECK(refill.reset > 999ms);  // the next permit in 1 s
    CHECK(refill.reset <= 1s);
    for (std::int64_t left = 8; left >= 0; --left) {
        const auto r = redis_time::try_acquire_at(limiter, t0_us, 1);
        REQUIRE(r.source == decided_by::lease);
        CHECK(r.remaining == 90 + left);
        CHECK(r.reset > 0ns);
        CHECK(r.reset <= refill.reset);  // counted down since
    }
    // Spent: the next refill asks Redis again, which now holds 90.
    const auto next = redis_time::try_acquire_at(limiter, t0_us, 1);
    CHECK(next.source == decided_by::redis);
    CHECK(next.remaining == 89);
}

TEST_CASE("redis limiter: options are validated in one place, in the house form") {
    auto o = options_for("ok");
    CHECK_FALSE(o.validate());
    auto message = [](const rate_limiter_options& bad) {
        const auto v = bad.validate();
        return v ? v->message() : std::string("valid");
    };
    auto bad = o;
    bad.rate = 0;
    CHECK(message(bad) == "`rate` must be in [0.001, 1e6], got 0");
    bad = o;
    bad.burst = 0;
    CHECK(message(bad) == "`burst` must be in [1, 1000000000000], got 0");
    bad = o;
    bad.key = "";
    CHECK(message(bad) ==
          "`key` must be 1 to 200 printable ASCII characters without spaces, '{' or '}', got \"\" (0 characters)");
    bad.key = "a{b}";
    CHECK(message(bad).find("`key` must be 1 to 200 printable ASCII characters") == 0);
    bad.key = "has space";
    CHECK(bad.validate());
    bad.key = std::string("nul\0byte", 8);
    CHECK(message(bad).find("\"nul\\x00byte\"") != std::string::npos);
    bad.key = std::string(201, 'k');
    CHECK(bad.validate());
    bad = o;
    bad.key_prefix = "a b";
    CHECK(message(bad).find("`key_prefix` must be up to 200") == 0);
    bad = o;
    bad.reply_timeout = 0ms;
    CHECK(message(bad) == "`reply_timeout` must be in [1ms, 1m], got 0s");
    bad = o;
    bad.connections = 0;
    CHECK(message(bad) == "`connections` must be in [1, 256], got 0");
    bad = o;
    bad.lease = 101;
    CHECK(message(bad) == "`lease` must be at most burst (100), got 101");
    bad = o;
    bad.reconnect_backoff_max = 10ms;
    CHECK(message(bad) == "`reconnect_backoff_max` must be in [50ms, 1m], got 10ms");
    bad = o;
    bad.expected_pods = 0;
    CHECK(message(bad) == "`expected_pods` must be in [1, 100000], got 0");
    bad = o;
    bad.max_wait = -1ms;
    CHECK(message(bad) == "`max_wait` must be in [0s, 24h], got -1ms");
    bad = o;
    bad.max_wait = std::chrono::milliseconds::max();  // now() + max_wait would overflow
    CHECK(message(bad).find("`max_wait` must be in [0s, 24h], got ") == 0);
    bad = o;
    bad.max_wait = 24h;
    CHECK_FALSE(bad.validate());
    bad = o;
    bad.host = "";
    CHECK(message(bad) == "`host` must be a host name or address of 1 to 255 characters, got \"\" (0 characters)");
    bad = o;
    bad.rate = 0.001;
    bad.burst = 2'000'000;  // 2e9 s to refill
    CHECK(message(bad) == "`burst` must be at most rate × 1e9 s (the time to refill an empty quota), got 2000000");
    bad = o;
    bad.port = 70000;
    CHECK(message(bad) == "`port` must be in [1, 65535], got 70000");
    CHECK_THROWS_WITH(rate_limiter{bad}, "resil::redis::rate_limiter: `port` must be in [1, 65535], got 70000");
}

namespace {
// A reply as hiredis would build it from raw RESP bytes.
resil::redis::detail::reply_ptr parse_resp(const std::string& bytes) {
    redisReader* reader = redisReaderCreate();
    redisReaderFeed(reader, bytes.data(), bytes.size());
    void* reply = nullptr;
    REQUIRE(redisReaderGetReply(reader, &reply) == REDIS_OK);
    redisReaderFree(reader);
    REQUIRE(reply != nullptr);
    return resil::redis::detail::reply_ptr{static_cast<redisReply*>(reply)};
}
}  // namespace

TEST_CASE("redis limiter: a script answer of the wrong shape is a clear error, never a crash") {
    using resil::redis::detail::read_answer;
    using resil::redis::detail::reply_kind;
    // 1000/s, burst 10: one permit is 1e6 units of 1 ns, τ = 1e7. Redis's
    // instant 2^32 + 5 ns: the pairs' both halves in use.
    const auto p = resil::detail::gcra::make_params(1000, 10);
    constexpr long long now = (1LL << 32) + 5;
    auto answer = [](long long taken, long long tat, long long at = (1LL << 32) + 5) {
        std::string resp = "*5\r\n";
        for (const long long v : {taken, tat >> 32, tat & 0xffffffffLL, at >> 32, at & 0xffffffffLL}) {
            // Appended piece by piece: g++ 12 at -O3 warns (-Wrestrict, a
            // false positive) on ":" + std::to_string(v).
            resp += ':';
            resp += std::to_string(v);
            resp += "\r\n";
        }
        return resp;
    };
    const auto grant = read_answer(parse_resp(answer(1, now + 1'000'000)).get(), p, 1, 1, 0);
    REQUIRE(grant.kind == reply_kind::answer);
    CHECK(grant.answer.taken == 1);
    CHECK(grant.answer.wait_ns == 0);
    CHECK(grant.answer.remaining == 9);
    CHECK(grant.answer.reset_ns == 1'000'000);
    const auto reject = read_answer(parse_resp(answer(0, now + 10'000'000)).get(), p, 1, 1, 0);
    REQUIRE(reject.kind == reply_kind::answer);
    CHECK(reject.answer.taken == 0);
    CHECK(reject.answer.wait_ns == 1'000'000);
    CHECK(reject.answer.remaining == 0);
    CHECK(reject.answer.reset_ns == 1'000'000);
    CHECK(read_answer(nullptr, p, 1, 1, 0).error == "no reply");
    auto check_bad = [&](const std::string& resp, const std::string& says, std::int64_t look_us = 0) {
        const auto r = read_answer(parse_resp(resp).get(), p, 1, 1, look_us);
        CAPTURE(resp, r.error);
        CHECK(r.kind == reply_kind::bad_shape);
        CHECK(r.error.find(says) != std::string::npos);
    };
    check_bad("+OK\r\n", "must be an array of 5 integers, got a reply of type 5");
    // The previous script's answer (another version under the same SHA1 cannot be, but a proxy's may).
    check_bad("*3\r\n:1\r\n:0\r\n:9\r\n", "got an array of 3");
    check_bad("*5\r\n:1\r\n$1\r\nx\r\n:0\r\n:0\r\n:0\r\n", "element 1 is not an integer");
    check_bad("*5\r\n:1\r\n:0\r\n:0\r\n*0\r\n:0\r\n", "element 3 is not an integer");
    check_bad(answer(5, now + 5'000'000), "out of range (permits taken): {5, 1, 5000005, 1, 5} for 1 to 1 permits");
    check_bad(answer(-1, now), "out of range (permits taken)");
    check_bad(answer(1, -1), "out of range (TAT)");
    check_bad("*5\r\n:1\r\n:9223372036854775807\r\n:0\r\n:1\r\n:5\r\n", "out of range (TAT)");
    check_bad(answer(1, now + 1'000'000, 1LL << 62), "out of range (instant)");
    check_bad(answer(1, now + 1'000'000, -1), "out of range (instant)");
    // A grant the TAT does not account for, and a rejection it would grant.
    check_bad(answer(1, now), "a grant the TAT does not hold");
    check_bad(answer(0, now), "a rejection the TAT grants");
    // A grant whose permits exist only in 5 µs: a reservation, which only a
    // caller asking with that lookahead may get (try_acquire asks with 0,
    // and would otherwise sleep unasked).
    check_bad(answer(1, now + 10'000'000 + 5'000), "a grant beyond the lookahead", 0);
    check_bad(answer(1, now + 10'000'000 + 5'000), "within 4 us", 4);
    const auto reserved = read_answer(parse_resp(answer(1, now + 10'000'000 + 5'000)).get(), p, 1, 1, 5);
    REQUIRE(reserved.kind == reply_kind::answer);
    CHECK(reserved.answer.wait_ns == 5'000);
    // A rejection's wait is not bounded by the lookahead (it is how long until the permits exist).
    const auto far = read_answer(parse_resp(answer(0, now + 10'000'000 + 7'000'000'000)).get(), p, 1, 1, 0);
    REQUIRE(far.kind == reply_kind::answer);
    CHECK(far.answer.wait_ns == 7'001'000'000);
    // The largest TAT in range, far ahead: the wait is capped at 2^61 ns (73 years).
    const auto century = read_answer(parse_resp(answer(0, (3LL << 61) - 1)).get(), p, 1, 1, 0);
    REQUIRE(century.kind == reply_kind::answer);
    CHECK(century.answer.wait_ns == 1LL << 61);
    CHECK(century.answer.reset_ns == 1LL << 61);
    const auto noscript = read_answer(parse_resp("-NOSCRIPT No matching script.\r\n").get(), p, 1, 1, 0);
    CHECK(noscript.kind == reply_kind::noscript);
    const auto err = read_answer(parse_resp("-WRONGTYPE Operation against a key\r\n").get(), p, 1, 1, 0);
    CHECK(err.kind == reply_kind::error);
    CHECK(err.error == "WRONGTYPE Operation against a key");
}

TEST_CASE("redis limiter: a key holding something else is an error reply: counted, then the failure policy decides") {
    for (auto policy : {resil::redis::failure_policy::fail_open, resil::redis::failure_policy::fail_closed}) {
        auto o = options_for("occupied");
        o.on_failure = policy;
        rate_limiter limiter{o};
        CHECK(server().command({"SET", limiter.redis_key(), "not a number"}) == "OK");
        const auto r = limiter.try_acquire();
        CHECK(r.source == decided_by::fallback);
        CHECK(limiter.last_error().find("does not hold a rate limiter state") != std::string::npos);
        CHECK(limiter.metrics().error_replies == 1);
        CHECK_FALSE(limiter.redis_down());  // Redis answered: no backoff
        if (policy == resil::redis::failure_policy::fail_open) CHECK(r);
        else CHECK(r.status == rate_limit_status::unavailable);
        CHECK(server().command({"DEL", limiter.redis_key()}) == "1");
        CHECK(server().command({"HSET", limiter.redis_key(), "f", "v"}) == "1");
        CHECK(limiter.try_acquire().source == decided_by::fallback);
        CHECK(limiter.last_error().find("WRONGTYPE") != std::string::npos);
        CHECK(server().command({"DEL", limiter.redis_key()}) == "1");
        CHECK(limiter.try_acquire().source == decided_by::redis);
    }
}

TEST_CASE("redis limiter: as a pipeline policy, like token_bucket: rate_limited with the wait; max_wait paces within the deadline") {
    std::vector<resil::events::rejected> seen;
    struct rejection_log {
        std::vector<resil::events::rejected>* out;
        void operator()(const resil::events::rejected& e) const { out->push_back(e); }
    };
    rate_limiter limiter{options_for("pipeline", 10, 2)};
    const auto pipe = resil::pipeline(std::ref(limiter)).with_listener(rejection_log{&seen});
    int calls = 0;
    auto call = [&] { return ++calls; };
    CHECK(pipe(call, resil::always_success).ok());
    CHECK(pipe(call, resil::always_success).ok());
    const auto out = pipe(call, resil::always_success);
    CHECK(out.reason() == resil::reason::rate_limited);
    REQUIRE(out.retry_after());
    CHECK(*out.retry_after() > 0ms);
    CHECK(*out.retry_after() <= 100ms);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].reason == resil::reason::rate_limited);
    CHECK(seen[0].retry_after == out.retry_after());
    CHECK(calls == 2);

    // With max_wait the call waits for its permit (reserved in Redis)...
    auto o = options_for("pipeline-pacing", 10, 1);
    o.max_wait = 500ms;
    rate_limiter pacing{o};
    const auto paced = resil::pipeline(std::ref(pacing));
    CHECK(paced(call, resil::always_success).ok());
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(paced(call, resil::always_success).ok());  // 100 ms later
    CHECK(resil_test::since(t0) >= 50ms);
    // ...but never past the call's deadline: rejected at once.
    const auto tight = resil::pipeline(resil::deadline_policy{30ms}, std::ref(pacing));
    const auto t1 = std::chrono::steady_clock::now();
    CHECK(tight(call, resil::always_success).reason() == resil::reason::rate_limited);
    CHECK(resil_test::since(t1) < 30ms + resil_test::slack);
    // The longest max_wait (a day) without a call deadline: the patience
    // is a day from now, no overflow; the permit exists in 100 ms.
    o.max_wait = 24h;
    o.key = "pipeline-pacing-day";
    rate_limiter patient{o};
    const auto day = resil::pipeline(std::ref(patient));
    CHECK(day(call, resil::always_success).ok());
    const auto t2 = std::chrono::steady_clock::now();
    CHECK(day(call, resil::always_success).ok());
    CHECK(resil_test::since(t2) >= 50ms);
    CHECK(resil_test::since(t2) < 100ms + resil_test::slack);
}

TEST_CASE("redis limiter: try_acquire_for keeps a quota per key (tenants), each namespaced; a bad key is a clear error") {
    rate_limiter limiter{options_for("tenants-default", 10, 3)};
    for (int i = 0; i < 3; ++i) {
        CHECK(limiter.try_acquire_for("tenant-a"));
        CHECK(limiter.try_acquire_for("tenant-b"));
    }
    CHECK(limiter.try_acquire_for("tenant-a").status == rate_limit_status::rejected);
    CHECK(limiter.try_acquire_for("tenant-b").status == rate_limit_status::rejected);
    CHECK(limiter.try_acquire_for("tenant-c", 3));  // its own full quota
    CHECK(limiter.try_acquire());                    // the limiter's own key is untouched
    CHECK(server().command({"EXISTS", "resil:rl:{tenant-a}"}) == "1");
    CHECK(limiter.try_acquire_for("tenant-d", 4).status == rate_limit_status::exceeds_burst);
    const auto waited = limiter.acquire_for("tenant-a", resil::deadline::after(1s));
    CHECK(waited);
    CHECK(waited.wait > 0ns);

    CHECK_THROWS_WITH(limiter.try_acquire_for("a b"),
                      "resil::redis::rate_limiter: `key` must be 1 to 200 printable ASCII characters without spaces, "
                      "'{' or '}', got \"a b\" (3 characters)");
    CHECK_THROWS_AS(limiter.try_acquire_for(""), std::invalid_argument);
    CHECK_THROWS_AS(limiter.try_acquire_for("x{y}"), std::invalid_argument);
    CHECK_THROWS_AS(limiter.try_acquire_for(std::string(201, 'k')), std::invalid_argument);
    CHECK_THROWS_AS(limiter.acquire_for("new\nline", resil::deadline::after(1s)), std::invalid_argument);
    CHECK(limiter.try_acquire_for(std::string(200, 'k')));  // the longest key
    CHECK_THROWS_AS(limiter.try_acquire_for("tenant-e", -1), std::invalid_argument);
}

TEST_CASE("redis limiter: a forked child opens connections of its own, never talks on its parent's") {
    rate_limiter limiter{options_for("fork", 1000, 1000)};
    REQUIRE(limiter.try_acquire());
    REQUIRE(limiter.metrics().connects == 1);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // In the child: Catch's state is the parent's, so answer by exit code.
        const bool ok = limiter.try_acquire().source == decided_by::redis && limiter.metrics().connects == 2;
        ::_exit(ok ? 0 : 1);
    }
    for (int i = 0; i < 20; ++i) CHECK(limiter.try_acquire().source == decided_by::redis);
    int status = -1;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(limiter.metrics().connects == 1);  // the parent kept its connection
    CHECK(limiter.metrics().store_failures == 0);
}

TEST_CASE("redis limiter: the script and the local token bucket decide alike, weights and waits included, at several rates") {
    // One algorithm, two places: detail/gcra.hpp in process, the Lua script in
    // Redis. At rates whose permit interval is a whole number of microseconds
    // both are exact, so every decision and every wait must match.
    struct quota {
        double rate;
        std::int64_t burst;
    };
    std::uint64_t seed = 0x9e3779b97f4a7c15u;
    auto next = [&seed](std::uint64_t bound) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        return seed % bound;
    };
    int case_number = 0;
    for (const quota q : {quota{50, 100}, quota{1000, 10}, quota{0.5, 3}, quota{250'000, 1000}}) {
        rate_limiter remote{options_for("agree-" + std::to_string(case_number++), q.rate, q.burst)};
        resil::testing::manual_clock clock;
        const auto c0 = clock.now();
        resil::basic_token_bucket<resil::testing::manual_clock> local{{.rate = q.rate, .burst = q.burst}, clock};
        const auto interval_us = static_cast<std::uint64_t>(1e6 / q.rate);
        std::int64_t at_us = 0;
        int granted = 0, disagreements = 0;
        for (int i = 0; i < 400; ++i) {
            at_us += static_cast<std::int64_t>(next(interval_us * 3));
            const auto weight = 1 + static_cast<std::int64_t>(next(static_cast<std::uint64_t>(q.burst + 1) / 2 + 1));
            clock.advance_to(c0 + std::chrono::microseconds{at_us});
            const auto r = redis_time::try_acquire_at(remote, t0_us + at_us, weight);
            const auto l = local.try_acquire(weight);
            if (r.granted() != l.granted() || r.wait != l.wait || r.retry_after != l.retry_after) {
                ++disagreements;
                UNSCOPED_INFO("rate " << q.rate << " request " << i << " weight " << weight << ": redis "
                                      << r.granted() << "/" << r.wait.count() << " ns, local " << l.granted() << "/"
                                      << l.wait.count() << " ns");
            }
            granted += r ? 1 : 0;
        }
        CAPTURE(q.rate, granted);
        CHECK(disagreements == 0);
        CHECK(granted > 0);
        CHECK(granted < 400);  // both outcomes were exercised
    }
}
