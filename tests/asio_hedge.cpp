// resil::asio::hedged on the manual clock, with scripted copies: which copies
// start and when (k × delay on the clock), the first final answer winning and
// the others cancelled, retryable failures not ending the call while another
// copy runs, the budget refusing copies, a call that may not be repeated run
// once, the caller's cancellation, an io_context destroyed mid-call, and the
// composition with retry and a circuit breaker (the hedge inside the retry);
// and, on the real clock, a pipeline's deadline cutting a hedged group.
#include <resil/asio.hpp>
#include <resil/asio/hedge.hpp>
#include <resil/resil.hpp>
#include <resil/testing/manual_clock.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;
namespace events = resil::events;
using mctx = resil::basic_context<manual_clock>;

namespace {

std::string ms(resil::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

// One line per hedge event, stamped with the manual clock.
struct hedge_log {
    std::vector<std::string>* lines;
    manual_clock clock;
    void add(std::string s) const { lines->push_back(ms(clock.now().time_since_epoch() - 1h) + " " + std::move(s)); }
    void operator()(const events::hedge_started& e) const {
        add("hedge_started " + std::to_string(e.copy) + " after " + ms(e.delay));
    }
    void operator()(const events::hedge_refused& e) const { add("hedge_refused " + std::to_string(e.copy)); }
    void operator()(const events::hedge_cancelled& e) const { add("hedge_cancelled " + std::to_string(e.copy)); }
    void operator()(const events::hedge_won& e) const { add("hedge_won " + std::to_string(e.copy)); }
};

// What a scripted copy does: answer at once, or park until released (then
// answer) or cancelled (then say so).
struct script {
    enum kind { answer, park, fail_now, throw_now } what = answer;
    std::string text = "ok";
};

struct copies {
    copies(asio::io_context& context, std::vector<script> scripts) : io(context), plan(std::move(scripts)) {}

    asio::io_context& io;
    std::vector<script> plan;
    std::vector<std::string> log;  // "k:begin", "k:cancelled", "k:<answer>"
    std::vector<std::shared_ptr<asio::steady_timer>> parked;
    std::shared_ptr<int> alive = std::make_shared<int>(0);  // frames of copies not yet destroyed
    int begun = 0;

    // The callable hedged() runs: copy k follows plan[k].
    auto callable() {
        return [this](mctx& ctx) -> asio::awaitable<std::string> {
            // What a client says before it suspends: it sends the
            // context's key, so a keyed or idempotent call may be repeated.
            ctx.mark_repeatable(ctx.idempotent() || ctx.has_idempotency_key());
            const auto k = static_cast<std::size_t>(begun++);
            struct frame_count {
                std::shared_ptr<int> n;
                explicit frame_count(std::shared_ptr<int> c) : n(std::move(c)) { ++*n; }
                ~frame_count() { --*n; }
            } counted{alive};
            log.push_back(std::to_string(k) + ":begin");
            const script s = k < plan.size() ? plan[k] : script{};
            if (s.what == script::fail_now) {
                log.push_back(std::to_string(k) + ":fail");
                co_return "fail";
            }
            if (s.what == script::throw_now) throw std::runtime_error("copy " + std::to_string(k) + " threw");
            if (s.what == script::park) {
                auto timer = std::make_shared<asio::steady_timer>(io, 1h);
                parked.resize(std::max(parked.size(), k + 1));
                parked[k] = timer;
                std::error_code ec;
                co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
                if (ec && !released(k)) {
                    log.push_back(std::to_string(k) + ":cancelled");
                    co_return "cancelled";
                }
            }
            log.push_back(std::to_string(k) + ":" + s.text);
            co_return s.text;
        };
    }

    std::vector<bool> release_marks;
    bool released(std::size_t k) const { return k < release_marks.size() && release_marks[k]; }
    // Lets parked copy k answer (posted: as an answer arriving later).
    void release(std::size_t k) {
        release_marks.resize(std::max(release_marks.size(), k + 1));
        release_marks[k] = true;
        parked.at(k)->cancel();
    }
};

resil::verdict judge(const std::string& s) {
    if (s == "ok") return resil::verdict::success;
    if (s == "not found") return resil::verdict::permanent;
    if (s == "cancelled") return resil::verdict::ambiguous;
    return resil::verdict::retryable;
}

// Runs `io` until `done` (10 s at most, so that a hang fails).
template <class Done>
void run_until(asio::io_context& io, Done done) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < until) {
        io.run_for(5ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(done());
}

// A repeatable call's context on `clock`.
mctx idempotent_context(const manual_clock& clock) {
    mctx ctx{clock};
    ctx.mark_idempotent();
    return ctx;
}

// Spawns an idempotent call through `pipe` whose attempts are hedged groups
// of `c`'s copies; its outcome lands in `out`.
template <class Pipe>
void spawn_hedged_in(Pipe& pipe, asio::io_context& io, resil::hedge_policy& hedge, copies& c,
                     std::vector<std::string>& events, manual_clock& clock,
                     std::optional<resil::outcome<std::string>>& out) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            resil::basic_call_options<manual_clock> options;
            options.idempotent = true;
            mctx ctx{std::move(options)};
            out = co_await pipe.execute(
                ctx,
                [&](mctx& attempt) -> asio::awaitable<std::string> {
                    co_return co_await resil::asio::hedged(hedge, attempt, c.callable(), judge,
                                                           hedge_log{&events, clock});
                },
                judge);
        },
        asio::detached);
}

}  // namespace

