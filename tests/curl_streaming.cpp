// resil::curl::client::stream against the fault server's streamed bodies
// (tests/support/fault_server.hpp, action::stream): Server-Sent Events with
// gaps — a late first byte, a pause between chunks, a cut mid-stream — and
// the rule that a stream is retried only while no byte has reached the sink.
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support/attempts.hpp"
#include "support/fault_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
using resil::curl::client;
using resil::curl::request;
using resil::curl::response;
using resil::curl::sse_stream;
using resil::curl::stream_action;
using resil::curl::transport_status;
using resil_test::action;
using resil_test::attempt_counter;
using resil_test::fault_server;
using resil_test::quick_retries;
using resil_test::slack;
using steady = std::chrono::steady_clock;

namespace {

struct seen_event {
    std::string type;
    std::string data;
    std::string id;
};

// Collects the events of a stream (copies: the views live for the call only).
struct collector {
    std::vector<seen_event> events;
    void operator()(const resil::sse::event& e) { events.push_back({std::string(e.type), std::string(e.data), std::string(e.id)}); }
};

// A sink keeping every chunk, to compare with what the server sent.
struct chunk_recorder {
    std::string bytes;
    int chunks = 0;
    stream_action operator()(std::string_view chunk) {
        bytes.append(chunk);
        ++chunks;
        return stream_action::next;
    }
};

}  // namespace

TEST_CASE("curl stream: a normal event stream, split anywhere, every event delivered in order") {
    fault_server server;
    // Pieces cut inside a line, inside a CRLF and inside a UTF-8 character;
    // comments, ids, an event type, multi-line data, a retry field.
    server.on("/sse", {action::stream({{0ms, ": hello\r\n\r\nid: 1\r\ndata: first\r"},
                                       {5ms, "\n\r\nevent: token\ndata: line one\ndata: li"},
                                       {5ms, "ne two\nid: 2\n\ndata: caf\xC3"},
                                       {5ms, "\xA9\nretry: 1500\n\n:ping\ndata: last\n\n"}})});
    client http;
    collector got;
    std::vector<std::string> comments;
    sse_stream events(std::ref(got), {}, [&](std::string_view c) { comments.emplace_back(c); });
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/sse")), ctx, events, {.first_byte = 2s, .idle = 2s});

    REQUIRE(r.transport() == transport_status::completed);
    CHECK(r.ok());
    CHECK(r.body().empty());  // the body went to the sink, not into the response
    CHECK(r.delivered_bytes() > 0);
    CHECK(r.interrupted_by() == transport_status::completed);
    CHECK(events.finish() == resil::sse::error_code::none);
    CHECK_FALSE(events.failed());
    REQUIRE(got.events.size() == 4);
    CHECK(got.events[0].type == "message");
    CHECK(got.events[0].data == "first");
    CHECK(got.events[0].id == "1");
    CHECK(got.events[1].type == "token");
    CHECK(got.events[1].data == "line one\nline two");
    CHECK(got.events[1].id == "2");
    CHECK(got.events[2].data == "caf\xC3\xA9");
    CHECK(got.events[2].id == "2");
    CHECK(got.events[3].data == "last");
    CHECK(events.reader().reconnection_time() == 1500ms);
    CHECK(comments == std::vector<std::string>{" hello", "ping"});
    CHECK(events.last_event_id() == "2");
}

TEST_CASE("curl stream: the sink gets the bytes as sent, without a copy into the response") {
    fault_server server;
    server.on("/raw", {action::stream({{0ms, "abc"}, {20ms, "def"}, {20ms, "ghi"}},
                                      false, {{"Content-Type", "application/octet-stream"}})});
    client http;
    chunk_recorder sink;
    response out = http.perform(request::get(server.url("/other")));  // a response to fill again
    resil::context ctx;
    http.stream(request::get(server.url("/raw")), ctx, out, sink);
    CHECK(out.ok());
    CHECK(sink.bytes == "abcdefghi");
    CHECK(sink.chunks == 3);  // 20 ms apart: one callback each
    CHECK(out.delivered_bytes() == 9);
    CHECK(out.body().empty());
}

