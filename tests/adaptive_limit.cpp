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
        ctx.tighten_deadline(ctx.recent_now() + std::chrono::microseconds{500});
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
    // Ten threads complete one call each at once, latencies 1..10 ms: the average is 5.5 ms exactly.
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
                           clock.now() + std::chrono::milliseconds{t + 1});
            });
        for (auto& th : pool) th.join();
        REQUIRE(l.long_rtt() == 5500us);
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
