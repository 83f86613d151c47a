#include <resil/adaptive_limit.hpp>
#include <resil/adaptive_throttle.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::adaptive_algorithm;
using resil::load_signal;
using resil::testing::manual_clock;
using limit_t = resil::basic_adaptive_limit<manual_clock>;

static_assert(!std::is_copy_constructible_v<limit_t>);
static_assert(!std::is_copy_constructible_v<limit_t::permit>);
static_assert(std::is_nothrow_move_constructible_v<limit_t::permit>);

namespace {

std::string error_of(const resil::adaptive_limit_options& o) {
    try {
        limit_t l{o};
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// One accepted call admitted while `held` others are in flight.
std::optional<resil::events::limit_changed> succeed_with(const limit_t& l, load_signal s = load_signal::accepted) {
    auto p = l.try_acquire();
    REQUIRE(p);
    return l.complete(std::move(p), s);
}

// Leaves 500 µs of the call's deadline: too little for the timeout policy to start an attempt.
struct short_deadline {
    template <class Ctx, class Next>
    auto execute(Ctx& ctx, Next&& next) const {
        ctx.tighten_deadline(ctx.cached_now() + std::chrono::microseconds{500});
        return next(ctx);
    }
};

}  // namespace

TEST_CASE("adaptive limit options: one validate(), messages of one form") {
    CHECK(resil::adaptive_limit_options{}.validate() == std::nullopt);
    CHECK(error_of({.min_limit = 300}) == "resil::adaptive_limit: `min_limit` must be in [1, max_limit (200)], got 300");
    CHECK(error_of({.min_limit = 0}) == "resil::adaptive_limit: `min_limit` must be in [1, max_limit (200)], got 0");
    CHECK(error_of({.max_limit = 0}) == "resil::adaptive_limit: `max_limit` must be in [1, 1000000], got 0");
    CHECK(error_of({.initial_limit = 5, .min_limit = 10}) ==
          "resil::adaptive_limit: `initial_limit` must be in [min_limit, max_limit] = [10, 200], got 5");
    CHECK(error_of({.backoff_ratio = 1.0}) == "resil::adaptive_limit: `backoff_ratio` must be in [0.1, 0.99], got 1");
    CHECK(error_of({.smoothing = 0.0}) == "resil::adaptive_limit: `smoothing` must be in (0, 1], got 0");
    CHECK(error_of({.rtt_tolerance = 0.5}) == "resil::adaptive_limit: `rtt_tolerance` must be in [1, 100], got 0.5");
    CHECK(error_of({.long_window = 0}) == "resil::adaptive_limit: `long_window` must be in [1, 1000000], got 0");
    CHECK(error_of({.queue_size = 201}) == "resil::adaptive_limit: `queue_size` must be at most max_limit (200), got 201");
    // Gradient2 grows only through queue_size: 0 would let its limit only fall.
    CHECK(error_of({.algorithm = adaptive_algorithm::gradient2, .queue_size = 0}) ==
          "resil::adaptive_limit: `queue_size` must be in [1, 200], got 0");
    CHECK(error_of({.algorithm = adaptive_algorithm::gradient2, .queue_size = 201}) ==
          "resil::adaptive_limit: `queue_size` must be in [1, 200], got 201");
    CHECK(error_of({.algorithm = adaptive_algorithm::gradient2, .queue_size = 1}).empty());
    CHECK_FALSE(error_of({.backoff_ratio = std::numeric_limits<double>::quiet_NaN()}).empty());
    // min > max, whichever is set: an error, never a limit of 0 or below min_limit.
    CHECK(error_of({.min_limit = 50, .max_limit = 40}) ==
          "resil::adaptive_limit: `min_limit` must be in [1, max_limit (40)], got 50");
    CHECK(error_of({.max_limit = 1'000'001}) == "resil::adaptive_limit: `max_limit` must be in [1, 1000000], got 1000001");
    CHECK(error_of({.initial_limit = 0}) ==
          "resil::adaptive_limit: `initial_limit` must be in [min_limit, max_limit] = [1, 200], got 0");
    CHECK(error_of({.initial_limit = 201}) ==
          "resil::adaptive_limit: `initial_limit` must be in [min_limit, max_limit] = [1, 200], got 201");
    CHECK_FALSE(error_of({.algorithm = adaptive_algorithm::gradient2,
                          .smoothing = std::numeric_limits<double>::quiet_NaN()}).empty());
    CHECK_FALSE(error_of({.algorithm = adaptive_algorithm::gradient2,
                          .rtt_tolerance = std::numeric_limits<double>::infinity()}).empty());
    CHECK(error_of({.initial_limit = 1, .min_limit = 1, .max_limit = 1, .queue_size = 1}).empty());
    CHECK(error_of({.overload_latency = -1ns}) ==
          "resil::adaptive_limit: `overload_latency` must be in [0s, 24h], got -1ns");
    CHECK(error_of({.overload_latency = 25h}) ==
          "resil::adaptive_limit: `overload_latency` must be in [0s, 24h], got 25h");
    CHECK(error_of({.overload_latency = 0s}).empty());
}

TEST_CASE("AIMD: +1 per round of successes as large as the limit, exact trajectory") {
    manual_clock clock;
    limit_t l{{}, clock};
    CHECK(l.limit() == 20);
    // Ten calls held: every call below is admitted with 11 in flight, which tests the limit (>= 20 / 2).
    std::vector<limit_t::permit> held;
    for (int i = 0; i < 10; ++i) held.push_back(l.try_acquire());
    for (int i = 0; i < 19; ++i) CHECK_FALSE(succeed_with(l));
    CHECK(l.limit() == 20);
    const auto up = succeed_with(l);  // the 20th success of the round
    REQUIRE(up);
    CHECK(up->from == 20);
    CHECK(up->to == 21);
    CHECK(up->cause == load_signal::accepted);
    CHECK(up->generation == 1);
    for (int i = 0; i < 20; ++i) CHECK_FALSE(succeed_with(l));
    CHECK(succeed_with(l)->to == 22);  // 21 more
    CHECK(l.metrics().increases == 2);
}

TEST_CASE("AIMD: an idle client does not raise its limit") {
    limit_t l{{}, manual_clock{}};
    for (int i = 0; i < 1000; ++i) CHECK_FALSE(succeed_with(l));  // one in flight < 20 / 2
    CHECK(l.limit() == 20);
}

TEST_CASE("AIMD: x0.9 per overload, one cut per round, down to min_limit and never 0") {
    limit_t l{{}, manual_clock{}};
    auto before_cut = l.try_acquire();
    const auto cut = succeed_with(l, load_signal::overload);
    REQUIRE(cut);
    CHECK(cut->from == 20);
    CHECK(cut->to == 18);
    CHECK(cut->cause == load_signal::overload);
    // Sent under the old limit: no second cut for the same round.
    CHECK_FALSE(l.complete(std::move(before_cut), load_signal::overload));
    CHECK(l.limit() == 18);
    std::vector<std::uint32_t> trajectory;
    for (int i = 0; i < 20; ++i) {
        succeed_with(l, load_signal::overload);
        trajectory.push_back(l.limit());
    }
    const std::vector<std::uint32_t> expected{16, 14, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(trajectory == expected);
    CHECK(l.metrics().decreases == 14);
    // One call always gets through to see recovery.
    auto p = l.try_acquire();
    CHECK(p);
    CHECK_FALSE(l.try_acquire().held());
    CHECK(l.complete(std::move(p), load_signal::accepted)->to == 2);  // a round of 1 success at limit 1
}

TEST_CASE("AIMD: cut_once_per_round = false cuts on every 429 or 503, as AIMDLimit does") {
    limit_t l{{.cut_once_per_round = false}, manual_clock{}};
    std::vector<limit_t::permit> sent;
    for (int i = 0; i < 3; ++i) sent.push_back(l.try_acquire());
    std::vector<std::uint32_t> trajectory;
    for (auto& p : sent) {
        l.complete(std::move(p), load_signal::overload);
        trajectory.push_back(l.limit());
    }
    CHECK(trajectory == std::vector<std::uint32_t>{18, 16, 14});
}

TEST_CASE("AIMD: increase_per_success with cut_once_per_round = false is concurrency-limits' AIMDLimit rule") {
    limit_t l{{.max_limit = 24, .cut_once_per_round = false, .increase_per_success = true}, manual_clock{}};
    std::vector<limit_t::permit> held;
    for (int i = 0; i < 10; ++i) held.push_back(l.try_acquire());  // 11 in flight: tests a limit up to 22
    std::vector<std::uint32_t> trajectory;
    for (int i = 0; i < 6; ++i) {
        succeed_with(l);
        trajectory.push_back(l.limit());
    }
    // +1 per success while the limit is tested (2 x 11 < 23: 23 is not, and stays).
    CHECK(trajectory == std::vector<std::uint32_t>{21, 22, 23, 23, 23, 23});
    held.push_back(l.try_acquire());  // 12 in flight at admission now
    const auto up = succeed_with(l);
    REQUIRE(up);
    CHECK(up->to == 24);
    CHECK_FALSE(succeed_with(l));  // at max_limit
    // Every drop cuts, each from the limit as it is.
    std::vector<limit_t::permit> sent;
    for (int i = 0; i < 3; ++i) sent.push_back(l.try_acquire());
    trajectory.clear();
    for (auto& p : sent) {
        l.complete(std::move(p), load_signal::overload);
        trajectory.push_back(l.limit());
    }
    CHECK(trajectory == std::vector<std::uint32_t>{21, 18, 16});
}

TEST_CASE("AIMD: capped at max_limit; ignored signals and empty permits teach nothing") {
    limit_t l{{.initial_limit = 3, .min_limit = 2, .max_limit = 4}, manual_clock{}};
    std::vector<limit_t::permit> held;
    held.push_back(l.try_acquire());
    held.push_back(l.try_acquire());
    for (int i = 0; i < 3; ++i) succeed_with(l);
    CHECK(l.limit() == 4);
    for (int i = 0; i < 20; ++i) CHECK_FALSE(succeed_with(l));
    CHECK(l.limit() == 4);
    CHECK_FALSE(succeed_with(l, load_signal::ignored));
    CHECK_FALSE(l.complete(limit_t::permit{}, load_signal::overload));
    CHECK(l.limit() == 4);
    CHECK(l.in_flight() == 2);
    held.clear();
    CHECK(l.in_flight() == 0);
}

TEST_CASE("AIMD pipeline policy: sheds when full, emits each limit change, learns from 503s") {
    manual_clock clock;
    limit_t l{{.initial_limit = 2, .min_limit = 1, .max_limit = 10}, clock};
    std::vector<resil::events::limit_changed> changes;
    std::vector<resil::events::rejected> rejections;
    struct listener {
        std::vector<resil::events::limit_changed>* changes;
        std::vector<resil::events::rejected>* rejections;
        void operator()(const resil::events::limit_changed& e) const { changes->push_back(e); }
        void operator()(const resil::events::rejected& e) const { rejections->push_back(e); }
    };
    const auto pipe = resil::pipeline(clock, std::ref(l)).with_listener(listener{&changes, &rejections});
    const auto by_status = [](int status) { return status == 503 ? resil::verdict::retryable : resil::verdict::success; };
    // A call made from inside a call: two in flight, the third is shed.
    const auto nested = pipe([&] {
        const auto inner = pipe([&] { return pipe([] { return 200; }, by_status).reason(); }, resil::always_success);
        return *inner == resil::reason::shed ? 200 : 500;
    }, by_status);
    CHECK(*nested == 200);
    REQUIRE(rejections.size() == 1);
    CHECK(rejections[0].reason == resil::reason::shed);
    CHECK(l.metrics().shed == 1);
    // Two successes admitted at 2 in flight and 1 in flight (of limit 2): both test it, 2 -> 3.
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].to == 3);
    CHECK(pipe([] { return 503; }, by_status).reason() == resil::reason::failed);
    REQUIRE(changes.size() == 2);
    CHECK(changes[1].from == 3);
    CHECK(changes[1].to == 2);
    CHECK(changes[1].cause == load_signal::overload);
    CHECK(l.in_flight() == 0);
    CHECK_THROWS(pipe([]() -> int { throw std::runtime_error("boom"); }, resil::always_success));
    CHECK(l.in_flight() == 0);
    CHECK(changes.size() == 2);  // an exception teaches nothing
}

TEST_CASE("Gradient2: rises under steady low latency, falls when latency doubles") {
    manual_clock clock;
    limit_t l{{.algorithm = adaptive_algorithm::gradient2}, clock};
    // Calls held in flight keep the limit tested (half of it in flight), and leave room for one more.
    std::vector<limit_t::permit> held;
    const auto call = [&](resil::duration latency) {
        while (2 * (l.in_flight() + 1) < l.limit() + 1) held.push_back(l.try_acquire(clock.now()));
        while (l.in_flight() + 1 > l.limit()) held.pop_back();
        auto p = l.try_acquire(clock.now());
        REQUIRE(p);
        clock.advance(latency);
        return l.complete(std::move(p), load_signal::accepted, clock.now());
    };
    // Latency equal to its average: gradient 1, each call adds queue_size x smoothing = 0.8.
    for (int i = 0; i < 10; ++i) call(10ms);
    CHECK(l.limit() == 28);
    CHECK(l.long_rtt() == 10ms);
    for (int i = 0; i < 40; ++i) call(10ms);
    CHECK(l.limit() == 60);
    // Doubled: gradient 1.5 x ~10 / 20 = 0.75, the estimate falls by about 5% per call
    // (towards 4 / (1 - 0.75) = 16), so the limit never rises and halves within 30 calls.
    std::uint32_t last = l.limit();
    for (int i = 0; i < 30; ++i) {
        call(20ms);
        CHECK(l.limit() <= last);
        last = l.limit();
    }
    CHECK(last <= 30);
    CHECK(l.metrics().decreases >= 20);
    // An overload signal cuts as AIMD does.
    const auto before = l.limit();
    auto p = l.try_acquire(clock.now());
    const auto cut = l.complete(std::move(p), load_signal::overload, clock.now());
    REQUIRE(cut);
    CHECK(cut->to == static_cast<std::uint32_t>(before * 0.9));
}

TEST_CASE("Gradient2: never a limit of 0, whatever the latency or the overloads") {
    manual_clock clock;
    limit_t l{{.algorithm = adaptive_algorithm::gradient2, .initial_limit = 3, .cut_once_per_round = false}, clock};
    // Every call an overload, cut on each: down to min_limit (1), where a call still gets through.
    for (int i = 0; i < 100; ++i) {
        auto p = l.try_acquire(clock.now());
        REQUIRE(p);
        l.complete(std::move(p), load_signal::overload, clock.now());
    }
    CHECK(l.limit() == 1);
    // Latencies of no time at all and of years: the estimate stays in [min_limit, max_limit].
    for (const auto latency : {resil::duration::zero(), resil::duration{std::chrono::hours{24 * 365 * 100}}, 1ns}) {
        auto p = l.try_acquire(clock.now());
        REQUIRE(p);
        clock.advance(latency);
        l.complete(std::move(p), load_signal::accepted, clock.now());
        CHECK(l.limit() >= 1);
        CHECK(l.limit() <= 200);
    }
    CHECK(l.long_rtt() > resil::duration::zero());
    CHECK(l.try_acquire(clock.now()).held());
}

TEST_CASE("Gradient2: calls failing at once cut once per round, not down to 1") {
    manual_clock clock;
    limit_t l{{.algorithm = adaptive_algorithm::gradient2}, clock};
    std::vector<limit_t::permit> sent;
    for (int i = 0; i < 20; ++i) sent.push_back(l.try_acquire());
    int cuts = 0;
    for (auto& p : sent) cuts += l.complete(std::move(p), load_signal::overload).has_value() ? 1 : 0;
    CHECK(cuts == 1);
    CHECK(l.limit() == 18);
    // A call admitted after the cut belongs to the new round: it may cut again.
    CHECK(succeed_with(l, load_signal::overload)->to == 16);
    // cut_once_per_round = false cuts on every overload.
    limit_t every{{.algorithm = adaptive_algorithm::gradient2, .cut_once_per_round = false}, clock};
    sent.clear();
    for (int i = 0; i < 3; ++i) sent.push_back(every.try_acquire());
    for (auto& p : sent) every.complete(std::move(p), load_signal::overload);
    CHECK(every.limit() == 14);
}

TEST_CASE("Gradient2: the warm-up's plain average counts each of racing samples once") {
    // Ten threads complete one call each at once, latencies 10..19 ms: the
    // average is 14.5 ms exactly (never twice a sample, so never decayed,
    // whichever sample comes last).
    for (int trial = 0; trial < 100; ++trial) {
        manual_clock clock;
        limit_t l{{.algorithm = adaptive_algorithm::gradient2, .max_limit = 200}, clock};
        std::vector<limit_t::permit> sent;
        for (int i = 0; i < 10; ++i) sent.push_back(l.try_acquire(clock.now()));
        std::atomic<int> ready{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < 10; ++t)
            pool.emplace_back([&, t] {
                ready.fetch_add(1);
                while (ready.load() < 10) {}
                l.complete(std::move(sent[static_cast<std::size_t>(t)]), load_signal::accepted,
                           clock.now() + std::chrono::milliseconds{t + 10});
            });
        for (auto& th : pool) th.join();
        REQUIRE(l.long_rtt() == 14500us);
    }
}

TEST_CASE("Gradient2 pipeline policy measures the attempt on the pipeline's clock") {
    manual_clock clock;
    limit_t l{{.algorithm = adaptive_algorithm::gradient2, .initial_limit = 1, .min_limit = 1}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(l));
    for (int i = 0; i < 5; ++i)
        CHECK(pipe([&] { clock.advance(7ms); return 1; }, resil::always_success).ok());
    CHECK(l.long_rtt() == 7ms);
    CHECK(l.limit() == 2);  // 1 -> 1.8 -> 2.6, then one call in flight no longer tests it
}

TEST_CASE("a call that never reached the dependency teaches the limit nothing") {
    // A deadline spent before the attempt (the timeout policy inside refuses to start one).
    manual_clock clock;
    limit_t l{{}, clock};
    int reached = 0;
    const auto pipe = resil::pipeline(clock, short_deadline{}, std::ref(l),
                                      resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
    for (int i = 0; i < 10; ++i)
        CHECK(pipe([&] { ++reached; return 200; }, resil::always_success).reason() == resil::reason::deadline_exceeded);
    CHECK(reached == 0);
    CHECK(l.limit() == 20);
    CHECK(l.metrics().decreases == 0);
    CHECK(l.metrics().admitted == 10);
}

TEST_CASE("adaptive limit: threads admit and release with exact totals") {
    for (auto algorithm : {adaptive_algorithm::aimd, adaptive_algorithm::gradient2}) {
        manual_clock clock;
        // More threads than the limit can ever be: a broken admission would show as more in flight.
        limit_t l{{.algorithm = algorithm, .initial_limit = 2, .min_limit = 1, .max_limit = 4}, clock};
        constexpr int threads = 8, calls = 5000;
        std::atomic<int> admitted{0};
        std::atomic<std::uint32_t> most_in_flight{0};
        struct seen {
            std::uint64_t increases = 0, decreases = 0;
            std::uint32_t highest = 0;
            std::vector<std::uint64_t> generations;
        };
        std::vector<seen> per_thread(threads);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                auto& mine = per_thread[static_cast<std::size_t>(t)];
                for (int i = 0; i < calls; ++i) {
                    auto p = l.try_acquire(clock.now());
                    if (!p) continue;
                    admitted.fetch_add(1);
                    const auto now_in = l.in_flight();
                    auto most = most_in_flight.load();
                    while (now_in > most && !most_in_flight.compare_exchange_weak(most, now_in)) {}
                    const auto change = l.complete(std::move(p), (i + t) % 7 == 0 ? load_signal::overload : load_signal::accepted,
                                                   clock.now() + std::chrono::microseconds{(i % 3) + 1});
                    if (!change) continue;
                    (change->to > change->from ? mine.increases : mine.decreases) += 1;
                    mine.highest = std::max(mine.highest, change->to);
                    mine.generations.push_back(change->generation);
                }
            });
        }
        for (auto& th : pool) th.join();
        const auto m = l.metrics();
        std::uint64_t increases = 0, decreases = 0;
        std::uint32_t highest = 2;  // the initial limit
        std::vector<std::uint64_t> generations;
        for (const auto& x : per_thread) {
            increases += x.increases;
            decreases += x.decreases;
            highest = std::max(highest, x.highest);
            generations.insert(generations.end(), x.generations.begin(), x.generations.end());
        }
        // Every change counted is returned exactly once, numbered 1..n.
        CHECK(increases == m.increases);
        CHECK(decreases == m.decreases);
        CHECK(increases > 0);
        CHECK(decreases > 0);
        std::sort(generations.begin(), generations.end());
        std::vector<std::uint64_t> one_to_n(generations.size());
        for (std::size_t i = 0; i < one_to_n.size(); ++i) one_to_n[i] = i + 1;
        CHECK(generations == one_to_n);
        // Never more in flight than the highest limit there ever was (below the 8 threads).
        CHECK(most_in_flight.load() <= highest);
        CHECK(highest <= 4);
        CHECK(m.admitted + m.shed == threads * calls);
        CHECK(m.admitted == static_cast<std::uint64_t>(admitted.load()));
        CHECK(m.in_flight == 0);
        CHECK(m.limit >= 1);
        CHECK(m.limit <= 4);
        CHECK(m.limit_changes == m.increases + m.decreases);
    }
}

