// resil::curl::async_client keeps its kept-alive connections when the calls
// in flight drop to few or none (between bursts, after a batch): libcurl
// sizes its connection cache by the easy handles added at the moment a
// connection comes back, and the client's finished handles leave the multi
// handle before their completions start the next calls. Against Debian's
// nginx, whose access log names each request's connection; without nginx
// these tests fail, they do not skip.
#include <resil/curl.hpp>
#include <resil/curl/async_client.hpp>

#include <asio/io_context.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::async_client;
using resil::curl::request;
using resil::curl::response;
using steady = std::chrono::steady_clock;

namespace {

// nginx's serial number of the connection of each request, from its access
// log, waiting up to 3 s for `expected` lines (written just after each reply).
std::vector<long> logged_connections(const resil_test::nginx_server& nginx, std::size_t expected) {
    const auto until = steady::now() + 3s;
    std::vector<long> serials;
    for (;;) {
        serials.clear();
        std::ifstream in(nginx.directory() + "/access.log");
        long serial = 0;
        while (in >> serial) serials.push_back(serial);
        if (serials.size() >= expected || steady::now() > until) return serials;
        std::this_thread::sleep_for(5ms);
    }
}

// Runs `io` until `done` or 10 s passed (a hung test fails, never hangs).
template <class Done>
void run_until(asio::io_context& io, Done done) {
    const auto until = steady::now() + 10s;
    while (!done() && steady::now() < until) {
        io.run_for(20ms);
        if (io.stopped()) io.restart();
    }
    REQUIRE(done());
}

constexpr int width = 64;  // calls in flight at once

// `total` calls of `req`, `width` in flight: each completion starts the next
// call on its context, as a server's handlers would. Returns how many
// completed on a connection an earlier call had opened.
int run_batch(asio::io_context& io, async_client& http, const request& req, int total) {
    std::vector<resil::context> contexts(width);
    int started = 0;
    int done = 0;
    int reused = 0;
    struct next_call {
        async_client* http;
        const request* req;
        resil::context* ctx;
        int total;
        int* started;
        int* done;
        int* reused;
        void start() const {
            ++*started;
            *ctx = resil::context{};
            ctx->set_timeouts({.connect = 1s, .read = 2s, .total = 5s});
            http->async_perform(*req, *ctx, *this);
        }
        void operator()(response r) const {
            ++*done;
            CHECK(r.ok());
            if (r.timings().reused_connection) ++*reused;
            http->recycle(std::move(r));
            if (*started < total) start();
        }
    };
    for (auto& ctx : contexts) next_call{&http, &req, &ctx, total, &started, &done, &reused}.start();
    run_until(io, [&] { return done == total; });
    return reused;
}

}  // namespace

TEST_CASE("curl async: kept-alive connections outlast a drained batch and bursts of completions") {
    resil_test::nginx_server nginx{R"(location /ok { access_log access.log calls; return 200 "ok\n"; })",
                                   R"(log_format calls '$connection';)"};
    asio::io_context io;
    async_client http(io);
    const auto req = request::get(nginx.url("/ok"));

    // First batch: up to `width` connections opened, then the calls drain to none.
    constexpr int first = 2000;
    run_batch(io, http, req, first);
    CHECK(http.in_flight() == 0);
    const auto before = logged_connections(nginx, first);
    REQUIRE(before.size() == first);
    const std::set<long> opened(before.begin(), before.end());
    CHECK(opened.size() <= width);

    // Second batch, started on an empty multi handle: every call finds a
    // connection the first batch left open; none is opened anew.
    constexpr int second = 1000;
    const int reused = run_batch(io, http, req, second);
    CHECK(reused == second);
    const auto after = logged_connections(nginx, first + second);
    REQUIRE(after.size() == first + second);
    std::size_t on_new_connections = 0;
    for (std::size_t i = first; i < after.size(); ++i)
        if (opened.count(after[i]) == 0) ++on_new_connections;
    CHECK(on_new_connections == 0);
}
