// tests/support/tinyproxy_server.hpp — Debian's tinyproxy as a child process
// on 127.0.0.1 (a forward proxy: plain requests and CONNECT tunnels), its
// configuration and log in a fresh directory under $TMPDIR, removed afterwards.
//
//   resil_test::tinyproxy_server proxy;
//   client_options{.proxy = {.url = proxy.url()}};
//
// tinyproxy cannot listen on port 0: a free port is picked as nginx_server
// does (bind, close, retry on a clash). It runs in the foreground (-d) and is
// killed with the test process (PR_SET_PDEATHSIG). Missing tinyproxy throws
// std::runtime_error naming the package: the tests fail, never skip.
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
#include <string_view>
#include <thread>
#include <vector>

#include "fault_server.hpp"

namespace resil_test {

class tinyproxy_server {
public:
    /// `extra`: more configuration lines (e.g. "ConnectPort 443" to limit CONNECT).
    explicit tinyproxy_server(std::string_view extra = "") {
        std::string binary;
        for (const char* candidate : {"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy", "/usr/local/bin/tinyproxy"})
            if (::access(candidate, X_OK) == 0) binary = candidate;
        if (binary.empty())
            throw std::runtime_error("tinyproxy is not installed: these tests need it (apt-get install tinyproxy)");
        const char* tmp = std::getenv("TMPDIR");
        std::string dir_template = std::string(tmp && *tmp ? tmp : "/tmp") + "/resil-tinyproxy-XXXXXX";
        if (!::mkdtemp(dir_template.data())) throw std::runtime_error("tinyproxy_server: mkdtemp failed");
        dir_ = dir_template;
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            std::ofstream(dir_ + "/tinyproxy.conf") << "Port " << port_ << "\n"
                                                    << "Listen 127.0.0.1\n"
                                                    << "Allow 127.0.0.1\n"
                                                    << "Timeout 10\n"
                                                    << "MaxClients 20\n"
                                                    << "LogLevel Info\n"
                                                    << "LogFile \"" << dir_ << "/tinyproxy.log\"\n"
                                                    << extra << "\n";
            if (start(binary, error)) return;
        }
        remove_dir();
        throw std::runtime_error("tinyproxy did not start: " + error);
    }
    tinyproxy_server(const tinyproxy_server&) = delete;
    tinyproxy_server& operator=(const tinyproxy_server&) = delete;
    ~tinyproxy_server() {
        stop();
        remove_dir();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    /// What tinyproxy logged so far (every request it forwarded, CONNECTs included).
    [[nodiscard]] std::string log() const { return read(dir_ + "/tinyproxy.log"); }

private:
    bool start(const std::string& binary, std::string& error) {
        std::vector<std::string> args = {binary, "-d", "-c", dir_ + "/tinyproxy.conf"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            error = "fork failed";
            return false;
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        pid_ = pid;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
        while (std::chrono::steady_clock::now() < give_up) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                error = "tinyproxy exited at once: " + log();
                return false;
            }
            if (accepts()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        error = "no answer on port " + std::to_string(port_) + " within 10 s; " + log();
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
        ::kill(pid_, SIGKILL);  // nothing to flush: the log is read before
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