TEST_CASE("curl stream: a late first byte fires the first-byte limit; a GET is retried") {
    fault_server server;
    const auto late = action::stream({{400ms, "data: late\n\n"}});
    const auto on_time = action::stream({{0ms, "data: on time\n\n"}});
    server.on("/late", {late, on_time});
    client http;

    SECTION("one attempt: first_byte_timeout, nothing delivered, retryable for a GET") {
        collector got;
        sse_stream events(std::ref(got));
        resil::context ctx;
        const auto t0 = steady::now();
        const auto r = http.stream(request::get(server.url("/late")), ctx, events, {.first_byte = 100ms});
        const auto took = resil_test::since(t0);
        CHECK(r.transport() == transport_status::first_byte_timeout);
        CHECK(r.curl_code() == CURLE_OPERATION_TIMEDOUT);
        CHECK(r.delivered_bytes() == 0);
        CHECK(got.events.empty());
        CHECK(took >= 100ms);
        CHECK(took < 100ms + slack + 100ms);
        CHECK(r.may_have_reached_server());
        CHECK(r.repeatable());
        CHECK(resil::curl::classify(r).verdict == verdict::ambiguous);  // idempotent: the retry policy repeats it
    }
    SECTION("through a retry policy: the second attempt streams") {
        collector got;
        sse_stream events(std::ref(got));
        std::atomic<int> attempts{0};
        const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
        const auto get = request::get(server.url("/late"));
        const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, events, {.first_byte = 100ms}); });
        CHECK(out.ok());
        CHECK(attempts.load() == 2);
        CHECK(server.requests("/late").size() == 2);
        REQUIRE(got.events.size() == 1);
        CHECK(got.events[0].data == "on time");
    }
}

