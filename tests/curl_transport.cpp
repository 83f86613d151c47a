// resil::curl::client's transport options against real servers on
// 127.0.0.1: nginx with TLS (a CA, server, wrong-name and client
// certificates made at test time with the openssl CLI), HTTP/2 over TLS and
// h2c, tinyproxy in front of nginx, redirects, and a scripted HTTP/2 server
// refusing streams. Without nginx, tinyproxy or openssl these tests fail
// (loudly), they do not skip.
#include <resil/curl.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "support/attempts.hpp"
#include "support/fault_server.hpp"
#include "support/h2_script_server.hpp"
#include "support/nginx_server.hpp"
#include "support/tinyproxy_server.hpp"
#include "support/tls_front.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using resil::verdict;
using resil::curl::client;
using resil::curl::client_options;
using resil::curl::http_version;
using resil::curl::request;
using resil::curl::transport_status;

namespace {

// Short limits: every case here answers at once or fails at once.
const resil::timeouts quick{2s, 2s, 5s};

std::string tls_server(const resil_test::tls_files& pki, std::string_view cert, std::string_view extra = "") {
    return "ssl_certificate " + pki.path(std::string(cert) + ".pem") + ";\n" + "ssl_certificate_key " +
           pki.path(std::string(cert) + ".key") + ";\n" + std::string(extra) +
           "\nlocation /ok { add_header X-Origin nginx; return 200 \"$server_protocol\"; }\n";
}

std::string https(const resil_test::nginx_server& nginx, std::string_view path = "/ok") {
    return "https://127.0.0.1:" + std::to_string(nginx.port()) + std::string(path);
}

// One call through a retry policy (3 attempts, short backoff); `attempts`
// counts the attempts made.
template <class Make>
auto with_retries(client& http, Make make, int& attempts) {
    const auto pipe = resil::pipeline(resil::retry_policy{resil_test::quick_retries});
    return pipe([&](resil::context& ctx) {
        ++attempts;
        return http.perform(make(), ctx);
    });
}

std::string construction_error(client_options o) {
    try {
        client http(std::move(o));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("curl transport: TLS verified against the test CA; without it the certificate is rejected") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{tls_server(pki, "server"), "", "ssl"};

    client trusted({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}});
    const auto ok = trusted.perform(request::get(https(nginx)));
    REQUIRE(ok.ok());
    CHECK(ok.body() == "HTTP/1.1");
    CHECK(ok.http_version() == 11);

    client system_store({.limits = quick});
    const auto rejected = system_store.perform(request::get(https(nginx)));
    CHECK(rejected.transport() == transport_status::tls_certificate_rejected);
    CHECK(rejected.curl_code() == CURLE_PEER_FAILED_VERIFICATION);
    CHECK_FALSE(rejected.may_have_reached_server());
    CHECK(resil::curl::classify(rejected).verdict == verdict::permanent);

    client blind({.limits = quick, .tls = {.accept_invalid_certificates = true}});
    CHECK(blind.perform(request::get(https(nginx))).ok());
    CHECK(resil::curl::describe(blind.options()).find("CERTIFICATE VERIFICATION OFF") != std::string::npos);
    CHECK(resil::curl::describe(trusted.options()).find("VERIFICATION OFF") == std::string::npos);
}

TEST_CASE("curl transport: a certificate for the wrong name is rejected, permanent, one attempt") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{tls_server(pki, "wrong"), "", "ssl"};
    client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}});
    int attempts = 0;
    const auto out = with_retries(http, [&] { return request::post(https(nginx), "pay"); }, attempts);
    REQUIRE(out.has_value());
    CHECK(out->transport() == transport_status::tls_certificate_rejected);
    CHECK(out->curl_code() == CURLE_PEER_FAILED_VERIFICATION);
    CHECK_FALSE(out->may_have_reached_server());
    CHECK(out.verdict() == verdict::permanent);
    CHECK(attempts == 1);
}

TEST_CASE("curl transport: mutual TLS — with the client certificate 200, without it nginx answers 400") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{
        tls_server(pki, "server", "ssl_client_certificate " + pki.path("ca.pem") + ";\nssl_verify_client on;"), "",
        "ssl"};
    client with_cert({.limits = quick,
                      .tls = {.ca_file = pki.path("ca.pem"),
                              .client_certificate = pki.path("client.pem"),
                              .private_key = pki.path("client.key")}});
    CHECK(with_cert.perform(request::get(https(nginx))).ok());

    // nginx completes the handshake and answers "400 No required SSL
    // certificate was sent": a whole response, permanent.
    client without({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}});
    const auto r = without.perform(request::get(https(nginx)));
    REQUIRE(r.completed());
    CHECK(r.status() == 400);
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);
}

TEST_CASE("curl transport: HTTP/2 over TLS by default (ALPN), HTTP/1.1 when asked") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{tls_server(pki, "server"), "", "ssl http2"};
    client h2({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}});
    CHECK(h2.options().http_version == http_version::http2_tls);
    auto r = h2.perform(request::get(https(nginx)));
    REQUIRE(r.ok());
    CHECK(r.http_version() == 20);
    CHECK(r.body() == "HTTP/2.0");
    CHECK(r.header("x-origin") == "nginx");
    // A reused response and a second request on the same connection.
    h2.perform(request::post(https(nginx), "x"), r);
    CHECK(r.ok());
    CHECK(r.http_version() == 20);
    CHECK(r.timings().reused_connection);

    client h1({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .http_version = http_version::http1_1});
    const auto r1 = h1.perform(request::get(https(nginx)));
    REQUIRE(r1.ok());
    CHECK(r1.http_version() == 11);
    CHECK(r1.body() == "HTTP/1.1");
}

