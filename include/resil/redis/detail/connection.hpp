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
// and each reply is awaited until an instant the limiter computes from what
// is left of the decision. SO_RCVTIMEO alone would bound each read, not the
// reply, and the kernel rounds it up to scheduler ticks: a blocking read
// under it is used only while its latest possible end is before that
// instant, and poll() with the exact time left waits out the rest. Once a context
// has seen an error it cannot be used again (a late reply would answer the
// next command): a failed connection is freed and opened anew.
#pragma once

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
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

#include "../../clock.hpp"
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
        sha_[0] = '\0';
    }

    /// Connects within `timeout` (hiredis rounds it up to whole
    /// milliseconds); writes are bounded by `send_timeout` (SO_SNDTIMEO).
    /// False with `error` set on failure; timed_out() tells a timeout from a
    /// refusal. The script is loaded by load_script().
    bool connect(const std::string& host, int port, std::chrono::microseconds timeout,
                 std::chrono::microseconds send_timeout, std::string& error) {
        close();
        timed_out_ = false;
        ctx_ = redisConnectWithTimeout(host.c_str(), port, to_timeval(timeout));
        if (ctx_ == nullptr) {
            error = "cannot allocate a hiredis context";
            return false;
        }
        if (ctx_->err) {
            timed_out_ = std::strstr(ctx_->errstr, "timed out") != nullptr;
            error = "connect to " + host + ":" + std::to_string(port) + " failed: " + ctx_->errstr;
            close();
            return false;
        }
        if (redisSetTimeout(ctx_, to_timeval(send_timeout)) != REDIS_OK) {
            error = std::string("setting the send timeout failed: ") + ctx_->errstr;
            close();
            return false;
        }
        plan_blocking_reads(send_timeout);
        return true;
    }

    /// SCRIPT LOAD, its reply awaited until `end`: keeps the SHA1 the
    /// server names the script by. An error reply closes the connection too
    /// (the next use connects and loads again).
    bool load_script(time_point end, std::string& error) {
        const char* argv[] = {"SCRIPT", "LOAD", gcra_script.data()};
        const std::size_t lens[] = {6, 4, gcra_script.size()};
        reply_ptr r = command(3, argv, lens, end, error);
        if (!r) return false;
        if (r->type != REDIS_REPLY_STRING || r->len != 40) {
            error = "SCRIPT LOAD answered " +
                    (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string("no SHA1"));
            close();
            return false;
        }
        std::memcpy(sha_, r->str, 40);
        sha_[40] = '\0';
        return true;
    }

    /// Runs one command and waits for its reply until `end` at most. Null
    /// (and the connection closed, `error` set) when the connection broke or
    /// the reply did not come in time.
    ///
    /// How it waits: a blocking read bounded by SO_RCVTIMEO when even the
    /// latest the kernel could end that read (see plan_blocking_reads) is
    /// before `end`; otherwise, and after such a read times out, poll() on
    /// the socket with the time left to `end`. The blocking read is one
    /// system call, as in bare hiredis; poll() with a timeout adds a system
    /// call and a high-resolution timer per reply (~0.5 µs, 2–4 % of a
    /// round trip to a local Redis).
    reply_ptr command(int argc, const char** argv, const std::size_t* lens, time_point end, std::string& error) {
        timed_out_ = false;
        if (redisAppendCommandArgv(ctx_, argc, argv, lens) != REDIS_OK) {
            broken(error);
            return {};
        }
        int done = 0;
        do {
            if (redisBufferWrite(ctx_, &done) != REDIS_OK) {
                broken(error);
                return {};
            }
        } while (!done);
        for (;;) {
            void* raw = nullptr;
            if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) {
                broken(error);
                return {};
            }
            if (raw != nullptr) return reply_ptr{static_cast<redisReply*>(raw)};
            const auto left = end - std::chrono::steady_clock::now();
            if (blocking_read_worst_.count() > 0 && left >= blocking_read_worst_) {
                if (!read_blocking(error)) return {};
                continue;
            }
            const int ready = readable_before(end, left);
            if (ready < 0) {  // poll() itself failed: no read that nothing bounds
                error = std::strerror(errno);
                close();
                return {};
            }
            if (ready == 0) {
                timed_out_ = true;
                error = "no reply from Redis within the timeout";
                close();
                return {};
            }
            if (redisBufferRead(ctx_) != REDIS_OK) {
                broken(error);
                return {};
            }
        }
    }

    [[nodiscard]] std::string_view sha() const noexcept { return {sha_, 40}; }
    /// Whether the last failure was a timeout (Redis slow), not a closed connection.
    [[nodiscard]] bool timed_out() const noexcept { return timed_out_; }

