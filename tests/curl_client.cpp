// resil::curl::client against real sockets on 127.0.0.1: resil's own fault
// server (tests/support/fault_server.hpp) for what a well-behaved server never
// does — refuse, hang, reset, close without answering — and scripted replies.
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/attempts.hpp"
#include "support/timing.hpp"
#include "support/fault_server.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::curl::client;
using resil::curl::request;
using resil::curl::response;
using resil::curl::transport_status;
using resil_test::action;
using resil_test::attempt_counter;
using resil_test::quick_retries;
using resil_test::fault_server;
using steady = std::chrono::steady_clock;
using resil_test::slack;

namespace {

auto since(steady::time_point t0) { return resil_test::since<std::chrono::milliseconds>(t0); }

// A chunked reply with Retry-After and pushback in its head and one trailer.
std::string busy_chunked_reply(const std::string& body) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", body.size());
    return "HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\ngrpc-retry-pushback-ms: 250\r\n"
           "Connection: close\r\n\r\n" +
           std::string(size) + body + "\r\n0\r\nX-Checksum: abc\r\n\r\n";
}

// A chunked body of `size` bytes in 16 kB chunks, the connection closed after it.
std::string chunked_body_reply(std::size_t size) {
    std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    for (std::size_t at = 0; at < size; at += 16'384) {
        const auto n = std::min<std::size_t>(16'384, size - at);
        char line[32];
        std::snprintf(line, sizeof line, "%zx\r\n", n);
        out += line;
        out.append(n, 'c');
        out += "\r\n";
    }
    return out + "0\r\n\r\n";
}


}  // namespace

TEST_CASE("curl client: a GET over keep-alive, headers in any case, timings") {
    fault_server server;
    server.on("/items/42", {action::respond(200, R"({"id":42})", {{"Content-Type", "application/json"}, {"X-Multi", "a"}})});
    client http;
    for (int i = 0; i < 3; ++i) {
        auto r = http.perform(request::get(server.url("/items/42?fields=all")));
        REQUIRE(r.ok());
        CHECK(r.transport() == transport_status::completed);
        CHECK(r.curl_code() == CURLE_OK);
        CHECK(r.status() == 200);
        CHECK(r.body() == R"({"id":42})");
        CHECK(r.header("content-type") == "application/json");
        CHECK(r.header("CONTENT-LENGTH") == "9");
        CHECK(r.may_have_reached_server());
        CHECK(r.timings().total >= r.timings().first_byte);
        CHECK(r.timings().reused_connection == (i > 0));
        CHECK(resil::curl::classify(r).verdict == verdict::success);
    }
    CHECK(server.connections() == 1);  // one connection, kept alive
    const auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].method == "GET");
    CHECK(seen[0].target == "/items/42?fields=all");
    CHECK_FALSE(seen[0].header("Idempotency-Key"));  // GET is idempotent: no key
    CHECK_FALSE(seen[0].header("Expect"));
    CHECK_FALSE(seen[0].header("User-Agent"));  // none by default, as libcurl

    client branded({.user_agent = "shop/1.2"});
    REQUIRE(branded.perform(request::get(server.url("/items/42"))).ok());
    REQUIRE(branded.perform(request::get(server.url("/items/42")).add_header("User-Agent", "mine")).ok());
    const auto later = server.requests();
    REQUIRE(later.size() == 5);
    CHECK(later[3].header("User-Agent") == "shop/1.2");
    CHECK(later[4].header("User-Agent") == "mine");  // the request's own wins
}