TEST_CASE("curl transport: h2c with prior knowledge") {
    resil_test::nginx_server nginx{R"(location /ok { return 200 "$server_protocol"; })", "", "http2"};
    client http({.limits = quick, .http_version = http_version::http2_prior_knowledge});
    const auto r = http.perform(request::get(nginx.url("/ok")));
    REQUIRE(r.ok());
    CHECK(r.http_version() == 20);
    CHECK(r.body() == "HTTP/2.0");
}

TEST_CASE("curl transport: a pinned public key — the right one passes, another is rejected") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{tls_server(pki, "server"), "", "ssl"};
    const auto with_pin = [&](std::string pin) {
        client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem"), .pinned_public_key = std::move(pin)}});
        return http.perform(request::get(https(nginx)));
    };
    CHECK(with_pin(pki.server_pin()).ok());
    CHECK(with_pin(pki.path("server.pub.pem")).ok());
    CHECK(with_pin(pki.server_pin() + ";" + pki.wrong_pin()).ok());  // any of a list
    const auto wrong = with_pin(pki.wrong_pin());
    CHECK(wrong.transport() == transport_status::tls_certificate_rejected);
    CHECK(wrong.curl_code() == CURLE_SSL_PINNEDPUBKEYNOTMATCH);
    CHECK_FALSE(wrong.may_have_reached_server());
    CHECK(resil::curl::classify(wrong).verdict == verdict::permanent);
    CHECK(with_pin(pki.path("wrong.pub.pem")).transport() == transport_status::tls_certificate_rejected);
}

TEST_CASE("curl transport: a minimum of TLS 1.3 against a server limited to TLS 1.2 is refused in the handshake") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{tls_server(pki, "server", "ssl_protocols TLSv1.2;"), "", "ssl"};
    client tls13({.limits = quick,
                  .tls = {.ca_file = pki.path("ca.pem"), .minimum_version = resil::curl::tls_version::tls1_3}});
    const auto r = tls13.perform(request::post(https(nginx), "x"));
    // The server's protocol_version alert: no retry can pass (curl_tls_refusal.cpp).
    CHECK(r.transport() == transport_status::tls_handshake_refused);
    CHECK(r.curl_code() == CURLE_SSL_CONNECT_ERROR);
    CHECK_FALSE(r.may_have_reached_server());  // nothing of the request left
    CHECK(resil::curl::classify(r).verdict == verdict::permanent);

    client tls12({.limits = quick,
                  .tls = {.ca_file = pki.path("ca.pem"), .minimum_version = resil::curl::tls_version::tls1_2}});
    CHECK(tls12.perform(request::get(https(nginx))).ok());
}

TEST_CASE("curl transport: missing or unreadable files are an error at construction, naming the file") {
    resil_test::tls_files pki;
    const std::string missing = pki.directory() + "/no-such.pem";
    CHECK(construction_error({.tls = {.ca_file = missing}}) ==
          "resil::curl::client: `tls.ca_file` must be a readable file, got \"" + missing + "\"");
    CHECK(construction_error({.tls = {.ca_directory = missing}}) ==
          "resil::curl::client: `tls.ca_directory` must be a readable directory, got \"" + missing + "\"");
    CHECK(construction_error({.tls = {.ca_file = pki.directory()}}).find("`tls.ca_file` must be a readable file") !=
          std::string::npos);
    CHECK(construction_error({.tls = {.client_certificate = missing}}) ==
          "resil::curl::client: `tls.client_certificate` must be a readable file, got \"" + missing + "\"");
    CHECK(construction_error({.tls = {.client_certificate = pki.path("client.pem"), .private_key = missing}}) ==
          "resil::curl::client: `tls.private_key` must be a readable file, got \"" + missing + "\"");
    CHECK(construction_error({.tls = {.private_key = pki.path("client.key")}}).find(
              "`tls.private_key` must be given with a client_certificate") != std::string::npos);
    CHECK(construction_error({.tls = {.pinned_public_key = missing}}) ==
          "resil::curl::client: `tls.pinned_public_key` must be a readable file, got \"" + missing + "\"");
    CHECK(construction_error({.tls = {.pinned_public_key = "sha256//short"}}).find(
              "`tls.pinned_public_key` must be \"sha256//\" and a base64 SHA-256 hash") != std::string::npos);
    CHECK(construction_error({.proxy = {.url = "socks5://127.0.0.1:1080"}}) ==
          "resil::curl::client: `proxy.url` must be empty or an http:// or https:// URL with a host, got "
          "\"socks5://127.0.0.1:1080\"");
    CHECK(construction_error({.proxy = {.url = "http://p:1", .password = "secret"}}).find("secret") ==
          std::string::npos);
    CHECK(construction_error({.redirects = {.max = 51}}) ==
          "resil::curl::client: `redirects.max` must be in [0, 50], got 51");
    CHECK(construction_error({.redirects = {.max = -1}}) ==
          "resil::curl::client: `redirects.max` must be in [0, 50], got -1");
    CHECK(construction_error({.redirects = {.allow_https_to_http = true}}) ==
          "resil::curl::client: `redirects.allow_https_to_http` must be false while max is 0 (redirects off), got "
          "true");
    CHECK(construction_error({.redirects = {.max = 1, .allow_https_to_http = true}}) == "no error");
    CHECK(construction_error({.tls = {.minimum_version = static_cast<resil::curl::tls_version>(7)}}) ==
          "resil::curl::client: `tls.minimum_version` must be library_default, tls1_2 or tls1_3, got 7");
    for (const char* hostless : {"http://:3128", "https://user:pw@:3128", "http://:3128/path"})
        CHECK(construction_error({.proxy = {.url = hostless}}) ==
              "resil::curl::client: `proxy.url` must be empty or an http:// or https:// URL with a host, got \"" +
                  std::string(hostless) + "\"");
    CHECK(construction_error({.proxy = {.url = "http://[::1]:3128"}}) == "no error");
    CHECK(construction_error({.proxy = {.url = "http://u:p@proxy:3128"}}) == "no error");
    // Files that exist are fine.
    CHECK(construction_error({.tls = {.ca_file = pki.path("ca.pem"), .ca_directory = pki.directory()}}) == "no error");
}

