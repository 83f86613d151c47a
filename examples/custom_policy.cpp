// Writing your own policy: anything with
//
//   template <class Context, class Next>
//   auto execute(Context& ctx, Next&& next) const;
//
// can sit in a pipeline next to resil's own. This one is a "hedge budget"
// style guard that many services want: it refuses calls once the context's
// deadline has less than a minimum left (no point starting an attempt that
// cannot finish), and logs slow calls. It runs on the manual clock so its
// output is the same on every run.
//
//   $ ./example_custom_policy
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>
#include <cstdio>
#include <string>

using namespace std::chrono_literals;

namespace {

/// Refuses to start an attempt with less than `minimum` of the deadline left,
/// and reports attempts slower than `slow`.
struct enough_time_left {
    resil::duration minimum;
    resil::duration slow;

    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        if (ctx.remaining() < minimum) {
            // The same vocabulary as resil's own policies: a rejection with a
            // reason, and an event for listeners.
            ctx.emit(resil::events::rejected{resil::reason::deadline_exceeded, std::nullopt});
            return decltype(next(ctx))::rejected(resil::reason::deadline_exceeded);
        }
        const auto start = ctx.now();
        auto out = next(ctx);
        const auto took = ctx.now() - start;
        if (took > slow)
            std::printf("    slow attempt %u: %lld ms\n", ctx.attempt(),
                        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
        return out;
    }
};

double ms(resil::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main() {
    resil::testing::manual_clock clock;
    resil::jitter_engine jitter{7};  // fixed draws: the same output every run

    // Outer → inner: the deadline covers everything; the retry re-runs the
    // guard before every attempt. After two 150 ms attempts 30 ms are left:
    // a wait that leaves too little for a third attempt makes the retry give
    // up first (backoff_exceeds_deadline); after a shorter one the guard
    // refuses the third attempt (deadline_exceeded).
    auto pipe = resil::pipeline(clock, resil::deadline_policy{400ms},
                                resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{50ms, 200ms}}},
                                enough_time_left{.minimum = 100ms, .slow = 100ms});

    // A dependency that takes 150 ms and fails with 503.
    int calls = 0;
    auto slow_and_failing = [&] {
        ++calls;
        clock.advance(150ms);
        return 503;
    };
    auto classify = [](int status) { return status < 500 ? resil::verdict::success : resil::verdict::retryable; };

    resil::basic_context<resil::testing::manual_clock> ctx{
        resil::basic_call_options<resil::testing::manual_clock>{.deadline = resil::basic_deadline{clock}, .jitter = &jitter}};
    const auto t0 = clock.now();
    std::puts("a 400 ms deadline, attempts of 150 ms, and a guard wanting 100 ms left:");
    auto out = pipe.execute(ctx, slow_and_failing, classify);
    std::printf("  %d calls reached the dependency in %.0f ms; the call ended with: %s\n", calls, ms(clock.now() - t0),
                std::string(resil::to_string(out.reason())).c_str());
}
