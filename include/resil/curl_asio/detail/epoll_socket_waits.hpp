// resil/curl_asio/detail/epoll_socket_waits.hpp — the asynchronous client's
// wait for libcurl's sockets on Linux (chosen in socket_waits.hpp): the
// sockets sit in an epoll set of the client's own, and the reactor watches
// that one descriptor. A wake-up serves every socket ready in it, and a
// socket stays in the set with its interest from one transfer to the next:
// no system call when libcurl asks for what the set already holds, where a
// reactor wait per socket (per_socket_waits.hpp) re-arms it (EPOLL_CTL_MOD)
// for every wait.
#pragma once

#if defined(__linux__)

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <asio/any_io_executor.hpp>
#include <asio/error.hpp>
#include <asio/posix/stream_descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace resil::curl::detail {

struct async_client_probe;  // the tests' view of the client's internals

/// libcurl's sockets in an epoll set that the reactor watches as one
/// descriptor; `Multi` is the multi handle's driver that owns it
/// (asio_multi, which socket_waits.hpp says what it is asked for).
template <class Multi>
class epoll_socket_waits {
public:
    /// Creates the epoll set; throws std::runtime_error when it cannot.
    epoll_socket_waits(Multi& multi, const ::asio::any_io_executor& ex) : multi_(multi), set_watch_(ex) {
        event_set_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (event_set_ < 0)
            throw std::runtime_error("resil::curl::async_client: could not create the epoll set for libcurl's sockets");
        try {
            set_watch_.assign(event_set_);  // owns it from here: closes it
        } catch (...) {
            ::close(event_set_);
            throw;
        }
    }
    epoll_socket_waits(const epoll_socket_waits&) = delete;
    epoll_socket_waits& operator=(const epoll_socket_waits&) = delete;

    /// A socket the client's open-socket callback made: kept in the set
    /// until libcurl closes it, not only until CURL_POLL_REMOVE.
    void opened(curl_socket_t s) noexcept {
        forget(s);  // a number reused behind our back: its old entry is stale
        if (s < 0) return;
        try {
            add_socket(s).opened_here = true;
        } catch (...) {  // made an entry later, when libcurl first watches it
        }
    }

    /// CURLMOPT_SOCKETFUNCTION: what libcurl waits for on `s` now.
    void on_socket(CURL* easy, curl_socket_t s, int what) noexcept {
        socket_entry* found = find_socket(s);
        if (what == CURL_POLL_REMOVE) {
            // Sockets libcurl opened itself (the threaded resolver's) may be
            // closed without the close-socket callback: let go of them now.
            if (!found) return;
            if (!found->opened_here) return forget(s);
            // A kept-alive connection stays in the set with its interest;
            // a readiness libcurl does not wait for is silenced (on_set_ready).
            unwatch(*found);
            multi_.left_idle(easy, s);
            return;
        }
        if (s < 0) return;
        try {
            if (!found) found = &add_socket(s);
        } catch (...) {
            return;  // not watched: the transfers on it end at their limits
        }
        auto& e = *found;
        if (what == CURL_POLL_NONE) {  // "not now": it stays in the set, silenced if it turns ready
            unwatch(e);
            return;
        }
        if (!set_interest(s, e, events_for(what))) {
            unwatch(e);  // not watched: the transfers on it end at their limits
            return;
        }
        if (e.what == 0) ++watched_;
        e.what = what;
        wait_for_set();
    }

    /// The socket is about to be closed (or was never ours to keep): out of
    /// the set first, so that its number, once reused, starts afresh.
    void forget(curl_socket_t s) noexcept {
        socket_entry* e = find_socket(s);
        if (!e) return;
        unwatch(*e);
        leave_set(s, *e);
        *e = socket_entry{};
    }

    /// A transfer of libcurl's uses the socket now (idle_connections).
    bool watched(curl_socket_t s) noexcept {
        const socket_entry* e = find_socket(s);
        return e && e->what != 0;
    }

    /// The set's readiness was put off inside libcurl: waited for again.
    void rewatch() noexcept { wait_for_set(); }

    /// The client is going: the set is closed, its pending wait completes
    /// as aborted; libcurl's sockets are left to libcurl.
    void shutdown() noexcept {
        sockets_.clear();  // closing the set below drops their registrations
        watched_ = 0;
        ::asio::error_code ignored;
        set_watch_.close(ignored);  // closes the set; a pending wait completes as aborted
    }

private:
    friend struct async_client_probe;

    static constexpr std::uint32_t not_in_set = ~std::uint32_t{0};

    struct socket_entry {
        std::uint64_t generation = 0;  ///< 0: no socket of this number is known
        std::uint32_t registered = not_in_set;  ///< the interest the set holds
        int what = 0;                                  ///< libcurl's interest (CURL_POLL_*); 0: not watched
        bool opened_here = false;  ///< made by on_open_socket: kept until closed, not only until CURL_POLL_REMOVE
    };

    static std::uint32_t events_for(int what) noexcept {
        return ((what & CURL_POLL_IN) ? std::uint32_t{EPOLLIN} : 0u) |
               ((what & CURL_POLL_OUT) ? std::uint32_t{EPOLLOUT} : 0u);
    }

    // The event's data carries the socket and its entry's generation: a
    // readiness fetched before the socket was closed and its number reused
    // (in the same batch) is recognised and skipped.
    bool set_interest(curl_socket_t s, socket_entry& e, std::uint32_t events) noexcept {
        if (e.registered == events) return true;
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = (e.generation << 32) | static_cast<std::uint32_t>(s);
        const int op = e.registered == not_in_set ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        if (::epoll_ctl(event_set_, op, s, &ev) != 0) return false;
        e.registered = events;
        return true;
    }

