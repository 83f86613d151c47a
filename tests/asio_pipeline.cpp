// resil/asio/pipeline.hpp: the asynchronous pipeline drives the same decision
// cores as the blocking one, so given the same scripted results on the manual
// clock both emit the same events, in the same order, at the same instants.
#include <resil/asio.hpp>
#include <resil/resil.hpp>
#include <resil/testing/manual_clock.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <tuple>
#include <string>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::testing::manual_clock;
namespace events = resil::events;

namespace {

std::string ms(resil::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

// One line per event, with every field that policies decide.
struct recorder {
    std::vector<std::string>* lines;
    manual_clock clock;
    void add(std::string s) const { lines->push_back(ms(clock.now().time_since_epoch()) + " " + std::move(s)); }
    void operator()(const events::attempt_started& e) const { add("attempt_started " + std::to_string(e.attempt)); }
    void operator()(const events::attempt_finished& e) const {
        add("attempt_finished " + std::to_string(e.attempt) + " " + std::string(resil::to_string(e.verdict)));
    }
    void operator()(const events::retry_scheduled& e) const {
        add("retry_scheduled " + std::to_string(e.attempt) + " " + ms(e.delay) + (e.from_retry_after ? " server" : ""));
    }
    void operator()(const events::retries_exhausted& e) const { add("retries_exhausted " + std::to_string(e.attempts)); }
    void operator()(const events::budget_refused& e) const { add("budget_refused " + std::to_string(e.attempt)); }
    void operator()(const events::breaker_state_changed& e) const {
        add("breaker " + std::string(resil::to_string(e.from)) + "->" + std::string(resil::to_string(e.to)) + " #" +
            std::to_string(e.generation) + " calls " + std::to_string(e.calls_in_window));
    }
    void operator()(const events::rejected& e) const {
        add("rejected " + std::string(resil::to_string(e.reason)) + (e.retry_after ? " " + ms(*e.retry_after) : ""));
    }
    void operator()(const events::fallback_used& e) const {
        add("fallback_used " + std::string(resil::to_string(e.reason)));
    }
    void operator()(const events::fault_injected& e) const {
        add("fault_injected " + std::string(resil::to_string(e.kind)) + " " + ms(e.delay) + " " +
            std::string(resil::to_string(e.verdict)));
    }
    void operator()(const events::call_finished& e) const {
        add("call_finished " + std::string(resil::to_string(e.reason)) + " attempts " + std::to_string(e.attempts) +
            (e.from_fallback ? " fallback" : ""));
    }
    void operator()(const events::deadline_exceeded& e) const {
        add("deadline_exceeded " + std::to_string(e.attempts));
    }
    void operator()(const events::pace_changed& e) const {
        add("pace_changed " + std::to_string(e.rate) + "/s burst " + std::to_string(e.burst) + " paused " +
            ms(e.paused_for) + " #" + std::to_string(e.generation));
    }
    void operator()(const events::limit_changed& e) const {
        add("limit_changed " + std::to_string(e.from) + "->" + std::to_string(e.to) + " " +
            std::string(resil::to_string(e.cause)) + " #" + std::to_string(e.generation));
    }
};

struct step {
    int status;
    resil::duration took;
    std::string remaining{};  // with RateLimit fields: what remains of a quota of 10, reset in 1 s
};

resil::classification classify_status(int status) {
    if (status == 429) return {resil::verdict::retryable, resil::server_hint{2s, false}};
    if (status >= 500) return resil::verdict::retryable;
    if (status == 408) return resil::verdict::ambiguous;
    if (status >= 400) return resil::verdict::permanent;
    return resil::verdict::success;
}

// A reply with the rate-limit fields a server sends (RateLimit-*, the
// draft's), for the policies that read them (paced_bucket).
struct reply {
    int status = 200;
    std::string limit, remaining, reset;
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const {
        const auto is = [&](std::string_view n) {
            return name.size() == n.size() &&
                   std::equal(name.begin(), name.end(), n.begin(), [](char a, char b) {
                       return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                   });
        };
        if (!remaining.empty()) {
            if (is("RateLimit-Limit")) return std::string_view{limit};
            if (is("RateLimit-Remaining")) return std::string_view{remaining};
            if (is("RateLimit-Reset")) return std::string_view{reset};
        }
        return std::nullopt;
    }
};

resil::classification classify_reply(const reply& r) { return classify_status(r.status); }

// A scenario's world: one clock, fixed jitter, a scripted dependency and the
// events seen. Built twice, once per pipeline kind.
struct world {
    manual_clock clock;
    resil::jitter_engine jitter{42};
    std::vector<std::string> lines;
    std::vector<step> script;
    std::size_t next = 0;

    recorder listener() { return recorder{&lines, clock}; }

    resil::basic_context<manual_clock> context() {
        return resil::basic_context<manual_clock>{
            resil::basic_call_options<manual_clock>{.deadline = resil::basic_deadline{clock}, .jitter = &jitter}};
    }

    // The adaptive throttle draws from this thread's jitter engine: the
    // same draws for both pipelines.
    world() { resil::detail::thread_jitter().seed(7); }

    int respond() { return respond_with_fields().status; }
    reply respond_with_fields() {
        const auto s = script.at(next++ % script.size());
        clock.advance(s.took);
        if (s.remaining.empty()) return reply{s.status, {}, {}, {}};
        return reply{s.status, "10", s.remaining, "1"};
    }

    template <class Pipe>
    void call_sync(const Pipe& pipe) {
        auto ctx = context();
        auto out = pipe.execute(ctx, [this](resil::basic_context<manual_clock>&) { return respond(); }, classify_status);
        lines.push_back("outcome " + std::string(resil::to_string(out.reason())) + " attempts " + std::to_string(out.attempts()));
    }
    template <class Pipe>
    void call_sync_fields(const Pipe& pipe) {
        auto ctx = context();
        auto out = pipe.execute(
            ctx, [this](resil::basic_context<manual_clock>&) { return respond_with_fields(); }, classify_reply);
        lines.push_back("outcome " + std::string(resil::to_string(out.reason())) + " attempts " + std::to_string(out.attempts()));
    }

    template <class Pipe>
    void call_async(const Pipe& pipe) {
        run_async([&]() -> ::asio::awaitable<void> {
            auto ctx = context();
            auto out = co_await pipe.execute(
                ctx, [this](resil::basic_context<manual_clock>&) -> ::asio::awaitable<int> { co_return respond(); },
                classify_status);
            lines.push_back("outcome " + std::string(resil::to_string(out.reason())) + " attempts " + std::to_string(out.attempts()));
        });
    }
    template <class Pipe>
    void call_async_fields(const Pipe& pipe) {
        run_async([&]() -> ::asio::awaitable<void> {
            auto ctx = context();
            auto out = co_await pipe.execute(
                ctx,
                [this](resil::basic_context<manual_clock>&) -> ::asio::awaitable<reply> {
                    co_return respond_with_fields();
                },
                classify_reply);
            lines.push_back("outcome " + std::string(resil::to_string(out.reason())) + " attempts " + std::to_string(out.attempts()));
        });
    }

    template <class Body>
    void run_async(Body body) {
        ::asio::io_context io;
        bool done = false;
        ::asio::co_spawn(
            io,
            [&]() -> ::asio::awaitable<void> {
                co_await body();
                done = true;
            },
            ::asio::detached);
        io.run();
        REQUIRE(done);
    }

    template <bool Async, class... Policies>
    auto make(Policies... policies) {
        if constexpr (Async)
            return resil::asio::pipeline(clock, std::move(policies)...).with_listener(listener());
        else
            return resil::pipeline(clock, std::move(policies)...).with_listener(listener());
    }

    template <bool Async, class Pipe>
    void call(const Pipe& pipe) {
        if constexpr (Async)
            call_async(pipe);
        else
            call_sync(pipe);
    }
    // A call whose replies carry RateLimit fields.
    template <bool Async, class Pipe>
    void call_fields(const Pipe& pipe) {
        if constexpr (Async)
            call_async_fields(pipe);
        else
            call_sync_fields(pipe);
    }
};

template <bool Async>
std::vector<std::string> retries_then_success() {
    world w;
    w.script = {{503, 20ms}, {429, 5ms}, {200, 30ms}};
    auto pipe = w.make<Async>(resil::deadline_policy{10s}, resil::retry_policy{{.max_attempts = 3}},
                              resil::timeout_policy{{.total = 1s}});
    w.call<Async>(pipe);
    return w.lines;
}

template <bool Async>
std::vector<std::string> breaker_opening() {
    world w;
    w.script = {{503, 10ms}};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3, .open_for = 1s,
         .half_open_probes = 1},
        w.clock};
    auto pipe = w.make<Async>(resil::retry_policy{{.max_attempts = 2, .backoff = resil::full_jitter{10ms, 50ms}}},
                              std::ref(breaker));
    for (int i = 0; i < 3; ++i) w.call<Async>(pipe);
    w.clock.advance(2s);
    w.script = {{200, 10ms}};
    w.next = 0;
    w.call<Async>(pipe);  // the probe closes it
    return w.lines;
}

