// resil/optional_policy.hpp in both pipelines: a policy that is there runs
// exactly as it does bare (same events, same instants, on the manual clock),
// one that is not passes every call through as if the layer were absent.
#include <resil/asio.hpp>
#include <resil/optional_policy.hpp>
#include <resil/resil.hpp>
#include <resil/testing/manual_clock.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <chrono>
#include <optional>
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

struct recorder {
    std::vector<std::string>* lines;
    manual_clock clock;
    void add(std::string s) const { lines->push_back(ms(clock.now().time_since_epoch()) + " " + std::move(s)); }
    void operator()(const events::attempt_started& e) const { add("attempt " + std::to_string(e.attempt)); }
    void operator()(const events::retry_scheduled& e) const { add("retry in " + ms(e.delay)); }
    void operator()(const events::rejected& e) const { add("rejected " + std::string(resil::to_string(e.reason))); }
    void operator()(const events::call_finished& e) const {
        add("finished " + std::string(resil::to_string(e.reason)) + " after " + std::to_string(e.attempts));
    }
};

resil::classification by_status(const int& s) {
    return s < 300 ? resil::verdict::success : s == 503 ? resil::verdict::retryable : resil::verdict::permanent;
}

struct world {
    manual_clock clock;
    resil::jitter_engine jitter{42};
    std::vector<std::string> lines;
    std::vector<int> script;
    std::size_t next = 0;

    resil::basic_context<manual_clock> context() {
        return resil::basic_context<manual_clock>{resil::basic_call_options<manual_clock>{
            .deadline = resil::basic_deadline<manual_clock>::after(10s, clock), .jitter = &jitter}};
    }
    int respond() {
        clock.advance(10ms);
        return script.at(next++ % script.size());
    }

    template <class Pipe>
    void call_sync(const Pipe& pipe) {
        auto ctx = context();
        auto out = pipe.execute(ctx, [this](resil::basic_context<manual_clock>&) { return respond(); }, by_status);
        lines.push_back("outcome " + std::string(resil::to_string(out.reason())));
    }
    template <class Pipe>
    void call_async(const Pipe& pipe) {
        ::asio::io_context io;
        bool done = false;
        ::asio::co_spawn(
            io,
            [&]() -> ::asio::awaitable<void> {
                auto ctx = context();
                auto out = co_await pipe.execute(
                    ctx, [this](resil::basic_context<manual_clock>&) -> ::asio::awaitable<int> { co_return respond(); },
                    by_status);
                lines.push_back("outcome " + std::string(resil::to_string(out.reason())));
                done = true;
            },
            ::asio::detached);
        io.run();
        REQUIRE(done);
    }
    template <bool Async, class... Policies>
    auto make(Policies... policies) {
        if constexpr (Async)
            return resil::asio::pipeline(clock, std::move(policies)...).with_listener(recorder{&lines, clock});
        else
            return resil::pipeline(clock, std::move(policies)...).with_listener(recorder{&lines, clock});
    }
    template <bool Async, class Pipe>
    void call(const Pipe& pipe) {
        if constexpr (Async)
            call_async(pipe);
        else
            call_sync(pipe);
    }
};

// A retry (waits on the way out: retried, leave_again), a token bucket with
// its own clock and a wait on the way in (waited, clock), a breaker and a
// timeout (unwind): each as itself, wrapped, and wrapped empty.
template <bool Async>
std::vector<std::string> scenario(int form) {
    world w;
    w.script = {503, 503, 200, 503, 503, 503, 404};
    resil::retry_options retry{.max_attempts = 3, .backoff = resil::full_jitter{100ms, 1s}};
    std::optional<resil::retry_policy> r{std::in_place, retry};
    std::optional<resil::basic_token_bucket<manual_clock>> bucket;
    bucket.emplace(resil::token_bucket_options{.rate = 5, .burst = 1, .max_wait = 1s}, w.clock);
    std::optional<resil::basic_circuit_breaker<manual_clock>> breaker;
    breaker.emplace(resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                   .consecutive_failures = 3, .open_for = 30s},
                    w.clock);
    std::optional<resil::timeout_policy> timeouts{std::in_place, resil::timeouts{.total = 50ms}};
    auto run = [&](const auto& pipe) {
        for (int i = 0; i < 4; ++i) w.template call<Async>(pipe);
    };
    if (form == 0)
        run(w.template make<Async>(*r, std::ref(*breaker), std::ref(*bucket), *timeouts));
    else if (form == 1)
        run(w.template make<Async>(resil::optional_policy{r}, resil::optional_policy{breaker},
                                   resil::optional_policy{bucket}, resil::optional_policy{timeouts}));
    else if (form == 2)  // none configured: as a pipeline of no policy
        run(w.template make<Async>(resil::optional_policy<resil::retry_policy>{},
                                   resil::optional_policy<resil::basic_circuit_breaker<manual_clock>>{},
                                   resil::optional_policy<resil::basic_token_bucket<manual_clock>>{},
                                   resil::optional_policy<resil::timeout_policy>{}));
    else
        run(w.template make<Async>());
    return w.lines;
}

}  // namespace

TEST_CASE("optional_policy: a policy that is there runs as it does bare, in both pipelines") {
    const auto bare = scenario<false>(0);
    // The script makes every step happen: retries with backoff, a wait for a
    // token, a breaker that opens and refuses.
    const auto joined = [&] {
        std::string s;
        for (const auto& l : bare) s += l + "\n";
        return s;
    }();
    INFO(joined);
    CHECK(joined.find("retry in") != std::string::npos);
    CHECK(joined.find("rejected circuit_open") != std::string::npos);
    CHECK(scenario<false>(1) == bare);
    CHECK(scenario<true>(0) == bare);
    CHECK(scenario<true>(1) == bare);
}

TEST_CASE("optional_policy: none configured passes every call through, in both pipelines") {
    const auto none = scenario<false>(3);
    CHECK(none.size() == 4 * 3);  // attempt, finished, outcome: no retry, no wait, no refusal
    CHECK(scenario<false>(2) == none);
    CHECK(scenario<true>(2) == none);
    CHECK(scenario<true>(3) == none);
}

TEST_CASE("optional_policy: holds a pointer, not the policy") {
    std::optional<resil::circuit_breaker> breaker;
    resil::optional_policy absent{breaker};
    CHECK(!absent);
    breaker.emplace();
    resil::optional_policy present{breaker};
    CHECK(present.get() == &*breaker);
    static_assert(sizeof(resil::optional_policy<resil::circuit_breaker>) == sizeof(void*));
    static_assert(!std::is_constructible_v<resil::optional_policy<resil::circuit_breaker>,
                                           std::optional<resil::circuit_breaker>&&>);
}
