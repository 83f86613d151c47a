// resil/curl/detail/stream.hpp — the state of a streamed transfer that any
// driver shares (the blocking loop today, an event loop later): the caller's
// sink behind two plain function pointers, what reached it, and the
// first-byte and idle timers, which read a clock the driver passes in.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string_view>
#include <type_traits>

#include "../../clock.hpp"
#include "../../timeouts.hpp"
#include "../streaming.hpp"

namespace resil::curl::detail {

/// A sink seen through function pointers: no allocation, no virtual call
/// table, and the sink object stays the caller's.
struct sink_ref {
    void* self = nullptr;
    stream_action (*on_chunk)(void*, std::string_view) = nullptr;
    stream_action (*on_head)(void*, const response&) = nullptr;  ///< null when the sink has none

    template <chunk_sink Sink>
    static sink_ref to(Sink& sink) noexcept {
        sink_ref ref;
        // A const sink is only ever called as one (Sink is then const-qualified).
        ref.self = const_cast<void*>(static_cast<const void*>(std::addressof(sink)));
        ref.on_chunk = [](void* s, std::string_view chunk) { return (*static_cast<Sink*>(s))(chunk); };
        if constexpr (requires(Sink& s, const response& r) {
                          { s.on_head(r) } -> std::same_as<stream_action>;
                      })
            ref.on_head = [](void* s, const response& r) { return static_cast<Sink*>(s)->on_head(r); };
        return ref;
    }
};

/// The streaming part of a transfer's state (detail/capture.hpp holds it).
/// `sink` and the limits are set for one call and cleared after it; the
/// counters are reset for every transfer.
struct stream_state {
    const sink_ref* sink = nullptr;
    std::chrono::milliseconds first_byte = resil::timeouts::no_limit;
    std::chrono::milliseconds idle = resil::timeouts::no_limit;
    std::size_t body_received = 0;  ///< body bytes of the final response so far (delivered or kept)
    std::size_t delivered = 0;      ///< bytes handed to the sink
    bool head_given = false;        ///< on_head ran (or the sink has none)
    bool stopped = false;           ///< the sink (or on_head) ended the transfer: stream_action::stop or done
    bool done = false;              ///< ... with stream_action::done: the caller has what it needs
    std::exception_ptr thrown{};    ///< what the sink threw, rethrown once the transfer is over

    void start() noexcept {
        body_received = 0;
        delivered = 0;
        head_given = false;
        stopped = false;
        done = false;
        thrown = nullptr;
    }
};

/// Whether `passed` (non-negative) reached `limit`; if not, lowers `wait_ms`
/// to the time left, rounded up (waking a little late is fine, early only
/// loops) and at most a second. Compared in whole milliseconds: `limit` in
/// nanoseconds would overflow past 292 years and fire at once.
[[nodiscard]] inline bool limit_reached(duration passed, std::chrono::milliseconds limit, int& wait_ms) noexcept {
    using std::chrono::milliseconds;
    // floor(passed) >= limit exactly when passed >= limit (limit is whole ms),
    // and limit - floor(passed) is the rounded-up time left.
    const auto whole = std::chrono::floor<milliseconds>(passed);
    if (whole >= limit) return true;
    const auto left = (limit - whole).count();
    wait_ms = std::min(wait_ms, static_cast<int>(std::clamp<milliseconds::rep>(left, 1, 1000)));
    return false;
}

/// Which stream timer fired.
enum class stream_timer : std::uint8_t { none, first_byte, idle };

/// The first-byte and idle timers of one transfer. The driver calls
/// observe() whenever libcurl has run (with its clock's reading), and
/// sleeps at most the returned wait.
struct stream_timers {
    std::chrono::milliseconds first_byte = resil::timeouts::no_limit;
    std::chrono::milliseconds idle = resil::timeouts::no_limit;
    time_point sent_at{};
    time_point last_body_at{};
    std::size_t last_body = 0;
    bool sent = false;
    bool body_started = false;

    explicit stream_timers(const stream_state& s) noexcept : first_byte(s.first_byte), idle(s.idle) {}

    [[nodiscard]] bool active() const noexcept {
        return first_byte != resil::timeouts::no_limit || idle != resil::timeouts::no_limit;
    }

    /// `sends`: times libcurl was about to send the request; `body`: body
    /// bytes so far. Returns the timer that fired, if any, and lowers
    /// `wait_ms` to the time left on the running one (rounded up: waking a
    /// little late is fine, early only loops).
    stream_timer observe(time_point now, unsigned sends, std::size_t body, int& wait_ms) noexcept {
        return observe(now, now, sends, body, wait_ms);
    }

    /// As above, where `seen` is when the transfer's callbacks last saw a
    /// byte or a send, for a driver that knows it more exactly than `now`
    /// (the asynchronous client looks only when its timer fires).
    stream_timer observe(time_point now, time_point seen, unsigned sends, std::size_t body, int& wait_ms) noexcept {
        if (!sent && sends > 0) {
            sent = true;
            sent_at = seen;
        }
        if (body != last_body) {
            body_started = true;
            last_body = body;
            last_body_at = seen;
        }
        if (!body_started) {
            if (sent && first_byte != resil::timeouts::no_limit && limit_reached(now - sent_at, first_byte, wait_ms))
                return stream_timer::first_byte;
        } else if (idle != resil::timeouts::no_limit && limit_reached(now - last_body_at, idle, wait_ms)) {
            return stream_timer::idle;
        }
        return stream_timer::none;
    }
};

}  // namespace resil::curl::detail
