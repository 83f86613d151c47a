// tests/support/fault_server.hpp — a small HTTP/1.1 server on 127.0.0.1 that
// misbehaves on purpose, for the libcurl adapter's tests and demo: what nginx
// cannot do (hang after reading a request, reset mid-body, close without
// answering), scripted status sequences (503 then 200), and a record of every
// request it read (method, target, headers, body, arrival time).
//
//   resil_test::fault_server server;                     // an ephemeral port, its own threads
//   server.on("/flaky", {resil_test::action::respond(503), resil_test::action::respond(200, "ok")});
//   auto url = server.url("/flaky");
//   ...
//   CHECK(server.requests().size() == 2);
//
// A script is per path (the target without its query); its last action
// repeats. Unscripted paths answer 404. Every blocking wait ends when the
// server stops, so a destructor never hangs. Linux only (poll, eventfd).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace resil_test {

using std::chrono::milliseconds;

[[nodiscard]] inline bool iequals_ascii(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

/// What the server does with one request.
struct action {
    enum class kind {
        respond,              ///< answer (after `delay`, if any)
        hang,                 ///< read the request, then say nothing until the client leaves
        close_after_request,  ///< read the request, then close: the client gets an empty reply
        reset_mid_body,       ///< send the head and part of the body, then reset the connection
        drip,                 ///< send the head, then the body one byte every `delay`
        raw,                  ///< send `body` verbatim (no head of ours), then close, or hold until the client leaves
        stream,               ///< send the head, then `pieces` as chunks (chunked coding), each after its pause
    };
    kind what = kind::respond;
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    milliseconds delay{0};
    bool close_after = false;  ///< close the connection after answering
    bool hold = false;         ///< raw: keep the connection open (sending nothing more) until the client leaves
    std::vector<std::pair<milliseconds, std::string>> pieces;  ///< stream: (pause before it, bytes)
    bool cut = false;          ///< stream: close after the last piece instead of ending the body
    std::string gate;            ///< respond: wait until the test opens this gate (fault_server::open_gate)
    milliseconds idle_close{0};  ///< respond: keep the connection idle this long, then close it
    bool idle_reset = false;     ///< ... with a reset (RST) instead of a FIN
    bool drop_if_reused = false; ///< respond: on a connection that carried a request before, close unanswered

    static action respond(int status, std::string body = "", std::vector<std::pair<std::string, std::string>> headers = {}) {
        action a;
        a.status = status;
        a.body = std::move(body);
        a.headers = std::move(headers);
        return a;
    }
    static action respond_after(milliseconds delay, int status, std::string body = "") {
        action a = respond(status, std::move(body));
        a.delay = delay;
        return a;
    }
    /// Answers once the test opens `gate` (fault_server::open_gate): answers
    /// that must reach the client together, or after something else.
    static action respond_at_gate(std::string gate, int status, std::string body = "") {
        action a = respond(status, std::move(body));
        a.gate = std::move(gate);
        return a;
    }
    /// Answers with the connection kept alive, then closes it once it has
    /// been idle `idle` (with a reset, RST, when `reset`): a kept-alive
    /// connection the server drops while the client is not using it.
    static action respond_then_close_idle(int status, std::string body, milliseconds idle, bool reset) {
        action a = respond(status, std::move(body));
        a.idle_close = idle;
        a.idle_reset = reset;
        return a;
    }
    /// Answers a request that opened its connection; one that arrives on a
    /// kept-alive connection is read, then the connection is closed without
    /// an answer: a server whose idle timer fired as the request arrived
    /// (deterministic, where a real one races).
    static action respond_unless_reused(int status, std::string body = "",
                                        std::vector<std::pair<std::string, std::string>> headers = {}) {
        action a = respond(status, std::move(body), std::move(headers));
        a.drop_if_reused = true;
        return a;
    }
    static action hang() {
        action a;
        a.what = kind::hang;
        return a;
    }
    static action close_after_request() {
        action a;
        a.what = kind::close_after_request;
        return a;
    }
    static action reset_mid_body() {
        action a;
        a.what = kind::reset_mid_body;
        return a;
    }
    /// Bytes that are not necessarily HTTP (a bad status line, an HTTP/0.9
    /// reply, a head announcing more than will come): sent as they are, then
    /// the connection is closed, or held open in silence with `hold`.
    static action raw(std::string bytes, bool hold = false) {
        action a;
        a.what = kind::raw;
        a.body = std::move(bytes);
        a.hold = hold;
        return a;
    }
    /// A streamed body (Server-Sent Events by default): the head at once,
    /// then each piece as one chunk after its pause, then the body's end —
    /// or, with `cut`, the connection closed in the middle of the body.
    static action stream(std::vector<std::pair<milliseconds, std::string>> pieces, bool cut = false,
                         std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "text/event-stream"}},
                         int status = 200) {
        action a;
        a.what = kind::stream;
        a.status = status;
        a.pieces = std::move(pieces);
        a.cut = cut;
        a.headers = std::move(headers);
        return a;
    }
    static action drip(std::string body, milliseconds interval) {
        action a;
        a.what = kind::drip;
        a.body = std::move(body);
        a.delay = interval;
        return a;
    }
};