TEST_CASE("curl client: every method, its body, and the idempotency key only where needed") {
    fault_server server;
    server.on("/r", {action::respond(200, "body")});
    client http;
    const std::string big(4096, 'b');  // over libcurl's Expect: 100-continue threshold
    CHECK(http.perform(request::head(server.url("/r"))).body().empty());
    CHECK(http.perform(request::put(server.url("/r"), "put-body")).ok());
    CHECK(http.perform(request::delete_(server.url("/r"))).ok());
    CHECK(http.perform(request::patch(server.url("/r"), "patch-body")).ok());
    CHECK(http.perform(request::post(server.url("/r"), big).add_header("Content-Type", "text/plain")).ok());
    CHECK(http.perform(request::post(server.url("/r"), "").add_header("X-Empty", "")).ok());
    CHECK(http.perform(request::get(server.url("/r"))).ok());  // after a POST: a GET again

    const auto seen = server.requests();
    REQUIRE(seen.size() == 7);
    CHECK(seen[0].method == "HEAD");
    CHECK(seen[1].method == "PUT");
    CHECK(seen[1].body == "put-body");
    CHECK_FALSE(seen[1].header("Idempotency-Key"));
    CHECK(seen[2].method == "DELETE");
    CHECK(seen[2].body.empty());
    CHECK(seen[3].method == "PATCH");
    CHECK(seen[3].body == "patch-body");
    CHECK(seen[3].header("Idempotency-Key"));  // PATCH is not idempotent
    CHECK(seen[4].method == "POST");
    CHECK(seen[4].body == big);
    CHECK_FALSE(seen[4].header("Expect"));  // no 100-continue round trip
    CHECK(seen[4].header("Content-Type") == "text/plain");
    const auto key = seen[4].header("Idempotency-Key").value_or("");
    REQUIRE(key.size() == 38);  // an RFC 9651 string: the UUID in quotes
    CHECK(key.front() == '"');
    CHECK(key.back() == '"');
    CHECK(resil::idempotency_key::parse(key.substr(1, 36)));
    CHECK(seen[5].header("Content-Length") == "0");
    CHECK(seen[5].header("X-Empty") == "");
    CHECK(seen[5].header("Idempotency-Key") != seen[4].header("Idempotency-Key"));  // one key per operation
    CHECK(seen[6].method == "GET");
    CHECK(seen[6].body.empty());
}

TEST_CASE("curl client: the key header's forms, and the caller's own key") {
    fault_server server;
    server.on("/pay", {action::respond(201)});
    client unquoted({.idempotency_key = resil::curl::key_header_format::unquoted});
    client none({.idempotency_key = resil::curl::key_header_format::none});

    resil::context ctx;
    CHECK(unquoted.perform(request::post(server.url("/pay"), "{}"), ctx).ok());
    CHECK(ctx.has_idempotency_key());
    CHECK(none.perform(request::post(server.url("/pay"), "{}")).ok());
    resil::context own;
    const auto caller_key = resil::idempotency_key::v4();
    CHECK(none.perform(request::post(server.url("/pay"), "{}").add_header("Idempotency-Key", caller_key.to_string()), own)
              .ok());
    resil::context opaque;
    CHECK(none.perform(request::post(server.url("/pay"), "{}").add_header("idempotency-key", "order-7"), opaque).ok());

    const auto seen = server.requests();
    REQUIRE(seen.size() == 4);
    CHECK(seen[0].header("Idempotency-Key") == ctx.idempotency_key().to_string());
    CHECK_FALSE(seen[1].header("Idempotency-Key"));
    CHECK(seen[2].header("Idempotency-Key") == caller_key.to_string());
    // The context learns that the operation is keyed, so the retry policy may retry it.
    CHECK(own.has_idempotency_key());
    CHECK(own.idempotency_key() == caller_key);
    CHECK(opaque.safe_to_repeat());
    CHECK(seen[3].header("Idempotency-Key") == "order-7");
    int keys = 0;
    for (const auto& [n, v] : seen[3].headers) keys += resil_test::iequals_ascii(n, "Idempotency-Key");
    CHECK(keys == 1);  // the caller's replaces the client's, never both
}

TEST_CASE("curl client: connection refused is never sent, so even a POST is retried") {
    const auto url = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/orders";
    client http;
    const auto r = http.perform(request::post(url, "{}"));
    CHECK(r.transport() == transport_status::connect_failed);
    CHECK(r.curl_code() == CURLE_COULDNT_CONNECT);
    CHECK_FALSE(r.may_have_reached_server());
    CHECK(r.status() == 0);
    CHECK_FALSE(r.error_message().empty());
    CHECK(resil::curl::classify(r).verdict == verdict::retryable);

    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    client bare({.idempotency_key = resil::curl::key_header_format::none});  // no key: "never sent" suffices
    const auto post = request::post(url, "{}");
    const auto out = pipe([&](resil::context& ctx) { return bare.perform(post, ctx); });
    CHECK(attempts.load() == 3);
    CHECK(out.reason() == reason::retries_exhausted);
    CHECK(out->transport() == transport_status::connect_failed);
}

