#include <resil/concurrency_limit.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"

using resil::concurrency_limit;

static_assert(!std::is_copy_constructible_v<concurrency_limit::permit>);
static_assert(std::is_nothrow_move_constructible_v<concurrency_limit::permit>);
static_assert(!std::is_convertible_v<concurrency_limit::permit, bool>, "explicit operator bool");
static_assert(!std::is_copy_constructible_v<concurrency_limit>);

namespace {

struct rejection_log {
    std::vector<resil::events::rejected>* seen;
    void operator()(const resil::events::rejected& e) const { seen->push_back(e); }
};

}  // namespace

TEST_CASE("concurrency limit: 16 permits held, the 17th is shed; one released admits the next") {
    concurrency_limit limit{{.max_in_flight = 16}};
    CHECK(limit.limit() == 16);
    std::vector<concurrency_limit::permit> held;
    for (int i = 0; i < 16; ++i) {
        auto p = limit.try_acquire();
        REQUIRE(p);
        held.push_back(std::move(p));
    }
    CHECK(limit.in_flight() == 16);

    auto seventeenth = limit.try_acquire();
    CHECK_FALSE(seventeenth);
    CHECK_FALSE(seventeenth.held());
    CHECK(limit.shed() == 1);
    CHECK(limit.admitted() == 16);
    CHECK(limit.in_flight() == 16);

    held.pop_back();  // one call finishes
    CHECK(limit.in_flight() == 15);
    auto next = limit.try_acquire();
    CHECK(next);
    CHECK(limit.in_flight() == 16);
    CHECK(limit.admitted() == 17);
    // The getters, in one snapshot.
    CHECK(limit.metrics() ==
          resil::concurrency_limit_metrics{.limit = 16, .in_flight = 16, .admitted = 17, .shed = 1});

    held.clear();
    next.release();
    CHECK(limit.in_flight() == 0);
}

TEST_CASE("concurrency limit: permits are move-only handles released exactly once") {
    concurrency_limit limit{{.max_in_flight = 2}};
    concurrency_limit::permit empty;
    CHECK_FALSE(empty);

    auto a = limit.try_acquire();
    auto b = std::move(a);
    CHECK_FALSE(a.held());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    CHECK(b.held());
    CHECK(limit.in_flight() == 1);

    auto c = limit.try_acquire();
    CHECK(limit.in_flight() == 2);
    b = std::move(c);  // b's old place is given back
    CHECK(limit.in_flight() == 1);
    auto& alias = b;
    b = std::move(alias);  // self-move keeps it
    CHECK(b.held());
    CHECK(limit.in_flight() == 1);

    b.release();
    b.release();  // idempotent
    CHECK(limit.in_flight() == 0);
    {
        auto d = limit.try_acquire();
        CHECK(limit.in_flight() == 1);
    }
    CHECK(limit.in_flight() == 0);
    CHECK(limit.admitted() == 3);
    CHECK(limit.shed() == 0);
}

TEST_CASE("concurrency limit: a permit is released when the work throws") {
    concurrency_limit limit{{.max_in_flight = 1}};
    try {
        auto p = limit.try_acquire();
        REQUIRE(p);
        throw std::runtime_error("boom");
    } catch (const std::runtime_error&) {
    }
    CHECK(limit.in_flight() == 0);
    CHECK(limit.try_acquire().held());
}

TEST_CASE("concurrency limit policy: an exception in the callable releases the permit") {
    concurrency_limit limit{{.max_in_flight = 1}};
    const auto pipe = resil::pipeline(std::ref(limit));
    CHECK_THROWS_AS(pipe([]() -> int { throw std::runtime_error("boom"); }, resil::always_success),
                    std::runtime_error);
    CHECK(limit.in_flight() == 0);
    const auto out = pipe([&] { return limit.in_flight(); }, resil::always_success);
    REQUIRE(out.ok());
    CHECK(*out == 1u);  // the callable runs holding the permit
    CHECK(limit.in_flight() == 0);
}

TEST_CASE("concurrency limit policy: 16 calls in flight, the 17th is shed at once; after one ends the next is admitted") {
    concurrency_limit limit{{.max_in_flight = 16}};
    std::vector<resil::events::rejected> seen;
    const auto pipe = resil::pipeline(std::ref(limit)).with_listener(rejection_log{&seen});

    constexpr int n = 16;
    std::latch entered{n};
    std::vector<std::unique_ptr<std::latch>> gates;
    for (int i = 0; i < n; ++i) gates.push_back(std::make_unique<std::latch>(1));
    std::vector<std::thread> callers;
    std::atomic<int> succeeded{0};
    for (int i = 0; i < n; ++i) {
        callers.emplace_back([&, i] {
            const auto out = pipe(
                [&] {
                    entered.count_down();
                    gates[static_cast<std::size_t>(i)]->wait();
                    return i;
                },
                resil::always_success);
            if (out.ok() && *out == i) ++succeeded;
        });
    }
    entered.wait();
    CHECK(limit.in_flight() == 16);

    int ran = 0;
    auto quick = [&] { return ++ran; };
    auto out = pipe(quick, resil::always_success);
    CHECK(out.reason() == resil::reason::shed);
    CHECK_FALSE(out.attempted());
    CHECK(ran == 0);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].reason == resil::reason::shed);
    CHECK_FALSE(seen[0].retry_after);
    CHECK(limit.shed() == 1);

    gates[0]->count_down();
    callers[0].join();
    CHECK(limit.in_flight() == 15);
    out = pipe(quick, resil::always_success);
    CHECK(out.ok());
    CHECK(ran == 1);

    for (int i = 1; i < n; ++i) gates[static_cast<std::size_t>(i)]->count_down();
    for (int i = 1; i < n; ++i) callers[static_cast<std::size_t>(i)].join();
    CHECK(succeeded == 16);
    CHECK(limit.in_flight() == 0);
    CHECK(limit.admitted() == 17);
    CHECK(limit.shed() == 1);
}

