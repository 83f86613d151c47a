// tests/support/redis_server.hpp — Debian's redis-server as a child process
// on a free loopback port, for the Redis rate limiter's tests, benchmark and
// example: no persistence (--save "" --appendonly no), its directory under
// $TMPDIR removed afterwards, run by child_process.hpp's child_server
// (killed if the test process dies), stopped when its owner goes. It can be killed,
// restarted on the same port, frozen (SIGSTOP) and thawed, to test what a
// client does when Redis is down or slow.
//
//   resil_test::redis_server redis;
//   limiter_options.port = redis.port();
//   redis.command({"SCRIPT", "FLUSH"});
//   redis.kill();  ...  redis.restart();
//
// When redis-server is missing, construction throws std::runtime_error naming
// the package: a test that needs it fails loudly, never passes by skipping.
//
// A test whose precondition is "Redis decides" asks until it does
// (redis_decides(limiter)), never once with a short reply timeout: on a
// loaded machine the first round trips (connect, SCRIPT LOAD, EVALSHA) can
// take longer than 20 ms, and the limiter then falls back.
#pragma once

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

class redis_server {
public:
    [[nodiscard]] static std::optional<std::string> binary() {
        for (const char* candidate : {"/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"})
            if (::access(candidate, X_OK) == 0) return std::string(candidate);
        return std::nullopt;
    }

    redis_server() : dir_("resil-redis") {
        const auto bin = binary();
        if (!bin) throw std::runtime_error("redis-server is not installed: these tests need it (apt-get install redis-server)");
        binary_ = *bin;
        std::string error;
        // A port picked by binding and closing may be taken in between: retry.
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            if (start(error)) return;
        }
        throw std::runtime_error("redis-server did not start: " + error);
    }
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;
    ~redis_server() { kill(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    /// SIGKILL, as a crash (a frozen process dies too): clients see refused
    /// connections from now on.
    void kill() noexcept { child_.stop(); }

    /// Starts it again on the same port (empty: no persistence).
    void restart() {
        kill();
        std::string error;
        for (int attempt = 0; attempt < 20; ++attempt) {  // the port may linger briefly
            if (start(error)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds{50});
        }
        throw std::runtime_error("redis-server did not restart: " + error);
    }

    /// SIGSTOP: connections stay open and connects are accepted by the
    /// kernel, but nothing answers. thaw() undoes it.
    void freeze() noexcept {
        if (child_.running()) ::kill(child_.pid(), SIGSTOP);
    }
    void thaw() noexcept {
        if (child_.running()) ::kill(child_.pid(), SIGCONT);
    }

    /// Runs one command on a fresh connection (1 s timeouts) and returns the
    /// reply as text: a string, status or error as is, an integer in
    /// decimal, nil as "(nil)", an array's elements joined by spaces. Throws
    /// when Redis cannot be reached.
    std::string command(const std::vector<std::string>& args) const {
        timeval tv{1, 0};
        redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
        if (!c || c->err) {
            const std::string why = c ? c->errstr : "no context";
            if (c) redisFree(c);
            throw std::runtime_error("cannot reach redis-server: " + why);
        }
        redisSetTimeout(c, tv);
        std::vector<const char*> argv;
        std::vector<std::size_t> lens;
        for (const auto& a : args) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
        if (!r) {
            const std::string why = c->errstr;
            redisFree(c);
            throw std::runtime_error("redis-server did not answer: " + why);
        }
        std::string out = text(r);
        freeReplyObject(r);
        redisFree(c);
        return out;
    }

private:
    static std::string text(const redisReply* r) {
        switch (r->type) {
            case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
            case REDIS_REPLY_NIL: return "(nil)";
            case REDIS_REPLY_ARRAY: {
                std::string out;
                for (std::size_t i = 0; i < r->elements; ++i) out += (i ? " " : "") + text(r->element[i]);
                return out;
            }
            default: return std::string(r->str, r->len);
        }
    }

    bool start(std::string& error) {
        const std::string log = dir_.file("redis.log");
        return child_.start({binary_, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", dir_.path(), "--logfile", log, "--daemonize", "no"},
                            port_, "", [&] { return read_text_file(log); }, error);
    }

    temp_directory dir_;  // declared before child_: removed once redis-server has stopped
    std::string binary_;
    std::uint16_t port_ = 0;
    child_server child_;
};

/// Asks `limiter` (a resil::redis::rate_limiter) until Redis decides
/// (result source redis, granted or not), for up to `bound`: each try that
/// Redis could not answer in time went to the failure policy and left Redis
/// alone for the limiter's backoff, so the next try waits a little first.
/// Takes a permit per try. True once Redis decided. Counters such as
/// store_failures may have moved: read them after this, as a baseline.
template <class Limiter>
[[nodiscard]] bool redis_decides(const Limiter& limiter, std::chrono::milliseconds bound = std::chrono::seconds{20}) {
    const auto end = std::chrono::steady_clock::now() + bound;
    for (;;) {
        const auto r = limiter.try_acquire();
        if (r.source == decltype(r.source)::redis) return true;
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
}

}  // namespace resil_test
