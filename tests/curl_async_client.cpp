// resil::curl::async_client on one io_context thread, against Debian's nginx
// (access log read back) and the fault server: many calls in flight,
// cancellation (slot, stop token, a second transfer of one call), the same
// never-sent vs ambiguous judgement and keys as the blocking client, the
// millisecond read limit, HTTP/2 multiplexing, and the client or the
// io_context going away with calls in flight. These tests need nginx and
// libnginx-mod-http-echo; without them they fail, they do not skip.
#include <resil/curl.hpp>
#include <resil/curl_asio/async_client.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "catch.hpp"
#include "support/fault_server.hpp"
#include "support/h2_script_server.hpp"
#include "support/nginx_server.hpp"
#include "support/openssl_server.hpp"
#include "support/timing.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using resil::curl::async_client;
using resil::curl::async_options;
using resil::curl::client;
using resil::curl::client_options;
using resil::curl::request;
using resil::curl::response;
using resil::curl::transport_status;
using resil_test::action;
using resil_test::slack;
using steady = std::chrono::steady_clock;

namespace {

// Logged by nginx for every request of a location that names it: the URI,
// the status (499: the client closed the connection first) and the
// connection's serial number.
constexpr const char* log_format = R"(log_format calls '$request_uri $status $connection';)";
constexpr const char* logged = "access_log access.log calls;";

struct log_line {
    std::string uri;
    int status = 0;
    long connection = 0;
};

// The access log's lines, waiting up to `wait` for at least `expected` (nginx
// writes a line once the request is finalised, just after the reply).
std::vector<log_line> access_log(const resil_test::nginx_server& nginx, std::size_t expected,
                                 std::chrono::milliseconds wait = 3s) {
    const auto until = steady::now() + wait;
    std::vector<log_line> lines;
    for (;;) {
        lines.clear();
        std::ifstream in(nginx.directory() + "/access.log");
        log_line l;
        while (in >> l.uri >> l.status >> l.connection) lines.push_back(l);
        if (lines.size() >= expected || steady::now() > until) return lines;
        std::this_thread::sleep_for(5ms);
    }
}

// Runs `io` until `done` or the time runs out (a hung test fails, never hangs).
// `one_at_a_time`: a handler per step, to see what a single one did.
template <class Done>
void run_until(asio::io_context& io, Done done, std::chrono::milliseconds limit = 10s, bool one_at_a_time = false) {
    const auto until = steady::now() + limit;
    while (!done() && steady::now() < until) {
        if (one_at_a_time) io.run_one_for(20ms);
        else io.run_for(20ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(done());
}

// Whether `io` has run out of work once the handlers ready now have run:
// poll() runs them and stops an io_context whose count of outstanding work
// (waits pending on timers and sockets, posted handlers, work guards) has
// fallen to zero. A wait still pending keeps it from stopping, however soon
// or late it would end: nothing here is timed.
bool out_of_work(asio::io_context& io) {
    io.restart();
    for (int turn = 0; turn < 100 && !io.stopped(); ++turn)
        if (io.poll() == 0) break;
    return io.stopped();
}

// What `f` threw, as text ("" when it threw nothing).
template <class F>
std::string thrown_by(F f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("curl async: 1,000 concurrent GETs on one thread complete; nginx sees exactly those") {
    resil_test::nginx_server nginx{std::string("location /ok { ") + logged + R"( return 200 "ok\n"; })", log_format};
    asio::io_context io;
    // 64 connections at most: the rest queue inside libcurl (nginx here takes 256).
    async_client http(io, {}, {.max_host_connections = 64});
    constexpr int calls = 1000;
    std::vector<request> requests;
    std::vector<resil::context> contexts(calls);
    requests.reserve(calls);
    for (int i = 0; i < calls; ++i) requests.push_back(request::get(nginx.url("/ok?i=" + std::to_string(i))));
    std::vector<std::optional<response>> results(calls);
    int completed = 0;
    std::size_t most_in_flight = 0;
    for (int i = 0; i < calls; ++i)
        http.async_perform(requests[static_cast<std::size_t>(i)], contexts[static_cast<std::size_t>(i)],
                           [&, i](response r) {
                               REQUIRE_FALSE(results[static_cast<std::size_t>(i)]);  // never twice
                               results[static_cast<std::size_t>(i)] = std::move(r);
                               ++completed;
                           });
    most_in_flight = http.in_flight();
    CHECK(most_in_flight == calls);
    CHECK(completed == 0);  // never completed inside async_perform
    run_until(io, [&] { return completed == calls; }, 20s);
    for (const auto& r : results) {
        REQUIRE(r);
        CHECK(r->ok());
        CHECK(r->body() == "ok\n");
    }
    CHECK(http.in_flight() == 0);
    // Pooled transfers are kept up to max_idle_transfers (256 by default).
    CHECK(http.pooled_transfers() <= 256);
    const auto lines = access_log(nginx, calls);
    REQUIRE(lines.size() == calls);
    std::set<std::string> seen;
    std::set<long> connections;
    for (const auto& l : lines) {
        CHECK(l.status == 200);
        seen.insert(l.uri);
        connections.insert(l.connection);
    }
    CHECK(seen.size() == calls);  // each exactly once: 1,000 lines, 1,000 distinct URIs
    CHECK(connections.size() <= 64);
}

TEST_CASE("curl async: a cancelled call returns within 50 ms and nginx sees the connection closed") {
    // nginx notices a client that leaves while it waits for an upstream (and
    // logs 499), not during echo_sleep (it logs the 200 it sends afterwards).
    resil_test::fault_server upstream;
    upstream.on("/hang", {action::hang()});
    resil_test::nginx_server nginx{std::string("location /slow { ") + logged + " proxy_pass " + upstream.url("/hang") +
                                       "; }",
                                   log_format};
    asio::io_context io;
    async_client http(io);
    const auto req = request::get(nginx.url("/slow"));
    resil::context ctx;
    asio::cancellation_signal signal;
    std::optional<response> result;
    steady::time_point cancelled_at{};
    steady::time_point completed_at{};
    http.async_perform(req, ctx, asio::bind_cancellation_slot(signal.slot(), [&](response r) {
                           completed_at = steady::now();
                           result = std::move(r);
                       }));
    asio::steady_timer later(io, 100ms);
    later.async_wait([&](const asio::error_code&) {
        cancelled_at = steady::now();
        signal.emit(asio::cancellation_type::terminal);
    });
    run_until(io, [&] { return result.has_value(); });
    CHECK(completed_at - cancelled_at < 50ms + slack);
    CHECK(result->transport() == transport_status::cancelled);
    CHECK(result->may_have_reached_server());  // the GET was sent
    CHECK(result->error_message().find("cancellation slot") != std::string::npos);
    CHECK(http.in_flight() == 0);
    const auto lines = access_log(nginx, 1);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].status == 499);  // nginx: the client closed the connection
    // Nothing left to wait for: the io_context runs out of work.
    io.restart();
    io.run_for(5s);
    CHECK(io.stopped());
}

TEST_CASE("curl async: the stop token cancels from another thread, at once") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    asio::io_context io;
    async_client http(io);
    std::stop_source stop;
    resil::context ctx({.stop = stop.get_token()});
    const auto req = request::get(server.url("/hang"));
    std::optional<response> result;
    steady::time_point completed_at{};
    http.async_perform(req, ctx, [&](response r) {
        completed_at = steady::now();
        result = std::move(r);
    });
    steady::time_point stopped_at{};
    std::thread other([&] {
        std::this_thread::sleep_for(100ms);
        stopped_at = steady::now();
        stop.request_stop();
    });
    run_until(io, [&] { return result.has_value(); });
    other.join();
    CHECK(completed_at - stopped_at < 50ms + slack);
    CHECK(result->transport() == transport_status::cancelled);
    CHECK(result->may_have_reached_server());
    CHECK(result->error_message() == "cancelled through the stop token");

    // Fired before the call: nothing is sent, as with the blocking client.
    const auto before = server.requests().size();
    std::optional<response> second;
    http.async_perform(req, ctx, [&](response r) { second = std::move(r); });
    run_until(io, [&] { return second.has_value(); });
    CHECK(second->transport() == transport_status::cancelled);
    CHECK_FALSE(second->may_have_reached_server());
    CHECK(server.requests().size() == before);
}

TEST_CASE("curl async: never sent vs ambiguous, keys and limits, judged as by the blocking client") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    server.on("/pay", {action::respond(201, "paid")});
    server.on("/drop", {action::close_after_request()});
    const auto refused = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/x";
    asio::io_context io;
    async_client http(io);
    client blocking;