// A breaker counting in a time window, whose closed state admits on its fast
// path: successes and failures counted as each attempt ends.
template <bool Async>
std::vector<std::string> time_window_breaker_opening() {
    world w;
    w.script = {{200, 10ms}, {503, 10ms}, {503, 10ms}, {503, 10ms}};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::time_window, .failure_ratio = 0.5, .window = 10s, .min_calls = 4,
         .open_for = 1s, .half_open_probes = 1},
        w.clock};
    auto pipe = w.make<Async>(std::ref(breaker));
    for (int i = 0; i < 5; ++i) w.call<Async>(pipe);  // the 4th call's failure opens it; the 5th is refused
    w.clock.advance(2s);
    w.script = {{200, 10ms}};
    w.next = 0;
    w.call<Async>(pipe);  // the probe closes it
    return w.lines;
}

template <bool Async>
std::vector<std::string> budget_exhausted() {
    world w;
    w.script = {{503, 1ms}};
    resil::retry_budget budget{{.ratio = 0.0, .min_per_second = 0}};
    auto pipe = w.make<Async>(resil::retry_policy{{.max_attempts = 3, .budget = &budget}});
    w.call<Async>(pipe);
    return w.lines;
}

template <bool Async>
std::vector<std::string> deadline_hit() {
    world w;
    w.script = {{504, 120ms}};
    auto pipe = w.make<Async>(resil::deadline_policy{250ms},
                              resil::retry_policy{{.max_attempts = 5, .backoff = resil::full_jitter{5ms, 10ms}}},
                              resil::timeout_policy{{.total = 150ms}});
    w.call<Async>(pipe);
    return w.lines;
}

