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

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

/// Locations for tests of where a call went: /who answers with the Host and
/// the request target nginx saw ("127.0.0.1 /who?a=1"), /r redirects to
/// /who?via=r.
inline constexpr const char* where_it_went = R"(
        location /who { echo -n "$host $request_uri"; }
        location = /r { return 302 /who?via=r; }
)";

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
                          std::string_view listen_options = "")
        : listen_options_(listen_options), dir_("resil-nginx") {
        const auto nginx = binary();
        if (!nginx)
            throw std::runtime_error(
                "nginx is not installed: these tests need it (apt-get install nginx libnginx-mod-http-echo)");
        const bool needs_echo = locations.find("echo") != std::string_view::npos;
        if (needs_echo && ::access(std::string(echo_module_path).c_str(), R_OK) != 0)
            throw std::runtime_error("nginx's echo module is missing (apt-get install libnginx-mod-http-echo)");

        std::string last_error;
        // The port is picked by binding and closing; another process could take
        // it in between, so a failed start is retried on a new port.
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            write_config(locations, http_extra, needs_echo);
            if (start(*nginx, last_error)) return;
        }
        throw std::runtime_error("nginx did not start: " + last_error);
    }

    nginx_server(const nginx_server&) = delete;
    nginx_server& operator=(const nginx_server&) = delete;
    // SIGTERM first, SIGKILL after 5 s: nginx ends its connections and files.
    ~nginx_server() { child_.stop(std::chrono::seconds{5}); }

    /// nginx's process (one: `master_process off`).
    [[nodiscard]] pid_t pid() const noexcept { return child_.pid(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    [[nodiscard]] const std::string& directory() const noexcept { return dir_.path(); }

private:
    void write_config(std::string_view locations, std::string_view http_extra, bool echo) const {
        std::ofstream conf(dir_.file("nginx.conf"));
        if (echo) conf << "load_module " << echo_module_path << ";\n";
        conf << "master_process off;\n"
             << "worker_processes 1;\n"
             << "pid " << dir_.path() << "/nginx.pid;\n"
             << "error_log " << dir_.path() << "/error.log warn;\n"
             << "events { worker_connections 256; }\n"
             << "http {\n"
             << "  access_log off;\n"
             << "  client_body_temp_path " << dir_.path() << "/client_body;\n"
             << "  proxy_temp_path " << dir_.path() << "/proxy;\n"
             << "  fastcgi_temp_path " << dir_.path() << "/fastcgi;\n"
             << "  uwsgi_temp_path " << dir_.path() << "/uwsgi;\n"
             << "  scgi_temp_path " << dir_.path() << "/scgi;\n"
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
        const std::string error_log = dir_.file("error.log");
        return child_.start({nginx, "-p", dir_.path(), "-c", dir_.file("nginx.conf"), "-e", error_log, "-g",
                             "daemon off;"},
                            port_, "", [&] { return read_text_file(error_log); }, error);
    }

    std::string listen_options_;
    temp_directory dir_;  // declared before child_: removed once nginx has stopped
    std::uint16_t port_ = 0;
    child_server child_;
};

}  // namespace resil_test
