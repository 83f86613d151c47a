// resil/redis/rate_limiter.hpp's arithmetic at rates whose permit interval
// is not a whole number of microseconds (3/s, 7/s, 12,345/s, 300,000/s):
// the Lua script, run by a real redis-server at given Redis instants, and
// the local token bucket (detail/gcra.hpp) on a manual clock whose origin is
// the script's epoch must take every decision alike: granted or not, the
// wait, Retry-After, and where the quota stands after it (remaining, reset).
// Also: the script's pair arithmetic against gcra.hpp's integers, a key
// written by the previous script (a double of microseconds) read without
// granting more than it allows, and both scripts sharing one key.
#include <resil/redis.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/token_bucket.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/redis_server.hpp"

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

rate_limiter_options options_for(const std::string& key, double rate, std::int64_t burst) {
    rate_limiter_options o;
    o.rate = rate;
    o.burst = burst;
    o.port = server().port();
    o.key = key;
    o.connect_timeout = 2s;  // generous: a loaded machine, sanitizers
    o.reply_timeout = 2s;
    o.connections = 1;
    o.on_failure = resil::redis::failure_policy::fail_closed;  // a failure shows, never hides as a grant
    return o;
}

// Redis instants of the traces: microseconds since the script's epoch
// (2023-11-14 22:13:20 UTC), about where TIME is in 2026 (the double of the
// old script had steps of 2^-6 µs there).
constexpr std::int64_t t0_us = 97'000'000'000'000;

// A local token bucket whose origin is the script's epoch: both convert the
// same nanoseconds since the same origin into GCRA's units.
struct local_twin {
    resil::testing::manual_clock clock;
    resil::time_point epoch = clock.now();
    resil::basic_token_bucket<resil::testing::manual_clock> bucket;

    local_twin(double rate, std::int64_t burst) : bucket({.rate = rate, .burst = burst}, clock) {}

    resil::time_point at(std::int64_t redis_us) const { return epoch + std::chrono::microseconds{redis_us}; }
    resil::token_bucket_result try_acquire(std::int64_t redis_us, std::int64_t n) {
        clock.advance_to(at(redis_us));
        return bucket.try_acquire(n);
    }
    // Whole permits now (the clock's instant).
    std::int64_t remaining() const { return bucket.available(clock.now()); }
    // The IETF reset, from the bucket's public readings alone: the least
    // wait after which it holds one whole permit more (zero when full).
    resil::duration reset() const {
        const auto now = clock.now();
        const auto whole = bucket.available(now);
        if (whole >= bucket.options().burst) return resil::duration::zero();
        std::int64_t lo = 0, hi = static_cast<std::int64_t>(2e9 / bucket.options().rate) + 2;
        REQUIRE(bucket.available(now + resil::duration{hi}) > whole);
        while (hi - lo > 1) {  // available(now + lo) == whole < available(now + hi)
            const auto mid = lo + (hi - lo) / 2;
            (bucket.available(now + resil::duration{mid}) > whole ? hi : lo) = mid;
        }
        return resil::duration{hi};
    }
};

struct quota {
    double rate;
    std::int64_t burst;
};

std::uint64_t xorshift(std::uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

}  // namespace

