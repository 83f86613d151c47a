// tests/support/tls_front.hpp — Debian's haproxy terminating TLS on
// 127.0.0.1 in front of another local port (TCP mode): with tinyproxy
// behind it, an https:// forward proxy.
//
//   resil_test::tls_front front{pki.path("server.pem"), pki.path("server.key"), proxy.port()};
//   client_options{.proxy = {.url = front.url()}};   // "https://127.0.0.1:<port>"
//
// With "alpn h2" in front of an h2c server it is an HTTP/2-over-TLS server
// whose frames the backend writes.
//
// Configuration in a fresh directory under $TMPDIR, removed afterwards;
// haproxy runs in the foreground (-db) and is killed with the test process.
// Missing haproxy throws std::runtime_error naming the package.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fault_server.hpp"

namespace resil_test {

class tls_front {
public:
    /// `bind_options` follow the certificate on haproxy's bind line (e.g.
    /// "alpn h2" to offer HTTP/2 to clients for an h2c backend).
    tls_front(const std::string& certificate, const std::string& key, std::uint16_t backend_port,
              const std::string& bind_options = "") {
        std::string binary;
        for (const char* candidate : {"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"})
            if (::access(candidate, X_OK) == 0) binary = candidate;
        if (binary.empty())
            throw std::runtime_error("haproxy is not installed: these tests need it (apt-get install haproxy)");
        const char* tmp = std::getenv("TMPDIR");
        std::string dir_template = std::string(tmp && *tmp ? tmp : "/tmp") + "/resil-haproxy-XXXXXX";
        if (!::mkdtemp(dir_template.data())) throw std::runtime_error("tls_front: mkdtemp failed");
        dir_ = dir_template;
        {  // haproxy wants the certificate and its key in one file
            std::ofstream pem(dir_ + "/front.pem");
            pem << read(certificate) << read(key);
        }
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            std::ofstream(dir_ + "/haproxy.cfg") << "global\n  maxconn 100\n"
                                                 << "defaults\n  mode tcp\n  timeout connect 2s\n"
                                                 << "  timeout client 10s\n  timeout server 10s\n"
                                                 << "frontend front\n  bind 127.0.0.1:" << port_ << " ssl crt "
                                                 << dir_ << "/front.pem " << bind_options
                                                 << "\n  default_backend back\n"
                                                 << "backend back\n  server s 127.0.0.1:" << backend_port << "\n";
            if (start(binary, error)) return;
        }
        remove_dir();
        throw std::runtime_error("haproxy did not start: " + error);
    }
    tls_front(const tls_front&) = delete;
    tls_front& operator=(const tls_front&) = delete;
    ~tls_front() {
        stop();
        remove_dir();
    }

    [[nodiscard]] std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

private:
    bool start(const std::string& binary, std::string& error) {
        std::vector<std::string> args = {binary, "-db", "-q", "-f", dir_ + "/haproxy.cfg"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const std::string log = dir_ + "/haproxy.log";
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            error = "fork failed";
            return false;
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            if (FILE* out = std::freopen(log.c_str(), "w", stderr)) (void)out;
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        pid_ = pid;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
        while (std::chrono::steady_clock::now() < give_up) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                error = "haproxy exited at once: " + read(log);
                return false;
            }
            if (accepts()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        error = "no answer on port " + std::to_string(port_) + " within 10 s; " + read(log);
        stop();
        return false;
    }

    [[nodiscard]] bool accepts() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port_);
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        return ok;
    }

    void stop() noexcept {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }

    void remove_dir() noexcept {
        if (dir_.empty()) return;
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }

    static std::string read(const std::string& path) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::string dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace resil_test