    struct scenario {
        request req;
        resil::timeouts limits;
    };
    std::vector<scenario> scenarios;
    scenarios.push_back({request::post(refused, "{}"), {}});
    scenarios.push_back({request::post(server.url("/hang"), "{}"), {.read = 80ms}});
    scenarios.push_back({request::get(server.url("/hang")), {.total = 80ms}});
    scenarios.push_back({request::post(server.url("/pay"), "{}"), {}});
    scenarios.push_back({request::post(server.url("/drop"), "{}"), {}});
    for (auto& s : scenarios) {
        resil::context sync_ctx;
        sync_ctx.set_timeouts(s.limits);
        const response expected = blocking.perform(s.req, sync_ctx);
        resil::context ctx;
        ctx.set_timeouts(s.limits);
        std::optional<response> got;
        http.async_perform(s.req, ctx, [&](response r) { got = std::move(r); });
        run_until(io, [&] { return got.has_value(); });
        INFO(s.req.method() << " " << s.req.url() << ": " << got->error_message());
        CHECK(got->transport() == expected.transport());
        CHECK(got->may_have_reached_server() == expected.may_have_reached_server());
        CHECK(got->status() == expected.status());
        CHECK(got->carried_idempotency_key() == expected.carried_idempotency_key());
        CHECK(got->repeatable() == expected.repeatable());
        CHECK(ctx.safe_to_repeat() == sync_ctx.safe_to_repeat());
        CHECK(ctx.has_idempotency_key() == sync_ctx.has_idempotency_key());
    }
    // Each POST that reached the server carried its context's key.
    for (const auto& r : server.requests()) {
        if (r.method != "POST") continue;
        bool has_key = false;
        for (const auto& [name, value] : r.headers)
            if (resil_test::iequals_ascii(name, "Idempotency-Key") && value.size() == 38) has_key = true;
        CHECK(has_key);
    }
    // A blank key and a negative timeout are refused before anything starts.
    resil::context ctx;
    auto blank = request::post(server.url("/pay"), "{}").add_header("Idempotency-Key", " ");
    CHECK_THROWS_AS(http.async_perform(blank, ctx, [](response) {}), std::invalid_argument);
    ctx.set_timeouts({.read = -1ms});
    const auto get = request::get(server.url("/pay"));
    CHECK(thrown_by([&] { http.async_perform(get, ctx, [](response) {}); })
              .starts_with("resil::curl::async_client: the context's read timeout is negative"));
}

TEST_CASE("curl async: a TLS handshake the server refuses is never sent and permanent, as for the blocking client") {
    resil_test::tls_files pki;
    struct scenario {
        std::vector<std::string> server;
        resil::curl::tls_version minimum;
        CURLcode code;
    };
    // TLS 1.3: the alert comes after libcurl wrote the request (CURLE_RECV_ERROR).
    const std::vector<scenario> scenarios{
        {{"-tls1_3", "-Verify", "1", "-verify_return_error"}, resil::curl::tls_version::library_default, CURLE_RECV_ERROR},
        {{"-tls1_2", "-Verify", "1", "-verify_return_error"}, resil::curl::tls_version::library_default,
         CURLE_SSL_CONNECT_ERROR},
        {{"-tls1_2"}, resil::curl::tls_version::tls1_3, CURLE_SSL_CONNECT_ERROR},
    };
    asio::io_context io;
    for (const auto& s : scenarios) {
        resil_test::openssl_server server{pki, s.server};
        const client_options options{.idempotency_key = resil::curl::key_header_format::none,
                                     .tls = {.ca_file = pki.path("ca.pem"), .minimum_version = s.minimum}};
        client blocking(options);
        async_client http(io, options);
        for (const auto& req : {request::get(server.url("/")), request::post(server.url("/"), "pay")}) {
            resil::context sync_ctx;
            const response expected = blocking.perform(req, sync_ctx);
            resil::context ctx;
            std::optional<response> got;
            http.async_perform(req, ctx, [&](response r) { got = std::move(r); });
            run_until(io, [&] { return got.has_value(); });
            INFO(s.server.front() << " " << req.method() << ": " << got->error_message());
            CHECK(got->transport() == transport_status::tls_handshake_refused);
            CHECK(got->curl_code() == s.code);
            CHECK_FALSE(got->may_have_reached_server());
            CHECK(resil::curl::classify(*got).verdict == resil::verdict::permanent);
            CHECK(got->transport() == expected.transport());
            CHECK(got->curl_code() == expected.curl_code());
        }
    }
}

TEST_CASE("curl async: an HTTP/2 stream cut after its 200 head keeps its status and its version") {
    resil_test::h2_script_server server{{resil_test::h2_step::cut}};
    asio::io_context io;
    async_client http(io, {.http_version = resil::curl::http_version::http2_prior_knowledge});
    resil::context ctx;
    const auto req = request::get(server.url("/x"));
    std::optional<response> got;
    http.async_perform(req, ctx, [&](response r) { got = std::move(r); });
    run_until(io, [&] { return got.has_value(); });
    INFO(got->error_message());
    CHECK(got->transport() == transport_status::protocol_error);
    CHECK(got->status() == 200);
    CHECK(got->http_version() == 20);
}

TEST_CASE("curl async: the read limit in milliseconds, on a drip-fed body") {
    resil_test::fault_server server;
    // Bytes 30 ms apart never trip a 150 ms limit; a 400 ms silence trips it.
    server.on("/drip", {action::drip("abcdefgh", 30ms)});
    server.on("/stall", {action::stream({{0ms, "first"}, {400ms, "late"}})});
    asio::io_context io;
    async_client http(io);
    resil::context ctx;
    ctx.set_timeouts({.read = 150ms});
    const auto drip = request::get(server.url("/drip"));
    std::optional<response> ok;
    http.async_perform(drip, ctx, [&](response r) { ok = std::move(r); });
    run_until(io, [&] { return ok.has_value(); });
    CHECK(ok->ok());
    CHECK(ok->body() == "abcdefgh");

    const auto stall = request::get(server.url("/stall"));
    std::optional<response> cut;
    const auto t0 = steady::now();
    http.async_perform(stall, ctx, [&](response r) { cut = std::move(r); });
    run_until(io, [&] { return cut.has_value(); });
    const auto took = resil_test::since(t0);
    CHECK(cut->transport() == transport_status::read_timeout);
    CHECK(took >= 150ms);
    CHECK(took < 150ms + slack);
}

TEST_CASE("curl async: concurrent calls to one HTTP/2 host share one connection") {
    resil_test::tls_files pki;
    resil_test::nginx_server nginx{"ssl_certificate " + pki.path("server.pem") + ";\nssl_certificate_key " +
                                       pki.path("server.key") + ";\nlocation /h2 { " + logged +
                                       R"( return 200 "two\n"; })",
                                   log_format, "ssl http2"};
    const auto url = [&](int i) { return "https://127.0.0.1:" + std::to_string(nginx.port()) + "/h2?i=" + std::to_string(i); };
    asio::io_context io;
    // All 20 start before any connection exists: each waits for the first
    // one's TLS handshake and ALPN, then multiplexes on it.
    async_client http(io, {.tls = {.ca_file = pki.path("ca.pem")}, .http_version = resil::curl::http_version::http2_tls});
    constexpr int calls = 20;
    std::vector<request> requests;
    for (int i = 0; i < calls; ++i) requests.push_back(request::get(url(i)));
    std::vector<resil::context> contexts(calls);
    std::vector<response> results;
    for (int i = 0; i < calls; ++i)
        http.async_perform(requests[static_cast<std::size_t>(i)], contexts[static_cast<std::size_t>(i)],
                           [&](response r) { results.push_back(std::move(r)); });
    run_until(io, [&] { return results.size() == calls; });
    int fresh = 0;
    for (const auto& r : results) {
        INFO(r.error_message());
        CHECK(r.ok());
        CHECK(r.http_version() == 20);
        if (!r.timings().reused_connection) ++fresh;
    }
    CHECK(fresh == 1);
    const auto lines = access_log(nginx, calls);
    REQUIRE(lines.size() == calls);
    std::set<long> connections;
    for (const auto& l : lines) connections.insert(l.connection);
    CHECK(connections.size() == 1);
}

TEST_CASE("curl async: two transfers of one call in flight; the first answer cancels the other") {
    resil_test::fault_server upstream;
    upstream.on("/hang", {action::hang()});
    resil_test::nginx_server nginx{std::string("location /fast { ") + logged + R"( return 200 "fast\n"; } )" +
                                       "location /slow { " + logged + " proxy_pass " + upstream.url("/hang") + "; }",
                                   log_format};
    asio::io_context io;
    async_client http(io);
    const auto fast = request::get(nginx.url("/fast"));
    const auto slow = request::get(nginx.url("/slow"));
    std::optional<std::variant<response, response>> winner;
    steady::time_point done_at{};
    const auto t0 = steady::now();
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            using namespace asio::experimental::awaitable_operators;
            resil::context first;
            resil::context second;
            winner = co_await (http.async_perform(slow, first, asio::use_awaitable) ||
                               http.async_perform(fast, second, asio::use_awaitable));
            done_at = steady::now();
        },
        asio::detached);
    run_until(io, [&] { return winner.has_value() && http.in_flight() == 0; });
    INFO(std::visit([](const response& r) { return std::string(r.error_message()); }, *winner));
    REQUIRE(winner->index() == 1);
    CHECK(std::get<1>(*winner).body() == "fast\n");
    CHECK(done_at - t0 < 500ms);
    const auto lines = access_log(nginx, 2);
    REQUIRE(lines.size() == 2);
    std::map<std::string, int> status;
    for (const auto& l : lines) status[l.uri] = l.status;
    CHECK(status["/fast"] == 200);
    CHECK(status["/slow"] == 499);  // the loser's transfer was removed at once
}

