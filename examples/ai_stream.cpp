// An AI-API style caller: a chat completion streamed token by token as
// Server-Sent Events, through
//   plan B → deadline → retry → timeouts → libcurl (client::stream + sse_stream)
// against a local fault server this program starts itself (127.0.0.1, an
// ephemeral port), scripted as a busy model API misbehaves:
//   1. 429 with retry-after-ms, then a first token too late (the first-byte
//      limit fires; nothing reached us, the keyed POST is retried with the
//      same Idempotency-Key), then the tokens;
//   2. the stream stalls after two tokens: the idle limit fires, the answer
//      is half shown, so it is NOT retried: plan B;
//   3. the connection drops mid-stream; this API supports resuming, and the
//      caller opted in: it asks again with Last-Event-ID, explicitly.
//
//   example_ai_stream
//
// Its output is deterministic (examples/expected/ai_stream.txt, checked by
// the tests): no timing figure is printed.
#include <resil/curl.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/timeout_policy.hpp>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include "../tests/support/fault_server.hpp"

using namespace std::chrono_literals;
using resil::curl::request;
using resil::curl::response;
using resil::curl::stream_action;

// ---- The call: the part to copy ---------------------------------------------

// The limits a streamed completion needs: the first token may take a while
// (the model thinks), then tokens come steadily; a wall-clock total would cut
// a long answer, so the deadline is generous and the stream's own limits do
// the work.
inline constexpr resil::curl::stream_options completion_limits{.first_byte = 300ms, .idle = 250ms};

// Plan B: a short canned answer, counted by reason.
inline auto canned_answer() {
    return resil::fallback_policy{[](const resil::outcome<response>&) {
        return response::from_parts(200, {}, "Sorry, the assistant is busy; here is the help page instead.");
    }};
}

template <class PlanB, class Listener>
auto completion_pipeline(const PlanB& plan_b, Listener listener) {
    return resil::pipeline(plan_b,                              // when the stream cannot be had, or dies
                           resil::deadline_policy{5s},          // the whole call
                           resil::retry_policy{{.max_attempts = 4, .backoff = resil::full_jitter{10ms, 50ms}}},
                           resil::timeout_policy{{.connect = 200ms, .read = 2s, .total = 4s}})
        .with_listener(std::move(listener));
}

// ---- What the demo prints ------------------------------------------------------