// Injected delays and failures, drawn from the world's seeded engine (the
// same draws in both pipelines), under a fallback, a retry and a breaker;
// then a delay longer than the deadline, which ends at it.
template <bool Async>
std::vector<std::string> faults_injected() {
    world w;
    w.script = {{200, 10ms}};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 2, .open_for = 1s,
         .half_open_probes = 1},
        w.clock};
    resil::fault_injection faults{{.enabled = true,
                                   .delay = {.probability = 0.5, .latency = 30ms},
                                   .abort = {.probability = 0.6, .retry_after = 20ms}}};
    auto pipe = w.make<Async>(resil::fallback_policy{[] { return 299; }},
                              resil::retry_policy{{.max_attempts = 2, .backoff = resil::full_jitter{5ms, 10ms}}},
                              std::ref(breaker), std::ref(faults));
    for (int i = 0; i < 12; ++i) w.call<Async>(pipe);
    resil::fault_injection slow{{.enabled = true, .delay = {.probability = 1.0, .latency = 1h}}};
    auto bounded = w.make<Async>(resil::deadline_policy{50ms}, std::ref(slow));
    w.call<Async>(bounded);
    const auto m = faults.metrics();
    w.lines.push_back("metrics delays " + std::to_string(m.delays) + " aborts " + std::to_string(m.aborts));
    w.lines.push_back("slow cut " + std::to_string(slow.metrics().delays_cut));
    return w.lines;
}