TEST_CASE("asio hedge: copy 1 starts after the delay; its answer wins and copy 0 is cancelled") {
    asio::io_context io;
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0}};
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 30ms, .budget = &budget}};
    copies c{io, {{script::park}, {script::answer, "ok"}}};
    std::vector<std::string> events;
    std::optional<std::string> result;
    int completions = 0;
    auto ctx = idempotent_context(clock);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
            ++completions;
        },
        asio::detached);
    run_until(io, [&] { return completions == 1 && *c.alive == 0; });
    CHECK(result == "ok");
    CHECK(c.log == std::vector<std::string>{"0:begin", "1:begin", "1:ok", "0:cancelled"});
    CHECK(events == std::vector<std::string>{"30ms hedge_started 1 after 30ms", "30ms hedge_won 1",
                                             "30ms hedge_cancelled 0"});
    CHECK(clock.now().time_since_epoch() == 1h + 30ms);
    // The call was counted (no retry policy outside), and the copy withdrew one.
    CHECK(budget.balance(clock.now()) == 0);  // 1 deposit × 1.0, less the copy
    io.restart();
    io.run_for(20ms);
    CHECK(completions == 1);  // exactly once
}

TEST_CASE("asio hedge: copy k starts k × delay after the first; the first final answer cancels all others") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 3, .delay = 20ms}};
    copies c{io, {{script::park}, {script::park}, {script::answer, "not found"}}};
    std::vector<std::string> events;
    std::optional<std::string> result;
    auto ctx = idempotent_context(clock);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
        },
        asio::detached);
    run_until(io, [&] { return result.has_value() && *c.alive == 0; });
    CHECK(result == "not found");  // a permanent failure is a final answer too
    CHECK(c.begun == 3);           // copy 3 never started: the call was over
    CHECK(events == std::vector<std::string>{"20ms hedge_started 1 after 20ms", "40ms hedge_started 2 after 20ms",
                                             "40ms hedge_won 2", "40ms hedge_cancelled 0", "40ms hedge_cancelled 1"});
}

TEST_CASE("asio hedge: a retryable failure does not end the call while another copy runs") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    copies c{io, {{script::park, "ok"}, {script::fail_now}}};
    std::vector<std::string> events;
    std::optional<std::string> result;
    auto ctx = idempotent_context(clock);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
        },
        asio::detached);
    run_until(io, [&] { return c.log.size() == 3; });  // 0:begin 1:begin 1:fail
    CHECK_FALSE(result.has_value());
    c.release(0);
    run_until(io, [&] { return result.has_value() && *c.alive == 0; });
    CHECK(result == "ok");
    CHECK(events == std::vector<std::string>{"10ms hedge_started 1 after 10ms"});  // nobody lost
}

