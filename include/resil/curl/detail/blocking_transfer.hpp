// resil/curl/detail/blocking_transfer.hpp — one transfer driven to its end on
// the calling thread, through the client's own multi handle: libcurl's
// connect limit, resil's absolute end of the attempt and millisecond
// read-inactivity timer, and a stop token that wakes the poll at once.
//
// Why resil times the read itself: libcurl 7.88 has no millisecond
// read-inactivity option (CURLOPT_LOW_SPEED_* works in whole seconds and
// averages), and its total timer counts from its own start and fires a
// millisecond or two late. Time here is the context's clock. A streamed
// body's first-byte and idle limits are timed the same way (detail/stream.hpp).
// Before a request that may not be repeated, the kept-alive connections to
// its origin idle close to their server's limit are retired and it opens a
// new one (detail/idle_connections.hpp); each transfer libcurl finishes
// notes its connection left idle.
#pragma once

#include <curl/curl.h>

#include "../../detail/platform.hpp"

#if RESIL_DETAIL_OS_POSIX
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <string>

#include "../../clock.hpp"
#include "../../context.hpp"
#include "../../idempotency_key.hpp"
#include "../../timeouts.hpp"
#include "../options.hpp"
#include "../request.hpp"
#include "../response.hpp"
#include "attempt.hpp"
#include "capture.hpp"
#include "connection_setup.hpp"
#include "handles.hpp"
#include "idle_connections.hpp"
#include "setup.hpp"
#include "transfer_result.hpp"

namespace resil::curl::detail {

struct blocking_transfer {
    using A = response_access;

    struct waker {
        CURLM* multi;
        void operator()() const noexcept { curl_multi_wakeup(multi); }
    };

    // The easy handle is in the multi handle exactly while one of these
    // lives, whatever throws in between.
    struct attached {
        CURLM* multi;
        CURL* easy;
        transfer_state& transfer;
        attached(CURLM* m, CURL* e, transfer_state& t) noexcept : multi(m), easy(e), transfer(t) {}
        attached(const attached&) = delete;
        attached& operator=(const attached&) = delete;
        ~attached() {
            curl_multi_remove_handle(multi, easy);
            transfer.out = nullptr;
        }
    };