TEST_CASE("curl client: a connect timeout fires at the connect limit, never sent") {
    resil_test::full_backlog_listener full;
    client http;
    auto pipe = resil::pipeline(resil::timeout_policy{{.connect = 100ms, .read = 1s, .total = 2s}});
    const auto t0 = steady::now();
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(full.url("/x"), "{}"), ctx); });
    const auto took = since(t0);
    REQUIRE(out.has_value());
    CHECK(out->transport() == transport_status::connect_timeout);
    CHECK(out->curl_code() == CURLE_OPERATION_TIMEDOUT);
    CHECK_FALSE(out->may_have_reached_server());
    CHECK(out.verdict() == verdict::retryable);
    CHECK(took >= 100ms);
    CHECK(took < 100ms + slack);
}

TEST_CASE("curl client: silence longer than the read limit trips it within a few ms") {
    fault_server server;
    server.on("/slow", {action::hang()});
    client http;
    resil::context ctx;
    ctx.set_timeouts({.connect = 1s, .read = 150ms, .total = 5s});
    const auto t0 = steady::now();
    const auto r = http.perform(request::get(server.url("/slow")), ctx);
    const auto took = since(t0);
    CHECK(r.transport() == transport_status::read_timeout);
    CHECK(r.curl_code() == CURLE_OPERATION_TIMEDOUT);
    CHECK(r.may_have_reached_server());
    CHECK(resil::curl::classify(r).verdict == verdict::ambiguous);
    CHECK(took >= 150ms);
    CHECK(took < 150ms + slack);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("curl client: bytes trickling faster than the read limit never trip it") {
    fault_server server;
    server.on("/drip", {action::drip("abcdefgh", 40ms)});
    client http;
    resil::context ctx;
    ctx.set_timeouts({.connect = 1s, .read = 150ms, .total = 5s});
    const auto t0 = steady::now();
    const auto r = http.perform(request::get(server.url("/drip")), ctx);
    CHECK(r.ok());
    CHECK(r.body() == "abcdefgh");
    CHECK(since(t0) >= 300ms);  // twice the read limit, in all
}

TEST_CASE("curl client: 503 then 200 under a retry policy succeeds on attempt 2") {
    fault_server server;
    server.on("/flaky", {action::respond(503, "busy"), action::respond(200, "fine")});
    client http;
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/flaky")), ctx); });
    REQUIRE(out.ok());
    CHECK(out->body() == "fine");
    CHECK(attempts.load() == 2);
    CHECK(server.requests("/flaky").size() == 2);
}

TEST_CASE("curl client: a POST that timed out after the server read it") {
    fault_server server;
    server.on("/charge", {action::hang(), action::hang(), action::respond(201, "charged")});
    // The read limit times the hangs out, and must still let the last
    // answer in on a loaded machine: 400 ms, not 100.
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries},
                                      resil::timeout_policy{{.connect = 1s, .read = 400ms, .total = 3s}});

    SECTION("without a key it is not retried: the charge may have happened") {
        client http({.idempotency_key = resil::curl::key_header_format::none});
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/charge"), "{}"), ctx); });
        CHECK(out.reason() == reason::unsafe_to_retry);
        CHECK(out.verdict() == verdict::ambiguous);
        CHECK(out->transport() == transport_status::read_timeout);
        CHECK(server.requests("/charge").size() == 1);
    }
    SECTION("with a key it is retried, and the server sees the same key every time") {
        client http;
        resil::context ctx;
        const auto out = pipe.execute(ctx, [&](resil::context& c) { return http.perform(request::post(server.url("/charge"), "{}"), c); });
        REQUIRE(out.ok());
        CHECK(out->status() == 201);
        const auto seen = server.requests("/charge");
        REQUIRE(seen.size() == 3);
        const auto key = seen[0].header("Idempotency-Key");
        REQUIRE(key);
        CHECK(*key == "\"" + ctx.idempotency_key().to_string() + "\"");
        CHECK(seen[1].header("Idempotency-Key") == key);
        CHECK(seen[2].header("Idempotency-Key") == key);
    }
}