namespace {

long long ms(resil::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

struct printer {
    void operator()(const resil::events::retry_scheduled& e) const {
        if (e.from_retry_after)
            std::printf("    retry in %lld ms (the server's retry-after-ms)\n", ms(e.delay));
        else
            std::printf("    retry after a short backoff\n");
    }
    void operator()(const resil::events::fallback_used& e) const {
        std::printf("    plan B, because: %s\n", std::string(resil::to_string(e.reason)).c_str());
    }
};

// Prints the tokens as they arrive, and keeps the answer.
struct token_printer {
    std::string answer;
    int events = 0;
    stream_action operator()(const resil::sse::event& e) {
        if (e.data == "[DONE]") {
            end_line();
            std::printf("    [DONE] after %d tokens\n", events);
            return stream_action::done;  // the API's end marker: the answer is whole
        }
        ++events;
        answer += e.data;
        std::printf("%s%.*s", line_open ? "|" : "    tokens: ", static_cast<int>(e.data.size()), e.data.data());
        line_open = true;
        return stream_action::next;
    }
    void end_line() {
        if (line_open) std::printf("\n");
        line_open = false;
    }
    bool line_open = false;
};

void print_attempt(const resil::context& ctx, const response& r, bool resumed = false) {
    const auto verdict = resil::curl::classify(r);
    if (resumed)
        std::printf("    attempt %u, resumed: ", ctx.attempt());
    else
        std::printf("    attempt %u: ", ctx.attempt());
    if (r.completed()) {
        std::printf("HTTP %d", r.status());
    } else if (r.transport() == resil::curl::transport_status::stream_interrupted) {
        std::printf("%s by %s after %zu bytes reached us", std::string(resil::curl::to_string(r.transport())).c_str(),
                    std::string(resil::curl::to_string(r.interrupted_by())).c_str(), r.delivered_bytes());
    } else {
        std::printf("%s, %zu bytes reached us", std::string(resil::curl::to_string(r.transport())).c_str(),
                    r.delivered_bytes());
    }
    std::printf(" -> %s%s\n", std::string(resil::to_string(verdict.verdict)).c_str(),
                r.completed() || verdict.verdict == resil::verdict::permanent ? ""
                : r.carried_idempotency_key()                                  ? " (keyed: safe to retry)"
                                                                               : "");
}

std::set<std::string> keys_seen(const resil_test::fault_server& server, std::string_view path) {
    std::set<std::string> keys;
    for (const auto& r : server.requests(path)) keys.insert(r.header("Idempotency-Key").value_or("(none)"));
    return keys;
}

}  // namespace

int main() {
    using resil_test::action;
    resil_test::fault_server api;
    const auto sse = [](std::string_view id, std::string_view token) {
        return "id: " + std::string(id) + "\ndata: " + std::string(token) + "\n\n";
    };
    api.on("/v1/chat/completions",
           {action::respond(429, R"({"error":"rate limited"})", {{"retry-after-ms", "150"}}),
            action::stream({{600ms, sse("1", "late")}}),
            action::stream({{20ms, sse("1", "Hello")}, {20ms, sse("2", ",")}, {20ms, sse("3", " world")},
                            {20ms, sse("4", "!")}, {20ms, "data: [DONE]\n\n"}}),
            // 2. two tokens, then the model stalls
            action::stream({{20ms, sse("1", "The")}, {20ms, sse("2", " capital")}, {1500ms, sse("3", " is")}}),
            // 3. two tokens, then the connection drops; the resumed stream goes on after id 2
            action::stream({{20ms, sse("1", "Paris")}, {20ms, sse("2", " is")}}, true),
            action::stream({{20ms, sse("3", " lovely")}, {20ms, sse("4", ".")}, {20ms, "data: [DONE]\n\n"}})});

    resil::curl::client http;  // keys every POST: the same key on each attempt of a call
    const auto plan_b = canned_answer();
    const auto pipe = completion_pipeline(plan_b, printer{});
    const auto completion = request::post(api.url("/v1/chat/completions"), R"({"model":"m","stream":true})")
                                .add_header("Content-Type", "application/json")
                                .add_header("Accept", "text/event-stream");
    std::printf("limits: first byte %lld ms, idle %lld ms; deadline 5 s\n", ms(completion_limits.first_byte),
                ms(completion_limits.idle));

    // One call: the completion streamed into `tokens` under the pipeline,
    // every attempt printed.
    const auto streamed_completion = [&](token_printer& tokens) {
        resil::curl::sse_stream events(std::ref(tokens));
        return pipe([&](resil::context& ctx) {
            auto r = http.stream(completion, ctx, events, completion_limits);
            tokens.end_line();
            print_attempt(ctx, r);
            return r;
        });
    };

    std::printf("\n1. 429 with retry-after-ms, then a late first token, then the stream\n");
    {
        token_printer tokens;
        const auto out = streamed_completion(tokens);
        std::printf("  => %s: \"%s\"\n", out.ok() && !out.from_fallback() ? "answer" : "failed", tokens.answer.c_str());
        const auto keys = keys_seen(api, "/v1/chat/completions");
        std::printf("  the server saw %zu POSTs carrying %zu Idempotency-Key\n",
                    api.requests("/v1/chat/completions").size(), keys.size());
    }

    std::printf("\n2. the stream stalls after two tokens: the idle limit fires; not retried, plan B\n");
    {
        token_printer tokens;
        const auto out = streamed_completion(tokens);
        std::printf("  shown before it stalled: \"%s\" (the server saw 1 POST: %s)\n", tokens.answer.c_str(),
                    api.requests("/v1/chat/completions").size() == 4 ? "yes" : "no");
        if (out.from_fallback()) std::printf("  => plan B: %s\n", out->body().c_str());
    }

    std::printf("\n3. the connection drops after two tokens; the caller opted in to resume with Last-Event-ID\n");
    {
        token_printer tokens;
        resil::curl::sse_stream events(std::ref(tokens), {.resume = true});
        const auto out = pipe([&](resil::context& ctx) {
            auto r = http.stream(completion, ctx, events, completion_limits);
            tokens.end_line();
            print_attempt(ctx, r);
            // The caller's own, explicit step: this API resumes a stream
            // after the last event it delivered. No retry policy does this.
            if (r.transport() == resil::curl::transport_status::stream_interrupted &&
                r.interrupted_by() == resil::curl::transport_status::connection_lost) {
                if (const auto resumed = events.resume_request(completion)) {
                    std::printf("    resuming after event %s\n", std::string(events.last_event_id()).c_str());
                    r = http.stream(*resumed, ctx, events, completion_limits);
                    tokens.end_line();
                    print_attempt(ctx, r, true);
                }
            }
            return r;
        });
        std::printf("  => %s: \"%s\"\n", out.ok() && !out.from_fallback() ? "answer" : "failed", tokens.answer.c_str());
        const auto last = api.requests("/v1/chat/completions").back();
        std::printf("  the server saw Last-Event-ID: %s\n", last.header("Last-Event-ID").value_or("(none)").c_str());
    }

    std::printf("\nplan B was used %llu time(s)\n", static_cast<unsigned long long>(plan_b.metrics().total()));
    return 0;
}
