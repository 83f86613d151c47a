// tests/support/tls_files.hpp — a throw-away PKI made with the openssl CLI
// in a fresh directory under $TMPDIR (removed afterwards): a CA, a server
// certificate for 127.0.0.1, localhost and service.test, one for a wrong
// name, a client certificate, and the server key's pin (file and sha256//);
// and an nginx serving TLS with the server certificate on a second port.
//
//   resil_test::tls_files pki;
//   pki.path("ca.pem"), pki.path("server.pem"), pki.path("server.key"), ...
//   resil_test::tls_nginx nginx{pki, R"(location / { return 200 "$ssl_session_reused\n"; })"};
//   // clients trust pki.path("ca.pem") (CURLOPT_CAINFO); nginx.https_url("/")
//
// Throws std::runtime_error when openssl is missing or fails: the TLS tests
// fail loudly, never pass by skipping.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "child_process.hpp"
#include "fault_server.hpp"
#include "nginx_server.hpp"

namespace resil_test {

class tls_files {
public:
    tls_files() : dir_("resil-pki") {
        if (::access("/usr/bin/openssl", X_OK) != 0 && ::access("/usr/local/bin/openssl", X_OK) != 0)
            throw std::runtime_error("openssl is not installed: the TLS tests need it (apt-get install openssl)");
        make();
    }
    tls_files(const tls_files&) = delete;
    tls_files& operator=(const tls_files&) = delete;

    /// A file of the PKI: ca.pem, server.pem/.key, wrong.pem/.key (for
    /// wrong.example only), client.pem/.key, server.pub.pem, wrong.pub.pem.
    [[nodiscard]] std::string path(std::string_view name) const { return dir_.file(std::string(name)); }
    /// "sha256//<base64>" of the server key / of the wrong certificate's key.
    [[nodiscard]] const std::string& server_pin() const noexcept { return server_pin_; }
    [[nodiscard]] const std::string& wrong_pin() const noexcept { return wrong_pin_; }
    [[nodiscard]] const std::string& directory() const noexcept { return dir_.path(); }

private:
    void make() {
        const std::string& d = dir_.path();
        std::ofstream(d + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:service.test\n"
                                         << "extendedKeyUsage=serverAuth\n";
        std::ofstream(d + "/wrong.ext") << "subjectAltName=DNS:wrong.example\nextendedKeyUsage=serverAuth\n";
        std::ofstream(d + "/client.ext") << "extendedKeyUsage=clientAuth\n";
        std::string script = "set -e; cd '" + d + "'; exec 2>openssl.log; "
            "openssl ecparam -name prime256v1 -genkey -noout -out ca.key; "
            "openssl req -x509 -new -key ca.key -subj /CN=resil-test-CA -days 2 -out ca.pem; ";
        for (const char* leaf : {"server", "wrong", "client"}) {
            const std::string n = leaf;
            script += "openssl ecparam -name prime256v1 -genkey -noout -out " + n + ".key; "
                      "openssl req -new -key " + n + ".key -subj /CN=resil-test-" + n + " -out " + n + ".csr; "
                      "openssl x509 -req -in " + n + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
                      "-extfile " + n + ".ext -out " + n + ".pem; "
                      "openssl pkey -in " + n + ".key -pubout -out " + n + ".pub.pem; "
                      "openssl pkey -in " + n + ".key -pubout -outform DER | openssl dgst -sha256 -binary | "
                      "base64 -w0 > " + n + ".pin; ";
        }
        if (std::system(("sh -c \"" + script + "\" >/dev/null").c_str()) != 0)
            throw std::runtime_error("openssl failed to make the test PKI: " + read_text_file(d + "/openssl.log"));
        server_pin_ = "sha256//" + read_text_file(d + "/server.pin");
        wrong_pin_ = "sha256//" + read_text_file(d + "/wrong.pin");
    }

    temp_directory dir_;
    std::string server_pin_;
    std::string wrong_pin_;
};

/// nginx answering `locations` over plain HTTP (url()) and over TLS with
/// the PKI's server certificate on a second port (https_url()).
class tls_nginx {
public:
    tls_nginx(const tls_files& pki, std::string_view locations) {
        std::string last_error;
        // The TLS port is picked by binding and closing, as nginx_server's
        // own: taken in between by another process, start again on new ports.
        for (int attempt = 0; attempt < 5; ++attempt) {
            https_port_ = refused_port();
            const std::string server = "listen 127.0.0.1:" + std::to_string(https_port_) +
                                       " ssl;\n    ssl_certificate " + pki.path("server.pem") +
                                       ";\n    ssl_certificate_key " + pki.path("server.key") +
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