TEST_CASE("curl transport: through tinyproxy — plain requests, CONNECT tunnels, no_proxy, refusals") {
    resil_test::tls_files pki;
    resil_test::nginx_server origin{R"(location /via { add_header X-Origin nginx; return 200 "via=$http_via"; })"};
    resil_test::nginx_server tls_origin{tls_server(pki, "server"), "", "ssl"};
    resil_test::tinyproxy_server proxy;

    SECTION("a GET through the proxy reaches nginx, which sees the proxy's Via") {
        client http({.limits = quick, .proxy = {.url = proxy.url()}});
        const auto r = http.perform(request::get(origin.url("/via")));
        REQUIRE(r.ok());
        CHECK(r.body().find("tinyproxy") != std::string::npos);
        CHECK(r.header("X-Origin") == "nginx");
    }
    SECTION("https through a CONNECT tunnel: the proxy's answer to CONNECT is not taken for the server's") {
        client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .proxy = {.url = proxy.url()}});
        auto r = http.perform(request::get(https(tls_origin)));
        REQUIRE(r.ok());
        CHECK(r.header("X-Origin") == "nginx");
        CHECK(r.trailers().empty());
        CHECK(proxy.log().find("CONNECT") != std::string::npos);
        // And the tunnel is kept for the next request.
        http.perform(request::post(https(tls_origin, "/ok"), "x"), r);
        CHECK(r.ok());
        CHECK(r.timings().reused_connection);
    }
    SECTION("an https:// proxy (TLS to the proxy, verified with the same CA): plain and tunnelled requests") {
        resil_test::tls_front tls_proxy{pki.path("server.pem"), pki.path("server.key"), proxy.port()};
        client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .proxy = {.url = tls_proxy.url()}});
        const auto plain = http.perform(request::get(origin.url("/via")));
        INFO(plain.error_message());
        REQUIRE(plain.ok());
        CHECK(plain.body().find("tinyproxy") != std::string::npos);
        const auto tunnelled = http.perform(request::get(https(tls_origin)));
        INFO(tunnelled.error_message());
        REQUIRE(tunnelled.ok());
        CHECK(tunnelled.header("X-Origin") == "nginx");
        // The proxy's certificate is checked like a server's.
        client untrusting({.limits = quick, .proxy = {.url = tls_proxy.url()}});
        const auto refused = untrusting.perform(request::post(origin.url("/via"), "x"));
        CHECK(refused.transport() == transport_status::tls_certificate_rejected);
        CHECK_FALSE(refused.may_have_reached_server());
    }
    SECTION("no_proxy sends a host's requests directly") {
        client http({.limits = quick,
                     .proxy = {.url = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()),
                               .no_proxy = "127.0.0.1"}});
        const auto r = http.perform(request::get(origin.url("/via")));
        REQUIRE(r.ok());
        CHECK(r.body() == "via=");
    }
    SECTION("a proxy refusing the connection: never sent, so a POST is retried safely") {
        resil_test::fault_server server;
        server.on("/pay", {resil_test::action::respond(200, "paid")});
        client http({.limits = quick, .proxy = {.url = "http://127.0.0.1:" + std::to_string(resil_test::refused_port())}});
        int attempts = 0;
        const auto out = with_retries(http, [&] { return request::post(server.url("/pay"), "x"); }, attempts);
        REQUIRE(out.has_value());
        CHECK(out->transport() == transport_status::connect_failed);
        CHECK(out->curl_code() == CURLE_COULDNT_CONNECT);
        CHECK_FALSE(out->may_have_reached_server());
        CHECK(attempts == 3);
        CHECK(server.requests().empty());
    }
    SECTION("a proxy refusing CONNECT (403): never sent, permanent") {
        resil_test::tinyproxy_server strict{"ConnectPort 443"};
        client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .proxy = {.url = strict.url()}});
        int attempts = 0;
        const auto out = with_retries(http, [&] { return request::post(https(tls_origin), "x"); }, attempts);
        REQUIRE(out.has_value());
        INFO(out->error_message());
        CHECK(out->transport() == transport_status::invalid_request);
        CHECK(out->curl_code() == CURLE_RECV_ERROR);
        CHECK_FALSE(out->may_have_reached_server());
        CHECK(out->status() == 0);
        CHECK(out.verdict() == verdict::permanent);
        CHECK(attempts == 1);
    }
    SECTION("a proxy that cannot reach the server answers CONNECT with 5xx: never sent, retried") {
        client http({.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .proxy = {.url = proxy.url()}});
        int attempts = 0;
        const auto closed = "https://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/";
        const auto out = with_retries(http, [&] { return request::post(closed, "x"); }, attempts);
        REQUIRE(out.has_value());
        INFO(out->error_message());
        CHECK(out->transport() == transport_status::connect_failed);
        CHECK_FALSE(out->may_have_reached_server());
        CHECK(out.verdict() == verdict::retryable);
        CHECK(attempts == 3);
    }
    SECTION("the description names the proxy, never its password") {
        client http({.proxy = {.url = "http://joe:hunter2@proxy.internal:3128",
                               .no_proxy = "localhost",
                               .username = "joe",
                               .password = "hunter2"}});
        const auto text = resil::curl::describe(http.options());
        CHECK(text.find("hunter2") == std::string::npos);
        CHECK(text.find("proxy http://proxy.internal:3128 as joe, not for localhost") != std::string::npos);
    }
}

