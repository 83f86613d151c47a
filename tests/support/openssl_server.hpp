// tests/support/openssl_server.hpp — `openssl s_server -www` on 127.0.0.1
// with the test PKI's server certificate: a TLS server whose handshake the
// test sets with s_server's own options, e.g. one that refuses a client
// without a certificate in the handshake, or one limited to TLS 1.2.
//
//   resil_test::tls_files pki;
//   resil_test::openssl_server refusing{pki, {"-tls1_3", "-Verify", "1", "-verify_return_error"}};
//   client_options{.tls = {.ca_file = pki.path("ca.pem")}};   // refusing.url("/")
//
// A handshake it accepts is answered with a page describing the session
// (HTTP/1.0, then the connection is closed). It serves one connection at a
// time, runs in its own directory under $TMPDIR (removed afterwards) and is
// killed with the test process. Missing openssl throws std::runtime_error.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "child_process.hpp"
#include "fault_server.hpp"
#include "tls_files.hpp"

namespace resil_test {

class openssl_server {
public:
    /// `options` follow s_server's certificate options on its command line.
    openssl_server(const tls_files& pki, const std::vector<std::string>& options) : dir_("resil-s_server") {
        std::string binary;
        for (const char* candidate : {"/usr/bin/openssl", "/usr/local/bin/openssl"})
            if (::access(candidate, X_OK) == 0) binary = candidate;
        if (binary.empty()) throw std::runtime_error("openssl is not installed: these tests need it (apt-get install openssl)");
        std::string error;
        // The port is picked by binding and closing: taken in between by
        // another process, start again on a new one.
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            std::vector<std::string> args{binary,           "s_server",          "-accept",
                                          "127.0.0.1:" + std::to_string(port_), "-cert", pki.path("server.pem"),
                                          "-key",           pki.path("server.key"), "-CAfile",
                                          pki.path("ca.pem"), "-www",            "-quiet"};
            args.insert(args.end(), options.begin(), options.end());
            const std::string log = dir_.file("s_server.log");
            if (child_.start(args, port_, log, [&log] { return read_text_file(log); }, error)) return;
        }
        throw std::runtime_error("openssl s_server did not start: " + error);
    }
    openssl_server(const openssl_server&) = delete;
    openssl_server& operator=(const openssl_server&) = delete;
    ~openssl_server() = default;  // s_server killed, then its directory removed

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// https://127.0.0.1:<port><path> (an address of the PKI's server certificate).
    [[nodiscard]] std::string url(std::string_view path = "/") const {
        return "https://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }

private:
    temp_directory dir_;  // declared before child_: removed once s_server has stopped
    std::uint16_t port_ = 0;
    child_server child_;
};

}  // namespace resil_test