TEST_CASE("curl async: destroying the client completes each call in flight once, as cancelled") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    asio::io_context io;
    auto http = std::make_unique<async_client>(io);
    const auto req = request::get(server.url("/hang"));
    std::vector<resil::context> contexts(5);
    std::vector<response> results;
    for (auto& ctx : contexts) http->async_perform(req, ctx, [&](response r) { results.push_back(std::move(r)); });
    asio::steady_timer later(io, 50ms);
    later.async_wait([&](const asio::error_code&) { http.reset(); });
    run_until(io, [&] { return !http && results.size() == 5; });
    io.restart();
    io.run_for(50ms);  // nothing more arrives
    REQUIRE(results.size() == 5);
    for (const auto& r : results) {
        CHECK(r.transport() == transport_status::cancelled);
        CHECK(r.error_message() == "the asynchronous client was destroyed while the call was in flight");
    }
}

// The tests' view of the client's internals.
struct resil::curl::detail::async_client_probe {
#if RESIL_DETAIL_CURL_EVENT_SET
    // Takes the epoll set's descriptor from the reactor, as if it had been
    // closed under it: every wait on the set fails from then on. Returns the
    // descriptor, still open, for the test to close.
    static int take_event_set(async_client& c) { return c.core_->socket_waits_.set_watch_.release(); }
#endif

    // Ends the call in flight as when its timer cannot start a wait (no memory).
    static void lose_watch(async_client& c) {
        for (auto& t : c.core_->slots_)
            if (t && t->active) return c.core_->lost_watch(*t);
    }

    // Whether the timer of the call in flight has a wait pending.
    static bool timer_waiting(async_client& c) {
        for (auto& t : c.core_->slots_)
            if (t && t->active) return t->timer_pending;
        return false;
    }

    // The origin the first pooled transfer noted for its last call (0: none).
    static std::uint64_t pooled_origin(async_client& c) {
        for (auto& t : c.core_->slots_)
            if (t) return t->origin;
        return 0;
    }
};

TEST_CASE("curl async: a call whose timer cannot wait any more ends at once, reported as out of memory") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    asio::io_context io;
    async_client http(io);
    resil::context ctx;
    ctx.set_timeouts({.read = 5s});
    std::optional<response> got;
    http.async_perform(request::get(server.url("/hang")), ctx, [&](response r) { got = std::move(r); });
    run_until(io, [&] { return server.requests().size() == 1; });
    resil::curl::detail::async_client_probe::lose_watch(http);
    run_until(io, [&] { return got.has_value(); });
    CHECK(got->transport() == transport_status::other_error);
    CHECK(got->curl_code() == CURLE_OUT_OF_MEMORY);
    CHECK(got->error_message() == "no memory to keep watching the call's limits (its timer); it was ended");
    CHECK(got->may_have_reached_server());
    CHECK(http.in_flight() == 0);
}

TEST_CASE("curl async: a call with no limit of resil's leaves its transfer's timer idle") {
    resil_test::fault_server server;
    server.on("/ok", {action::respond(200, "ok")});
    server.on("/hang", {action::hang()});
    asio::io_context io;
    // Neither the client nor the contexts set a read or total limit for the second call.
    async_client http(io, client_options{.limits = {.connect = 5s,
                                                    .read = resil::timeouts::no_limit,
                                                    .total = resil::timeouts::no_limit}});
    // The first call's read limit leaves a wait pending on the pooled
    // transfer, which the second call, started by the first one's handler,
    // takes over.
    const auto ok = request::get(server.url("/ok"));
    const auto hang = request::get(server.url("/hang"));
    resil::context first;
    first.set_timeouts({.read = 300ms});
    resil::context second;
    std::optional<response> got;
    bool inherited = false;
    http.async_perform(ok, first, [&](response r) {
        got = std::move(r);
        http.async_perform(hang, second, [&](response r2) { got = std::move(r2); });
        inherited = resil::curl::detail::async_client_probe::timer_waiting(http);
    });
    run_until(io, [&] { return got.has_value(); });
    REQUIRE(got->ok());
    REQUIRE(http.pooled_transfers() == 1);
    CHECK(inherited);
    // The second call has nothing to watch: once the inherited wait fires,
    // none follows (before, one a second for as long as the call lasted).
    io.restart();
    io.run_for(1500ms);
    REQUIRE(http.in_flight() == 1);
    CHECK_FALSE(resil::curl::detail::async_client_probe::timer_waiting(http));
}

#if RESIL_DETAIL_CURL_EVENT_SET
#include <sys/resource.h>
#include <unistd.h>

namespace {
// This thread's CPU time so far (user + system), in seconds: the fault
// server's threads apart.
double thread_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

TEST_CASE("curl async: a reactor that cannot wait on libcurl's sockets ends the calls at once, without spinning") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    asio::io_context io;
    std::optional<async_client> http(std::in_place, io);
    const auto req = request::get(server.url("/hang"));
    resil::context ctx;
    ctx.set_timeouts({.total = 5s});
    std::vector<response> results;
    http->async_perform(req, ctx, [&](response r) { results.push_back(std::move(r)); });
    run_until(io, [&] { return server.requests().size() == 1; });  // sent, waiting for the answer
    // The client goes, then the descriptor is closed, even when a check throws.
    struct cleanup {
        std::optional<async_client>& client;
        int set = -1;
        ~cleanup() {
            client.reset();
            if (set >= 0) ::close(set);
        }
    } taken{http};
    taken.set = resil::curl::detail::async_client_probe::take_event_set(*http);
    REQUIRE(taken.set >= 0);
    const auto t0 = steady::now();
    run_until(io, [&] { return results.size() == 1; });
    CHECK(resil_test::since(t0) < 1s);  // not at the 5 s limit
    CHECK(results[0].transport() == transport_status::other_error);
    CHECK(results[0].may_have_reached_server());  // it was sent
    CHECK(results[0].error_message().starts_with("the reactor could not wait on libcurl's sockets: "));
    CHECK(results[0].curl_code() == CURLE_FAILED_INIT);
    // Nothing left in flight, nothing keeps the thread busy.
    const double cpu0 = thread_cpu_seconds();
    io.restart();
    io.run_for(300ms);
    CHECK(thread_cpu_seconds() - cpu0 < 0.15);

    // A call started later ends the same way, at its first wait.
    http->async_perform(req, ctx, [&](response r) { results.push_back(std::move(r)); });
    const auto t1 = steady::now();
    run_until(io, [&] { return results.size() == 2; });
    CHECK(resil_test::since(t1) < 1s);
    CHECK(results[1].transport() == transport_status::other_error);
    CHECK(results[1].error_message().starts_with("the reactor could not wait on libcurl's sockets: "));
}
#endif

TEST_CASE("curl async: a stopped io_context leaks no handle and resumes no coroutine") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    bool frame_destroyed = false;
    bool resumed = false;
    {
        asio::io_context io;
        auto http = std::make_unique<async_client>(io);
        const auto req = request::get(server.url("/hang"));
        struct on_exit {
            bool* flag;
            ~on_exit() { *flag = true; }
        };
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                on_exit guard{&frame_destroyed};
                resil::context ctx;
                co_await http->async_perform(req, ctx, asio::use_awaitable);
                resumed = true;
            },
            asio::detached);
        io.run_for(100ms);
        CHECK(http->in_flight() == 1);
        io.stop();
        http.reset();  // the completion is posted to a stopped io_context
        CHECK_FALSE(frame_destroyed);
    }  // the io_context destroys the posted completion, and the frame with it
    CHECK(frame_destroyed);
    CHECK_FALSE(resumed);
}

TEST_CASE("curl async: calls beyond max_in_flight complete at once, unsent; options are validated") {
    resil_test::fault_server server;
    server.on("/hang", {action::hang()});
    asio::io_context io;
    async_client http(io, {}, {.max_in_flight = 2});
    const auto req = request::get(server.url("/hang"));
    std::vector<resil::context> contexts(3);
    std::vector<response> results;
    for (auto& ctx : contexts) http.async_perform(req, ctx, [&](response r) { results.push_back(std::move(r)); });
    run_until(io, [&] { return results.size() == 1; });
    CHECK(results[0].transport() == transport_status::other_error);
    CHECK_FALSE(results[0].may_have_reached_server());
    CHECK(http.in_flight() == 2);

    CHECK(thrown_by([&] { async_client(io, {}, {.max_in_flight = 0}); })
              .find("`max_in_flight` must be in [1, 1000000], got 0") != std::string::npos);
    CHECK(thrown_by([&] { async_client(io, {}, {.max_concurrent_streams = 0}); })
              .find("`max_concurrent_streams` must be in") != std::string::npos);
}

