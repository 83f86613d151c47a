#include <resil/retry_budget.hpp>
#include <resil/testing/manual_clock.hpp>

#include <limits>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/stripe_sharing.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;

TEST_CASE("retry budget: a quiet client may still retry, up to the floor") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 10, .window = 10s}};
    CHECK(budget.balance(clock.now()) == 100);  // 10/s over a 10 s window
    int granted = 0;
    while (budget.try_withdraw(clock.now())) ++granted;
    CHECK(granted == 100);
    CHECK(budget.balance(clock.now()) == 0);
}

TEST_CASE("retry budget: every ten requests earn one retry at 10%") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 0}};
    CHECK_FALSE(budget.try_withdraw(clock.now()));
    for (int i = 0; i < 9; ++i) budget.deposit(clock.now());
    CHECK_FALSE(budget.try_withdraw(clock.now()));
    budget.deposit(clock.now());
    CHECK(budget.try_withdraw(clock.now()));
    CHECK_FALSE(budget.try_withdraw(clock.now()));
    // The classic numbers: 500 requests per second, 20 % failing, allow 50 retries per second.
    for (int i = 0; i < 500; ++i) budget.deposit(clock.now());
    int granted = 0;
    for (int i = 0; i < 100; ++i) granted += budget.try_withdraw(clock.now()) ? 1 : 0;
    CHECK(granted == 50);
    // Every withdrawal asked for is counted, granted or refused.
    CHECK(budget.metrics() == resil::retry_budget_metrics{.withdrawals = 51, .refusals = 3 + 50});
}

TEST_CASE("retry budget: deposits and withdrawals expire with the window") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.5, .min_per_second = 0, .window = 10s}};
    for (int i = 0; i < 100; ++i) budget.deposit(clock.now());
    for (int i = 0; i < 50; ++i) REQUIRE(budget.try_withdraw(clock.now()));
    CHECK_FALSE(budget.try_withdraw(clock.now()));
    clock.advance(5s);
    CHECK(budget.balance(clock.now()) == 0);  // both still inside the window
    clock.advance(6s);
    CHECK(budget.balance(clock.now()) == 0);  // both gone: nothing earned, nothing owed
    for (int i = 0; i < 10; ++i) budget.deposit(clock.now());
    CHECK(budget.balance(clock.now()) == 5);
    clock.advance(1h);  // a long idle period: stale slots count nothing
    CHECK(budget.balance(clock.now()) == 0);
}

TEST_CASE("retry budget: the window slides slot by slot") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0, .window = 10s}};
    for (int s = 0; s < 10; ++s) {
        budget.deposit(clock.now());
        clock.advance(1s);
    }
    // 10 deposits one second apart: the oldest has just left the window.
    CHECK(budget.balance(clock.now()) == 9);
    clock.advance(4s);
    CHECK(budget.balance(clock.now()) == 5);
}

TEST_CASE("retry budget: invalid options are refused with a clear message") {
    CHECK_THROWS_WITH(resil::retry_budget({.ratio = 1.5}), "resil::retry_budget: `ratio` must be in [0, 1], got 1.5");
    CHECK_THROWS_AS(resil::retry_budget({.ratio = -0.1}), std::invalid_argument);
    CHECK_THROWS_AS(resil::retry_budget({.window = 0s}), std::invalid_argument);
    CHECK_THROWS_AS(resil::retry_budget({.window = 48h}), std::invalid_argument);
    CHECK_THROWS_AS(resil::retry_budget({.min_per_second = 2'000'000}), std::invalid_argument);
    const resil::retry_budget ok{{.ratio = 0.2, .min_per_second = 3, .window = 1s}};
    CHECK(ok.options().ratio == 0.2);
    CHECK(ok.options().window == 1s);
}

TEST_CASE("retry budget options: validate() names the field, its range and the value") {
    using options = resil::retry_budget_options;
    CHECK_FALSE(options{}.validate());
    CHECK(options{.ratio = 1.5}.validate()->field == "ratio");
    CHECK(options{.ratio = 1.5}.validate()->message() == "`ratio` must be in [0, 1], got 1.5");
    CHECK(options{.ratio = -0.1}.validate()->message() == "`ratio` must be in [0, 1], got -0.1");
    CHECK(options{.ratio = std::numeric_limits<double>::quiet_NaN()}.validate()->message() ==
          "`ratio` must be in [0, 1], got nan");
    CHECK(options{.min_per_second = 2'000'000}.validate()->message() ==
          "`min_per_second` must be in [0, 1000000], got 2000000");
    CHECK(options{.window = 5ms}.validate()->message() == "`window` must be in [10ms, 24h], got 5ms");
    CHECK(options{.window = 48h}.validate()->message() == "`window` must be in [10ms, 24h], got 48h");
    CHECK(options{.window = 0s}.validate()->message() == "`window` must be in [10ms, 24h], got 0s");

    // The limits themselves are valid.
    CHECK_FALSE(options{.ratio = options::min_ratio, .min_per_second = 0, .window = options::min_window}.validate());
    CHECK_FALSE(options{.ratio = options::max_ratio,
                        .min_per_second = options::max_min_per_second,
                        .window = options::max_window}
                    .validate());

    // The constructor throws the same message, named after the policy.
    CHECK_THROWS_WITH(resil::retry_budget({.min_per_second = 2'000'000}),
                      "resil::retry_budget: `min_per_second` must be in [0, 1000000], got 2000000");
    CHECK_THROWS_WITH(resil::retry_budget({.window = 5ms}), "resil::retry_budget: `window` must be in [10ms, 24h], got 5ms");
}