TEST_CASE("redis exact: 300,000/s burst 10, one request per µs for 30 ms -> 9,009 granted, as exact GCRA and the local bucket") {
    rate_limiter remote{options_for("exact-300k", 300'000, 10)};
    local_twin local{300'000, 10};
    int granted = 0, local_granted = 0, first_disagreement = -1;
    for (int i = 0; i < 30'000; ++i) {
        const auto r = redis_time::try_acquire_at(remote, t0_us + i);
        REQUIRE(r.source == decided_by::redis);
        const auto l = local.try_acquire(t0_us + i, 1);
        granted += r ? 1 : 0;
        local_granted += l ? 1 : 0;
        if (first_disagreement < 0 && r.granted() != l.granted()) first_disagreement = i;
    }
    CAPTURE(first_disagreement);
    // Exact GCRA: 10 at once, then one every 10/3 µs over 29,999 µs: 10 + 8,999.
    CHECK(granted == 9'009);
    CHECK(local_granted == 9'009);
    CHECK(first_disagreement == -1);
}

TEST_CASE("redis exact: a fresh 3/s quota of 4 gives 2 and then 2 at one instant") {
    rate_limiter remote{options_for("exact-3-fresh", 3, 4)};
    CHECK(redis_time::try_acquire_at(remote, t0_us, 2));
    CHECK(redis_time::try_acquire_at(remote, t0_us, 2));
    const auto third = redis_time::try_acquire_at(remote, t0_us, 1);
    REQUIRE(third.status == rate_limit_status::rejected);
    // One permit refills in 1/3 s: 333,333,334 ns, the local bucket's unit grid.
    local_twin local{3, 4};
    REQUIRE(local.try_acquire(t0_us, 4));
    const auto l = local.try_acquire(t0_us, 1);
    CHECK(third.wait == l.wait);
    CHECK(third.retry_after == 1s);
}

TEST_CASE("redis exact: the script and the local bucket decide alike, decision by decision, at 3/s, 7/s, 12,345/s and 300,000/s") {
    std::uint64_t seed = 0x2545f4914f6cdd1du;
    int case_number = 0;
    for (const quota q : {quota{3, 4}, quota{7, 10}, quota{12'345, 100}, quota{300'000, 10}, quota{7, 1}}) {
        rate_limiter remote{options_for("exact-agree-" + std::to_string(case_number++), q.rate, q.burst)};
        local_twin local{q.rate, q.burst};
        const auto interval_ns = static_cast<std::uint64_t>(1e9 / q.rate);
        std::int64_t at_us = t0_us;
        int granted = 0, rejected = 0, disagreements = 0;
        for (int i = 0; i < 600; ++i) {
            // Gaps of up to three permit intervals, one in five requests at
            // the same instant as the one before; weights up to half the burst.
            const auto pick = xorshift(seed);
            if (pick % 5 != 0) at_us += static_cast<std::int64_t>(xorshift(seed) % (3 * interval_ns / 1000 + 2));
            const auto weight =
                1 + static_cast<std::int64_t>(xorshift(seed) % static_cast<std::uint64_t>(q.burst / 2 + 1));
            const auto r = redis_time::try_acquire_at(remote, at_us, weight);
            REQUIRE(r.source == decided_by::redis);
            const auto l = local.try_acquire(at_us, weight);
            const auto remaining = local.remaining();
            const auto reset = local.reset();
            if (r.granted() != l.granted() || r.wait != l.wait || r.retry_after != l.retry_after ||
                r.remaining != remaining || r.reset != reset) {
                if (disagreements < 5)
                    UNSCOPED_INFO("rate " << q.rate << " request " << i << " at " << at_us - t0_us << " us, weight "
                                          << weight << ": redis " << r.granted() << " wait " << r.wait.count()
                                          << " ns remaining " << r.remaining << " reset " << r.reset.count()
                                          << " ns, local " << l.granted() << " wait " << l.wait.count()
                                          << " ns remaining " << remaining << " reset " << reset.count() << " ns");
                ++disagreements;
            }
            (r ? granted : rejected) += 1;
        }
        CAPTURE(q.rate, q.burst, granted, rejected);
        CHECK(disagreements == 0);
        CHECK(granted > 50);
        CHECK(rejected > 50);  // both outcomes were exercised
    }
}

TEST_CASE("redis exact: a fresh 7/s quota of 10 has 9 left after one permit, the next one in 1/7 s") {
    rate_limiter remote{options_for("exact-7-remaining", 7, 10)};
    local_twin local{7, 10};
    const auto r = redis_time::try_acquire_at(remote, t0_us, 1);
    REQUIRE(r);
    REQUIRE(local.try_acquire(t0_us, 1));
    CHECK(r.remaining == 9);
    CHECK(r.reset == local.reset());
    CHECK(r.reset >= 142'857'142ns);  // 1e9 / 7 ns, on the bucket's unit grid
    CHECK(r.reset <= 142'857'143ns);
    // Full again long after: a permit taken leaves 9 again.
    const auto full = redis_time::try_acquire_at(remote, t0_us + 10'000'000, 1);
    CHECK(full.remaining == 9);
    const auto rejected = redis_time::try_acquire_at(remote, t0_us + 10'000'000, 10);
    REQUIRE(rejected.status == rate_limit_status::rejected);
    CHECK(rejected.remaining == 9);  // a rejection takes nothing
    CHECK(rejected.reset == r.reset);
}

namespace {

// Many cases in one EVAL: the script's pair functions on ARGV, flattened.
std::vector<std::int64_t> run_lua(const std::string& body, const std::vector<std::int64_t>& args) {
    std::vector<std::string> command{"EVAL", std::string(resil::redis::detail::gcra_lua_arithmetic) + body, "0"};
    for (const auto a : args) command.push_back(std::to_string(a));
    const std::string reply = server().command(command);
    std::vector<std::int64_t> out;
    std::size_t pos = 0;
    while (pos < reply.size()) {
        std::size_t used = 0;
        out.push_back(std::stoll(reply.substr(pos), &used));
        pos += used + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("redis exact: the script's pair arithmetic is gcra.hpp's, at random and at the edges") {
    namespace gcra = resil::detail::gcra;
    std::uint64_t seed = 0x9e3779b97f4a7c15u;
    constexpr std::int64_t word = std::int64_t{1} << 32;
    // units(ns, q) = ⌊ns·q / 2³²⌋ for ns ≤ 2⁶¹ + 2⁵⁹ and q in [2³², 2³³).
    std::vector<std::int64_t> args, expected;
    const std::uint64_t edges_q[] = {gcra::one_q32, gcra::one_q32 + 1, 2 * gcra::one_q32 - 1,
                                     gcra::make_params(7, 10).units_per_ns_q32,
                                     gcra::make_params(300'000, 10).units_per_ns_q32};
    const std::int64_t edges_ns[] = {0, 1, word - 1, word, gcra::max_elapsed_ns,
                                     gcra::max_elapsed_ns + gcra::max_lookahead_ns, 97'000'000'000'000'000};
    auto add_case = [&](std::int64_t ns, std::uint64_t q) {
        args.insert(args.end(), {ns >> 32, ns & (word - 1), static_cast<std::int64_t>(q)});
        const auto u = static_cast<std::int64_t>(gcra::mul_q32(static_cast<std::uint64_t>(ns), q));
        expected.insert(expected.end(), {u >> 32, u & (word - 1)});
    };
    for (const auto q : edges_q)
        for (const auto ns : edges_ns) add_case(ns, q);
    for (int i = 0; i < 400; ++i)
        add_case(static_cast<std::int64_t>(xorshift(seed) % static_cast<std::uint64_t>(gcra::max_elapsed_ns + gcra::max_lookahead_ns + 1)),
                 gcra::one_q32 + xorshift(seed) % gcra::one_q32);
    CHECK(run_lua(R"lua(
local out = {}
for i = 1, #ARGV, 3 do
  local h, l = units(tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
  out[#out + 1] = h
  out[#out + 1] = l
end
return out
)lua", args) == expected);

    // ns(split_us(µs)): microseconds to nanoseconds, clamped to 2⁶¹.
    args.clear();
    expected.clear();
    for (const std::int64_t us : {std::int64_t{0}, std::int64_t{999'999}, std::int64_t{1'000'000}, t0_us,
                                  std::int64_t{2'305'843'009'213'693}, std::int64_t{2'305'843'009'213'694},
                                  (std::int64_t{1} << 53) - 1, std::int64_t{-5}}) {
        args.push_back(us);
        const auto ns = us < 0 ? 0 : std::min(gcra::max_elapsed_ns, us * 1000);
        expected.insert(expected.end(), {ns >> 32, ns & (word - 1)});
    }
    for (int i = 0; i < 200; ++i) {
        const auto us = static_cast<std::int64_t>(xorshift(seed) % (std::uint64_t{1} << 52));
        args.push_back(us);
        const auto ns = std::min(gcra::max_elapsed_ns, us * 1000);
        expected.insert(expected.end(), {ns >> 32, ns & (word - 1)});
    }
    CHECK(run_lua(R"lua(
local out = {}
for i = 1, #ARGV do
  local h, l = ns(split_us(tonumber(ARGV[i])))
  out[#out + 1] = h
  out[#out + 1] = l
end
return out
)lua", args) == expected);

    // div(pair, d) = ⌊pair / d⌋ for d < 2⁴⁵ (exact below 2⁵³: the results kept so).
    args.clear();
    expected.clear();
    for (int i = 0; i < 300; ++i) {
        const auto d = 1 + static_cast<std::int64_t>(xorshift(seed) % (std::uint64_t{1} << (1 + i % 44)));
        const auto quotient = static_cast<std::int64_t>(xorshift(seed) % (std::uint64_t{1} << (i % 53)));
        // A dividend near a multiple of d, where a rounded division would err.
        const auto rest = i % 3 == 0 ? d - 1 : i % 3 == 1 ? 0 : static_cast<std::int64_t>(xorshift(seed) % static_cast<std::uint64_t>(d));
        if (quotient > (std::numeric_limits<std::int64_t>::max() - rest) / d) continue;
        const auto x = quotient * d + rest;
        args.insert(args.end(), {x >> 32, x & (word - 1), d});
        expected.push_back(x / d);
    }
    CHECK(run_lua(R"lua(
local out = {}
for i = 1, #ARGV, 3 do
  out[#out + 1] = div(tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]))
end
return out
)lua", args) == expected);
}

namespace {

// The previous version of the script: the TAT as a double of microseconds
// since the same epoch. ARGV: T (µs), τ (µs), n, want, lookahead (µs), now (µs).
constexpr const char* previous_script = R"lua(
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1700000000) * 1000000 + tonumber(t[2])
if ARGV[6] then now = tonumber(ARGV[6]) end
local T = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local look = tonumber(ARGV[5])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local v = tonumber(stored)
  if not v then return redis.error_reply('RESILSTATE ' .. KEYS[1] .. ' does not hold a rate limiter state') end
  if v > now then tat = v end
end
local new_tat = tat + n * T
local ready = new_tat - tau - now
if ready > look then return {0, math.ceil(ready), 0} end
local taken = n
local ttl = math.ceil((new_tat - now) / 1000)
if ttl < 1 then ttl = 1 end
if ARGV[6] then ttl = ttl + 60000 end
redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', ttl)
local remaining = math.floor((now + tau - new_tat) / T)
if remaining < 0 then remaining = 0 end
if ready < 0 then ready = 0 end
return {taken, math.ceil(ready), remaining}
)lua";

std::string real(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
}

// A decision of the previous script at Redis instant `now_us`: its reply
// as text ("1 0 3": taken, wait, remaining), or its error.
std::string previous_decision(const std::string& key, double rate, std::int64_t burst, std::int64_t n,
                              std::int64_t now_us) {
    const double T = 1e6 / rate;
    return server().command({"EVAL", previous_script, "1", key, real(T), real(T * static_cast<double>(burst)),
                             std::to_string(n), std::to_string(n), "0", std::to_string(now_us)});
}

bool previous_grants(const std::string& key, double rate, std::int64_t burst, std::int64_t n, std::int64_t now_us) {
    const auto reply = previous_decision(key, rate, burst, n, now_us);
    REQUIRE(reply.size() >= 5);  // three integers, not an error
    REQUIRE(std::isdigit(static_cast<unsigned char>(reply[0])));
    return reply[0] != '0';
}

}  // namespace

TEST_CASE("redis exact: a key the previous script wrote is read without granting more than it allows") {
    // 3/s, burst 4. The previous script takes all 4 at t0: its TAT is
    // t0 + 4/3 s, a double of microseconds. The first permit is back at
    // t0 + 1/3 s (333,333.33 µs): the previous script itself grants it from
    // t0 + 333,334 µs on.
    for (const std::int64_t probe : {std::int64_t{333'330}, std::int64_t{333'333}}) {
        const std::string key = "exact-migrate-" + std::to_string(probe);
        rate_limiter remote{options_for(key, 3, 4)};
        REQUIRE(previous_grants(remote.redis_key(), 3, 4, 4, t0_us));
        // Refused before the permit is back (the previous script refuses too)...
        const auto early = redis_time::try_acquire_at(remote, t0_us + probe, 1);
        CHECK(early.status == rate_limit_status::rejected);
        CHECK(early.remaining == 0);
        CHECK(early.wait <= 334'000ns + 10'000ns);  // the state was kept, not read as empty or lost
    }
    rate_limiter remote{options_for("exact-migrate-late", 3, 4)};
    REQUIRE(previous_grants(remote.redis_key(), 3, 4, 4, t0_us));
    // ...granted once it is (the conversion rounds up by nanoseconds only).
    CHECK(redis_time::try_acquire_at(remote, t0_us + 333'335, 1));
    CHECK(redis_time::try_acquire_at(remote, t0_us + 333'335, 1).status == rate_limit_status::rejected);

    // A value that is no state at all is an error reply, as before.
    rate_limiter other{options_for("exact-migrate-garbage", 3, 4)};
    for (const char* garbage : {"not a number", "nan", "inf", "1e300"}) {
        CHECK(server().command({"SET", other.redis_key(), garbage}) == "OK");
        const auto r = redis_time::try_acquire_at(other, t0_us, 1);
        CAPTURE(garbage);
        CHECK(r.status == rate_limit_status::unavailable);
        CHECK(other.last_error().find("does not hold a rate limiter state") != std::string::npos);
    }
}

TEST_CASE("redis exact: pods of the previous and this version share one key: one quota, no errors") {
    // 7/s, burst 10, alternate requests every 10 ms for 3 s from each
    // version: together they must stay within what one bucket allows.
    rate_limiter remote{options_for("exact-mixed", 7, 10)};
    local_twin local{7, 10};
    int granted = 0, local_granted = 0;
    for (std::int64_t i = 0; i < 300; ++i) {
        const std::int64_t at = t0_us + i * 10'000;
        if (i % 2 == 0) {
            const auto r = redis_time::try_acquire_at(remote, at, 1);
            REQUIRE(r.source == decided_by::redis);
            granted += r ? 1 : 0;
        } else {
            granted += previous_grants(remote.redis_key(), 7, 10, 1, at) ? 1 : 0;
        }
        local_granted += local.try_acquire(at, 1) ? 1 : 0;
    }
    CAPTURE(granted, local_granted);
    // One bucket: 10 + 7/s over 2.99 s = 30 (31 with the one refilling).
    CHECK(local_granted == 30);
    // Each hand-over rounds the TAT up by a microsecond or two: never more.
    CHECK(granted <= local_granted);
    CHECK(granted >= local_granted - 1);

    // A limiter at another rate reads the microseconds (converted rounding
    // up), not units of a grid that is not its own.
    rate_limiter a{options_for("exact-rate-change", 3, 4)}, b{options_for("exact-rate-change", 7, 4)};
    REQUIRE(redis_time::try_acquire_at(a, t0_us, 4));  // full again at t0 + 4/3 s
    // At 7/s one permit needs the TAT within 3/7 s of now: from t0 + 0.905 s.
    CHECK(redis_time::try_acquire_at(b, t0_us + 900'000, 1).status == rate_limit_status::rejected);
    CHECK(redis_time::try_acquire_at(b, t0_us + 910'000, 1));
}

TEST_CASE("redis exact: reservations (a lookahead) are the local bucket's too, at 7/s and 12,345/s") {
    // acquire() passes what is left of its deadline as a lookahead: the
    // script grants permits that exist within it, and the caller sleeps
    // until they do. Run the script as the limiter does, at given instants,
    // beside the local bucket's acquire() on its manual clock (whose sleep
    // moves the clock to the reserved instant).
    namespace gcra = resil::detail::gcra;
    redisContext* c = redisConnectWithTimeout("127.0.0.1", server().port(), timeval{2, 0});
    REQUIRE(c != nullptr);
    REQUIRE(c->err == 0);
    auto* loaded = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %b", resil::redis::detail::gcra_script.data(),
                                                         resil::redis::detail::gcra_script.size()));
    REQUIRE(loaded != nullptr);
    REQUIRE(loaded->type == REDIS_REPLY_STRING);
    const std::string sha(loaded->str, loaded->len);
    freeReplyObject(loaded);
    std::uint64_t seed = 0x853c49e6748fea9bu;
    int case_number = 0;
    for (const quota q : {quota{7, 3}, quota{12'345, 20}}) {
        const auto p = gcra::make_params(q.rate, q.burst);
        const resil::redis::detail::script_constants constants{p};
        const std::string key = "resil:rl:{exact-reserve-" + std::to_string(case_number++) + "}";
        local_twin local{q.rate, q.burst};
        const auto interval_us = static_cast<std::uint64_t>(1e6 / q.rate);
        std::int64_t at_us = t0_us;
        int reserved = 0, rejected = 0, disagreements = 0;
        for (int i = 0; i < 300; ++i) {
            // Never before the local clock, which a reservation moved on.
            const auto local_us = std::chrono::duration_cast<std::chrono::microseconds>(local.clock.now() - local.epoch).count();
            at_us = std::max(at_us, local_us + 1) + static_cast<std::int64_t>(xorshift(seed) % (interval_us / 2 + 1));
            const auto n = 1 + static_cast<std::int64_t>(xorshift(seed) % static_cast<std::uint64_t>(q.burst / 2 + 1));
            const auto look_us = static_cast<std::int64_t>(xorshift(seed) % (3 * interval_us + 1));
            const std::string args[] = {std::string(constants.q()),      std::string(constants.k()),
                                        std::string(constants.tau_hi()), std::string(constants.tau_lo()),
                                        std::to_string(n),               std::to_string((n * p.token_units) >> 32),
                                        std::to_string((n * p.token_units) & 0xffffffff), std::to_string(n),
                                        std::to_string(look_us),         std::to_string(at_us)};
            std::vector<const char*> argv{"EVALSHA", sha.c_str(), "1", key.c_str()};
            for (const auto& a : args) argv.push_back(a.c_str());
            auto* reply = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), nullptr));
            REQUIRE(reply != nullptr);
            const auto r = resil::redis::detail::read_answer(reply, p, n, n, look_us);
            freeReplyObject(reply);
            REQUIRE(r.kind == resil::redis::detail::reply_kind::answer);

            local.clock.advance_to(local.at(at_us));
            const auto l = local.bucket.acquire(resil::basic_deadline<resil::testing::manual_clock>::at(
                                                    local.at(at_us) + std::chrono::microseconds{look_us}),
                                                n);
            const bool granted = r.answer.taken > 0;
            const auto wait = granted ? r.answer.wait_ns : std::int64_t{0};
            const auto local_wait = l.granted() ? l.wait.count() : std::int64_t{0};
            if (granted != l.granted() || wait != local_wait ||
                (!granted && r.answer.wait_ns != l.wait.count())) {
                if (disagreements < 5)
                    UNSCOPED_INFO("rate " << q.rate << " request " << i << " n " << n << " look " << look_us
                                          << " us: redis " << granted << " wait " << r.answer.wait_ns << " ns, local "
                                          << l.granted() << " wait " << l.wait.count() << " ns");
                ++disagreements;
            }
            reserved += granted && wait > 0 ? 1 : 0;
            rejected += granted ? 0 : 1;
        }
        CAPTURE(q.rate, reserved, rejected);
        CHECK(disagreements == 0);
        CHECK(reserved > 30);  // reservations were exercised, not only grants at once
        CHECK(rejected > 30);
    }
    redisFree(c);
}
