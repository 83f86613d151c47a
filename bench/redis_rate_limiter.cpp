// resil::redis::rate_limiter's decisions per second on one connection to a
// local redis-server it starts, side by side in interleaved rounds with:
//
//   baseline_hiredis_evalsha  bare hiredis: EVALSHA of the same script with
//                             the same arguments (redisCommandArgv: a blocking
//                             read, no bound on the wait), the answer's five
//                             integers read
//   baseline_hiredis_ppoll    the same, with the reply awaited by ppoll() until
//                             a deadline (what a bounded wait costs bare
//                             hiredis: one more syscall and a kernel timer)
//   resil_limiter             limiter.try_acquire(): the same round trip,
//                             bounded, plus argument formatting, the answer's
//                             checks and reading (wait, remaining, reset),
//                             health and metrics
//   baseline_fixed_window     the naive limiter: MULTI, INCR, EXPIRE, EXEC
//                             pipelined in one round trip (Redis's docs pattern)
//   resil_limiter_lease10     leasing k = 10: one round trip per 10 decisions
//   resil_async_limiter       async_rate_limiter::async_try_acquire(), awaited
//                             one at a time (spawned on an io_context this
//                             thread runs until it completes): the same
//                             decision over hiredis's asynchronous context
//   resil_async_limiter_200_in_flight (blocks only) 200 decisions spawned at
//                             once, pipelined on the one connection
//
// The quota is large enough that every decision is a grant (leasing only
// amortises grants). Each round runs every kind once, in an order rotated
// from round to round (none always runs first, after a quiet spell or a
// busy one); the ratios are the median over the rounds of each round's
// ratio, so a round's load affects both sides of it. Then, without timing, what each admits around a window
// edge: the fixed window lets 2× its limit through within milliseconds, GCRA
// its burst plus what the rate refills.
#if RESIL_BENCH_HAVE_ASIO
#include <resil/redis/asio_rate_limiter.hpp>  // first: resil's Asio headers before Asio's

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#endif

#include "bench_support.hpp"
#include "latency_rounds.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <time.h>

#include <resil/redis.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../tests/support/redis_server.hpp"

namespace {

constexpr int rounds = 9;
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

std::string load_script(redisContext* c) {
    auto* loaded = static_cast<redisReply*>(redisCommand(c, "SCRIPT LOAD %b", resil::redis::detail::gcra_script.data(),
                                                         resil::redis::detail::gcra_script.size()));
    if (!loaded || loaded->type != REDIS_REPLY_STRING) throw std::runtime_error("SCRIPT LOAD failed");
    std::string sha(loaded->str, loaded->len);
    freeReplyObject(loaded);
    return sha;
}

// The answer's shape as the limiter checks it: five integers, a grant.
bool granted(const redisReply* r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5) return false;
    for (std::size_t i = 0; i < 5; ++i)
        if (r->element[i]->type != REDIS_REPLY_INTEGER) return false;
    return r->element[0]->integer > 0;
}

// The limiter's arguments for one permit of bench_options' quota (1e6/s,
// burst 1e9): EVALSHA sha 1 key q K τhi τlo n nKhi nKlo want lookahead.
struct raw_arguments {
    resil::redis::detail::script_constants constants{resil::detail::gcra::make_params(1e6, 1'000'000'000)};
    std::string sha, key;
    std::string q{constants.q()}, k{constants.k()}, tau_hi{constants.tau_hi()}, tau_lo{constants.tau_lo()};
    std::string nk_lo = k;  // n = 1: n·K = K, below 2^32
    const char* argv[13] = {};
    raw_arguments(std::string sha_, std::string key_) : sha(std::move(sha_)), key(std::move(key_)) {
        const char* values[13] = {"EVALSHA",      sha.c_str(), "1",           key.c_str(), q.c_str(),
                                  k.c_str(),      tau_hi.c_str(), tau_lo.c_str(), "1",      "0",
                                  nk_lo.c_str(),  "1",         "0"};
        std::copy(std::begin(values), std::end(values), argv);
    }
    raw_arguments(const raw_arguments&) = delete;
};

// One EVALSHA through redisCommandArgv: write, then a blocking read.
bool evalsha_blocking(redisContext* c, const char** argv) {
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, 13, argv, nullptr));
    const bool ok = granted(r);
    freeReplyObject(r);
    return ok;
}