TEST_CASE("AIMD: successes counted by several threads still fill each round, one change per +1") {
    manual_clock clock;
    limit_t l{{.initial_limit = 5, .min_limit = 1, .max_limit = 8}, clock};
    // Four permits held: every admitted call is the 5th or more in flight, which tests limits up to 10.
    std::vector<limit_t::permit> held;
    for (int i = 0; i < 4; ++i) held.push_back(l.try_acquire());
    constexpr int threads = 4, calls = 2000;
    std::atomic<std::uint64_t> successes{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = 0; i < calls; ++i)
                if (auto p = l.try_acquire(clock.now())) {
                    successes.fetch_add(1);
                    l.complete(std::move(p), load_signal::accepted, clock.now());
                }
        });
    for (auto& th : pool) th.join();
    // Rounds of 5, 6 and 7 successes: 18, and at most one batch per other stripe late each; thousands were counted.
    REQUIRE(successes.load() > 1000);
    CHECK(l.limit() == 8);
    const auto m = l.metrics();
    CHECK(m.increases == 3);
    CHECK(m.decreases == 0);
    CHECK(m.admitted == successes.load() + 4);
}

TEST_CASE("docs/adaptive.md, In a pipeline: throttle and limit inside the retry, on the manual clock") {
    manual_clock clock;
    resil::basic_adaptive_limit<manual_clock> limit{{.algorithm = resil::adaptive_algorithm::gradient2}, clock};
    resil::basic_adaptive_throttle<manual_clock> throttle{{.k = 2.0, .window = 30s}, clock};
    auto pipe = resil::pipeline(clock, resil::deadline_policy{2s}, resil::retry_policy{}, std::ref(throttle),
                                std::ref(limit));
    int calls = 0;
    const auto out = pipe([&] { return ++calls < 2 ? 503 : 200; },
                          [](int s) { return s == 503 ? resil::verdict::retryable : resil::verdict::success; });
    CHECK(out.ok());
    CHECK(calls == 2);  // the 503 was retried, each attempt passing the throttle and the limit
    CHECK(throttle.counts(clock.now()).requests == 2);
    CHECK(throttle.counts(clock.now()).accepts == 1);
    CHECK(limit.metrics().admitted == 2);
    CHECK(limit.in_flight() == 0);
}