TEST_CASE("asio hedge: when every copy fails, the call ends with the first failure; a throw is rethrown last") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    SECTION("failures") {
        copies c{io, {{script::park, "busy"}, {script::fail_now}}};
        std::optional<std::string> result;
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io, [&]() -> asio::awaitable<void> { result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge); },
            asio::detached);
        run_until(io, [&] { return c.log.size() == 3; });
        c.release(0);
        run_until(io, [&] { return result.has_value(); });
        CHECK(result == "fail");  // copy 1's, which came first
    }
    SECTION("a throw") {
        copies c{io, {{script::throw_now}}};
        std::string thrown;
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                try {
                    (void)co_await resil::asio::hedged(hedge, ctx, c.callable(), judge);
                } catch (const std::runtime_error& e) {
                    thrown = e.what();
                }
            },
            asio::detached);
        run_until(io, [&] { return !thrown.empty(); });
        CHECK(thrown == "copy 0 threw");
        CHECK(c.begun == 1);  // nothing was running any more: no copy started after it
    }
}

TEST_CASE("asio hedge: a call that may not be repeated runs once; a refused budget stops the copies") {
    asio::io_context io;
    manual_clock clock;
    std::vector<std::string> events;
    std::optional<std::string> result;
    SECTION("neither idempotent nor keyed") {
        resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms}};
        copies c{io, {{script::park, "ok"}}};
        mctx ctx{clock};  // a POST without a key
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
            },
            asio::detached);
        run_until(io, [&] { return clock.now() > manual_clock{}.now(); });  // the hedge's wait has passed
        io.poll();
        c.release(0);
        run_until(io, [&] { return result.has_value(); });
        CHECK(c.begun == 1);
        CHECK(events.empty());
    }
    SECTION("a key makes it repeatable") {
        resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
        copies c{io, {{script::park}, {script::answer, "ok"}}};
        mctx ctx{clock};
        (void)ctx.idempotency_key();  // every copy sends this one
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
            },
            asio::detached);
        run_until(io, [&] { return result.has_value() && *c.alive == 0; });
        CHECK(c.begun == 2);
    }
    SECTION("the budget refuses") {
        resil::retry_budget budget{{.ratio = 0.0, .min_per_second = 0}};
        resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms, .budget = &budget}};
        copies c{io, {{script::park, "ok"}}};
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
            },
            asio::detached);
        run_until(io, [&] { return !events.empty(); });
        io.poll();
        c.release(0);
        run_until(io, [&] { return result.has_value(); });
        CHECK(result == "ok");
        CHECK(c.begun == 1);
        CHECK(events == std::vector<std::string>{"10ms hedge_refused 1"});
    }
}

TEST_CASE("asio hedge: the caller's cancellation cancels every copy, none as a loser, and completes once") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    copies c{io, {{script::park}, {script::park}}};
    std::vector<std::string> events;
    std::optional<std::string> result;
    int completions = 0;
    asio::cancellation_signal cancel;
    auto ctx = idempotent_context(clock);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, hedge_log{&events, clock});
            ++completions;
        },
        asio::bind_cancellation_slot(cancel.slot(), asio::detached));
    run_until(io, [&] { return c.begun == 2; });
    io.poll();
    cancel.emit(asio::cancellation_type::terminal);
    run_until(io, [&] { return completions == 1 && *c.alive == 0; });
    INFO(result.value_or("(none)"));
    CHECK(result == "cancelled");
    CHECK(events == std::vector<std::string>{"10ms hedge_started 1 after 10ms"});
    cancel.emit(asio::cancellation_type::terminal);  // after the completion: nothing
    io.restart();
    io.run_for(20ms);
    CHECK(completions == 1);
}

TEST_CASE("asio hedge: an io_context destroyed with copies in flight frees every frame and resumes nothing") {
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms}};
    auto alive = std::make_shared<int>(0);
    bool resumed = false;
    {
        asio::io_context io;
        copies c{io, {{script::park}, {script::park}, {script::park}}};
        c.alive = alive;
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                (void)co_await resil::asio::hedged(hedge, ctx, c.callable(), judge);
                resumed = true;
            },
            asio::detached);
        run_until(io, [&] { return c.begun == 3; });
        CHECK(*alive == 3);
        io.stop();
    }
    CHECK(*alive == 0);
    CHECK_FALSE(resumed);
}