// One EVALSHA with its reply awaited until a deadline 1 s away: write, then
// ppoll() with the time left, then read.
bool evalsha_ppoll(redisContext* c, const char** argv) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds{1};
    if (redisAppendCommandArgv(c, 13, argv, nullptr) != REDIS_OK) return false;
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) return false;
    void* reply = nullptr;
    for (;;) {
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return false;
        if (reply) break;
        const auto left =
            std::chrono::duration_cast<std::chrono::nanoseconds>(end - std::chrono::steady_clock::now()).count();
        if (left <= 0) return false;
        timespec ts{left / 1'000'000'000, left % 1'000'000'000};
        pollfd p{c->fd, POLLIN, 0};
        if (::ppoll(&p, 1, &ts, nullptr) <= 0) return false;
        if (redisBufferRead(c) != REDIS_OK) return false;
    }
    auto* r = static_cast<redisReply*>(reply);
    const bool ok = granted(r);
    freeReplyObject(r);
    return ok;
}

void hiredis_evalsha(benchmark::State& state, std::size_t round) {
    redisContext* c = connect_raw();
    raw_arguments args{load_script(c), "resil:rl:{bench-raw}"};
    results.time_calls(state, "baseline_hiredis_evalsha", round, "EVALSHA failed",
                       [&] { return evalsha_blocking(c, args.argv); });
    redisFree(c);
}

// Bare hiredis with the reply awaited until a deadline 1 s away: write, then
// ppoll() with the time left, then read (the limiter's round trip without
// the limiter).
void hiredis_evalsha_ppoll(benchmark::State& state, std::size_t round) {
    redisContext* c = connect_raw();
    raw_arguments args{load_script(c), "resil:rl:{bench-raw-ppoll}"};
    results.time_calls(state, "baseline_hiredis_ppoll", round, "EVALSHA failed",
                       [&] { return evalsha_ppoll(c, args.argv); });
    redisFree(c);
}

void limiter(benchmark::State& state, std::size_t round, std::int64_t lease, const char* kind) {
    resil::redis::rate_limiter l{bench_options(lease ? "bench-lease" : "bench-limiter", lease)};
    results.time_calls(state, kind, round, "the limiter did not grant", [&] { return l.try_acquire().granted(); });
}

#if RESIL_BENCH_HAVE_ASIO
// `count` asynchronous decisions spawned at once on `io` (pipelined on the
// limiter's connection), run by this thread until all complete.
bool async_decisions(asio::io_context& io, const resil::redis::async_rate_limiter& l, int count) {
    int done = 0;
    bool ok = true;
    for (int i = 0; i < count; ++i)
        asio::co_spawn(io, l.async_try_acquire(), [&](std::exception_ptr e, resil::redis::rate_limit_result r) {
            ok = ok && !e && r.granted();
            ++done;
        });
    while (done < count) {
        if (io.stopped()) io.restart();
        io.run_one();
    }
    return ok;
}

void async_limiter(benchmark::State& state, std::size_t round) {
    asio::io_context io;
    resil::redis::rate_limiter l{bench_options("bench-async", 0)};
    resil::redis::async_rate_limiter a{l, io.get_executor()};
    results.time_calls(state, "resil_async_limiter", round, "the limiter did not grant",
                       [&] { return async_decisions(io, a, 1); });
}
#endif

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

