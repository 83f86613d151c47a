// resil/curl_asio/async_hedged_client.hpp — hedged requests for thread-per-request
// services: a blocking client whose calls run hedged on a private event loop.
//
//   thread_local resil::curl::hedged_client http;                // one per thread
//   resil::hedge_policy hedge{{.max_hedges = 1, .delay = 20ms, .percentile = 0.95, .budget = &budget}};
//   auto pipe = resil::pipeline(resil::retry_policy{{.budget = &budget}}, std::ref(breaker));
//   auto out = pipe([&](resil::context& ctx) { return http.perform(req, ctx, hedge); });
//
// perform(req, ctx, hedge) blocks the calling thread as client::perform does
// and returns the winning copy's response: the copies are transfers of the
// client's own resil::curl::async_client (its own multi handle, one easy
// handle per copy in flight), raced by resil::asio::hedged on the client's
// own io_context, which this thread runs until the call and every copy have
// ended. So the transfer core (set-up, capture, classification) and the
// hedging rules are the asynchronous client's and hedged()'s, unchanged: the
// same limits, keys (every copy sends the call's key), never-sent vs
// ambiguous judgement, losers cancelled (their transfers removed) and a call
// that may not be repeated sent once. Needs resil::asio (standalone Asio)
// besides resil::curl.
//
// Thread-safety: one per thread, as client; ctx's stop token may fire from
// any thread and ends the call's copies at once.
#pragma once

#include "async_client.hpp"  // first: it includes resil/asio/config.hpp before Asio

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>

#include <atomic>
#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../asio/hedge.hpp"
#include "../clock.hpp"
#include "../context.hpp"
#include "../curl/classification.hpp"  // how hedged() judges each copy's response (by ADL)
#include "../curl/options.hpp"
#include "../curl/request.hpp"
#include "../curl/response.hpp"
#include "../events.hpp"
#include "../hedge.hpp"

namespace resil::curl {

/// Hedged requests for thread-per-request services: perform() blocks like
/// client::perform and returns the winning copy's response, the copies raced on
/// the client's own event loop. One per thread.
class hedged_client {
public:
    /// Throws what async_client's constructor throws for invalid options.
    explicit hedged_client(client_options options = {}, async_options limits = {})
        : http_(io_, std::move(options), limits) {}

    hedged_client(const hedged_client&) = delete;
    hedged_client& operator=(const hedged_client&) = delete;

    /// The options it was built with.
    [[nodiscard]] const client_options& options() const { return http_.options(); }

    /// One attempt of `req` under `ctx`, hedged by `hedge`: returns when a
    /// copy gave a final answer (or every copy ended) and the others were
    /// cancelled. `listener` hears the hedge's events (hedge_started,
    /// hedge_refused, hedge_cancelled). Throws what client::perform throws
    /// for a bad context or request, and std::logic_error when called again
    /// while a call runs (another thread, or from the listener).
    template <resil::clock Clock, class Listener = no_listener>
    response perform(const request& req, basic_context<Clock>& ctx, const hedge_policy& hedge,
                     Listener listener = {}) {
        if (busy_.exchange(true, std::memory_order_acquire))
            throw std::logic_error(
                "resil::curl::hedged_client: perform called while another call on this client is in progress; "
                "use one client per thread");
        struct release {
            std::atomic<bool>& busy;
            ~release() { busy.store(false, std::memory_order_release); }
        } const on_exit{busy_};
        std::optional<response> out;
        std::exception_ptr error;
        bool done = false;
        ::asio::cancellation_signal cancel;
        ::asio::co_spawn(
            io_,
            [&]() -> ::asio::awaitable<void> {
                out.emplace(co_await resil::asio::hedged(
                    hedge, ctx,
                    [&](basic_context<Clock>& c, auto token) { return http_.async_perform(req, c, std::move(token)); },
                    {}, std::move(listener)));
            },
            ::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                error = std::move(e);
                done = true;
            }));
        // Until this call is over: kept-alive connections stay watched by
        // the loop, so run() would not return by itself.
        if (io_.stopped()) io_.restart();
        std::exception_ptr thrown;
        while (!done) {
            try {
                io_.run_one();
            } catch (...) {
                // Something the loop ran threw. The call's frames refer to
                // this function's locals: they are cancelled and run to
                // their end before it returns, never left for a later call.
                if (!thrown) {
                    thrown = std::current_exception();
                    cancel.emit(::asio::cancellation_type::terminal);
                }
            }
        }
        if (thrown) std::rethrow_exception(thrown);
        if (error) std::rethrow_exception(error);
        return std::move(*out);
    }

    /// Gives a response's buffers back for a later call (async_client::recycle).
    void recycle(response&& r) { http_.recycle(std::move(r)); }

private:
    ::asio::io_context io_{1};  // first: outlives the client built on it; run by one thread
    async_client http_;
    std::atomic<bool> busy_{false};
};

}  // namespace resil::curl
