// tests/support/nginx_server.hpp — Debian's nginx as a child process on a
// loopback ephemeral port, for the libcurl adapter's tests and benchmark.
//
//   resil_test::nginx_server nginx{R"(
//       location /ok { return 200 "hello\n"; }
//   )"};
//   auto url = nginx.url("/ok");
//
// Everything nginx writes (pid, error log, temporary files) goes to a fresh
// directory under $TMPDIR, removed afterwards. It runs in the foreground
// (`-g 'daemon off;'`) with `master_process off`: one process, which never
// switches user, so it behaves the same as root or not. The echo module
// (libnginx-mod-http-echo) is loaded when the configuration uses it. The
// child is killed if the test process dies (PR_SET_PDEATHSIG).
//
// When nginx is missing, construction throws std::runtime_error naming the
// packages to install: a test that needs nginx fails loudly, never passes by
// skipping.
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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fault_server.hpp"

namespace resil_test {

class nginx_server {
public:
    static constexpr std::string_view echo_module_path = "/usr/lib/nginx/modules/ngx_http_echo_module.so";

    /// The nginx binary, if installed.
    [[nodiscard]] static std::optional<std::string> binary() {
        for (const char* candidate : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"})
            if (::access(candidate, X_OK) == 0) return std::string(candidate);
        return std::nullopt;
    }

    /// Starts nginx with `locations` inside its server block and `http_extra`
    /// in its http block (e.g. a limit_req_zone); `listen_options` follow the
    /// address on its listen line (e.g. "ssl http2"). Throws
    /// std::runtime_error when nginx is missing or does not come up within 10 s.
    explicit nginx_server(std::string_view locations, std::string_view http_extra = "",
                          std::string_view listen_options = "") : listen_options_(listen_options) {
        const auto nginx = binary();
        if (!nginx)
            throw std::runtime_error(
                "nginx is not installed: these tests need it (apt-get install nginx libnginx-mod-http-echo)");
        const bool needs_echo = locations.find("echo") != std::string_view::npos;
        if (needs_echo && ::access(std::string(echo_module_path).c_str(), R_OK) != 0)
            throw std::runtime_error("nginx's echo module is missing (apt-get install libnginx-mod-http-echo)");

        const char* tmp = std::getenv("TMPDIR");
        std::string dir_template = std::string(tmp && *tmp ? tmp : "/tmp") + "/resil-nginx-XXXXXX";
        if (!::mkdtemp(dir_template.data())) throw std::runtime_error("nginx_server: mkdtemp failed in " + dir_template);
        dir_ = dir_template;

        std::string last_error;
        // The port is picked by binding and closing; another process could take
        // it in between, so a failed start is retried on a new port.
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            write_config(locations, http_extra, needs_echo);
            if (start(*nginx, last_error)) return;
        }
        cleanup_dir();
        throw std::runtime_error("nginx did not start: " + last_error);
    }

    nginx_server(const nginx_server&) = delete;
    nginx_server& operator=(const nginx_server&) = delete;
    ~nginx_server() {
        stop();
        cleanup_dir();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    [[nodiscard]] const std::string& directory() const noexcept { return dir_; }

private:
    void write_config(std::string_view locations, std::string_view http_extra, bool echo) const {
        std::ofstream conf(dir_ + "/nginx.conf");
        if (echo) conf << "load_module " << echo_module_path << ";\n";
        conf << "master_process off;\n"
             << "worker_processes 1;\n"
             << "pid " << dir_ << "/nginx.pid;\n"
             << "error_log " << dir_ << "/error.log warn;\n"
             << "events { worker_connections 256; }\n"
             << "http {\n"
             << "  access_log off;\n"
             << "  client_body_temp_path " << dir_ << "/client_body;\n"
             << "  proxy_temp_path " << dir_ << "/proxy;\n"
             << "  fastcgi_temp_path " << dir_ << "/fastcgi;\n"
             << "  uwsgi_temp_path " << dir_ << "/uwsgi;\n"
             << "  scgi_temp_path " << dir_ << "/scgi;\n"
             << "  keepalive_requests 1000000;\n"
             << "  keepalive_timeout 60s;\n"
             << "  default_type text/plain;\n"
             << "  " << http_extra << "\n"
             << "  server {\n"
             << "    listen 127.0.0.1:" << port_ << " " << listen_options_ << ";\n"
             << "    " << locations << "\n"
             << "  }\n"
             << "}\n";
    }

    bool start(const std::string& nginx, std::string& error) {
        const std::string conf = dir_ + "/nginx.conf";
        const std::string error_log = dir_ + "/error.log";
        std::vector<std::string> args = {nginx, "-p", dir_, "-c", conf, "-e", error_log, "-g", "daemon off;"};
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
            // Only async-signal-safe calls between fork and exec.
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
                error = read_file(error_log);
                if (error.empty()) error = "nginx exited at once (status " + std::to_string(status) + ")";
                return false;
            }
            if (accepts()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds{5});
        }
        error = "no answer on port " + std::to_string(port_) + " within 10 s; " + read_file(error_log);
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
        ::kill(pid_, SIGTERM);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{5};
        int status = 0;
        while (::waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > give_up) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{2});
        }
        pid_ = -1;
    }

    void cleanup_dir() noexcept {
        if (dir_.empty()) return;
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }

    static std::string read_file(const std::string& path) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    std::string listen_options_;
    std::string dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace resil_test