template <bool Async>
std::vector<std::string> rate_limited() {
    world w;
    w.script = {{200, 1ms}};
    resil::basic_token_bucket<manual_clock> bucket{{.rate = 1, .burst = 2}, w.clock};
    resil::basic_token_bucket<manual_clock> patient{{.rate = 10, .burst = 1, .max_wait = 500ms}, w.clock};
    auto pipe = w.make<Async>(std::ref(bucket), std::ref(patient));
    for (int i = 0; i < 4; ++i) w.call<Async>(pipe);  // two pass (the second waits 100 ms for `patient`), two do not
    return w.lines;
}

template <bool Async>
std::vector<std::string> fallback_shed_and_unsafe() {
    world w;
    w.script = {{408, 30ms}, {200, 1ms}};
    resil::concurrency_limit limit{{.max_in_flight = 1}};
    resil::fallback_policy plan_b{[] { return 299; }, {.handles = {resil::reason::unsafe_to_retry}}};
    auto pipe = w.make<Async>(plan_b, resil::retry_policy{}, std::ref(limit));
    w.call<Async>(pipe);  // ambiguous, not idempotent: plan B
    w.call<Async>(pipe);
    {
        auto held = limit.try_acquire();  // the one place is taken: shed
        w.call<Async>(pipe);
    }
    return w.lines;
}

// A paced bucket: a call waits for its reserved token (on the bucket's clock,
// which is the call's), replies' RateLimit fields change the pace, an
// exhausted quota pauses it and a call that cannot wait long enough is
// refused with the wait as its retry_after.
template <bool Async>
std::vector<std::string> paced() {
    world w;
    w.script = {{200, 10ms}, {200, 10ms, "8"}, {200, 10ms, "0"}, {200, 10ms}};
    resil::basic_paced_bucket<manual_clock> pace{{.rate = 5, .burst = 1, .max_wait = 300ms}, w.clock};
    auto pipe = w.make<Async>(resil::retry_policy{{.max_attempts = 2}}, std::ref(pace));
    // The second call waits 190 ms for its token; the third reply pauses the
    // bucket for 1 s, so the fourth call is refused.
    for (int i = 0; i < 4; ++i) w.call_fields<Async>(pipe);
    w.clock.advance(2s);
    w.call_fields<Async>(pipe);
    return w.lines;
}

// An adaptive limit (AIMD): overloads cut the limit, successes raise it; a
// call over the limit is shed.
template <bool Async>
std::vector<std::string> adaptive_limited() {
    world w;
    w.script = {{503, 20ms}, {503, 20ms}, {200, 5ms}, {200, 5ms}, {200, 5ms}};
    resil::basic_adaptive_limit<manual_clock> limit{
        {.algorithm = resil::adaptive_algorithm::aimd, .initial_limit = 2, .min_limit = 1, .max_limit = 4,
         .backoff_ratio = 0.5, .cut_once_per_round = false},
        w.clock};
    auto pipe = w.make<Async>(std::ref(limit));
    for (int i = 0; i < 5; ++i) w.call<Async>(pipe);
    {
        // The limit is 3 now: its three places taken, a call is shed.
        auto a = limit.try_acquire();
        auto b = limit.try_acquire();
        auto c = limit.try_acquire();
        REQUIRE(c);
        w.call<Async>(pipe);
    }
    return w.lines;
}

// An adaptive throttle: once most answers are overloads, calls are refused
// locally (reason::throttled), with the same draws in both pipelines.
template <bool Async>
std::vector<std::string> throttled() {
    world w;
    w.script = {{503, 150ms}};  // apart: the throttle reads its counts as of at most window / 100 ago
    resil::basic_adaptive_throttle<manual_clock> throttle{{.k = 1.0, .window = 10s}, w.clock};
    auto pipe = w.make<Async>(std::ref(throttle));
    for (int i = 0; i < 12; ++i) w.call<Async>(pipe);
    return w.lines;
}

