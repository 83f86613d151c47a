// resil/curl/client.hpp — real HTTP transfers under the context's deadline:
// the timeout triad mapped onto libcurl, cancellation through the stop token,
// idempotency keys and the deadline header added for you.
//
//   resil::curl::client http;                        // one per thread; keeps connections alive
//   auto pipe = resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{},
//                               resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
//   auto out = pipe([&](resil::context& ctx) {
//       return http.perform(resil::curl::request::post(url, body), ctx);   // keyed, same key every attempt
//   });
//
// Per attempt, `perform`:
//  1. tells the context whether the operation is idempotent (the request's
//     method or explicit flag) and, for a non-idempotent request, takes the
//     context's idempotency key (made once per call) and sends it as
//     `Idempotency-Key: "<uuid>"` (the name is client_options::
//     idempotency_key_header), so the retry policy may retry an ambiguous
//     failure — and the server can deduplicate it;
//  2. takes ctx.limits_for_attempt() (the timeouts clamped to the deadline,
//     from one reading of the context's clock), bounded by
//     client_options::limits; with less than 1 ms left or the stop token
//     already fired it returns at once, with no I/O;
//  3. drives the transfer through libcurl's multi interface
//     (detail/blocking_transfer.hpp): connect is libcurl's
//     CURLOPT_CONNECTTIMEOUT_MS; the total ends at an absolute time on the
//     context's clock; the read-inactivity limit is resil's own timer
//     (libcurl has none below a second); a stop request wakes the poll at
//     once (curl_multi_wakeup);
//  4. returns a response saying what happened and whether the request may have
//     reached the server (resil/curl/response.hpp), which resil::curl::classify
//     judges (resil/curl/classification.hpp).
//
// Reuse: a response allocates its header buffer (and a body too big for the
// string itself) when it is made. A client used for request after request
// allocates nothing per request once its responses are reused: fill the same
// one each time (perform(req, ctx, out)), or give each back when done with it
// (recycle(std::move(r))) and the next perform builds its response in those
// buffers. libcurl's own allocations (malloc) are its business.
//
//   resil::curl::response r = http.perform(req);      // the first one grows its buffers
//   while (more) use(http.perform(req, r).body());    // no allocation per request
//
// Streaming: stream(req, ctx, sink, {.first_byte, .idle}) hands a 2xx body
// to a sink chunk by chunk, retried only while no byte has reached it
// (streaming.hpp; an event stream: sse_stream.hpp).
//
// Where the pieces live: options and their validation (options.hpp), steps
// 1 and 2 and the read-inactivity timer (detail/attempt.hpp, shared with the
// asynchronous client, resil/curl_asio/async_client.hpp), the
// easy handle's set-up (detail/setup.hpp), libcurl's callbacks
// (detail/capture.hpp), the transfer loop (detail/blocking_transfer.hpp),
// what an ended transfer comes to (detail/transfer_result.hpp) and the
// kept-alive connections as left idle (detail/idle_connections.hpp, counted
// in metrics(): client_metrics.hpp); TLS, proxy,
// HTTP version and redirects (transport.hpp), and a one-line description of a
// client's options for a start-up log (describe.hpp).
//
// Thread-safety: a client is NOT thread-safe. Use one per thread (e.g. a
// thread_local reached through a function, see docs/curl.md, or one per
// worker); a concurrent second call on the same client throws
// std::logic_error instead of corrupting libcurl's state. Different clients
// may be used in parallel. The stop token may be fired from any thread.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../clock.hpp"
#include "../context.hpp"
#include "../detail/platform.hpp"
#include "../idempotency_key.hpp"
#include "../timeouts.hpp"
#include "../validation.hpp"
#include "detail/handles.hpp"
#if RESIL_DETAIL_BODIES
// The transfer itself, needed only where the bodies are compiled
// (detail/platform.hpp).
#include "detail/attempt.hpp"
#include "detail/blocking_transfer.hpp"
#include "detail/setup.hpp"
#endif
#include "client_metrics.hpp"
#include "detail/text.hpp"
#include "classification.hpp"  // classify(const response&): the pipelines find it by ADL
#include "options.hpp"
#include "request.hpp"
#include "response.hpp"
#include "streaming.hpp"

namespace resil::curl {

/// A blocking HTTP client over libcurl: one attempt per perform(), with the
/// context's deadline, timeouts, stop token and idempotency key applied. One
/// per thread (it keeps that thread's kept-alive connections); not thread-safe.
/// Move-only.
class client {
public:
    /// Creates the libcurl handles. Throws std::invalid_argument for invalid
    /// options (client_options::validate), std::runtime_error when libcurl
    /// cannot be initialised or refuses an option (named in the message).
    RESIL_DECL explicit client(client_options options = {});

