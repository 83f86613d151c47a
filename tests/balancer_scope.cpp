// Where a call's attempts may go: idempotency scopes (an attempt that may
// have reached a server holds a call that may not be repeated to that
// server's scope) and failover to the next priority group within one call.
#include <resil/balancer.hpp>
#include <resil/idempotency_key.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <barrier>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::balancer;
using resil::balancing_policy;
using resil::classification;
using resil::endpoint;
using resil::reason;
using resil::tried_endpoints;
using resil::verdict;
using resil::testing::manual_clock;

namespace {

/// What a fake transfer came to, as a transport judges it.
enum class fate { answered, refused, lost_after_sending, server_error };

struct reply {
    fate what = fate::answered;
    std::string from;
};

classification judge(const reply& r) {
    switch (r.what) {
        case fate::answered: return verdict::success;
        case fate::refused: return classification::not_sent(verdict::retryable);
        case fate::lost_after_sending: return verdict::ambiguous;
        case fate::server_error: return verdict::retryable;  // a 503: answered, so it was received
    }
    return verdict::permanent;
}

/// A call as a keyed POST is: not idempotent, with a key (so its ambiguous
/// failures are retried).
resil::basic_call_options<manual_clock> keyed(manual_clock& clock) {
    return {.deadline = resil::basic_deadline<manual_clock>::at(resil::time_point::max(), clock),
            .idempotency_key = resil::idempotency_key::v4()};
}

}  // namespace

TEST_CASE("tried_endpoints: a call is held to the scope of an attempt that may have been processed") {
    tried_endpoints tried;
    CHECK(tried.held_scope() == 0);
    // In flight: held while the attempt may still reach the server.
    REQUIRE(tried.enter_scope(3));
    CHECK(tried.held_scope() == 3);
    CHECK_FALSE(tried.enter_scope(4));  // a copy that picked another scope meanwhile is refused
    REQUIRE(tried.enter_scope(3));      // a copy in the same scope is not
    tried.leave_scope(false);
    CHECK(tried.held_scope() == 3);  // the other copy is still in flight
    tried.leave_scope(false);
    CHECK(tried.held_scope() == 0);  // both known never sent: free again
    REQUIRE(tried.enter_scope(4));
    tried.leave_scope(true);  // may have been processed: held for good
    CHECK(tried.held_scope() == 4);
    CHECK_FALSE(tried.enter_scope(3));
    REQUIRE(tried.enter_scope(4));
    tried.leave_scope(false);
    CHECK(tried.held_scope() == 4);
    tried.clear();
    CHECK(tried.held_scope() == 0);

    SECTION("an idempotent call is never held") {
        tried_endpoints get;
        get.mark_idempotent();
        REQUIRE(get.enter_scope(3));
        get.leave_scope(true);
        CHECK(get.held_scope() == 0);
        CHECK(get.enter_scope(4));
        get.leave_scope(true);
        CHECK(get.idempotent());
    }
}

TEST_CASE("a keyed POST that may have reached the primary never goes to the backup provider") {
    manual_clock clock;
    // The reduced case: 8 attempts, no breakers. After the ambiguous first
    // attempt the primary refuses connections; its fifth failure in a row
    // ejects it. The backup never saw the key and would charge again.
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 8, .backoff = resil::full_jitter{1ms, 10ms}}});
    std::vector<std::string> order;
    tried_endpoints tried;
    resil::basic_context<manual_clock> ctx{keyed(clock)};
    auto out = pipe.execute(ctx, [&](auto& c) {
        return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
            order.push_back(ep.address);
            if (ep.address == "backup:443") return reply{fate::answered, ep.address};
            return reply{order.size() == 1 ? fate::lost_after_sending : fate::refused, ep.address};
        }, judge);
    });
    CHECK_FALSE(out);
    // Attempts 2-5 stay at the primary (its only endpoint of the scope); the
    // fifth failure ejects it, and the sixth attempt finds no endpoint of the
    // scope: the call ends saying so, instead of charging at the backup.
    CHECK(order == std::vector<std::string>(5, "primary:443"));
    CHECK(lb.metrics().ejections == 1);
    REQUIRE(out.has_value());
    CHECK(out.value().reason() == reason::no_endpoint_in_scope);
    CHECK(out.reason() == reason::no_endpoint_in_scope);
    CHECK(lb.metrics().no_endpoint_in_scope == 1);
    CHECK(resil::to_string(reason::no_endpoint_in_scope) == "no_endpoint_in_scope");
}

