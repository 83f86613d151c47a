// resil::curl and the rate-limit fields (resil/rate_limit_fields.hpp): what a
// response exposes, the hint classify makes of them, and, against the fault
// server, how long the retry policy waits on 429 and 503 replies carrying
// each form. Waits are read from the retry_scheduled events, not from the
// wall clock.
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support/attempts.hpp"
#include "support/fault_server.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::reason;
using resil::verdict;
using resil::curl::classify;
using resil::curl::classify_status;
using resil::curl::client;
using resil::curl::request;
using resil::curl::response;
using resil_test::action;
using resil_test::fault_server;
using std::chrono::system_clock;

namespace {

using header_pairs = std::vector<std::pair<std::string, std::string>>;

struct scheduled_retries {
    std::vector<resil::events::retry_scheduled>* seen;
    void operator()(const resil::events::retry_scheduled& e) const { seen->push_back(e); }
};

// One 429 or 503 with `headers`, then 200: the waits the retry scheduled.
struct busy_then_ok {
    int status;
    header_pairs headers;
    std::vector<resil::events::retry_scheduled> retries{};
    std::optional<resil::outcome<response>> out{};

    void run(fault_server& server, const std::string& path, client& http) {
        server.on(path, {action::respond(status, "busy", headers), action::respond(200, "ok")});
        const auto pipe = resil::pipeline(resil::retry_policy{resil_test::quick_retries})
                              .with_listener(scheduled_retries{&retries});
        const auto req = request::get(server.url(path));
        out.emplace(pipe([&](resil::context& ctx) { return http.perform(req, ctx); }));
    }
};

std::string unix_ms_from_now(std::chrono::milliseconds later) {
    const auto at = std::chrono::floor<std::chrono::milliseconds>(system_clock::now()) + later;
    return std::to_string(at.time_since_epoch().count());
}

std::string unix_seconds_from_now(std::chrono::seconds later) {
    const auto at = std::chrono::floor<std::chrono::seconds>(system_clock::now()) + later;
    return std::to_string(at.time_since_epoch().count());
}

// GitHub's answer to a request over its primary rate limit ("Rate limits
// for the REST API" and "Troubleshooting the REST API": a 403 or a 429,
// x-ratelimit-remaining 0, x-ratelimit-reset in UTC epoch seconds).
header_pairs github_exhausted(const std::string& reset) {
    return {{"x-ratelimit-limit", "60"},
            {"x-ratelimit-remaining", "0"},
            {"x-ratelimit-used", "60"},
            {"x-ratelimit-reset", reset},
            {"x-ratelimit-resource", "core"}};
}

}  // namespace

TEST_CASE("curl rate limit: a response exposes its rate-limit fields") {
    const auto now = system_clock::time_point{} + std::chrono::seconds{1'717'200'000};
    const auto r = response::from_parts(429,
                                        {{"X-RateLimit-Limit", "5000"},
                                         {"x-ratelimit-remaining", "0"},
                                         {"X-RATELIMIT-RESET", "1717200060"}},
                                        "", now);
    CHECK(r.received_at() == now);
    const auto q = r.rate_limit();
    CHECK(q.form == resil::rate_limit_form::x_ratelimit);
    CHECK(q.limit == 5000);
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{60s});  // measured from when it arrived
    CHECK(r.rate_limit(now + 20s).reset == duration{40s});

    // A 2xx carries them too: servers send them on every response.
    const auto ok = response::from_parts(200, {{"RateLimit", R"("default";r=49;t=30)"},
                                               {"RateLimit-Policy", R"("default";q=50;w=60)"}});
    CHECK(ok.rate_limit().remaining == 49);
    CHECK(ok.rate_limit().limit == 50);
    CHECK(ok.rate_limit().window == duration{60s});
    CHECK(classify(ok).verdict == verdict::success);
    CHECK_FALSE(response::from_parts(503).rate_limit().present());
    // A field on several lines: each line by its index among those of its name.
    const auto lines = response::from_parts(200, {{"RateLimit", "a"}, {"Other", "x"}, {"ratelimit", "b"}});
    CHECK(lines.header("RATELIMIT", 0) == "a");
    CHECK(lines.header("RateLimit", 1) == "b");
    CHECK_FALSE(lines.header("RateLimit", 2));
    CHECK_FALSE(lines.header("Missing", 0));
    CHECK(lines.headers().find("ratelimit", 1) == "b");
    CHECK_FALSE(response::from_failure(resil::curl::transport_status::connect_failed, CURLE_COULDNT_CONNECT, false)
                    .received_at());
}

