// resil/curl_asio/async_client.hpp — many HTTP transfers in flight on one thread:
// libcurl's multi interface driven by an Asio executor, with the same
// per-attempt behaviour as the blocking client (resil/curl/client.hpp).
// Needs both targets, resil::curl and resil::asio, as every header of
// resil/curl_asio/ does.
//
//   ::asio::io_context io;
//   resil::curl::async_client http(io);               // one per executor (thread)
//   ::asio::co_spawn(io, [&]() -> ::asio::awaitable<void> {
//       resil::context ctx;
//       auto r = co_await http.async_perform(resil::curl::request::get(url), ctx, ::asio::use_awaitable);
//       ...                                            // as http.perform(req, ctx) would return
//   }, ::asio::detached);
//   io.run();
//
// One attempt per call, as client::perform: the same prelude (the context
// marked idempotent and repeatable, its idempotency key sent with a
// non-idempotent request, ctx.limits_for_attempt() within
// client_options::limits; nothing sent when the stop token already fired or
// no time is left), the same easy-handle set-up (TLS, proxy, HTTP version,
// headers, keys, redirects, pins) and response capture, and the same
// reading of how the transfer ended (never-sent vs ambiguous, timings,
// server hints): resil/curl/detail/attempt.hpp, setup.hpp, capture.hpp,
// transfer_result.hpp are shared by both clients. The read-inactivity limit
// is resil's own millisecond timer and the total ends at the absolute time
// on the context's clock, here one Asio timer per transfer.
//
// The event loop: CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION on an
// epoll set the executor's reactor watches as one descriptor (Linux; Asio
// descriptors elsewhere, or with RESIL_CURL_ASYNC_PER_SOCKET_WAITS: the
// backend is chosen in detail/socket_waits.hpp) and one steady_timer of the
// executor (detail/asio_multi.hpp): no thread of its own, no polling.
// HTTP/2 multiplexes concurrent calls to one host over one connection
// (CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX, CURLOPT_PIPEWAIT: a call waits
// for a connection being set up rather than opening another;
// async_options::max_concurrent_streams).
//
// Completion: `void(resil::curl::response)`, whatever happened (every
// failure is a response, as from perform); any Asio completion token
// (use_awaitable, a callback, use_future, deferred). The handler runs on
// its associated executor, never inside async_perform or inside libcurl. A
// handler whose associated executor is an any_io_executor equal to the
// client's (one without an executor of its own), whose call ended in a
// wake-up that found its answer on a socket, runs at the end of that
// wake-up (on Linux; that executor is running it); any other is posted.
// See docs/curl_async.md for order, exceptions and io_context::stop().
//
// Cancellation, each ending the call at once as transport_status::cancelled
// (the transfer leaves the multi handle; over HTTP/1.1 its connection is
// closed, over HTTP/2 only its stream), with may_have_reached() telling
// whether the request may have been sent:
//  - the operation's cancellation slot (::asio::bind_cancellation_slot,
//    parallel_group, awaitable operators): terminal and partial
//    cancellation; total is ignored (a sent request cannot be undone);
//  - ctx.stop_token(), from any thread.
//
// Lifetime: `req` and `ctx` must outlive the call (until its completion
// runs): libcurl reads the request's body and header lines in place, and the
// call reads the context's clock. Destroying the client completes every call
// in flight as cancelled ("the asynchronous client was destroyed while the
// call was in flight"), exactly once, and frees every libcurl handle; destroy
// it before its io_context, as any Asio I/O object. A stopped io_context
// never runs the completions posted to it: destroying it destroys them (and
// the coroutine frames waiting on them). Nothing of a finished call stays
// pending on the executor (its transfer's timer wait is cancelled unless
// the next call takes it over): io_context::run() returns once the last
// call's handler has run.
//
// Memory: one pooled transfer per call in flight (an easy handle, its
// buffers and a timer; libcurl's own buffers come with the easy handle),
// reused by the next call; at most async_options::max_idle_transfers stay
// pooled when idle. Calls beyond async_options::max_in_flight complete at
// once, unsent (transport_status::other_error): memory is bounded by
// max_in_flight transfers and their responses. Idle kept-alive connections:
// up to 4 per pooled transfer (CURLMOPT_MAXCONNECTS, libcurl's own ratio, but
// counted over the pool: the calls in flight may drop to none between bursts
// without their connections being closed).
//
// Thread-safety: call async_perform, recycle and the destructor on the
// executor's thread (one io_context thread, or a strand); the stop token
// may fire from any thread.
#pragma once

