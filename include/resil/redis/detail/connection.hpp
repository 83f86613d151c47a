// resil/redis/detail/connection.hpp — one hiredis connection with bounded
// round trips, and a small pool of them with exclusive checkout.
//
// Why a pool and not one connection per thread: a limiter is shared by
// every thread of a service, and threads come and go (thread pools, Asio
// workers); a thread_local connection per limiter would live as long as the
// thread, multiply with limiters and could not be closed with the limiter.
// A pool of `connections` slots, each used by one thread at a time (a
// redisContext is not thread-safe), bounds the sockets a process opens and
// is freed with the limiter. Checkout is one compare-and-swap on a slot's
// flag, starting at a slot picked by the thread, so threads rarely collide.
//
// Every round trip is bounded: redisConnectWithTimeout bounds the connect,
// redisSetTimeout (SO_RCVTIMEO/SO_SNDTIMEO) each read and write; both are
// set to min(the option, what is left of the caller's deadline). hiredis
// forgets the reply timeout on reconnect, and once a context has seen an
// error it cannot be used again (a late reply would answer the next
// command): a failed connection is freed and opened anew.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "script.hpp"

namespace resil::redis::detail {

[[nodiscard]] inline timeval to_timeval(std::chrono::microseconds d) noexcept {
    if (d < std::chrono::microseconds{1}) d = std::chrono::microseconds{1};
    timeval tv{};
    tv.tv_sec = static_cast<decltype(tv.tv_sec)>(d.count() / 1'000'000);
    tv.tv_usec = static_cast<decltype(tv.tv_usec)>(d.count() % 1'000'000);
    return tv;
}

struct reply_deleter {
    void operator()(redisReply* r) const noexcept {
        if (r) freeReplyObject(r);
    }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// One connection. Not thread-safe (the pool hands it to one thread).
class connection {
public:
    connection() = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() { close(); }

    [[nodiscard]] bool open() const noexcept { return ctx_ != nullptr; }

    void close() noexcept {
        if (ctx_) redisFree(ctx_);
        ctx_ = nullptr;
        timeout_us_ = -1;
        sha_[0] = '\0';
    }

    /// Connects within `timeout` and loads the script (SCRIPT LOAD, bounded
    /// by `reply_timeout`). False with `error` set on failure.
    bool connect(const std::string& host, int port, std::chrono::microseconds timeout,
                 std::chrono::microseconds reply_timeout, std::string& error) {
        close();
        ctx_ = redisConnectWithTimeout(host.c_str(), port, to_timeval(timeout));
        if (ctx_ == nullptr) {
            error = "cannot allocate a hiredis context";
            return false;
        }
        if (ctx_->err) {
            error = "connect to " + host + ":" + std::to_string(port) + " failed: " + ctx_->errstr;
            close();
            return false;
        }
        return load_script(reply_timeout, error);
    }

    /// SCRIPT LOAD: keeps the SHA1 the server names the script by.
    bool load_script(std::chrono::microseconds reply_timeout, std::string& error) {
        if (!set_reply_timeout(reply_timeout, error)) return false;
        const char* argv[] = {"SCRIPT", "LOAD", gcra_script.data()};
        const std::size_t lens[] = {6, 4, gcra_script.size()};
        reply_ptr r{static_cast<redisReply*>(redisCommandArgv(ctx_, 3, argv, lens))};
        if (!r) return broken(error);
        if (r->type != REDIS_REPLY_STRING || r->len != 40) {
            error = "SCRIPT LOAD answered " +
                    (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string("no SHA1"));
            return false;
        }
        std::memcpy(sha_, r->str, 40);
        sha_[40] = '\0';
        return true;
    }

    /// Sets the reply timeout (a system call, so only when it changes).
    bool set_reply_timeout(std::chrono::microseconds t, std::string& error) {
        // Whole milliseconds above 1 ms, so that the deadline's ever-changing
        // remainder does not cost a setsockopt per call.
        if (t > std::chrono::milliseconds{1}) t = std::chrono::duration_cast<std::chrono::milliseconds>(t);
        if (t.count() == timeout_us_) return true;
        if (redisSetTimeout(ctx_, to_timeval(t)) != REDIS_OK) {
            error = std::string("setting the reply timeout failed: ") + ctx_->errstr;
            close();
            return false;
        }
        timeout_us_ = t.count();
        return true;
    }

    /// Runs one command; null (and the connection closed, `error` set) when
    /// the connection broke or timed out.
    reply_ptr command(int argc, const char** argv, const std::size_t* lens, std::string& error) {
        timed_out_ = false;
        reply_ptr r{static_cast<redisReply*>(redisCommandArgv(ctx_, argc, argv, lens))};
        if (!r) broken(error);
        return r;
    }

    [[nodiscard]] std::string_view sha() const noexcept { return {sha_, 40}; }
    /// Whether the last failure was a timeout (Redis slow), not a closed connection.
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }

private:
    bool broken(std::string& error) {
        error = ctx_ && ctx_->errstr[0] ? std::string(ctx_->errstr) : std::string("connection lost");
        timed_out_ = ctx_ && ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (timed_out_) error = "no reply from Redis within the timeout";
        close();
        return false;
    }

    redisContext* ctx_ = nullptr;
    std::int64_t timeout_us_ = -1;
    char sha_[41] = {};
    bool timed_out_ = false;
};

struct slot {
    std::atomic<bool> busy{false};
    connection conn;
    /// The limiter's failure count when this connection was opened: one
    /// opened before the latest failure is closed before use (its peer may
    /// be gone, or a late reply may be waiting in it).
    std::uint64_t epoch = 0;
    /// detail::fork_epoch when it was opened: a forked child must not talk
    /// on its parent's socket (their replies would interleave).
    std::uint64_t fork = 0;
};

/// `size` connections, each checked out by one thread at a time.
class pool {
public:
    explicit pool(int size) : size_(static_cast<std::size_t>(size)), slots_(new slot[size_]) {}

    class lease {
    public:
        lease() = default;
        lease(lease&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
        lease& operator=(lease&& o) noexcept {
            if (this != &o) {
                if (s_) s_->busy.store(false, std::memory_order_release);
                s_ = std::exchange(o.s_, nullptr);
            }
            return *this;
        }
        ~lease() {
            if (s_) s_->busy.store(false, std::memory_order_release);
        }
        explicit operator bool() const noexcept { return s_ != nullptr; }
        connection& operator*() const noexcept { return s_->conn; }
        connection* operator->() const noexcept { return &s_->conn; }
        std::uint64_t& epoch() const noexcept { return s_->epoch; }
        std::uint64_t& fork() const noexcept { return s_->fork; }

    private:
        friend class pool;
        slot* s_ = nullptr;
    };

    /// A free connection, or an empty lease when every one is in use.
    /// Acquire/release order: the connection's state written by its last
    /// user is visible to the next.
    [[nodiscard]] lease try_checkout() noexcept {
        const std::size_t start = home();
        for (std::size_t i = 0; i < size_; ++i) {
            slot& s = slots_[(start + i) % size_];
            if (!s.busy.load(std::memory_order_relaxed) && !s.busy.exchange(true, std::memory_order_acquire)) {
                lease l;
                l.s_ = &s;
                return l;
            }
        }
        return {};
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    // A thread's first slot: spreads threads over the pool.
    std::size_t home() const noexcept {
        return std::hash<std::thread::id>{}(std::this_thread::get_id()) % size_;
    }

    std::size_t size_;
    std::unique_ptr<slot[]> slots_;
};

}  // namespace resil::redis::detail