// Every policy of the library at once, outermost to innermost.
template <bool Async>
std::vector<std::string> every_policy() {
    world w;
    w.script = {{503, 10ms, "9"}, {200, 10ms, "8"}, {408, 10ms}, {200, 10ms, "0"}, {200, 10ms}};
    resil::fallback_policy plan_b{[] { return reply{299, {}, {}, {}}; }, {.handles = {resil::reason::unsafe_to_retry}}};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3, .open_for = 1s,
         .half_open_probes = 1},
        w.clock};
    resil::basic_token_bucket<manual_clock> bucket{{.rate = 20, .burst = 2, .max_wait = 100ms}, w.clock};
    resil::basic_paced_bucket<manual_clock> pace{{.rate = 50, .burst = 2, .max_wait = 100ms}, w.clock};
    resil::basic_adaptive_throttle<manual_clock> throttle{{.k = 2.0, .window = 10s}, w.clock};
    resil::basic_adaptive_limit<manual_clock> limit{{.initial_limit = 4, .min_limit = 1, .max_limit = 8}, w.clock};
    resil::concurrency_limit in_flight{{.max_in_flight = 4}};
    auto pipe = w.make<Async>(plan_b, resil::deadline_policy{2s},
                              resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{10ms, 40ms}}},
                              std::ref(breaker), std::ref(bucket), std::ref(pace), std::ref(throttle), std::ref(limit),
                              std::ref(in_flight), resil::timeout_policy{{.total = 500ms}});
    for (int i = 0; i < 6; ++i) w.call_fields<Async>(pipe);
    return w.lines;
}

// A policy of one's own, written for both pipelines: the decision in one
// place, each driver a few lines (as in docs/async.md).
struct enough_time_left {
    resil::duration minimum;

    template <class Context>
    bool admits(Context& ctx) const {
        if (ctx.cached_remaining() >= minimum) return true;
        ctx.emit(resil::events::rejected{resil::reason::deadline_exceeded, std::nullopt});
        return false;
    }

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        if (!admits(ctx)) return decltype(next(ctx))::rejected(resil::reason::deadline_exceeded);
        return next(ctx);
    }

    template <class Context, class Next>
    auto async_execute(Context& ctx, Next next) const -> decltype(next(ctx)) {
        using result = resil::asio::next_outcome_t<Next, Context>;
        if (!admits(ctx)) co_return result::rejected(resil::reason::deadline_exceeded);
        co_return co_await next(ctx);
    }
};

// The same policy written as steps (docs/async.md): both pipelines drive it.
struct enough_time_left_steps {
    resil::duration minimum;

    template <class Context, class Outcome>
    struct call_state {};

    template <class Context, class State>
    resil::layer_in enter(Context& ctx, State&) const {
        if (ctx.cached_remaining() >= minimum) return resil::layer_in::proceed();
        ctx.emit(resil::events::rejected{resil::reason::deadline_exceeded, std::nullopt});
        return resil::layer_in::refuse(resil::reason::deadline_exceeded);
    }
    template <class Context, class State, class Outcome>
    resil::layer_out leave(Context&, State&, Outcome&) const {
        return resil::layer_out::proceed();
    }
};

template <bool Async>
std::vector<std::string> custom_steps_policy() {
    world w;
    w.script = {{503, 150ms}};
    auto pipe = w.make<Async>(resil::deadline_policy{400ms},
                              resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{50ms, 200ms}}},
                              enough_time_left_steps{100ms});
    w.call<Async>(pipe);
    return w.lines;
}

template <bool Async>
std::vector<std::string> custom_policy() {
    world w;
    w.script = {{503, 150ms}};
    auto pipe = w.make<Async>(resil::deadline_policy{400ms},
                              resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{50ms, 200ms}}},
                              enough_time_left{100ms});
    w.call<Async>(pipe);
    return w.lines;
}

