// A service handler that fans out to three dependencies at once, under one
// deadline, with a plan B for each: the page is built from whatever answered
// in time, and a dependency that did not gets its fallback instead of
// holding the whole page back. Runs on one thread: no call holds it while
// it waits.
//
// The dependencies are fakes on Asio timers: a profile service answering in
// 30 ms, a recommendation service failing its first attempt (503) and then
// answering, and an ad service that takes 5 s. The 200 ms deadline cancels
// the ad call in flight (its timer is cancelled, its stop token fires), and
// its plan B (house ads) stands in for it.
//
//   $ ./example_asio_fan_out
#include <resil/asio.hpp>
#include <resil/resil.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/experimental/parallel_group.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;

namespace {

// A fake dependency: answers `answers[attempt - 1]` after `took`.
struct dependency {
    resil::duration took;
    std::vector<std::string> answers;

    asio::awaitable<std::string> operator()(resil::context& ctx) const {
        asio::steady_timer timer{co_await asio::this_coro::executor, took};
        co_await timer.async_wait(asio::use_awaitable);  // cancelled when the deadline passes
        co_return answers.at(std::min<std::size_t>(ctx.attempt(), answers.size()) - 1);
    }
};

resil::verdict classify(const std::string& answer) {
    return answer == "503" ? resil::verdict::retryable : resil::verdict::success;
}

// One dependency's pipeline: its plan B, retries, a per-attempt limit. The
// deadline is the handler's, passed in the context.
auto dependency_pipeline(std::string plan_b) {
    return resil::asio::pipeline(
        resil::fallback_policy{[plan_b = std::move(plan_b)] { return plan_b; }},
        resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{5ms, 10ms}}},
        resil::timeout_policy{{.total = 150ms}});
}

// Calls one dependency within `deadline`; returns the line the page shows.
template <class Pipe>
asio::awaitable<std::string> section(const Pipe& pipe, const char* name, dependency dep, resil::deadline deadline) {
    resil::context ctx{resil::call_options{.deadline = deadline, .idempotent = true}};
    auto out = co_await pipe.execute(ctx, dep, classify);
    char line[160];
    if (out.from_fallback())
        std::snprintf(line, sizeof line, "  %-16s plan B  %-12s (%s)", name, ("\"" + *out + "\"").c_str(),
                      std::string(resil::to_string(out.fallback_reason())).c_str());
    else
        std::snprintf(line, sizeof line, "  %-16s ok      %-12s (%u attempt%s)", name, ("\"" + *out + "\"").c_str(),
                      ctx.attempt(), ctx.attempt() == 1 ? "" : "s");
    co_return line;
}

}  // namespace

int main() {
    asio::io_context io;
    const auto profile = dependency_pipeline("guest");
    const auto recommendations = dependency_pipeline("bestsellers");
    const auto ads = dependency_pipeline("house ads");

    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            const auto started = std::chrono::steady_clock::now();
            const auto deadline = resil::deadline::after(200ms);  // the whole handler's
            std::puts("one 200 ms deadline, three dependencies called at once:");
            auto ex = co_await asio::this_coro::executor;
            const dependency profile_service{30ms, {"Ada"}};
            const dependency recommendation_service{20ms, {"503", "3 items"}};  // fails its first attempt
            const dependency ad_service{5s, {"2 ads"}};
            // Completes when all three have: (order, error, line) for each.
            const auto results =
                co_await asio::experimental::make_parallel_group(
                    asio::co_spawn(ex, section(profile, "profile", profile_service, deadline),
                                   asio::experimental::deferred),
                    asio::co_spawn(ex,
                                   section(recommendations, "recommendations", recommendation_service, deadline),
                                   asio::experimental::deferred),
                    asio::co_spawn(ex, section(ads, "ads", ad_service, deadline), asio::experimental::deferred))
                    .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
            std::puts(std::get<2>(results).c_str());
            std::puts(std::get<4>(results).c_str());
            std::puts(std::get<6>(results).c_str());
            const auto took = std::chrono::steady_clock::now() - started;
            std::printf("the page was served within the deadline, not after the slowest dependency: %s\n",
                        took < 1s ? "yes" : "no");
        },
        asio::detached);
    io.run();
}