// Before any Asio header: co_await with clang and libstdc++ (Asio 1.22
// enables it on clang only for libc++), as resil/asio/config.hpp does.
#if __has_include("../asio/config.hpp")
#include "../asio/config.hpp"
#elif defined(__clang__) && !defined(ASIO_HAS_CO_AWAIT) && !defined(ASIO_DISABLE_CO_AWAIT) && \
    defined(__cpp_impl_coroutine) && __has_include(<coroutine>)
#define ASIO_HAS_CO_AWAIT 1
#endif

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/io_context.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../clock.hpp"
#include "../context.hpp"
#include "../curl/classification.hpp"  // classify(const response&): the pipelines and hedged() find it by ADL
#include "../curl/client_metrics.hpp"
#include "../curl/detail/attempt.hpp"
#include "../curl/options.hpp"
#include "../curl/request.hpp"
#include "../curl/response.hpp"
#include "../curl/streaming.hpp"
#include "../validation.hpp"
#include "async_options.hpp"
#include "detail/asio_multi.hpp"

namespace resil::curl {

/// Many HTTP transfers in flight on one thread: libcurl's multi interface
/// driven by an Asio executor, with the same per-attempt behaviour as the
/// blocking client. One per executor (thread); its operations run on that
/// executor. Move-only.
class async_client {
public:
    /// The executor its transfers run on.
    using executor_type = ::asio::any_io_executor;

    /// Throws std::invalid_argument for invalid options
    /// (client_options::validate, async_options::validate),
    /// std::runtime_error when libcurl cannot be initialised.
    explicit async_client(executor_type ex, client_options options = {}, async_options limits = {})
        : core_(make_core(std::move(ex), std::move(options), limits)) {}
    /// A client on `io`'s executor.
    explicit async_client(::asio::io_context& io, client_options options = {}, async_options limits = {})
        : async_client(io.get_executor(), std::move(options), limits) {}

    /// Takes over `other`'s transfers and connections.
    async_client(async_client&&) noexcept = default;
    /// Takes over `other`'s transfers and connections; the client it held is
    /// closed first.
    async_client& operator=(async_client&& other) noexcept {
        if (this != &other) {
            close();
            core_ = std::move(other.core_);
        }
        return *this;
    }
    async_client(const async_client&) = delete;
    async_client& operator=(const async_client&) = delete;

    /// Completes every call in flight as cancelled, then frees libcurl's handles.
    ~async_client() { close(); }

    /// The executor its transfers run on.
    [[nodiscard]] executor_type get_executor() const { return require().executor(); }
    /// The options it was built with.
    [[nodiscard]] const client_options& options() const { return require().options(); }
    /// Calls in flight now.
    [[nodiscard]] std::size_t in_flight() const { return require().in_flight(); }
    /// Transfers pooled (in flight or idle): what holds libcurl's per-handle memory.
    [[nodiscard]] std::size_t pooled_transfers() const { return require().pooled(); }
    /// The client's counters (resil/curl/client_metrics.hpp), as
    /// client::metrics(). May be read from any thread.
    [[nodiscard]] client_metrics metrics() const {
        client_metrics m;
        m.fresh_connections_for_idle = require().fresh_for_idle();
        return m;
    }

    /// One attempt of `req` under `ctx`, as client::perform(req, ctx), whose
    /// completion is `void(response)`. Throws, before anything starts, what
    /// perform throws for a bad context or request (std::invalid_argument);
    /// the attempt's limits are computed here, from one reading of the
    /// context's clock. See the banner for cancellation and lifetime.
    template <resil::clock Clock, class CompletionToken>
    auto async_perform(const request& req, basic_context<Clock>& ctx, CompletionToken&& token) {
        auto& core = require();
        response r = core.take_response();
        auto plan = detail::attempt_prelude::prepare(req, ctx, core.options(), r, "resil::curl::async_client");
        return ::asio::async_initiate<CompletionToken, void(response)>(
            initiate<Clock>{core_}, token, &req, &ctx, std::move(r), std::move(plan));
    }

