// resil::curl::client against servers that break the rules on purpose (a raw
// socket server on 127.0.0.1, tests/support/fault_server.hpp): connections
// closed after reading a request, replies that are not HTTP, bodies and heads
// larger than the limits, trailers that pose as control data. Each case is a
// promise of the adapter: an unsafe request reaches the server at most once,
// a broken server is a failure rather than a bad request, memory stays within
// the limits, and a deadline ends the attempt at the deadline.
#include <resil/circuit_breaker.hpp>
#include <resil/curl.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"
#include "support/attempts.hpp"
#include "support/fault_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::curl::client;
using resil::curl::request;
using resil::curl::transport_status;
using resil_test::action;
using resil_test::attempt_counter;
using resil_test::quick_retries;
using resil_test::fault_server;
using steady = std::chrono::steady_clock;

namespace {

// A chunked response: `status`, then `body` in chunks of `chunk` bytes, then
// the trailer lines (each without its CRLF).
std::string chunked_reply(int status, const std::string& body, std::size_t chunk,
                          const std::vector<std::string>& trailers = {}) {
    // The server closes the connection after a raw reply: say so, or libcurl
    // could send the next request on it and find it closed.
    std::string out = "HTTP/1.1 " + std::to_string(status) +
                      " Status\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    char size[32];
    for (std::size_t at = 0; at < body.size(); at += chunk) {
        const auto n = std::min(chunk, body.size() - at);
        std::snprintf(size, sizeof size, "%zx\r\n", n);
        out += size;
        out.append(body, at, n);
        out += "\r\n";
    }
    out += "0\r\n";
    for (const auto& t : trailers) out += t + "\r\n";
    out += "\r\n";
    return out;
}

}  // namespace

TEST_CASE("hostile server: an unkeyed POST whose reused connection closes after the server read it is sent once") {
    fault_server server;
    server.on("/warm", {action::respond(200, "warm")});
    server.on("/pay", {action::close_after_request(), action::respond(200, "paid")});
    client http({.idempotency_key = resil::curl::key_header_format::none});
    REQUIRE(http.perform(request::get(server.url("/warm"))).ok());  // leaves a kept-alive connection

    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/pay"), "{}"), ctx); });

    // libcurl would resend it on a new connection; the server would execute
    // the payment twice while the call reported one success.
    const auto paid = server.requests("/pay");
    REQUIRE(paid.size() == 1);
    CHECK(paid[0].connection == server.requests("/warm")[0].connection);
    CHECK_FALSE(out.ok());
    CHECK(out.verdict() == verdict::ambiguous);
    CHECK(out.reason() == reason::unsafe_to_retry);
    CHECK(attempts.load() == 1);
    CHECK(out->transport() == transport_status::connection_lost);
    CHECK(out->may_have_reached_server());
    CHECK(out->error_message().find("refused") != std::string_view::npos);

    // The client stays usable, and its next request goes out normally.
    CHECK(http.perform(request::get(server.url("/warm"))).ok());
}

TEST_CASE("hostile server: every send of a repeatable request is an attempt the pipeline counts") {
    fault_server server;
    server.on("/warm", {action::respond(200, "warm")});
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});

    SECTION("a keyed POST: the server sees exactly as many requests as attempts, all with one key") {
        server.on("/pay", {action::close_after_request(), action::respond(201, "paid")});
        client http;
        REQUIRE(http.perform(request::get(server.url("/warm"))).ok());
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/pay"), "{}"), ctx); });
        REQUIRE(out.ok());
        const auto seen = server.requests("/pay");
        CHECK(seen.size() == 2);
        CHECK(attempts.load() == 2);
        REQUIRE(seen.size() == 2);
        CHECK(seen[0].header("Idempotency-Key"));
        CHECK(seen[1].header("Idempotency-Key") == seen[0].header("Idempotency-Key"));
    }
    SECTION("a keyed POST against a server that always closes: 3 attempts are 3 requests, not 4") {
        server.on("/pay", {action::close_after_request()});
        client http;
        REQUIRE(http.perform(request::get(server.url("/warm"))).ok());
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/pay"), "{}"), ctx); });
        CHECK_FALSE(out.ok());
        CHECK(out.reason() == reason::retries_exhausted);
        CHECK(attempts.load() == 3);
        CHECK(server.requests("/pay").size() == 3);
    }
    SECTION("a GET") {
        server.on("/item", {action::close_after_request(), action::respond(200, "item")});
        client http;
        REQUIRE(http.perform(request::get(server.url("/warm"))).ok());
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/item")), ctx); });
        REQUIRE(out.ok());
        CHECK(out->body() == "item");
        CHECK(attempts.load() == 2);
        CHECK(server.requests("/item").size() == 2);
    }
}