TEST_CASE("curl rate limit: classify's hint, in order of precedence") {
    const auto hint = [](int status, std::initializer_list<resil::curl::header_field> h) {
        return classify(response::from_parts(status, h)).hint;
    };
    const resil::curl::header_field quota{"RateLimit", R"("default";r=0;t=9)"};
    const resil::curl::header_field ms{"retry-after-ms", "700"};

    // Retry-After first, the longer of it and the pushback header as before.
    CHECK(hint(429, {quota, ms, {"Retry-After", "2"}}).retry_after == duration{2s});
    CHECK(hint(429, {ms, {"Retry-After", "1"}, {"grpc-retry-pushback-ms", "2500"}}).retry_after == duration{2500ms});
    CHECK(hint(503, {quota, {"grpc-retry-pushback-ms", "-1"}}).dont_retry);
    CHECK_FALSE(hint(503, {quota, {"grpc-retry-pushback-ms", "-1"}}).retry_after);
    // Then retry-after-ms, on any failure.
    CHECK(hint(429, {quota, ms}).retry_after == duration{700ms});
    CHECK(hint(500, {ms}).retry_after == duration{700ms});
    // Then an exhausted quota's reset, on 429 and 503 only.
    CHECK(hint(429, {quota}).retry_after == duration{9s});
    CHECK(hint(503, {{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "6m0s"}}).retry_after ==
          duration{6min});
    CHECK_FALSE(hint(500, {quota}).retry_after);
    CHECK_FALSE(hint(408, {quota}).retry_after);
    CHECK_FALSE(hint(429, {{"RateLimit", R"("default";r=1;t=9)"}}).retry_after);  // not exhausted
    // The floor: Retry-After: 0 and a zero pushback wait 50 ms, or what the caller says.
    CHECK(hint(503, {{"Retry-After", "0"}}).retry_after == duration{50ms});
    CHECK(hint(503, {{"grpc-retry-pushback-ms", "0"}}).retry_after == duration{50ms});
    CHECK(hint(429, {{"RateLimit", R"("default";r=0;t=0)"}}).retry_after == duration{50ms});
    const auto zero = response::from_parts(503, {{"Retry-After", "0"}});
    CHECK(classify(zero, {.floor = 5ms}).hint.retry_after == duration{5ms});
    CHECK(classify(zero, {.floor = duration::zero()}).hint.retry_after == duration::zero());
    // Malformed values: no hint at all.
    CHECK(hint(429, {{"Retry-After", "-1"}, {"retry-after-ms", "-30"}, {"RateLimit", R"("d";r=0;t=-1)"},
                     {"X-RateLimit-Reset", "soon"}}) == resil::server_hint{});
}