// ---------------------------------------------------------------------------
// Against the reference. Small ports of the update rules of Netflix's
// concurrency-limits (Gradient2Limit, AIMDLimit, ExpAvgMeasurement with its
// warm-up), written from its source as the oracle: each is fed the same
// samples as resil, and the limits are compared decision by decision. One
// sample is a latency, the calls in flight at its admission (counting it),
// and for AIMDLimit whether it was a drop. Java's int and long arithmetic
// stays inside each port; the tests speak resil's types.

namespace {

namespace reference {

// ExpAvgMeasurement: a plain average over the first `warm_up` samples, then
// value × (1 − f) + sample × f with f = 2 / (window + 1). Its update() (the
// decay) rewrites `value`; a warm-up sample after it recomputes sum / count.
struct exp_avg {
    int window;
    int warm_up;
    int count = 0;
    double sum = 0.0;
    double value = 0.0;
    double add(double sample) {
        if (count < warm_up) {
            ++count;
            sum += sample;
            value = sum / count;
        } else {
            const double factor = 2.0 / (window + 1);
            value = value * (1 - factor) + sample * factor;
        }
        return value;
    }
};

// Gradient2Limit._update (a constant queue size; its didDrop is not read).
struct gradient2 {
    double estimated;
    int min_limit, max_limit;
    double smoothing, tolerance;
    int queue_size;
    exp_avg long_rtt;
    int decays = 0, tenth_decays = 0;  // counted for the tests' own check of their coverage

