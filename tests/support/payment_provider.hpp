// tests/support/payment_provider.hpp — a fake payment provider on 127.0.0.1:
// an HTTP/1.1 server with its own store of idempotency keys, which charges
// once per key (a repeat is answered as a replay), and which can die: stop
// listening (connections refused) at once, or while it handles a request,
// after or before recording that request's charge (the client then sees the
// connection closed without an answer). It can come back on the same port.
//
//   resil_test::payment_provider primary{"primary"};
//   primary.die_on_next_request(resil_test::payment_provider::death::after_charging);
//   ... a keyed POST to primary.url("/charge") ...
//   primary.revive();
//   CHECK(primary.charges(key) + backup.charges(key) <= 1);   // the stores are apart: only the sum can exceed 1
//
// Every answer closes its connection (Connection: close): a dead provider
// must leave no kept-alive connection behind. Linux only (poll, eventfd).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "fault_server.hpp"  // iequals_ascii

namespace resil_test {

class payment_provider {
public:
    enum class death { none, after_charging, before_charging };

    explicit payment_provider(std::string name) : name_(std::move(name)) {
        wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_ < 0) throw std::runtime_error("payment_provider: eventfd failed");
        listen_on(0);
        thread_ = std::thread([this] { serve(); });
    }
    payment_provider(const payment_provider&) = delete;
    payment_provider& operator=(const payment_provider&) = delete;
    ~payment_provider() {
        stopping_ = true;
        std::uint64_t one = 1;
        (void)!::write(wake_, &one, sizeof one);
        thread_.join();
        std::lock_guard lock(mutex_);
        if (listener_ >= 0) ::close(listener_);
        ::close(wake_);
    }

    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// Stops listening now: connections are refused until revive().
    void kill() {
        std::lock_guard lock(mutex_);
        close_listener();
        std::uint64_t one = 1;
        (void)!::write(wake_, &one, sizeof one);
    }
    /// The next request read is the provider's last: it records the charge
    /// (or not), then closes the connection without answering and stops listening.
    void die_on_next_request(death how) { dying_ = how; }
    /// Listens again on the same port.
    void revive() {
        dying_ = death::none;
        std::lock_guard lock(mutex_);
        if (listener_ < 0) listen_on(port_);
        std::uint64_t one = 1;
        (void)!::write(wake_, &one, sizeof one);
    }
    [[nodiscard]] bool alive() const {
        std::lock_guard lock(mutex_);
        return listener_ >= 0;
    }

    /// Charges made for `key` (the store charges a key once: more would be
    /// a broken store).
    [[nodiscard]] int charges(const std::string& key) const {
        std::lock_guard lock(mutex_);
        const auto it = charged_.find(key);
        return it == charged_.end() ? 0 : it->second;
    }
    /// Requests read that carried `key` (charged, replayed, or died on).
    [[nodiscard]] int requests(const std::string& key) const {
        std::lock_guard lock(mutex_);
        const auto it = seen_.find(key);
        return it == seen_.end() ? 0 : it->second;
    }
    /// The keys charged so far (each once).
    [[nodiscard]] std::set<std::string> charged_keys() const {
        std::lock_guard lock(mutex_);
        std::set<std::string> out;
        for (const auto& [key, n] : charged_) out.insert(key);
        return out;
    }
    [[nodiscard]] int total_charges() const {
        std::lock_guard lock(mutex_);
        return static_cast<int>(charged_.size());
    }

private:
    // Stops listening at once, as a process that died: shutdown() first, so
    // that a poll() still holding the socket cannot keep it accepting.
    void close_listener() {
        if (listener_ < 0) return;
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        listener_ = -1;
    }