TEST_CASE("curl client: each request is judged on its own, not on what the context saw before") {
    fault_server server;
    server.on("/catalog", {action::respond(200, "ok")});
    server.on("/charge", {action::hang(), action::hang(), action::respond(201, "charged")});
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries},
                                      resil::timeout_policy{{.connect = 1s, .read = 100ms, .total = 2s}});

    SECTION("a GET first does not make a later POST repeatable without a key") {
        client http({.idempotency_key = resil::curl::key_header_format::none});
        const auto out = pipe([&](resil::context& ctx) {
            (void)http.perform(request::get(server.url("/catalog")), ctx);  // marks the context idempotent
            return http.perform(request::post(server.url("/charge"), "{}"), ctx);
        });
        CHECK(out.reason() == reason::unsafe_to_retry);
        CHECK(server.requests("/charge").size() == 1);
    }
    SECTION("a key in the context that is never sent does not make a POST repeatable") {
        client http({.idempotency_key = resil::curl::key_header_format::none});
        resil::context ctx{resil::call_options{.idempotency_key = resil::idempotency_key::v4()}};
        const auto out = pipe.execute(ctx, [&](resil::context& c) { return http.perform(request::post(server.url("/charge"), "{}"), c); });
        CHECK(out.reason() == reason::unsafe_to_retry);
        CHECK(server.requests("/charge").size() == 1);
        CHECK_FALSE(server.requests("/charge")[0].header("Idempotency-Key"));
    }
    SECTION("after a GET, a POST still carries the operation's key and is retried with it") {
        client http;
        const auto out = pipe([&](resil::context& ctx) {
            (void)http.perform(request::get(server.url("/catalog")), ctx);
            return http.perform(request::post(server.url("/charge"), "{}"), ctx);
        });
        REQUIRE(out.ok());
        const auto seen = server.requests("/charge");
        REQUIRE(seen.size() == 3);
        REQUIRE(seen[0].header("Idempotency-Key"));
        CHECK(seen[2].header("Idempotency-Key") == seen[0].header("Idempotency-Key"));
    }
}

TEST_CASE("curl client: 409 on a keyed request is retried with the same key") {
    fault_server server;
    server.on("/orders", {action::respond(409, "in progress"), action::respond(201, "created")});
    client http;
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries});
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/orders"), "{}"), ctx); });
    REQUIRE(out.ok());
    const auto seen = server.requests("/orders");
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].header("Idempotency-Key") == seen[1].header("Idempotency-Key"));
}

TEST_CASE("curl client: a server that resets mid-body or closes without answering") {
    fault_server server;
    server.on("/reset", {action::reset_mid_body()});
    server.on("/close", {action::close_after_request()});
    client http;
    const auto reset = http.perform(request::get(server.url("/reset")));
    CHECK(reset.transport() == transport_status::connection_lost);
    CHECK((reset.curl_code() == CURLE_RECV_ERROR || reset.curl_code() == CURLE_PARTIAL_FILE));
    CHECK(reset.may_have_reached_server());
    CHECK(reset.status() == 200);  // the head arrived before the reset
    CHECK(resil::curl::classify(reset).verdict == verdict::ambiguous);

    const auto closed = http.perform(request::post(server.url("/close"), "{}"));
    CHECK(closed.transport() == transport_status::connection_lost);
    CHECK(closed.curl_code() == CURLE_GOT_NOTHING);
    CHECK(closed.may_have_reached_server());
    CHECK(resil::curl::classify(closed).verdict == verdict::ambiguous);
}

TEST_CASE("curl client: a body over the limit ends the transfer, permanently") {
    fault_server server;
    server.on("/big", {action::respond(200, std::string(1000, 'x'))});
    client http({.max_body_bytes = 100});
    const auto r = http.perform(request::get(server.url("/big")));
    CHECK(r.transport() == transport_status::body_too_large);
    CHECK(r.body().size() <= 100);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);
}