TEST_CASE("an attempt known never sent leaves the call free: the next attempt fails over at once") {
    manual_clock clock;
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    for (const bool keyed_post : {true, false}) {
        INFO((keyed_post ? "keyed POST" : "GET"));
        std::vector<std::string> order;
        tried_endpoints tried;
        resil::basic_context<manual_clock> ctx{keyed(clock)};
        if (!keyed_post) ctx.mark_idempotent();
        auto out = pipe.execute(ctx, [&](auto& c) {
            return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
                order.push_back(ep.address);
                return reply{ep.address == "primary:443" ? fate::refused : fate::answered, ep.address};
            }, judge);
        });
        // The primary group is still "usable" (one refusal ejects nothing),
        // but this call tried its every endpoint: the backup takes attempt 2.
        REQUIRE(out);
        CHECK(order == std::vector<std::string>{"primary:443", "backup:443"});
    }
}

TEST_CASE("a GET that may have reached the primary may still fail over: only calls that may not be repeated are held") {
    manual_clock clock;
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    std::vector<std::string> order;
    tried_endpoints tried;
    resil::basic_context<manual_clock> ctx{keyed(clock)};
    ctx.mark_idempotent();
    auto out = pipe.execute(ctx, [&](auto& c) {
        return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
            order.push_back(ep.address);
            return reply{ep.address == "primary:443" ? fate::lost_after_sending : fate::answered, ep.address};
        }, judge);
    });
    REQUIRE(out);
    CHECK(order == std::vector<std::string>{"primary:443", "backup:443"});
    CHECK(tried.held_scope() == 0);
}

TEST_CASE("a keyed POST answered 503 stays with the provider that received it; replicas of one provider share its scope") {
    manual_clock clock;
    balancer lb{{{.address = "a1:443"}, {.address = "a2:443"}, {.address = "b1:443", .priority = 1}},
                {.policy = balancing_policy::round_robin}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    std::vector<std::string> order;
    tried_endpoints tried;
    resil::basic_context<manual_clock> ctx{keyed(clock)};
    auto out = pipe.execute(ctx, [&](auto& c) {
        return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
            order.push_back(ep.address);
            return reply{fate::server_error, ep.address};
        }, judge);
    });
    CHECK_FALSE(out);
    REQUIRE(order.size() == 3);
    // Both of the primary's replicas, then one of them again: never b1.
    for (const auto& a : order) CHECK(a != "b1:443");
    CHECK(order[0] != order[1]);
    CHECK(out.reason() == reason::retries_exhausted);
}

TEST_CASE("named scopes: a provider's replicas in another priority group share its key store") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    for (int call = 0; call < 20; ++call) {
        // acme's second region is the first failover group and shares
        // acme's key store; zenith is another provider in that group.
        balancer lb{{{.address = "acme-eu:443", .idempotency_scope = "acme"},
                     {.address = "acme-us:443", .priority = 1, .idempotency_scope = "acme"},
                     {.address = "zenith:443", .priority = 1, .idempotency_scope = "zenith"}}};
        std::vector<std::string> order;
        tried_endpoints tried;
        resil::basic_context<manual_clock> ctx{keyed(clock)};
        auto out = pipe.execute(ctx, [&](auto& c) {
            return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
                order.push_back(ep.address);
                return reply{ep.address == "acme-eu:443" ? fate::lost_after_sending : fate::answered, ep.address};
            }, judge);
        });
        INFO("call " << call);
        REQUIRE(out);
        CHECK(order == std::vector<std::string>{"acme-eu:443", "acme-us:443"});
    }
}