    explicit gradient2(const resil::adaptive_limit_options& o)
        : estimated(o.initial_limit), min_limit(static_cast<int>(o.min_limit)),
          max_limit(static_cast<int>(o.max_limit)), smoothing(o.smoothing), tolerance(o.rtt_tolerance),
          queue_size(static_cast<int>(o.queue_size)), long_rtt{static_cast<int>(o.long_window), 10} {}

    std::uint32_t sample(resil::duration latency, std::uint32_t in_flight) {
        const std::int64_t rtt = latency.count();  // nanoseconds, as there
        const int inflight = static_cast<int>(in_flight);
        const double queue = queue_size;
        const double short_rtt = static_cast<double>(rtt);
        const bool tenth = long_rtt.count == 9;
        const double long_value = long_rtt.add(static_cast<double>(rtt));
        if (long_value / short_rtt > 2) {
            long_rtt.value = long_rtt.value * 0.95;
            ++decays;
            if (tenth) ++tenth_decays;
        }
        if (inflight < estimated / 2) return limit();
        const double gradient = std::max(0.5, std::min(1.0, tolerance * long_value / short_rtt));
        double next = estimated * gradient + queue;
        next = estimated * (1 - smoothing) + next * smoothing;
        estimated = std::max<double>(min_limit, std::min<double>(max_limit, next));
        return limit();
    }
    [[nodiscard]] std::uint32_t limit() const { return static_cast<std::uint32_t>(static_cast<int>(estimated)); }
    [[nodiscard]] resil::duration long_average() const {
        return resil::duration{static_cast<std::int64_t>(long_rtt.value)};
    }
};

// AIMDLimit._update: a drop, or a sample slower than the timeout, cuts.
struct aimd {
    int current;
    int min_limit, max_limit;
    double backoff_ratio;
    std::int64_t timeout_ns;