TEST_CASE("curl async: a streamed body reaches the sink chunk by chunk; first-byte and idle limits in ms") {
    resil_test::fault_server server;
    server.on("/chunks", {action::stream({{0ms, "data: one\n\n"}, {30ms, "data: two\n\n"}, {30ms, "data: three\n\n"}})});
    server.on("/late", {action::stream({{300ms, "data: late\n\n"}})});
    server.on("/stall", {action::stream({{0ms, "data: one\n\n"}, {400ms, "data: two\n\n"}})});
    asio::io_context io;
    async_client http(io);
    std::string got;
    int chunks = 0;
    auto sink = [&](std::string_view chunk) {
        got += chunk;
        ++chunks;
        return resil::curl::stream_action::next;
    };
    const auto streamed = [&](const request& req, resil::curl::stream_options limits) {
        resil::context ctx;
        std::optional<response> out;
        std::exception_ptr thrown;
        http.async_stream(req, ctx, sink, limits, [&](std::exception_ptr e, response r) {
            thrown = e;
            out = std::move(r);
        });
        run_until(io, [&] { return out.has_value(); });
        CHECK_FALSE(thrown);
        return std::move(*out);
    };
    const auto chunked = request::get(server.url("/chunks"));
    const auto whole = streamed(chunked, {.first_byte = 200ms, .idle = 200ms});
    CHECK(whole.ok());
    CHECK(whole.body().empty());  // the sink has it
    CHECK(got == "data: one\n\ndata: two\n\ndata: three\n\n");
    CHECK(chunks == 3);
    CHECK(whole.delivered_bytes() == got.size());

    got.clear();
    const auto late = request::get(server.url("/late"));
    auto t0 = steady::now();
    const auto no_first_byte = streamed(late, {.first_byte = 100ms});
    CHECK(no_first_byte.transport() == transport_status::first_byte_timeout);
    CHECK(resil_test::since(t0) < 100ms + slack);
    CHECK(got.empty());

    const auto stall = request::get(server.url("/stall"));
    t0 = steady::now();
    const auto idle = streamed(stall, {.idle = 100ms});
    CHECK(idle.transport() == transport_status::stream_interrupted);
    CHECK(idle.interrupted_by() == transport_status::read_timeout);
    CHECK(resil_test::since(t0) >= 100ms);
    CHECK(resil_test::since(t0) < 100ms + slack);
    CHECK(got == "data: one\n\n");
}

TEST_CASE("curl async: a sink that throws ends its own call only; the exception reaches the caller") {
    resil_test::fault_server server;
    server.on("/chunks", {action::stream({{0ms, "one"}, {20ms, "two"}})});
    server.on("/ok", {action::respond(200, "fine")});
    asio::io_context io;
    async_client http(io);
    const auto chunked = request::get(server.url("/chunks"));
    const auto ok = request::get(server.url("/ok"));
    auto throwing = [](std::string_view) -> resil::curl::stream_action { throw std::runtime_error("sink broke"); };
    std::string caught;
    std::optional<response> streamed;
    std::vector<response> others;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            resil::context ctx;
            try {
                co_await http.async_stream(chunked, ctx, throwing, {}, asio::use_awaitable);
            } catch (const std::runtime_error& e) {
                caught = e.what();
            }
            // The multi handle still works: more calls, on the same pooled transfers.
            for (int i = 0; i < 3; ++i) {
                resil::context next;
                others.push_back(co_await http.async_perform(ok, next, asio::use_awaitable));
            }
        },
        asio::detached);
    run_until(io, [&] { return others.size() == 3; });
    CHECK(caught == "sink broke");
    for (const auto& r : others) {
        CHECK(r.ok());
        CHECK(r.body() == "fine");
    }
    CHECK(http.in_flight() == 0);
    // Without a coroutine the exception is the handler's first argument.
    resil::context ctx;
    std::exception_ptr thrown;
    std::optional<response> r;
    http.async_stream(chunked, ctx, throwing, {}, [&](std::exception_ptr e, response out) {
        thrown = e;
        r = std::move(out);
    });
    run_until(io, [&] { return r.has_value(); });
    REQUIRE(thrown);
    // The sink refused what it was handed: interrupted, never retried (streaming.hpp).
    CHECK(r->transport() == transport_status::stream_interrupted);
    CHECK(r->interrupted_by() == transport_status::cancelled);
    CHECK(r->error_message().find("the stream's sink threw") != std::string::npos);
}

TEST_CASE("curl async: a sink that destroys the client ends its call once, as cancelled, without touching freed handles") {
    resil_test::fault_server server;
    server.on("/chunks", {action::stream({{0ms, "one"}, {20ms, "two"}, {20ms, "three"}})});
    asio::io_context io;
    auto http = std::make_unique<async_client>(io);
    const auto req = request::get(server.url("/chunks"));
    resil::context ctx;
    int chunks = 0;
    int completions = 0;
    std::optional<response> out;
    auto sink = [&](std::string_view) {
        if (++chunks == 2) http.reset();  // inside libcurl's write callback
        return resil::curl::stream_action::next;
    };
    http->async_stream(req, ctx, sink, {}, [&](std::exception_ptr, response r) {
        ++completions;
        out = std::move(r);
    });
    run_until(io, [&] { return out.has_value(); });
    io.restart();
    io.run_for(50ms);  // nothing more arrives, nothing touches freed handles
    CHECK_FALSE(http);
    CHECK(chunks == 2);
    CHECK(completions == 1);
    REQUIRE(out);
    CHECK(out->transport() == transport_status::stream_interrupted);  // bytes had reached the sink
    CHECK(out->interrupted_by() == transport_status::cancelled);
    CHECK(out->error_message() == "the asynchronous client was destroyed while the call was in flight");
}

