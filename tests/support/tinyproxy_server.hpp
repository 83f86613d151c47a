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

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

class tinyproxy_server {
public:
    /// `extra`: more configuration lines (e.g. "ConnectPort 443" to limit CONNECT).
    explicit tinyproxy_server(std::string_view extra = "") : dir_("resil-tinyproxy") {
        std::string binary;
        for (const char* candidate : {"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy", "/usr/local/bin/tinyproxy"})
            if (::access(candidate, X_OK) == 0) binary = candidate;
        if (binary.empty())
            throw std::runtime_error("tinyproxy is not installed: these tests need it (apt-get install tinyproxy)");
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            std::ofstream(dir_.file("tinyproxy.conf")) << "Port " << port_ << "\n"
                                                       << "Listen 127.0.0.1\n"
                                                       << "Allow 127.0.0.1\n"
                                                       << "Timeout 10\n"
                                                       << "MaxClients 20\n"
                                                       << "LogLevel Info\n"
                                                       << "LogFile \"" << dir_.file("tinyproxy.log") << "\"\n"
                                                       << extra << "\n";
            if (child_.start({binary, "-d", "-c", dir_.file("tinyproxy.conf")}, port_, "", [this] { return log(); },
                             error))
                return;
        }
        throw std::runtime_error("tinyproxy did not start: " + error);
    }
    tinyproxy_server(const tinyproxy_server&) = delete;
    tinyproxy_server& operator=(const tinyproxy_server&) = delete;
    ~tinyproxy_server() = default;  // killed (nothing to flush: its log is read before), then its directory

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    /// What tinyproxy logged so far (every request it forwarded, CONNECTs included).
    [[nodiscard]] std::string log() const { return read_text_file(dir_.file("tinyproxy.log")); }

private:
    temp_directory dir_;  // declared before child_: removed once tinyproxy has stopped
    std::uint16_t port_ = 0;
    child_server child_;
};

}  // namespace resil_test
