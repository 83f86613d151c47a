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
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stop_token>
#include <string>

#include "../../clock.hpp"
#include "../../context.hpp"
#include "../../idempotency_key.hpp"
#include "../../timeouts.hpp"
#include "../options.hpp"
#include "../request.hpp"
#include "../response.hpp"
#include "../../detail/platform.hpp"
#include "attempt.hpp"
#include "capture.hpp"
#include "handles.hpp"
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
        if (!transfer_begin::prepare(s, req, t, key, options, r)) return;

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
        const auto elapsed = clock.now() - started;

        CURLcode code = CURLE_OK;
        if (end == transfer_end::finished) {
            int queued = 0;
            while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == e) code = msg->data.result;
            }
        }
        transfer_result::read(s, r, end, code, options);
        A::timings(r).total = std::chrono::duration_cast<duration>(elapsed);
    }
};

}  // namespace resil::curl::detail
