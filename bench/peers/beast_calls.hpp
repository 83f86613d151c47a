// bench/peers/beast_calls.hpp — GETs through Boost.Beast on Boost.Asio, a
// peer for bench_curl_async. Compiled apart (beast_calls.cpp): Boost.Asio and
// standalone Asio, which resil uses, cannot be included in one translation
// unit (both declare the same global customisation-point names).
#pragma once

#include <memory>
#include <string_view>

namespace resil_bench {

/// `in_flight` kept-alive connections to 127.0.0.1:`port`, one thread: a
/// batch is `batch` GETs of /ok, each connection writing one request
/// (http::async_write) and reading its response (http::async_read into a
/// flat_buffer and a string_body message) after another, as Beast's
/// examples write a client. Connects when built.
class beast_calls {
public:
    beast_calls(unsigned short port, int in_flight, int batch, std::string_view expected);
    ~beast_calls();
    beast_calls(const beast_calls&) = delete;
    beast_calls& operator=(const beast_calls&) = delete;

    /// One batch; failed() afterwards if a connection, a request or an
    /// answer (not 200 with `expected`) failed.
    void run_batch();
    [[nodiscard]] bool failed() const noexcept;

private:
    struct state;
    std::unique_ptr<state> s_;
};

}  // namespace resil_bench