TEST_CASE("curl transport: the URL is parsed once per change, and every call goes where its own URL says") {
    // The client hands libcurl the URL parsed (CURLOPT_CURLU) as well as its
    // text: libcurl 7.88 keeps reading the text for some things and goes back
    // to it after a redirect, later versions rebuild it from the parsed URL.
    // One client (one easy handle) goes through every change of URL, a
    // redirect, the same URL again after it, and a URL the parser refuses.
    resil_test::nginx_server nginx{resil_test::where_it_went};
    const auto port = std::to_string(nginx.port());
    client http({.limits = quick, .redirects = {.max = 2}});
    const auto body = [&](const std::string& url) {
        const auto r = http.perform(request::get(url));
        INFO(url << ": " << r.error_message());
        CHECK(r.ok());
        return r.body();
    };
    CHECK(body(nginx.url("/who?a=1")) == "127.0.0.1 /who?a=1");
    CHECK(body(nginx.url("/who?a=1")) == "127.0.0.1 /who?a=1");
    CHECK(body(nginx.url("/r")) == "127.0.0.1 /who?via=r");
    CHECK(body(nginx.url("/r")) == "127.0.0.1 /who?via=r");  // the same URL, after libcurl followed a redirect
    CHECK(body(nginx.url("/who?b=2")) == "127.0.0.1 /who?b=2");
    CHECK(body("http://localhost:" + port + "/who/a%20b#fragment") == "localhost /who/a%20b");
    CHECK(body(nginx.url("/x/../who?dots")) == "127.0.0.1 /who?dots");  // as libcurl parses text: dot segments go

    // A port out of range passes the request's own check but not libcurl's
    // parser: refused before any I/O, as libcurl refuses the text.
    const auto bad = http.perform(request::get("http://127.0.0.1:99999/who"));
    INFO(bad.error_message());
    CHECK(bad.transport() == transport_status::invalid_request);
    CHECK(bad.curl_code() == CURLE_URL_MALFORMAT);
    CHECK_FALSE(bad.may_have_reached_server());
    CHECK(body(nginx.url("/who?c=3")) == "127.0.0.1 /who?c=3");
    CHECK(body(nginx.url("/r")) == "127.0.0.1 /who?via=r");

    // A URL whose parse the handle's own options change goes as text, so
    // that libcurl applies them as it did before the parsed URL.
    client as_is({.limits = quick, .configure_handle = [](CURL* e) {
                      curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
                      curl_easy_setopt(e, CURLOPT_DISALLOW_USERNAME_IN_URL, 1L);
                  }});
    const auto kept = as_is.perform(request::get(nginx.url("/x/../who?dots")));
    CHECK(kept.body() == "127.0.0.1 /x/../who?dots");
    CHECK(as_is.perform(request::get(nginx.url("/who?after"))).body() == "127.0.0.1 /who?after");
    const auto named = as_is.perform(request::get("http://joe@127.0.0.1:" + port + "/who"));
    INFO(named.error_message());
    CHECK(named.curl_code() == CURLE_LOGIN_DENIED);
    CHECK_FALSE(named.may_have_reached_server());
    CHECK(body(std::string("http://joe@127.0.0.1:") + port + "/who?user") == "127.0.0.1 /who?user");
}

