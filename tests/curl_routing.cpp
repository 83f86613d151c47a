// Endpoint pinning, connection lifetime, the shared cache and the raw handle
// hook, against real nginx instances on 127.0.0.1: two "replicas" that say
// which one answered and what Host they saw, and one serving TLS with a
// certificate made by openssl at test time.
#include <resil/curl.hpp>
#include <resil/curl/detail/connection_setup.hpp>  // its checks, tested on their own below

#include <atomic>
#include <climits>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catch.hpp"
#include "support/nginx_server.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using resil::curl::client;
using resil::curl::client_options;
using resil::curl::connection_options;
using resil::curl::endpoint;
using resil::curl::request;
using resil::curl::response;
using resil::curl::shared_cache;

namespace {

// Each replica answers with its name and the Host header it received.
constexpr const char* replica_a = R"(location / { return 200 "a $http_host\n"; })";
constexpr const char* replica_b = R"(location / { return 200 "b $http_host\n"; })";

// A short connect limit: a name that does reach DNS must fail fast.
const resil::timeouts quick{2s, 2s, 5s};

std::string port_text(std::uint16_t port) { return std::to_string(port); }

std::string body_of(client& http, const request& req) {
    const response r = http.perform(req);
    INFO("transport " << static_cast<int>(r.transport()) << ", error " << r.error_message());
    REQUIRE(r.ok());
    return std::string(r.body());
}

// Trust the test's own certificate: through the raw handle hook, the escape
// hatch for what client_options does not name.
client_options trusting(const resil_test::tls_files& tls, client_options o = {}) {
    const std::string ca = tls.path("ca.pem");
    o.configure_handle = [ca](CURL* e) { curl_easy_setopt(e, CURLOPT_CAINFO, ca.c_str()); };
    return o;
}

// A connection's keepalive options, read from its socket when libcurl closes it.
struct keepalive_seen {
    int closed = 0;
    int keepalive = -1;
    int idle = -1;
    int interval = -1;

    void watch(CURL* e) {
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &on_close);
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
    }

    static int read_option(curl_socket_t s, int level, int name) {
        int value = -1;
        socklen_t size = sizeof value;
        return ::getsockopt(s, level, name, &value, &size) == 0 ? value : -2;
    }

    static int on_close(void* self, curl_socket_t s) {
        auto& seen = *static_cast<keepalive_seen*>(self);
        ++seen.closed;
        seen.keepalive = read_option(s, SOL_SOCKET, SO_KEEPALIVE);
        seen.idle = read_option(s, IPPROTO_TCP, TCP_KEEPIDLE);
        seen.interval = read_option(s, IPPROTO_TCP, TCP_KEEPINTVL);
        return ::close(s);
    }
};

}  // namespace

TEST_CASE("curl routing: a request pinned to a replica goes there, keeping the URL's host") {
    resil_test::nginx_server a{replica_a};
    resil_test::nginx_server b{replica_b};
    // Without a pin, everything for service.test:80 goes to b (client-wide connect_to).
    client http({.limits = quick,
                 .connections = {.connect_to = {"service.test:80:127.0.0.1:" + port_text(b.port())}}});
    const auto to_a = request::get("http://service.test/who").connect_to({"127.0.0.1", a.port()});
    const auto to_b = request::get("http://service.test/who").connect_to({"127.0.0.1", b.port()});
    const auto unpinned = request::get("http://service.test/who");

    CHECK(body_of(http, to_a) == "a service.test\n");
    CHECK(body_of(http, to_b) == "b service.test\n");
    CHECK(body_of(http, unpinned) == "b service.test\n");
    // Alternating: each pinned request reaches its replica, on the connection
    // kept alive to that replica (never on the other one's).
    for (int i = 0; i < 3; ++i) {
        const response ra = http.perform(to_a);
        const response rb = http.perform(to_b);
        CHECK(ra.body() == "a service.test\n");
        CHECK(rb.body() == "b service.test\n");
        CHECK(ra.timings().reused_connection);
        CHECK(rb.timings().reused_connection);
    }
    // A pin given up: back to the client-wide route.
    auto moved = to_a;
    moved.clear_connect_to();
    CHECK(body_of(http, moved) == "b service.test\n");
}