private:
    // Waits until the socket has something to read (data, EOF or an error)
    // or `end` passes: 1, 0 when `end` passed, -1 when poll() failed (errno).
    // poll() with whole milliseconds, rounded down, while one is left, then
    // ppoll() for the rest: ppoll() also reads the clock again and copies
    // the time left back, which costs every reply ~0.1 µs, and the rounding
    // down never waits past `end` (a timed-out poll() just goes round
    // again). The kernel may end a poll() late by its slack (the larger of
    // 50 µs and 0.1 % of the timeout, 0.5 % when niced): that much is taken
    // off first.
    int readable_before(time_point end, std::chrono::steady_clock::duration left) const noexcept {
        for (;;) {
            if (left <= std::chrono::nanoseconds::zero()) return 0;
            pollfd p{ctx_->fd, POLLIN, 0};
            int r = 0;
            const std::chrono::steady_clock::duration slack =
                std::max<std::chrono::steady_clock::duration>(std::chrono::microseconds{50}, left / 200);
            if (const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left - slack).count(); ms >= 1) {
                r = ::poll(&p, 1, static_cast<int>(ms < max_poll_ms ? ms : max_poll_ms));
            } else {
                timespec ts{};
                ts.tv_nsec = static_cast<decltype(ts.tv_nsec)>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
                r = ::ppoll(&p, 1, &ts, nullptr);
            }
            if (r > 0) return 1;
            if (r < 0 && errno != EINTR) return -1;
            left = end - std::chrono::steady_clock::now();
        }
    }

    // Chooses SO_RCVTIMEO for blocking reads from the kernel's tick (the
    // unit it keeps the option in, so getsockopt() shows it rounded up to
    // one: 4 ms at HZ = 250) and the reply timeout. A read set to j ticks
    // ends within j + ⌈j/8⌉ + 2 ticks: up to 1 tick is rounding up, ⌈j/8⌉
    // the timer wheel's granularity (≤ 12.5 %, exact below 64 ticks), and
    // 1 more the tick that may be late (measured: 1 tick took 5.7 ms, 4
    // took 23.6 ms at 4 ms a tick). That worst case must fit in the reply
    // timeout, less 1 ms for the write and the code around it; with a
    // shorter timeout (or an unknown tick) every reply is awaited by
    // poll(). A read is set to at most 62 ticks: beyond the wheel's first
    // level its rounding grows past ⌈j/8⌉ (8/63 of the time at the start of
    // a level), and a longer read gains nothing (the loop reads again while
    // the worst case still fits).
    void plan_blocking_reads(std::chrono::microseconds reply_timeout) noexcept {
        using std::chrono::microseconds;
        blocking_read_worst_ = {};
        const microseconds tick = kernel_tick(ctx_->fd);
        if (tick <= microseconds::zero()) return;
        const auto usable = reply_timeout - std::chrono::milliseconds{1};
        const auto worst = [&](std::int64_t j) { return tick * (j + (j + 7) / 8 + 2); };
        std::int64_t j = std::min<std::int64_t>(usable / tick, 62);
        while (j > 0 && worst(j) > usable) --j;
        if (j <= 0) return;
        const timeval tv = to_timeval(tick * j);
        if (::setsockopt(ctx_->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) return;
        blocking_read_worst_ = worst(j);
    }

    // The kernel's tick as SO_RCVTIMEO shows it: 1 µs is kept as one tick.
    // Zero when it cannot be learnt or is implausible (the blocking reads
    // are then not used). Restores the option as hiredis set it.
    static std::chrono::microseconds kernel_tick(int fd) noexcept {
        timeval was{};
        socklen_t len = sizeof was;
        if (::getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &was, &len) != 0) return {};
        const timeval one{0, 1};
        timeval kept{};
        len = sizeof kept;
        const bool ok = ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &one, sizeof one) == 0 &&
                        ::getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kept, &len) == 0;
        if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &was, sizeof was) != 0 || !ok) return {};
        const std::chrono::microseconds tick{std::int64_t{kept.tv_sec} * 1'000'000 + kept.tv_usec};
        // HZ is 100 to 1000 on Linux: a tick of 1 to 10 ms.
        if (tick < std::chrono::microseconds{500} || tick > std::chrono::milliseconds{20}) return {};
        return tick;
    }

    // One blocking read (bounded by SO_RCVTIMEO), fed to hiredis's reader.
    // A timeout is no failure here: the caller waits out the rest with
    // poll(). False (the connection closed, `error` set) when it broke.
    bool read_blocking(std::string& error) {
        char buf[16 * 1024];  // as redisBufferRead's
        const auto n = ::recv(ctx_->fd, buf, sizeof buf, 0);
        if (n > 0) {
            if (redisReaderFeed(ctx_->reader, buf, static_cast<std::size_t>(n)) == REDIS_OK) return true;
            error = ctx_->reader->errstr[0] ? std::string(ctx_->reader->errstr) : std::string("protocol error");
        } else if (n == 0) {
            error = "Server closed the connection";
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            return true;
        } else {
            error = std::strerror(errno);
        }
        close();
        return false;
    }

    static constexpr std::int64_t max_poll_ms = 1'000'000'000;  // 11 days, within an int: the loop goes on

    bool broken(std::string& error) {
        error = ctx_ && ctx_->errstr[0] ? std::string(ctx_->errstr) : std::string("connection lost");
        timed_out_ = ctx_ && ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (timed_out_) error = "no reply from Redis within the timeout";
        close();
        return false;
    }

    redisContext* ctx_ = nullptr;
    // How long a blocking read may take at most; zero: replies are awaited by poll() only.
    std::chrono::microseconds blocking_read_worst_{};
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
        lease(lease&& o) noexcept : s_(std::exchange(o.s_, nullptr)), p_(o.p_) {}
        lease& operator=(lease&& o) noexcept {
            if (this != &o) {
                if (s_) p_->give_back(*s_);
                s_ = std::exchange(o.s_, nullptr);
                p_ = o.p_;
            }
            return *this;
        }
        ~lease() {
            if (s_) p_->give_back(*s_);
        }
        explicit operator bool() const noexcept { return s_ != nullptr; }
        connection& operator*() const noexcept { return s_->conn; }
        connection* operator->() const noexcept { return &s_->conn; }
        std::uint64_t& epoch() const noexcept { return s_->epoch; }
        std::uint64_t& fork() const noexcept { return s_->fork; }

    private:
        friend class pool;
        slot* s_ = nullptr;
        pool* p_ = nullptr;
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
                l.p_ = this;
                return l;
            }
        }
        return {};
    }

    /// A free connection, waiting (asleep, not spinning) until `end` for
    /// one to be given back; empty when none was.
    [[nodiscard]] lease checkout(time_point end) {
        if (auto l = try_checkout()) return l;
        // Registered before looking again: a connection given back after
        // that look sees the waiter and wakes it (both seq_cst).
        waiters_.fetch_add(1, std::memory_order_seq_cst);
        lease l;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            for (;;) {
                l = try_checkout();
                if (l || std::chrono::steady_clock::now() >= end) break;
                freed_.wait_until(lock, end);
            }
        }
        waiters_.fetch_sub(1, std::memory_order_relaxed);
        return l;
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    void give_back(slot& s) noexcept {
        s.busy.store(false, std::memory_order_seq_cst);
        if (waiters_.load(std::memory_order_seq_cst) != 0) {
            { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter between its look and its wait gets the notify
            freed_.notify_one();
        }
    }

    // A thread's first slot: spreads threads over the pool.
    std::size_t home() const noexcept {
        return std::hash<std::thread::id>{}(std::this_thread::get_id()) % size_;
    }

    std::size_t size_;
    std::unique_ptr<slot[]> slots_;
    std::atomic<int> waiters_{0};
    std::mutex mutex_;
    std::condition_variable freed_;
};

}  // namespace resil::redis::detail
