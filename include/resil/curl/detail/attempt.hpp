// resil/curl/detail/attempt.hpp — what every attempt does around its
// transfer, whichever loop drives it (the blocking client's own, or the
// asynchronous client's event loop): the prelude that takes the context's
// key and limits, the easy handle's per-request set-up, and resil's own
// millisecond read-inactivity timer. One copy, so both clients judge keys,
// limits and silences alike.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../../clock.hpp"
#include "../../context.hpp"
#include "../../detail/platform.hpp"
#include "../../idempotency_key.hpp"
#include "../../timeouts.hpp"
#include "../../validation.hpp"
#include "../options.hpp"
#include "../request.hpp"
#include "../response.hpp"
#include "capture.hpp"
#include "handles.hpp"
#include "setup.hpp"
#include "stream.hpp"
#include "text.hpp"

namespace resil::curl::detail {

/// What the prelude decided for an attempt that goes ahead.
struct attempt_plan {
    const idempotency_key* key = nullptr;  ///< the context's key to send, if any
    attempt_limits limits{};               ///< the context's limits within the client's own
};

struct attempt_prelude {
    using A = response_access;

    /// Steps 1 and 2 of client::perform (resil/curl/client.hpp) for one
    /// attempt of `req` under `ctx`, with `r` blank: marks the context
    /// idempotent and repeatable as the request is, takes its key, and
    /// computes the attempt's limits. Returns the plan, or nothing when the
    /// attempt must not start (the stop token fired, no time left): then `r`
    /// says why. Throws std::invalid_argument for a negative timeout or a
    /// blank key (`who` names the client in the message).
    template <resil::clock Clock>
    static std::optional<attempt_plan> prepare(const request& req, basic_context<Clock>& ctx,
                                               const client_options& options, response& r, std::string_view who) {
        // 1. Idempotency. The operation's key is sent with a non-idempotent
        //    request; whether this attempt may be repeated is judged from this
        //    request (not from earlier requests on the same context), and a key
        //    counts only when it was sent.
        attempt_plan plan;
        bool keyed = false;
        if (const auto own = req.header(options.idempotency_key_header)) {
            // The caller's own key is sent as is (the context holds it too when
            // it is a UUID). A blank one would pass for a key and let an
            // unsafe request be retried with nothing to deduplicate it.
            if (unquote(*own).empty()) throw_empty_key(who, options.idempotency_key_header);
            keyed = true;
            if (auto parsed = parse_key(*own))
                if (!ctx.has_idempotency_key()) ctx.set_idempotency_key(*parsed);
        } else if (options.idempotency_key != key_header_format::none &&
                   (!req.idempotent() || ctx.has_idempotency_key())) {
            plan.key = &ctx.idempotency_key();
            keyed = true;
        }
        if (req.idempotent()) ctx.mark_idempotent();
        const bool repeatable = req.idempotent() || keyed;
        ctx.mark_repeatable(repeatable);

        // 2. The attempt's limits: the context's, clamped to the deadline from
        //    one clock reading, within the client's own.
        check_not_negative(who, ctx.timeouts());
        r.set_request_traits(keyed, repeatable);
        if (ctx.stop_requested()) {
            not_started(r, transport_status::cancelled, CURLE_ABORTED_BY_CALLBACK);
            return std::nullopt;
        }
        auto limits = ctx.limits_for_attempt();
        if (!limits) {
            not_started(r, transport_status::deadline_exceeded, CURLE_OPERATION_TIMEDOUT);
            return std::nullopt;
        }
        limits->timeouts = limits->timeouts.tightened_by(options.limits);
        plan.limits = *limits;
        return plan;
    }

    static void not_started(response& r, transport_status why, CURLcode code) noexcept {
        A::transport(r) = why;
        A::code(r) = code;
        A::may_have_reached(r) = false;
    }

    // A key field's value without its white space and RFC 9651 quotes.
    static std::string_view unquote(std::string_view value) noexcept {
        value = trim_ows(value);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        return trim_ows(value);
    }

    static std::optional<idempotency_key> parse_key(std::string_view value) noexcept {
        return idempotency_key::parse(unquote(value));
    }

private:
    [[noreturn]] RESIL_DETAIL_COLD static void throw_empty_key(std::string_view who, std::string_view header) {
        throw std::invalid_argument(resil::detail::concat(
            {who, ": the request's ", header,
             " header is empty; give it a key or leave the header out (the client then adds the operation's key)"}));
    }