    /// Takes over `other`'s handle and connections.
    client(client&&) noexcept = default;
    /// Takes over `other`'s handle and connections.
    client& operator=(client&&) noexcept = default;
    RESIL_DECL ~client();

    /// The options it was built with.
    [[nodiscard]] const client_options& options() const noexcept { return options_; }

    /// The client's counters (resil/curl/client_metrics.hpp); zeros for a
    /// client moved from. May be called from any thread, also while a call
    /// is in progress.
    [[nodiscard]] client_metrics metrics() const noexcept {
        client_metrics m;
        if (state_) m.fresh_connections_for_idle = state_->fresh_for_idle.load(std::memory_order_relaxed);
        return m;
    }

    /// One attempt of `req` under `ctx` (its deadline, timeouts, clock, stop
    /// token and idempotency key); see the banner. Marks `ctx` idempotent when
    /// the request is, and makes its idempotency key when the request needs
    /// one. Throws std::invalid_argument when the context holds a negative
    /// timeout or the request a blank Idempotency-Key, std::logic_error when
    /// the client is already busy on another thread. Every transfer outcome,
    /// including failures, is a response. The response is built in the
    /// buffers last given back through recycle(), if any.
    template <resil::clock Clock>
    response perform(const request& req, basic_context<Clock>& ctx) {
        auto& s = require_state();
        busy_guard guard(s.busy);
        response r = std::move(s.spare);
        attempt(s, req, ctx, r);
        return r;
    }

    /// One attempt with no deadline and no retry: a fresh context, so only
    /// client_options::limits bound it. A non-idempotent request still gets a key.
    response perform(const request& req) {
        resil::context ctx;
        return perform(req, ctx);
    }

    /// As perform(req, ctx), but fills `out` in place: whatever it held is
    /// replaced, as by a new response, while the buffers of its body, header
    /// fields and trailers keep their capacity. A response reused for request
    /// after request therefore allocates nothing once its buffers fit the
    /// replies; a larger reply grows them as a new response would, and a body
    /// more than 1 MiB smaller than its buffer gives the surplus back. The
    /// limits (max_body_bytes, max_header_bytes) apply to the reply, not to
    /// what the buffers held. Returns `out`; when the request or the context
    /// is refused (std::invalid_argument), `out` is left blank.
    template <resil::clock Clock>
    response& perform(const request& req, basic_context<Clock>& ctx, response& out) {
        auto& s = require_state();
        busy_guard guard(s.busy);
        attempt(s, req, ctx, out);
        return out;
    }

    /// perform(req, out) with a fresh context, as perform(req).
    response& perform(const request& req, response& out) {
        resil::context ctx;
        return perform(req, ctx, out);
    }

    /// One attempt, as perform(req, ctx), whose 2xx body is handed to `sink`
    /// chunk by chunk as it arrives instead of being kept in the response,
    /// under `limits` (first byte, idle) besides the context's. Once a byte
    /// reached the sink, an early end is transport_status::stream_interrupted,
    /// never retried (resil/curl/streaming.hpp). Throws std::invalid_argument
    /// for invalid `limits`, and rethrows what the sink threw once the
    /// transfer has ended. No allocation per chunk.
    template <resil::clock Clock, class Sink>
        requires chunk_sink<std::remove_reference_t<Sink>>
    response stream(const request& req, basic_context<Clock>& ctx, Sink&& sink, const stream_options& limits = {}) {
        auto& s = require_state();
        busy_guard guard(s.busy);
        response r = std::move(s.spare);
        streamed(s, req, ctx, sink, limits, r);
        return r;
    }

    /// stream(req, ctx, sink, limits) filling `out` in place, as
    /// perform(req, ctx, out): with a reused response and sink, a streamed
    /// call allocates nothing in steady state.
    template <resil::clock Clock, class Sink>
        requires chunk_sink<std::remove_reference_t<Sink>>
    response& stream(const request& req, basic_context<Clock>& ctx, response& out, Sink&& sink,
                     const stream_options& limits = {}) {
        auto& s = require_state();
        busy_guard guard(s.busy);
        streamed(s, req, ctx, sink, limits, out);
        return out;
    }