// The client hands over the transfers libcurl finished after libcurl returns
// (with the epoll set, once per wake-up, after every ready socket): a call
// libcurl finished before a sink destroys the client, in the same wake-up,
// keeps its answer and is not reported as cut by the client's end.
TEST_CASE("curl async: a call finished in the wake-up where a sink destroys the client keeps its answer") {
    resil_test::fault_server server;
    server.on("/first", {action::respond_after(300ms, 200, "first")});
    server.on("/second", {action::respond_after(700ms, 200, "second")});
    asio::io_context io;
    auto http = std::make_unique<async_client>(io);
    resil::context first_ctx;
    resil::context second_ctx;
    std::optional<response> first;
    std::optional<response> second;
    int first_completions = 0;
    int second_completions = 0;
    std::size_t in_flight_in_sink = 0;
    http->async_perform(request::get(server.url("/first")), first_ctx, [&](response r) {
        ++first_completions;
        first = std::move(r);
    });
    auto sink = [&](std::string_view) {
        in_flight_in_sink = http->in_flight();
        http.reset();  // inside libcurl's write callback
        return resil::curl::stream_action::next;
    };
    http->async_stream(request::get(server.url("/second")), second_ctx, sink, {},
                       [&](std::exception_ptr, response r) {
                           ++second_completions;
                           second = std::move(r);
                       });
    // Both requests out, then the thread stays away from the io_context
    // while both answers arrive: one wake-up finds both sockets ready, the
    // first one's answer before the second's.
    const auto until = steady::now() + 5s;
    while (server.requests().size() < 2 && steady::now() < until) {
        io.run_for(1ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(server.requests().size() == 2);
    REQUIRE_FALSE(first);
    std::this_thread::sleep_for(1500ms);
    run_until(io, [&] { return first && second; });
#if RESIL_DETAIL_CURL_EVENT_SET
    // The case at hand: when the sink ran, libcurl had finished the first
    // call and the client had not handed it over yet (certain with the
    // epoll set, which hands over once per wake-up; with a wait per socket
    // it depends on whether libcurl served both in one call).
    CHECK(in_flight_in_sink == 2);
#endif
    io.restart();
    io.run_for(50ms);  // nothing completes twice
    CHECK_FALSE(http);
    CHECK(first->ok());
    CHECK(first->body() == "first");
    CHECK(first->error_message().empty());
    // The second call's whole answer came in one read, so libcurl finished
    // it too before the client went: what it reports is not checked here.
    CHECK(first_completions == 1);
    CHECK(second_completions == 1);
}

// Calls whose answers one wake-up finds: their handlers run at the end of
// that wake-up, one after another. Starts `paths.size()` calls whose
// answers wait at one gate of the server, opens it once every request is
// there, then stays away from the io_context until the server has written
// every answer (on loopback they are then in the client's sockets).
template <class Handler>
void finish_together(resil_test::fault_server& server, asio::io_context& io, async_client& http,
                     std::vector<resil::context>& contexts, const std::vector<std::string>& paths, Handler handler) {
    for (const auto& path : paths) server.on(path, {action::respond_at_gate("together", 200, "ok")});
    const auto out = server.requests().size() + paths.size();
    const auto answered = server.answered() + paths.size();
    const auto in_flight = http.in_flight() + paths.size();
    contexts.resize(paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i)
        http.async_perform(request::get(server.url(paths[i])), contexts[i], handler);
    run_until(io, [&] { return server.requests().size() == out; });
    REQUIRE(http.in_flight() == in_flight);  // none has completed yet
    server.open_gate("together");
    const auto until = steady::now() + 10s;
    while (server.answered() < answered && steady::now() < until) std::this_thread::sleep_for(5ms);
    REQUIRE(server.answered() >= answered);
    std::this_thread::sleep_for(20ms);
}

TEST_CASE("curl async: the calls one wake-up finished complete in that wake-up, not one per trip through the loop") {
    resil_test::fault_server server;
    asio::io_context io;
    async_client http(io);
    std::vector<resil::context> contexts;
    int completions = 0;
    finish_together(server, io, http, contexts, {"/a", "/b", "/c"}, [&](response r) {
        CHECK(r.ok());
        ++completions;
    });
    run_until(io, [&] { return completions > 0; }, 5s, true);
#if RESIL_DETAIL_CURL_EVENT_SET
    // The run_one() that served the wake-up ran every handler of it.
    CHECK(completions == 3);
#endif
    run_until(io, [&] { return completions == 3; });
}

TEST_CASE("curl async: a handler that throws leaves the calls finished beside it to complete, and the client working") {
    resil_test::fault_server server;
    asio::io_context io;
    const bool on_strand = GENERATE(false, true);
    CAPTURE(on_strand);
    async_client http = on_strand ? async_client(asio::make_strand(io)) : async_client(io);
    // In flight through the throw: the client keeps waiting for its answer.
    server.on("/later", {action::respond_at_gate("later", 200, "later")});
    std::optional<response> in_flight;
    resil::context in_flight_ctx;
    http.async_perform(request::get(server.url("/later")), in_flight_ctx, [&](response r) { in_flight = std::move(r); });
    run_until(io, [&] { return server.requests().size() == 1; });
    std::vector<resil::context> contexts;
    int completions = 0;
    int ok = 0;
    finish_together(server, io, http, contexts, {"/a", "/b", "/c"}, [&](response r) {
        ++completions;
        if (r.ok()) ++ok;
        if (completions == 1) throw std::runtime_error("the first handler failed");
    });
    // As from posted handlers: the exception leaves run() on its own, and
    // the other handlers run afterwards, each once.
    int thrown = 0;
    const auto until = steady::now() + 5s;
    while (completions < 3 && steady::now() < until) {
        try {
            io.run_for(20ms);
        } catch (const std::runtime_error&) {
            ++thrown;
            CHECK(completions == 1);
        }
        if (io.stopped()) io.restart();
    }
    CHECK(thrown == 1);
    CHECK(completions == 3);
    CHECK(ok == 3);
    CHECK_FALSE(in_flight);
    server.open_gate("later");
    run_until(io, [&] { return in_flight.has_value(); }, 5s);
    CHECK(in_flight->ok());
    CHECK(in_flight->body() == "later");
    // A new call completes too.
    std::optional<response> later;
    resil::context ctx;
    http.async_perform(request::get(server.url("/a")), ctx, [&](response r) { later = std::move(r); });
    run_until(io, [&] { return later.has_value(); });
    CHECK(later->ok());
    io.run_for(50ms);
    CHECK(completions == 3);  // none twice
}

TEST_CASE("curl async: a handler that destroys the client leaves the calls finished beside it their answers") {
    resil_test::fault_server server;
    server.on("/slow", {action::hang()});
    asio::io_context io;
    auto http = std::make_unique<async_client>(io);
    std::optional<response> slow;
    resil::context slow_ctx;
    http->async_perform(request::get(server.url("/slow")), slow_ctx, [&](response r) { slow = std::move(r); });
    run_until(io, [&] { return server.requests().size() == 1; });
    std::vector<resil::context> contexts;
    std::vector<response> answers;
    finish_together(server, io, *http, contexts, {"/a", "/b", "/c"}, [&](response r) {
        answers.push_back(std::move(r));
        http.reset();  // the first handler destroys the client; the others still run
    });
    run_until(io, [&] { return !answers.empty(); }, 5s, true);
#if RESIL_DETAIL_CURL_EVENT_SET
    CHECK(answers.size() == 3);  // in the same wake-up, after the client was gone
#endif
    run_until(io, [&] { return answers.size() == 3 && slow; }, 2s);
    CHECK_FALSE(http);
    for (const auto& r : answers) {
        CHECK(r.ok());
        CHECK(r.body() == "ok");
    }
    CHECK(slow->transport() == resil::curl::transport_status::cancelled);
    io.restart();
    io.run_for(50ms);
    CHECK(answers.size() == 3);  // none twice
}

TEST_CASE("curl async: a handler that runs the io_context itself: each call still completes once") {
    resil_test::fault_server server;
    server.on("/c", {action::respond_at_gate("c", 200, "c")});
    asio::io_context io;
    async_client http(io);
    std::optional<response> c;
    resil::context c_ctx;
    http.async_perform(request::get(server.url("/c")), c_ctx, [&](response r) { c = std::move(r); });
    run_until(io, [&] { return server.requests().size() == 1; });
    std::vector<resil::context> contexts;
    std::vector<response> answers;
    bool nested_saw_c = false;
    finish_together(server, io, http, contexts, {"/a", "/b"}, [&](response r) {
        answers.push_back(std::move(r));
        if (answers.size() != 1) return;
        // The first handler lets /c answer and waits for it by running the
        // io_context: the wake-up that finds /c completes it there, while
        // /b still waits for this handler to return.
        server.open_gate("c");
        const auto until = steady::now() + 5s;
        while (!c && steady::now() < until) {
            io.run_for(10ms);
            if (io.stopped()) io.restart();
        }
        nested_saw_c = c.has_value();
    });
    run_until(io, [&] { return answers.size() == 2 && c; });
    CHECK(nested_saw_c);
    for (const auto& r : answers) CHECK(r.ok());
    CHECK(c->ok());
    CHECK(c->body() == "c");
    io.run_for(50ms);
    CHECK(answers.size() == 2);  // none twice
}

TEST_CASE("curl async: responses given back keep small body buffers only") {
    resil_test::fault_server server;
    server.on("/big", {action::respond(200, std::string(std::size_t{2} << 20, 'x'))});
    asio::io_context io;
    async_client http(io);
    const auto req = request::get(server.url("/big"));
    std::vector<response> results;
    for (int i = 0; i < 3; ++i) {
        resil::context ctx;
        http.async_perform(req, ctx, [&](response r) { results.push_back(std::move(r)); });
    }
    run_until(io, [&] { return results.size() == 3; });
    for (auto& r : results) {
        REQUIRE(r.ok());
        REQUIRE(r.body().size() == std::size_t{2} << 20);
        http.recycle(std::move(r));
    }
    CHECK(http.spare_body_bytes() <= 3 * (std::size_t{64} << 10));
}

TEST_CASE("curl async: after a 421 the next attempt opens a new connection, on whichever pooled transfer") {
    resil_test::fault_server server;
    server.on("/slow", {action::respond_after(150ms, 200, "slow")});
    server.on("/misdirected", {action::respond(421, "elsewhere")});
    server.on("/ok", {action::respond(200, "fine")});
    asio::io_context io;
    async_client http(io);
    std::vector<response> results;
    const auto call = [&](const char* path) {
        resil::context ctx;
        http.async_perform(request::get(server.url(path)), ctx, [&](response r) { results.push_back(std::move(r)); });
    };
    // Two pooled transfers: the 421 ends first, so the next call gets the
    // other one (the last given back).
    call("/slow");
    call("/misdirected");
    run_until(io, [&] { return results.size() == 2; });
    REQUIRE(results[0].status() == 421);
    REQUIRE(results[1].status() == 200);
    REQUIRE(http.pooled_transfers() == 2);
    const auto before = server.connections();
    call("/ok");
    run_until(io, [&] { return results.size() == 3; });
    CHECK(results[2].status() == 200);
    CHECK(server.connections() == before + 1);
    // The flag is spent: the call after that reuses a connection.
    call("/ok");
    run_until(io, [&] { return results.size() == 4; });
    CHECK(results[3].status() == 200);
    CHECK(server.connections() == before + 1);
}

TEST_CASE("curl async: pooled transfers that change URL from call to call send each call where its URL says") {
    // Each pooled transfer hands libcurl the URL parsed once per change
    // (CURLOPT_CURLU, detail/setup.hpp): over three rounds the same 8
    // transfers get URLs of other paths and hosts, a redirect, and one URL
    // libcurl refuses, which must leave its transfer fit for the next round.
    // Which transfer gets which URL follows the order the last round's calls
    // ended in (the idle list is last in, first out): the URLs are rotated
    // each round so that most transfers, not provably all, change URL.
    resil_test::nginx_server nginx{resil_test::where_it_went};
    const auto port = std::to_string(nginx.port());
    asio::io_context io;
    async_client http(io, {.redirects = {.max = 2}});
    const std::vector<std::pair<std::string, std::string>> targets = {
        {nginx.url("/who?n=0"), "127.0.0.1 /who?n=0"},
        {nginx.url("/who?n=1"), "127.0.0.1 /who?n=1"},
        {"http://localhost:" + port + "/who?n=2", "localhost /who?n=2"},
        {nginx.url("/r"), "127.0.0.1 /who?via=r"},
        {nginx.url("/who/a%20b#fragment"), "127.0.0.1 /who/a%20b"},
        {nginx.url("/x/../who?n=5"), "127.0.0.1 /who?n=5"},
        {"http://127.0.0.1:99999/who", ""},  // refused before any I/O
        {nginx.url("/who?n=7"), "127.0.0.1 /who?n=7"},
    };
    for (std::size_t round = 0; round < 3; ++round) {
        std::vector<std::optional<response>> results(targets.size());
        std::vector<resil::context> contexts(targets.size());
        for (std::size_t i = 0; i < targets.size(); ++i) {
            const std::size_t which = (i + round * 3) % targets.size();
            http.async_perform(request::get(targets[which].first), contexts[i],
                               [&results, which](response r) { results[which] = std::move(r); });
        }
        run_until(io, [&] { return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); }); });
        for (std::size_t which = 0; which < targets.size(); ++which) {
            const auto& r = *results[which];
            INFO("round " << round << ", " << targets[which].first << ": " << r.error_message());
            if (targets[which].second.empty()) {
                CHECK(r.transport() == transport_status::invalid_request);
                CHECK(r.curl_code() == CURLE_URL_MALFORMAT);
                CHECK_FALSE(r.may_have_reached_server());
            } else {
                CHECK(r.ok());
                CHECK(r.body() == targets[which].second);
            }
        }
    }
    CHECK(http.pooled_transfers() == targets.size());
}

