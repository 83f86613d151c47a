// tests/support/child_process.hpp — what every server the tests start from a
// Debian binary (nginx, tinyproxy, haproxy) needs: a fresh directory under
// $TMPDIR removed afterwards, and the binary run as a child process on a
// loopback port, killed if the test process dies (PR_SET_PDEATHSIG), ready
// once the port accepts a connection, stopped when its owner goes.
//
//   resil_test::temp_directory dir{"resil-nginx"};
//   resil_test::child_server child;
//   std::string error;
//   if (!child.start({"/usr/sbin/nginx", "-c", dir.path() + "/nginx.conf"}, port, "",
//                    [&] { return resil_test::read_text_file(dir.path() + "/error.log"); }, error))
//       ...   // error: "nginx exited at once (status 256): <its log>" or "no answer on port ..."
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace resil_test {

/// The whole text of a file; empty when it cannot be read.
[[nodiscard]] inline std::string read_text_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// True when something accepts TCP connections on 127.0.0.1:`port`.
[[nodiscard]] inline bool port_accepts(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

/// A new directory $TMPDIR/<prefix>-XXXXXX (or under /tmp), removed with
/// everything in it when this object goes.
class temp_directory {
public:
    explicit temp_directory(const std::string& prefix) {
        const char* tmp = std::getenv("TMPDIR");
        std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
        if (!::mkdtemp(name.data())) throw std::runtime_error("mkdtemp failed for " + name);
        path_ = name;
    }
    temp_directory(const temp_directory&) = delete;
    temp_directory& operator=(const temp_directory&) = delete;
    ~temp_directory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    /// path() + "/" + name.
    [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

/// One server process at a time: started, waited for, stopped.
class child_server {
public:
    child_server() = default;
    child_server(const child_server&) = delete;
    child_server& operator=(const child_server&) = delete;
    ~child_server() { stop(); }

    /// Runs `args` (args[0] a path; its standard error into `stderr_file`
    /// when one is named) and waits up to 10 s for `port` to accept. False,
    /// with `error` saying why and what `log` returns at that moment, when
    /// the process ends first or the port stays closed (it is then stopped).
    bool start(std::vector<std::string> args, std::uint16_t port, const std::string& stderr_file,
               const std::function<std::string()>& log, std::string& error) {
        stop();
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const std::string name = std::filesystem::path(args.at(0)).filename().string();
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            error = "fork failed";
            return false;
        }
        if (pid == 0) {
            // Only async-signal-safe calls between fork and exec (freopen is
            // not, but the child is single-threaded until exec replaces it).
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            if (!stderr_file.empty())
                if (FILE* out = std::freopen(stderr_file.c_str(), "w", stderr)) (void)out;
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        pid_ = pid;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
        while (std::chrono::steady_clock::now() < give_up) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                error = name + " exited at once (status " + std::to_string(status) + "): " + log();
                return false;
            }
            if (port_accepts(port)) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        error = "no answer from " + name + " on port " + std::to_string(port) + " within 10 s; " + log();
        stop();
        return false;
    }

    /// SIGTERM, then SIGKILL once `grace` has passed (at once when zero).
    void stop(std::chrono::milliseconds grace = std::chrono::milliseconds::zero()) noexcept {
        if (pid_ <= 0) return;
        int status = 0;
        if (grace > std::chrono::milliseconds::zero()) {
            ::kill(pid_, SIGTERM);
            const auto give_up = std::chrono::steady_clock::now() + grace;
            while (::waitpid(pid_, &status, WNOHANG) == 0) {
                if (std::chrono::steady_clock::now() > give_up) break;
                std::this_thread::sleep_for(std::chrono::milliseconds{2});
            }
            if (::waitpid(pid_, &status, WNOHANG) != 0) {
                pid_ = -1;
                return;
            }
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }

    [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
    /// The child's process id, to signal it (SIGSTOP freezes a server); -1 when none runs.
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

private:
    pid_t pid_ = -1;
};

}  // namespace resil_test
