// tests/support/h2_script_server.hpp — a minimal HTTP/2 server without TLS
// (h2c, prior knowledge) on 127.0.0.1 that answers, refuses a stream
// (RST_STREAM REFUSED_STREAM) or sends GOAWAY before processing, as scripted:
// what nginx does only in races (a GOAWAY crossing a new request on a
// kept-alive connection) made deterministic.
//
//   resil_test::h2_script_server h2{{h2_step::answer, h2_step::refuse, h2_step::answer}};
//   client_options{.http_version = resil::curl::http_version::http2_prior_knowledge};
//   h2.url("/x") ...  h2.requests(), h2.connections()
//
// The n-th request (a HEADERS frame, any stream, any connection) gets the
// n-th step; the last step repeats. "answer" sends :status 200 and the body
// "ok" once the request's stream ended; "cut" sends the head and part of the
// body, then resets the stream. Header blocks are not decoded: the
// server answers every request the same. One connection at a time, on its
// own thread; every wait ends when the server is destroyed.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fault_server.hpp"

namespace resil_test {

enum class h2_step {
    answer,  ///< 200 "ok"
    refuse,  ///< RST_STREAM(REFUSED_STREAM) at once: not processed (RFC 9113 §8.7)
    goaway,  ///< GOAWAY(last stream 0, NO_ERROR) at once, then close: not processed
    cut,     ///< the head (:status 200) and 3 body bytes once the request's stream ended, then RST_STREAM(INTERNAL_ERROR)
};

class h2_script_server {
public:
    explicit h2_script_server(std::vector<h2_step> script) : script_(std::move(script)) {
        listener_ = detail::listen_loopback(16, port_);
        thread_ = std::thread([this] { serve(); });
    }
    h2_script_server(const h2_script_server&) = delete;
    h2_script_server& operator=(const h2_script_server&) = delete;
    ~h2_script_server() {
        stopping_ = true;
        thread_.join();
        ::close(listener_);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    /// Requests received (HEADERS frames), whatever was done with them.
    [[nodiscard]] int requests() const noexcept { return requests_.load(); }
    /// Requests answered (processed).
    [[nodiscard]] int answered() const noexcept { return answered_.load(); }
    [[nodiscard]] int connections() const noexcept { return connections_.load(); }

private:
    // Waits until `fd` is readable or the server stops.
    bool readable(int fd) const {
        while (!stopping_) {
            pollfd p{fd, POLLIN, 0};
            const int n = ::poll(&p, 1, 20);
            if (n > 0) return true;
            if (n < 0) return false;
        }
        return false;
    }

    bool read_exact(int fd, unsigned char* out, std::size_t n) const {
        std::size_t got = 0;
        while (got < n) {
            if (!readable(fd)) return false;
            const ssize_t r = ::recv(fd, out + got, n - got, 0);
            if (r <= 0) return false;
            got += static_cast<std::size_t>(r);
        }
        return true;
    }

    static void send_frame(int fd, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                           const std::string& payload) {
        std::string f;
        const auto len = static_cast<std::uint32_t>(payload.size());
        f.push_back(static_cast<char>((len >> 16) & 0xff));
        f.push_back(static_cast<char>((len >> 8) & 0xff));
        f.push_back(static_cast<char>(len & 0xff));
        f.push_back(static_cast<char>(type));
        f.push_back(static_cast<char>(flags));
        for (int shift = 24; shift >= 0; shift -= 8) f.push_back(static_cast<char>((stream >> shift) & 0xff));
        f += payload;
        (void)::send(fd, f.data(), f.size(), MSG_NOSIGNAL);
    }

    static std::string be32(std::uint32_t v) {
        std::string s;
        for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xff));
        return s;
    }

    h2_step next_step() {
        const int n = requests_++;
        if (script_.empty()) return h2_step::answer;
        return script_[std::min<std::size_t>(static_cast<std::size_t>(n), script_.size() - 1)];
    }

    void serve() {
        while (!stopping_) {
            if (!readable(listener_)) return;
            const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            ++connections_;
            connection(fd);
            ::close(fd);
        }
    }

    void connection(int fd) {
        std::array<unsigned char, 24> preface{};
        if (!read_exact(fd, preface.data(), preface.size())) return;
        send_frame(fd, 4, 0, 0, "");  // our SETTINGS: all defaults
        for (;;) {
            std::array<unsigned char, 9> head{};
            if (!read_exact(fd, head.data(), head.size())) return;
            const std::size_t len = (std::size_t{head[0]} << 16) | (std::size_t{head[1]} << 8) | head[2];
            const std::uint8_t type = head[3];
            const std::uint8_t flags = head[4];
            const std::uint32_t stream = ((std::uint32_t{head[5]} & 0x7f) << 24) | (std::uint32_t{head[6]} << 16) |
                                         (std::uint32_t{head[7]} << 8) | head[8];
            std::vector<unsigned char> payload(len);
            if (len > 0 && !read_exact(fd, payload.data(), len)) return;
            const bool end_stream = (flags & 0x1) != 0;
            if (type == 4 && (flags & 0x1) == 0) {
                send_frame(fd, 4, 0x1, 0, "");  // SETTINGS ACK
            } else if (type == 1) {              // HEADERS: a request
                switch (next_step()) {
                    case h2_step::refuse: send_frame(fd, 3, 0, stream, be32(7)); break;  // REFUSED_STREAM
                    case h2_step::goaway:
                        send_frame(fd, 7, 0, 0, be32(0) + be32(0));  // last stream 0, NO_ERROR
                        ::shutdown(fd, SHUT_WR);
                        // Let the client read it before the connection goes.
                        while (readable(fd)) {
                            std::array<char, 512> sink{};
                            if (::recv(fd, sink.data(), sink.size(), 0) <= 0) break;
                        }
                        return;
                    case h2_step::answer:
                        if (end_stream) answer(fd, stream);
                        else pending_.push_back({stream, false});
                        break;
                    case h2_step::cut:
                        if (end_stream) cut(fd, stream);
                        else pending_.push_back({stream, true});
                        break;
                }
            } else if (type == 0 && end_stream) {  // the last DATA of a request body
                for (auto it = pending_.begin(); it != pending_.end(); ++it)
                    if (it->first == stream) {
                        const bool cut_it = it->second;
                        pending_.erase(it);
                        if (cut_it) cut(fd, stream);
                        else answer(fd, stream);
                        break;
                    }
            }
        }
    }

    void answer(int fd, std::uint32_t stream) {
        ++answered_;
        send_frame(fd, 1, 0x4, stream, std::string(1, static_cast<char>(0x88)));  // :status 200 (HPACK static 8)
        send_frame(fd, 0, 0x1, stream, "ok");
    }

    // The head and part of the body, then, once the client had time to
    // read them, the stream's end.
    void cut(int fd, std::uint32_t stream) {
        send_frame(fd, 1, 0x4, stream, std::string(1, static_cast<char>(0x88)));  // :status 200, no END_STREAM
        send_frame(fd, 0, 0, stream, "par");
        pollfd p{fd, 0, 0};
        (void)::poll(&p, 1, 100);
        send_frame(fd, 3, 0, stream, be32(2));  // RST_STREAM(INTERNAL_ERROR)
    }

    std::vector<h2_step> script_;
    std::vector<std::pair<std::uint32_t, bool>> pending_;  ///< streams waiting for their body's end; true: cut
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> requests_{0};
    std::atomic<int> answered_{0};
    std::atomic<int> connections_{0};
    std::thread thread_;
};

}  // namespace resil_test
