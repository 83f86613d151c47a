// resil/curl/detail/idle_connections.hpp — a client's kept-alive
// connections as they are left idle: since when, to which origin, under which
// idle limit of their server. Before a request that may not be repeated,
// those to its origin that have been idle close to their limit are retired
// and the request opens a new connection (connection_options::
// max_idle_for_unrepeatable): a server that closes an idle connection as a
// request arrives on it leaves the request ambiguous, sent and maybe unread.
//
// Both clients share it; each tells it when a connection is left idle (the
// blocking client after each transfer, by the connection's addresses and
// ports, asking for its socket, CURLINFO_ACTIVESOCKET, only for a connection
// not noted yet: that walks libcurl's whole connection cache; the
// asynchronous one at libcurl's CURL_POLL_REMOVE, which names the socket and
// the transfer leaving it) and when libcurl closes one (the close-socket
// callback, libcurl's authoritative "socket gone").
//
// Why retire, not only CURLOPT_FRESH_CONNECT: libcurl 7.88 reuses the first
// live connection of an origin in the order they were opened, so a stale one
// left in its cache would make every later such request open yet another
// connection. A retired connection is shut down (shutdown(2)), never
// closed: libcurl keeps its socket, finds the connection dead when it next
// looks (it checks every idle connection before reusing it, as for one the
// server closed) and closes it itself, through the close-socket callback.
// Before that the descriptor is checked to be the connection recorded (its
// local port), so that a number reused behind the table's back is never
// touched.
#pragma once

#include <curl/curl.h>

#include "../../detail/platform.hpp"

#if RESIL_DETAIL_OS_POSIX
#include <netinet/in.h>
#include <sys/socket.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../clock.hpp"

namespace resil::curl::detail {

class idle_connections {
public:
    /// One kept-alive connection, as last left idle.
    struct entry {
        curl_socket_t socket = CURL_SOCKET_BAD;
        time_point idle_since{};
        std::uint64_t origin = 0;
        long local_port = 0;
        long primary_port = 0;
        std::int32_t server_limit = -1;  ///< its server's Keep-Alive timeout in seconds; -1: none announced
        std::array<char, 48> primary_ip{};  ///< the peer's address as libcurl writes it (CURLINFO_PRIMARY_IP)
    };

    /// What tells a connection apart after a transfer, as libcurl reports
    /// it (CURLINFO_LOCAL_PORT, CURLINFO_PRIMARY_PORT, CURLINFO_PRIMARY_IP),
    /// without asking for its socket.
    struct identity {
        long local_port = 0;
        long primary_port = 0;
        const char* primary_ip = nullptr;

        /// The connection `easy`'s last transfer used.
        [[nodiscard]] static identity of(CURL* easy) noexcept {
            identity id;
            curl_easy_getinfo(easy, CURLINFO_LOCAL_PORT, &id.local_port);
            curl_easy_getinfo(easy, CURLINFO_PRIMARY_PORT, &id.primary_port);
            curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &id.primary_ip);
            return id;
        }

        [[nodiscard]] bool matches(const entry& e) const noexcept {
            return e.local_port == local_port && e.primary_port == primary_port && primary_ip &&
                   std::strncmp(e.primary_ip.data(), primary_ip, e.primary_ip.size()) == 0;
        }
    };

    /// The connection on `s`, identified by `id`, was left idle at `since`
    /// by a transfer to `origin` (connection_setup::origin_of) whose answer
    /// announced `server_limit` seconds (-1: none). Without memory to note
    /// it, it is simply not known (never retired).
    void left_idle(curl_socket_t s, const identity& id, std::uint64_t origin, time_point since,
                   std::int32_t server_limit) noexcept {
        if (s == CURL_SOCKET_BAD) return;
        try {
            entry& e = find_or_add(s);
            e.local_port = id.local_port;
            e.primary_port = id.primary_port;
            e.primary_ip[0] = '\0';
            if (id.primary_ip) {
                const std::size_t n = std::min(std::strlen(id.primary_ip), e.primary_ip.size() - 1);
                std::memcpy(e.primary_ip.data(), id.primary_ip, n);
                e.primary_ip[n] = '\0';
            }
            note(e, origin, since, server_limit);
        } catch (...) {
        }
    }

    /// As left_idle, for a connection already noted, found by `id` rather
    /// than by its socket: a transfer that reused a connection. False when
    /// none noted matches (then its socket must be asked for).
    bool left_idle_again(const identity& id, std::uint64_t origin, time_point since,
                         std::int32_t server_limit) noexcept {
        for (auto& e : entries_) {
            if (!id.matches(e)) continue;
            note(e, origin, since, server_limit);
            return true;
        }
        return false;
    }

