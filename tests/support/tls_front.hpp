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

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

class tls_front {
public:
    /// `bind_options` follow the certificate on haproxy's bind line (e.g.
    /// "alpn h2" to offer HTTP/2 to clients for an h2c backend).
    tls_front(const std::string& certificate, const std::string& key, std::uint16_t backend_port,
              const std::string& bind_options = "")
        : dir_("resil-haproxy") {
        std::string binary;
        for (const char* candidate : {"/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"})
            if (::access(candidate, X_OK) == 0) binary = candidate;
        if (binary.empty())
            throw std::runtime_error("haproxy is not installed: these tests need it (apt-get install haproxy)");
        {  // haproxy wants the certificate and its key in one file
            std::ofstream pem(dir_.file("front.pem"));
            pem << read_text_file(certificate) << read_text_file(key);
        }
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            std::ofstream(dir_.file("haproxy.cfg")) << "global\n  maxconn 100\n"
                                                    << "defaults\n  mode tcp\n  timeout connect 2s\n"
                                                    << "  timeout client 10s\n  timeout server 10s\n"
                                                    << "frontend front\n  bind 127.0.0.1:" << port_ << " ssl crt "
                                                    << dir_.file("front.pem") << " " << bind_options
                                                    << "\n  default_backend back\n"
                                                    << "backend back\n  server s 127.0.0.1:" << backend_port
                                                    << "\n";
            const std::string log = dir_.file("haproxy.log");
            if (child_.start({binary, "-db", "-q", "-f", dir_.file("haproxy.cfg")}, port_, log,
                             [&log] { return read_text_file(log); }, error))
                return;
        }
        throw std::runtime_error("haproxy did not start: " + error);
    }
    tls_front(const tls_front&) = delete;
    tls_front& operator=(const tls_front&) = delete;
    ~tls_front() = default;  // haproxy killed, then its directory removed

    [[nodiscard]] std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

private:
    temp_directory dir_;  // declared before child_: removed once haproxy has stopped
    std::uint16_t port_ = 0;
    child_server child_;
};

}  // namespace resil_test