// Each round's ratio of `kind` to `baseline` (decisions per second, and
// steady), and their median over the rounds with the quartiles: both sides
// of a ratio ran within the same round, under the same load.
void print_paired(std::initializer_list<std::pair<const char*, const char*>> pairs) {
    std::printf("\nPaired: per round, kind / baseline; median over the rounds [25th, 75th percentile]\n");
    std::printf("  %-52s %26s %26s\n", "", "dec/s ratio", "steady ratio");
    for (const auto& [kind, baseline] : pairs) {
        const auto a = results.rounds_of(kind);
        const auto b = results.rounds_of(baseline);
        const auto n = std::min(a.size(), b.size());
        if (n == 0) continue;
        std::vector<double> total, steady;
        for (std::size_t i = 0; i < n; ++i) {
            if (b[i].per_second > 0) total.push_back(a[i].per_second / b[i].per_second);
            if (b[i].steady_per_second > 0) steady.push_back(a[i].steady_per_second / b[i].steady_per_second);
        }
        const auto q = resil_bench::quantile;
        const std::string label = std::string(kind) + " / " + baseline;
        std::printf("  %-52s %7.3f [%6.3f, %6.3f]    %7.3f [%6.3f, %6.3f]\n", label.c_str(), q(total, 0.5),
                    q(total, 0.25), q(total, 0.75), q(steady, 0.5), q(steady, 0.25), q(steady, 0.75));
    }
}