    /// One attempt, as client::stream(req, ctx, sink, limits), whose 2xx
    /// body is handed to `sink` chunk by chunk (resil/curl/streaming.hpp):
    /// retried only while no byte reached it. Completes with
    /// `void(std::exception_ptr, response)`: the exception is what the sink
    /// threw (the transfer ended then, and the response says so), so that
    /// `co_await ... use_awaitable` rethrows it as client::stream does. The
    /// sink runs inside libcurl's callback on the executor's thread and must
    /// outlive the call, as `req` and `ctx`. It should not run the
    /// io_context: libcurl is not re-entrant, so this client's own work
    /// (other calls' bytes, timers, cancellations) waits until the sink
    /// returns, and async_perform from a sink, or from a handler it runs,
    /// is refused, unsent.
    /// Throws std::invalid_argument for invalid `limits`, before anything
    /// starts.
    template <resil::clock Clock, class Sink, class CompletionToken>
        requires chunk_sink<Sink>
    auto async_stream(const request& req, basic_context<Clock>& ctx, Sink& sink, const stream_options& limits,
                      CompletionToken&& token) {
        throw_if_invalid("resil::curl::async_client::async_stream", limits.validate());
        auto& core = require();
        response r = core.take_response();
        auto plan = detail::attempt_prelude::prepare(req, ctx, core.options(), r, "resil::curl::async_client");
        // A sink that keeps state across calls (sse_stream) starts each anew.
        if constexpr (requires { sink.on_start(); }) sink.on_start();
        return ::asio::async_initiate<CompletionToken, void(std::exception_ptr, response)>(
            initiate_stream<Clock>{core_}, token, &req, &ctx, std::move(r), std::move(plan),
            detail::stream_call{detail::sink_ref::to(sink), limits});
    }

    /// Bytes of body buffer kept by responses given back (recycle): at most
    /// async_options::max_idle_transfers × 64 KiB.
    [[nodiscard]] std::size_t spare_body_bytes() const { return require().spare_body_bytes(); }

    /// Gives a response's buffers back once its contents are no longer
    /// needed: a later call builds its response in them. Up to
    /// async_options::max_idle_transfers are kept, each with a body buffer
    /// of at most 64 KiB (a larger one is freed).
    void recycle(response&& r) {
        if (core_) core_->give_back(std::move(r));
    }

private:
    friend struct detail::async_client_probe;

    template <resil::clock Clock>
    struct initiate {
        std::shared_ptr<detail::asio_multi> core;
        template <class Handler>
        void operator()(Handler&& handler, const request* req, basic_context<Clock>* ctx, response&& r,
                        std::optional<detail::attempt_plan> plan) const {
            core->template start<false>(std::forward<Handler>(handler), *req, *ctx, std::move(r), plan);
        }
    };

    template <resil::clock Clock>
    struct initiate_stream {
        std::shared_ptr<detail::asio_multi> core;
        template <class Handler>
        void operator()(Handler&& handler, const request* req, basic_context<Clock>* ctx, response&& r,
                        std::optional<detail::attempt_plan> plan, detail::stream_call call) const {
            core->template start<true>(std::forward<Handler>(handler), *req, *ctx, std::move(r), plan, &call);
        }
    };

    static std::shared_ptr<detail::asio_multi> make_core(executor_type ex, client_options options,
                                                         const async_options& limits) {
        throw_if_invalid("resil::curl::async_client", options.validate());
        throw_if_invalid("resil::curl::async_client", limits.validate());
        return std::make_shared<detail::asio_multi>(
            std::move(ex), std::move(options),
            detail::asio_multi::limits{limits.max_in_flight, limits.max_idle_transfers, limits.max_host_connections,
                                       limits.max_concurrent_streams, limits.wait_for_multiplexing});
    }

    detail::asio_multi& require() const {
        if (!core_) throw std::logic_error("resil::curl::async_client: used after being moved from");
        return *core_;
    }

    void close() noexcept {
        if (core_) core_->shutdown();
        core_.reset();
    }

    std::shared_ptr<detail::asio_multi> core_;
};

}  // namespace resil::curl
