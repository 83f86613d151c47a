// A TLS handshake the server refuses (no client certificate, no TLS version
// in common) is never sent and permanent, over TLS 1.2 and TLS 1.3 alike,
// where the refusal comes after libcurl wrote the request; a handshake that
// is reset or times out stays retryable. Against `openssl s_server` and
// nginx started by the tests (openssl and nginx needed: without them these
// tests fail, they do not skip), and libcurl's error texts read alone.
#include <resil/curl.hpp>
#include <resil/curl/detail/tls_refusal.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/attempts.hpp"
#include "support/fault_server.hpp"
#include "support/nginx_server.hpp"
#include "support/openssl_server.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using resil::verdict;
using resil::curl::client;
using resil::curl::client_options;
using resil::curl::key_header_format;
using resil::curl::request;
using resil::curl::tls_version;
using resil::curl::transport_status;
using resil::curl::detail::tls_refusal;

namespace {

const resil::timeouts quick{2s, 2s, 5s};

// One call through a retry policy (3 attempts); `attempts` counts them.
template <class Make>
auto with_retries(client& http, Make make, int& attempts) {
    const auto pipe = resil::pipeline(resil::retry_policy{resil_test::quick_retries});
    return pipe([&](resil::context& ctx) {
        ++attempts;
        return http.perform(make(), ctx);
    });
}

client_options trusting(const resil_test::tls_files& pki, tls_version minimum = tls_version::library_default) {
    return {.limits = quick,
            .idempotency_key = key_header_format::none,  // a POST is then neither idempotent nor keyed
            .tls = {.ca_file = pki.path("ca.pem"), .minimum_version = minimum}};
}

// A TCP server that resets every connection once its first bytes (a
// ClientHello) arrived: a handshake cut, which a retry may pass.
class reset_on_hello {
public:
    reset_on_hello() {
        listener_ = resil_test::detail::listen_loopback(16, port_);
        thread_ = std::thread([this] {
            while (!stop_) {
                pollfd p{listener_, POLLIN, 0};
                if (::poll(&p, 1, 20) <= 0) continue;
                const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
                if (fd < 0) continue;
                ++accepted_;
                char hello[512];
                pollfd in{fd, POLLIN, 0};
                if (::poll(&in, 1, 2000) > 0) (void)::recv(fd, hello, sizeof hello, 0);
                const linger hard{1, 0};  // close with RST
                ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
                ::close(fd);
            }
        });
    }
    reset_on_hello(const reset_on_hello&) = delete;
    reset_on_hello& operator=(const reset_on_hello&) = delete;
    ~reset_on_hello() {
        stop_ = true;
        thread_.join();
        ::close(listener_);
    }
    [[nodiscard]] std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/"; }
    [[nodiscard]] int accepted() const noexcept { return accepted_.load(); }

private:
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("curl TLS refusal: the alert is read from OpenSSL's error code, in either packing") {
    // OpenSSL 3 (lib << 23): handshake_failure (40), certificate_required (116), protocol_version (70).
    CHECK(tls_refusal::ssl_reason("OpenSSL/3.0.22: error:0A000410:SSL routines::sslv3 alert handshake failure") ==
          1040u);
    CHECK(tls_refusal::refused("OpenSSL/3.0.22: error:0A000410:SSL routines::sslv3 alert handshake failure"));
    CHECK(tls_refusal::refused("OpenSSL SSL_read: OpenSSL/3.0.22: error:0A00045C:SSL routines::tlsv13 alert "
                               "certificate required, errno 0"));
    CHECK(tls_refusal::refused("OpenSSL/3.0.22: error:0A00042E:SSL routines::tlsv1 alert protocol version"));
    // The words do not matter (a build without error strings prints the reason's number).
    CHECK(tls_refusal::refused("OpenSSL/3.0.22: error:0A000418:SSL routines::reason(1048)"));  // unknown_ca (48)
    // OpenSSL 1.1 and LibreSSL (lib << 24, 12-bit reason).
    CHECK(tls_refusal::refused("OpenSSL/1.1.1w: error:14094410:SSL routines:ssl3_read_bytes:sslv3 alert "
                               "handshake failure"));
    CHECK(tls_refusal::refused("LibreSSL/3.8.2: error:1404B42E:SSL routines:ST_CONNECT:tlsv1 alert protocol version"));
    // No version in common found by the client itself (SSL_R_UNSUPPORTED_PROTOCOL).
    CHECK(tls_refusal::refused("OpenSSL/3.0.22: error:0A000102:SSL routines::unsupported protocol"));

    // Failures a retry may pass: the server's internal error (80), a bad
    // record MAC (20), an unknown PSK identity (115), a wrong version number
    // (not TLS), a reset, a system error, another library's error.
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:0A000438:SSL routines::tlsv1 alert internal error"));
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:0A0003FC:SSL routines::sslv3 alert bad record mac"));
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:0A00045B:SSL routines::reason(1115)"));
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:0A00010B:SSL routines::wrong version number"));
    CHECK_FALSE(tls_refusal::refused("OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:443 "));
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:80000068:system library::Connection reset by peer"));
    CHECK_FALSE(tls_refusal::refused("OpenSSL/3.0.22: error:05800074:x509 certificate routines::key values mismatch"));
    CHECK_FALSE(tls_refusal::refused("error:0A00041Z:SSL routines::not hex"));
    CHECK_FALSE(tls_refusal::refused("error:0A0004:short"));
    CHECK_FALSE(tls_refusal::refused(""));
    CHECK_FALSE(tls_refusal::ssl_reason("Failed to connect to 127.0.0.1 port 1: Connection refused"));
}

TEST_CASE("curl TLS refusal: a server refusing a client without a certificate — never sent, permanent, once") {
    resil_test::tls_files pki;
    struct server_kind {
        std::string name;
        std::vector<std::string> options;
        CURLcode code;
    };
    // TLS 1.3: libcurl finished its side of the handshake and wrote the
    // request before the server's alert came (CURLE_RECV_ERROR); over HTTP/2
    // (ALPN) too, where it wrote its preface and the request's frames.
    const std::vector<server_kind> kinds{
        {"TLS 1.3", {"-tls1_3", "-Verify", "1", "-verify_return_error"}, CURLE_RECV_ERROR},
        {"TLS 1.3, HTTP/2", {"-tls1_3", "-alpn", "h2", "-Verify", "1", "-verify_return_error"}, CURLE_RECV_ERROR},
        {"TLS 1.2", {"-tls1_2", "-Verify", "1", "-verify_return_error"}, CURLE_SSL_CONNECT_ERROR},
    };
    for (const auto& kind : kinds) {
        DYNAMIC_SECTION("openssl s_server, " << kind.name << ", -Verify 1 -verify_return_error") {
            resil_test::openssl_server server{pki, kind.options};
            // The server takes a client that shows its certificate (s_server
            // -www answers in HTTP/1, so not where it chooses HTTP/2).
            if (kind.name.find("HTTP/2") == std::string::npos) {
                client_options with_cert = trusting(pki);
                with_cert.tls.client_certificate = pki.path("client.pem");
                with_cert.tls.private_key = pki.path("client.key");
                client authenticated(with_cert);
                REQUIRE(authenticated.perform(request::get(server.url("/"))).ok());
            }

            client http(trusting(pki));
            int attempts = 0;
            const auto get = with_retries(http, [&] { return request::get(server.url("/")); }, attempts);
            REQUIRE(get.has_value());
            INFO(get->error_message());
            CHECK(get->transport() == transport_status::tls_handshake_refused);
            CHECK(get->curl_code() == kind.code);
            CHECK_FALSE(get->may_have_reached_server());
            CHECK(get->status() == 0);
            CHECK(get.verdict() == verdict::permanent);
            CHECK(attempts == 1);

            // An unkeyed POST: not "unsafe to retry" — nothing was processed, and a retry cannot pass.
            attempts = 0;
            const auto post = with_retries(http, [&] { return request::post(server.url("/"), "pay"); }, attempts);
            REQUIRE(post.has_value());
            CHECK_FALSE(post->repeatable());
            CHECK(post->transport() == transport_status::tls_handshake_refused);
            CHECK_FALSE(post->may_have_reached_server());
            CHECK(post.verdict() == verdict::permanent);
            CHECK(attempts == 1);
        }
    }
}

TEST_CASE("curl TLS refusal: no TLS version or application protocol in common") {
    resil_test::tls_files pki;
    const auto check_refused = [](client& http, const std::string& url) {
        int attempts = 0;
        const auto out = with_retries(http, [&] { return request::get(url); }, attempts);
        REQUIRE(out.has_value());
        INFO(out->error_message());
        CHECK(out->transport() == transport_status::tls_handshake_refused);
        CHECK(out->curl_code() == CURLE_SSL_CONNECT_ERROR);
        CHECK_FALSE(out->may_have_reached_server());
        CHECK(out.verdict() == verdict::permanent);
        CHECK(attempts == 1);
    };
    SECTION("openssl s_server -tls1_2") {
        resil_test::openssl_server server{pki, {"-tls1_2"}};
        client tls13(trusting(pki, tls_version::tls1_3));
        check_refused(tls13, server.url("/"));
        client tls12(trusting(pki, tls_version::tls1_2));
        CHECK(tls12.perform(request::get(server.url("/"))).ok());
    }
    SECTION("an HTTP/1.1 client against a server that takes HTTP/2 only (ALPN: no_application_protocol)") {
        resil_test::openssl_server server{pki, {"-alpn", "h2"}};
        client_options o = trusting(pki);
        o.http_version = resil::curl::http_version::http1_1;
        client http1(o);
        check_refused(http1, server.url("/"));
    }
    SECTION("nginx with ssl_protocols TLSv1.2") {
        resil_test::nginx_server nginx{"ssl_certificate " + pki.path("server.pem") + ";\nssl_certificate_key " +
                                           pki.path("server.key") +
                                           ";\nssl_protocols TLSv1.2;\nlocation / { return 200 \"ok\"; }",
                                       "", "ssl"};
        const std::string url = "https://127.0.0.1:" + std::to_string(nginx.port()) + "/";
        client tls13(trusting(pki, tls_version::tls1_3));
        check_refused(tls13, url);
    }
}

TEST_CASE("curl TLS refusal: a handshake reset or timed out stays retryable, never sent") {
    resil_test::tls_files pki;
    SECTION("reset after the ClientHello") {
        reset_on_hello server;
        client http(trusting(pki));
        int attempts = 0;
        const auto out = with_retries(http, [&] { return request::post(server.url(), "pay"); }, attempts);
        INFO((out.has_value() ? out->error_message() : std::string_view{"no response"}));
        CHECK(attempts == 3);
        CHECK(server.accepted() == 3);
        REQUIRE(out.has_value());
        CHECK(out->transport() == transport_status::tls_handshake_failed);
        CHECK(out->curl_code() == CURLE_SSL_CONNECT_ERROR);
        CHECK_FALSE(out->may_have_reached_server());
        CHECK(resil::curl::classify(*out).verdict == verdict::retryable);
    }
    SECTION("no answer to the ClientHello within the connect limit") {
        resil_test::fault_server silent;  // reads the ClientHello as the start of a request head, forever
        client http({.limits = {300ms, 2s, 5s},
                     .idempotency_key = key_header_format::none,
                     .tls = {.ca_file = pki.path("ca.pem")}});
        const auto r = http.perform(request::post("https://127.0.0.1:" + std::to_string(silent.port()) + "/", "pay"));
        INFO(r.error_message());
        CHECK(r.transport() == transport_status::connect_timeout);
        CHECK_FALSE(r.may_have_reached_server());
        CHECK(resil::curl::classify(r).verdict == verdict::retryable);
    }
}