TEST_CASE("hostile server: a reply that is not HTTP is a protocol error, retried when safe, a failure for the breaker") {
    const std::vector<std::pair<const char*, std::string>> replies = {
        {"a status code of five digits", "HTTP/1.1 99999 X\r\nContent-Length: 0\r\n\r\n"},
        {"an HTTP/0.9 reply", "hello there\r\n"},
        {"an unknown version", "HTTP/3.7 200 OK\r\nContent-Length: 0\r\n\r\n"},
        {"binary garbage", std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11)},
    };
    for (const auto& [what, bytes] : replies) {
        CAPTURE(what);
        fault_server server;
        server.on("/garbage", {action::raw(bytes)});
        server.on("/once", {action::raw(bytes), action::respond(200, "fine")});
        client http;

        const auto r = http.perform(request::get(server.url("/garbage")));
        CHECK(r.transport() == transport_status::protocol_error);
        CHECK(r.may_have_reached_server());
        CHECK(resil::curl::classify(r).verdict != verdict::permanent);

        // A GET may be repeated: it is retried and succeeds.
        const auto pipe = resil::pipeline(resil::retry_policy{quick_retries});
        const auto got = pipe([&](resil::context& ctx) { return http.perform(request::get(server.url("/once")), ctx); });
        CHECK(got.ok());
        CHECK(server.requests("/once").size() == 2);

        // An unkeyed POST may have been executed: ambiguous, sent once.
        client unkeyed({.idempotency_key = resil::curl::key_header_format::none});
        const auto posted = pipe([&](resil::context& ctx) { return unkeyed.perform(request::post(server.url("/garbage"), "{}"), ctx); });
        CHECK(posted.verdict() == verdict::ambiguous);
        CHECK(posted.reason() == reason::unsafe_to_retry);

        // A backend answering garbage opens the breaker.
        resil::circuit_breaker breaker{{.mode = resil::breaker_mode::consecutive_failures, .consecutive_failures = 3}};
        const auto guarded = resil::pipeline(std::ref(breaker));
        for (int i = 0; i < 3; ++i)
            (void)guarded([&](resil::context& ctx) { return http.perform(request::get(server.url("/garbage")), ctx); });
        CHECK(breaker.state() == resil::circuit_state::open);
    }
}

TEST_CASE("hostile server: a field holding NUL or a bare CR is a malformed reply, not a field") {
    for (const auto& field : {std::string("X-Bad: a\0b", 11), std::string("X-Bad: a\rb")}) {
        fault_server server;
        server.on("/bad", {action::raw("HTTP/1.1 200 OK\r\n" + field + "\r\nContent-Length: 2\r\n\r\nok")});
        client http;
        const auto r = http.perform(request::get(server.url("/bad")));
        CHECK(r.transport() == transport_status::protocol_error);
        CHECK(r.may_have_reached_server());
    }
}