TEST_CASE("asio hedge: inside a retry policy each attempt is a hedged group; losers never reach the breaker") {
    asio::io_context io;
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 0.1, .min_per_second = 10}};  // enough for the retry and the copy
    resil::basic_circuit_breaker<manual_clock> breaker{{}, clock};
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms, .budget = &budget}};
    auto pipe = resil::asio::pipeline(
        clock,
        resil::retry_policy{
            {.max_attempts = 2, .backoff = resil::exponential_backoff{100ms, 1s, 1.0}, .budget = &budget}},
        std::ref(breaker));
    // Attempt 1: copy 0 fails at once (no hedge: nothing else runs). Attempt
    // 2: copy 0 hangs, its hedge answers.
    copies c{io, {{script::fail_now}, {script::park}, {script::answer, "ok"}}};
    std::vector<std::string> events;
    std::optional<resil::outcome<std::string>> out;
    spawn_hedged_in(pipe, io, hedge, c, events, clock, out);
    run_until(io, [&] { return out.has_value() && *c.alive == 0; });
    REQUIRE(out->ok());
    CHECK(out->value() == "ok");
    CHECK(c.begun == 3);
    CHECK(events == std::vector<std::string>{"110ms hedge_started 1 after 10ms", "110ms hedge_won 1",
                                             "110ms hedge_cancelled 0"});
    const auto m = breaker.metrics();
    CHECK(m.calls == 2);  // one per attempt: the failure, then the winner; the loser is not counted
    CHECK(m.failures == 1);
}

TEST_CASE("asio hedge: a pipeline's deadline cuts the whole hedged group short, every copy cancelled") {
    asio::io_context io;
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms}};
    auto pipe = resil::asio::pipeline(resil::deadline_policy{80ms});
    int begun = 0;
    int cancelled = 0;
    std::optional<resil::outcome<std::string>> out;
    const auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            resil::call_options options;
            options.idempotent = true;
            resil::context ctx{std::move(options)};
            out = co_await pipe.execute(
                ctx,
                [&](resil::context& attempt) -> asio::awaitable<std::string> {
                    co_return co_await resil::asio::hedged(
                        hedge, attempt,
                        [&](resil::context& c) -> asio::awaitable<std::string> {
                            c.mark_repeatable(true);
                            ++begun;
                            asio::steady_timer never(co_await asio::this_coro::executor, 1h);
                            std::error_code ec;
                            co_await never.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                            ++cancelled;
                            co_return "cancelled";
                        },
                        judge);
                },
                judge);
        },
        asio::detached);
    run_until(io, [&] { return out.has_value(); });
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(begun == 3);  // copies at 0, 10 and 20 ms
    CHECK(cancelled == 3);
    REQUIRE_FALSE(out->ok());
    CHECK(out->reason() == resil::reason::deadline_exceeded);
    CHECK(took >= 80ms);
    CHECK(took < 80ms + resil_test::slack);
}

namespace {

// A listener that throws on one kind of event.
template <class Event>
struct throwing_listener {
    template <class E>
    void operator()(const E&) const {
        if constexpr (std::is_same_v<E, Event>) throw std::runtime_error("listener threw");
    }
};

// Runs one hedged call of `c` and returns what it threw ("" when nothing).
template <class Classifier, class Listener>
std::string thrown_by_call(resil::hedge_policy& hedge, mctx& ctx, copies& c, Classifier classify,
                           Listener listener, int& completions) {
    std::string thrown;
    asio::co_spawn(
        c.io,
        [&]() -> asio::awaitable<void> {
            try {
                (void)co_await resil::asio::hedged(hedge, ctx, c.callable(), classify, listener);
            } catch (const std::runtime_error& e) {
                thrown = e.what();
            }
            ++completions;
        },
        asio::detached);
    run_until(c.io, [&] { return completions == 1 && *c.alive == 0; });
    return thrown;
}

}  // namespace

