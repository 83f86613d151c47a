// resil/curl_asio/detail/per_socket_waits.hpp — the asynchronous client's
// wait for libcurl's sockets where there is no epoll, or with
// RESIL_CURL_ASYNC_PER_SOCKET_WAITS (chosen in socket_waits.hpp): each
// socket is an Asio descriptor with a reactor wait of its own per direction
// libcurl waits for, started again after each readiness. The descriptors
// never close a socket: libcurl does.
#pragma once

#include <curl/curl.h>

#include <asio/any_io_executor.hpp>
#include <asio/error.hpp>
#include <asio/posix/stream_descriptor.hpp>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

namespace resil::curl::detail {

/// libcurl's sockets, each watched by an Asio descriptor of its own;
/// `Multi` is the multi handle's driver that owns it (asio_multi, which
/// socket_waits.hpp says what it is asked for).
template <class Multi>
class per_socket_waits {
public:
    per_socket_waits(Multi& multi, const ::asio::any_io_executor&) noexcept : multi_(multi) {}
    per_socket_waits(const per_socket_waits&) = delete;
    per_socket_waits& operator=(const per_socket_waits&) = delete;

    /// A socket the client's open-socket callback made: registered with the
    /// reactor until libcurl closes it, not only until CURL_POLL_REMOVE.
    void opened(curl_socket_t s) noexcept {
        forget(s);  // a number reused behind our back: its old entry is stale
        try {
            auto& entry = adopt(s);
            entry.opened_here = true;
        } catch (...) {  // registered later, when libcurl first watches it
        }
    }

    /// CURLMOPT_SOCKETFUNCTION: what libcurl waits for on `s` now.
    void on_socket(CURL* easy, curl_socket_t s, int what) noexcept {
        auto it = sockets_.find(s);
        if (what == CURL_POLL_REMOVE) {
            // Sockets libcurl opened itself (the threaded resolver's) may be
            // closed without the close-socket callback: let go of them now.
            if (it == sockets_.end()) return;
            if (!it->second->opened_here) return forget(s);
            it->second->what = 0;  // a pending wait that completes is ignored, not renewed
            multi_.left_idle(easy, s);
            return;
        }
        try {
            if (it == sockets_.end()) {
                adopt(s);
                it = sockets_.find(s);
            }
            it->second->what = what;
            watch(s, *it->second);
        } catch (...) {
            // Not watched: the transfers on it end at their limits.
            if (it != sockets_.end()) forget(s);
        }
    }

    /// The descriptor stops watching `s` without closing it (libcurl does).
    void forget(curl_socket_t s) noexcept {
        auto it = sockets_.find(s);
        if (it == sockets_.end()) return;
        it->second->descriptor.release();
        sockets_.erase(it);
    }

    /// A transfer of libcurl's uses the socket now (idle_connections).
    bool watched(curl_socket_t s) noexcept {
        const auto it = sockets_.find(s);
        return it != sockets_.end() && it->second->what != 0;
    }

    /// Readiness was put off inside libcurl: every socket libcurl watches is
    /// waited for again.
    void rewatch() noexcept {
        for (auto& [s, e] : sockets_) {
            if (multi_.closed_) return;
            if (e->what == 0) continue;
            try {
                watch(s, *e);
            } catch (...) {  // not watched: the transfers on it end at their limits
            }
        }
    }

    /// The client is going: every descriptor lets go of its socket (its
    /// pending waits complete as aborted); the sockets are left to libcurl.
    void shutdown() noexcept {
        for (auto& entry : sockets_) entry.second->descriptor.release();
        sockets_.clear();
    }

private:
    struct socket_entry {
        ::asio::posix::stream_descriptor descriptor;
        std::uint64_t generation;
        int what = 0;
        bool reading = false;
        bool writing = false;
        bool opened_here = false;  ///< made by on_open_socket: watched until closed, not only until CURL_POLL_REMOVE
        socket_entry(const ::asio::any_io_executor& ex, std::uint64_t g) : descriptor(ex), generation(g) {}
    };

    // The entry is in the map before its descriptor owns `s`: a throw (no
    // memory) can then never leave a descriptor whose destructor closes
    // libcurl's socket.
    socket_entry& adopt(curl_socket_t s) {
        auto entry = std::make_unique<socket_entry>(multi_.executor(), ++socket_generation_);
        auto& e = *entry;
        const auto [pos, inserted] = sockets_.try_emplace(s, std::move(entry));
        if (!inserted) return *pos->second;  // already known (callers forget stale entries first)
        try {
            e.descriptor.assign(s);
        } catch (...) {  // not assigned: the entry closes nothing
            sockets_.erase(pos);
            throw;
        }
        return e;
    }

    // What a pending wait holds: the client, which owns this, so that a
    // wait that completes after the client is gone finds it (closed).
    std::shared_ptr<per_socket_waits> keep_alive() { return {multi_.shared_from_this(), this}; }

    void watch(curl_socket_t s, socket_entry& e) {
        if ((e.what & CURL_POLL_IN) && !e.reading) {
            e.reading = true;
            e.descriptor.async_wait(::asio::posix::stream_descriptor::wait_read,
                                    [self = keep_alive(), s, g = e.generation](const ::asio::error_code& ec) {
                                        self->on_ready(s, g, CURL_CSELECT_IN, ec);
                                    });
        }
        if ((e.what & CURL_POLL_OUT) && !e.writing) {
            e.writing = true;
            e.descriptor.async_wait(::asio::posix::stream_descriptor::wait_write,
                                    [self = keep_alive(), s, g = e.generation](const ::asio::error_code& ec) {
                                        self->on_ready(s, g, CURL_CSELECT_OUT, ec);
                                    });
        }
    }

    void on_ready(curl_socket_t s, std::uint64_t generation, int direction, const ::asio::error_code& ec) {
        if (multi_.closed_) return;
        auto it = sockets_.find(s);
        if (it == sockets_.end() || it->second->generation != generation) return;  // released since
        auto& e = *it->second;
        (direction == CURL_CSELECT_IN ? e.reading : e.writing) = false;
        if (ec == ::asio::error::operation_aborted) return;
        if (multi_.put_off(Multi::deferred_sockets)) return;
        const int wanted = direction == CURL_CSELECT_IN ? CURL_POLL_IN : CURL_POLL_OUT;
        if (!(e.what & wanted)) return;  // libcurl no longer waits for this direction
        multi_.act(s, ec ? CURL_CSELECT_ERR : direction);
        // The socket may be gone, or another with its number, since.
        it = sockets_.find(s);
        if (!multi_.closed_ && it != sockets_.end() && it->second->generation == generation) watch(s, *it->second);
    }

    Multi& multi_;
    std::unordered_map<curl_socket_t, std::unique_ptr<socket_entry>> sockets_;
    std::uint64_t socket_generation_ = 0;
};

}  // namespace resil::curl::detail