TEST_CASE("curl async: async_perform from inside a sink is refused at once, unsent; the streamed call goes on") {
    resil_test::fault_server server;
    server.on("/chunks", {action::stream({{0ms, "one"}, {20ms, "two"}})});
    server.on("/ok", {action::respond(200, "fine")});
    asio::io_context io;
    async_client http(io);
    const auto chunked = request::get(server.url("/chunks"));
    const auto ok = request::get(server.url("/ok"));
    resil::context outer;
    resil::context inner;
    std::optional<response> nested;
    std::optional<response> streamed;
    std::string got;
    auto sink = [&](std::string_view chunk) {
        got += chunk;
        if (!nested && got.size() == 3)
            http.async_perform(ok, inner, [&](response r) { nested = std::move(r); });
        return resil::curl::stream_action::next;
    };
    http.async_stream(chunked, outer, sink, {}, [&](std::exception_ptr, response r) { streamed = std::move(r); });
    run_until(io, [&] { return streamed.has_value() && nested.has_value(); });
    CHECK(nested->transport() == transport_status::other_error);
    CHECK(nested->error_message() == "async_perform called from inside a libcurl callback (a sink); nothing was sent");
    CHECK_FALSE(nested->may_have_reached_server());
    CHECK(streamed->ok());
    CHECK(got == "onetwo");
    CHECK(server.requests().size() == 1);  // only the streamed call reached the server
    CHECK(http.in_flight() == 0);
}

TEST_CASE("curl async: an unkeyed POST on a reused connection the server drops is sent once, judged as by the blocking client") {
    client_options unkeyed;
    unkeyed.idempotency_key = resil::curl::key_header_format::none;
    // Reused however long the first call took to end (curl_async_connections.cpp).
    unkeyed.connections.max_idle_for_unrepeatable = std::chrono::hours{1};
    // A connection kept alive by the first answer, then closed by the server
    // once it has read the POST (a stale connection, seen from the client).
    const auto run = [&](auto&& perform) {
        resil_test::fault_server server;
        server.on("/warm", {action::respond(200, "warm")});
        server.on("/stale", {action::close_after_request()});
        const auto warm = perform(request::get(server.url("/warm")));
        REQUIRE(warm.ok());
        auto out = perform(request::post(server.url("/stale"), "{}"));
        const auto seen = server.requests();
        REQUIRE(seen.size() >= 2);
        CHECK(seen[1].connection == seen[0].connection);  // the POST went on the reused connection
        std::size_t posts = 0;
        for (const auto& r : seen) posts += r.method == "POST" ? 1 : 0;
        CHECK(posts == 1);  // never resent by libcurl on a new connection
        return out;
    };
    client blocking(unkeyed);
    resil::context sync_ctx;
    const response expected = run([&](const request& req) { return blocking.perform(req, sync_ctx); });
    asio::io_context io;
    async_client http(io, unkeyed);
    resil::context ctx;
    const response got = run([&](const request& req) {
        std::optional<response> r;
        http.async_perform(req, ctx, [&](response out) { r = std::move(out); });
        run_until(io, [&] { return r.has_value(); });
        return std::move(*r);
    });
    INFO(got.error_message());
    CHECK(got.transport() == expected.transport());
    CHECK(got.may_have_reached_server() == expected.may_have_reached_server());
    CHECK(got.may_have_reached_server());
    CHECK_FALSE(got.carried_idempotency_key());
    CHECK(got.repeatable() == expected.repeatable());
    CHECK(ctx.safe_to_repeat() == sync_ctx.safe_to_repeat());
    CHECK_FALSE(ctx.safe_to_repeat());
}

TEST_CASE("curl async: an idle connection the server closes while another call waits is let go, without spinning") {
    // Two calls at once open two connections. The fast one's goes idle and
    // the server closes it 50 ms later (a FIN, or a reset: a hang-up that
    // epoll reports whatever interest is asked for), while the slow call
    // still waits: from then on that socket reads as ready until it is
    // closed. The client must stop watching it (libcurl looks at it when it
    // reuses it), not wake up for it again and again; and once no call is in
    // flight it leaves the io_context nothing to wait for.
    const bool reset = GENERATE(false, true);
    INFO((reset ? "reset" : "FIN"));
    resil_test::fault_server server;
    server.on("/fast", {action::respond_then_close_idle(200, "fast", 50ms, reset)});
    server.on("/slow", {action::respond_after(400ms, 200, "slow")});
    asio::io_context io;
    async_client http(io);
    const auto fast = request::get(server.url("/fast"));
    const auto slow = request::get(server.url("/slow"));
    resil::context fast_ctx;
    resil::context slow_ctx;
    std::optional<response> fast_result;
    std::optional<response> slow_result;
    http.async_perform(slow, slow_ctx, [&](response r) { slow_result = std::move(r); });
    http.async_perform(fast, fast_ctx, [&](response r) { fast_result = std::move(r); });
    const auto until = steady::now() + 10s;
    std::size_t handlers_while_slow_waits = 0;
    while (!slow_result && steady::now() < until) {
        if (io.stopped()) io.restart();
        const auto ran = io.run_one_for(20ms);
        if (fast_result) handlers_while_slow_waits += ran;
    }
    REQUIRE(fast_result);
    REQUIRE(slow_result);
    CHECK(fast_result->status() == 200);
    CHECK(slow_result->status() == 200);
    // A handful: the idle close, libcurl's timers, the slow answer. A loop
    // woken by the closed socket runs thousands in these 350 ms.
    CHECK(handlers_while_slow_waits < 100);
    // The closed connection is not reused: the next call goes on another.
    std::optional<response> again;
    resil::context again_ctx;
    http.async_perform(fast, again_ctx, [&](response r) { again = std::move(r); });
    run_until(io, [&] { return again.has_value(); });
    CHECK(again->status() == 200);
    const auto seen = server.requests();
    REQUIRE(seen.size() == 3);  // nothing sent twice
    std::vector<std::size_t> slow_connections;
    std::vector<std::size_t> fast_connections;  // in the order the requests arrived
    for (const auto& r : seen) (r.target == "/slow" ? slow_connections : fast_connections).push_back(r.connection);
    REQUIRE(slow_connections.size() == 1);
    REQUIRE(fast_connections.size() == 2);
    CHECK(fast_connections[0] != slow_connections[0]);  // the fast call had a connection of its own, idle afterwards
    CHECK(fast_connections[1] != fast_connections[0]);
    CHECK(http.in_flight() == 0);
    // Out of work with no call in flight (limit timers end within 2 s).
    io.restart();
    io.run_for(5s);
    CHECK(io.stopped());
}

TEST_CASE("curl async: libcurl's own timer is served when it moves later while a wait for it is pending") {
    // An explicit "Expect: 100-continue" makes libcurl send the head, wait
    // 1 s for a 100 the server never sends, then send the body: only
    // libcurl's timer ends that wait. A second call added just after, with
    // a 500 ms total limit, moves libcurl's timer earlier (its backstop
    // timeout); it ends at once, and libcurl's timer moves back later, to
    // the 1 s wait, while the client's wait for 500 ms is still pending.
    // That wait must look again when it fires and wait for the rest.
    resil_test::fault_server server;
    server.on("/upload", {action::respond(200, "stored")});
    server.on("/fast", {action::respond(200, "fast")});
    asio::io_context io;
    async_client http(io);
    auto upload = request::post(server.url("/upload"), std::string(100, 'x'));
    upload.add_header("Expect", "100-continue");
    const auto fast = request::get(server.url("/fast"));
    resil::context upload_ctx;
    upload_ctx.set_timeouts({.total = 5s});
    resil::context fast_ctx;
    fast_ctx.set_timeouts({.total = 500ms});
    // Two kept-alive connections first: then no connection is set up during
    // the calls below, and libcurl's timer is theirs alone.
    {
        resil::context a_ctx;
        resil::context b_ctx;
        int warmed = 0;
        http.async_perform(fast, a_ctx, [&](response r) { warmed += r.ok() ? 1 : 0; });
        http.async_perform(fast, b_ctx, [&](response r) { warmed += r.ok() ? 1 : 0; });
        run_until(io, [&] { return warmed == 2; });
    }
    std::optional<response> uploaded;
    std::optional<response> fast_result;
    const auto started = steady::now();
    steady::time_point uploaded_at{};
    http.async_perform(upload, upload_ctx, [&](response r) {
        uploaded_at = steady::now();
        uploaded = std::move(r);
    });
    http.async_perform(fast, fast_ctx, [&](response r) { fast_result = std::move(r); });
    run_until(io, [&] { return uploaded.has_value(); });
    REQUIRE(fast_result);
    CHECK(fast_result->status() == 200);
    INFO(uploaded->error_message());
    CHECK(uploaded->status() == 200);
    CHECK(uploaded->body() == "stored");
    // libcurl's 1 s, not the 5 s limit.
    CHECK(uploaded_at - started >= 900ms);
    CHECK(uploaded_at - started < 1s + 1s + slack);
    const auto seen = server.requests();
    REQUIRE(seen.size() == 4);
    CHECK(server.connections() == 2);
    const auto post = std::find_if(seen.begin(), seen.end(), [](const auto& r) { return r.target == "/upload"; });
    REQUIRE(post != seen.end());
    CHECK(post->body == std::string(100, 'x'));
}