    [[noreturn]] RESIL_DETAIL_COLD static void throw_negative(std::string_view who, const char* which,
                                                              std::chrono::milliseconds v) {
        throw std::invalid_argument(resil::detail::concat(
            {who, ": the context's ", which, " timeout is negative (", std::to_string(v.count()), " ms)"}));
    }

    static void check_not_negative(std::string_view who, const resil::timeouts& t) {
        using std::chrono::milliseconds;
        if (t.connect < milliseconds::zero()) throw_negative(who, "connect", t.connect);
        if (t.read < milliseconds::zero()) throw_negative(who, "read", t.read);
        if (t.total < milliseconds::zero()) throw_negative(who, "total", t.total);
    }
};

/// The easy handle's set-up for one transfer, before it joins a multi handle.
struct transfer_begin {
    using A = response_access;

    // libcurl refused an option, so nothing is sent: one cold function for
    // every checked setopt (detail/platform.hpp), not inlined into run.
    RESIL_DETAIL_COLD static void refused(response& r, CURLcode result, const char* option) {
        A::transport(r) = transport_status::invalid_request;
        A::code(r) = result;
        A::may_have_reached(r) = false;
        // Written into the response's own buffer, which a reused response keeps.
        auto& error = A::error(r);
        error = "libcurl refused ";
        error += option;
        error += ": ";
        error += curl_easy_strerror(result);
    }

    /// Sets the request's options on `s` (setup::request_options) and readies
    /// its callbacks to fill `r`. False when libcurl refused an option: then
    /// `r` says so and nothing may be sent.
    static bool prepare(easy_state& s, const request& req, const resil::timeouts& t, const idempotency_key* key,
                        const client_options& options, response& r) {
        s.error[0] = '\0';
        const auto set = setup::request_options(s, req, t, key, r.repeatable(), options);
        if (set.result != CURLE_OK) {
            refused(r, set.result, set.failed);
            return false;
        }
        s.fresh_connection_next = false;
        return true;
    }

    /// `started + total`, or time_point::max() where that overflows (a
    /// limit of centuries in nanoseconds): such a limit never ends the attempt.
    [[nodiscard]] static time_point saturating_end(time_point started, std::chrono::milliseconds total) noexcept {
        const auto room = std::chrono::floor<std::chrono::milliseconds>(time_point::max() - started);
        if (total >= room) return time_point::max();
        return started + total;
    }
};

/// resil's read-inactivity timer for one transfer (libcurl 7.88 has none
/// below a second). Inactivity counts from the connection on (connecting is
/// the connect limit's business); any byte in or out restarts it. The
/// driver calls observe() whenever it looks at the transfer.
struct read_idle_watch {
    std::chrono::milliseconds limit = resil::timeouts::no_limit;
    time_point last_activity{};
    bool connected = false;
    std::size_t last_received = 0;
    curl_off_t last_uploaded = 0;

    [[nodiscard]] bool active() const noexcept { return limit != resil::timeouts::no_limit; }

    /// `now`: the clock's reading; `bytes_at`: when the transfer's callbacks
    /// last saw a byte (or libcurl about to send), if the driver knows it
    /// more exactly than `now`, else `now`. Returns whether the limit passed;
    /// otherwise lowers `wait_ms` to the time left on it (rounded up).
    bool observe(time_point now, time_point bytes_at, CURL* e, const transfer_state& t, int& wait_ms) noexcept {
        curl_off_t uploaded = 0;
        curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &uploaded);
        if (!connected) {
            curl_off_t pretransfer = 0;
            long request_size = 0;
            curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
            curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
            connected = pretransfer > 0 || request_size > 0 || t.received > 0;
            if (connected) last_activity = uploaded != last_uploaded ? now : bytes_at;
        } else if (uploaded != last_uploaded) {
            last_activity = now;
        } else if (t.received != last_received) {
            last_activity = bytes_at;
        }
        last_received = t.received;
        last_uploaded = uploaded;
        return connected && limit_reached(now - last_activity, limit, wait_ms);
    }
};

}  // namespace resil::curl::detail