TEST_CASE("curl routing: a pin holds for the URL's host and port only, not for a redirect elsewhere") {
    resil_test::nginx_server b{replica_b};
    resil_test::nginx_server a{"location /away { return 302 http://127.0.0.1:" + port_text(b.port()) +
                               "/who; }\n" + replica_a};
    client http({.limits = quick, .redirects = {.max = 2}});
    const auto base = "http://service.test:" + port_text(a.port());
    // The redirect names another host and port: it goes there, not to the
    // pinned replica (which, over HTTPS, could not even show that host's certificate).
    const auto away = request::get(base + "/away").connect_to({"127.0.0.1", a.port()});
    CHECK(body_of(http, away) == "b 127.0.0.1:" + port_text(b.port()) + "\n");
    // The URL's own host and port still go to the replica: the name never
    // reaches DNS.
    CHECK(body_of(http, request::get(base + "/who").connect_to({"127.0.0.1", a.port()})) ==
          "a service.test:" + port_text(a.port()) + "\n");
    // The URL's port is the scheme's when it names none (80 here, where
    // nothing listens): the pin applies to it too.
    CHECK(body_of(http, request::get("http://service.test/who").connect_to({"127.0.0.1", a.port()})) ==
          "a service.test\n");
    // An IPv6 literal in the URL matches in brackets, as libcurl writes it.
    CHECK(body_of(http, request::get("http://[::1]:9/who").connect_to({"127.0.0.1", a.port()})) ==
          "a [::1]:9\n");
}

TEST_CASE("curl routing: a client keeps at most 4 idle connections, as docs/curl.md says") {
    std::vector<std::unique_ptr<resil_test::nginx_server>> replicas;
    for (int i = 0; i < 5; ++i) replicas.push_back(std::make_unique<resil_test::nginx_server>(replica_a));
    client http({.limits = quick});
    const auto to = [&](std::size_t i) {
        return request::get("http://service.test/").connect_to({"127.0.0.1", replicas[i]->port()});
    };
    // Four replicas in turn: every connection stays.
    for (std::size_t i = 0; i < 4; ++i) CHECK_FALSE(http.perform(to(i)).timings().reused_connection);
    for (std::size_t i = 0; i < 4; ++i) CHECK(http.perform(to(i)).timings().reused_connection);
    // A fifth closes the oldest idle one (replica 0's): libcurl's cache
    // holds 4 per easy handle, and a client has one.
    CHECK_FALSE(http.perform(to(4)).timings().reused_connection);
    CHECK(http.perform(to(3)).timings().reused_connection);
    CHECK_FALSE(http.perform(to(0)).timings().reused_connection);
}

TEST_CASE("curl routing: a pinned HTTPS request verifies the URL's name, not the replica's address") {
    resil_test::tls_files tls;
    resil_test::tls_nginx nginx{tls, R"(location / { return 200 "$http_host $ssl_server_name\n"; })"};
    client http(trusting(tls, {.limits = quick}));
    const auto req = request::get("https://service.test:" + port_text(nginx.https_port()) + "/")
                         .connect_to({"127.0.0.1", nginx.https_port()});
    // SNI and verification used service.test: the certificate has that name.
    CHECK(body_of(http, req) == "service.test:" + port_text(nginx.https_port()) + " service.test\n");

    // A name the certificate does not have fails verification, pinned or not.
    const auto wrong = request::get("https://elsewhere.test:" + port_text(nginx.https_port()) + "/")
                           .connect_to({"127.0.0.1", nginx.https_port()});
    const response r = http.perform(wrong);
    CHECK_FALSE(r.ok());
    CHECK(r.curl_code() == CURLE_PEER_FAILED_VERIFICATION);
}

TEST_CASE("curl routing: resolve overrides send a name to a fixed address") {
    resil_test::nginx_server a{replica_a};
    client http({.limits = quick,
                 .connections = {.resolve = {"service.test:" + port_text(a.port()) + ":127.0.0.1"}}});
    const auto url = "http://service.test:" + port_text(a.port()) + "/";
    CHECK(body_of(http, request::get(url)) == "a service.test:" + port_text(a.port()) + "\n");
    CHECK(body_of(http, request::get(url)) == "a service.test:" + port_text(a.port()) + "\n");
}