TEST_CASE("concurrency limit policy: a shed call is not retried by an outer retry policy") {
    concurrency_limit limit{{.max_in_flight = 1}};
    resil::testing::manual_clock clock;
    const auto pipe = resil::pipeline(clock, resil::retry_policy{}, std::ref(limit));
    auto hold = limit.try_acquire();
    int ran = 0;
    const auto out = pipe([&] { return ++ran; }, resil::always_success);
    CHECK(out.reason() == resil::reason::shed);
    CHECK(ran == 0);
    CHECK(clock.sleeps() == 0);
    CHECK(limit.shed() == 1);
}

TEST_CASE("concurrency limit: threads hammering it never hold more than the limit") {
    constexpr std::uint32_t max = 3;
    concurrency_limit limit{{.max_in_flight = max}};
    constexpr int threads = 4;
    constexpr int rounds = 20'000;
    std::atomic<std::uint32_t> holding{0};
    std::atomic<std::uint32_t> most_holding{0};
    std::atomic<std::uint32_t> most_seen{0};
    std::atomic<bool> done{false};

    auto raise = [](std::atomic<std::uint32_t>& high, std::uint32_t v) {
        auto cur = high.load();
        while (v > cur && !high.compare_exchange_weak(cur, v)) {
        }
    };
    std::thread watcher([&] {
        while (!done.load()) raise(most_seen, limit.in_flight());
    });
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                if (auto p = limit.try_acquire()) {
                    raise(most_holding, holding.fetch_add(1) + 1);
                    if (i % 64 == 0) std::this_thread::yield();
                    holding.fetch_sub(1);
                }
            }
        });
    }
    for (auto& w : workers) w.join();
    done = true;
    watcher.join();

    CHECK(most_holding.load() <= max);
    CHECK(most_holding.load() >= 1);
    CHECK(most_seen.load() <= max);
    CHECK(limit.in_flight() == 0);
    CHECK(limit.admitted() + limit.shed() == static_cast<std::uint64_t>(threads) * rounds);
}

TEST_CASE("concurrency limit: options are validated and readable") {
    CHECK_THROWS_AS(concurrency_limit({.max_in_flight = 0}), std::invalid_argument);
    try {
        concurrency_limit bad{{.max_in_flight = 0}};
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) == "resil::concurrency_limit: `max_in_flight` must be in [1, 4294967295], got 0");
    }
    using options = resil::concurrency_limit_options;
    CHECK_FALSE(options{}.validate());
    REQUIRE(options{.max_in_flight = 0}.validate());
    CHECK(options{.max_in_flight = 0}.validate()->field == "max_in_flight");
    CHECK(options{.max_in_flight = 0}.validate()->message() == "`max_in_flight` must be in [1, 4294967295], got 0");
    CHECK_FALSE(options{.max_in_flight = options::min_max_in_flight}.validate());
    CHECK_FALSE(options{.max_in_flight = options::max_max_in_flight}.validate());
    const concurrency_limit defaults;
    CHECK(defaults.options() == resil::concurrency_limit_options{.max_in_flight = 16});
    CHECK(defaults.limit() == 16);
    const concurrency_limit one{{.max_in_flight = 1}};
    auto p = one.try_acquire();  // a const limit still admits: the state is atomic
    CHECK(p);
    CHECK_FALSE(one.try_acquire().held());
}

TEST_CASE("concurrency limit: admitted and shed, counted in per-thread stripes, match what every thread saw") {
    concurrency_limit limit{{.max_in_flight = 2}};
    constexpr int threads = 8;
    constexpr int rounds = 20'000;
    std::atomic<std::uint64_t> admitted{0};
    std::atomic<std::uint64_t> shed{0};
    std::atomic<bool> running{true};
    std::thread reader([&] {
        while (running.load()) CHECK(limit.admitted() + limit.shed() <= std::uint64_t{threads} * rounds);
    });
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                std::uint64_t mine_admitted = 0;
                std::uint64_t mine_shed = 0;
                for (int i = 0; i < rounds; ++i) {
                    if (auto p = limit.try_acquire()) {
                        ++mine_admitted;
                        if (i % 128 == 0) std::this_thread::yield();  // hold it a while: others are shed
                    } else {
                        ++mine_shed;
                    }
                }
                admitted.fetch_add(mine_admitted);
                shed.fetch_add(mine_shed);
            });
    }
    running = false;
    reader.join();
    CHECK(limit.admitted() == admitted.load());
    CHECK(limit.shed() == shed.load());
    CHECK(limit.admitted() + limit.shed() == std::uint64_t{threads} * rounds);
    CHECK(limit.in_flight() == 0);
}