TEST_CASE("retry budget: a thread with an older clock reading never wipes a newer slot") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0, .window = 10s}};
    const auto old = clock.now();
    clock.advance(10s);  // same slot index, one window later
    budget.deposit(clock.now());
    budget.deposit(old);  // a stalled thread finally writes
    CHECK(budget.balance(clock.now()) == 1);
    CHECK_FALSE(budget.try_withdraw(old));
    CHECK(budget.try_withdraw(clock.now()));
}

TEST_CASE("retry budget: a slot idle for longer than half the epoch range reads as stale, not as the future") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0, .window = 10ms}};
    budget.deposit(clock.now());
    // 2^23 slots of 1 ms and a little more, landing on the same slot of the
    // ring (a multiple of 10): the 24-bit epoch has gone past halfway.
    clock.advance(std::chrono::milliseconds{(1 << 23) + 5'002});
    budget.deposit(clock.now());
    budget.deposit(clock.now());
    CHECK(budget.balance(clock.now()) == 2);
    CHECK(budget.try_withdraw(clock.now()));
}

TEST_CASE("retry budget: concurrent deposits and withdrawals across a moving clock stay bounded") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 0, .window = 10s}};
    std::atomic<long> deposits{0};
    std::atomic<long> granted{0};
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < 3; ++t)
            pool.emplace_back([&] {
                for (int i = 0; i < 20'000; ++i) {
                    budget.deposit(clock.now());
                    deposits.fetch_add(1);
                    if (budget.try_withdraw(clock.now())) granted.fetch_add(1);
                }
            });
        pool.emplace_back([&] {
            for (int i = 0; i < 2'000; ++i) clock.advance(1ms);
        });
    }
    // Over all time, retries never exceed 10 % of requests (no floor here).
    CHECK(granted.load() <= deposits.load() / 10);
    CHECK(granted.load() > 0);
}

TEST_CASE("retry budget: a stale reading (a reused context, a stalled thread) never wipes a live slot") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.5, .min_per_second = 0, .window = 10s}};
    const auto stale = clock.now();
    clock.advance(100s);  // ten windows later: the same slot index, far out of the horizon
    for (int i = 0; i < 30; ++i) budget.deposit(clock.now());
    int granted = 0;
    while (budget.try_withdraw(clock.now())) ++granted;
    CHECK(granted == 15);
    budget.deposit(stale);  // must not reset the live slot's counts
    CHECK_FALSE(budget.try_withdraw(stale));
    CHECK(budget.balance(clock.now()) == 0);
    CHECK_FALSE(budget.try_withdraw(clock.now()));
}

// What a withdrawal does after its check passed: commit its retry to the slot
// of `now`, then confirm. Lets a test put another thread's commits in between.
struct resil::detail::retry_budget_probe {
    static std::size_t rings_written_alone(const resil::retry_budget& b) { return b.deposits_.owned_count(); }
    static bool commit_then_confirm(resil::retry_budget& b, resil::time_point now) {
        const auto epoch = b.epoch_of(now);
        auto& slot = b.slots_[epoch % resil::retry_budget::slots];
        const auto word = slot.load();
        slot.store(resil::retry_budget::packed_epoch(word) == (epoch & resil::retry_budget::epoch_mask)
                       ? word + resil::retry_budget::retry_one
                       : resil::retry_budget::pack(epoch, 1));
        return b.confirm(epoch, slot);
    }
};

TEST_CASE("retry budget: a thread sharing its stripe index and that index's holder both deposit exactly") {
    // The holder deposits with plain stores, the sharer with compare-and-swap,
    // into one slot at once: had the sharer also taken the holder's ring for
    // its own, the two would overwrite each other's counts.
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.5, .min_per_second = 0, .window = 10s}};
    const auto t = clock.now();
    constexpr int per_thread = 1'000'000;
    const auto s = resil_test::run_sharer_beside_holder([&] {
        for (int i = 0; i < per_thread; ++i) budget.deposit(t);
    });
    CHECK(s.sharer_shares);
    CHECK(s.holders_writing == 1);
    CHECK(budget.balance(t) == per_thread);  // 2 * per_thread requests at ratio 0.5
    // The holder had a ring of its own (its index below the budget's stripe
    // count) on any machine of two or more hardware threads; with one, the
    // two shared a ring and the count above tested less.
    if (resil::detail::default_stripe_count() >= 2) CHECK(s.index < resil::detail::retry_budget_probe::rings_written_alone(budget));
}