TEST_CASE("curl routing: connections older, or idle longer, than their limit are not reused") {
    resil_test::nginx_server a{replica_a};
    const auto req = request::get(a.url("/"));
    client plain({.limits = quick});
    client aged({.limits = quick, .connections = {.max_connection_age = 1s}});
    client idle({.limits = quick, .connections = {.max_connection_idle = 1s}});

    // At once: every client reuses its connection.
    for (client* http : {&plain, &aged, &idle}) {
        CHECK_FALSE(http->perform(req).timings().reused_connection);
        CHECK(http->perform(req).timings().reused_connection);
    }
    // libcurl counts whole seconds: past 2 s, a 1 s limit has certainly passed.
    std::this_thread::sleep_for(2100ms);
    CHECK(plain.perform(req).timings().reused_connection);  // nginx keeps it 60 s
    CHECK_FALSE(aged.perform(req).timings().reused_connection);
    CHECK_FALSE(idle.perform(req).timings().reused_connection);
    // The new connections are kept alive as usual.
    CHECK(aged.perform(req).timings().reused_connection);
    CHECK(idle.perform(req).timings().reused_connection);
}

TEST_CASE("curl routing: TCP keepalive and the DNS cache lifetime reach libcurl") {
    resil_test::nginx_server a{replica_a};
    client http({.limits = quick,
                 .connections = {.dns_cache_lifetime = 0s, .tcp_keepalive = true, .tcp_keepalive_idle = 5s,
                                 .tcp_keepalive_interval = 2s}});
    // The socket's options are libcurl's to set; here: they are accepted and
    // the client works with them (a refused one fails construction, below).
    CHECK(body_of(http, request::get(a.url("/"))) == "a 127.0.0.1:" + port_text(a.port()) + "\n");

    // And they reach the socket: read back as libcurl closes it (through the
    // raw handle hook), after every option was set.
    keepalive_seen keep;
    {
        client probed({.limits = quick,
                       .connections = {.tcp_keepalive = true, .tcp_keepalive_idle = 5s, .tcp_keepalive_interval = 2s},
                       .configure_handle = [&keep](CURL* e) { keep.watch(e); }});
        CHECK(body_of(probed, request::get(a.url("/"))) == "a 127.0.0.1:" + port_text(a.port()) + "\n");
    }
    REQUIRE(keep.closed == 1);
    CHECK(keep.keepalive == 1);
    CHECK(keep.idle == 5);
    CHECK(keep.interval == 2);

    // Without tcp_keepalive the socket has none (libcurl's default).
    keepalive_seen none;
    {
        client plain({.limits = quick, .configure_handle = [&none](CURL* e) { none.watch(e); }});
        CHECK(body_of(plain, request::get(a.url("/"))) == "a 127.0.0.1:" + port_text(a.port()) + "\n");
    }
    REQUIRE(none.closed == 1);
    CHECK(none.keepalive == 0);
}

TEST_CASE("curl routing: a shared cache resumes another client's TLS session, across threads") {
    resil_test::tls_files tls;
    resil_test::tls_nginx nginx{tls, R"(location / { return 200 "$ssl_session_reused\n"; })"};
    const auto req = request::get(nginx.https_url("/"));
    const auto cache = std::make_shared<shared_cache>();

    // The first client does the full handshake; one on another thread,
    // sharing the cache, resumes that session on its very first connection.
    std::string first;
    std::string second;
    std::thread([&] {
        client http(trusting(tls, {.limits = quick, .shared = cache}));
        first = body_of(http, req);
    }).join();
    std::thread([&] {
        client http(trusting(tls, {.limits = quick, .shared = cache}));
        second = body_of(http, req);
    }).join();
    CHECK(first == ".\n");
    CHECK(second == "r\n");

    // Without the cache, a new client's first connection is a full handshake.
    client alone(trusting(tls, {.limits = quick}));
    CHECK(body_of(alone, req) == ".\n");
}