/// One request as the server read it.
struct recorded_request {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::chrono::steady_clock::time_point arrived{};
    std::size_t connection = 0;  ///< which accepted TCP connection carried it (1 for the first)

    [[nodiscard]] std::optional<std::string> header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (iequals_ascii(n, name)) return v;
        return std::nullopt;
    }
};

namespace detail {

inline void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

/// A listening TCP socket on 127.0.0.1 with an ephemeral port.
inline int listen_loopback(int backlog, std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw_errno("socket");
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, backlog) != 0) {
        ::close(fd);
        throw_errno("bind/listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    return fd;
}

}  // namespace detail

/// A loopback port with nothing listening on it: connecting is refused.
[[nodiscard]] inline std::uint16_t refused_port() {
    std::uint16_t port = 0;
    const int fd = detail::listen_loopback(1, port);
    ::close(fd);
    return port;
}

/// A listener whose accept queue is full and never drained: a new connection
/// attempt gets no answer to its SYN, so connecting times out (the kernel
/// drops SYNs to a listener with a full queue).
class full_backlog_listener {
public:
    full_backlog_listener() {
        listener_ = detail::listen_loopback(0, port_);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port_);
        // Connect until one attempt stays pending: the queue is then full.
        for (int i = 0; i < 16; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) detail::throw_errno("socket");
            fillers_.push_back(fd);
            if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) continue;
            if (errno != EINPROGRESS) detail::throw_errno("connect");
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, 200) == 0) return;  // pending: full
        }
        throw std::runtime_error("full_backlog_listener: the accept queue never filled");
    }
    full_backlog_listener(const full_backlog_listener&) = delete;
    full_backlog_listener& operator=(const full_backlog_listener&) = delete;
    ~full_backlog_listener() {
        for (const int fd : fillers_) ::close(fd);
        ::close(listener_);
    }
    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }

private:
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::vector<int> fillers_;
};

class fault_server {
public:
    fault_server() {
        listener_ = detail::listen_loopback(64, port_);
        wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wake_ < 0) {
            ::close(listener_);
            detail::throw_errno("eventfd");
        }
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    fault_server(const fault_server&) = delete;
    fault_server& operator=(const fault_server&) = delete;
    ~fault_server() { stop(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }

    /// Scripts `path`: the n-th request to it gets script[n], the last one
    /// repeating. Replaces an earlier script and restarts it.
    void on(std::string path, std::vector<action> script) {
        if (script.empty()) throw std::invalid_argument("fault_server::on: empty script");
        std::lock_guard lock(mutex_);
        scripts_[std::move(path)] = {std::move(script), 0};
    }

    /// Calls `hook` with every request as it is read, before it is answered,
    /// from the connection's thread (e.g. to log what the server saw).
    void on_request(std::function<void(const recorded_request&)> hook) {
        std::lock_guard lock(mutex_);
        hook_ = std::move(hook);
    }

    /// Every request read so far, in order of arrival.
    [[nodiscard]] std::vector<recorded_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    [[nodiscard]] std::vector<recorded_request> requests(std::string_view path) const {
        std::lock_guard lock(mutex_);
        std::vector<recorded_request> out;
        for (const auto& r : requests_)
            if (path_of(r.target) == path) out.push_back(r);
        return out;
    }
    /// TCP connections accepted so far.
    [[nodiscard]] std::size_t connections() const noexcept { return connections_.load(); }
    /// Opens `gate`: the answers waiting at it (action::respond_at_gate) go
    /// out, and later ones do not wait.
    void open_gate(const std::string& gate) {
        {
            std::lock_guard lock(mutex_);
            open_gates_.insert(gate);
        }
        gates_.notify_all();
    }

    /// Whole answers of `respond` actions written to their sockets so far.
    [[nodiscard]] std::size_t answered() const noexcept { return answered_.load(); }

    /// Stops accepting, ends every connection and joins every thread. Idempotent.
    void stop() {
        if (stopping_.exchange(true)) return;
        {
            std::lock_guard lock(mutex_);  // a worker at a gate sees stopping_ before it waits, or is woken
        }
        gates_.notify_all();
        const std::uint64_t one = 1;
        [[maybe_unused]] auto written = ::write(wake_, &one, sizeof one);
        if (acceptor_.joinable()) acceptor_.join();
        std::vector<std::thread> workers;
        {
            std::lock_guard lock(mutex_);
            for (const int fd : open_) ::shutdown(fd, SHUT_RDWR);
            workers.swap(workers_);
        }
        for (auto& w : workers) w.join();
        ::close(listener_);
        ::close(wake_);
    }

private:
    struct script_state {
        std::vector<action> steps;
        std::size_t next = 0;
    };

    static std::string_view path_of(std::string_view target) {
        return target.substr(0, std::min(target.find('?'), target.size()));
    }

    void accept_loop() {
        while (!stopping_) {
            pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_, POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0) {
                if (errno == EINTR) continue;
                return;
            }
            if (fds[1].revents != 0 || stopping_) return;
            if ((fds[0].revents & POLLIN) == 0) continue;
            const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            const std::size_t number = connections_.fetch_add(1) + 1;
            std::lock_guard lock(mutex_);
            open_.push_back(fd);
            workers_.emplace_back([this, fd, number] { serve(fd, number); });
        }
    }