TEST_CASE("an open breaker makes its endpoint unusable for choosing a group: calls fail over while it is open") {
    manual_clock clock;
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}},
                {.endpoint_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                                    .consecutive_failures = 3,
                                                                    .open_for = 2s}}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    bool primary_dead = true;
    std::map<std::string, int> sent;
    auto call = [&] {
        tried_endpoints tried;
        resil::basic_context<manual_clock> ctx{keyed(clock)};
        return pipe.execute(ctx, [&](auto& c) {
            return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
                ++sent[ep.address];
                if (ep.address == "primary:443" && primary_dead) return reply{fate::refused, ep.address};
                return reply{fate::answered, ep.address};
            }, judge);
        });
    };
    int failed = 0;
    for (int i = 0; i < 40; ++i) failed += call() ? 0 : 1;
    CHECK(failed == 0);
    // Three refusals open the primary's breaker; then no call is offered it
    // (40 calls in far less than the 2 s it stays open).
    CHECK(sent["primary:443"] == 3);
    CHECK(sent["backup:443"] == 40);
    CHECK(lb.status(clock.now())[0].breaker == resil::circuit_state::open);
    CHECK(lb.status(clock.now())[1].breaker == resil::circuit_state::closed);
    // The breaker's open_for (on its own clock, steady_clock) ends: the
    // primary is usable again, its probe succeeds, and calls return to it.
    // (The balancer counts open_for on the picks' clock too: both move.)
    primary_dead = false;
    bool back = false;
    for (int i = 0; i < 1000 && !back; ++i) {
        std::this_thread::sleep_for(10ms);
        clock.advance(10ms);
        const auto before = sent["primary:443"];
        REQUIRE(call());
        back = sent["primary:443"] > before;
    }
    CHECK(back);
    REQUIRE(call());
    const auto before = sent["backup:443"];
    for (int i = 0; i < 10; ++i) REQUIRE(call());
    CHECK(sent["backup:443"] == before);
}

TEST_CASE("hedge copies: a copy whose pick raced into another scope is refused and picks within the held scope") {
    manual_clock clock;
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}}};
    tried_endpoints tried;
    // Copy 0 is in flight at the primary.
    auto first = lb.pick(clock.now(), &tried);
    REQUIRE(first.address() == "primary:443");
    tried.add(first.id());
    REQUIRE(tried.enter_scope(first.scope()));
    // Copy 1 picks while copy 0 may be at the server: held to the primary's
    // scope, it gets the primary again (tried, but the only one of its scope).
    auto second = lb.pick(clock.now(), &tried);
    REQUIRE(second);
    CHECK(second.address() == "primary:443");
    // A lease taken before the hold (on the backup) cannot enter.
    tried_endpoints other;
    auto stale = lb.pick(clock.now(), &other);
    other.add(stale.id());
    auto backup = lb.pick(clock.now(), &other);
    REQUIRE(backup.address() == "backup:443");
    CHECK_FALSE(tried.enter_scope(backup.scope()));
    tried.leave_scope(true);
}