// The user's policy outermost: the layers inside it (a retry among them) run
// in a coroutine of their own.
template <bool Async>
std::vector<std::string> custom_policy_outside() {
    world w;
    w.script = {{503, 10ms}, {503, 10ms}, {200, 10ms}, {503, 300ms}};
    resil::basic_circuit_breaker<manual_clock> breaker{
        {.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 2, .open_for = 1s,
         .half_open_probes = 1},
        w.clock};
    auto pipe = w.make<Async>(enough_time_left{100ms}, resil::deadline_policy{400ms},
                              resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{20ms, 40ms}}},
                              std::ref(breaker));
    w.call<Async>(pipe);  // 503, 503: the breaker opens; the third attempt is refused
    w.clock.advance(2s);
    w.call<Async>(pipe);  // a probe that succeeds
    w.call<Async>(pipe);  // 300 ms: past the deadline's reach for a retry
    return w.lines;
}

// Every policy of the library, in both forms: written as steps (which the
// blocking pipeline drives) and accepted by the asynchronous pipeline. A
// policy added to the library belongs in this list and in every_policy()
// above. (The Redis limiter's asynchronous form: tests/redis_asio_rate_limiter.cpp.)
// (tests/policy_lists.cmake checks that every policy declaring a clock
// rule is named here.)
using library_policies =
    std::tuple<resil::deadline_policy, resil::timeout_policy, resil::retry_policy, resil::concurrency_limit,
               resil::fallback_policy<reply (*)()>,
               resil::basic_circuit_breaker<manual_clock>, resil::basic_token_bucket<manual_clock>,
               resil::basic_paced_bucket<manual_clock>, resil::basic_adaptive_limit<manual_clock>,
               resil::basic_adaptive_throttle<manual_clock>, resil::circuit_breaker, resil::token_bucket,
               resil::paced_bucket, resil::adaptive_limit, resil::adaptive_throttle, resil::fault_injection>;
template <class Ctx>
constexpr bool both_forms() {
    return []<class... P>(std::tuple<P...>*) {
        return ((resil::policy_steps<P, Ctx, resil::outcome<reply>> && resil::asio::has_asynchronous_form<P>) && ...);
    }(static_cast<library_policies*>(nullptr));
}
static_assert(both_forms<resil::detail::pipeline_context<resil::steady_clock, const resil::no_listener>>());
static_assert(both_forms<resil::detail::pipeline_context<manual_clock, const recorder>>());
// A policy with only a blocking execute() has no asynchronous form (its
// error: tests/compile_fail/asio_policy_without_async_form_fail.cpp).
struct blocking_only {
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return next(ctx);
    }
};
static_assert(!resil::asio::has_asynchronous_form<blocking_only>);

void show(const std::vector<std::string>& lines) {
    for (const auto& l : lines) std::printf("  %s\n", l.c_str());
}

template <class Scenario>
void same_events(Scenario blocking, Scenario async, std::initializer_list<const char*> must_contain) {
    const auto a = blocking();
    const auto b = async();
    if (a != b || std::getenv("SHOW")) {
        std::puts("blocking:");
        show(a);
        std::puts("async:");
        show(b);
    }
    REQUIRE(a.size() > 2);
    CHECK(a == b);
    for (const char* needle : must_contain) {
        bool found = false;
        for (const auto& l : b) found = found || l.find(needle) != std::string::npos;
        INFO(needle);
        CHECK(found);
    }
}

}  // namespace

TEST_CASE("asio pipeline: retries then success emit the blocking pipeline's events") {
    same_events(retries_then_success<false>, retries_then_success<true>,
                {"retry_scheduled 1", "retry_scheduled 2 2000ms server", "attempt_finished 3 success",
                 "outcome none attempts 3"});
}

TEST_CASE("asio pipeline: a breaker opening, rejecting and closing emits the blocking pipeline's events") {
    same_events(breaker_opening<false>, breaker_opening<true>,
                {"breaker closed->open #1", "rejected circuit_open", "breaker open->half_open", "breaker half_open->closed",
                 "outcome circuit_open attempts 1",    // the second attempt refused: one ran
                 "outcome circuit_open attempts 0",    // refused before any attempt
                 "outcome none attempts 1"});
}