    void leave_set(curl_socket_t s, socket_entry& e) noexcept {
        if (e.registered == not_in_set) return;
        ::epoll_ctl(event_set_, EPOLL_CTL_DEL, s, nullptr);
        e.registered = not_in_set;
    }

    // The entries are indexed by descriptor: one lookup per ready socket
    // and per libcurl callback, with no hashing and no node to follow.
    // Descriptors take the lowest free numbers, so the vector is as long as
    // the highest one libcurl used (24 bytes each: 2.4 MB for a socket
    // numbered 100,000), which the descriptor limit bounds.
    socket_entry* find_socket(curl_socket_t s) noexcept {
        const auto i = static_cast<std::size_t>(s);
        if (s < 0 || i >= sockets_.size() || sockets_[i].generation == 0) return nullptr;
        return &sockets_[i];
    }

    socket_entry& add_socket(curl_socket_t s) {
        const auto i = static_cast<std::size_t>(s);
        if (i >= sockets_.size()) sockets_.resize(i + 1);
        sockets_[i] = socket_entry{};
        sockets_[i].generation = ++socket_generation_;
        return sockets_[i];
    }

    void unwatch(socket_entry& e) noexcept {
        if (e.what == 0) return;
        e.what = 0;
        // The last watched socket: a wait left pending would keep the
        // io_context running with no call in flight.
        if (--watched_ == 0 && set_waiting_) {
            ::asio::error_code ignored;
            set_watch_.cancel(ignored);
        }
    }

    // What a pending wait holds: the client, which owns this, so that a
    // wait that completes after the client is gone finds it (closed).
    std::shared_ptr<epoll_socket_waits> keep_alive() { return {multi_.shared_from_this(), this}; }

    // One reactor wait on the set while libcurl watches a socket; none
    // otherwise, so that the io_context runs out of work when no call is in
    // flight.
    void wait_for_set() {
        if (set_waiting_ || multi_.closed_ || watched_ == 0) return;
        try {
            set_watch_.async_wait(::asio::posix::stream_descriptor::wait_read,
                                  [self = keep_alive()](const ::asio::error_code& ec) { self->on_set_ready(ec); });
            set_waiting_ = true;
        } catch (...) {  // no memory: the transfers end at their limits, or at the next wait started
        }
    }

    void on_set_ready(const ::asio::error_code& ec) {
        set_waiting_ = false;
        if (multi_.closed_) return;
        if (multi_.put_off(Multi::deferred_sockets)) return;
        // Cancelled by unwatch(): libcurl may watch a socket again since.
        if (ec == ::asio::error::operation_aborted) return wait_for_set();
        // Any other error (the reactor lost the set's descriptor) would come
        // back at once for every wait started, a loop that never waits: the
        // calls in flight, which nothing drives any more, end now, and a
        // call started later ends the same way at its first wait.
        if (ec) return multi_.end_in_flight(ec);
        epoll_event ready[64];
        const int n = ::epoll_wait(event_set_, ready, 64, 0);
        serve_ready(ready, n);
        // More may be ready (64 at a time, or since): the wait completes at
        // once then. That rests on Asio 1.22's reactor, which registers the
        // set edge-triggered and re-arms it (EPOLL_CTL_MOD) for every wait it
        // starts, so that a readiness from before the wait is not lost.
        // Started before the handlers run: one that throws leaves it started.
        wait_for_set();
        multi_.deliver_ready();
    }

    // One batch: the finished transfers are read and the touched ones
    // stamped when it ends (the multi's batch_scope), before the next wait
    // is started.
    void serve_ready(const epoll_event* ready, int n) {
        const typename Multi::batch_scope batch(multi_);
        for (int i = 0; i < n && !multi_.closed_; ++i) {
            const auto s = static_cast<curl_socket_t>(static_cast<std::uint32_t>(ready[i].data.u64));
            const std::uint64_t generation = ready[i].data.u64 >> 32;
            socket_entry* found = find_socket(s);
            if (!found || (found->generation & 0xffffffffu) != generation) continue;  // closed since
            auto& e = *found;
            const std::uint32_t events = ready[i].events;
            if (e.what == 0) {
                // Idle: libcurl looks at the connection when it reuses it.
                // Out of the set (a hang-up cannot be masked), back in when
                // libcurl watches it again.
                leave_set(s, e);
                continue;
            }
            // An error or hang-up is reported as the readiness libcurl waits
            // for, as its own poll loop and a reactor wait per socket do:
            // libcurl then reads or writes and learns the real error.
            constexpr std::uint32_t broken = EPOLLERR | EPOLLHUP;
            const int flags = ((e.what & CURL_POLL_IN) && (events & (EPOLLIN | broken)) ? CURL_CSELECT_IN : 0) |
                              ((e.what & CURL_POLL_OUT) && (events & (EPOLLOUT | broken)) ? CURL_CSELECT_OUT : 0);
            if (flags == 0) continue;  // a readiness libcurl stopped waiting for within this batch
            multi_.act(s, flags);  // may open, close and forget sockets: `e` is not used after it
        }
    }

    Multi& multi_;
    int event_set_ = -1;                          ///< the epoll set of libcurl's sockets, owned by set_watch_
    ::asio::posix::stream_descriptor set_watch_;  ///< the reactor's view of event_set_
    bool set_waiting_ = false;                    ///< a reactor wait on the set is pending
    std::size_t watched_ = 0;                     ///< sockets libcurl watches now (what != 0)
    std::vector<socket_entry> sockets_;           ///< indexed by descriptor (find_socket)
    std::uint64_t socket_generation_ = 0;
};

}  // namespace resil::curl::detail

#endif  // defined(__linux__)