    /// Gives a response's buffers back once its contents are no longer
    /// needed: the next perform that returns a response by value builds it in
    /// them, so a loop (or a pipeline) that hands each response back
    /// allocates nothing once the buffers fit the replies. The client keeps
    /// the buffers of the last response given back, without its contents; a
    /// body buffer larger than max_body_bytes is freed rather than kept.
    /// Called while the client is busy on another thread, or on a client
    /// moved from, it only frees `r`.
    void recycle(response&& r) noexcept {
        if (!state_ || state_->busy.exchange(true, std::memory_order_acquire)) return;
        detail::response_access::clear(r);
        auto& body = detail::response_access::body(r);
        if (body.capacity() > options_.max_body_bytes) std::string().swap(body);
        state_->spare = std::move(r);
        state_->busy.store(false, std::memory_order_release);
    }

private:
    struct busy_guard {
        std::atomic<bool>& busy;
        explicit busy_guard(std::atomic<bool>& b) : busy(b) {
            if (busy.exchange(true, std::memory_order_acquire)) throw_busy();
        }
        busy_guard(const busy_guard&) = delete;
        busy_guard& operator=(const busy_guard&) = delete;
        ~busy_guard() { busy.store(false, std::memory_order_release); }
    };

    detail::handles& require_state() {
        // Also what a client reached after its thread ended looks like (its
        // thread_local was destroyed): name that case, it is the common one.
        if (!state_) throw_no_state();
        return *state_;
    }

    // The rare paths, out of line and cold (detail/platform.hpp): each is
    // compiled once per translation unit instead of inlined into every
    // perform and attempt.
    [[noreturn]] RESIL_DETAIL_COLD static void throw_busy() {
        throw std::logic_error(
            "resil::curl::client: perform called while another call on this client is in progress; "
            "use one client per thread");
    }

    [[noreturn]] RESIL_DETAIL_COLD static void throw_no_state() {
        throw std::logic_error(
            "resil::curl::client: used after being moved from or destroyed; a thread_local client belongs "
            "to its thread: reach it through a function called on the thread that uses it, never through a "
            "reference or pointer kept from another thread");
    }

    // Steps 1 to 3 of the banner for one attempt, filling `r` (first made
    // blank). Defined below; with RESIL_SEPARATE_COMPILATION it is compiled
    // once, for resil's own clocks (resil/curl/separate_compilation.hpp).
    template <resil::clock Clock>
    void attempt(detail::handles& s, const request& req, basic_context<Clock>& ctx, response& r);

    // The sink and the limits are the transfer's for this call only.
    template <resil::clock Clock, class Sink>
    void streamed(detail::handles& s, const request& req, basic_context<Clock>& ctx, Sink& sink,
                  const stream_options& limits, response& r) {
        throw_if_invalid("resil::curl::client::stream", limits.validate());
        const auto ref = detail::sink_ref::to(sink);
        struct detach {
            detail::stream_state& state;
            ~detach() {
                state.sink = nullptr;
                state.first_byte = resil::timeouts::no_limit;
                state.idle = resil::timeouts::no_limit;
            }
        } const on_exit{s.transfer.stream};
        s.transfer.stream.sink = &ref;
        s.transfer.stream.first_byte = limits.first_byte;
        s.transfer.stream.idle = limits.idle;
        // A sink that keeps state across calls (sse_stream) starts each anew.
        if constexpr (requires { sink.on_start(); }) sink.on_start();
        attempt(s, req, ctx, r);
        if (auto thrown = std::exchange(s.transfer.stream.thrown, nullptr)) std::rethrow_exception(thrown);
    }

    client_options options_;
    std::unique_ptr<detail::handles> state_;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL client::client(client_options options) : options_(std::move(options)) {
    throw_if_invalid("resil::curl::client", options_.validate());
    state_ = std::make_unique<detail::handles>();
    detail::setup::configure(*state_, options_, &detail::blocking_transfer::on_close_socket, state_.get());
}

RESIL_DECL client::~client() = default;

template <resil::clock Clock>
void client::attempt(detail::handles& s, const request& req, basic_context<Clock>& ctx, response& r) {
    detail::response_access::clear(r);
    // 1 and 2: the key and the limits (detail/attempt.hpp, shared with async_client).
    const auto plan = detail::attempt_prelude::prepare(req, ctx, options_, r, "resil::curl::client");
    if (!plan) return;
    // 3. The transfer.
    detail::blocking_transfer::run(s, req, plan->limits, ctx.clock(), plan->key, ctx.stop_token(), options_, r);
}
#endif

}  // namespace resil::curl
