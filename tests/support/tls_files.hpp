// tests/support/tls_files.hpp — a throw-away PKI made with the openssl CLI
// in a fresh directory under $TMPDIR (removed afterwards): a CA, a server
// certificate for 127.0.0.1 and localhost, one for a wrong name, a client
// certificate, and the server key's pin (file and sha256//).
//
//   resil_test::tls_files pki;
//   pki.path("ca.pem"), pki.path("server.pem"), pki.path("server.key"), ...
//
// Throws std::runtime_error when openssl is missing or fails: the TLS tests
// fail loudly, never pass by skipping.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace resil_test {

class tls_files {
public:
    tls_files() {
        if (::access("/usr/bin/openssl", X_OK) != 0 && ::access("/usr/local/bin/openssl", X_OK) != 0)
            throw std::runtime_error("openssl is not installed: the TLS tests need it (apt-get install openssl)");
        const char* tmp = std::getenv("TMPDIR");
        std::string dir_template = std::string(tmp && *tmp ? tmp : "/tmp") + "/resil-pki-XXXXXX";
        if (!::mkdtemp(dir_template.data())) throw std::runtime_error("tls_files: mkdtemp failed");
        dir_ = dir_template;
        try {
            make();
        } catch (...) {
            remove();
            throw;
        }
    }
    tls_files(const tls_files&) = delete;
    tls_files& operator=(const tls_files&) = delete;
    ~tls_files() { remove(); }

    /// A file of the PKI: ca.pem, server.pem/.key, wrong.pem/.key (for
    /// wrong.example only), client.pem/.key, server.pub.pem, wrong.pub.pem.
    [[nodiscard]] std::string path(std::string_view name) const { return dir_ + "/" + std::string(name); }
    /// "sha256//<base64>" of the server key / of the wrong certificate's key.
    [[nodiscard]] const std::string& server_pin() const noexcept { return server_pin_; }
    [[nodiscard]] const std::string& wrong_pin() const noexcept { return wrong_pin_; }
    [[nodiscard]] const std::string& directory() const noexcept { return dir_; }

private:
    void make() {
        const std::string d = dir_;
        std::ofstream(d + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
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
            throw std::runtime_error("openssl failed to make the test PKI: " + read(d + "/openssl.log"));
        server_pin_ = "sha256//" + read(d + "/server.pin");
        wrong_pin_ = "sha256//" + read(d + "/wrong.pin");
    }

    static std::string read(const std::string& path) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    void remove() noexcept {
        if (dir_.empty()) return;
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
        dir_.clear();
    }

    std::string dir_;
    std::string server_pin_;
    std::string wrong_pin_;
};

}  // namespace resil_test