TEST_CASE("idempotency scopes: names are checked, and numbers stay with their endpoints across replacements") {
    CHECK(resil::validate_endpoints(std::vector<endpoint>{{.address = "a:80", .idempotency_scope = "acme payments"}})
              .has_value() == false);
    const auto bad = resil::validate_endpoints(std::vector<endpoint>{{.address = "a:80", .idempotency_scope = "a\nb"}});
    REQUIRE(bad);
    CHECK(bad->message() ==
          "`endpoints[0].idempotency_scope` must be at most 256 printable ASCII characters (empty: the priority group), "
          "got \"a\nb\"");
    CHECK(resil::validate_endpoints(std::vector<endpoint>{{.address = "a:80", .idempotency_scope = std::string(257, 'x')}})
              .has_value());

    manual_clock clock;
    balancer lb{{{.address = "a:80", .idempotency_scope = "acme"}, {.address = "b:80"}, {.address = "p1:80", .priority = 1}}};
    const auto scope_of = [&](const std::string& address) {
        for (const auto& st : lb.status(clock.now()))
            if (st.endpoint.address == address) {
                tried_endpoints t;
                for (int i = 0; i < 20; ++i) {
                    auto l = lb.pick(clock.now(), &t);
                    if (!l) break;
                    if (l.address() == address) return l.scope();
                    t.add(l.id());
                }
            }
        return std::uint32_t{0};
    };
    const auto acme = scope_of("a:80"), group0 = scope_of("b:80"), group1 = scope_of("p1:80");
    CHECK(acme != 0);
    CHECK(group0 != 0);
    CHECK(group1 != 0);
    CHECK(acme != group0);
    CHECK(group0 != group1);
    // A new replica joins its group's scope; a kept endpoint keeps its
    // number; a name keeps its number while it stays in the set.
    lb.replace({{.address = "a2:80", .idempotency_scope = "acme"}, {.address = "b:80"}, {.address = "b2:80"},
                {.address = "p1:80", .priority = 1}});
    CHECK(scope_of("a2:80") == acme);
    CHECK(scope_of("b2:80") == group0);
    CHECK(scope_of("p1:80") == group1);
    // The failover endpoint promoted to priority 0 keeps its own number:
    // it is not the primary's key store. New endpoints of a group whose kept
    // ones come from two scopes get a scope of their own.
    lb.replace({{.address = "b:80"}, {.address = "p1:80"}, {.address = "c:80"}});
    CHECK(scope_of("b:80") == group0);
    CHECK(scope_of("p1:80") == group1);
    const auto c = scope_of("c:80");
    CHECK(c != group0);
    CHECK(c != group1);
    // A name that left and comes back is a new scope (the safe side).
    lb.replace({{.address = "a:80", .idempotency_scope = "acme"}});
    CHECK(scope_of("a:80") != acme);
}

TEST_CASE("a replacement during a held call cannot send it to another provider") {
    manual_clock clock;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    for (const bool swap : {false, true}) {
        INFO((swap ? "priorities swapped" : "the primary removed, the backup promoted"));
        balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}}};
        std::vector<std::string> order;
        tried_endpoints tried;
        resil::basic_context<manual_clock> ctx{keyed(clock)};
        auto out = pipe.execute(ctx, [&](auto& c) {
            return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
                order.push_back(ep.address);
                if (order.size() == 1) {
                    // The primary may have the charge; discovery changes the set meanwhile.
                    if (swap)
                        lb.replace({{.address = "primary:443", .priority = 1}, {.address = "backup:443"}});
                    else
                        lb.replace({{.address = "backup:443"}});
                    return reply{fate::lost_after_sending, ep.address};
                }
                return reply{fate::answered, ep.address};
            }, judge);
        });
        for (const auto& a : order) CHECK(a != "backup:443");
        if (swap) {
            REQUIRE(out);  // the retry went to the primary, now in group 1
            CHECK(out.value().value().from == "primary:443");
        } else {
            CHECK(out.reason() == reason::no_endpoint_in_scope);
        }
    }
}

TEST_CASE("a retry moving to a fresh group follows the weights there") {
    manual_clock clock;
    for (auto policy : {balancing_policy::round_robin, balancing_policy::random}) {
        balancer lb{{{.address = "primary:443"},
                     {.address = "light:443", .weight = 1, .priority = 1},
                     {.address = "heavy:443", .weight = 9, .priority = 1}},
                    {.policy = policy, .outlier = {.consecutive_failures = 0}}};
        int heavy = 0;
        for (int i = 0; i < 2000; ++i) {
            tried_endpoints tried;
            resil::basic_context<manual_clock> ctx{keyed(clock)};
            ctx.mark_idempotent();
            auto first = resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) { return reply{fate::refused, ep.address}; }, judge);
            REQUIRE(first.value().from == "primary:443");
            auto second = resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) { return reply{fate::answered, ep.address}; }, judge);
            heavy += second.value().from == "heavy:443" ? 1 : 0;
        }
        INFO(resil::to_string(policy) << ": " << heavy << " of 2000 to the weight-9 endpoint");
        CHECK(std::abs(heavy / 2000.0 - 0.9) < 0.03);
    }
}