    std::uint32_t sample(resil::duration latency, std::uint32_t in_flight, bool drop) {
        const std::int64_t rtt = latency.count();
        const int inflight = static_cast<int>(in_flight);
        int next = current;
        if (drop || rtt > timeout_ns) {
            next = static_cast<int>(next * backoff_ratio);
        } else if (inflight * 2 >= next) {
            next = next + 1;
        }
        current = std::min(max_limit, std::max(min_limit, next));
        return limit();
    }
    [[nodiscard]] std::uint32_t limit() const { return static_cast<std::uint32_t>(current); }
    [[nodiscard]] resil::duration timeout() const { return resil::duration{timeout_ns}; }
};

}  // namespace reference

// Drives resil's limit with one sample: `inflight` calls in flight when it is
// admitted (counting it), latency `rtt`. The others are held permits, released
// without teaching anything.
struct sample_driver {
    manual_clock clock;
    limit_t limit;
    std::vector<limit_t::permit> held;

    explicit sample_driver(const resil::adaptive_limit_options& o) : limit{o, clock} {}

    std::uint32_t sample(resil::duration rtt, std::uint32_t inflight, load_signal s = load_signal::accepted) {
        REQUIRE(inflight >= 1);
        REQUIRE(inflight <= limit.limit());
        while (held.size() + 1 > inflight) held.pop_back();
        while (held.size() + 1 < inflight) held.push_back(limit.try_acquire(clock.now()));
        auto p = limit.try_acquire(clock.now());
        REQUIRE(p);
        clock.advance(rtt);
        limit.complete(std::move(p), s, clock.now());
        return limit.limit();
    }
};

// In [0, n), from the engine's raw output only: the standard's distributions differ between libraries.
std::int64_t below(std::mt19937_64& rng, std::int64_t n) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
}

}  // namespace