TEST_CASE("retry budget: retries taken at a later reading count against an earlier one") {
    manual_clock clock;
    // 10 retries per window, from the reserve alone.
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 1, .window = 10s}};
    const auto t = clock.now();
    int granted = 0;
    for (int i = 0; i < 10; ++i) granted += budget.try_withdraw(t + 1s) ? 1 : 0;
    CHECK(granted == 10);
    // A thread that read the clock a second earlier gets here only now.
    for (int i = 0; i < 10; ++i) granted += budget.try_withdraw(t) ? 1 : 0;
    CHECK(granted == 10);
    CHECK(budget.balance(t) == 0);
    CHECK(budget.balance(t + 1s) == 0);
}

TEST_CASE("retry budget: confirm() counts retries committed meanwhile at a later reading") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 1, .window = 10s}};
    const auto t = clock.now();
    // Ten withdrawals at t passed their check on an empty window; before they
    // commit, ten others reading t + 1 s take the whole budget.
    int granted = 0;
    for (int i = 0; i < 10; ++i) granted += budget.try_withdraw(t + 1s) ? 1 : 0;
    REQUIRE(granted == 10);
    for (int i = 0; i < 10; ++i) granted += resil::detail::retry_budget_probe::commit_then_confirm(budget, t) ? 1 : 0;
    CHECK(granted == 10);
    CHECK(budget.balance(t + 1s) == 0);  // every late retry was given back
}

TEST_CASE("retry budget: threads whose readings lag and lead each other never overdraw") {
    manual_clock clock;
    const auto t0 = clock.now();
    // 1,000 requests in one slot, 10 %: 100 retries, no reserve.
    resil::retry_budget budget{{.ratio = 0.10, .min_per_second = 0, .window = 10s}};
    for (int i = 0; i < 1000; ++i) budget.deposit(t0);
    constexpr int threads = 8;
    std::atomic<int> granted{0};
    std::atomic<int> ready{0};
    {
        std::vector<std::jthread> pool;
        for (int id = 0; id < threads; ++id)
            pool.emplace_back([&, id] {
                ready.fetch_add(1);
                while (ready.load() < threads) std::this_thread::yield();
                for (int i = 0; i < 200; ++i) {
                    // Readings spread over the window's 10 slots, each thread
                    // out of step with the others: some lag, some lead.
                    const auto reading = t0 + std::chrono::milliseconds{((i * 7 + id * 3) % 10) * 1000 + id};
                    if (budget.try_withdraw(reading)) granted.fetch_add(1);
                }
            });
    }
    // Every reading is inside the window that holds the 1,000 requests.
    CHECK(granted.load() <= 100);
    CHECK(granted.load() > 0);
    CHECK(budget.balance(t0 + 9s) >= 0);
}

TEST_CASE("retry budget: deposits from many threads, each in its own stripe, are all counted") {
    manual_clock clock;
    const auto t = clock.now();
    // Ratio 0.5 and no reserve: the balance is exactly half the deposits.
    resil::retry_budget budget{{.ratio = 0.5, .min_per_second = 0, .window = 10s}};
    constexpr int threads = 8;
    constexpr int per_thread = 10'000;
    std::atomic<int> ready{0};
    {
        std::vector<std::jthread> pool;
        for (int id = 0; id < threads; ++id)
            pool.emplace_back([&, id] {
                ready.fetch_add(1);
                while (ready.load() < threads) std::this_thread::yield();
                // Spread over three slots of the window: stripes hold several slots each.
                for (int i = 0; i < per_thread; ++i) budget.deposit(t + std::chrono::seconds{(i + id) % 3});
            });
    }
    const auto later = t + 2s;
    CHECK(budget.balance(later) == threads * per_thread / 2);
    // Withdrawals from many threads take exactly what the deposits earned, never more.
    std::atomic<int> granted{0};
    {
        std::vector<std::jthread> pool;
        for (int id = 0; id < threads; ++id)
            pool.emplace_back([&] {
                for (int i = 0; i < per_thread; ++i)
                    if (budget.try_withdraw(later)) granted.fetch_add(1);
            });
    }
    CHECK(granted.load() <= threads * per_thread / 2);
    CHECK(granted.load() > 0);
    CHECK(budget.balance(later) == threads * per_thread / 2 - granted.load());
    // A quiet moment after the race: what is left can be taken to the last retry.
    int rest = 0;
    while (budget.try_withdraw(later)) ++rest;
    CHECK(granted.load() + rest == threads * per_thread / 2);
    CHECK(budget.balance(later) == 0);
}

TEST_CASE("retry budget: a deposit counts in its thread's stripe, and every stripe expires with the window") {
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0, .window = 10s}};
    const auto t = clock.now();
    std::jthread([&] { budget.deposit(t); }).join();      // another thread: another stripe, or this one's
    budget.deposit(t);
    std::jthread([&] { budget.deposit(t + 5s); }).join();
    CHECK(budget.balance(t + 5s) == 3);
    CHECK(budget.balance(t + 10s) == 1);  // the two at t have left the window, in whichever stripe
    CHECK(budget.balance(t + 15s) == 0);
}