TEST_CASE("hostile server: a body announced over the limit is refused before a byte of it is read") {
    fault_server server;
    // The head announces 10 MB, 100 bytes follow, then silence.
    server.on("/huge", {action::raw("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + std::string(100, 'x'), true)});
    server.on("/head", {action::raw("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\n", true)});
    client http({.limits = {1s, 5s, 10s}, .max_body_bytes = std::size_t{1} << 20});

    const auto t0 = steady::now();
    const auto r = http.perform(request::get(server.url("/huge")));
    CHECK(r.transport() == transport_status::body_too_large);
    CHECK(r.body().empty());
    CHECK(resil_test::since(t0) < 5s);  // not waiting for the read limit
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);

    // A HEAD's Content-Length announces no body.
    const auto head = http.perform(request::head(server.url("/head")));
    CHECK(head.transport() == transport_status::completed);
    CHECK(head.status() == 200);

    // A size too large for any integer is over the limit too, not an overflow.
    server.on("/absurd", {action::raw("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\n", true)});
    CHECK(http.perform(request::get(server.url("/absurd"))).transport() == transport_status::body_too_large);
}

TEST_CASE("hostile server: a chunked body never makes the client hold more than the limit") {
    fault_server server;
    const std::size_t limit = 600'000;
    server.on("/endless", {action::raw(chunked_reply(200, std::string(3u << 20, 'a'), 16'384))});
    const std::string fits(1'500'000, 'b');
    server.on("/fits", {action::raw(chunked_reply(200, fits, 65'536))});
    client http({.max_body_bytes = limit});

    const auto r = http.perform(request::get(server.url("/endless")));
    CHECK(r.transport() == transport_status::body_too_large);
    CHECK(r.body().size() <= limit);
    CHECK(r.body().capacity() <= limit);  // doubling would have reached 1 MiB

    client roomy({.max_body_bytes = std::size_t{4} << 20});
    const auto ok = roomy.perform(request::get(server.url("/fits")));
    REQUIRE(ok.ok());
    CHECK(ok.body() == fits);
    CHECK(ok.body().capacity() <= fits.size() + resil::curl::detail::body_growth_step);
}

TEST_CASE("hostile server: endless header fields stop at max_header_bytes") {
    fault_server server;
    std::string head = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 5000; ++i) head += "X-Filler-" + std::to_string(i) + ": " + std::string(60, 'f') + "\r\n";
    server.on("/fields", {action::raw(head + "Content-Length: 0\r\n\r\n")});
    client http({.max_header_bytes = 64 * 1024});
    const auto r = http.perform(request::get(server.url("/fields")));
    CHECK(r.transport() == transport_status::headers_too_large);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);
    CHECK_THROWS_AS(client({.max_header_bytes = 0}), std::invalid_argument);
}

TEST_CASE("hostile server: an empty Idempotency-Key is refused before any I/O") {
    fault_server server;
    server.on("/pay", {action::respond(201, "paid")});
    client http;
    for (const char* blank : {"", "   ", "\"\"", "\" \""}) {
        CAPTURE(blank);
        CHECK_THROWS_AS(http.perform(request::post(server.url("/pay"), "{}").add_header("Idempotency-Key", blank)),
                        std::invalid_argument);
    }
    CHECK(server.requests().empty());
    // A real key of the caller's own goes out as it is.
    const auto r = http.perform(request::post(server.url("/pay"), "{}").add_header("Idempotency-Key", "order-17"));
    CHECK(r.status() == 201);
    REQUIRE(server.requests("/pay").size() == 1);
    CHECK(server.requests("/pay")[0].header("Idempotency-Key") == "order-17");
}

TEST_CASE("hostile server: 421 and 408 are retried, for any method, on a new connection") {
    for (const int status : {421, 408}) {
        CAPTURE(status);
        fault_server server;
        server.on("/pay", {action::respond(status, "not here"), action::respond(201, "paid")});
        client http({.idempotency_key = resil::curl::key_header_format::none});
        std::atomic<int> attempts{0};
        const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
        const auto out = pipe([&](resil::context& ctx) { return http.perform(request::post(server.url("/pay"), "{}"), ctx); });
        REQUIRE(out.ok());
        CHECK(out->status() == 201);
        CHECK(attempts.load() == 2);
        const auto seen = server.requests("/pay");
        REQUIRE(seen.size() == 2);
        CHECK(seen[1].connection != seen[0].connection);
        // ...and only that attempt: the one after it opens none.
        CHECK(http.perform(request::get(server.url("/pay"))).status() == 201);
        CHECK(server.connections() == 2);
    }
}

TEST_CASE("hostile server: trailers are kept apart from the head, and never read for hints") {
    fault_server server;
    server.on("/busy", {action::raw(chunked_reply(503, "busy", 4, {"Retry-After: 7", "HTTP/1.1: 200 OK", "X-Checksum: abc"}))});
    client http;
    const auto r = http.perform(request::get(server.url("/busy")));
    CAPTURE(resil::curl::to_string(r.transport()), r.error_message(), static_cast<int>(r.curl_code()));
    REQUIRE(r.completed());
    CHECK(r.status() == 503);
    CHECK(r.body() == "busy");
    CHECK(r.header("Transfer-Encoding") == "chunked");  // a trailer line starting "HTTP/" cleared nothing
    CHECK_FALSE(r.header("Retry-After"));
    CHECK_FALSE(r.retry_after());
    CHECK(r.trailers().find("Retry-After") == "7");
    CHECK(r.trailers().find("X-Checksum") == "abc");
    CHECK(r.trailers().size() == 2);  // "HTTP/1.1" is no field name
    CHECK_FALSE(resil::curl::classify(r).hint.retry_after);

    // A trailer line that is no field at all: libcurl 7.88 either ends the
    // transfer (code 43, depending on how the bytes arrive) or lets it pass.
    // Either way it is the server's doing, never a bad request of ours, and
    // never kept as a field.
    server.on("/broken", {action::raw(chunked_reply(200, "data", 4, {"not a field"}))});
    const auto broken = http.perform(request::get(server.url("/broken")));
    CAPTURE(resil::curl::to_string(broken.transport()), static_cast<int>(broken.curl_code()));
    if (broken.completed()) {
        CHECK(broken.body() == "data");
        CHECK(broken.trailers().empty());
    } else {
        CHECK(broken.transport() == transport_status::protocol_error);
        CHECK(resil::curl::classify(broken).verdict == verdict::ambiguous);
    }
}

// A steady clock whose first reading is slow to return: time passes between
// the reading the context clamps the attempt's limits with and the start of
// the transfer (as when the thread is preempted there).
struct lagging_clock {
    std::shared_ptr<std::atomic<int>> slow_reads = std::make_shared<std::atomic<int>>(1);
    resil::time_point now() const {
        const auto reading = resil::steady_clock{}.now();
        if (slow_reads->fetch_sub(1) > 0) std::this_thread::sleep_for(5ms);
        return reading;
    }
    bool sleep_for(resil::duration d, const std::stop_token& stop) const { return resil::steady_clock{}.sleep_for(d, stop); }
};

TEST_CASE("hostile server: a deadline ends the attempt at the deadline, not after it") {
    fault_server server;
    server.on("/slow", {action::hang()});
    client http;
    // The smallest of a few tries: a loaded machine can only add to it.
    auto best = steady::duration::max();
    for (int i = 0; i < 3; ++i) {
        const lagging_clock clock;
        resil::basic_context<lagging_clock> ctx(resil::basic_call_options<lagging_clock>{
            .deadline = resil::basic_deadline<lagging_clock>::at(resil::steady_clock{}.now() + 80ms, clock)});
        const auto r = http.perform(request::get(server.url("/slow")), ctx);
        const auto ended = steady::now();
        CHECK(r.transport() == transport_status::total_timeout);
        best = std::min(best, ended - ctx.deadline().when());
    }
    // Counted from the start of the transfer, the limit would end it 5 ms late.
    CAPTURE(std::chrono::duration_cast<std::chrono::microseconds>(best).count());
    CHECK(best < 2ms);
}

TEST_CASE("hostile server: an option libcurl refuses sends nothing and leaks nothing of the previous response") {
    fault_server server;
    server.on("/a", {action::respond(404, "no")});
    client http;
    REQUIRE(http.perform(request::get(server.url("/a"))).status() == 404);

    // libcurl refuses strings over 8 MB and would keep the previous URL.
    const auto r = http.perform(request::get(server.url("/a?") + std::string(8'000'001, 'q')));
    CHECK(r.transport() == transport_status::invalid_request);
    CHECK(r.status() == 0);
    CHECK_FALSE(r.may_have_reached_server());
    CHECK(r.error_message().find("CURLOPT_URL") != std::string_view::npos);
    CHECK(server.requests().size() == 1);

    const auto again = http.perform(request::get(server.url("/a")));
    CHECK(again.status() == 404);
    CHECK(server.requests().size() == 2);
}

TEST_CASE("hostile server: running out of memory while reading an outcome leaves the client usable") {
    if (!resil_test::counting_allocations) SUCCEED("this build's runtime owns operator new; nothing to inject");
    else {
        const auto url = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/nobody-home";
        client http;
        REQUIRE(http.perform(request::get(url)).transport() == transport_status::connect_failed);  // warm: buffers grown
        const auto req = request::get(url);
        bool threw = false;
        resil_test::refuse_allocations.store(true);
        try {
            (void)http.perform(req);  // the error text needs memory
        } catch (const std::bad_alloc&) {
            threw = true;
        }
        resil_test::refuse_allocations.store(false);
        CHECK(threw);
        const auto r = http.perform(request::get(url));
        CHECK(r.transport() == transport_status::connect_failed);
        CHECK(r.error_message().find("curl_multi_add_handle") == std::string_view::npos);
    }
}