TEST_CASE("Gradient2 as Gradient2Limit: the tenth sample's 5% decay carries into the long average") {
    const resil::adaptive_limit_options o{.algorithm = adaptive_algorithm::gradient2};
    sample_driver resil_side{o};
    reference::gradient2 netflix{o};
    // Nine samples of 100 ms, then one of 10 ms (the warm-up's last): the
    // plain average is 91 ms, more than twice the sample, so it is decayed
    // to 86.45 ms before the exponential average takes over from it.
    for (int i = 0; i < 9; ++i) {
        const auto inflight = resil_side.limit.limit();
        CHECK(resil_side.sample(100ms, inflight) == netflix.sample(100ms, inflight));
    }
    auto inflight = resil_side.limit.limit();
    CHECK(resil_side.sample(10ms, inflight) == netflix.sample(10ms, inflight));
    CHECK(netflix.long_rtt.value == Approx(86'450'000.0));
    CHECK(resil_side.limit.long_rtt() == netflix.long_average());
    CHECK(resil_side.limit.long_rtt() >= 86'449'999ns);
    CHECK(resil_side.limit.long_rtt() <= 86'450'000ns);
    // A slow sample next: the gradient (1.5 × long / 200 ms) is measured from 86.45 ms, not 91 ms.
    inflight = resil_side.limit.limit();
    CHECK(netflix.sample(200ms, inflight) == 26);
    CHECK(resil_side.sample(200ms, inflight) == 26);
}