// docs/curl.md, "Sharing a cache between per-thread clients": the accessors
// as written there (change the two together).
namespace docs {
std::shared_ptr<resil::curl::shared_cache> cache() {
    static const auto c = std::make_shared<resil::curl::shared_cache>();  // DNS and TLS sessions
    return c;
}
resil::curl::client& http() {
    thread_local resil::curl::client c{{.connections = {.max_connection_age = std::chrono::minutes{5}},
                                        .shared = cache()}};
    return c;
}
}  // namespace docs

TEST_CASE("curl routing: the per-thread clients of docs/curl.md share one cache") {
    resil_test::nginx_server a{replica_a};
    const auto req = request::get(a.url("/"));
    std::atomic<int> ok{0};
    std::atomic<int> sharing{0};
    auto work = [&] {
        for (int i = 0; i < 5; ++i) ok.fetch_add(docs::http().perform(req).ok() ? 1 : 0);
        sharing.fetch_add(docs::http().options().shared == docs::cache() ? 1 : 0);
    };
    std::thread t1(work);
    std::thread t2(work);
    t1.join();
    t2.join();
    CHECK(ok.load() == 10);
    CHECK(sharing.load() == 2);
    CHECK(docs::http().options().shared == docs::cache());
}

TEST_CASE("curl routing: clients on two threads use one shared cache at once") {
    resil_test::tls_files tls;
    resil_test::tls_nginx nginx{tls, R"(location / { return 200 "$ssl_session_reused\n"; })"};
    const auto req = request::get(nginx.https_url("/"));
    const auto cache = std::make_shared<shared_cache>();
    {
        client warm(trusting(tls, {.limits = quick, .shared = cache}));
        REQUIRE(body_of(warm, req) == ".\n");
    }
    // Every request on a new connection (CURLOPT_FORBID_REUSE, through the
    // hook): each one stores and takes sessions from the cache.
    constexpr int per_thread = 40;
    std::atomic<int> resumed{0};
    std::atomic<int> failed{0};
    auto work = [&] {
        auto o = trusting(tls, {.limits = quick, .shared = cache});
        auto trust = o.configure_handle;
        o.configure_handle = [trust](CURL* e) {
            trust(e);
            curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
        };
        client http(std::move(o));
        for (int i = 0; i < per_thread; ++i) {
            const response r = http.perform(req);
            if (!r.ok()) failed.fetch_add(1);
            else if (r.body() == "r\n") resumed.fetch_add(1);
            if (r.timings().reused_connection) failed.fetch_add(1);
        }
    };
    std::thread t1(work);
    std::thread t2(work);
    t1.join();
    t2.join();
    CHECK(failed.load() == 0);
    // Nearly all resumed: now and then two handshakes racing for the one
    // stored TLS 1.3 session leave one of them with a full handshake.
    CHECK(resumed.load() >= 2 * per_thread * 9 / 10);
}

TEST_CASE("curl routing: a shared DNS cache gives every client the resolve overrides of one") {
    resil_test::nginx_server a{replica_a};
    const auto cache = std::make_shared<shared_cache>();
    const auto url = "http://service.test:" + port_text(a.port()) + "/";
    client pinned({.limits = quick,
                   .connections = {.resolve = {"service.test:" + port_text(a.port()) + ":127.0.0.1"}},
                   .shared = cache});
    CHECK(body_of(pinned, request::get(url)) == "a service.test:" + port_text(a.port()) + "\n");
    // No override of its own: the name comes from the shared cache.
    client other({.limits = quick, .shared = cache});
    CHECK(body_of(other, request::get(url)) == "a service.test:" + port_text(a.port()) + "\n");

    // Each client holds the cache: it lives on after the caller's copy goes.
    std::weak_ptr<shared_cache> watch = cache;
    {
        auto held = std::make_shared<shared_cache>();
        watch = held;
        client user({.limits = quick, .shared = held});
        held.reset();
        CHECK_FALSE(watch.expired());
        CHECK(body_of(user, request::get(a.url("/"))) == "a 127.0.0.1:" + port_text(a.port()) + "\n");
    }
    CHECK(watch.expired());

    // A client assigned over: its old handle goes first, then its cache.
    auto first_cache = std::make_shared<shared_cache>();
    std::weak_ptr<shared_cache> first_watch = first_cache;
    client x({.limits = quick, .shared = std::move(first_cache)});
    client y({.limits = quick, .shared = std::make_shared<shared_cache>()});
    CHECK(x.perform(request::get(a.url("/"))).ok());
    x = std::move(y);
    CHECK(first_watch.expired());
    CHECK(x.perform(request::get(a.url("/"))).ok());
}