TEST_CASE("curl client: cancellation from another thread aborts a hanging transfer at once") {
    fault_server server;
    server.on("/hang", {action::hang()});
    client http;
    std::stop_source stop;
    resil::context ctx{resil::call_options{.stop = stop.get_token()}};
    std::atomic<steady::time_point::rep> stopped_at{0};
    std::jthread canceller([&] {
        std::this_thread::sleep_for(150ms);
        stopped_at = steady::now().time_since_epoch().count();
        stop.request_stop();
    });
    const auto r = http.perform(request::get(server.url("/hang")), ctx);
    const auto returned = steady::now();
    canceller.join();
    CHECK(r.transport() == transport_status::cancelled);
    CHECK(r.curl_code() == CURLE_ABORTED_BY_CALLBACK);
    CHECK(r.may_have_reached_server());
    const auto latency = returned - steady::time_point{steady::duration{stopped_at.load()}};
    INFO("abort latency: " << std::chrono::duration_cast<std::chrono::microseconds>(latency).count() << " us");
    CHECK(latency < slack);  // 50 ms; more under sanitizers

    // A stop already requested: no I/O at all.
    const auto before = server.connections();
    const auto again = http.perform(request::get(server.url("/hang")), ctx);
    CHECK(again.transport() == transport_status::cancelled);
    CHECK_FALSE(again.may_have_reached_server());
    CHECK(server.connections() == before);
}

TEST_CASE("curl client: no time left means no transfer at all") {
    fault_server server;
    server.on("/x", {action::respond(200)});
    client http;
    resil::context ctx{resil::call_options{.deadline = resil::deadline::after(-1ms)}};
    const auto r = http.perform(request::post(server.url("/x"), "{}"), ctx);
    CHECK(r.transport() == transport_status::deadline_exceeded);
    CHECK(r.curl_code() == CURLE_OPERATION_TIMEDOUT);
    CHECK_FALSE(r.may_have_reached_server());
    CHECK(resil::curl::classify(r).verdict == verdict::retryable);
    CHECK(server.connections() == 0);

    // Through a pipeline, the deadline ends the call as deadline_exceeded.
    auto pipe = resil::pipeline(resil::deadline_policy{150ms}, resil::retry_policy{quick_retries});
    server.on("/slow", {action::respond_after(1s, 200)});
    const auto t0 = steady::now();
    const auto out = pipe([&](resil::context& c) { return http.perform(request::get(server.url("/slow")), c); });
    CHECK(out.reason() == reason::deadline_exceeded);
    CHECK(since(t0) < 150ms + slack);
}

TEST_CASE("curl client: negative timeouts are refused before any I/O") {
    fault_server server;
    client http;
    resil::context ctx;
    ctx.set_timeouts({.connect = 1s, .read = -5ms, .total = 1s});
    CHECK_THROWS_AS(http.perform(request::get(server.url("/x")), ctx), std::invalid_argument);
    CHECK(server.connections() == 0);
}

