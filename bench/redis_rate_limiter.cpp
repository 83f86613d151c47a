// resil::redis::rate_limiter's decisions per second on one connection to a
// local redis-server it starts, side by side in interleaved rounds with:
//
//   baseline_hiredis_evalsha  bare hiredis: EVALSHA of the same script with
//                             the same arguments, the reply freed unread
//   resil_limiter             limiter.try_acquire(): the same round trip plus
//                             argument formatting, the answer's checks, health
//                             and metrics
//   baseline_fixed_window     the naive limiter: MULTI, INCR, EXPIRE, EXEC
//                             pipelined in one round trip (Redis's docs pattern)
//   resil_limiter_lease10     leasing k = 10: one round trip per 10 decisions
//
// The quota is large enough that every decision is a grant (leasing only
// amortises grants). Then, without timing, what each admits around a window
// edge: the fixed window lets 2× its limit through within milliseconds, GCRA
// its burst plus what the rate refills.
#include "bench_support.hpp"
#include "latency_rounds.hpp"

#include <hiredis/hiredis.h>

#include <resil/redis.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "../tests/support/redis_server.hpp"

namespace {

constexpr int rounds = 3;
resil_bench::round_results results{rounds};
std::unique_ptr<resil_test::redis_server> redis;

resil::redis::rate_limiter_options bench_options(const std::string& key, std::int64_t lease) {
    resil::redis::rate_limiter_options o;
    o.rate = 1e6;  // every decision a grant
    o.burst = 1'000'000'000;
    o.port = redis->port();
    o.key = key;
    o.connections = 1;
    o.reply_timeout = std::chrono::milliseconds{1000};
    o.connect_timeout = std::chrono::milliseconds{1000};
    o.lease = lease;
    return o;
}

redisContext* connect_raw() {
    redisContext* c = redisConnectWithTimeout("127.0.0.1", redis->port(), timeval{1, 0});
    if (!c || c->err) throw std::runtime_error("cannot connect to redis-server");
    return c;
}

void hiredis_evalsha(benchmark::State& state, std::size_t round) {
    redisContext* c = connect_raw();
    auto* loaded = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %b", resil::redis::detail::gcra_script.data(),
                                                         resil::redis::detail::gcra_script.size()));
    const std::string sha(loaded->str, loaded->len);
    freeReplyObject(loaded);
    // The same arguments as the limiter's: T = 1 µs, τ = 1e9 µs, n = want = 1, no lookahead.
    const char* argv[] = {"EVALSHA", sha.c_str(), "1", "resil:rl:{bench-raw}", "1", "1000000000", "1", "1", "0"};
    results.time_calls(state, "baseline_hiredis_evalsha", round, "EVALSHA failed", [&] {
        auto* r = static_cast<redisReply*>(redisCommandArgv(c, 9, argv, nullptr));
        const bool ok = r && r->type == REDIS_REPLY_ARRAY;
        freeReplyObject(r);
        return ok;
    });
    redisFree(c);
}

void limiter(benchmark::State& state, std::size_t round, std::int64_t lease, const char* kind) {
    resil::redis::rate_limiter l{bench_options(lease ? "bench-lease" : "bench-limiter", lease)};
    results.time_calls(state, kind, round, "the limiter did not grant", [&] { return l.try_acquire().granted(); });
}

void fixed_window(benchmark::State& state, std::size_t round) {
    redisContext* c = connect_raw();
    results.time_calls(state, "baseline_fixed_window", round, "MULTI/INCR/EXPIRE/EXEC failed", [&] {
        const auto window = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        char key[64];
        std::snprintf(key, sizeof key, "bench-fixed:%lld", static_cast<long long>(window));
        redisAppendCommand(c, "MULTI");
        redisAppendCommand(c, "INCR %s", key);
        redisAppendCommand(c, "EXPIRE %s 2", key);
        redisAppendCommand(c, "EXEC");
        bool ok = true;
        long long count = 0;
        for (int i = 0; i < 4; ++i) {
            void* reply = nullptr;
            if (redisGetReply(c, &reply) != REDIS_OK) return false;
            auto* r = static_cast<redisReply*>(reply);
            if (i == 3) {
                ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2;
                if (ok) count = r->element[0]->integer;
            }
            freeReplyObject(r);
        }
        benchmark::DoNotOptimize(count);  // a real limiter compares it with the limit
        return ok;
    });
    redisFree(c);
}

// What each admits when a client sends its whole limit just before a window
// edge and again just after it. Fixed window of 100 per second: the count
// starts again at the edge. GCRA at 100/s with a burst of 100, through the
// limiter at given Redis times (the tests' time override).
void window_edge() {
    constexpr int limit = 100;
    redisContext* c = connect_raw();
    int fixed = 0;
    for (int window = 0; window < 2; ++window) {  // 10 ms before the edge, then 10 ms after
        for (int i = 0; i < limit * 2; ++i) {
            auto* r = static_cast<redisReply*>(redisCommand(c, "INCR edge-fixed:%d", window));
            if (r && r->type == REDIS_REPLY_INTEGER && r->integer <= limit) ++fixed;
            freeReplyObject(r);
        }
    }
    redisFree(c);
    auto o = bench_options("edge-gcra", 0);
    o.rate = limit;
    o.burst = limit;
    resil::redis::rate_limiter gcra{o};
    using at = resil::redis::detail::rate_limiter_access;
    constexpr std::int64_t t = 2'000'000'000'000;  // µs on the script's time line
    int gcra_admitted = 0;
    for (int i = 0; i < limit * 2; ++i) gcra_admitted += at::try_acquire_at(gcra, t - 10'000) ? 1 : 0;
    for (int i = 0; i < limit * 2; ++i) gcra_admitted += at::try_acquire_at(gcra, t + 10'000) ? 1 : 0;
    std::printf("\nAt a window edge (limit %d/s; 200 requests 10 ms before the edge, 200 just after, 20 ms apart):\n",
                limit);
    std::printf("  baseline_fixed_window admits %d (%.1fx the limit)\n", fixed, static_cast<double>(fixed) / limit);
    std::printf("  resil_limiter (GCRA, burst %d) admits %d (the burst + 20 ms at %d/s)\n", limit, gcra_admitted,
                limit);
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        redis = std::make_unique<resil_test::redis_server>();
    } catch (const std::exception& e) {
        std::printf("bench_redis_rate_limiter: %s\n", e.what());
        return 1;
    }
    for (std::size_t round = 0; round < rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round + 1);
        benchmark::RegisterBenchmark(("decide/baseline_hiredis_evalsha" + suffix).c_str(), hiredis_evalsha, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("decide/resil_limiter" + suffix).c_str(), limiter, round, 0, "resil_limiter")
            ->UseRealTime();
        benchmark::RegisterBenchmark(("decide/baseline_fixed_window" + suffix).c_str(), fixed_window, round)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("decide/resil_limiter_lease10" + suffix).c_str(), limiter, round, 10,
                                     "resil_limiter_lease10")
            ->UseRealTime();
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    results.print("Decisions on one connection to a local redis-server", "dec/s", "baseline_hiredis_evalsha",
                  {"baseline_hiredis_evalsha", "resil_limiter", "baseline_fixed_window", "resil_limiter_lease10"});
    results.print("Leasing", "dec/s", "resil_limiter", {"resil_limiter", "resil_limiter_lease10"});
    window_edge();
    redis.reset();
    return 0;
}