TEST_CASE("curl routing: the raw handle hook runs once per handle, after resil's options") {
    resil_test::nginx_server a{R"(location / { return 200 "$http_user_agent\n"; })"};
    int calls = 0;
    client http({.limits = quick, .user_agent = "resil-agent", .configure_handle = [&calls](CURL* e) {
                     ++calls;
                     curl_easy_setopt(e, CURLOPT_USERAGENT, "hooked-agent");
                 }});
    CHECK(calls == 1);
    for (int i = 0; i < 3; ++i) CHECK(body_of(http, request::get(a.url("/"))) == "hooked-agent\n");
    CHECK(calls == 1);
    client moved = std::move(http);
    CHECK(body_of(moved, request::get(a.url("/"))) == "hooked-agent\n");
    CHECK(calls == 1);

    // Its exception leaves the constructor.
    const auto throwing = [](CURL*) { throw std::domain_error("hook failed"); };
    CHECK_THROWS_AS(client({.configure_handle = throwing}), std::domain_error);
}

TEST_CASE("curl routing: an option libcurl refuses is an error naming it") {
    // What validate() lets through libcurl accepts; the check under it, on its own.
    CURL* e = curl_easy_init();
    REQUIRE(e);
    try {
        resil::curl::detail::connection_setup::set_checked(e, CURLOPT_TCP_KEEPIDLE, -1L, "CURLOPT_TCP_KEEPIDLE");
        FAIL("a negative keepalive time was accepted");
    } catch (const std::runtime_error& refused) {
        CHECK(std::string(refused.what()).starts_with("resil::curl::client: libcurl refused CURLOPT_TCP_KEEPIDLE: "));
    }
    CHECK_THROWS_WITH(resil::curl::detail::connection_setup::to_curl_seconds(-1s, "CURLOPT_MAXAGE_CONN"),
                      "resil::curl::client: CURLOPT_MAXAGE_CONN takes 0 to " + std::to_string(LONG_MAX) +
                          " seconds, got -1");
    curl_easy_cleanup(e);
}