namespace {
// Every pooled transfer is fit for the next calls (none was left in
// libcurl's multi handle by a removal refused inside libcurl): `calls`
// calls of `req` at once all succeed.
void check_pool_fit(async_client& http, asio::io_context& io, const request& req, std::size_t calls) {
    std::vector<std::optional<response>> again(calls);
    std::vector<resil::context> contexts(calls);
    for (std::size_t i = 0; i < calls; ++i)
        http.async_perform(req, contexts[i], [&, i](response r) { again[i] = std::move(r); });
    run_until(io, [&] { return std::all_of(again.begin(), again.end(), [](const auto& r) { return r.has_value(); }); });
    for (const auto& r : again) {
        INFO(r->error_message());
        CHECK(r->ok());
    }
}
}  // namespace

TEST_CASE("curl async: a sink that runs the io_context holds up this client's work, and breaks no call") {
    // Not allowed (libcurl is not re-entrant), but not a reason to end every
    // call in flight: what the client's handlers would do inside libcurl
    // (serve ready sockets, libcurl's timer, a transfer's timer, a
    // cancellation) waits until the streamed chunk's libcurl call returns.
    resil_test::fault_server server;
    server.on("/chunks", {action::stream({{0ms, "one"}, {40ms, "two"}})});
    server.on("/ok", {action::respond(200, "fine")});
    server.on("/silent", {action::stream({{0ms, "a"}, {3s, "b"}})});
    server.on("/held", {action::hang()});
    asio::io_context io;
    async_client http(io);
    std::vector<resil::context> ctx(7);
    std::vector<std::optional<response>> results(7);
    std::vector<int> completions(7, 0);
    const auto done = [&](std::size_t i) {
        return [&, i](response r) {
            ++completions[i];
            results[i] = std::move(r);
        };
    };
    for (std::size_t i = 0; i < 3; ++i) http.async_perform(request::get(server.url("/ok")), ctx[i], done(i));
    ctx[3].set_timeouts({.read = 100ms});
    http.async_perform(request::get(server.url("/silent")), ctx[3], done(3));
    asio::cancellation_signal signal;
    http.async_perform(request::get(server.url("/held")), ctx[4], asio::bind_cancellation_slot(signal.slot(), done(4)));
    // Its total passes while the sink sleeps: its timer and libcurl's
    // (resil's limit + 1 ms) fire inside libcurl.
    ctx[6].set_timeouts({.total = 100ms});
    http.async_perform(request::get(server.url("/held")), ctx[6], done(6));
    std::string got;
    std::size_t nested_handlers = 0;
    std::size_t before_cancel = 0;
    bool spun = false;
    auto sink = [&](std::string_view chunk) {
        if (got.empty()) {
            // The answers to /ok arrive, the read and total limits pass (with
            // room for a loaded machine's delay before the first chunk).
            std::this_thread::sleep_for(300ms);
            // Bounded: a handler that posted itself again would make poll() spin.
            const auto poll = [&] {
                int i = 0;
                for (; i < 100 && io.poll_one() != 0; ++i) ++nested_handlers;
                spun = spun || i == 100;
            };
            poll();
            before_cancel = nested_handlers;
            signal.emit(asio::cancellation_type::terminal);
            poll();
        }
        got += chunk;
        return resil::curl::stream_action::next;
    };
    http.async_stream(request::get(server.url("/chunks")), ctx[5], sink, {}, [&](std::exception_ptr, response r) {
        ++completions[5];
        results[5] = std::move(r);
    });
    run_until(io, [&] { return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); }); });
    CHECK(before_cancel > 0);    // the sink ran the client's timers
    CHECK_FALSE(spun);           // no handler posted itself again and again
    for (std::size_t i = 0; i < 3; ++i) {
        INFO("call " << i << ": " << results[i]->error_message());
        CHECK(results[i]->ok());
        CHECK(results[i]->body() == "fine");
    }
    INFO("/silent: " << results[3]->error_message());
    CHECK(results[3]->transport() == transport_status::read_timeout);
    INFO("/held: " << results[4]->error_message());
    CHECK(results[4]->transport() == transport_status::cancelled);
    INFO("stream: " << results[5]->error_message());
    CHECK(results[5]->ok());
    CHECK(got == "onetwo");
    INFO("/held with a total: " << results[6]->error_message());
    // connect_timeout if it was not even sent in 100 ms (a loaded machine).
    CHECK((results[6]->transport() == transport_status::total_timeout ||
           results[6]->transport() == transport_status::connect_timeout));
    io.restart();
    io.run_for(100ms);  // anything late would complete a call twice
    CHECK(completions == std::vector<int>(7, 1));
    CHECK(http.in_flight() == 0);
    check_pool_fit(http, io, request::get(server.url("/ok")), 8);
}

TEST_CASE("curl async: a sink that runs the io_context at every chunk of a large body breaks no call") {
    // libcurl reads at most 100 buffers per wake-up and comes back for the
    // rest through its timer ("at once"): the sink then runs the io_context
    // from a libcurl call the client's timer started, while the client waits
    // on its sockets, whose readiness must wait too.
    resil_test::fault_server server;
    const std::string big(std::size_t{8} << 20, 'x');
    server.on("/big", {action::stream({{0ms, big}}, false, {{"Content-Type", "application/octet-stream"}})});
    server.on("/ok", {action::respond_after(20ms, 200, "fine")});
    asio::io_context io;
    async_client http(io);
    std::vector<resil::context> ctx(4);
    std::vector<std::optional<response>> results(4);
    std::vector<int> completions(4, 0);
    for (std::size_t i = 0; i < 3; ++i)
        http.async_perform(request::get(server.url("/ok")), ctx[i], [&, i](response r) {
            ++completions[i];
            results[i] = std::move(r);
        });
    std::size_t got = 0;
    std::size_t nested_handlers = 0;
    bool spun = false;
    auto sink = [&](std::string_view chunk) {
        if (got == 0) std::this_thread::sleep_for(40ms);  // the answers to /ok arrive, the body piles up
        got += chunk.size();
        int i = 0;
        for (; i < 100 && io.poll_one() != 0; ++i) ++nested_handlers;
        spun = spun || i == 100;
        return resil::curl::stream_action::next;
    };
    http.async_stream(request::get(server.url("/big")), ctx[3], sink, {}, [&](std::exception_ptr, response r) {
        ++completions[3];
        results[3] = std::move(r);
    });
    run_until(io, [&] { return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.has_value(); }); });
    CHECK(nested_handlers > 0);
    CHECK_FALSE(spun);
    for (const auto& r : results) {
        INFO(r->error_message());
        CHECK(r->ok());
    }
    CHECK(got == big.size());
    io.restart();
    io.run_for(100ms);
    CHECK(completions == std::vector<int>(4, 1));
    check_pool_fit(http, io, request::get(server.url("/ok")), 4);
}

TEST_CASE("curl async: a limit that passes while a sink runs the io_context leaves an answer finished meanwhile whole") {
    // The call's total passes while the sink sleeps; the rest of the body and
    // its end arrive meanwhile, and libcurl finishes the transfer in the same
    // wake-up: the finished answer is the outcome, not the late limit.
    resil_test::fault_server server;
    server.on("/two", {action::stream({{0ms, "one"}, {20ms, "two"}})});
    asio::io_context io;
    async_client http(io);
    resil::context ctx;
    ctx.set_timeouts({.total = 150ms});
    std::string got;
    std::size_t nested_handlers = 0;
    auto sink = [&](std::string_view chunk) {
        if (got.empty()) {
            std::this_thread::sleep_for(400ms);
            for (int i = 0; i < 100 && io.poll_one() != 0; ++i) ++nested_handlers;
        }
        got += chunk;
        return resil::curl::stream_action::next;
    };
    std::optional<response> result;
    http.async_stream(request::get(server.url("/two")), ctx, sink, {}, [&](std::exception_ptr, response r) {
        result = std::move(r);
    });
    run_until(io, [&] { return result.has_value(); });
    CHECK(nested_handlers > 0);  // the call's timer, at least
    INFO(result->error_message());
    CHECK(result->ok());
    CHECK(got == "onetwo");
}