TEST_CASE("asio hedge: a throwing listener or classifier ends the call with its exception, every copy freed") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms}};
    auto ctx = idempotent_context(clock);
    int completions = 0;
    SECTION("hedge_started: no copy starts after it, the running one is cancelled") {
        copies c{io, {{script::park}, {script::answer}}};
        CHECK(thrown_by_call(hedge, ctx, c, judge, throwing_listener<events::hedge_started>{}, completions) ==
              "listener threw");
        CHECK(c.log == std::vector<std::string>{"0:begin", "0:cancelled"});
    }
    SECTION("hedge_refused") {
        resil::retry_budget budget{{.ratio = 0.0, .min_per_second = 0}};
        resil::hedge_policy refused{{.max_hedges = 2, .delay = 10ms, .budget = &budget}};
        copies c{io, {{script::park}}};
        CHECK(thrown_by_call(refused, ctx, c, judge, throwing_listener<events::hedge_refused>{}, completions) ==
              "listener threw");
        CHECK(c.log == std::vector<std::string>{"0:begin", "0:cancelled"});
    }
    SECTION("hedge_cancelled: the winner's answer is not returned") {
        copies c{io, {{script::park}, {script::answer, "ok"}}};
        CHECK(thrown_by_call(hedge, ctx, c, judge, throwing_listener<events::hedge_cancelled>{}, completions) ==
              "listener threw");
        CHECK(c.log == std::vector<std::string>{"0:begin", "1:begin", "1:ok", "0:cancelled"});
    }
    SECTION("the classifier") {
        copies c{io, {{script::park}, {script::answer, "ok"}}};
        auto classify = [](const std::string& s) {
            if (s == "ok") throw std::runtime_error("classifier threw");
            return judge(s);
        };
        CHECK(thrown_by_call(hedge, ctx, c, classify, resil::no_listener{}, completions) == "classifier threw");
        CHECK(c.log == std::vector<std::string>{"0:begin", "1:begin", "1:ok", "0:cancelled"});
    }
    io.restart();
    io.run_for(20ms);
    CHECK(completions == 1);
}

TEST_CASE("asio hedge: repeatable only as the client said; a context it has not marked is sent once") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    std::vector<std::string> events;
    std::optional<std::string> result;
    mctx ctx{clock};
    (void)ctx.idempotency_key();  // keyed, but the client below sends no key
    int begun = 0;
    std::shared_ptr<asio::steady_timer> parked;
    std::vector<bool> said;
    // A client that judges (and marks) some turns after it was called; the
    // hedge is due before that.
    auto client = [&](mctx& c) -> asio::awaitable<std::string> {
        ++begun;
        said.push_back(c.repeatable_marked());
        for (int turn = 0; turn < 5; ++turn) co_await asio::post(io, asio::use_awaitable);
        c.mark_repeatable(false);  // a POST sent without a key
        parked = std::make_shared<asio::steady_timer>(io, 1h);
        std::error_code ec;
        co_await parked->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        co_return "ok";
    };
    SECTION("a mark left by an earlier call does not count") { ctx.mark_repeatable(true); }
    SECTION("nothing said") {}
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, client, judge, hedge_log{&events, clock});
        },
        asio::detached);
    run_until(io, [&] { return parked != nullptr && clock.now() > manual_clock{}.now(); });
    io.poll();
    parked->cancel();
    run_until(io, [&] { return result.has_value(); });
    CHECK(begun == 1);
    CHECK(said == std::vector<bool>{false});
    CHECK(events.empty());
}

TEST_CASE("asio hedge: after the stop token fires no copy starts and no latency is recorded") {
    asio::io_context io;
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0}};
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms, .percentile = 0.5, .budget = &budget}};
    copies c{io, {{script::park, "cancelled"}, {script::park, "cancelled"}}};
    std::stop_source stop;
    auto ctx = idempotent_context(clock);
    ctx.set_stop_token(stop.get_token());
    std::vector<std::string> events;
    hedge_log log{&events, clock};
    std::optional<std::string> result;
    // The stop comes with copy 1: copy 2 would be due 10 ms later.
    auto listener = [&](const auto& e) {
        log(e);
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, events::hedge_started>) stop.request_stop();
    };
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge, listener); },
        asio::detached);
    run_until(io, [&] { return c.begun == 2; });
    for (int i = 0; i < 5; ++i) io.poll();  // copy 2's turn, were it due
    c.release(1);
    c.release(0);
    run_until(io, [&] { return result.has_value() && *c.alive == 0; });
    CHECK(c.begun == 2);
    CHECK(events == std::vector<std::string>{"10ms hedge_started 1 after 10ms"});
    CHECK(hedge.latencies().estimate(clock.now(), 0.5).samples == 0);
    CHECK(budget.balance(clock.now()) == 0);  // one deposit, one copy: nothing withdrawn for a third
}

