// resil/curl_asio/detail/asio_multi.hpp — libcurl's multi handle driven by
// an Asio executor (the asynchronous client, resil/curl_asio/async_client.hpp),
// and the calls it completes: CURLMOPT_SOCKETFUNCTION hands libcurl's
// sockets to the socket-wait backend (socket_waits.hpp: an epoll set the
// reactor watches as one descriptor on Linux, elsewhere and with
// RESIL_CURL_ASYNC_PER_SOCKET_WAITS an Asio descriptor per socket), which
// calls back socket_action() when one is ready; CURLMOPT_TIMERFUNCTION sets one
// steady_timer; each transfer is a pooled easy_state with its own timer for
// resil's limits; a finished call's handler waits in its async_completion
// (async_completion.hpp).
//
// The rules it keeps (from libcurl's documentation and source, 7.88):
//  - libcurl is never called from inside one of its callbacks: the timer
//    callback only sets the timer (even for 0 ms), and the client's work
//    reached inside libcurl (a sink that runs the io_context, a cancellation
//    there) waits until libcurl returns (run_deferred);
//  - a socket is closed only when libcurl asks (the close-socket callback,
//    the authoritative "socket gone" signal), after it has left the set (or
//    its descriptor was released); sockets libcurl opened itself are let go
//    at CURL_POLL_REMOVE (the threaded resolver's socketpair never reaches
//    the close callback);
//  - readiness and completions of waits that outlived their socket, timer or
//    transfer are recognised by generation counters and ignored;
//  - a transfer's completion never runs inside libcurl or inside this
//    code's own state changes, so a handler may start calls or destroy the
//    client: it is posted, or, for the transfers a wake-up of the reactor
//    or libcurl's "at once" action finished, run once that work is done
//    (deliver_ready).
#pragma once

#include <curl/curl.h>
#include <unistd.h>

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../clock.hpp"
#include "../../context.hpp"
#include "../../curl/options.hpp"
#include "../../curl/request.hpp"
#include "../../curl/response.hpp"
#include "../../curl/detail/attempt.hpp"
#include "../../curl/detail/capture.hpp"
#include "../../curl/detail/connection_setup.hpp"
#include "../../curl/detail/handles.hpp"
#include "../../curl/detail/idle_connections.hpp"
#include "../../curl/detail/setup.hpp"
#include "../../curl/detail/stream.hpp"
#include "../../curl/detail/transfer_result.hpp"
#include "../../curl/streaming.hpp"
#include "async_completion.hpp"
#include "socket_waits.hpp"

namespace resil::curl::detail {

/// A streamed call's sink and limits, for the transfer that runs it.
struct stream_call {
    sink_ref sink;
    stream_options limits;
};

class asio_multi;
struct async_client_probe;  // the tests' view of the client's internals

/// One pooled transfer: an easy handle and its buffers (easy_state), what
/// the call in flight on it needs, and its timer for resil's limits.
struct async_transfer : easy_state {
    asio_multi* owner = nullptr;
    std::uint32_t index = 0;
    bool active = false;    ///< a call is in flight on it
    bool leaving_finished = false;  ///< finish() is taking the transfer libcurl finished out of the multi handle
    bool in_multi = false;  ///< the easy handle is in the multi handle
    bool pipewait = false;  ///< CURLOPT_PIPEWAIT as last set
    /// The connection libcurl said this call left idle (left_idle), as it
    /// identified it then: finish() need not note that one again.
    /// local_port 0: none.
    idle_connections::identity idle_noted{};
    /// The URL's scheme and authority whose origin (connection_setup::origin_of)
    /// `origin` holds, for a request without a pinned endpoint; empty: none.
    /// A pooled transfer's calls mostly go where its last one went: the next
    /// one compares this prefix instead of parsing and hashing its URL again.
    std::string origin_prefix;
    /// The call's response, filled in its completion's storage
    /// (async_completion::result): never moved on its way to the handler
    /// but into the handler's own argument. Null between calls.
    response* out = nullptr;
    async_completion* completion = nullptr;

    // The call's clock (the context's), read through a function pointer.
    const void* clock = nullptr;
    time_point (*read_clock)(const void*) noexcept = nullptr;
    time_point started{};
    time_point ends_at = time_point::max();
    read_idle_watch read_watch{};
    std::optional<stream_timers> stream_watch;  ///< a stream's first-byte and idle limits
    sink_ref sink{};                            ///< a stream's sink, which transfer.stream points at
    time_point bytes_at{};        ///< when a callback last saw a byte or a send
    /// The shortest of the limits a byte or a send restarts (read, first
    /// byte, idle); zero when none is set.
    duration touch_horizon{};
    std::uint64_t timer_generation = 0;
    bool timer_pending = false;  ///< a wait of `timer` is still to complete
    /// Idle with that wait still pending, left for the next call
    /// (asio_multi::release, sweep_parked).
    bool parked = false;
    /// Why the call was cancelled inside libcurl, to be ended when that
    /// libcurl call returns (run_deferred); empty otherwise.
    std::string_view cancel_why{};
    /// Its timer fired inside libcurl: its limits are looked at when that
    /// libcurl call returns (run_deferred).
    bool watch_deferred = false;
    /// The call's clock is resil::steady_clock, whose readings are the
    /// steady_clock instants the transfer's timer waits for: one reading serves both.
    bool steady = false;
    ::asio::steady_timer timer;

    struct stop_request {
        asio_multi* owner;
        std::uint32_t index;
        std::uint64_t generation;
        void operator()() const noexcept;
    };
    std::optional<std::stop_callback<stop_request>> on_stop;
    ::asio::cancellation_slot cancel_slot{};

    explicit async_transfer(const ::asio::any_io_executor& ex) : timer(ex) {}

    [[nodiscard]] time_point now() const noexcept { return read_clock(clock); }
};

/// The multi handle, its sockets and timer, and the pool of transfers.
/// Lives in a shared_ptr: waits still pending on the executor hold it, so a
/// wait that completes after the client is gone finds it (closed).
class asio_multi : public std::enable_shared_from_this<asio_multi> {
public:
    struct limits {
        std::size_t max_in_flight;
        std::size_t max_idle_transfers;
        long max_host_connections;
        long max_concurrent_streams;
        bool wait_for_multiplexing;
    };