TEST_CASE("curl async: libcurl's timer, come due while a sink runs the io_context, is served when the sink returns") {
    // Nothing else happens after the sink: a timer event dropped there would
    // leave the connect attempt waiting forever (libcurl reports a timer once).
    resil_test::full_backlog_listener full;
    resil_test::fault_server server;
    server.on("/one", {action::stream({{0ms, "one"}})});
    asio::io_context io;
    async_client http(io, client_options{.limits = {.connect = 150ms,
                                                    .read = resil::timeouts::no_limit,
                                                    .total = resil::timeouts::no_limit}});
    resil::context connect_ctx;
    std::optional<response> connecting;
    http.async_perform(request::get(full.url("/x")), connect_ctx, [&](response r) { connecting = std::move(r); });
    resil::context stream_ctx;
    std::optional<response> streamed;
    std::size_t nested_handlers = 0;
    auto sink = [&](std::string_view) {
        std::this_thread::sleep_for(300ms);  // the connect limit passes
        for (int i = 0; i < 100 && io.poll_one() != 0; ++i) ++nested_handlers;
        return resil::curl::stream_action::next;
    };
    http.async_stream(request::get(server.url("/one")), stream_ctx, sink, {}, [&](std::exception_ptr, response r) {
        streamed = std::move(r);
    });
    run_until(io, [&] { return streamed.has_value() && connecting.has_value(); }, 5s);
    CHECK(nested_handlers > 0);  // libcurl's timer
    CHECK(streamed->ok());
    CHECK(connecting->transport() == transport_status::connect_timeout);
    CHECK_FALSE(connecting->may_have_reached_server());
}

TEST_CASE("curl async: nothing of a finished call keeps the io_context running") {
    // Every call below has a limit of resil's (the client's defaults: read
    // 60 s, total 5 min), so its transfer's timer takes a first look within
    // a second: a wait of it left pending would keep io_context::run() from
    // returning for up to that second after the call ended.
    resil_test::fault_server server;
    server.on("/ok", {action::respond(200, "ok")});
    server.on("/hang", {action::hang()});
    const auto refused = "http://127.0.0.1:" + std::to_string(resil_test::refused_port()) + "/x";
    asio::io_context io;
    auto http = std::make_unique<async_client>(io);
    const auto ok = request::get(server.url("/ok"));
    const auto hang = request::get(server.url("/hang"));

    // One call at a time, each with a fresh context; `before` runs once the
    // call has started.
    const auto one_call = [&](const request& req, resil::context& ctx, auto before) {
        std::optional<response> got;
        http->async_perform(req, ctx, [&](response r) { got = std::move(r); });
        before();
        run_until(io, [&] { return got.has_value(); });
        CHECK(http->in_flight() == 0);
        return *got;
    };
    const auto nothing = [] {};

    SECTION("an answer") {
        resil::context ctx;
        CHECK(one_call(ok, ctx, nothing).ok());
        CHECK(out_of_work(io));
        // And again, on the pooled transfer and the kept-alive connection.
        resil::context again;
        CHECK(one_call(ok, again, nothing).ok());
        CHECK(out_of_work(io));
    }
    SECTION("a refused connection") {
        resil::context ctx;
        const auto r = one_call(request::get(refused), ctx, nothing);
        CHECK(r.transport() == transport_status::connect_failed);
        CHECK(out_of_work(io));
    }
    SECTION("the read limit, and the total") {
        resil::context read_ctx;
        read_ctx.set_timeouts({.read = 100ms});
        CHECK(one_call(hang, read_ctx, nothing).transport() == transport_status::read_timeout);
        CHECK(out_of_work(io));
        resil::context total_ctx;
        total_ctx.set_timeouts({.total = 100ms});
        CHECK(one_call(hang, total_ctx, nothing).transport() == transport_status::total_timeout);
        CHECK(out_of_work(io));
    }
    SECTION("cancellation through the slot") {
        resil::context ctx;
        asio::cancellation_signal signal;
        std::optional<response> got;
        http->async_perform(hang, ctx, asio::bind_cancellation_slot(signal.slot(), [&](response r) { got = std::move(r); }));
        run_until(io, [&] { return server.requests().size() == 1; });
        signal.emit(asio::cancellation_type::terminal);
        run_until(io, [&] { return got.has_value(); });
        CHECK(got->transport() == transport_status::cancelled);
        CHECK(out_of_work(io));
    }
    SECTION("the stop token, during the call and before it") {
        std::stop_source stop;
        resil::context ctx({.stop = stop.get_token()});
        const auto r = one_call(hang, ctx, [&] {
            run_until(io, [&] { return server.requests().size() == 1; });
            stop.request_stop();
        });
        CHECK(r.transport() == transport_status::cancelled);
        CHECK(out_of_work(io));
        // After an answer, a call refused before anything is sent.
        resil::context answered;
        CHECK(one_call(ok, answered, nothing).ok());
        CHECK(one_call(ok, ctx, nothing).transport() == transport_status::cancelled);
        CHECK(out_of_work(io));
    }
    SECTION("completions posted to a strand") {
        auto strand = asio::make_strand(io);
        std::vector<resil::context> contexts(3);
        int answers = 0;
        for (auto& ctx : contexts)
            http->async_perform(ok, ctx, asio::bind_executor(strand, [&](response r) { answers += r.ok() ? 1 : 0; }));
        run_until(io, [&] { return answers == 3; });
        CHECK(out_of_work(io));
    }
    SECTION("many calls at once") {
        std::vector<resil::context> contexts(50);
        int answers = 0;
        for (auto& ctx : contexts) http->async_perform(ok, ctx, [&](response r) { answers += r.ok() ? 1 : 0; });
        run_until(io, [&] { return answers == 50; });
        CHECK(out_of_work(io));
    }
    SECTION("the client destroyed with calls in flight") {
        std::vector<resil::context> contexts(3);
        int cancelled = 0;
        for (auto& ctx : contexts)
            http->async_perform(hang, ctx, [&](response r) {
                cancelled += r.transport() == transport_status::cancelled ? 1 : 0;
            });
        run_until(io, [&] { return server.requests().size() == 3; });
        http.reset();
        run_until(io, [&] { return cancelled == 3; });
        CHECK(out_of_work(io));
    }
    SECTION("a call a coroutine awaited, and a streamed call") {
        bool done = false;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                resil::context ctx;
                const auto r = co_await http->async_perform(ok, ctx, asio::use_awaitable);
                CHECK(r.ok());
                done = true;
            },
            asio::detached);
        run_until(io, [&] { return done; });
        CHECK(out_of_work(io));
        std::string body;
        auto sink = [&](std::string_view chunk) {
            body += chunk;
            return resil::curl::stream_action::next;
        };
        resil::context ctx;
        std::optional<response> got;
        http->async_stream(ok, ctx, sink, {}, [&](std::exception_ptr, response r) { got = std::move(r); });
        run_until(io, [&] { return got.has_value(); });
        CHECK(body == "ok");
        CHECK(out_of_work(io));
    }
}

TEST_CASE("docs/curl_async.md: the example's io.run() returns once its call has ended") {
    resil_test::fault_server server;
    server.on("/catalog", {action::respond(200, "[]")});
    const std::string url = server.url("/catalog");

    // The example, as written; how long it took, from before its first line.
    const auto example = [&url] {
        std::string used;
        auto use = [&](std::string_view body) { used = body; };
        const auto t0 = steady::now();

        // --- as in docs/curl_async.md ---
        asio::io_context io;
        resil::curl::async_client http(io);                      // one per executor (thread)

        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            resil::context ctx;
            ctx.set_timeouts({.connect = 100ms, .read = 200ms, .total = 1s});
            auto r = co_await http.async_perform(resil::curl::request::get(url), ctx, asio::use_awaitable);
            if (r.ok()) use(r.body());                           // as http.perform(req, ctx) would return
        }, asio::detached);
        io.run();
        // ---

        CHECK(used == "[]");
        return steady::now() - t0;
    };
    // A wait of the call's timer is due no sooner than its read limit
    // (200 ms) after a moment past t0, so run() could not return within 200
    // ms if it waited for one (before the fix it waited for the last: from
    // 200 ms to a second). The answer itself comes in milliseconds: one run
    // in three within 200 ms holds on a loaded machine.
    steady::duration fastest = steady::duration::max();
    for (int run = 0; run < 3 && fastest >= 200ms; ++run) fastest = std::min(fastest, example());
    CHECK(fastest < 200ms);
}

TEST_CASE("curl async: a pooled transfer's origin follows each call's scheme, host and port") {
    // One call at a time: one pooled transfer serves them all, and keeps
    // its last origin for a URL with the same scheme and authority. A URL
    // that merely starts with the last one's authority is another origin.
    resil_test::nginx_server nginx{R"(location / { return 200 "ok\n"; })"};
    const auto port = std::to_string(nginx.port());
    const std::vector<std::string> urls = {
        "http://127.0.0.1:" + port + "/ok",
        "http://127.0.0.1:" + port + "/other?x=1",  // the same origin
        "http://127.0.0.1:" + port + "?q",          // the same, no path
        "http://localhost:" + port + "/ok",         // another host
        "http://127.0.0.1",                         // port 80, no path (refused, or answered: either will do)
        "http://127.0.0.10/x",                      // starts with the last URL: another host still
        "http://127.0.0.1:" + port + "/ok",
        "http://127.0.0.1:" + port + "/ok",
    };
    asio::io_context io;
    async_client http(io, {}, {.max_idle_transfers = 1});
    for (const auto& url : urls) {
        CAPTURE(url);
        const auto req = request::get(url);
        resil::context ctx;
        ctx.set_timeouts({.connect = 1s, .total = 2s});
        bool done = false;
        http.async_perform(req, ctx, [&](response) { done = true; });
        io.restart();
        io.run();
        REQUIRE(done);
        REQUIRE(http.pooled_transfers() == 1);
        CHECK(resil::curl::detail::async_client_probe::pooled_origin(http) ==
              resil::curl::detail::connection_setup::origin_of(req));
    }
}