TEST_CASE("asio hedge: a caller's signal that outlives the io_context may still be emitted") {
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    asio::cancellation_signal cancel;
    auto alive = std::make_shared<int>(0);
    {
        asio::io_context io;
        copies c{io, {{script::park}, {script::park}}};
        c.alive = alive;
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                (void)co_await resil::asio::hedged(hedge, ctx, c.callable(), judge);
            },
            asio::bind_cancellation_slot(cancel.slot(), asio::detached));
        run_until(io, [&] { return c.begun == 2; });
        io.stop();
    }
    CHECK(*alive == 0);
    cancel.emit(asio::cancellation_type::terminal);  // the call's state is gone: nothing to reach
}

TEST_CASE("asio hedge: the call is counted in the budget once, by the retry policy or else by the hedge") {
    asio::io_context io;
    manual_clock clock;
    resil::retry_budget budget{{.ratio = 1.0, .min_per_second = 0}};  // one copy per counted call
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms, .budget = &budget}};
    resil::basic_circuit_breaker<manual_clock> breaker{{}, clock};
    copies c{io, {{script::park}, {script::park}, {script::answer, "ok"}}};
    std::vector<std::string> events;
    std::optional<resil::outcome<std::string>> out;
    auto call = [&](auto& pipe) {
        spawn_hedged_in(pipe, io, hedge, c, events, clock, out);
        io.poll();
        c.release(0);
        run_until(io, [&] { return out.has_value() && *c.alive == 0; });
    };
    SECTION("a pipeline without a retry policy: the hedge counts it") {
        auto pipe = resil::asio::pipeline(clock, std::ref(breaker));
        call(pipe);
    }
    SECTION("a retry policy counts it; the hedge does not count it again") {
        auto pipe = resil::asio::pipeline(
            clock, resil::retry_policy{{.max_attempts = 2, .budget = &budget}}, std::ref(breaker));
        call(pipe);
    }
    // One deposit in either case: copy 1 granted, copy 2 refused.
    CHECK(events == std::vector<std::string>{"10ms hedge_started 1 after 10ms", "20ms hedge_refused 2",
                                             "20ms hedge_cancelled 1"});  // copy 0 answered
    REQUIRE(out->ok());
    CHECK(c.begun == 2);
}

TEST_CASE("asio hedge: on an io_context run by two threads each call's copies are serialised (run under TSan)") {
    asio::io_context io;  // no concurrency hint: hedged() makes a strand per call
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 0ms}};
    constexpr int calls = 40;
    std::atomic<int> done{0};
    std::atomic<int> started{0};
    std::atomic<int> answered{0};
    auto count_started = [&](const auto& e) {
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, events::hedge_started>) ++started;
    };
    for (int i = 0; i < calls; ++i)
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                resil::context ctx;
                ctx.mark_idempotent();
                int copy = 0;  // touched by every copy of this call
                const auto r = co_await resil::asio::hedged(
                    hedge, ctx,
                    [&](resil::context& c) -> asio::awaitable<int> {
                        c.mark_repeatable(true);
                        const int mine = copy++;
                        asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
                        std::error_code ec;
                        co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                        if (!ec) ++answered;
                        co_return mine;
                    },
                    [](int) { return resil::verdict::success; }, count_started);
                if (r >= 0) ++done;  // (Catch's assertions are for one thread)
            },
            asio::detached);
    std::thread other([&] { io.run(); });
    io.run();
    other.join();
    CHECK(done == calls);
    CHECK(started > 0);  // copies did run side by side
    CHECK(answered >= calls);
}