TEST_CASE("hedge copies racing on threads: every call's attempts stay in one scope") {
    // Three copies of each call start at once on three threads, sharing the
    // call's tried_endpoints, over four endpoints in three scopes; every
    // attempt may reach its server. Copies whose pick raced into another
    // scope are refused by enter_scope and pick again.
    manual_clock clock;
    balancer lb{{{.address = "a1:443"}, {.address = "a2:443"},
                 {.address = "b:443", .idempotency_scope = "b"},
                 {.address = "c:443", .priority = 1}},
                {.outlier = {.consecutive_failures = 0}}};
    constexpr int calls = 2000, copies = 3;
    std::vector<std::uint32_t> scopes(calls * copies);
    tried_endpoints tried;
    std::barrier sync(copies);
    auto copy = [&](int k) {
        for (int call = 0; call < calls; ++call) {
            sync.arrive_and_wait();  // the call starts: its tried set is fresh
            resil::basic_context<manual_clock> ctx{keyed(clock)};
            (void)resil::call_endpoint(lb, ctx, tried, [&](const endpoint& ep) {
                for (const auto& st : lb.status(resil::time_point{}))
                    (void)st;  // a little work, so that copies overlap
                std::uint32_t scope = 0;
                if (ep.address == "a1:443" || ep.address == "a2:443") scope = 1;
                if (ep.address == "b:443") scope = 2;
                if (ep.address == "c:443") scope = 3;
                scopes[static_cast<std::size_t>(call * copies + k)] = scope;
                return reply{fate::lost_after_sending, ep.address};
            }, judge);
            sync.arrive_and_wait();  // every copy ended
            if (k == 0) tried.clear();
        }
    };
    {
        std::vector<std::jthread> threads;
        for (int k = 0; k < copies; ++k) threads.emplace_back(copy, k);
    }
    int split = 0;
    std::map<std::uint32_t, int> first_scope;
    for (int call = 0; call < calls; ++call) {
        const auto* s = &scopes[static_cast<std::size_t>(call * copies)];
        split += (s[0] != s[1] || s[1] != s[2]) ? 1 : 0;
        ++first_scope[s[0]];
    }
    CHECK(split == 0);
    CHECK(first_scope.size() >= 2);  // the calls did start in several scopes
}

TEST_CASE("a nested call's retries: never sent only when none of its attempts may have been sent") {
    manual_clock clock;
    auto inner = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2, .backoff = resil::full_jitter{1ms, 10ms}}});
    for (const bool first_sent : {true, false}) {
        INFO((first_sent ? "ambiguous, then refused" : "refused twice"));
        int attempt = 0;
        resil::basic_context<manual_clock> ctx{keyed(clock)};
        auto out = inner.execute(ctx, [&](auto&) {
            ++attempt;
            return reply{attempt == 1 && first_sent ? fate::lost_after_sending : fate::refused, ""};
        }, judge);
        REQUIRE_FALSE(out);
        CHECK(attempt == 2);
        // What a balanced attempt around this call learns of it.
        CHECK(resil::classify(out).never_sent == !first_sent);
    }
}

TEST_CASE("a held call whose scope's breakers all refuse ends no_endpoint_in_scope, and is counted so") {
    manual_clock clock;
    balancer lb{{{.address = "primary:443"}, {.address = "backup:443", .priority = 1}},
                {.endpoint_breaker = resil::circuit_breaker_options{.mode = resil::breaker_mode::consecutive_failures,
                                                                    .consecutive_failures = 1,
                                                                    .open_for = 1h}}};
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3, .backoff = resil::full_jitter{1ms, 10ms}}});
    std::vector<std::string> order;
    tried_endpoints tried;
    resil::basic_context<manual_clock> ctx{keyed(clock)};
    auto out = pipe.execute(ctx, [&](auto& c) {
        return resil::call_endpoint(lb, c, tried, [&](const endpoint& ep) {
            order.push_back(ep.address);
            return reply{fate::lost_after_sending, ep.address};  // and the primary's breaker opens
        }, judge);
    });
    CHECK(order == std::vector<std::string>{"primary:443"});
    CHECK(out.reason() == reason::no_endpoint_in_scope);
    CHECK(lb.metrics().no_endpoint_in_scope == 1);
}