TEST_CASE("curl rate limit: a 429 or 503 waits what its rate-limit fields say") {
    fault_server server;
    client http;

    SECTION("retry-after-ms") {
        busy_then_ok t{429, {{"retry-after-ms", "80"}}};
        t.run(server, "/ms", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{80ms});
        CHECK(t.retries[0].from_retry_after);
    }
    SECTION("Retry-After: 0 waits the floor") {
        busy_then_ok t{503, {{"Retry-After", "0"}}};
        t.run(server, "/zero", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{50ms});
        CHECK(t.retries[0].from_retry_after);
    }
    SECTION("RateLimit with an exhausted quota: its t") {
        busy_then_ok t{503, {{"RateLimit", R"("default";r=0;t=1, "daily";r=900;t=3600)"},
                             {"RateLimit-Policy", R"("default";q=10;w=1, "daily";q=1000;w=86400)"}}};
        t.run(server, "/ietf", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{1s});
        CHECK(t.retries[0].from_retry_after);
    }
    SECTION("the older drafts' fields") {
        busy_then_ok t{429, {{"RateLimit-Limit", "10"}, {"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "1"}}};
        t.run(server, "/legacy", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{1s});
    }
    SECTION("X-RateLimit-Reset in milliseconds since the epoch") {
        busy_then_ok t{429, {{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", unix_ms_from_now(300ms)}}};
        t.run(server, "/x-ms", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        // The time between writing the script and reading the reply comes off.
        CHECK(t.retries[0].delay <= duration{300ms});
        CHECK(t.retries[0].delay > duration{100ms});
        CHECK(t.retries[0].from_retry_after);
    }
    SECTION("draft 07's dictionary (express-rate-limit's draft-7 mode)") {
        busy_then_ok t{429, {{"RateLimit-Policy", "10;w=60"}, {"RateLimit", "limit=10, remaining=0, reset=1"}}};
        t.run(server, "/draft7", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{1s});
        CHECK(t.retries[0].from_retry_after);
    }
    SECTION("Reddit's fractional remaining, reset in seconds") {
        busy_then_ok t{429, {{"X-Ratelimit-Used", "600"}, {"X-Ratelimit-Remaining", "0.0"}, {"X-Ratelimit-Reset", "1"}}};
        t.run(server, "/reddit", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{1s});
    }
    SECTION("X's x-rate-limit-* with a Unix-time reset") {
        busy_then_ok t{429, {{"x-rate-limit-limit", "900"}, {"x-rate-limit-remaining", "0"},
                             {"x-rate-limit-reset", unix_seconds_from_now(1s)}}};
        t.run(server, "/x", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].from_retry_after);
        CHECK(t.retries[0].delay <= duration{1s});
        CHECK(t.retries[0].delay >= duration{50ms});
    }
    SECTION("Anthropic's anthropic-ratelimit-* with an RFC 3339 reset") {
        const auto at = std::chrono::floor<std::chrono::milliseconds>(system_clock::now()) + 400ms;
        const auto day = std::chrono::floor<std::chrono::days>(at);
        const std::chrono::year_month_day ymd{day};
        const std::chrono::hh_mm_ss<std::chrono::milliseconds> time{at - day};
        char reset[40];
        std::snprintf(reset, sizeof reset, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                      static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                      static_cast<int>(time.hours().count()), static_cast<int>(time.minutes().count()),
                      static_cast<int>(time.seconds().count()), static_cast<int>(time.subseconds().count()));
        busy_then_ok t{429, {{"anthropic-ratelimit-requests-limit", "50"},
                             {"anthropic-ratelimit-requests-remaining", "0"},
                             {"anthropic-ratelimit-requests-reset", reset},
                             {"anthropic-ratelimit-tokens-remaining", "40000"}}};
        t.run(server, "/anthropic", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].from_retry_after);
        // The time between writing the script and reading the reply comes off.
        CHECK(t.retries[0].delay <= duration{400ms});
        CHECK(t.retries[0].delay >= duration{50ms});
    }
    SECTION("requests and tokens with durations") {
        busy_then_ok t{503, {{"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "120ms"},
                             {"x-ratelimit-remaining-tokens", "5000"}, {"x-ratelimit-reset-tokens", "6m0s"}}};
        t.run(server, "/split", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{120ms});
    }
    SECTION("Retry-After before the rest") {
        busy_then_ok t{429, {{"Retry-After", "1"}, {"retry-after-ms", "30"}, {"RateLimit", R"("d";r=0;t=5)"}}};
        t.run(server, "/first", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK(t.retries[0].delay == duration{1s});
    }
    SECTION("malformed fields: the backoff decides") {
        busy_then_ok t{429, {{"retry-after-ms", "-30"}, {"RateLimit", R"("d";r=0;t=-1)"},
                             {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "soon"},
                             {"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "6 m"}}};
        t.run(server, "/malformed", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK_FALSE(t.retries[0].from_retry_after);
        CHECK(t.retries[0].delay <= duration{5ms});  // quick_retries' backoff cap
    }
    SECTION("an exhausted quota on a 500 is not why it failed") {
        busy_then_ok t{500, {{"RateLimit", R"("d";r=0;t=5)"}}};
        t.run(server, "/500", http);
        REQUIRE(t.out->ok());
        REQUIRE(t.retries.size() == 1);
        CHECK_FALSE(t.retries[0].from_retry_after);
    }
}

TEST_CASE("curl rate limit: GitHub's 403 with an exhausted quota is its rate limit") {
    const auto now = system_clock::time_point{} + std::chrono::seconds{1'717'200'000};
    const auto judge = [now](int status, std::initializer_list<resil::curl::header_field> h) {
        return classify(response::from_parts(status, h, "", now));
    };
    // GitHub's fields (see github_exhausted): retried after the reset.
    auto c = judge(403, {{"x-ratelimit-limit", "60"},
                         {"x-ratelimit-remaining", "0"},
                         {"x-ratelimit-used", "60"},
                         {"x-ratelimit-reset", "1717200060"},
                         {"x-ratelimit-resource", "core"}});
    CHECK(c.verdict == verdict::retryable);
    CHECK(c.hint.retry_after == duration{60s});
    // Any form of exhausted quota with its reset; Retry-After still first; a
    // reset already past waits the floor.
    c = judge(403, {{"RateLimit", R"("default";r=0;t=5)"}});
    CHECK(c.verdict == verdict::retryable);
    CHECK(c.hint.retry_after == duration{5s});
    c = judge(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1717200060"}, {"Retry-After", "7"}});
    CHECK(c.hint.retry_after == duration{7s});
    c = judge(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1717199000"}});
    CHECK(c.verdict == verdict::retryable);
    CHECK(c.hint.retry_after == duration{50ms});
    CHECK(classify(response::from_parts(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1717200060"}}, "", now),
                   {.floor = 2min})
              .hint.retry_after == duration{2min});
    // A "don't retry" pushback is still obeyed.
    CHECK(judge(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1717200060"},
                      {"grpc-retry-pushback-ms", "-1"}})
              .hint.dont_retry);

    // A 403 without an exhausted quota with its reset is what it says: permanent.
    CHECK(judge(403, {}).verdict == verdict::permanent);
    CHECK(judge(403, {{"x-ratelimit-remaining", "0"}}).verdict == verdict::permanent);  // no reset
    CHECK(judge(403, {{"x-ratelimit-remaining", "1"}, {"x-ratelimit-reset", "1717200060"}}).verdict ==
          verdict::permanent);
    CHECK(judge(403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "soon"}}).verdict == verdict::permanent);
    CHECK(judge(403, {{"Retry-After", "60"}}).verdict == verdict::permanent);
    // Other 4xx are not rate limits, whatever their fields say.
    for (const int status : {400, 401, 404, 422}) {
        INFO(status);
        CHECK(judge(status, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1717200060"}}).verdict ==
              verdict::permanent);
    }
    CHECK(classify_status(403, false, false) == verdict::permanent);  // the status alone cannot say
}

TEST_CASE("curl rate limit: GitHub's 403 through a pipeline: retried when the reset fits the deadline") {
    fault_server server;
    client http;
    std::vector<resil::events::retry_scheduled> retries;
    const auto pipe = resil::pipeline(resil::deadline_policy{10s}, resil::retry_policy{resil_test::quick_retries})
                          .with_listener(scheduled_retries{&retries});
    const auto call = [&](const std::string& path) {
        return pipe([&](resil::context& ctx) { return http.perform(request::get(server.url(path)), ctx); });
    };

    SECTION("a reset within the deadline: waited, then retried") {
        server.on("/soon", {action::respond(403, "", github_exhausted(unix_seconds_from_now(2s))),
                            action::respond(200, "ok")});
        const auto out = call("/soon");
        REQUIRE(out.ok());
        CHECK(server.requests().size() == 2);
        REQUIRE(retries.size() == 1);
        CHECK(retries[0].from_retry_after);
        // Whole seconds to the reset from when the 403 arrived (at most 2,
        // fewer if a second ticked meanwhile), or the floor if it passed.
        CHECK(retries[0].delay <= duration{2s});
        CHECK(retries[0].delay >= duration{50ms});
    }
    SECTION("a reset past the deadline: the call ends at once") {
        server.on("/later", {action::respond(403, "", github_exhausted(unix_seconds_from_now(1h))),
                             action::respond(200, "ok")});
        const auto out = call("/later");
        CHECK(out.reason() == reason::retry_after_exceeds_deadline);
        CHECK(retries.empty());
        CHECK(server.requests().size() == 1);
        REQUIRE(out.has_value());
        CHECK(out->status() == 403);
    }
    SECTION("a 403 that is no rate limit: permanent, not repeated") {
        server.on("/forbidden", {action::respond(403, "", {{"x-ratelimit-remaining", "59"},
                                                           {"x-ratelimit-reset", unix_seconds_from_now(1h)}}),
                                 action::respond(200, "ok")});
        const auto out = call("/forbidden");
        CHECK(out.reason() == reason::failed);
        CHECK(retries.empty());
        CHECK(server.requests().size() == 1);
    }
}

TEST_CASE("curl rate limit: a RateLimit field on several lines from the server") {
    // express-rate-limit's draft-8 mode with two limiters: one RateLimit and
    // one RateLimit-Policy line each.
    fault_server server;
    server.on("/two", {action::respond(429, "",
                                       {{"RateLimit-Policy", R"("burst"; q=10; w=1)"},
                                        {"RateLimit", R"("burst"; r=4; t=1)"},
                                        {"RateLimit-Policy", R"("hourly"; q=100; w=3600)"},
                                        {"RateLimit", R"("hourly"; r=0; t=1)"}}),
                       action::respond(200, "ok")});
    client http;
    const auto first = http.perform(request::get(server.url("/two")));
    REQUIRE(first.status() == 429);
    CHECK(first.header("RateLimit", 1) == R"("hourly"; r=0; t=1)");
    CHECK_FALSE(first.header("RateLimit", 2));
    const auto q = first.rate_limit();
    CHECK(q.remaining == 0);
    CHECK(q.limit == 100);
    CHECK(q.window == duration{3600s});
    CHECK(classify(first).hint.retry_after == duration{1s});

    server.on("/two", {action::respond(429, "",
                                       {{"RateLimit", R"("burst"; r=4; t=1)"}, {"RateLimit", R"("hourly"; r=0; t=1)"}}),
                       action::respond(200, "ok")});
    std::vector<resil::events::retry_scheduled> retries;
    const auto pipe = resil::pipeline(resil::retry_policy{resil_test::quick_retries})
                          .with_listener(scheduled_retries{&retries});
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/two")), ctx); });
    REQUIRE(out.ok());
    REQUIRE(retries.size() == 1);
    CHECK(retries[0].delay == duration{1s});  // the second line's reset
    CHECK(retries[0].from_retry_after);
}

TEST_CASE("curl rate limit: a reset past the deadline ends the call at once") {
    fault_server server;
    const auto in_an_hour = std::chrono::floor<std::chrono::seconds>(system_clock::now()) + 1h;
    server.on("/github", {action::respond(429, "",
                                          {{"X-RateLimit-Limit", "60"},
                                           {"X-RateLimit-Remaining", "0"},
                                           {"X-RateLimit-Reset", std::to_string(in_an_hour.time_since_epoch().count())}}),
                          action::respond(200, "ok")});
    client http;
    std::vector<resil::events::retry_scheduled> retries;
    const auto pipe = resil::pipeline(resil::deadline_policy{500ms}, resil::retry_policy{resil_test::quick_retries})
                          .with_listener(scheduled_retries{&retries});
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/github")), ctx); });
    CHECK(out.reason() == reason::retry_after_exceeds_deadline);
    CHECK(retries.empty());
    CHECK(server.requests().size() == 1);
    REQUIRE(out.has_value());
    CHECK(out->rate_limit().remaining == 0);
    CHECK(out->rate_limit().reset > duration{3590s});
}

TEST_CASE("curl rate limit: a 200 from the client exposes its fields") {
    fault_server server;
    server.on("/ok", {action::respond(200, "ok", {{"X-RateLimit-Limit", "5000"}, {"X-RateLimit-Remaining", "4999"}})});
    client http;
    const auto r = http.perform(request::get(server.url("/ok")));
    REQUIRE(r.ok());
    CHECK_FALSE(r.received_at());  // no hints are read from a 2xx
    const auto q = r.rate_limit();
    CHECK(q.limit == 5000);
    CHECK(q.remaining == 4999);
}

TEST_CASE("curl client: the idempotency key travels in the header the options name") {
    using resil::curl::client_options;
    CHECK(client_options{}.idempotency_key_header == "Idempotency-Key");
    const auto message = [](const client_options& o) { return o.validate()->message(); };
    CHECK(message({.idempotency_key_header = ""}) == "`idempotency_key_header` must be an HTTP token, got \"\"");
    CHECK(message({.idempotency_key_header = "Idempotency Key"}) ==
          "`idempotency_key_header` must be an HTTP token, got \"Idempotency Key\"");
    CHECK(message({.idempotency_key_header = "X-Key:"}) == "`idempotency_key_header` must be an HTTP token, got \"X-Key:\"");
    CHECK_THROWS_AS(client({.idempotency_key_header = "a\r\nb"}), std::invalid_argument);
    const std::string long_name(200, 'k');
    CHECK_FALSE(client_options{.idempotency_key_header = long_name}.validate());

    fault_server server;
    server.on("/orders", {action::respond(503), action::respond(200, "ok")});
    for (const std::string& name : {std::string("X-Idempotency-Key"), long_name}) {
        INFO(name.size());
        client http({.idempotency_key_header = name});
        const auto pipe = resil::pipeline(resil::retry_policy{resil_test::quick_retries});
        const auto before = server.requests().size();
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/orders"), "{}"), ctx); });
        REQUIRE(out.ok());
        CHECK(out->carried_idempotency_key());
        const auto seen = server.requests();
        REQUIRE(seen.size() == before + 2);
        const auto first = seen[before].header(name);
        REQUIRE(first);
        CHECK(first->size() == 38);  // a quoted UUID
        CHECK(seen[before + 1].header(name) == first);  // the same key on the retry
        CHECK_FALSE(seen[before].header("Idempotency-Key"));
        server.on("/orders", {action::respond(503), action::respond(200, "ok")});
    }

    // A request's own key in that header is sent as it is, and an empty one refused.
    server.on("/own", {action::respond(200, "ok")});
    client http({.idempotency_key_header = "X-Idempotency-Key"});
    const auto mine = http.perform(request::post(server.url("/own"), "{}").add_header("x-idempotency-key", "order-7"));
    REQUIRE(mine.ok());
    CHECK(mine.carried_idempotency_key());
    const auto seen = server.requests();
    CHECK(seen.back().header("X-Idempotency-Key") == "order-7");
    CHECK_THROWS_WITH(http.perform(request::post(server.url("/own"), "{}").add_header("X-Idempotency-Key", " ")),
                      Catch::Contains("the request's X-Idempotency-Key header is empty"));
}