TEST_CASE("asio hedge: the latencies recorded: the winner's, a loser's run that reached the delay, no others") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    auto ctx = idempotent_context(clock);
    std::optional<std::string> result;
    const auto samples = [&] { return hedge.latencies().estimate(clock.now(), 1.0).samples; };
    SECTION("the winner and a loser that ran the delay; its run as its latency") {
        copies c{io, {{script::park}, {script::answer, "ok"}}};
        asio::co_spawn(
            io, [&]() -> asio::awaitable<void> { result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge); },
            asio::detached);
        run_until(io, [&] { return result.has_value() && *c.alive == 0; });
        CHECK(samples() == 2);                                                    // copy 1: 0 ms; copy 0: 10 ms
        CHECK(hedge.latencies().estimate(clock.now(), 1.0).value >= 9ms);        // the run, not 0
        CHECK(hedge.latencies().estimate(clock.now(), 0.5).value < 1ms);         // the winner's
    }
    SECTION("a loser shorter than the delay is not recorded") {
        copies c{io, {{script::park}, {script::park}}};
        asio::co_spawn(
            io, [&]() -> asio::awaitable<void> { result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge); },
            asio::detached);
        run_until(io, [&] { return c.begun == 2; });
        c.release(0);  // at 10 ms, as copy 1 has just started
        run_until(io, [&] { return result.has_value() && *c.alive == 0; });
        CHECK(c.begun == 2);
        CHECK(samples() == 1);  // copy 0's 10 ms; copy 1 ran 0 ms
    }
    SECTION("copies the caller cancelled are not recorded") {
        copies c{io, {{script::park}, {script::park}}};
        asio::cancellation_signal cancel;
        asio::co_spawn(
            io, [&]() -> asio::awaitable<void> { result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge); },
            asio::bind_cancellation_slot(cancel.slot(), asio::detached));
        run_until(io, [&] { return c.begun == 2; });
        cancel.emit(asio::cancellation_type::terminal);
        run_until(io, [&] { return result.has_value() && *c.alive == 0; });
        CHECK(samples() == 0);
    }
}

TEST_CASE("asio hedge: a copy that was never sent is no answer: it neither wins nor hides a sent copy's result") {
    // A balancer with no endpoint for the copy (the call held to a scope
    // whose endpoints all refuse), or a breaker's refusal: never sent.
    auto judge_unsent = [](const std::string& s) {
        return s == "unsent" ? resil::classification::not_sent(resil::verdict::permanent)
                             : resil::classification{judge(s)};
    };
    for (const std::string answer : {"ok", "busy"}) {
        INFO("copy 0 answers " << answer);
        asio::io_context io;  // its own per round: nothing of the last round's call is left in it
        manual_clock clock;
        resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
        copies c{io, {{script::park, answer}, {script::answer, "unsent"}}};
        std::vector<std::string> events;
        std::optional<std::string> result;
        auto ctx = idempotent_context(clock);
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                result = co_await resil::asio::hedged(hedge, ctx, c.callable(), judge_unsent, hedge_log{&events, clock});
            },
            asio::detached);
        run_until(io, [&] { return c.log.size() == 3; });  // 0:begin 1:begin 1:unsent
        CHECK_FALSE(result.has_value());                  // copy 0 still runs: not cancelled
        c.release(0);
        run_until(io, [&] { return result.has_value() && *c.alive == 0; });
        CHECK(result == answer);  // copy 0's answer, a success or the failure a retry outside judges
        CHECK(events == std::vector<std::string>{"10ms hedge_started 1 after 10ms"});
        io.restart();
        io.run();  // the call's frames end before what they refer to
    }
}

TEST_CASE("asio hedge: copies that return outcomes: the result's attempts() counts every copy that ran, losers too") {
    asio::io_context io;
    manual_clock clock;
    resil::hedge_policy hedge{{.max_hedges = 2, .delay = 10ms}};
    // Copy 0 parks (then loses, cancelled), copy 1 finds no endpoint (never
    // sent), copy 2 answers and wins.
    copies c{io, {{script::park, "ok"}, {script::answer, "unsent"}, {script::answer, "ok"}}};
    auto each = c.callable();
    // As resil::asio::call_endpoint's copies: an outcome of one run, or a
    // rejection when no endpoint was left.
    auto as_outcome = [&](mctx& x) -> asio::awaitable<resil::outcome<std::string>> {
        std::string s = co_await each(x);
        if (s == "unsent") co_return resil::outcome<std::string>::rejected(resil::reason::no_endpoint);
        co_return resil::outcome<std::string>::from_value(judge(s), std::move(s));
    };
    std::vector<std::string> events;
    std::optional<resil::outcome<std::string>> result;
    auto ctx = idempotent_context(clock);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            result = co_await resil::asio::hedged(hedge, ctx, as_outcome, {}, hedge_log{&events, clock});
        },
        asio::detached);
    run_until(io, [&] { return result.has_value() && *c.alive == 0; });
    REQUIRE(result->ok());
    CHECK(**result == "ok");
    CHECK(c.log == std::vector<std::string>{"0:begin", "1:begin", "1:unsent", "2:begin", "2:ok", "0:cancelled"});
    CHECK(result->attempts() == 2);  // copies 0 and 2 ran; copy 1 was never sent
    io.restart();
    io.run();
}
