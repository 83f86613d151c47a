// bench/peers/beast_calls.cpp — see beast_calls.hpp.
#include "beast_calls.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <string>
#include <vector>

namespace resil_bench {

namespace http = boost::beast::http;

struct beast_calls::state {
    struct connection {
        boost::beast::tcp_stream stream;
        boost::beast::flat_buffer buffer;
        http::request<http::empty_body> req;
        http::response<http::string_body> res;
        explicit connection(boost::asio::io_context& io) : stream(io) {}
    };
    boost::asio::io_context io{1};
    std::vector<std::unique_ptr<connection>> connections;
    std::string expected;
    int batch = 0;
    int started = 0;
    int done = 0;
    bool failed = false;

    void start(connection& c) {
        ++started;
        http::async_write(c.stream, c.req, [this, &c](boost::beast::error_code ec, std::size_t) {
            if (ec) {
                failed = true;
                return;
            }
            c.res = {};
            http::async_read(c.stream, c.buffer, c.res, [this, &c](boost::beast::error_code read_ec, std::size_t) {
                ++done;
                if (read_ec || c.res.result_int() != 200 || c.res.body() != expected) {
                    failed = true;
                    return;
                }
                if (started < batch) start(c);
            });
        });
    }
};

beast_calls::beast_calls(unsigned short port, int in_flight, int batch, std::string_view expected)
    : s_(std::make_unique<state>()) {
    s_->expected = expected;
    s_->batch = batch;
    const boost::asio::ip::tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), port);
    const std::string host = "127.0.0.1:" + std::to_string(port);
    for (int i = 0; i < in_flight; ++i) {
        auto c = std::make_unique<state::connection>(s_->io);
        boost::system::error_code ec;
        c->stream.socket().connect(at, ec);
        if (ec) s_->failed = true;
        c->stream.socket().set_option(boost::asio::ip::tcp::no_delay(true), ec);
        c->req = http::request<http::empty_body>(http::verb::get, "/ok", 11);
        c->req.set(http::field::host, host);
        s_->connections.push_back(std::move(c));
    }
}

beast_calls::~beast_calls() = default;

void beast_calls::run_batch() {
    auto& s = *s_;
    if (s.failed) return;
    s.started = 0;
    s.done = 0;
    for (auto& c : s.connections) s.start(*c);
    s.io.restart();
    s.io.run();
    if (s.done < s.batch) s.failed = true;
}

bool beast_calls::failed() const noexcept { return s_->failed; }

}  // namespace resil_bench