TEST_CASE("curl client: the remaining budget travels to the next hop") {
    fault_server server;
    server.on("/next", {action::respond(200)});
    client http({.propagate_deadline = true});
    auto pipe = resil::pipeline(resil::deadline_policy{2s}, resil::timeout_policy{{.total = 5s}});
    REQUIRE(pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/next")), ctx); }).ok());
    auto tight = resil::pipeline(resil::deadline_policy{2s}, resil::timeout_policy{{.total = 300ms}});
    REQUIRE(tight([&](resil::context& ctx) { return http.perform(request::get(server.url("/next")), ctx); }).ok());
    REQUIRE(http.perform(request::get(server.url("/next"))).ok());  // no deadline: the client's own total limit
    client quiet;
    REQUIRE(pipe([&](resil::context& ctx) { return quiet.perform(request::get(server.url("/next")), ctx); }).ok());

    const auto seen = server.requests();
    REQUIRE(seen.size() == 4);
    const auto budget = resil::decode_timeout_header(seen[0].header("grpc-timeout").value_or(""));
    REQUIRE(budget);
    CHECK(*budget <= 2s);
    CHECK(*budget > 2s - slack);
    const auto capped = resil::decode_timeout_header(seen[1].header("grpc-timeout").value_or(""));
    REQUIRE(capped);
    CHECK(*capped == 300ms);  // the attempt's total is the tighter bound
    // With no deadline this hop still gives up after client_options::limits.total
    // (5 min by default), and says so.
    CHECK(resil::decode_timeout_header(seen[2].header("grpc-timeout").value_or("")) == std::optional<resil::duration>{5min});
    CHECK_FALSE(seen[3].header("grpc-timeout"));  // off by default
}

TEST_CASE("curl client: one client is used by one thread at a time") {
    fault_server server;
    server.on("/hang", {action::hang()});
    client http;
    std::stop_source stop;
    std::atomic<bool> inside{false};
    std::jthread first([&] {
        resil::context ctx{resil::call_options{.stop = stop.get_token()}};
        inside = true;
        (void)http.perform(request::get(server.url("/hang")), ctx);
    });
    while (server.requests().empty()) std::this_thread::sleep_for(1ms);
    CHECK_THROWS_AS(http.perform(request::get(server.url("/hang"))), std::logic_error);
    // Filling a response in place is refused the same way, and leaves it as it was.
    auto kept = response::from_parts(299, {{"X-Mine", "1"}}, "mine");
    CHECK_THROWS_AS(http.perform(request::get(server.url("/hang")), kept), std::logic_error);
    CHECK(kept.status() == 299);
    CHECK(kept.body() == "mine");
    // Buffers given back meanwhile are dropped: the transfer in progress is not disturbed.
    http.recycle(response::from_parts(200, {}, std::string(100, 'r')));
    stop.request_stop();
    first.join();
    CHECK(inside.load());
    server.on("/hang", {action::respond(200)});
    CHECK(http.perform(request::get(server.url("/hang"))).ok());  // usable again afterwards

    client moved = std::move(http);
    CHECK(moved.perform(request::get(server.url("/hang"))).ok());
    CHECK_THROWS_AS(http.perform(request::get(server.url("/hang"))), std::logic_error);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("curl client: a response filled again holds the new reply only, whatever the old one held") {
    fault_server server;
    server.on("/busy", {action::raw(busy_chunked_reply("busy"))});
    server.on("/pay", {action::respond(201)});
    server.on("/ok", {action::respond(200, "fine", {{"X-New", "1"}})});
    client http;

    response r = http.perform(request::get(server.url("/busy")));
    REQUIRE(r.completed());
    REQUIRE(r.status() == 503);
    REQUIRE(r.retry_after() == std::chrono::seconds{7});
    REQUIRE(r.pushback() == 250ms);
    REQUIRE(r.trailers().size() == 1);

    resil::context ctx;
    response& same = http.perform(request::post(server.url("/pay"), "{}"), ctx, r);
    CHECK(&same == &r);
    CHECK(r.ok());
    CHECK(r.status() == 201);
    CHECK(r.body().empty());
    CHECK(r.carried_idempotency_key());
    CHECK(ctx.has_idempotency_key());
    CHECK_FALSE(r.header("Retry-After"));
    CHECK_FALSE(r.retry_after());
    CHECK_FALSE(r.pushback());
    CHECK(r.trailers().empty());
    CHECK(r.error_message().empty());

    http.perform(request::get(server.url("/ok")), r);
    const auto fresh = http.perform(request::get(server.url("/ok")));
    CHECK(r.status() == 200);
    CHECK(r.body() == "fine");
    CHECK_FALSE(r.carried_idempotency_key());
    CHECK(r.repeatable());
    CHECK(r.header("X-New") == "1");
    REQUIRE(r.headers().size() == fresh.headers().size());  // the same fields a new response gets
    for (std::size_t i = 0; i < r.headers().size(); ++i) CHECK(r.headers()[i].name == fresh.headers()[i].name);

    // A failure leaves nothing of the reply before it, and a success after it
    // nothing of the failure.
    const auto refused = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/";
    http.perform(request::get(refused), r);
    CHECK(r.transport() == transport_status::connect_failed);
    CHECK(r.status() == 0);
    CHECK(r.headers().empty());
    CHECK(r.body().empty());
    CHECK_FALSE(r.may_have_reached_server());
    CHECK_FALSE(r.error_message().empty());
    http.perform(request::get(server.url("/ok")), r);
    CHECK(r.ok());
    CHECK(r.curl_code() == CURLE_OK);
    CHECK(r.error_message().empty());
    CHECK(r.may_have_reached_server());

    // A request refused before any I/O leaves the response blank.
    CHECK_THROWS_AS(http.perform(request::post(server.url("/pay"), "{}").add_header("Idempotency-Key", ""), r),
                    std::invalid_argument);
    CHECK(r.status() == 0);
    CHECK(r.headers().empty());
    CHECK(r.body().empty());
}

TEST_CASE("curl client: the body limits hold in a reused response, whatever its buffer held") {
    fault_server server;
    const std::size_t limit = 600'000;
    server.on("/fits", {action::raw(chunked_body_reply(1'500'000))});
    server.on("/endless", {action::raw(chunked_body_reply(3u << 20))});
    server.on("/huge", {action::raw("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + std::string(100, 'x'), true)});
    server.on("/small", {action::respond(200, "small")});
    client roomy({.max_body_bytes = std::size_t{4} << 20});
    client strict({.limits = {1s, 5s, 10s}, .max_body_bytes = limit});

    response r = roomy.perform(request::get(server.url("/fits")));
    REQUIRE(r.ok());
    REQUIRE(r.body().size() == 1'500'000);

    strict.perform(request::get(server.url("/endless")), r);  // a buffer larger than the limit
    CHECK(r.transport() == transport_status::body_too_large);
    CHECK(r.body().size() <= limit);

    const auto t0 = steady::now();
    strict.perform(request::get(server.url("/huge")), r);
    CHECK(r.transport() == transport_status::body_too_large);
    CHECK(r.body().empty());  // refused before a byte of it
    CHECK(since(t0) < 5s);

    strict.perform(request::get(server.url("/small")), r);
    CHECK(r.ok());
    CHECK(r.body() == "small");

    // Grown in place, a body is as exact as in a new response.
    response grown = strict.perform(request::get(server.url("/small")));
    strict.perform(request::get(server.url("/endless")), grown);
    CHECK(grown.transport() == transport_status::body_too_large);
    CHECK(grown.body().capacity() <= limit);
}

TEST_CASE("curl client: recycle gives back buffers, never contents") {
    fault_server server;
    const std::string long_body(100, 'b');
    server.on("/busy", {action::raw(busy_chunked_reply(long_body))});
    server.on("/ok", {action::respond(200, "a body longer than a short string's")});
    client http({.max_body_bytes = std::size_t{1} << 20});

    response first = http.perform(request::get(server.url("/busy")));
    REQUIRE(first.status() == 503);
    REQUIRE(first.body() == long_body);
    const char* const buffer = first.body().data();
    http.recycle(std::move(first));

    const auto second = http.perform(request::get(server.url("/ok")));
    CHECK(second.ok());
    CHECK(second.body() == "a body longer than a short string's");
    CHECK(second.body().data() == buffer);  // built in the buffer given back
    CHECK_FALSE(second.header("Retry-After"));
    CHECK_FALSE(second.retry_after());
    CHECK_FALSE(second.pushback());
    CHECK(second.trailers().empty());
    // Only once: the response after it is a new one.
    const auto third = http.perform(request::get(server.url("/ok")));
    CHECK(third.body().data() != buffer);

    // A body buffer over the client's limit is not kept.
    auto oversized = response::from_parts(200, {}, std::string((std::size_t{2} << 20), 'z'));
    http.recycle(std::move(oversized));
    const auto after = http.perform(request::get(server.url("/ok")));
    CHECK(after.ok());
    CHECK(after.body().capacity() < (std::size_t{2} << 20));

    // A client moved from keeps nothing.
    client moved = std::move(http);
    http.recycle(response::from_parts(200, {}, "x"));  // NOLINT(bugprone-use-after-move)
    CHECK(moved.perform(request::get(server.url("/ok"))).ok());
}