TEST_CASE("asio pipeline: a time-window breaker (its fast path) opening and closing emits the blocking pipeline's events") {
    same_events(time_window_breaker_opening<false>, time_window_breaker_opening<true>,
                {"breaker closed->open #1", "rejected circuit_open", "breaker open->half_open",
                 "breaker half_open->closed", "outcome circuit_open"});
}

TEST_CASE("asio pipeline: an exhausted retry budget emits the blocking pipeline's events") {
    same_events(budget_exhausted<false>, budget_exhausted<true>,
                {"budget_refused 1", "outcome budget_exhausted"});
}

TEST_CASE("asio pipeline: a deadline hit emits the blocking pipeline's events") {
    same_events(deadline_hit<false>, deadline_hit<true>, {"deadline_exceeded", "outcome deadline_exceeded"});
}

TEST_CASE("asio pipeline: injected delays and failures emit the blocking pipeline's events") {
    same_events(faults_injected<false>, faults_injected<true>,
                {"fault_injected delay 30ms success", "fault_injected abort 0ms retryable", "retry_scheduled 1 20ms server",
                 "breaker closed->open", "fallback_used", "fault_injected delay 50ms success", "rejected deadline_exceeded",
                 "outcome deadline_exceeded", "slow cut 1"});
}

TEST_CASE("asio pipeline: rate limiting, waiting for a token included, emits the blocking pipeline's events") {
    same_events(rate_limited<false>, rate_limited<true>, {"rejected rate_limited", "outcome rate_limited"});
}

TEST_CASE("asio pipeline: fallback, shedding and an unsafe retry emit the blocking pipeline's events") {
    same_events(fallback_shed_and_unsafe<false>, fallback_shed_and_unsafe<true>,
                {"fallback_used unsafe_to_retry", "rejected shed", "outcome shed"});
}

TEST_CASE("asio pipeline: a paced bucket (its waits, its pace from RateLimit fields, a pause) emits the blocking pipeline's events") {
    same_events(paced<false>, paced<true>,
                {"3600200ms attempt_started 1", "pace_changed 8.000000/s burst 8", "paused 1000ms", "rejected rate_limited",
                 "outcome rate_limited", "outcome none"});
}

TEST_CASE("asio pipeline: an adaptive limit (cut, raised, shedding) emits the blocking pipeline's events") {
    same_events(adaptive_limited<false>, adaptive_limited<true>,
                {"limit_changed 2->1 overload", "limit_changed 1->2 accepted", "limit_changed 2->3 accepted", "rejected shed",
                 "outcome shed"});
}

TEST_CASE("asio pipeline: an adaptive throttle refusing locally emits the blocking pipeline's events") {
    same_events(throttled<false>, throttled<true>, {"rejected throttled", "outcome throttled"});
}

TEST_CASE("asio pipeline: every policy of the library in one pipeline emits the blocking pipeline's events") {
    same_events(every_policy<false>, every_policy<true>,
                {"retry_scheduled 1", "limit_changed 4->3 overload", "pace_changed", "fallback_used unsafe_to_retry",
                 "rejected rate_limited", "outcome none"});
}

TEST_CASE("asio pipeline: a policy of one's own runs in both pipelines, with the same events") {
    same_events(custom_policy<false>, custom_policy<true>, {"attempt_finished 2 retryable", "call_finished"});
}

TEST_CASE("asio pipeline: a policy of one's own written as steps runs in both pipelines, with the same events") {
    same_events(custom_steps_policy<false>, custom_steps_policy<true>,
                {"attempt_finished 2 retryable", "rejected deadline_exceeded", "call_finished"});
    // The same events as the policy written around `next`.
    CHECK(custom_steps_policy<false>() == custom_policy<false>());
}

TEST_CASE("asio pipeline: a policy of one's own outermost, with a retry and a breaker inside it") {
    same_events(custom_policy_outside<false>, custom_policy_outside<true>,
                {"breaker closed->open", "rejected circuit_open", "breaker half_open->closed", "call_finished"});
}