TEST_CASE("Gradient2 as Gradient2Limit: the same limits, sample by sample, on random latencies") {
    const resil::adaptive_limit_options variants[] = {
        {.algorithm = adaptive_algorithm::gradient2},
        {.algorithm = adaptive_algorithm::gradient2, .min_limit = 20},  // concurrency-limits' floor
        {.algorithm = adaptive_algorithm::gradient2, .initial_limit = 5, .max_limit = 50, .smoothing = 1.0,
         .rtt_tolerance = 2.0, .long_window = 5, .queue_size = 1},
        {.algorithm = adaptive_algorithm::gradient2, .initial_limit = 100, .max_limit = 400, .smoothing = 0.05,
         .rtt_tolerance = 1.0, .long_window = 30, .queue_size = 10},
    };
    std::uint64_t seed = 35;
    int tenth_decays = 0;
    for (const auto& o : variants) {
        int fell = 0, rose = 0, decays = 0;
        for (int run = 0; run < 8; ++run) {
            std::mt19937_64 rng{seed++};
            sample_driver resil_side{o};
            reference::gradient2 netflix{o};
            // Latency in phases (a base that jumps up and down by up to 400×,
            // noise around it; jumps often during the warm-up), so the decay
            // after an overload, the clamps of the gradient and the idle
            // guard all take turns.
            std::int64_t base_us = 10'000;
            for (int i = 0; i < 1000; ++i) {
                if (below(rng, i < 12 ? 3 : 200) == 0) base_us = 500 + below(rng, 200'000);
                const resil::duration rtt{(base_us + below(rng, base_us)) * 1000 + below(rng, 1000)};
                const auto lim = resil_side.limit.limit();
                REQUIRE(lim == netflix.limit());
                const auto inflight = static_cast<std::uint32_t>(1 + below(rng, lim));
                const auto expected = netflix.sample(rtt, inflight);
                INFO("seed " << seed - 1 << ", sample " << i << ": " << rtt.count() << " ns, " << inflight
                             << " in flight");
                REQUIRE(resil_side.sample(rtt, inflight) == expected);
                REQUIRE(resil_side.limit.long_rtt() == netflix.long_average());
                if (expected < lim) ++fell;
                if (expected > lim) ++rose;
            }
            decays += netflix.decays;
            tenth_decays += netflix.tenth_decays;
        }
        // The sequences went through every branch.
        CHECK(decays > 0);
        CHECK(fell > 0);
        CHECK(rose > 0);
    }
    CHECK(tenth_decays > 0);  // some warm-ups ended on a sample that decayed the average
}

TEST_CASE("AIMD as AIMDLimit (increase_per_success, cut on every drop): a success slower than 5 s is a drop") {
    const resil::adaptive_limit_options o{.initial_limit = 100, .cut_once_per_round = false,
                                          .increase_per_success = true};
    {
        sample_driver slow{o};
        reference::aimd netflix{100, 1, 200, 0.9, 5'000'000'000};
        CHECK(netflix.sample(5s + 1ns, 100, false) == 90);
        CHECK(slow.sample(5s + 1ns, 100) == 90);
    }
    {
        // At the timeout exactly, not past it: a success, +1.
        sample_driver on_time{o};
        reference::aimd netflix{100, 1, 200, 0.9, 5'000'000'000};
        CHECK(netflix.sample(5s, 100, false) == 101);
        CHECK(on_time.sample(5s, 100) == 101);
    }
}

TEST_CASE("AIMD as AIMDLimit: the same limits, sample by sample, on random latencies and drops") {
    struct variant {
        resil::adaptive_limit_options options;
        reference::aimd netflix;
    };
    variant variants[] = {
        {{.cut_once_per_round = false, .increase_per_success = true}, {20, 1, 200, 0.9, 5'000'000'000}},
        {{.min_limit = 20, .cut_once_per_round = false, .increase_per_success = true},
         {20, 20, 200, 0.9, 5'000'000'000}},
        {{.initial_limit = 7, .min_limit = 3, .max_limit = 40, .backoff_ratio = 0.5, .cut_once_per_round = false,
          .increase_per_success = true, .overload_latency = 1s},
         {7, 3, 40, 0.5, 1'000'000'000}},
    };
    std::uint64_t seed = 350;
    for (auto& v : variants) {
        std::mt19937_64 rng{seed++};
        sample_driver resil_side{v.options};
        int slow_cuts = 0, drop_cuts = 0, rises = 0, idle = 0;
        const auto timeout = v.netflix.timeout();
        for (int i = 0; i < 5000; ++i) {
            const auto lim = resil_side.limit.limit();
            REQUIRE(lim == v.netflix.limit());
            // Mostly in time; one in eight past the timeout; one in ten a drop (429, 503).
            const resil::duration rtt = below(rng, 8) == 0 ? timeout + resil::duration{below(rng, 3'000'000'000)}
                                                           : resil::duration{1 + below(rng, timeout.count())};
            const bool drop = below(rng, 10) == 0;
            const auto inflight = static_cast<std::uint32_t>(1 + below(rng, lim));
            const auto expected = v.netflix.sample(rtt, inflight, drop);
            INFO("seed " << seed - 1 << ", sample " << i << ": " << rtt.count() << " ns, " << inflight
                         << " in flight" << (drop ? ", drop" : ""));
            REQUIRE(resil_side.sample(rtt, inflight, drop ? load_signal::overload : load_signal::accepted) == expected);
            if (expected < lim) ++(drop ? drop_cuts : slow_cuts);
            if (expected > lim) ++rises;
            if (!drop && rtt <= timeout && 2 * inflight < lim) ++idle;
        }
        CHECK(slow_cuts > 0);
        CHECK(drop_cuts > 0);
        CHECK(rises > 0);
        CHECK(idle > 0);
    }
}

TEST_CASE("AIMD: an accepted call slower than overload_latency (5 s) is an overload, once per round") {
    manual_clock clock;
    limit_t l{{}, clock};
    std::vector<limit_t::permit> sent;
    for (int i = 0; i < 3; ++i) sent.push_back(l.try_acquire());
    clock.advance(5s);
    // At 5 s exactly: on time. A round of 20 needs 19 more; nothing moves.
    CHECK_FALSE(l.complete(std::move(sent[0]), load_signal::accepted));
    clock.advance(1ns);
    const auto cut = l.complete(std::move(sent[1]), load_signal::accepted);
    REQUIRE(cut);
    CHECK(cut->from == 20);
    CHECK(cut->to == 18);
    CHECK(cut->cause == load_signal::overload);
    // Admitted before that cut: no second one.
    CHECK_FALSE(l.complete(std::move(sent[2]), load_signal::accepted));
    CHECK(l.limit() == 18);
    // Ignored stays ignored, however slow.
    auto p = l.try_acquire();
    clock.advance(1min);
    CHECK_FALSE(l.complete(std::move(p), load_signal::ignored));

    // Zero: latency is not read.
    limit_t never{{.overload_latency = 0s}, clock};
    auto q = never.try_acquire();
    CHECK(q.started() == resil::time_point{});
    clock.advance(1h);
    CHECK_FALSE(never.complete(std::move(q), load_signal::accepted));
    CHECK(never.limit() == 20);
}

TEST_CASE("AIMD pipeline policy: a success slower than overload_latency cuts, timed on the pipeline's clock") {
    manual_clock clock;
    limit_t l{{.overload_latency = 2s}, clock};
    std::vector<resil::events::limit_changed> changes;
    const auto pipe = resil::pipeline(clock, std::ref(l)).with_listener(
        [&](const resil::events::limit_changed& e) { changes.push_back(e); });
    CHECK(pipe([&] { clock.advance(2s); return 200; }, resil::always_success).ok());
    CHECK(changes.empty());
    CHECK(pipe([&] { clock.advance(2001ms); return 200; }, resil::always_success).ok());
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].to == 18);
    CHECK(changes[0].cause == load_signal::overload);
}

TEST_CASE("Gradient2, unlike Gradient2Limit: an overload is no latency sample, it cuts") {
    const resil::adaptive_limit_options o{.algorithm = adaptive_algorithm::gradient2};
    sample_driver resil_side{o};
    // Twelve samples at the long average: gradient 1, +0.8 each, 20 -> 29.6.
    for (int i = 0; i < 12; ++i) resil_side.sample(10ms, resil_side.limit.limit());
    CHECK(resil_side.limit.limit() == 29);
    CHECK(resil_side.limit.long_rtt() == 10ms);
    // A 503 in 1 ms (Gradient2Limit: a fast sample, the limit rises) and a
    // timeout at 250 ms (there: a slow sample that raises the long average).
    CHECK(resil_side.sample(1ms, 29, load_signal::overload) == 26);  // floor(29.6 x 0.9)
    CHECK(resil_side.limit.long_rtt() == 10ms);
    CHECK(resil_side.sample(250ms, 26, load_signal::overload) == 23);  // floor(26 x 0.9)
    CHECK(resil_side.limit.long_rtt() == 10ms);
}