TEST_CASE("curl routing: invalid connection options and endpoints are refused with the field named") {
    const auto message = [](connection_options c) {
        return client_options{.connections = std::move(c)}.validate().value().message();
    };
    CHECK_FALSE(client_options{}.validate());
    CHECK_FALSE(client_options{.connections = {.resolve = {"api.test:443:10.0.0.1,[::1]", "+a.test:80:1.2.3.4",
                                                           "-a.test:80", "a.test:80:[::1]"},
                                               .connect_to = {"api.test:443:10.0.0.2:8443", "::backend:", ":80::8080",
                                                              "api.test::[::1]:443"},
                                               .dns_cache_lifetime = 0s,
                                               .max_connection_age = 30s}}
                     .validate());
    CHECK(message({.resolve = {"api.test:443:10.0.0.1", "api.test:443"}}) ==
          "`connections.resolve[1]` must be \"host:port:address[,address...]\", got \"api.test:443\"");
    CHECK(message({.resolve = {"api.test:0:10.0.0.1"}}) ==
          "`connections.resolve[0]` must be \"host:port:address[,address...]\", got \"api.test:0:10.0.0.1\"");
    // libcurl 7.88 refuses a bracketed host there at every transfer (code 49).
    CHECK(message({.resolve = {"[::1]:8080:127.0.0.1"}}) ==
          "`connections.resolve[0]` must name a host without brackets (libcurl refuses a bracketed one there, and an "
          "IPv6 address in a URL is not resolved), got \"[::1]:8080:127.0.0.1\"");
    CHECK(message({.resolve = {"-[::1]:8080"}}).starts_with("`connections.resolve[0]` must name a host without brackets"));
    CHECK(message({.resolve = {"api.test:443:10.0.0.1, 10.0.0.2"}}).starts_with("`connections.resolve[0]` must be"));
    CHECK(message({.resolve = {"api.test:443:a,,b"}}).starts_with("`connections.resolve[0]` must be"));
    CHECK(message({.connect_to = {"api.test:443:10.0.0.1"}}) ==
          "`connections.connect_to[0]` must be \"host:port:connect-host:connect-port\", got \"api.test:443:10.0.0.1\"");
    CHECK(message({.connect_to = {"api.test:443:10.0.0.1:99999"}}).starts_with("`connections.connect_to[0]` must be"));
    CHECK(message({.connect_to = {"api.test:443::"}}).starts_with("`connections.connect_to[0]` must be"));
    CHECK(message({.connect_to = {"a.test:443:b.test:80\r\nX: y"}}).starts_with("`connections.connect_to[0]` must be"));
    CHECK(message({.dns_cache_lifetime = -1s}) == "`connections.dns_cache_lifetime` must be in [0s, 8760h], got -1s");
    CHECK(message({.max_connection_age = 0s}) == "`connections.max_connection_age` must be in [1s, 8760h], got 0s");
    CHECK(message({.max_connection_idle = 9000h}) ==
          "`connections.max_connection_idle` must be in [1s, 8760h], got 9000h");
    CHECK(message({.tcp_keepalive_idle = 0s}) == "`connections.tcp_keepalive_idle` must be in [1s, 32767s], got 0s");
    CHECK(message({.tcp_keepalive_interval = 40000s}) ==
          "`connections.tcp_keepalive_interval` must be in [1s, 32767s], got 40000s");
    CHECK_THROWS_WITH(client({.connections = {.max_connection_age = -5s}}),
                      "resil::curl::client: `connections.max_connection_age` must be in [1s, 8760h], got -5s");

    auto req = request::get("http://service.test/");
    CHECK_NOTHROW(req.connect_to({"[::1]", 443}));
    CHECK(req.pinned_endpoint() == endpoint{"[::1]", 443});
    CHECK_NOTHROW(req.connect_to({"[fe80::1%25eth0]", 443}));
    CHECK_NOTHROW(req.connect_to({"[::ffff:10.0.0.1]", 443}));
    CHECK_NOTHROW(req.connect_to({"[::1]", 443}));
    CHECK_THROWS_WITH(req.connect_to({"", 80}), "resil::curl::request: connect_to: `host` must be non-empty, got \"\"");
    CHECK_THROWS_WITH(req.connect_to({"10.0.0.1", 0}), "resil::curl::request: connect_to: `port` must be at least 1, got 0");
    CHECK_THROWS_WITH(req.connect_to({"[zzz]", 443}),
                      "resil::curl::request: connect_to: `host` must be one IPv6 address in brackets, e.g. [::1], "
                      "got \"[zzz]\"");
    CHECK(endpoint{"[1::2::3]", 443}.validate().value().message() ==
          "`host` must be one IPv6 address in brackets, e.g. [::1], got \"[1::2::3]\"");
    CHECK(endpoint{"[1:2:3:4:5:6:7:8:9]", 443}.validate());
    CHECK(endpoint{"a:b", 443}.validate().value().message() ==
          "`host` must hold no ':', ',' or bracket (write an IPv6 address as [::1]), got \"a:b\"");
    CHECK_FALSE(endpoint{"10.0.0.1", 443}.validate());
    CHECK_THROWS_AS(req.connect_to({"::1", 443}), std::invalid_argument);
    CHECK_THROWS_AS(req.connect_to({"[::1", 443}), std::invalid_argument);
    CHECK_THROWS_AS(req.connect_to({"a b", 443}), std::invalid_argument);
    CHECK_THROWS_AS(req.connect_to({"a,b", 443}), std::invalid_argument);
    CHECK_THROWS_AS(req.connect_to({std::string(256, 'a'), 443}), std::invalid_argument);
    // A refused endpoint leaves the earlier one in place.
    CHECK(req.pinned_endpoint() == endpoint{"[::1]", 443});
}
