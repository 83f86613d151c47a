// resil::curl::async_client allocates nothing per call beyond what the
// caller's handler asks for, in steady state: 16 and 64 calls in flight on
// one io_context thread to a kept-alive nginx, each handler giving its
// response back (recycle) and starting the next call, as a server's handlers
// would. Counted with the test binary's own operator new
// (support/allocation_counter.hpp), the sibling of curl_allocations.cpp for
// the asynchronous client (this file's name links Asio). libcurl allocates
// with malloc, which the counter does not see (libcurl's business, the same
// with or without resil). Completion handlers without an allocator of their
// own get Asio's per-thread recycling cache (async_completion.hpp): a
// handler's memory is freed before it runs, so the call it starts reuses it.
#include <resil/curl.hpp>
#include <resil/curl_asio/async_client.hpp>

#include <asio/bind_executor.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"
#include "support/nginx_server.hpp"

using namespace std::chrono_literals;
using resil::curl::async_client;
using resil::curl::request;
using resil::curl::response;

namespace {

std::uint64_t allocations_now() { return resil_test::allocations.load(std::memory_order_relaxed); }

// `in_flight` chains of calls: each completion starts its chain's next call
// until `total` have started. The allocations are counted between the
// completions numbered `from` and `to` (after warm-up: every transfer,
// connection and buffer exists by then), where each completion starts one
// call.
struct chains {
    async_client& http;
    const request& req;
    std::size_t total;
    std::size_t from;
    std::size_t to;
    std::vector<resil::context> contexts;
    std::size_t started = 0;
    std::size_t done = 0;
    std::size_t failed = 0;
    std::size_t reused = 0;  // completions in the counted span over a kept-alive connection
    std::uint64_t at_from = 0;
    std::uint64_t at_to = 0;
    // The handlers bound to the io_context's own executor type (not the
    // client's any_io_executor): their completions are posted, never run in
    // place at the end of a wake-up.
    bool bound = false;

    struct next_call {
        chains* c;
        resil::context* ctx;
        void start() const {
            ++c->started;
            *ctx = resil::context{};
            ctx->set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
            if (c->bound) {
                auto& io = static_cast<asio::io_context&>(asio::query(c->http.get_executor(), asio::execution::context));
                c->http.async_perform(c->req, *ctx, asio::bind_executor(io.get_executor(), *this));
            } else {
                c->http.async_perform(c->req, *ctx, *this);
            }
        }
        void operator()(response r) const {
            const std::size_t n = ++c->done;
            if (n == c->from) c->at_from = allocations_now();
            if (n == c->to) c->at_to = allocations_now();
            if (!r.ok() || r.body() != "hello\n") ++c->failed;
            if (n > c->from && n <= c->to && r.timings().reused_connection) ++c->reused;
            c->http.recycle(std::move(r));
            if (c->started < c->total) start();
        }
    };

    void run(asio::io_context& io, std::size_t in_flight) {
        contexts.resize(in_flight);
        for (auto& ctx : contexts) next_call{this, &ctx}.start();
        io.run();
    }
};

}  // namespace

TEST_CASE("curl async allocations: calls started by their predecessors' handlers allocate nothing") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{R"(location /ok { return 200 "hello\n"; })"};
    const auto req = request::get(nginx.url("/ok"));
    for (const std::size_t in_flight : {std::size_t{16}, std::size_t{64}}) for (const bool bound : {false, true}) {
        CAPTURE(in_flight, bound);
        asio::io_context io;
        async_client http(io);
        // A first round connects and grows every buffer; the counted span
        // starts once the second round's calls are all under way.
        chains warm{http, req, 4 * in_flight, 0, 0, {}};
        warm.bound = bound;
        warm.run(io, in_flight);
        REQUIRE(warm.failed == 0);
        io.restart();
        const std::size_t counted = 500;
        chains c{http, req, 2 * in_flight + counted + in_flight, 2 * in_flight, 2 * in_flight + counted, {}};
        c.bound = bound;
        c.run(io, in_flight);

        CHECK(c.failed == 0);
        CHECK(c.done == c.total);
        CHECK(c.reused == counted);  // the same connections all along
        CHECK(c.at_to - c.at_from == 0);
    }
}

TEST_CASE("curl async allocations: coroutines awaiting call after call allocate nothing per call") {
    if (!resil_test::counting_allocations) {
        SUCCEED("this build's runtime owns operator new; nothing to count");
        return;
    }
    resil_test::nginx_server nginx{R"(location /ok { return 200 "hello\n"; })"};
    const auto req = request::get(nginx.url("/ok"));
    asio::io_context io;
    async_client http(io);
    constexpr std::size_t in_flight = 16;
    constexpr std::size_t warm = 20;
    constexpr std::size_t counted = 30;
    std::size_t failed = 0;
    std::size_t at_mark = 0;  // coroutines past their warm-up
    std::uint64_t from = 0;
    std::uint64_t to = 0;
    std::size_t finished = 0;
    for (std::size_t i = 0; i < in_flight; ++i)
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                resil::context ctx;
                for (std::size_t n = 0; n < warm + counted; ++n) {
                    if (n == warm && ++at_mark == in_flight) from = allocations_now();
                    ctx = resil::context{};
                    ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
                    response r = co_await http.async_perform(req, ctx, asio::use_awaitable);
                    if (!r.ok()) ++failed;
                    http.recycle(std::move(r));
                }
                if (++finished == 1) to = allocations_now();  // the first to end: all still awaiting
            },
            asio::detached);
    io.run();

    CHECK(failed == 0);
    CHECK(finished == in_flight);
    CHECK(at_mark == in_flight);
    CHECK(to - from == 0);
}