    asio_multi(::asio::any_io_executor ex, client_options options, limits l)
        : ex_(std::move(ex)), options_(std::move(options)), limits_(l), timer_(ex_), socket_waits_(*this, ex_) {
        ensure_curl_initialised();
        multi_ = curl_multi_init();
        if (!multi_) throw std::runtime_error("resil::curl::async_client: libcurl could not create its multi handle");
        curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &on_socket_cb);
        curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
        curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &on_timer_cb);
        curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
        curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
        curl_multi_setopt(multi_, CURLMOPT_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams);
        if (limits_.max_host_connections > 0)
            curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, limits_.max_host_connections);
        slots_.reserve(std::min<std::size_t>(limits_.max_in_flight, 1024));
        touched_.reserve(slots_.capacity());
    }
    asio_multi(const asio_multi&) = delete;
    asio_multi& operator=(const asio_multi&) = delete;
    ~asio_multi() { shutdown(); }

    [[nodiscard]] const ::asio::any_io_executor& executor() const noexcept { return ex_; }
    [[nodiscard]] const client_options& options() const noexcept { return options_; }
    [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_; }
    [[nodiscard]] std::size_t pooled() const noexcept { return pooled_; }
    /// client_metrics::fresh_connections_for_idle; read from any thread.
    [[nodiscard]] std::uint64_t fresh_for_idle() const noexcept {
        return fresh_for_idle_.load(std::memory_order_relaxed);
    }

    /// A blank response, in the buffers of one given back if any.
    response take_response() {
        if (spare_responses_.empty()) return response_access::blank();
        response r = std::move(spare_responses_.back());
        spare_responses_.pop_back();
        return r;
    }

    void give_back(response&& r) {
        if (spare_responses_.size() >= limits_.max_idle_transfers) return;
        response_access::clear(r);
        // A spare keeps a small body buffer only: idle memory stays within
        // max_idle_transfers × spare_body_capacity, not × max_body_bytes.
        auto& body = response_access::body(r);
        if (body.capacity() > spare_body_capacity) std::string().swap(body);
        spare_responses_.push_back(std::move(r));
    }

    /// Bytes of body buffer the spare responses keep.
    [[nodiscard]] std::size_t spare_body_bytes() const noexcept {
        std::size_t n = 0;
        for (const auto& r : spare_responses_) n += r.body().capacity();
        return n;
    }

    static constexpr std::size_t spare_body_capacity = std::size_t{64} << 10;

    /// Starts one transfer for a call whose prelude went ahead (`plan`), or
    /// completes it at once with `r` when it did not. Called on the
    /// executor's thread.
    template <bool WithError, resil::clock Clock, class Handler>
    void start(Handler&& h, const request& req, basic_context<Clock>& ctx, response&& r,
               const std::optional<attempt_plan>& plan, const stream_call* stream = nullptr) {
        using completion_type = async_completion_for<std::decay_t<Handler>, ::asio::any_io_executor, WithError>;
        auto* c = completion_type::make(std::decay_t<Handler>(std::forward<Handler>(h)), ex_);
        auto slot = ::asio::get_associated_cancellation_slot(c->handler());
        if (!plan) return c->complete(std::move(r));
        if (closed_) return c->complete(refuse(std::move(r), transport_status::cancelled, client_gone));
        if (in_flight_ >= limits_.max_in_flight)
            return c->complete(refuse(std::move(r), transport_status::other_error,
                                      "more calls in flight than async_options::max_in_flight; nothing was sent"));
        if (in_libcurl_ != 0)
            return c->complete(refuse(std::move(r), transport_status::other_error,
                                      "async_perform called from inside a libcurl callback (a sink); nothing was sent"));
        async_transfer* t = nullptr;
        try {
            t = &acquire();
        } catch (const std::exception& e) {
            return c->complete(refuse(std::move(r), transport_status::other_error, e.what()));
        }
        c->result = std::move(r);
        t->out = &c->result;
        const resil::timeouts& t_limits = plan->limits.timeouts;
        forget_stream(*t);
        // After a 408/421 the next attempt opens a new connection, whichever
        // pooled transfer it gets (the flag is the client's, not one easy's);
        // so does a request that may not be repeated when the idle
        // connections to its origin are too long idle (idle_connections.hpp).
        note_origin(*t, req);
        t->idle_noted = {};
        t->fresh_connection_next = fresh_connection_next_;
        if (!t->out->repeatable() &&
            kept_.retire_stale(t->origin, plan->limits.started, options_.connections.max_idle_for_unrepeatable,
                               [this](curl_socket_t s) noexcept { return socket_waits_.watched(s); }) > 0) {
            if (!t->fresh_connection_next) fresh_for_idle_.fetch_add(1, std::memory_order_relaxed);
            t->fresh_connection_next = true;
        }
        if (!transfer_begin::prepare(*t, req, t_limits, plan->key, options_, *t->out)) return fail_start(*t, c);
        const std::stop_token& stop = ctx.stop_token();
        if (stop.stop_requested()) {
            attempt_prelude::not_started(*t->out, transport_status::cancelled, CURLE_ABORTED_BY_CALLBACK);
            return fail_start(*t, c);
        }
        // Waiting for a connection being set up pays only where ALPN says
        // soon whether it multiplexes (https://, HTTP/2 asked for): over
        // http:// libcurl 7.88 learns it from the first response, so a second
        // call would wait for the first one's answer. Not with prior
        // knowledge either: libcurl 7.88 fails the calls that waited for an
        // h2c connection ("Error in the HTTP2 framing layer").
        const bool pipewait = limits_.wait_for_multiplexing && options_.http_version == http_version::http2_tls &&
                              req.url().starts_with("https://");
        if (pipewait != t->pipewait) {
            curl_easy_setopt(t->easy, CURLOPT_PIPEWAIT, pipewait ? 1L : 0L);
            t->pipewait = pipewait;
        }
        t->clock = &ctx.clock();
        t->read_clock = [](const void* clock) noexcept { return static_cast<const Clock*>(clock)->now(); };
        t->steady = std::is_same_v<Clock, resil::steady_clock>;
        t->transfer.touch_pending = false;
        t->transfer.start(*t->out, req.method() != "HEAD");
        t->started = t->now();  // what timings().total counts from, as in the blocking client
        t->bytes_at = t->started;
        t->ends_at = t_limits.total == resil::timeouts::no_limit
                         ? time_point::max()
                         : transfer_begin::saturating_end(plan->limits.started, t_limits.total);
        t->read_watch = read_idle_watch{t_limits.read, t->started};
        auto& streamed = t->transfer.stream;
        if (stream) {
            t->sink = stream->sink;
            streamed.sink = &t->sink;
            streamed.first_byte = stream->limits.first_byte;
            streamed.idle = stream->limits.idle;
        }
        t->stream_watch.emplace(streamed);
        t->touch_horizon = duration::zero();
        const auto shorter = [&](std::chrono::milliseconds limit) {
            if (limit == resil::timeouts::no_limit) return;
            if (t->touch_horizon == duration::zero() || limit < t->touch_horizon) t->touch_horizon = limit;
        };
        shorter(t_limits.read);
        shorter(streamed.first_byte);
        shorter(streamed.idle);

        ++in_libcurl_;
        const CURLMcode added = curl_multi_add_handle(multi_, t->easy);
        --in_libcurl_;
        if (added != CURLM_OK) {
            auto& out = *t->out;
            t->transfer.out = nullptr;
            response_access::transport(out) = transport_status::other_error;
            response_access::code(out) = CURLE_FAILED_INIT;
            response_access::error(out) = "curl_multi_add_handle failed";
            return fail_start(*t, c);
        }
        t->in_multi = true;
        fresh_connection_next_ = false;
        t->active = true;
        t->completion = c;
        ++in_flight_;
        const std::uint64_t generation = generations_[t->index];
        // A stop request may come from any thread: it only posts (std::stop_callback runs it at once when the stop
        // came first).
        if (stop.stop_possible()) t->on_stop.emplace(stop, async_transfer::stop_request{this, t->index, generation});
        // From here the call is registered and its completion is finish()'s:
        // a throw (no memory) ends it there, never also reaches the caller.
        try {
            if (slot.is_connected()) {
                t->cancel_slot = slot;
                slot.template emplace<cancel_request>(this, t->index, generation);
            }
            // Nothing has happened yet: the first look comes within a second, or
            // at the end of the attempt, or within a limit after the first byte
            // or send (on_touched).
            if (t->active && (t->ends_at != time_point::max() || t->touch_horizon != duration::zero())) {
                duration first_look = std::chrono::seconds{1};
                if (t->ends_at != time_point::max())
                    first_look = std::min<duration>(first_look, t->ends_at - t->started);
                arm(*t, first_look, t->steady ? steady_instant(t->started) : std::chrono::steady_clock::now());
            }
        } catch (...) {
            finish(*t, transfer_end::multi_error, CURLE_OUT_OF_MEMORY, no_memory_to_watch);
        }
    }

    /// Ends the call on transfer `index` as cancelled, if it is still the
    /// one of `generation`. Inside libcurl (a sink ran the io_context, which
    /// ran a cancellation), the removal waits for libcurl to return: a post
    /// would come back at once in the loop the sink runs. `why` is a static
    /// text.
    void cancel(std::uint32_t index, std::uint64_t generation, std::string_view why) {
        if (closed_ || index >= slots_.size() || generations_[index] != generation) return;
        auto* t = slots_[index].get();
        if (!t || !t->active) return;
        if (put_off(deferred_cancel)) {
            if (t->cancel_why.empty()) t->cancel_why = why;
            return;
        }
        finish(*t, transfer_end::cancelled, CURLE_ABORTED_BY_CALLBACK, why);
    }

    /// Completes every call in flight as cancelled (the client is going),
    /// then frees every libcurl and Asio object. Idempotent.
    void shutdown() noexcept {
        if (closed_) return;
        // From a callback inside libcurl (a sink, on_head): libcurl refuses
        // removals and cleanup there, and still uses the easy handles. The
        // caller of libcurl (socket_action(), holding `self`) shuts down on return.
        if (in_libcurl_ != 0) {
            close_pending_ = true;
            return;
        }
        for (auto& t : slots_)
            if (t && t->active) finish(*t, transfer_end::cancelled, CURLE_ABORTED_BY_CALLBACK, client_gone);
        closed_ = true;
        // Cached connections are closed here, through the close-socket callback.
        if (multi_) curl_multi_cleanup(multi_);
        multi_ = nullptr;
        socket_waits_.shutdown();
        slots_.clear();  // their timers' waits end with them
        idle_.clear();
        parked_ = 0;
        cancel_quietly(timer_);
    }

    static constexpr std::string_view client_gone =
        "the asynchronous client was destroyed while the call was in flight";
    static constexpr std::string_view cancelled_by_slot = "cancelled through the operation's cancellation slot";
    static constexpr std::string_view cancelled_by_token = "cancelled through the stop token";
    static constexpr std::string_view no_memory_to_watch =
        "no memory to watch the call (cancellation slot or timer); it was ended before anything was sent";
    static constexpr std::string_view no_memory_to_keep_watching =
        "no memory to keep watching the call's limits (its timer); it was ended";