// The same kinds again, in blocks of `per_block` decisions, the kinds
// alternating block by block (in an order rotated each time), `blocks`
// times: a block lasts milliseconds, so a kind and its baseline run under
// nearly the same load, which a run of Google Benchmark (≥ 0.1 s each) does
// not give on a shared machine. Per block, decisions per second of a kind
// over its baseline's in the same block; the median over the blocks.
void interleaved_blocks(int blocks, int per_block) {
    redisContext* bare = connect_raw();
    redisContext* bounded = connect_raw();
    raw_arguments args_bare{load_script(bare), "resil:rl:{blocks-raw}"};
    raw_arguments args_bounded{load_script(bounded), "resil:rl:{blocks-raw-ppoll}"};
    const char** argv_bare = args_bare.argv;
    const char** argv_bounded = args_bounded.argv;
    resil::redis::rate_limiter plain{bench_options("blocks-limiter", 0)};
    resil::redis::rate_limiter leased{bench_options("blocks-lease", 10)};
    struct kind {
        const char* name;
        std::function<bool()> call;
        int batch = 1;  // decisions per call
        std::vector<double> per_second{};
    };
    std::vector<kind> kinds;
    kinds.push_back({"baseline_hiredis_evalsha", [&] { return evalsha_blocking(bare, argv_bare); }});
    kinds.push_back({"baseline_hiredis_ppoll", [&] { return evalsha_ppoll(bounded, argv_bounded); }});
    kinds.push_back({"resil_limiter", [&] { return plain.try_acquire().granted(); }});
    kinds.push_back({"resil_limiter_lease10", [&] { return leased.try_acquire().granted(); }});
#if RESIL_BENCH_HAVE_ASIO
    asio::io_context io;
    resil::redis::rate_limiter shared{bench_options("blocks-async", 0)};
    resil::redis::async_rate_limiter awaited{shared, io.get_executor()};
    kinds.push_back({"resil_async_limiter", [&] { return async_decisions(io, awaited, 1); }});
    kinds.push_back({"resil_async_limiter_200_in_flight", [&] { return async_decisions(io, awaited, per_block); },
                     per_block});
#endif
    for (auto& k : kinds)  // connect, load the script, warm up
        for (int i = 0; i < 100; i += k.batch) (void)k.call();
    for (int b = 0; b < blocks; ++b) {
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            auto& k = kinds[(i + static_cast<std::size_t>(b)) % kinds.size()];
            const auto t0 = std::chrono::steady_clock::now();
            for (int n = 0; n < per_block; n += k.batch)
                if (!k.call()) throw std::runtime_error(std::string(k.name) + " failed");
            const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
            k.per_second.push_back(per_block / took.count());
        }
    }
    redisFree(bare);
    redisFree(bounded);
    const auto q = resil_bench::quantile;
    const auto find = [&](const char* name) -> const kind& {
        for (const auto& k : kinds)
            if (std::string(k.name) == name) return k;
        throw std::logic_error(name);
    };
    std::printf("\nInterleaved blocks: %d blocks of %d decisions per kind, alternating; dec/s per block, median "
                "[25th, 75th percentile]\n",
                blocks, per_block);
    for (const auto& k : kinds)
        std::printf("  %-52s %9.0f [%9.0f, %9.0f]\n", k.name, q(k.per_second, 0.5), q(k.per_second, 0.25),
                    q(k.per_second, 0.75));
    std::printf("Same block, kind / baseline: median [25th, 75th percentile]\n");
    for (const auto& [a, b] : {std::pair{"resil_limiter", "baseline_hiredis_evalsha"},
                               std::pair{"resil_limiter", "baseline_hiredis_ppoll"},
                               std::pair{"baseline_hiredis_ppoll", "baseline_hiredis_evalsha"},
                               std::pair{"resil_limiter_lease10", "resil_limiter"},
                               std::pair{"resil_async_limiter", "resil_limiter"},
                               std::pair{"resil_async_limiter_200_in_flight", "resil_limiter"}}) {
        if (std::none_of(kinds.begin(), kinds.end(), [&](const kind& k) { return std::string(k.name) == a; }))
            continue;
        const auto& ka = find(a);
        const auto& kb = find(b);
        std::vector<double> ratio;
        for (std::size_t i = 0; i < ka.per_second.size(); ++i) ratio.push_back(ka.per_second[i] / kb.per_second[i]);
        const std::string label = std::string(a) + " / " + b;
        std::printf("  %-52s %7.3f [%6.3f, %6.3f]\n", label.c_str(), q(ratio, 0.5), q(ratio, 0.25), q(ratio, 0.75));
    }
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
    using run = std::function<void(benchmark::State&, std::size_t)>;
    const std::vector<std::pair<const char*, run>> kinds = {
        {"baseline_hiredis_evalsha", hiredis_evalsha},
        {"resil_limiter", [](benchmark::State& s, std::size_t r) { limiter(s, r, 0, "resil_limiter"); }},
        {"baseline_hiredis_ppoll", hiredis_evalsha_ppoll},
        {"resil_limiter_lease10", [](benchmark::State& s, std::size_t r) { limiter(s, r, 10, "resil_limiter_lease10"); }},
        {"baseline_fixed_window", fixed_window},
#if RESIL_BENCH_HAVE_ASIO
        {"resil_async_limiter", async_limiter},
#endif
    };
    for (std::size_t round = 0; round < rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round + 1);
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            const auto& kind = kinds[(i + round) % kinds.size()];
            benchmark::RegisterBenchmark(("decide/" + std::string(kind.first) + suffix).c_str(),
                                         [fn = kind.second, round](benchmark::State& s) { fn(s, round); })
                ->UseRealTime();
        }
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    results.print("Decisions on one connection to a local redis-server", "dec/s", "baseline_hiredis_evalsha",
                  {"baseline_hiredis_evalsha", "baseline_hiredis_ppoll", "resil_limiter", "baseline_fixed_window",
                   "resil_limiter_lease10"});
    results.print("Leasing", "dec/s", "resil_limiter", {"resil_limiter", "resil_limiter_lease10"});
#if RESIL_BENCH_HAVE_ASIO
    results.print("Awaited (one at a time)", "dec/s", "resil_limiter", {"resil_limiter", "resil_async_limiter"});
#endif
    print_paired({{"resil_limiter", "baseline_hiredis_evalsha"},
                  {"resil_limiter", "baseline_hiredis_ppoll"},
                  {"baseline_hiredis_ppoll", "baseline_hiredis_evalsha"},
                  {"baseline_fixed_window", "baseline_hiredis_evalsha"},
                  {"resil_limiter_lease10", "resil_limiter"},
                  {"resil_async_limiter", "resil_limiter"}});
    // Skipped when a filter leaves out the bare baseline (a run of one kind).
    if (!results.rounds_of("baseline_hiredis_evalsha").empty()) interleaved_blocks(200, 200);
    window_edge();
    redis.reset();
    return 0;
}