    void listen_on(std::uint16_t port) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        // The old listener may not be gone yet: a poll() still running on it
        // holds it until that poll returns (at most its 100 ms).
        bool bound = false;
        for (int tries = 0; tries < 500 && !bound; ++tries) {
            bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
            if (!bound) std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        if (!bound || ::listen(fd, 64) != 0) {
            ::close(fd);
            throw std::runtime_error("payment_provider: cannot listen on port " + std::to_string(port));
        }
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        listener_ = fd;
    }

    void serve() {
        while (!stopping_) {
            int listener;
            {
                std::lock_guard lock(mutex_);
                listener = listener_;
            }
            pollfd fds[2] = {{wake_, POLLIN, 0}, {listener, POLLIN, 0}};
            const int n = ::poll(fds, listener >= 0 ? 2 : 1, 100);
            if (n < 0 && errno != EINTR) return;
            if (fds[0].revents & POLLIN) {
                std::uint64_t v;
                (void)!::read(wake_, &v, sizeof v);
                continue;  // the listener may have changed
            }
            if (listener < 0 || (fds[1].revents & POLLIN) == 0) continue;
            int conn;
            {
                std::lock_guard lock(mutex_);
                if (listener_ != listener) continue;  // killed meanwhile
                conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            }
            if (conn < 0) continue;
            handle(conn);
            ::close(conn);
        }
    }

    // Reads one request (head and a Content-Length body), within 2 s.
    static bool read_request(int fd, std::string& head, std::string& body) {
        std::string data;
        char buf[4096];
        std::size_t need = std::string::npos;
        for (;;) {
            if (need == std::string::npos) {
                if (const auto end = data.find("\r\n\r\n"); end != std::string::npos) {
                    head = data.substr(0, end + 2);
                    std::size_t length = 0;
                    for (std::size_t at = 0; at < head.size();) {
                        const auto eol = head.find("\r\n", at);
                        const auto line = std::string_view(head).substr(at, eol - at);
                        if (line.size() > 15 && iequals_ascii(line.substr(0, 15), "content-length:"))
                            length = std::strtoul(std::string(line.substr(15)).c_str(), nullptr, 10);
                        at = eol + 2;
                    }
                    need = end + 4 + length;
                }
            }
            if (need != std::string::npos && data.size() >= need) {
                body = data.substr(head.size() + 2, need - head.size() - 2);
                return true;
            }
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 2000) <= 0) return false;
            const auto got = ::recv(fd, buf, sizeof buf, 0);
            if (got <= 0) return false;
            data.append(buf, static_cast<std::size_t>(got));
        }
    }

    static std::string key_of(const std::string& head) {
        for (std::size_t at = 0; at < head.size();) {
            const auto eol = head.find("\r\n", at);
            const auto line = std::string_view(head).substr(at, eol - at);
            if (line.size() > 16 && iequals_ascii(line.substr(0, 16), "idempotency-key:")) {
                auto v = line.substr(16);
                while (!v.empty() && (v.front() == ' ' || v.front() == '"')) v.remove_prefix(1);
                while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.remove_suffix(1);
                return std::string(v);
            }
            at = eol + 2;
        }
        return {};
    }

    void handle(int fd) {
        std::string head, body;
        if (!read_request(fd, head, body)) return;
        const auto key = key_of(head);
        const auto how = dying_.exchange(death::none);
        bool replay = false;
        {
            std::lock_guard lock(mutex_);
            ++seen_[key];
            if (how != death::before_charging) {
                replay = charged_.count(key) != 0;
                if (!replay) charged_[key] = 1;
            }
            if (how != death::none) {
                close_listener();
                return;  // closed without an answer
            }
        }
        const std::string text = name_ + (replay ? " replayed" : " charged");
        const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(text.size()) +
                                  "\r\nConnection: close\r\n\r\n" + text;
        (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    }

    std::string name_;
    int wake_ = -1;
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<death> dying_{death::none};
    mutable std::mutex mutex_;
    std::map<std::string, int> charged_;
    std::map<std::string, int> seen_;
    std::thread thread_;
};

}  // namespace resil_test