TEST_CASE("curl stream: a keyed POST whose first byte is late is retried with the same key") {
    fault_server server;
    server.on("/complete", {action::stream({{400ms, "data: late\n\n"}}), action::stream({{0ms, "data: ok\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto post = request::post(server.url("/complete"), R"({"prompt":"hi"})");
    const auto out = pipe([&](resil::context& ctx) { return http.stream(post, ctx, events, {.first_byte = 100ms}); });
    CHECK(out.ok());
    CHECK(attempts.load() == 2);
    const auto seen = server.requests("/complete");
    REQUIRE(seen.size() == 2);
    REQUIRE(seen[0].header("Idempotency-Key"));
    CHECK(seen[0].header("Idempotency-Key") == seen[1].header("Idempotency-Key"));
}

TEST_CASE("curl stream: a gap after data reached the caller ends the call, never retried") {
    fault_server server;
    server.on("/gap", {action::stream({{0ms, "id: 7\ndata: one\n\n"}, {400ms, "data: two\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto get = request::get(server.url("/gap"));
    const auto t0 = steady::now();
    const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, events, {.idle = 100ms}); });
    const auto took = resil_test::since(t0);
    CHECK(attempts.load() == 1);
    CHECK(server.requests("/gap").size() == 1);
    CHECK(out.reason() == reason::failed);
    CHECK(out->transport() == transport_status::stream_interrupted);
    CHECK(out->interrupted_by() == transport_status::read_timeout);
    CHECK(out->status() == 200);
    CHECK(out->delivered_bytes() == std::string_view("id: 7\ndata: one\n\n").size());
    CHECK(std::string(out->error_message()).find("interrupted") != std::string::npos);
    CHECK(std::string(out->error_message()).find("idle") != std::string::npos);
    CHECK(resil::curl::classify(*out).verdict == verdict::permanent);
    CHECK(took >= 100ms);
    CHECK(took < 100ms + slack + 100ms);
    REQUIRE(got.events.size() == 1);
    CHECK(got.events[0].data == "one");
}

TEST_CASE("curl stream: the idle limit starts with the body; before a byte reached the sink it is a read timeout") {
    fault_server server;
    // Headers at once, then 400 ms of silence before the body: the idle limit
    // (100 ms) has not started; the first-byte limit (none here) governs.
    server.on("/silent", {action::stream({{400ms, "data: x\n\n"}})});
    // A 503 whose body stalls: its bytes are kept, not delivered, so the idle
    // limit ends it as a plain read timeout — retryable for a GET.
    server.on("/stalled-error", {action::stream({{0ms, "overloaded, "}, {400ms, "try later"}}, false,
                                                {{"Content-Type", "text/plain"}}, 503)});
    client http;
    chunk_recorder sink;
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/silent")), ctx, sink, {.idle = 100ms});
    CHECK(r.ok());
    CHECK(sink.bytes == "data: x\n\n");

    resil::context again;
    const auto stalled = http.stream(request::get(server.url("/stalled-error")), again, sink, {.idle = 100ms});
    CHECK(stalled.transport() == transport_status::read_timeout);
    CHECK(stalled.delivered_bytes() == 0);
    CHECK(stalled.body() == "overloaded, ");  // an error's body is the response's, never the sink's
    CHECK(std::string(stalled.error_message()).find("idle") != std::string::npos);
    CHECK(resil::curl::classify(stalled).verdict == verdict::ambiguous);  // a GET: the retry policy repeats it
    CHECK(sink.bytes == "data: x\n\n");
}

TEST_CASE("curl stream: a cut mid-stream after data reached the caller is not retried") {
    fault_server server;
    server.on("/cut", {action::stream({{0ms, "id: 1\ndata: one\n\n"}, {10ms, "id: 2\ndata: two\n\ndata: thr"}}, true),
                       action::stream({{0ms, "data: again\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got), {.resume = true});
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto get = request::get(server.url("/cut"));
    const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, events); });
    CHECK(attempts.load() == 1);
    CHECK(server.requests("/cut").size() == 1);
    CHECK(out->transport() == transport_status::stream_interrupted);
    CHECK(out->interrupted_by() == transport_status::connection_lost);
    CHECK(resil::curl::to_string(out->transport()) == "stream_interrupted");
    CHECK(std::string(out->error_message()).find("interrupted after") != std::string::npos);
    CHECK(resil::curl::classify(*out).verdict == verdict::permanent);
    REQUIRE(got.events.size() == 2);
    CHECK(got.events[1].data == "two");

    // Resuming is the caller's explicit step: the same request, with the last id.
    const auto resumed = events.resume_request(get);
    REQUIRE(resumed);
    CHECK(resumed->header("Last-Event-ID") == "2");
    resil::context ctx;
    const auto again = http.stream(*resumed, ctx, events);
    CHECK(again.ok());
    REQUIRE(got.events.size() == 3);
    CHECK(got.events[2].data == "again");  // the cut event "thr" was dropped, never dispatched
    const auto seen = server.requests("/cut");
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].header("Last-Event-ID") == "2");
    CHECK_FALSE(seen[0].header("Last-Event-ID"));
}

TEST_CASE("curl stream: a resumed request keeps the original's endpoint and fields, with one Last-Event-ID") {
    fault_server server;
    server.on("/pinned", {action::stream({{0ms, "id: 4\ndata: one\n\n"}}), action::stream({{0ms, "data: two\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got), {.resume = true});
    // The URL's host is never resolved: only the pin reaches the server.
    const auto get = request::get("http://events.test:" + std::to_string(server.port()) + "/pinned")
                         .add_header("Authorization", "Bearer t")
                         .add_header("last-event-id", "stale")
                         .connect_to({"127.0.0.1", server.port()});
    resil::context ctx;
    const auto first = http.stream(get, ctx, events);
    INFO(first.error_message());
    CHECK(first.ok());
    const auto resumed = events.resume_request(get);
    REQUIRE(resumed);
    CHECK(resumed->pinned_endpoint() == get.pinned_endpoint());
    CHECK(resumed->method() == "GET");
    CHECK(resumed->url() == get.url());
    CHECK(resumed->header("Authorization") == "Bearer t");
    int ids = 0;
    for (const auto& field : resumed->headers()) ids += resil::curl::detail::iequals(field.name, "Last-Event-ID");
    CHECK(ids == 1);
    CHECK(resumed->header("Last-Event-ID") == "4");
    resil::context again;
    const auto second = http.stream(*resumed, again, events);
    INFO(second.error_message());
    CHECK(second.ok());
    REQUIRE(got.events.size() == 2);
    const auto seen = server.requests("/pinned");
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].header("Last-Event-ID") == "4");
    CHECK(seen[1].header("Host") == "events.test:" + std::to_string(server.port()));
}

TEST_CASE("curl stream: each call starts an event stream's state anew, whatever it is answered with") {
    fault_server server;
    server.on("/json", {action::stream({{0ms, R"({"error":"wrong endpoint"})"}}, false,
                                       {{"Content-Type", "application/json"}})});
    server.on("/events", {action::stream({{0ms, "id: 1\ndata: one\n\ndata: two\n\n"}})});
    server.on("/down", {action::respond(503, "down")});
    server.on("/empty", {action::respond(200, "", {{"Content-Type", "text/event-stream"}})});
    client http;
    int seen = 0;
    sse_stream events([&](const resil::sse::event&) {
        ++seen;
        return stream_action::stop;
    });
    const auto call = [&](const char* path) {
        resil::context ctx;
        return http.stream(request::get(server.url(path)), ctx, events);
    };

    CHECK(call("/json").transport() == transport_status::stream_interrupted);
    CHECK(events.failed());
    // A non-2xx never reaches on_head: the refusal of the call before is forgotten all the same.
    CHECK(call("/down").status() == 503);
    CHECK_FALSE(events.failed());
    CHECK(events.error_message().empty());

    CHECK(call("/events").transport() == transport_status::stream_interrupted);
    CHECK(events.stopped_by_caller());
    CHECK(seen == 1);
    // An empty 2xx: no body byte, so no on_head either.
    CHECK(call("/empty").ok());
    CHECK_FALSE(events.stopped_by_caller());
    CHECK_FALSE(events.failed());
}

TEST_CASE("curl stream: a stream cut inside a UTF-8 sequence keeps the last event ID for the next resume") {
    fault_server server;
    server.on("/utf8", {action::stream({{0ms, "id: 7\ndata: one\n\ndata: \xC3"}}, true),
                        action::stream({{0ms, "data: two\n\n"}}), action::stream({{0ms, "data: three\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got), {.resume = true});
    const auto get = request::get(server.url("/utf8"));
    resil::context ctx;
    CHECK(http.stream(get, ctx, events).transport() == transport_status::stream_interrupted);
    CHECK(events.last_event_id() == "7");

    // The resumed stream's events carry no id: the one received before the cut stays theirs.
    const auto resumed = events.resume_request(get);
    REQUIRE(resumed);
    resil::context again;
    CHECK(http.stream(*resumed, again, events).ok());
    REQUIRE(got.events.size() == 2);
    CHECK(got.events[1].data == "two");
    CHECK(got.events[1].id == "7");
    CHECK(events.last_event_id() == "7");
    CHECK(events.reader().last_event_id() == "7");
    const auto next = events.resume_request(get);
    REQUIRE(next);
    CHECK(next->header("Last-Event-ID") == "7");
    const auto requests = server.requests("/utf8");
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].header("Last-Event-ID") == "7");
}

TEST_CASE("curl stream: a streamed 2xx with a Content-Length reserves nothing in the response's body") {
    fault_server server;
    server.on("/sized", {action::respond(200, std::string(200000, 'x')), action::respond(200, std::string(200000, 'x'))});
    client http;
    chunk_recorder sink;
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/sized")), ctx, sink);
    CHECK(r.ok());
    CHECK(sink.bytes.size() == 200000);
    CHECK(r.body().empty());
    CHECK(r.body().capacity() < 1024);
    // Unstreamed, the same reply is kept, its size reserved up front.
    resil::context again;
    const auto kept = http.perform(request::get(server.url("/sized")), again);
    CHECK(kept.body().size() == 200000);
}

TEST_CASE("curl stream: limits of up to a year are valid and never fire early; longer ones are refused") {
    using years = std::chrono::duration<std::int64_t, std::ratio<31556952>>;
    const auto far = std::chrono::duration_cast<std::chrono::milliseconds>(years{1000});
    const auto year = resil::curl::stream_options::longest;
    CHECK(year == std::chrono::hours{8760});
    CHECK_FALSE(resil::curl::stream_options{.first_byte = year, .idle = year}.validate());
    CHECK_FALSE(resil::curl::stream_options{}.validate());  // no_limit
    CHECK(resil::curl::stream_options{.idle = far}.validate().value().message() ==
          "`idle` must be in [1ms, 8760h], got " + resil::format_duration(far));
    CHECK(resil::curl::stream_options{.first_byte = year + 1ms}.validate().value().message() ==
          "`first_byte` must be in [1ms, 8760h], got " + resil::format_duration(year + 1ms));

    fault_server server;
    server.on("/slow", {action::stream({{0ms, "data: one\n\n"}, {20ms, "data: two\n\n"}})});
    client http;
    chunk_recorder sink;
    resil::context ctx;
    CHECK_THROWS_AS(http.stream(request::get(server.url("/slow")), ctx, sink, {.idle = far}), std::invalid_argument);
    const auto r = http.stream(request::get(server.url("/slow")), ctx, sink, {.first_byte = year, .idle = year});
    INFO(r.error_message());
    CHECK(r.ok());
    CHECK(sink.bytes == "data: one\n\ndata: two\n\n");
}

TEST_CASE("curl stream: Last-Event-ID is sent only on opt-in") {
    fault_server server;
    server.on("/ids", {action::stream({{0ms, "id: 9\ndata: x\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));  // resume off (the default)
    resil::context ctx;
    const auto get = request::get(server.url("/ids"));
    CHECK(http.stream(get, ctx, events).ok());
    CHECK(events.last_event_id() == "9");
    CHECK_FALSE(events.resume_request(get));
}

TEST_CASE("curl stream: an event line longer than the maximum is a clear error") {
    fault_server server;
    server.on("/long", {action::stream({{0ms, "data: short\n\n"}, {5ms, "data: " + std::string(300, 'x')},
                                        {5ms, std::string(300, 'y') + "\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got), {.reader = {.max_line_bytes = 256}});
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/long")), ctx, events);
    CHECK(r.transport() == transport_status::stream_interrupted);
    CHECK(r.interrupted_by() == transport_status::cancelled);  // the sink stopped it
    CHECK(events.failed());
    CHECK(events.parse_error() == resil::sse::error_code::line_too_long);
    CHECK(events.error_message() == "event stream: the line starting at byte 13 is longer than `max_line_bytes` (256 bytes)");
    REQUIRE(got.events.size() == 1);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);
}

TEST_CASE("curl stream: invalid UTF-8 is a clear error") {
    fault_server server;
    server.on("/bad", {action::stream({{0ms, "data: ok\n\ndata: \xC0\xAF\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/bad")), ctx, events);
    CHECK(r.transport() == transport_status::stream_interrupted);
    CHECK(events.parse_error() == resil::sse::error_code::invalid_utf8);
    CHECK(events.error_message() == "event stream: invalid UTF-8 at byte 16");
    CHECK(got.events.size() == 1);
}

TEST_CASE("curl stream: a streamed body past max_body_bytes is a clear error") {
    fault_server server;
    const std::string event = "data: " + std::string(34, 'z') + "\n\n";  // 42 bytes
    server.on("/big", {action::stream({{0ms, event}, {5ms, event}, {5ms, event}})});
    client http({.max_body_bytes = 100});
    collector got;
    sse_stream events(std::ref(got));
    resil::context ctx;
    const auto r = http.stream(request::get(server.url("/big")), ctx, events);
    CHECK(r.transport() == transport_status::stream_interrupted);
    CHECK(r.interrupted_by() == transport_status::body_too_large);
    CHECK(std::string(r.error_message()).find("max_body_bytes") != std::string::npos);
    CHECK(r.delivered_bytes() == 84);  // the two chunks within the limit; the third never reached the sink
    CHECK(got.events.size() == 2);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);

    SECTION("a first chunk over the limit: nothing delivered, body_too_large") {
        client tiny({.max_body_bytes = 10});
        resil::context again;
        const auto first = tiny.stream(request::get(server.url("/big")), again, events);
        CHECK(first.transport() == transport_status::body_too_large);
        CHECK(first.delivered_bytes() == 0);
        CHECK(resil::curl::classify(first).verdict == verdict::permanent);
    }
}

TEST_CASE("curl stream: a reply that is not an event stream is refused before it is parsed") {
    fault_server server;
    server.on("/json", {action::stream({{0ms, R"({"error":"wrong endpoint"})"}}, false,
                                       {{"Content-Type", "application/json"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto get = request::get(server.url("/json"));
    const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, events); });
    CHECK(attempts.load() == 1);
    CHECK(out->transport() == transport_status::stream_interrupted);
    CHECK(out->delivered_bytes() == 0);
    CHECK(events.failed());
    CHECK(events.error_message() ==
          "event stream: the response's Content-Type is \"application/json\", not text/event-stream");
    CHECK(resil::curl::is_event_stream("Text/Event-Stream; charset=utf-8"));
    CHECK_FALSE(resil::curl::is_event_stream("text/plain"));
}

TEST_CASE("curl stream: a 429 is kept in the response, retried after its retry-after-ms, then streamed") {
    fault_server server;
    server.on("/busy", {action::respond(429, "slow down\n", {{"retry-after-ms", "120"}}),
                        action::stream({{0ms, "data: hi\n\n"}})});
    client http;
    collector got;
    sse_stream events(std::ref(got));
    resil::context ctx;
    const auto get = request::get(server.url("/busy"));
    const auto first = http.stream(get, ctx, events);
    CHECK(first.status() == 429);
    CHECK(first.body() == "slow down\n");
    CHECK(first.delivered_bytes() == 0);
    const auto verdict_429 = resil::curl::classify(first);
    CHECK(verdict_429.verdict == verdict::retryable);
    CHECK(verdict_429.hint.retry_after == std::chrono::duration_cast<resil::duration>(120ms));

    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries});
    server.on("/busy", {action::respond(429, "slow down\n", {{"retry-after-ms", "120"}}),
                        action::stream({{0ms, "data: hi\n\n"}})});
    const auto t0 = steady::now();
    const auto out = pipe([&](resil::context& c) { return http.stream(get, c, events); });
    CHECK(out.ok());
    CHECK(resil_test::since(t0) >= 120ms);
    CHECK(got.events.size() == 1);
}

TEST_CASE("curl stream: the sink may stop the stream; the caller's exception is rethrown") {
    fault_server server;
    server.on("/many", {action::stream({{0ms, "data: 1\n\n"}, {5ms, "data: [DONE]\n\n"}, {300ms, "data: 3\n\n"}})});
    client http;
    std::vector<std::string> seen;
    sse_stream events([&](const resil::sse::event& e) {
        seen.emplace_back(e.data);
        return e.data == "[DONE]" ? stream_action::stop : stream_action::next;
    });
    resil::context ctx;
    const auto t0 = steady::now();
    const auto r = http.stream(request::get(server.url("/many")), ctx, events);
    CHECK(resil_test::since(t0) < 300ms);
    CHECK(seen == std::vector<std::string>{"1", "[DONE]"});
    CHECK(events.stopped_by_caller());
    CHECK(r.transport() == transport_status::stream_interrupted);
    CHECK(r.interrupted_by() == transport_status::cancelled);

    auto throwing = [](std::string_view) -> stream_action { throw std::runtime_error("sink failed"); };
    resil::context again;
    CHECK_THROWS_WITH(http.stream(request::get(server.url("/many")), again, throwing), "sink failed");
    // The client is usable afterwards, with any callable: here a const one.
    std::string bytes;
    const auto sink = [&bytes](std::string_view chunk) {
        bytes.append(chunk);
        return stream_action::next;
    };
    resil::context third;
    server.on("/one", {action::stream({{0ms, "x"}})});
    CHECK(http.stream(request::get(server.url("/one")), third, sink).ok());
    CHECK(bytes == "x");
    const auto plain = http.perform(request::get(server.url("/one")));  // and without a sink: the body is kept
    CHECK(plain.body() == "x");
    CHECK(plain.delivered_bytes() == 0);
}

TEST_CASE("curl stream: options are validated; the new statuses have names") {
    client http;
    chunk_recorder sink;
    resil::context ctx;
    const auto get = request::get("http://127.0.0.1:1/");
    CHECK_THROWS_AS(http.stream(get, ctx, sink, {.first_byte = 0ms}), std::invalid_argument);
    CHECK_THROWS_AS(http.stream(get, ctx, sink, {.idle = -5ms}), std::invalid_argument);
    const auto bad = resil::curl::stream_options{.first_byte = 0ms}.validate();
    REQUIRE(bad);
    CHECK(bad->message() == "`first_byte` must be at least 1ms, got 0s");
    const auto bad_reader = resil::curl::sse_stream_options{.reader = {.max_event_bytes = 0}}.validate();
    REQUIRE(bad_reader);
    CHECK(bad_reader->message() == "`reader.max_event_bytes` must be at least 1, got 0");
    CHECK_THROWS_AS(sse_stream([](const resil::sse::event&) {}, {.reader = {.max_line_bytes = 0}}),
                    std::invalid_argument);
    CHECK(resil::curl::to_string(transport_status::first_byte_timeout) == "first_byte_timeout");
    CHECK(resil::curl::to_string(transport_status::stream_interrupted) == "stream_interrupted");
    CHECK(resil::curl::classify_transport(transport_status::stream_interrupted, true) == verdict::permanent);
    CHECK(resil::curl::classify_transport(transport_status::first_byte_timeout, false) == verdict::retryable);
    // Whatever the request: idempotent and keyed, an interrupted stream is still permanent.
    const auto keyed = response::from_failure(transport_status::stream_interrupted, CURLE_PARTIAL_FILE, true)
                           .set_request_traits(true, true);
    CHECK(resil::curl::classify(keyed).verdict == verdict::permanent);
    const auto late = response::from_failure(transport_status::first_byte_timeout, CURLE_OPERATION_TIMEDOUT, true)
                          .set_request_traits(true, true);
    CHECK(resil::curl::classify(late).verdict == verdict::ambiguous);  // retried: the context is repeatable
}

TEST_CASE("curl stream: stream_action::done ends the transfer early and the call reads as completed") {
    fault_server server;
    server.on("/done", {action::stream({{0ms, "data: a\n\n"}, {5ms, "data: [DONE]\n\n"}, {500ms, "data: late\n\n"}})});
    client http;
    std::vector<std::string> tokens;
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::retry_policy{quick_retries}).with_listener(attempt_counter{&attempts});
    const auto get = request::get(server.url("/done"));
    const auto t0 = steady::now();
    // The snippet of docs/sse.md, "Feeding it from libcurl".
    sse_stream events(
        [&](const resil::sse::event& e) {
            if (e.data == "[DONE]") return stream_action::done;  // the answer is whole
            tokens.emplace_back(e.data);
            return stream_action::next;
        },
        {.reader = {.max_line_bytes = 64 << 10}, .resume = false}, [](std::string_view) {});
    const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, events, {.first_byte = 2s, .idle = 500ms}); });
    CHECK(resil_test::since(t0) < 500ms);
    REQUIRE(out.ok());
    CHECK(out->completed());
    CHECK(out->interrupted_by() == transport_status::completed);
    CHECK(out->error_message().empty());
    CHECK(attempts.load() == 1);
    CHECK_FALSE(events.failed());
    CHECK(events.stopped_by_caller());
    CHECK(events.finish() == resil::sse::error_code::none);
    CHECK(tokens == std::vector<std::string>{"a"});
}

TEST_CASE("curl stream: the stop token ends a stream; after data it is an interruption, not retried") {
    fault_server server;
    server.on("/long", {action::stream({{0ms, "data: a\n\n"}, {2000ms, "data: b\n\n"}})});
    client http;
    std::stop_source stop;
    resil::context ctx{resil::call_options{.stop = stop.get_token()}};
    auto sink = [&](std::string_view) {
        stop.request_stop();  // from inside the sink: the loop sees it at once
        return stream_action::next;
    };
    const auto t0 = steady::now();
    const auto r = http.stream(request::get(server.url("/long")), ctx, sink);
    CHECK(resil_test::since(t0) < 500ms);
    CHECK(r.transport() == transport_status::stream_interrupted);
    CHECK(r.interrupted_by() == transport_status::cancelled);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);
}

TEST_CASE("curl stream: a trickle that never trips the idle limit is still bounded by the deadline") {
    fault_server server;
    std::vector<std::pair<std::chrono::milliseconds, std::string>> trickle;
    for (int i = 0; i < 40; ++i) trickle.emplace_back(50ms, ": keep-alive\n");
    server.on("/trickle", {action::stream(std::move(trickle))});
    client http;
    chunk_recorder sink;
    std::atomic<int> attempts{0};
    const auto pipe = resil::pipeline(resil::deadline_policy{300ms}, resil::retry_policy{quick_retries})
                          .with_listener(attempt_counter{&attempts});
    const auto get = request::get(server.url("/trickle"));
    const auto t0 = steady::now();
    const auto out = pipe([&](resil::context& ctx) { return http.stream(get, ctx, sink, {.first_byte = 1s, .idle = 200ms}); });
    const auto took = resil_test::since(t0);
    CHECK(took >= 290ms);
    CHECK(took < 300ms + slack + 100ms);
    CHECK(attempts.load() == 1);
    CHECK(out->transport() == transport_status::stream_interrupted);
    CHECK(out->interrupted_by() == transport_status::total_timeout);
    CHECK(sink.chunks >= 3);
}