TEST_CASE("curl transport: redirects — off by default, followed when on, a keyed POST kept, too many refused") {
    resil_test::nginx_server nginx{R"(
        location = /r1 { return 302 /r2; }
        location = /r2 { return 302 /final; }
        location = /see-other { return 303 /final; }
        location = /moved { return 301 /final; }
        location = /h1 { return 302 /h2; }
        location = /h2 { return 302 /h3; }
        location = /h3 { return 302 /final; }
        location = /ftp { return 302 ftp://127.0.0.1/file; }
        location = /to-trailers { return 307 /trailers; }
        location = /trailers {
            add_header X-Final yes;
            add_trailer X-Checksum abc;
            echo -n "body";
        }
        location = /final {
            add_header X-Final yes;
            echo_read_request_body;
            echo -n "$request_method $request_body key=$http_idempotency_key";
        }
    )"};

    SECTION("off: the 3xx is the response") {
        client http({.limits = quick});
        const auto r = http.perform(request::get(nginx.url("/r1")));
        REQUIRE(r.completed());
        CHECK(r.status() == 302);
        CHECK(r.header("Location").value_or("").ends_with("/r2"));
        CHECK(resil::curl::classify(r).verdict == verdict::success);
    }
    SECTION("on with max 2: two hops followed; the final response's fields only") {
        client http({.limits = quick, .redirects = {.max = 2}});
        auto r = http.perform(request::get(nginx.url("/r1")));
        REQUIRE(r.ok());
        CHECK(r.body() == "GET  key=");
        CHECK(r.header("X-Final") == "yes");
        CHECK_FALSE(r.header("Location"));
        CHECK(r.trailers().empty());
        // Reused response, POST: stays a POST with its body across 302s, and
        // its idempotency key goes with it.
        http.perform(request::post(nginx.url("/r1"), "payload"), r);
        REQUIRE(r.ok());
        CHECK(r.body().starts_with("POST payload key=\""));
        CHECK(r.carried_idempotency_key());
    }
    SECTION("a keyed POST stays a POST across 301; a 303 makes it a GET without its body (RFC 9110 §15.4.4)") {
        client http({.limits = quick, .redirects = {.max = 2}});
        CHECK(http.perform(request::post(nginx.url("/moved"), "a")).body().starts_with("POST a key=\""));
        CHECK(http.perform(request::post(nginx.url("/see-other"), "b")).body().starts_with("GET  key=\""));
    }
    SECTION("the final response's trailers stay trailers after a redirect") {
        client http({.limits = quick, .redirects = {.max = 2}});
        const auto r = http.perform(request::get(nginx.url("/to-trailers")));
        REQUIRE(r.ok());
        CHECK(r.body() == "body");
        CHECK(r.header("X-Final") == "yes");
        CHECK_FALSE(r.header("X-Checksum"));
        REQUIRE(r.trailers().size() == 1);
        CHECK(r.trailers().find("X-Checksum") == "abc");
    }
    SECTION("a redirect to another scheme is not followed: invalid_request, permanent") {
        client http({.limits = quick, .redirects = {.max = 2}});
        const auto r = http.perform(request::post(nginx.url("/ftp"), "x"));
        INFO(r.error_message());
        CHECK(r.transport() == transport_status::invalid_request);
        CHECK(resil::curl::classify(r).verdict == verdict::permanent);
    }
    SECTION("three hops with max 2: too many redirects, permanent") {
        client http({.limits = quick, .redirects = {.max = 2}});
        const auto r = http.perform(request::get(nginx.url("/h1")));
        CHECK(r.transport() == transport_status::invalid_request);
        CHECK(r.curl_code() == CURLE_TOO_MANY_REDIRECTS);
        CHECK(resil::curl::classify(r).verdict == verdict::permanent);
        client more({.limits = quick, .redirects = {.max = 3}});
        CHECK(more.perform(request::get(nginx.url("/h1"))).body() == "GET  key=");
    }
}

TEST_CASE("curl transport: a redirect never sends a request that may not be repeated a second time") {
    // Each hop's requests counted where they arrive.
    resil_test::fault_server server;
    const auto redirect = [](int status) {
        return resil_test::action::respond(status, "see /final", {{"Location", "/final"}});
    };
    for (const int s : {301, 302, 303, 307, 308}) server.on("/s" + std::to_string(s), {redirect(s)});
    server.on("/final", {resil_test::action::respond(200, "final")});
    const auto at = [&](int s) { return server.url("/s" + std::to_string(s)); };

    SECTION("an unkeyed POST: every 3xx comes back as it is, exactly one request reached the server") {
        client http({.limits = quick, .idempotency_key = resil::curl::key_header_format::none,
                     .redirects = {.max = 3}});
        for (const int s : {301, 302, 303, 307, 308}) {
            INFO(s);
            int attempts = 0;
            const auto out = with_retries(http, [&] { return request::post(at(s), "pay"); }, attempts);
            REQUIRE(out.has_value());
            INFO(out->error_message());
            CHECK(out->transport() == transport_status::completed);
            CHECK(out->status() == s);
            CHECK(out->header("Location") == "/final");
            CHECK(out->body() == "see /final");
            CHECK_FALSE(out->repeatable());
            CHECK(attempts == 1);
            CHECK(server.requests("/s" + std::to_string(s)).size() == 1);
        }
        CHECK(server.requests("/final").empty());
        CHECK(server.requests().size() == 5);
    }
    SECTION("a keyed POST: 307 and 308 send it again as it was (method, body, key) to the Location") {
        client http({.limits = quick, .redirects = {.max = 3}});
        for (const int s : {307, 308}) {
            INFO(s);
            const auto r = http.perform(request::post(at(s), "pay"));
            INFO(r.error_message());
            REQUIRE(r.ok());
            CHECK(r.body() == "final");
            CHECK(r.carried_idempotency_key());
        }
        const auto first = server.requests("/s307");
        const auto landed = server.requests("/final");
        REQUIRE(first.size() == 1);
        REQUIRE(landed.size() == 2);
        CHECK(landed[0].method == "POST");
        CHECK(landed[0].body == "pay");
        REQUIRE(first[0].header("Idempotency-Key"));
        CHECK(landed[0].header("Idempotency-Key") == first[0].header("Idempotency-Key"));
        CHECK(landed[1].method == "POST");
        CHECK(landed[1].body == "pay");
    }
    SECTION("the caller's own key makes a POST repeatable too, with key_header_format::none") {
        client http({.limits = quick, .idempotency_key = resil::curl::key_header_format::none,
                     .redirects = {.max = 3}});
        const auto r = http.perform(request::post(at(307), "pay").add_header("Idempotency-Key", "\"mine\""));
        REQUIRE(r.ok());
        const auto landed = server.requests("/final");
        REQUIRE(landed.size() == 1);
        CHECK(landed[0].header("Idempotency-Key") == "\"mine\"");
        CHECK(landed[0].body == "pay");
    }
    SECTION("a keyed POST answered 301 or 302 stays a POST; 303 (processed: see other) is a GET without body") {
        client http({.limits = quick, .redirects = {.max = 3}});
        for (const int s : {301, 302}) REQUIRE(http.perform(request::post(at(s), "pay")).ok());
        const auto r = http.perform(request::post(at(303), "pay"));
        REQUIRE(r.ok());
        CHECK(r.body() == "final");
        const auto landed = server.requests("/final");
        REQUIRE(landed.size() == 3);
        CHECK(landed[0].method == "POST");
        CHECK(landed[0].body == "pay");
        CHECK(landed[1].method == "POST");
        CHECK(landed[1].body == "pay");
        CHECK(landed[2].method == "GET");
        CHECK(landed[2].body.empty());
        CHECK(server.requests("/s303").size() == 1);
    }
    SECTION("PUT and DELETE follow 307 as they are; their 303 is returned as it is (libcurl would keep the method)") {
        client http({.limits = quick, .redirects = {.max = 3}});
        const auto put = http.perform(request::put(at(307), "v"));
        REQUIRE(put.ok());
        for (const auto& req : {request::put(at(303), "v"), request::delete_(at(303))}) {
            const auto r = http.perform(req);
            INFO(r.error_message());
            CHECK(r.transport() == transport_status::completed);
            CHECK(r.status() == 303);
            CHECK(r.header("Location") == "/final");
            CHECK(resil::curl::classify(r).verdict == verdict::success);
        }
        const auto landed = server.requests("/final");
        REQUIRE(landed.size() == 1);
        CHECK(landed[0].method == "PUT");
        CHECK(landed[0].body == "v");
        CHECK(server.requests("/s303").size() == 2);
        // The client goes on normally afterwards.
        CHECK(http.perform(request::get(at(303))).body() == "final");
    }
}

TEST_CASE("curl transport: an https:// request never follows a redirect to http:// unless allowed") {
    resil_test::tls_files pki;
    resil_test::fault_server plain;
    plain.on("/pay", {resil_test::action::respond(200, "cleartext")});
    resil_test::nginx_server nginx{tls_server(pki, "server", "location = /down { return 307 " + plain.url("/pay") +
                                                                 "; }\nlocation = /hop { return 302 /ok; }"),
                                   "", "ssl"};
    const client_options base{.limits = quick, .tls = {.ca_file = pki.path("ca.pem")}, .redirects = {.max = 2}};

    SECTION("refused before connecting: invalid_request, permanent, nothing reached the http server") {
        client http(base);
        int attempts = 0;
        const auto out = with_retries(http, [&] { return request::post(https(nginx, "/down"), "secret"); }, attempts);
        REQUIRE(out.has_value());
        INFO(out->error_message());
        CHECK(out->transport() == transport_status::invalid_request);
        CHECK(out->curl_code() == CURLE_UNSUPPORTED_PROTOCOL);
        CHECK(out->error_message().starts_with("a redirect to a disallowed scheme was not followed"));
        CHECK(out.verdict() == verdict::permanent);
        CHECK(attempts == 1);
        CHECK(http.perform(request::get(https(nginx, "/down"))).transport() == transport_status::invalid_request);
        CHECK(plain.requests().empty());
        CHECK(plain.connections() == 0);
        // https to https is followed, on the same client.
        const auto hop = http.perform(request::get(https(nginx, "/hop")));
        REQUIRE(hop.ok());
        CHECK(hop.header("X-Origin") == "nginx");
    }
    SECTION("an http:// request may be redirected to https://") {
        plain.on("/up", {resil_test::action::respond(302, "", {{"Location", https(nginx, "/ok")}})});
        client http(base);
        const auto r = http.perform(request::get(plain.url("/up")));
        INFO(r.error_message());
        REQUIRE(r.ok());
        CHECK(r.header("X-Origin") == "nginx");
        // ... and after it an https:// request is held to https:// again.
        CHECK(http.perform(request::get(https(nginx, "/down"))).transport() == transport_status::invalid_request);
        CHECK(plain.requests("/pay").empty());
    }
    SECTION("redirects.allow_https_to_http lets it through") {
        auto options = base;
        options.redirects.allow_https_to_http = true;
        client http(options);
        const auto r = http.perform(request::post(https(nginx, "/down"), "secret"));
        INFO(r.error_message());
        REQUIRE(r.ok());
        CHECK(r.body() == "cleartext");
        REQUIRE(plain.requests("/pay").size() == 1);
        CHECK(plain.requests("/pay")[0].body == "secret");
    }
}

TEST_CASE("curl transport: an HTTP/2 stream the server refused is sent again, even a POST (RFC 9113 §8.7)") {
    const client_options h2c{.limits = quick, .http_version = http_version::http2_prior_knowledge};
    using resil_test::h2_step;

    SECTION("refused on a new connection") {
        resil_test::h2_script_server server{{h2_step::refuse, h2_step::answer}};
        client http(h2c);
        const auto r = http.perform(request::post(server.url("/pay"), "x").add_header("Idempotency-Key", "\"k\""));
        INFO(r.error_message());
        REQUIRE(r.ok());
        CHECK(r.body() == "ok");
        CHECK(server.requests() == 2);
        CHECK(server.answered() == 1);
        CHECK(server.connections() == 2);
    }
    SECTION("refused on a kept-alive HTTP/2 connection (over TLS), for an unkeyed POST") {
        // h2c connections are not reused with libcurl 7.88 (see below): TLS
        // (haproxy offering h2 by ALPN) in front of the scripted server.
        resil_test::tls_files pki;
        resil_test::h2_script_server server{{h2_step::answer, h2_step::refuse, h2_step::answer}};
        resil_test::tls_front front{pki.path("server.pem"), pki.path("server.key"), server.port(), "alpn h2"};
        const std::string url = "https" + front.url().substr(5) + "/pay";
        // The POST goes on the kept-alive connection however long the GET
        // took to end (connection_options::max_idle_for_unrepeatable).
        client http({.limits = quick, .idempotency_key = resil::curl::key_header_format::none,
                     .tls = {.ca_file = pki.path("ca.pem")},
                     .connections = {.max_idle_for_unrepeatable = std::chrono::hours{1}}});
        const auto first = http.perform(request::get(url));
        INFO(first.error_message());
        REQUIRE(first.ok());
        CHECK(first.http_version() == 20);
        const auto r = http.perform(request::post(url, "x"));
        INFO(r.error_message());
        REQUIRE(r.ok());
        CHECK(r.body() == "ok");
        CHECK_FALSE(r.carried_idempotency_key());
        CHECK(server.requests() == 3);
        CHECK(server.answered() == 2);
        CHECK(server.connections() == 2);
    }
    SECTION("GOAWAY before the request was processed: libcurl 7.88 reports a framing error, kept ambiguous") {
        // libcurl 7.88 does not resend a stream closed by GOAWAY and reports
        // CURLE_HTTP2 without saying why, as it does for a server's protocol
        // error after which the request may have been acted on: resil keeps
        // it ambiguous. A GET is retried (on a new connection), an unkeyed
        // POST is not.
        resil_test::h2_script_server server{{h2_step::goaway, h2_step::answer}};
        client http({.limits = quick, .idempotency_key = resil::curl::key_header_format::none,
                     .http_version = http_version::http2_prior_knowledge});
        int attempts = 0;
        const auto post = with_retries(http, [&] { return request::post(server.url("/pay"), "x"); }, attempts);
        REQUIRE(post.has_value());
        CHECK(post->transport() == transport_status::protocol_error);
        CHECK(post->curl_code() == CURLE_HTTP2);
        CHECK(post->may_have_reached_server());
        CHECK(post.verdict() == verdict::ambiguous);
        CHECK(attempts == 1);
        CHECK(server.answered() == 0);
        attempts = 0;
        const auto get = with_retries(http, [&] { return request::get(server.url("/a")); }, attempts);
        REQUIRE(get.ok());
        CHECK(attempts == 1);  // the GOAWAY was the first step only
    }
}

TEST_CASE("curl transport: an HTTP/2 stream cut after its 200 head keeps its status and its version") {
    resil_test::h2_script_server server{{resil_test::h2_step::cut}};
    client http({.limits = quick, .http_version = http_version::http2_prior_knowledge});
    const auto r = http.perform(request::get(server.url("/x")));
    INFO(r.error_message());
    CHECK_FALSE(r.completed());
    CHECK(r.transport() == transport_status::protocol_error);
    CHECK(r.may_have_reached_server());
    CHECK(r.status() == 200);
    CHECK(r.http_version() == 20);  // read whenever a head arrived, not only for a whole response

    // No head: no version.
    const auto refused = http.perform(request::get("http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/"));
    CHECK(refused.status() == 0);
    CHECK(refused.http_version() == 0);
}

TEST_CASE("curl transport: h2c connections are not reused before libcurl 8.0.0 (curl#10634), so none fails") {
    // The body is read before the answer: nginx answering a POST at once
    // resets the stream, which libcurl 7.88 reports as CURLE_HTTP2_STREAM.
    resil_test::nginx_server nginx{R"(location /ok { echo_read_request_body; echo -n $server_protocol; })", "",
                                   "http2"};
    client http({.limits = quick, .http_version = http_version::http2_prior_knowledge});
    auto r = http.perform(request::get(nginx.url("/ok")));
    for (int i = 0; i < 5; ++i) {
        http.perform(i % 2 ? request::get(nginx.url("/ok")) : request::post(nginx.url("/ok"), "x"), r);
        INFO(r.error_message());
        REQUIRE(r.ok());
        CHECK(r.http_version() == 20);
        CHECK(r.timings().reused_connection == (curl_version_info(CURLVERSION_NOW)->version_num >= 0x080000));
    }
}

TEST_CASE("curl transport: which of libcurl's resends are let through (capture::may_send)") {
    using resil::curl::detail::capture;
    using resil::curl::detail::transfer_state;
    auto r = resil::curl::detail::response_access::blank();
    std::array<char, CURL_ERROR_SIZE> error{};
    transfer_state t;
    t.error_text = error.data();
    // A connection that earlier answered over HTTP/2.
    std::memcpy(t.http2_connection.ip.data(), "127.0.0.1", 10);
    t.http2_connection.primary_port = 443;
    t.http2_connection.local_port = 50000;

    SECTION("after a send on a known HTTP/2 connection, with nothing received and no error: a refused stream") {
        t.start(r, true);
        CHECK(capture::may_send(t, "127.0.0.1", 443, 50000));
        CHECK(capture::may_send(t, "127.0.0.1", 443, 50001));
        CHECK(t.refused_resends == 1);
        CHECK_FALSE(t.replay_refused);
        // The resend went over a new connection that is not known to be
        // HTTP/2 and this handle counts no connections: a third send is refused.
        CHECK_FALSE(capture::may_send(t, "127.0.0.1", 443, 50002));
        CHECK(t.replay_refused);
    }
    SECTION("a send on another connection (HTTP/1.1, reused): the resend is refused") {
        t.start(r, true);
        CHECK(capture::may_send(t, "127.0.0.1", 80, 40000));
        CHECK_FALSE(capture::may_send(t, "127.0.0.1", 80, 40001));
        CHECK(t.replay_refused);
    }
    SECTION("libcurl recorded an error (a dead connection): refused") {
        t.start(r, true);
        CHECK(capture::may_send(t, "127.0.0.1", 443, 50000));
        std::memcpy(error.data(), "Recv failure", 13);
        CHECK_FALSE(capture::may_send(t, "127.0.0.1", 443, 50001));
        CHECK(t.replay_refused);
    }
    SECTION("bytes arrived since the send: refused") {
        t.start(r, true);
        CHECK(capture::may_send(t, "127.0.0.1", 443, 50000));
        t.received += 10;
        CHECK_FALSE(capture::may_send(t, "127.0.0.1", 443, 50001));
    }
    SECTION("a redirect libcurl follows is a new request, not a resend") {
        t.follows_redirects = true;
        t.repeatable = true;
        t.max_header_bytes = 1 << 16;
        t.start(r, true);
        CHECK(capture::may_send(t, "10.0.0.1", 80, 40000));
        for (const char* line : {"HTTP/1.1 302 Found\r\n", "Location: /next\r\n", "\r\n"})
            CHECK(capture::header_line(t, line));
        CHECK(t.redirect_pending);
        CHECK(capture::may_send(t, "10.0.0.1", 80, 40000));
        CHECK_FALSE(t.replay_refused);
        CHECK(t.refused_resends == 0);
        // A 302 without a Location ends the response: later fields are trailers.
        for (const char* line : {"HTTP/1.1 302 Found\r\n", "X-A: 1\r\n", "\r\n", "X-T: 2\r\n"})
            CHECK(capture::header_line(t, line));
        CHECK_FALSE(t.redirect_pending);
        CHECK(r.header("X-A") == "1");
        CHECK(r.trailers().find("X-T") == "2");
    }
    SECTION("a redirect of a request that may not be repeated is refused: the 3xx is the answer") {
        t.follows_redirects = true;
        t.repeatable = false;
        t.max_header_bytes = 1 << 16;
        t.start(r, true);
        CHECK(capture::may_send(t, "10.0.0.1", 80, 40000));
        for (const char* line : {"HTTP/1.1 307 Temporary Redirect\r\n", "Location: /next\r\n", "\r\n"})
            CHECK(capture::header_line(t, line));
        CHECK_FALSE(capture::may_send(t, "10.0.0.1", 80, 40000));
        CHECK(t.redirect_refused);
        CHECK_FALSE(t.replay_refused);
        CHECK(t.sends == 1);
        CHECK(r.header("Location") == "/next");
    }
    SECTION("a 303 libcurl would follow with another method than GET (PUT, DELETE, ...) is refused") {
        t.follows_redirects = true;
        t.repeatable = true;
        t.max_header_bytes = 1 << 16;
        for (const bool as_get : {true, false}) {
            t.see_other_as_get = as_get;
            t.start(r, true);
            CHECK(capture::may_send(t, "10.0.0.1", 80, 40000));
            for (const char* line : {"HTTP/1.1 303 See Other\r\n", "Location: /next\r\n", "\r\n"})
                CHECK(capture::header_line(t, line));
            CHECK(capture::may_send(t, "10.0.0.1", 80, 40000) == as_get);
            CHECK(t.redirect_refused == !as_get);
        }
    }
}

TEST_CASE("curl transport: received header lines become fields; lines that are not fields are skipped") {
    using resil::curl::detail::capture;
    using resil::curl::detail::transfer_state;
    auto r = resil::curl::detail::response_access::blank();
    transfer_state t;
    t.max_header_bytes = 1 << 16;
    t.max_body = 100;
    t.start(r, true);
    using namespace std::string_view_literals;
    for (const auto line :
         {"HTTP/1.1 200 OK\r\n"sv, "Server: nginx\r\n"sv, "X-Spaced:   two  words \t\r\n"sv, "X-Tight:v\r\n"sv,
          "X-Empty:\r\n"sv, "X-Blank:   \r\n"sv, "Bad Name: skipped\r\n"sv, ": no name\r\n"sv, "no colon at all\r\n"sv,
          "X(paren): skipped\r\n"sv, "X-Folded: first\r\n"sv, " \t second\r\n"sv, "CONTENT-LENGTH: 5\n"sv,
          "X-Last: a:b: c\r\n"sv})
        CHECK(capture::header_line(t, line));
    CHECK_FALSE(t.malformed);
    std::vector<std::pair<std::string, std::string>> fields;
    for (const auto [name, value] : r.headers()) fields.emplace_back(name, value);
    CHECK(fields == std::vector<std::pair<std::string, std::string>>{{"Server", "nginx"},
                                                                     {"X-Spaced", "two  words"},
                                                                     {"X-Tight", "v"},
                                                                     {"X-Empty", ""},
                                                                     {"X-Blank", ""},
                                                                     {"X-Folded", "first second"},
                                                                     {"CONTENT-LENGTH", "5"},
                                                                     {"X-Last", "a:b: c"}});
    CHECK(r.header("content-length") == "5");

    SECTION("a CR or NUL inside a line makes the reply malformed, wherever it is") {
        for (const auto line : {"X-C: a\rb\r\n"sv, "X-N: a\0b\r\n"sv, "X\r: v\r\n"sv, "X-Long-Name-Here: 0123456789\0\r\n"sv}) {
            t.start(r, true);
            CAPTURE(line);
            CHECK_FALSE(capture::header_line(t, line));
            CHECK(t.malformed);
        }
    }
    SECTION("a Content-Length over max_body_bytes stops the transfer, in any letter case") {
        for (const auto line : {"Content-Length: 101\r\n"sv, "content-length: 101\r\n"sv, "CoNtEnT-LeNgTh: 101\r\n"sv}) {
            t.start(r, true);
            REQUIRE(capture::header_line(t, "HTTP/1.1 200 OK\r\n"));
            CAPTURE(line);
            CHECK_FALSE(capture::header_line(t, line));
            CHECK(t.too_large);
        }
        t.start(r, true);
        REQUIRE(capture::header_line(t, "HTTP/1.1 200 OK\r\n"));
        CHECK(capture::header_line(t, "Content-Lengths: 101\r\n"));  // another field
        CHECK(capture::header_line(t, "Content-Length: 100\r\n"));
        CHECK_FALSE(t.too_large);
    }
}

TEST_CASE("curl transport: the description of a default client") {
    CHECK(resil::curl::describe({}) ==
          "limits connect 10s read 1m total 5m; max body 67108864 B; max header 262144 B; "
          "tls verified (system CA store), minimum library default; proxy none set (libcurl reads "
          "http_proxy/https_proxy/no_proxy from the environment); HTTP/2 over TLS (ALPN, else HTTP/1.1); "
          "redirects off");
    CHECK(resil::curl::describe({.redirects = {.max = 3}}).ends_with("; redirects up to 3 (repeatable requests only)"));
    CHECK(resil::curl::describe({.redirects = {.max = 3, .allow_https_to_http = true}})
              .ends_with("; redirects up to 3 (repeatable requests only, HTTPS TO HTTP ALLOWED)"));
}
