#include <resil/any_pipeline.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "catch.hpp"

#include "support/allocation_counter.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::testing::manual_clock;
using resil_test::allocations;

namespace {

struct reply {
    int status = 0;
};
resil::classification classify(const reply& r) { return r.status == 200 ? verdict::success : verdict::retryable; }

// A service keeping its pipeline as a member, without naming its policies.
class orders_client {
public:
    explicit orders_client(manual_clock clock)
        : pipe_(resil::pipeline(clock, resil::deadline_policy{250ms},
                                resil::retry_policy{{.backoff = resil::exponential_backoff{10ms, 100ms}}})) {}
    resil::outcome<reply> get(int fails_before_success) {
        int calls = 0;
        return pipe_([&] { return ++calls > fails_before_success ? reply{200} : reply{503}; });
    }

private:
    resil::any_pipeline<reply, manual_clock> pipe_;
};

// The decltype alternative: the concrete type, named through a factory.
inline auto make_inventory_pipeline(manual_clock clock) {
    return resil::pipeline(std::move(clock), resil::deadline_policy{250ms}, resil::retry_policy{});
}
class inventory_client {
public:
    explicit inventory_client(manual_clock clock) : pipe_(make_inventory_pipeline(std::move(clock))) {}
    resil::outcome<reply> get() { return pipe_([] { return reply{200}; }); }

private:
    decltype(make_inventory_pipeline(std::declval<manual_clock>())) pipe_;
};

}  // namespace

TEST_CASE("any_pipeline: a class member that retries like the pipeline it holds") {
    manual_clock clock;
    orders_client client{clock};
    auto out = client.get(2);
    REQUIRE(out.ok());
    CHECK(out->status == 200);
    CHECK(clock.sleeps() == 2);
    auto gave_up = client.get(5);
    CHECK(gave_up.reason() == reason::retries_exhausted);
    CHECK(gave_up->status == 503);

    inventory_client other{clock};
    CHECK(other.get().ok());
}

TEST_CASE("any_pipeline: one allocation when made, none per call") {
    manual_clock clock;
    auto concrete = resil::pipeline(clock, resil::retry_policy{});
    const auto before_make = allocations.load();
    resil::any_pipeline<int, manual_clock> pipe{std::move(concrete), resil::always_success};
    if constexpr (resil_test::counting_allocations) CHECK(allocations.load() - before_make == 1);
    (void)pipe([] { return 1; });  // warm the per-thread jitter engine
    const auto before = allocations.load();
    long sum = 0;
    for (int i = 0; i < 1000; ++i) sum += pipe([i] { return i; }).value();
    CHECK(allocations.load() == before);
    CHECK(sum == 499500);
}

TEST_CASE("any_pipeline: copies share the pipeline; void results; a caller's context") {
    manual_clock clock;
    resil::fallback_policy plan_b{[] {}};
    resil::any_pipeline<void, manual_clock> a{resil::pipeline(clock, plan_b, resil::deadline_policy{100ms})};
    const auto b = a;  // NOLINT(performance-unnecessary-copy-initialization): a copy is the point
    int calls = 0;
    CHECK(a([&] { ++calls; }).ok());
    CHECK(b([&](resil::basic_context<manual_clock>& ctx) { calls += ctx.attempt(); }).ok());
    CHECK(calls == 2);

    resil::basic_context<manual_clock> ctx{clock};
    ctx.tighten_deadline(clock.now() - 1ms);  // already expired upstream
    auto out = b.execute(ctx, [&] { ++calls; });
    REQUIRE(out.ok());               // the fallback served it
    CHECK(out.fallback_reason() == reason::deadline_exceeded);
    CHECK(calls == 2);
    CHECK(&a.clock() == &b.clock());
}

TEST_CASE("any_pipeline: pipelines of different policies share one type") {
    manual_clock clock;
    std::map<std::string, resil::any_pipeline<reply, manual_clock>> by_dependency;
    by_dependency.emplace("fast", resil::pipeline(clock, resil::deadline_policy{50ms}));
    by_dependency.emplace("slow", resil::pipeline(clock, resil::deadline_policy{5s}, resil::retry_policy{}));
    CHECK(by_dependency.at("fast")([] { return reply{200}; }).ok());
    CHECK(by_dependency.at("slow")([] { return reply{200}; }).ok());
}