private:

    struct cancel_request {
        asio_multi* owner;
        std::uint32_t index;
        std::uint64_t generation;
        cancel_request(asio_multi* o, std::uint32_t i, std::uint64_t g) : owner(o), index(i), generation(g) {}
        void operator()(::asio::cancellation_type type) const {
            // `total` asks for no observable effect, which a sent request cannot promise.
            if ((type & (::asio::cancellation_type::terminal | ::asio::cancellation_type::partial)) ==
                ::asio::cancellation_type::none)
                return;
            // Posted, not done here: ending the call clears the slot, which
            // must not happen inside the signal's emit (it frees this handler).
            // The removal runs on the executor's next turn.
            auto self = owner->shared_from_this();
            ::asio::post(owner->ex_, [self, i = index, g = generation] { self->cancel(i, g, cancelled_by_slot); });
        }
    };
    friend struct async_transfer::stop_request;
    friend struct async_client_probe;
    friend socket_waits<asio_multi>;

    static response refuse(response&& given, transport_status why, std::string_view message) {
        response r = std::move(given);
        response_access::transport(r) = why;
        response_access::code(r) = why == transport_status::cancelled ? CURLE_ABORTED_BY_CALLBACK : CURLE_FAILED_INIT;
        response_access::may_have_reached(r) = false;
        response_access::error(r) = message;
        return r;
    }

    // A timer's pending wait ends (operation_aborted); the generation
    // counters ignore a wait that had already expired.
    static void cancel_quietly(::asio::steady_timer& timer) noexcept {
        try {
            timer.cancel();
        } catch (...) {
        }
    }

    // The call's origin, from the transfer's last one when its URL has the
    // same scheme and authority (the same text up to the path, query or
    // fragment): the same origin, whatever origin_of makes of it.
    static void note_origin(async_transfer& t, const request& req) noexcept {
        const std::string_view url = req.url();
        const std::string_view prefix = t.origin_prefix;
        if (!req.pinned_endpoint() && !prefix.empty() && url.starts_with(prefix) &&
            (url.size() == prefix.size() || url[prefix.size()] == '/' || url[prefix.size()] == '?' ||
             url[prefix.size()] == '#'))
            return;
        t.origin = connection_setup::origin_of(req);
        t.origin_prefix.clear();
        if (req.pinned_endpoint()) return;
        const auto scheme_end = url.find("://");
        if (scheme_end == std::string_view::npos) return;
        const auto end = url.find_first_of("/?#", scheme_end + 3);
        try {
            t.origin_prefix.assign(url.substr(0, end));  // the capacity stays: one allocation per longer prefix
        } catch (...) {  // no memory: not kept, computed again next time
        }
    }

    // A stream's sink and limits belong to one call.
    static void forget_stream(async_transfer& t) noexcept {
        auto& streamed = t.transfer.stream;
        streamed.sink = nullptr;
        streamed.first_byte = resil::timeouts::no_limit;
        streamed.idle = resil::timeouts::no_limit;
    }

    void fail_start(async_transfer& t, async_completion* c) {
        release(t);  // the response is already the completion's
        const sweep_after_post sweep{*this};
        c->post();
    }

    // After a completion is posted: the handler, which runs before a sweep
    // posted after it on the same executor, may take the transfer over.
    struct sweep_after_post {
        asio_multi& m;
        ~sweep_after_post() { m.sweep_later(); }
    };

    void unpark(async_transfer& t) noexcept {
        if (!t.parked) return;
        t.parked = false;
        --parked_;
    }

    // The idle transfers' pending waits that no call took over are
    // cancelled: nothing of a finished call keeps the io_context running.
    // The parked ones are the most recently released, at the back of idle_.
    void sweep_parked() noexcept {
        if (closed_) return;
        for (std::size_t i = idle_.size(); i > 0 && parked_ > 0; --i) {
            auto* t = slots_[idle_[i - 1]].get();
            if (!t || !t->parked) continue;
            unpark(*t);
            t->timer_pending = false;
            t->timer_generation = 0;  // never a wait's (they count from 1): its aborted completion is ignored
            cancel_quietly(t->timer);
        }
    }

    // A sweep on the executor's next turn, after the completions posted
    // before it; one at a time.
    void sweep_later() noexcept {
        if (parked_ == 0 || sweep_posted_ || closed_) return;
        try {
            ::asio::post(ex_, [self = shared_from_this()] {
                self->sweep_posted_ = false;
                self->sweep_parked();
            });
            sweep_posted_ = true;
        } catch (...) {
            sweep_parked();  // no memory to post it: now
        }
    }

    async_transfer& acquire() {
        if (!idle_.empty()) {
            auto& t = *slots_[idle_.back()];
            idle_.pop_back();
            unpark(t);  // its pending wait serves this call (arm)
            return t;
        }
        std::uint32_t index;
        if (!holes_.empty()) {
            index = holes_.back();
            holes_.pop_back();
        } else {
            // Room first, for the new index and for every list that holds
            // one index or one completion per transfer: the pushes below,
            // release() and finish() then never allocate (they are noexcept).
            const std::size_t room = slots_.size() + 1;
            const auto make_room = [room](auto& v) {
                if (v.capacity() < room) v.reserve(std::max(room, 2 * v.capacity()));
            };
            make_room(slots_);
            make_room(generations_);
            make_room(idle_);
            make_room(holes_);
            make_room(ready_);
            index = static_cast<std::uint32_t>(slots_.size());
            slots_.emplace_back();
            generations_.push_back(0);
        }
        try {
            auto t = std::make_unique<async_transfer>(ex_);
            t->index = index;
            t->owner = this;
            setup::configure(*t, options_);
            CURL* e = t->easy;
            curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
            curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &on_open_socket_cb);
            curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, this);
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &on_close_socket_cb);
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
            t->transfer.touched = &on_touched;
            t->transfer.touched_by = t.get();
            slots_[index] = std::move(t);
            ++pooled_;
            size_connection_cache();
        } catch (...) {
            holes_.push_back(index);
            throw;
        }
        return *slots_[index];
    }

    // A pending wait of the transfer's timer stays for the next call, which
    // keeps it when it ends no later than that call's first look (arm): a
    // call that follows another on its transfer, as the handler of one
    // starts the next, arms no wait of its own. A wait no call took over is
    // cancelled soon after (sweep_later, sweep_parked): left pending, it
    // would keep the io_context running, up to its first look (a second),
    // after the last call ended.
    void release(async_transfer& t) noexcept {
        ++generations_[t.index];
        t.active = false;
        t.completion = nullptr;
        t.out = nullptr;
        t.clock = nullptr;
        if (idle_.size() < limits_.max_idle_transfers && !closed_) {
            idle_.push_back(t.index);
            if (t.timer_pending) {
                t.parked = true;
                ++parked_;
            }
        } else {
            const auto index = t.index;
            slots_[index].reset();  // `t` is gone from here on
            holes_.push_back(index);
            --pooled_;
            size_connection_cache();
        }
    }

    // libcurl sizes its cache of idle connections by the easy handles added
    // at the moment a connection comes back (4 per handle), and closes the
    // oldest beyond that. Here a finished call's handle leaves the multi
    // before its completion starts the next call, so after a burst of
    // completions few handles are added and kept-alive connections would be
    // closed, to be opened again by the next calls: the cache is sized by
    // the transfers pooled instead, with libcurl's own ratio.
    void size_connection_cache() noexcept {
        if (!multi_) return;
        const std::size_t most = static_cast<std::size_t>(LONG_MAX) / 4;
        curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(std::clamp<std::size_t>(pooled_, 1, most) * 4));
    }

    /// Ends the call on `t`: out of the multi handle, the outcome read by the
    /// shared transfer_result, the completion posted.
    void finish(async_transfer& t, transfer_end end, CURLcode code, std::string_view why = {}) noexcept {
        if (!t.active) return;
        t.active = false;
        // A connection kept from before, which this call reused and left
        // in libcurl's cache, is idle from now: noted by its addresses, as
        // the blocking client does, since libcurl may tell its socket's
        // CURL_POLL_REMOVE only later, when another call is under way.
        if (end == transfer_end::finished && code == CURLE_OK && t.clock) stamp_reused_idle(t);
        if (t.in_multi) {
            // libcurl may say here, rather than before, that the finished
            // transfer's connection is left idle (CURL_POLL_REMOVE): that
            // still counts for the connection's idle time (left_idle).
            t.leaving_finished = end == transfer_end::finished;
            ++in_libcurl_;
            curl_multi_remove_handle(multi_, t.easy);
            --in_libcurl_;
            t.leaving_finished = false;
            t.in_multi = false;
        }
        t.transfer.out = nullptr;
        t.cancel_why = {};
        t.watch_deferred = false;
        t.on_stop.reset();  // waits for a stop callback running on another thread (it only posts)
        if (t.cancel_slot.is_connected()) t.cancel_slot.clear();
        t.cancel_slot = {};
        auto& r = *t.out;
        try {
            transfer_result::read(t, r, end, code, options_);
            if (!why.empty()) response_access::error(r) = why;
            if (t.fresh_connection_next) fresh_connection_next_ = true;
        } catch (...) {  // no memory for an error text: the status says what happened
        }
        response_access::timings(r).total = std::chrono::duration_cast<duration>(t.now() - t.started);
        async_completion* c = t.completion;  // `r` is its result already
        // What a stream's sink threw reaches the caller (client::stream rethrows it).
        c->thrown = std::exchange(t.transfer.stream.thrown, nullptr);
        forget_stream(t);
        --in_flight_;
        release(t);
        if (hold_completions_ && ready_.size() < ready_.capacity()) {  // room for one per transfer (acquire)
            ready_.push_back(c);
            return;
        }
        try {
            c->post();
        } catch (...) {
            // No memory to post it: freed here with its handler, as any
            // failed post (a coroutine's frame is destroyed, never resumed).
        }
        sweep_later();
    }

    // resil's limits of one transfer: the absolute end of the attempt on the
    // context's clock and the read-inactivity timer, checked when its timer
    // fires and re-armed for what is left.
    void watch_limits(async_transfer& t) {
        using std::chrono::milliseconds;
        const time_point now = t.now();
        if (now >= t.ends_at) return finish(t, transfer_end::total_limit, CURLE_OPERATION_TIMEDOUT);
        // Nothing to watch (a pooled transfer's wait outlived the call that
        // armed it, and this call has no limit of resil's): no next wait.
        if (t.ends_at == time_point::max() && t.touch_horizon == duration::zero()) return;
        // A byte seen but not stamped yet (libcurl called back outside a
        // wake-up) counts as seen now: never an old stamp for new bytes.
        if (t.transfer.touch_pending) {
            t.transfer.touch_pending = false;
            t.bytes_at = now;
        }
        int wait_ms = 1000;
        if (t.read_watch.active()) {
            if (t.read_watch.observe(now, t.bytes_at, t.easy, t.transfer, wait_ms))
                return finish(t, transfer_end::read_timeout, CURLE_OPERATION_TIMEDOUT);
        }
        if (t.stream_watch && t.stream_watch->active()) {
            const auto& tr = t.transfer;
            const auto fired = t.stream_watch->observe(now, t.bytes_at, tr.sends, tr.received - tr.header_bytes, wait_ms);
            if (fired != stream_timer::none)
                return finish(t,
                              fired == stream_timer::first_byte ? transfer_end::first_byte_timeout
                                                                : transfer_end::idle_timeout,
                              CURLE_OPERATION_TIMEDOUT);
        }
        duration wait = milliseconds{wait_ms};
        if (t.ends_at != time_point::max()) wait = std::min<duration>(wait, t.ends_at - now);
        try {
            arm(t, wait, t.steady ? steady_instant(now) : std::chrono::steady_clock::now());
        } catch (...) {
            lost_watch(t);
        }
    }

    // The transfer's timer could not start its next wait (no memory), and
    // arm() had already cancelled the one pending: nothing would end the call
    // at its read or stream limits (its total, libcurl's backstop still
    // would), so it ends now. Called from the timer's handler, restart_touched_stall_watches
    // and run_deferred, never inside libcurl.
    void lost_watch(async_transfer& t) noexcept {
        finish(t, transfer_end::multi_error, CURLE_OUT_OF_MEMORY, no_memory_to_keep_watching);
    }

    // A resil::steady_clock reading as the timer's instant (rounded down
    // where steady_clock counts coarser than nanoseconds).
    static std::chrono::steady_clock::time_point steady_instant(time_point t) noexcept {
        return std::chrono::floor<std::chrono::steady_clock::duration>(t);
    }

    // A wait already pending that ends no later than asked is kept: when it
    // fires, watch_limits looks again and waits for what is left. So a
    // pooled transfer whose calls each end well within their limits re-arms
    // its timer about once per limit, not once per call. `now`: a
    // steady_clock reading, not later than the present (an earlier one only
    // makes the wait end sooner).
    void arm(async_transfer& t, duration wait, std::chrono::steady_clock::time_point now) {
        const auto at = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
        if (t.timer_pending && t.timer.expiry() <= at) return;
        // Unique across transfers: a freed transfer's aborted wait never
        // passes for the wait of the one that takes its index.
        const std::uint64_t g = ++wait_generation_;
        t.timer_generation = g;
        t.timer.expires_at(at);  // a wait pending is cancelled: its completion carries an older generation
        t.timer_pending = false;  // until the wait is started (async_wait may throw)
        t.timer.async_wait([self = shared_from_this(), index = t.index, g](const ::asio::error_code& ec) {
            if (self->closed_ || index >= self->slots_.size()) return;
            auto* s = self->slots_[index].get();
            if (!s || s->timer_generation != g) return;  // replaced by a later wait
            s->timer_pending = false;
            self->unpark(*s);
            if (ec || !s->active) return;
            if (self->put_off(deferred_watch)) {
                s->watch_deferred = true;
                return;
            }
            self->watch_limits(*s);
        });
        t.timer_pending = true;
    }

    // A callback saw a byte or a send (capture.hpp): the read timer's stamp.
    // A silence counts from then, so the timer must look again within the
    // shortest limit a byte restarts (a pending wait that comes sooner does).
    // The stamp is put off to the end of the wake-up (restart_touched_stall_watches), where
    // one clock reading serves every transfer a batch of ready sockets
    // touched: a silence then counts from a moment later than the byte, by
    // at most the batch's work, so a limit can end late by that, never early.
    static void on_touched(void* p) noexcept {
        auto& t = *static_cast<async_transfer*>(p);
        if (t.touch_horizon == duration::zero() || !t.clock || !t.active || t.transfer.touch_pending) return;
        auto& owner = *t.owner;
        t.transfer.touch_pending = true;
        try {
            owner.touched_.push_back({t.index, owner.generations_[t.index]});
        } catch (...) {  // no memory to list it: restart_touched_stall_watches looks at every transfer
            owner.touched_unlisted_ = true;
        }
    }

    // The sockets one wake-up found ready are served as one batch. The
    // completions of the transfers it finished are held (ready_) for
    // deliver_ready, unless the batch ends by an exception or inside a
    // delivery (a handler that ran the io_context): those are posted.
    struct batch_scope {
        asio_multi& m;
        int exceptions = std::uncaught_exceptions();
        explicit batch_scope(asio_multi& owner) noexcept : m(owner) { m.in_batch_ = true; }
        batch_scope(const batch_scope&) = delete;
        batch_scope& operator=(const batch_scope&) = delete;
        ~batch_scope() {
            m.in_batch_ = false;
            if (std::exchange(m.collect_pending_, false) && !m.closed_) {
                m.hold_completions_ = !m.delivering_ && std::uncaught_exceptions() == exceptions;
                m.collect();
                m.hold_completions_ = false;
            }
            m.run_deferred();  // after collect(): what libcurl finished keeps its outcome
            m.restart_touched_stall_watches();
        }
    };

    // Runs the completions a batch held, once its work is done and no
    // libcurl call is under way. A handler whose associated executor is the
    // client's, which is running this (the epoll set's wait completed on it), is
    // called from here, which spares each call a post (an
    // allocation, the scheduler's lock and queue, and a trip through its
    // loop). Any other is posted. A handler may start calls or destroy the
    // client: the held completions are already apart from any transfer. One
    // that throws: the rest are posted, then the exception goes on, out of
    // the io_context's run() as from a posted handler. One that runs the
    // io_context: the batches served meanwhile post theirs, and this list
    // is not entered again.
    void deliver_ready() {
        if (delivering_ || ready_.empty()) return;
        delivering_ = true;
        std::size_t next = 0;
        try {
            while (next < ready_.size()) ready_[next++]->run_here_or_post(ex_);
        } catch (...) {
            for (; next < ready_.size(); ++next) {
                try {
                    ready_[next]->post();
                } catch (...) {  // no memory to post it: freed with its handler, as any failed post
                }
            }
            ready_.clear();
            delivering_ = false;
            sweep_later();
            throw;
        }
        ready_.clear();
        delivering_ = false;
        // The handlers have started what they start: the transfers none took
        // over let go of their waits now, without a post.
        sweep_parked();
    }

    void restart_stall_watch(async_transfer& t, std::chrono::steady_clock::time_point steady_now) noexcept {
        t.bytes_at = t.steady ? std::chrono::time_point_cast<duration>(steady_now) : t.now();
        try {
            arm(t, t.touch_horizon, steady_now);
        } catch (...) {
            lost_watch(t);
        }
    }

    // The end of a wake-up (a batch of ready sockets, a timer), outside
    // libcurl: the transfers touched since are stamped with one reading (a
    // watch may end the call, lost_watch).
    void restart_touched_stall_watches() noexcept {
        if (touched_.empty() && !touched_unlisted_) return;
        const auto steady_now = std::chrono::steady_clock::now();
        const auto restart_if_touched = [&](async_transfer* t) {
            if (!t || !t->active || !t->transfer.touch_pending) return;
            t->transfer.touch_pending = false;
            restart_stall_watch(*t, steady_now);
        };
        for (std::size_t i = 0; i < touched_.size() && !closed_; ++i) {
            const auto [index, generation] = touched_[i];
            if (index >= slots_.size() || generations_[index] != generation) continue;  // ended since
            restart_if_touched(slots_[index].get());
        }
        touched_.clear();
        if (std::exchange(touched_unlisted_, false))
            for (std::size_t i = 0; i < slots_.size() && !closed_; ++i) restart_if_touched(slots_[i].get());
    }

    // libcurl's callbacks.
    static int on_socket_cb(CURL* easy, curl_socket_t s, int what, void* user, void*) noexcept {
        static_cast<asio_multi*>(user)->socket_waits_.on_socket(easy, s, what);
        return 0;
    }

    static int on_timer_cb(CURLM*, long ms, void* user) noexcept {
        static_cast<asio_multi*>(user)->on_timer(ms);
        return 0;
    }

    static int on_close_socket_cb(void* user, curl_socket_t s) noexcept {
        auto& self = *static_cast<asio_multi*>(user);
        self.socket_waits_.forget(s);
        self.kept_.closed(s);
        return ::close(s);
    }

    // A connection's socket is registered with the reactor once, from here
    // to its close: a kept-alive connection that libcurl stops watching
    // between transfers (CURL_POLL_REMOVE) is not deregistered and
    // registered again for the next one.
    static curl_socket_t on_open_socket_cb(void* user, curlsocktype, curl_sockaddr* address) noexcept {
        const curl_socket_t s = ::socket(address->family, address->socktype, address->protocol);
        if (s != CURL_SOCKET_BAD) static_cast<asio_multi*>(user)->socket_waits_.opened(s);
        return s;
    }

    // The reactor cannot wait on libcurl's sockets any more (socket_waits):
    // the calls in flight, which nothing drives, end now.
    void end_in_flight(const ::asio::error_code& ec) noexcept {
        constexpr std::string_view what = "the reactor could not wait on libcurl's sockets";
        std::string why;
        try {
            why = std::string(what) + ": " + ec.message();
        } catch (...) {  // no memory for the details
        }
        for (auto& t : slots_)
            if (t && t->active)
                finish(*t, transfer_end::multi_error, CURLE_FAILED_INIT, why.empty() ? what : std::string_view{why});
    }

    // libcurl stopped watching a connection's socket (CURL_POLL_REMOVE): no
    // transfer uses it now. `easy`, the transfer that left it, tells the
    // origin, the idle limit its answer announced, and the clock (the
    // call's, as the one the next call's decision reads). A socket libcurl
    // is about to close comes here too: its close follows at once.
    void left_idle(CURL* easy, curl_socket_t s) noexcept {
        void* p = nullptr;
        if (!easy || curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p) != CURLE_OK || !p) return;
        auto& t = *static_cast<async_transfer*>(p);
        // A call resil ended (removed mid-transfer) says nothing of how its
        // connection was left; an HTTP/1 one is closed.
        if ((!t.active && !t.leaving_finished) || !t.clock) return;
        const auto id = idle_connections::identity::of(easy);
        kept_.left_idle(s, id, t.origin, t.now(), t.transfer.keep_alive_timeout);
        // finish(), a moment later, need not look for it by its addresses.
        t.idle_noted = id;
    }

    void stamp_reused_idle(const async_transfer& t) noexcept {
        const auto id = idle_connections::identity::of(t.easy);
        // Noted in this call already (the usual case: libcurl lets go of the
        // socket as the answer ends, before the transfer is read as finished).
        // The ports tell it (the peer's address is in the easy handle's own
        // buffer, the same for both readings).
        const auto& noted = t.idle_noted;
        if (noted.local_port != 0 && noted.local_port == id.local_port && noted.primary_port == id.primary_port) return;
        kept_.left_idle_again(id, t.origin, t.now(), t.transfer.keep_alive_timeout);
    }

    void on_timer(long ms) noexcept {
        const std::uint64_t g = ++timer_generation_;
        if (ms < 0) {
            // No timer: a pending wait would keep the io_context running.
            curl_due_.reset();
            curl_waiting_ = false;
            ++curl_wait_id_;  // the cancelled wait's completion is ignored
            cancel_quietly(timer_);
            return;
        }
        // Never libcurl from here, even for 0 ms: the wait completes on the
        // executor. "At once" is posted, which spares the timer's kernel
        // timer an update per call. One post at a time: libcurl asks for
        // "at once" with each transfer added, and the calls that completions
        // start one after another are all served by one run of libcurl.
        try {
            if (ms == 0) {
                curl_due_.reset();  // served by the post; a pending wait that fires finds nothing due
                zero_due_ = g;
                if (zero_posted_) return;
                ::asio::post(ex_, [self = shared_from_this()] {
                    self->zero_posted_ = false;
                    // Acts only while "at once" is still libcurl's latest wish.
                    if (self->closed_ || self->timer_generation_ != self->zero_due_) return;
                    self->timeout_action_now();
                });
                zero_posted_ = true;
                return;
            }
            // libcurl moves its timer with nearly every transfer, mostly
            // later (the earliest limit of those in flight). A pending wait
            // that ends sooner is kept: it looks again when it fires
            // (on_curl_timer), instead of a cancelled wait and a new one per
            // move. Ten years at most: no overflow, and never sooner than asked.
            constexpr std::chrono::milliseconds most = std::chrono::hours{24 * 365 * 10};
            const auto due = std::chrono::steady_clock::now() + std::min(std::chrono::milliseconds{ms}, most);
            curl_due_ = due;
            if (curl_waiting_ && timer_.expiry() <= due) return;
            wait_for_curl_timer(due);
        } catch (...) {
        }
    }

    void wait_for_curl_timer(std::chrono::steady_clock::time_point at) {
        timer_.expires_at(at);  // a wait pending is cancelled: its completion carries an older id
        const std::uint64_t id = ++curl_wait_id_;
        curl_waiting_ = false;  // until the wait is started (async_wait may throw)
        timer_.async_wait([self = shared_from_this(), id](const ::asio::error_code& ec) { self->on_curl_timer(id, ec); });
        curl_waiting_ = true;
    }

    void on_curl_timer(std::uint64_t id, const ::asio::error_code& ec) {
        if (closed_ || id != curl_wait_id_) return;  // replaced by a later wait
        curl_waiting_ = false;
        if (ec || !curl_due_) return;
        if (std::chrono::steady_clock::now() < *curl_due_) {
            // libcurl moved its timer later since: wait for what is left.
            // (Its timer callback says only what changed: a run of libcurl
            // before the time would leave nobody waiting for it.)
            try {
                wait_for_curl_timer(*curl_due_);
            } catch (...) {
            }
            return;
        }
        curl_due_.reset();
        socket_action_on_timeout();
    }

    // libcurl's "at once" action, served as a wake-up of the sockets is
    // (batch_scope): it runs on the client's executor too, so the calls it
    // finished complete at its end, in place where their handler's
    // executor is the client's (deliver_ready), rather than each posted.
    void timeout_action_now() {
        if (put_off(deferred_timeout)) return;  // inside libcurl: not a batch of its own
        {
            const batch_scope batch(*this);
            socket_action(CURL_SOCKET_TIMEOUT, 0);
        }
        deliver_ready();
    }

    void socket_action_on_timeout() {
        if (!put_off(deferred_timeout)) socket_action(CURL_SOCKET_TIMEOUT, 0);
    }

    // A handler of the client run inside libcurl (a sink that runs the
    // io_context) only notes its work, for run_deferred: true then.
    bool put_off(unsigned work) noexcept {
        if (in_libcurl_ == 0) return false;
        deferred_ |= work;
        return true;
    }

    // Only where no libcurl call is under way (the entry points check).
    // Within a batch, the deferred work comes at its end, after collect().
    void socket_action(curl_socket_t s, int events) {
        socket_action_once(s, events);
        if (!in_batch_) run_deferred();
    }

    void socket_action_once(curl_socket_t s, int events) {
        int running = 0;
        ++in_libcurl_;
        const CURLMcode rc = curl_multi_socket_action(multi_, s, events, &running);
        --in_libcurl_;
        if (rc == CURLM_OK && in_batch_ && !close_pending_) {
            // Read once at the end of the wake-up (batch_scope). Each
            // curl_multi_remove_handle walks libcurl's connection cache:
            // removals made together find it in the CPU's cache, one after
            // each socket's reads finds it evicted (3× the cycles, measured).
            collect_pending_ = true;
        } else {
            // Now: what libcurl reported finished keeps its outcome before an
            // error or the client's end cuts the rest.
            collect_pending_ = false;
            collect();
            // "The state of all transfers is uncertain": each in flight ends.
            if (rc != CURLM_OK)
                for (auto& t : slots_)
                    if (t && t->active)
                        finish(*t, transfer_end::multi_error,
                               rc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_FAILED_INIT);
        }
        if (close_pending_ && in_libcurl_ == 0) shutdown();  // the client went from inside libcurl
        if (!in_batch_) restart_touched_stall_watches();
    }

    // What the client's handlers put off because they ran inside libcurl,
    // where it is not re-entrant (a nested curl_multi_socket_action answers
    // CURLM_RECURSIVE_API_CALL; a removal refused there leaves a handle in
    // the multi that the pool takes back): a sink ran the io_context, which
    // it should not. A sink runs only within socket_action(), which calls this when
    // libcurl has returned (at the end of a batch, after its collect()).
    // Passes are bounded (a sink that runs the io_context at every chunk
    // defers again each time): the rest is posted.
    void run_deferred() {
        if (deferred_ == 0 || in_libcurl_ != 0 || running_deferred_) return;
        running_deferred_ = true;
        struct reset {
            bool& flag;
            ~reset() { flag = false; }
        } const done{running_deferred_};
        for (int pass = 0; deferred_ != 0 && !closed_; ++pass) {
            if (pass == 8) {
                try {
                    ::asio::post(ex_, [self = shared_from_this()] { self->run_deferred(); });
                } catch (...) {  // no memory: the rest waits for the next call of libcurl's
                }
                return;
            }
            const unsigned what = std::exchange(deferred_, 0u);
            if (what & deferred_cancel)
                for (std::size_t i = 0; i < slots_.size() && !closed_; ++i)
                    if (auto* t = slots_[i].get(); t && t->active && !t->cancel_why.empty())
                        finish(*t, transfer_end::cancelled, CURLE_ABORTED_BY_CALLBACK, t->cancel_why);
            // Even where a stamp has started a wait since (restart_touched_stall_watches):
            // a total or first-byte limit may be due now.
            if (what & deferred_watch)
                for (std::size_t i = 0; i < slots_.size() && !closed_; ++i)
                    if (auto* t = slots_[i].get(); t && t->active && std::exchange(t->watch_deferred, false))
                        watch_limits(*t);
            if (what & deferred_sockets) socket_waits_.rewatch();
            if (what & deferred_timeout) socket_action_once(CURL_SOCKET_TIMEOUT, 0);
        }
    }

    // The transfers libcurl finished. Each message is copied before
    // finish() removes its handle (which frees it).
    void collect() {
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL* e = msg->easy_handle;
            const CURLcode code = msg->data.result;
            void* p = nullptr;
            curl_easy_getinfo(e, CURLINFO_PRIVATE, &p);
            if (p) finish(*static_cast<async_transfer*>(p), transfer_end::finished, code);
        }
    }

    ::asio::any_io_executor ex_;
    client_options options_;
    limits limits_;
    CURLM* multi_ = nullptr;
    ::asio::steady_timer timer_;
    std::uint64_t timer_generation_ = 0;
    std::optional<std::chrono::steady_clock::time_point> curl_due_;  ///< libcurl's timer, unless none or "at once"
    std::uint64_t curl_wait_id_ = 0;  ///< of the latest wait of timer_
    bool curl_waiting_ = false;       ///< that wait is pending
    std::uint64_t zero_due_ = 0;  ///< the generation of libcurl's latest "at once" (0 ms)
    bool zero_posted_ = false;    ///< a run of libcurl for "at once" is posted and still to come
    socket_waits<asio_multi> socket_waits_;  ///< libcurl's sockets, waited for by the reactor
    std::uint64_t wait_generation_ = 0;  ///< of the transfers' timer waits
    std::vector<std::pair<std::uint32_t, std::uint64_t>> touched_;  ///< (index, generation) to restart_touched_stall_watches
    bool touched_unlisted_ = false;  ///< a touched transfer is missing from touched_ (no memory): look at all
    bool in_batch_ = false;  ///< serving a batch of ready sockets: restart_touched_stall_watches comes at its end
    bool collect_pending_ = false;  ///< libcurl ran within the batch: its finished transfers are read at its end
    bool hold_completions_ = false;  ///< finish() holds completions in ready_ (the end of a batch)
    bool delivering_ = false;        ///< deliver_ready is running them
    std::vector<async_completion*> ready_;  ///< completions held for deliver_ready
    std::vector<std::unique_ptr<async_transfer>> slots_;
    std::vector<std::uint64_t> generations_;  ///< per slot index, outliving the slot
    std::vector<std::uint32_t> idle_;         ///< pooled transfers ready for a call
    std::vector<std::uint32_t> holes_;        ///< indexes whose transfer was freed
    std::vector<response> spare_responses_;
    std::size_t in_flight_ = 0;
    std::size_t pooled_ = 0;
    std::size_t parked_ = 0;     ///< idle transfers whose timer's wait is pending (release)
    bool sweep_posted_ = false;  ///< a sweep_parked is posted and still to come
    int in_libcurl_ = 0;
    // Work put off inside libcurl (run_deferred).
    static constexpr unsigned deferred_cancel = 1;    ///< transfers with a cancel_why
    static constexpr unsigned deferred_watch = 2;     ///< transfers whose timer fired
    static constexpr unsigned deferred_sockets = 4;   ///< ready sockets: waited on again
    static constexpr unsigned deferred_timeout = 8;   ///< libcurl's timer
    unsigned deferred_ = 0;
    bool running_deferred_ = false;
    bool closed_ = false;
    bool close_pending_ = false;  ///< shutdown() was asked for inside libcurl
    bool fresh_connection_next_ = false;  ///< a 408/421 answered: the next attempt opens a new connection
    idle_connections kept_;               ///< the kept-alive connections, as left idle
    std::atomic<std::uint64_t> fresh_for_idle_{0};  ///< client_metrics::fresh_connections_for_idle
};

inline void async_transfer::stop_request::operator()() const noexcept {
    // Any thread: only a post, which keeps the multi alive until it runs.
    try {
        ::asio::post(owner->ex_, [self = owner->shared_from_this(), i = index, g = generation] {
            self->cancel(i, g, asio_multi::cancelled_by_token);
        });
    } catch (...) {
    }
}

}  // namespace resil::curl::detail