    /// Sends `req` under `limits` (computed at `limits.started` on `clock`)
    /// and fills `r` with what happened.
    template <resil::clock Clock>
    static void run(handles& s, const request& req, const attempt_limits& limits, const Clock& clock,
                    const idempotency_key* key, const std::stop_token& stop, const client_options& options,
                    response& r) {
        using std::chrono::milliseconds;
        const resil::timeouts& t = limits.timeouts;
        CURL* e = s.easy;
        CURLM* m = s.multi;
        s.origin = connection_setup::origin_of(req);
        // A request that may not be repeated goes on no connection its server may be closing.
        if (!r.repeatable()) {
            const bool fresh_anyway = s.fresh_connection_next;
            if (s.idle.retire_stale(s.origin, limits.started, options.connections.max_idle_for_unrepeatable,
                                    [](curl_socket_t) noexcept { return false; }) > 0) {
                s.fresh_connection_next = true;
                if (!fresh_anyway) s.fresh_for_idle.fetch_add(1, std::memory_order_relaxed);
            }
        }
        if (!transfer_begin::prepare(s, req, t, key, options, r)) return;
        const std::uint64_t closed_before = s.closed_sockets;

        // Wakes curl_multi_poll when the stop token fires (from any thread).
        // With a token that can never fire, this registers nothing.
        const std::stop_callback<waker> on_stop(stop, waker{m});
        // A stop requested since the caller's check must not let the first
        // curl_multi_perform send the request.
        if (stop.stop_requested()) {
            A::transport(r) = transport_status::cancelled;
            A::code(r) = CURLE_ABORTED_BY_CALLBACK;
            return;
        }

        s.transfer.start(r, req.method() != "HEAD");
        if (curl_multi_add_handle(m, e) != CURLM_OK) {
            s.transfer.out = nullptr;
            A::transport(r) = transport_status::other_error;
            A::code(r) = CURLE_FAILED_INIT;
            A::error(r) = "curl_multi_add_handle failed";
            return;
        }
        const attached in_multi{m, e, s.transfer};

        transfer_end end = transfer_end::finished;
        const bool total_limited = t.total != resil::timeouts::no_limit;
        const time_point ends_at =
            total_limited ? transfer_begin::saturating_end(limits.started, t.total) : time_point::max();
        const time_point started = clock.now();
        read_idle_watch read_watch{t.read, started};
        const bool read_limited = read_watch.active();
        // A stream's first-byte and idle limits (detail/stream.hpp), on the same clock.
        stream_timers stream_timer_state(s.transfer.stream);
        const bool stream_timed = stream_timer_state.active();
        for (;;) {
            int running = 0;
            if (curl_multi_perform(m, &running) != CURLM_OK) {
                end = transfer_end::multi_error;
                break;
            }
            if (running == 0) break;
            if (stop.stop_requested()) {
                end = transfer_end::cancelled;
                break;
            }
            int wait_ms = 1000;  // libcurl shortens it to its own next timeout
            const time_point now = clock.now();
            if (total_limited) {
                // In the last millisecond the loop polls without waiting, so
                // the end is not rounded up to the next millisecond.
                if (now >= ends_at) {
                    end = transfer_end::total_limit;
                    break;
                }
                const auto left = std::chrono::floor<milliseconds>(ends_at - now).count();
                wait_ms = static_cast<int>(std::min<milliseconds::rep>(left, wait_ms));
            }
            if (read_limited && read_watch.observe(now, now, e, s.transfer, wait_ms)) {
                end = transfer_end::read_timeout;
                break;
            }
            if (stream_timed) {
                const auto& tr = s.transfer;
                const auto fired = stream_timer_state.observe(now, tr.sends, tr.received - tr.header_bytes, wait_ms);
                if (fired != stream_timer::none) {
                    end = fired == stream_timer::first_byte ? transfer_end::first_byte_timeout : transfer_end::idle_timeout;
                    break;
                }
            }
            if (curl_multi_poll(m, nullptr, 0, wait_ms, nullptr) != CURLM_OK) {
                end = transfer_end::multi_error;
                break;
            }
        }
        const time_point ended = clock.now();

        CURLcode code = CURLE_OK;
        if (end == transfer_end::finished) {
            int queued = 0;
            while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == e) code = msg->data.result;
            }
        }
        transfer_result::read(s, r, end, code, options);
        A::timings(r).total = std::chrono::duration_cast<duration>(ended - started);
        if (end == transfer_end::finished && code == CURLE_OK) left_idle(s, ended, closed_before);
    }

    /// The client's close-socket callback (CURLOPT_CLOSESOCKETFUNCTION,
    /// set by setup::configure), with its `handles` as data, which outlive
    /// the multi handle whose cache closes the last connections: a closed
    /// connection leaves the idle ones (idle_connections.hpp).
    static int on_close_socket(void* user, curl_socket_t socket) noexcept {
        auto& s = *static_cast<handles*>(user);
        s.idle.closed(socket);
        ++s.closed_sockets;
#if RESIL_DETAIL_OS_WINDOWS
        return ::closesocket(socket);
#else
        return ::close(socket);
#endif
    }

private:
    // The connection of a transfer libcurl finished is kept alive in its
    // cache, idle from `ended`. One reused and noted before is found by its
    // addresses and ports. For a new one, CURLINFO_ACTIVESOCKET names the
    // connection libcurl last put back in its cache: this transfer's, unless
    // it closed this one instead (then the socket named, an earlier
    // transfer's, is bound to another port than this transfer's connection).
    static void left_idle(handles& s, time_point ended, std::uint64_t closed_before) noexcept {
        CURL* e = s.easy;
        const auto id = idle_connections::identity::of(e);
        long new_connections = 0;
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &new_connections);
        const std::int32_t limit = s.transfer.keep_alive_timeout;
        if (new_connections == 0 && s.idle.left_idle_again(id, s.origin, ended, limit)) return;
        curl_socket_t socket = CURL_SOCKET_BAD;
        curl_easy_getinfo(e, CURLINFO_ACTIVESOCKET, &socket);
        if (socket == CURL_SOCKET_BAD) return;
        if (s.closed_sockets != closed_before && !idle_connections::still_connected_at(socket, id.local_port)) return;
        s.idle.left_idle(socket, id, s.origin, ended, limit);
    }
};

}  // namespace resil::curl::detail
