// tests/support/self_signed_tls.hpp — a self-signed certificate and its key
// for the names a test's server answers to, made with the `openssl` CLI in a
// fresh directory under $TMPDIR (removed afterwards), and an nginx that
// serves TLS with it on a second loopback port.
//
//   resil_test::self_signed_tls tls{"service.test"};   // also valid for localhost and 127.0.0.1
//   resil_test::tls_nginx nginx{tls, R"(location / { return 200 "$ssl_session_reused\n"; })"};
//   // clients trust tls.certificate() (CURLOPT_CAINFO); nginx.https_url("/")
//
// When openssl is missing, construction throws std::runtime_error naming the
// package: a test that needs it fails loudly, never passes by skipping.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fault_server.hpp"
#include "nginx_server.hpp"

namespace resil_test {

class self_signed_tls {
public:
    /// An ECDSA P-256 certificate valid for two days for `name`, localhost
    /// and 127.0.0.1. Throws std::runtime_error when openssl is missing or fails.
    explicit self_signed_tls(const std::string& name = "service.test") {
        const char* openssl = nullptr;
        for (const char* candidate : {"/usr/bin/openssl", "/usr/local/bin/openssl"})
            if (::access(candidate, X_OK) == 0) openssl = candidate;
        if (!openssl) throw std::runtime_error("openssl is not installed: these tests need it (apt-get install openssl)");
        const char* tmp = std::getenv("TMPDIR");
        std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/resil-tls-XXXXXX";
        if (!::mkdtemp(dir.data())) throw std::runtime_error("self_signed_tls: mkdtemp failed in " + dir);
        dir_ = dir;
        const std::string log = dir_ + "/openssl.log";
        const std::string command = std::string(openssl) +
                                    " req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
                                    " -keyout '" + key() + "' -out '" + certificate() + "' -subj '/CN=" + name +
                                    "' -addext 'subjectAltName=DNS:" + name +
                                    ",DNS:localhost,IP:127.0.0.1' > '" + log + "' 2>&1";
        if (std::system(command.c_str()) != 0 || !std::filesystem::exists(certificate())) {
            std::ifstream in(log);
            std::stringstream text;
            text << in.rdbuf();
            remove();
            throw std::runtime_error("self_signed_tls: openssl failed: " + text.str());
        }
    }
    self_signed_tls(const self_signed_tls&) = delete;
    self_signed_tls& operator=(const self_signed_tls&) = delete;
    ~self_signed_tls() { remove(); }

    [[nodiscard]] std::string certificate() const { return dir_ + "/cert.pem"; }
    [[nodiscard]] std::string key() const { return dir_ + "/key.pem"; }

private:
    void remove() noexcept {
        if (dir_.empty()) return;
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }

    std::string dir_;
};

/// nginx answering `locations` over plain HTTP (url()) and over TLS with
/// `tls`'s certificate on a second port (https_url()).
class tls_nginx {
public:
    tls_nginx(const self_signed_tls& tls, std::string_view locations) {
        std::string last_error;
        // The TLS port is picked by binding and closing, as nginx_server's
        // own: taken in between by another process, start again on new ports.
        for (int attempt = 0; attempt < 5; ++attempt) {
            https_port_ = refused_port();
            const std::string server = "listen 127.0.0.1:" + std::to_string(https_port_) +
                                       " ssl;\n    ssl_certificate " + tls.certificate() +
                                       ";\n    ssl_certificate_key " + tls.key() +
                                       // TLS 1.3, and a session cache: nginx's default keeps no session
                                       // to resume (and libcurl sends no TLS 1.2 ticket extension).
                                       ";\n    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_session_cache shared:resil_tls:1m;\n    " +
                                       std::string(locations);
            try {
                nginx_ = std::make_unique<nginx_server>(server);
                return;
            } catch (const std::runtime_error& e) {
                last_error = e.what();
            }
        }
        throw std::runtime_error("tls_nginx: " + last_error);
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return nginx_->port(); }
    [[nodiscard]] std::uint16_t https_port() const noexcept { return https_port_; }
    [[nodiscard]] std::string url(std::string_view path = "/") const { return nginx_->url(path); }
    /// https://<host>:<port><path>; `host` must be a name of the certificate.
    [[nodiscard]] std::string https_url(std::string_view path = "/", std::string_view host = "localhost") const {
        return "https://" + std::string(host) + ":" + std::to_string(https_port_) + std::string(path);
    }

private:
    std::unique_ptr<nginx_server> nginx_;
    std::uint16_t https_port_ = 0;
};

}  // namespace resil_test