    // Waits up to `timeout` for `fd` to be readable; false when the server
    // stops or the time passes. A negative timeout waits without limit.
    bool wait_readable(int fd, int timeout_ms) const {
        pollfd fds[2] = {{fd, POLLIN, 0}, {wake_, POLLIN, 0}};
        while (true) {
            const int n = ::poll(fds, 2, timeout_ms);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || fds[1].revents != 0) return false;
            return true;
        }
    }

    // Sleeps `d` unless the server stops first; false when it stopped.
    // False when the server stops first.
    bool wait_at_gate(const std::string& gate) {
        std::unique_lock lock(mutex_);
        gates_.wait(lock, [&] { return stopping_.load() || open_gates_.count(gate) != 0; });
        return !stopping_.load();
    }

    bool pause(milliseconds d) const {
        pollfd p{wake_, POLLIN, 0};
        const auto until = std::chrono::steady_clock::now() + d;
        while (true) {
            const auto left = std::chrono::ceil<milliseconds>(until - std::chrono::steady_clock::now()).count();
            if (left <= 0) return true;
            const int n = ::poll(&p, 1, static_cast<int>(left));
            if (n > 0) return false;
            if (n < 0 && errno != EINTR) return false;
        }
    }

    static bool send_all(int fd, std::string_view data) {
        while (!data.empty()) {
            const auto n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EINTR) continue;
                return false;
            }
            data.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    // Reads one request from `fd` into `req`, keeping extra bytes in `buffer`.
    bool read_request(int fd, std::string& buffer, recorded_request& req) const {
        std::size_t head_end = std::string::npos;
        char chunk[4096];
        while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
            if (!wait_readable(fd, -1)) return false;
            const auto n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) return false;
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        const std::string head = buffer.substr(0, head_end);
        buffer.erase(0, head_end + 4);
        std::size_t line_end = head.find("\r\n");
        const std::string request_line = head.substr(0, line_end);
        const auto sp1 = request_line.find(' ');
        const auto sp2 = request_line.rfind(' ');
        if (sp1 == std::string::npos || sp2 == sp1) return false;
        req.method = request_line.substr(0, sp1);
        req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
        std::size_t content_length = 0;
        while (line_end != std::string::npos && line_end < head.size()) {
            const auto start = line_end + 2;
            line_end = head.find("\r\n", start);
            const auto line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
            const auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            auto value = line.substr(colon + 1);
            value.erase(0, std::min(value.find_first_not_of(" \t"), value.size()));
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
            req.headers.emplace_back(line.substr(0, colon), value);
            if (iequals_ascii(line.substr(0, colon), "Content-Length")) {
                content_length = 0;
                for (const char c : value) {
                    if (c < '0' || c > '9' || content_length > (std::size_t{1} << 30)) return false;
                    content_length = content_length * 10 + static_cast<std::size_t>(c - '0');
                }
            }
        }
        while (buffer.size() < content_length) {
            if (!wait_readable(fd, -1)) return false;
            const auto n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) return false;
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        req.body = buffer.substr(0, content_length);
        buffer.erase(0, content_length);
        req.arrived = std::chrono::steady_clock::now();
        return true;
    }

    action next_action(std::string_view target) {
        std::lock_guard lock(mutex_);
        const auto it = scripts_.find(std::string(path_of(target)));
        if (it == scripts_.end()) return action::respond(404, "no script for this path\n");
        auto& s = it->second;
        const auto& a = s.steps[std::min(s.next, s.steps.size() - 1)];
        ++s.next;
        return a;
    }

    static std::string reason_phrase(int status) {
        switch (status) {
            case 200: return "OK";
            case 201: return "Created";
            case 404: return "Not Found";
            case 409: return "Conflict";
            case 429: return "Too Many Requests";
            case 500: return "Internal Server Error";
            case 503: return "Service Unavailable";
            default: return "Status";
        }
    }

    static std::string head_of(const action& a, std::size_t content_length, bool close) {
        std::string head = "HTTP/1.1 " + std::to_string(a.status) + " " + reason_phrase(a.status) + "\r\n";
        for (const auto& [n, v] : a.headers) head += n + ": " + v + "\r\n";
        head += "Content-Length: " + std::to_string(content_length) + "\r\n";
        if (close) head += "Connection: close\r\n";
        head += "\r\n";
        return head;
    }

    // Until the client gives up (readable at EOF) or the server stops.
    void wait_for_client_to_leave(int fd) const {
        while (wait_readable(fd, -1)) {
            char sink[512];
            if (::recv(fd, sink, sizeof sink, 0) <= 0) break;
        }
    }

    void serve(int fd, std::size_t connection) {
        std::string buffer;
        for (bool reused = false; !stopping_; reused = true) {
            recorded_request req;
            if (!read_request(fd, buffer, req)) break;
            req.connection = connection;
            const auto close_requested = req.header("Connection").value_or("") == "close";
            const action a = next_action(req.target);
            std::function<void(const recorded_request&)> hook;
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(req);
                hook = hook_;
            }
            if (hook) hook(req);
            bool keep = !close_requested && !a.close_after;
            switch (a.what) {
                case action::kind::respond:
                    if (a.drop_if_reused && reused) keep = false;
                    else if (!a.gate.empty() && !wait_at_gate(a.gate)) keep = false;
                    else if (a.delay.count() > 0 && !pause(a.delay)) keep = false;
                    else if (!send_all(fd, head_of(a, a.body.size(), !keep) + (req.method == "HEAD" ? "" : a.body))) keep = false;
                    else {
                        ++answered_;
                        if (a.idle_close.count() > 0) {
                            // Idle as long as the client sends nothing more, then closed.
                            if (!wait_readable(fd, static_cast<int>(a.idle_close.count())) && a.idle_reset) {
                                const linger hard{1, 0};  // close with RST instead of FIN
                                ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                            }
                            keep = false;
                        }
                    }
                    break;
                case action::kind::hang:
                    wait_for_client_to_leave(fd);
                    keep = false;
                    break;
                case action::kind::raw:
                    if (send_all(fd, a.body) && a.hold) wait_for_client_to_leave(fd);
                    keep = false;
                    break;
                case action::kind::close_after_request: keep = false; break;
                case action::kind::reset_mid_body: {
                    send_all(fd, head_of(a, 1000, false) + std::string(10, 'x'));
                    pause(milliseconds{20});
                    const linger hard{1, 0};  // close with RST instead of FIN
                    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                    keep = false;
                    break;
                }
                case action::kind::stream: {
                    std::string head = "HTTP/1.1 " + std::to_string(a.status) + " " + reason_phrase(a.status) + "\r\n";
                    for (const auto& [n, v] : a.headers) head += n + ": " + v + "\r\n";
                    head += "Transfer-Encoding: chunked\r\n\r\n";
                    keep = send_all(fd, head);
                    for (const auto& [pause_before, bytes] : a.pieces) {
                        if (!keep) break;
                        char size[32];
                        std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
                        keep = pause(pause_before) && send_all(fd, std::string(size) + bytes + "\r\n");
                    }
                    if (keep && !a.cut) keep = send_all(fd, "0\r\n\r\n");
                    if (a.cut) keep = false;
                    break;
                }
                case action::kind::drip: {
                    if (!send_all(fd, head_of(a, a.body.size(), !keep))) {
                        keep = false;
                        break;
                    }
                    for (const char c : a.body) {
                        if (!pause(a.delay) || !send_all(fd, std::string_view(&c, 1))) {
                            keep = false;
                            break;
                        }
                    }
                    break;
                }
            }
            if (!keep) break;
        }
        std::lock_guard lock(mutex_);
        open_.erase(std::remove(open_.begin(), open_.end(), fd), open_.end());
        ::close(fd);
    }

    int listener_ = -1;
    int wake_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> connections_{0};
    std::atomic<std::size_t> answered_{0};
    std::thread acceptor_;
    mutable std::mutex mutex_;
    std::condition_variable gates_;
    std::set<std::string> open_gates_;
    std::vector<int> open_;
    std::vector<std::thread> workers_;
    std::map<std::string, script_state, std::less<>> scripts_;
    std::vector<recorded_request> requests_;
    std::function<void(const recorded_request&)> hook_;
};

}  // namespace resil_test