    /// libcurl closes `s` (or it was never a connection kept).
    void closed(curl_socket_t s) noexcept { remove(s); }

    /// Whether `e`, idle until `now`, is too close to its server's limit for
    /// a request that may not be repeated: at N s announced, idle for N less
    /// min(N/2, 1 s) (the request and the server's own timer need that
    /// margin); otherwise idle for `fallback`.
    [[nodiscard]] static bool stale(const entry& e, time_point now, std::chrono::milliseconds fallback) noexcept {
        duration limit = fallback;
        if (e.server_limit >= 0) {
            const duration announced = std::chrono::seconds{e.server_limit};
            limit = announced - std::min<duration>(announced / 2, std::chrono::seconds{1});
        }
        return now - e.idle_since >= limit;
    }

    /// Before a request to `origin` that may not be repeated, at `now`:
    /// shuts down every connection to it that is idle (not `in_use(socket)`)
    /// and stale. Returns how many: when any, the request must open a new
    /// connection (CURLOPT_FRESH_CONNECT).
    template <class InUse>
    std::size_t retire_stale(std::uint64_t origin, time_point now, std::chrono::milliseconds fallback,
                             InUse&& in_use) noexcept {
        std::size_t retired = 0;
        for (std::size_t i = 0; i < entries_.size();) {
            const entry e = entries_[i];
            if (e.origin != origin || !stale(e, now, fallback) || in_use(e.socket)) {
                ++i;
                continue;
            }
            if (still_connected_at(e.socket, e.local_port)) {
                shut_down(e.socket);
                ++retired;
            }
            remove(e.socket);  // entries_[i] now holds another entry, or none
        }
        return retired;
    }

    /// Whether `s` is a socket bound to `local_port` (CURLINFO_LOCAL_PORT):
    /// the connection noted, not another one given its number since.
    [[nodiscard]] static bool still_connected_at(curl_socket_t s, long local_port) noexcept {
        sockaddr_storage address{};
#if RESIL_DETAIL_OS_WINDOWS
        int length = static_cast<int>(sizeof address);
#else
        socklen_t length = sizeof address;
#endif
        if (::getsockname(s, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
        long port = 0;
        if (address.ss_family == AF_INET)
            port = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
        else if (address.ss_family == AF_INET6)
            port = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
        return port == local_port;
    }

    /// The connections known idle or in use (for tests).
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

private:
    static void note(entry& e, std::uint64_t origin, time_point since, std::int32_t server_limit) noexcept {
        e.idle_since = since;
        e.origin = origin;
        e.server_limit = server_limit;
    }

    entry* find(curl_socket_t s) noexcept {
#if RESIL_DETAIL_OS_POSIX
        const auto fd = static_cast<std::size_t>(s);
        if (s < 0 || fd >= position_.size() || position_[fd] == 0) return nullptr;
        return &entries_[position_[fd] - 1];
#else
        for (auto& e : entries_)
            if (e.socket == s) return &e;
        return nullptr;
#endif
    }

    entry& find_or_add(curl_socket_t s) {
        if (entry* e = find(s)) return *e;
#if RESIL_DETAIL_OS_POSIX
        const auto fd = static_cast<std::size_t>(s);
        if (fd >= position_.size()) position_.resize(fd + 1, 0);
#endif
        entries_.push_back(entry{});
        entries_.back().socket = s;
#if RESIL_DETAIL_OS_POSIX
        position_[fd] = static_cast<std::uint32_t>(entries_.size());
#endif
        return entries_.back();
    }

    // The last entry takes the removed one's place.
    void remove(curl_socket_t s) noexcept {
        entry* e = find(s);
        if (!e) return;
        const auto index = static_cast<std::size_t>(e - entries_.data());
        if (index + 1 != entries_.size()) {
            entries_[index] = entries_.back();
#if RESIL_DETAIL_OS_POSIX
            position_[static_cast<std::size_t>(entries_[index].socket)] = static_cast<std::uint32_t>(index + 1);
#endif
        }
        entries_.pop_back();
#if RESIL_DETAIL_OS_POSIX
        position_[static_cast<std::size_t>(s)] = 0;
#endif
    }

    static void shut_down(curl_socket_t s) noexcept {
#if RESIL_DETAIL_OS_WINDOWS
        ::shutdown(s, SD_BOTH);
#else
        ::shutdown(s, SHUT_RDWR);
#endif
    }

    std::vector<entry> entries_;
#if RESIL_DETAIL_OS_POSIX
    std::vector<std::uint32_t> position_;  ///< by descriptor: 1 + the entry's index, 0 for none
#endif
};

}  // namespace resil::curl::detail
