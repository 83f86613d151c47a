// tests/support/fake_redis.hpp — a scripted stand-in for a Redis node on
// 127.0.0.1: it reads RESP commands (arrays of bulk strings, as hiredis
// sends them) and answers each with the raw RESP its owner's function
// returns, for answers a real single redis-server never gives (a Redis
// Cluster node's MOVED and ASK redirects).
//
//   resil_test::fake_redis node([](const std::vector<std::string>& cmd) -> std::string {
//       if (cmd[0] == "EVALSHA") return "-MOVED 3999 127.0.0.1:7001\r\n";
//       return "$40\r\n" + std::string(40, 'a') + "\r\n";
//   });
//   options.port = node.port();
//
// One thread serves every connection; every wait is bounded (50 ms polls),
// so the destructor never hangs. Linux only.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace resil_test {

/// `s` as a RESP bulk string ("$<length>\r\n<s>\r\n").
[[nodiscard]] inline std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

class fake_redis {
public:
    using responder = std::function<std::string(const std::vector<std::string>&)>;

    explicit fake_redis(responder answer) : answer_(std::move(answer)) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (listener_ < 0) throw std::runtime_error("fake_redis: socket failed");
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 16) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            ::close(listener_);
            throw std::runtime_error("fake_redis: cannot listen on 127.0.0.1");
        }
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    fake_redis(const fake_redis&) = delete;
    fake_redis& operator=(const fake_redis&) = delete;
    ~fake_redis() {
        stop_.store(true);
        thread_.join();
        ::close(listener_);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    /// Every command read so far, in order (each as its arguments).
    [[nodiscard]] std::vector<std::vector<std::string>> commands() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return commands_;
    }

    /// How many of the commands read so far are named one of `names`
    /// (e.g. {"EVALSHA", "EVAL"}: the scripts a limiter ran here).
    [[nodiscard]] int count(std::initializer_list<std::string_view> names) const {
        int n = 0;
        for (const auto& cmd : commands())
            for (const auto name : names) n += !cmd.empty() && cmd[0] == name ? 1 : 0;
        return n;
    }

private:
    struct client {
        int fd;
        std::string in;
    };

    // One complete command at the front of `in`, removed from it; false
    // while it is incomplete. Inline commands are not supported (hiredis
    // never sends them).
    static bool take_command(std::string& in, std::vector<std::string>& out) {
        out.clear();
        std::size_t pos = 0;
        const auto line = [&](std::string& text) {
            const auto end = in.find("\r\n", pos);
            if (end == std::string::npos) return false;
            text = in.substr(pos, end - pos);
            pos = end + 2;
            return true;
        };
        std::string head;
        if (!line(head) || head.empty() || head[0] != '*') return false;
        const long count = std::strtol(head.c_str() + 1, nullptr, 10);
        for (long i = 0; i < count; ++i) {
            std::string size;
            if (!line(size) || size.empty() || size[0] != '$') return false;
            const auto n = static_cast<std::size_t>(std::strtol(size.c_str() + 1, nullptr, 10));
            if (in.size() < pos + n + 2) return false;
            out.push_back(in.substr(pos, n));
            pos += n + 2;
        }
        in.erase(0, pos);
        return true;
    }

    void serve() {
        std::vector<client> clients;
        while (!stop_.load()) {
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            for (const auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
            if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
            if (fds[0].revents & POLLIN) {
                const int fd = ::accept(listener_, nullptr, nullptr);
                if (fd >= 0) clients.push_back({fd, {}});
            }
            for (std::size_t i = 1; i < fds.size(); ++i) {
                if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                client& c = clients[i - 1];
                char buf[4096];
                const auto n = ::recv(c.fd, buf, sizeof buf, 0);
                if (n <= 0) {
                    ::close(c.fd);
                    c.fd = -1;
                    continue;
                }
                c.in.append(buf, static_cast<std::size_t>(n));
                std::vector<std::string> command;
                while (take_command(c.in, command)) {
                    {
                        std::lock_guard<std::mutex> lock(mutex_);
                        commands_.push_back(command);
                    }
                    const std::string reply = answer_(command);
                    if (::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) break;
                }
            }
            std::erase_if(clients, [](const client& c) { return c.fd < 0; });
        }
        for (const auto& c : clients) ::close(c.fd);
    }

    responder answer_;
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::vector<std::vector<std::string>> commands_;
    std::thread thread_;
};

}  // namespace resil_test
