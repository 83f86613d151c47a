// resil/redis/detail/asio_connection.hpp — one connection to Redis through
// hiredis's asynchronous context (asio_adapter.hpp), on a strand: opened
// (connect, SCRIPT LOAD) by the first decision that needs it, then shared by
// every decision of its async_rate_limiter, whose commands it pipelines
// (hiredis matches replies to commands in order).
//
// hiredis 0.14's asynchronous API has no timeouts: they are timers here.
// Opening is bounded by connect_timeout, then reply_timeout for SCRIPT LOAD,
// whoever waits for it; a host name is resolved by Asio's resolver (off the
// executor's threads: hiredis would call getaddrinfo() on the caller's),
// within connect_timeout too, and its addresses tried in order while they
// fail at once (refused on a local port), as hiredis does; each waiter also stops at its own bound (a caller's
// deadline) without ending the opening for the others. A command's reply is
// awaited until its caller's bound: one that comes later is read by nobody
// (hiredis still matches it to its command, so unlike a blocking
// connection, this one stays usable). When the limiter sees a failure, its
// epoch moves and the connection is closed before its next use, as a
// blocking one.
//
// A wait is a timer of the waiting coroutine's that whoever ends the wait
// cancels (a reply's callback, the end of the opening), after filling in a
// result in that coroutine's frame; a frame that goes first unlinks itself.
// Everything here runs on the strand; the connection is shared (a
// shared_ptr) by the limiter and the coroutines using it, and frees the
// hiredis context last.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/error.hpp>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>

#include "../../clock.hpp"
#include "../../detail/gcra.hpp"
#include "asio_adapter.hpp"
#include "script.hpp"

namespace resil::redis::detail {

class asio_connection : public std::enable_shared_from_this<asio_connection> {
public:
    using executor_type = ::asio::strand<::asio::any_io_executor>;

    /// How a wait ended.
    enum class ended : std::uint8_t {
        done,       ///< ready (opening), or the reply read (a command)
        own_bound,  ///< the waiter's own bound passed first
        timed_out,  ///< opening: connect_timeout or SCRIPT LOAD's reply_timeout passed
        failed,     ///< refused, closed, an error (see `error`)
    };
    struct result {
        ended how = ended::failed;
        std::string error{};
    };

    asio_connection(const ::asio::any_io_executor& ex, std::string host, int port, std::chrono::milliseconds connect_timeout,
                    std::chrono::milliseconds reply_timeout)
        : asio_connection(::asio::make_strand(ex), std::move(host), port, connect_timeout, reply_timeout, true) {}

    /// On a strand shared with other connections (a cluster's nodes, one
    /// limiter's); `script` false: no SCRIPT LOAD (a sentinel), ready once
    /// connected.
    asio_connection(const executor_type& strand, std::string host, int port, std::chrono::milliseconds connect_timeout,
                    std::chrono::milliseconds reply_timeout, bool script)
        : strand_(strand),
          script_(script),
          host_(std::move(host)),
          port_(port),
          connect_timeout_(connect_timeout),
          reply_timeout_(reply_timeout),
          phase_timer_(strand_),
          resolver_(strand_) {
        std::error_code ec;
        (void)::asio::ip::make_address(host_, ec);
        numeric_ = !ec;
    }
    asio_connection(const asio_connection&) = delete;
    asio_connection& operator=(const asio_connection&) = delete;
    ~asio_connection() { close(); }

    [[nodiscard]] const executor_type& executor() const noexcept { return strand_; }
    /// The host it connects to, as given.
    [[nodiscard]] const std::string& host() const noexcept { return host_; }

    // ---- on the strand only, below.

    /// Connected and the script loaded: commands may be sent.
    [[nodiscard]] bool ready() const noexcept { return state_ == state::ready; }
    /// Closed: open() starts it. (Opening: a caller waits with wait_ready().)
    [[nodiscard]] bool closed() const noexcept { return state_ == state::closed; }
    /// The SHA1 of the loaded script (ready only).
    [[nodiscard]] const char* sha() const noexcept { return sha_; }
    /// The limiter's failure epoch and detail::fork_epoch when it was opened.
    std::uint64_t epoch = 0;
    std::uint64_t fork = 0;

    /// Starts opening: (a host name resolved,) connect, then SCRIPT LOAD.
    /// False (`error` set) when that fails at once (refused on a local
    /// port, no memory).
    bool open(std::string& error) {
        close();
        ++generation_;
        if (numeric_) {
            if (!connect_to(host_, error)) {
                state_ = state::closed;
                return false;
            }
            arm_phase(connect_timeout_);
            return true;
        }
        state_ = state::resolving;
        arm_phase(connect_timeout_);  // the name's resolution and the connect
        try {
            resolver_.async_resolve(
                host_, std::to_string(port_),
                [self = weak_from_this(), generation = generation_](
                    const std::error_code& ec, const ::asio::ip::tcp::resolver::results_type& found) {
                    auto c = self.lock();
                    if (!c || c->generation_ != generation || c->state_ != state::resolving) return;
                    c->resolved(ec, found);
                });
        } catch (const std::exception& e) {
            close();
            return failed_at_once(std::string("cannot resolve ") + host_ + ": " + e.what(), error);
        }
        return true;
    }

    /// Waits until the opening in progress ends (done: ready), or `bound`.
    ::asio::awaitable<result> wait_ready(time_point bound) {
        result r;
        if (state_ == state::ready) {
            r.how = ended::done;
            co_return r;
        }
        if (state_ == state::closed) {
            r.error = last_open_error_;
            co_return r;
        }
        waiter w{*this, bound, r};
        std::error_code ec;
        co_await w.timer.async_wait(::asio::redirect_error(::asio::use_awaitable, ec));
        if (!w.notified) r.how = ended::own_bound;  // the timer expired (a notice after it changes nothing)
        co_return r;
    }

    /// Sends one command (its arguments read now) and waits for its reply
    /// until `bound`; on arrival `read(reply)` (run on the strand, in the
    /// reply's callback: hiredis frees the reply after it) fills the
    /// caller's storage. A reply that comes later is dropped. `asking`:
    /// ASKING goes right before it, queued in the same turn (no other
    /// command between them), its reply not read (an error there shows in
    /// the command's own reply).
    template <class Read>
    ::asio::awaitable<result> command(int argc, const char** argv, const std::size_t* lens, time_point bound,
                                      Read read, bool asking = false) {
        result r;
        if (state_ != state::ready) {
            r.error = "connection lost";
            co_return r;
        }
        pending p{strand_, bound, r};
        auto* slot = new reply_slot{&p, &invoke_reader<Read>, &read};
        p.slot = slot;
        redisAsyncContext* ac = ac_;
        asio_adapter::hold_writes(ac);
        const char* asking_argv[] = {"ASKING"};
        const std::size_t asking_lens[] = {6};
        const int queued =
            asking && redisAsyncCommandArgv(ac, nullptr, nullptr, 1, asking_argv, asking_lens) != REDIS_OK
                ? REDIS_ERR
                : redisAsyncCommandArgv(ac, on_reply, slot, argc, argv, lens);
        if (queued != REDIS_OK) {
            delete slot;
            p.slot = nullptr;
            r.error = ac->c.errstr[0] ? ac->c.errstr : "the command could not be queued";
        }
        asio_adapter::write_held(ac);  // may disconnect: the reply's callback then ran already
        if (queued != REDIS_OK) co_return r;
        std::error_code ec;
        if (!p.answered) co_await p.timer.async_wait(::asio::redirect_error(::asio::use_awaitable, ec));
        if (!p.answered) {
            r.how = ended::own_bound;
            r.error = "no reply from Redis within the timeout";
        }
        co_return r;
    }

    /// Frees the hiredis context: the replies awaited, and the decisions
    /// waiting for an opening, end as failed.
    void close() noexcept {
        phase_timer_.cancel();
        resolver_.cancel();
        state_ = state::closed;
        sha_[0] = '\0';
        if (redisAsyncContext* ac = std::exchange(ac_, nullptr)) redisAsyncFree(ac);
        if (!waiters_.empty()) notify(false, "connection closed", false);
    }

private:
    enum class state : std::uint8_t { closed, resolving, connecting, loading, ready };

    // A connect to `address` started (state connecting; hiredis buffers
    // SCRIPT LOAD until it is done), or false with `error` when it failed
    // at once.
    bool connect_to(const std::string& address, std::string& error) {
        redisAsyncContext* ac = redisAsyncConnect(address.c_str(), port_);
        if (ac == nullptr) {
            error = "cannot allocate a hiredis context";
            return false;
        }
        if (ac->err) {
            error = "connect to " + host_ + ":" + std::to_string(port_) + " failed: " + ac->c.errstr;
            redisAsyncFree(ac);
            return false;
        }
        try {
            asio_adapter::attach(ac, strand_);
        } catch (const std::exception& e) {
            redisAsyncFree(ac);
            error = std::string("cannot watch the socket: ") + e.what();
            return false;
        }
        ac_ = ac;
        ac->data = this;
        state_ = state::connecting;
        redisAsyncSetConnectCallback(ac, on_connect);
        redisAsyncSetDisconnectCallback(ac, on_disconnect);
        if (!script_) return true;
        const char* argv[] = {"SCRIPT", "LOAD", gcra_script.data()};
        const std::size_t lens[] = {6, 4, gcra_script.size()};
        if (redisAsyncCommandArgv(ac, on_loaded, this, 3, argv, lens) != REDIS_OK) {
            close();
            error = "cannot queue SCRIPT LOAD";
            return false;
        }
        return true;
    }

    // The name's addresses, tried in order while a connect fails at once.
    void resolved(const std::error_code& ec, const ::asio::ip::tcp::resolver::results_type& found) {
        std::string error;
        try {
            if (ec) {
                error = "resolving " + host_ + " failed: " + ec.message();
            } else {
                for (const auto& entry : found)
                    if (connect_to(entry.endpoint().address().to_string(), error)) return;  // the phase timer runs on
                if (error.empty()) error = "resolving " + host_ + " found no address";
            }
        } catch (...) {
            error = "no memory to connect";
        }
        fail(std::move(error), false);
        close();
    }

    // A coroutine waiting for the opening to end.
    struct waiter {
        waiter(asio_connection& c, time_point bound, result& r) : conn(c), timer(c.strand_), out(r) {
            timer.expires_at(std::chrono::steady_clock::time_point{bound.time_since_epoch()});
            conn.waiters_.push_back(this);
        }
        ~waiter() { std::erase(conn.waiters_, this); }
        waiter(const waiter&) = delete;
        waiter& operator=(const waiter&) = delete;
        asio_connection& conn;
        ::asio::steady_timer timer;
        result& out;
        bool notified = false;
    };

    // A command's reply awaited; `slot` is hiredis's side (freed by the callback).
    struct reply_slot;
    struct pending {
        pending(const executor_type& ex, time_point bound, result& r) : timer(ex), out(r) {
            timer.expires_at(std::chrono::steady_clock::time_point{bound.time_since_epoch()});
        }
        ~pending() {
            if (slot) slot->wait = nullptr;  // the reply, if it comes, is read by nobody
        }
        pending(const pending&) = delete;
        pending& operator=(const pending&) = delete;
        ::asio::steady_timer timer;
        result& out;
        reply_slot* slot = nullptr;
        bool answered = false;
    };
    struct reply_slot {
        pending* wait;
        void (*read)(void* reader, const redisReply* reply);
        void* reader;
    };

    template <class Read>
    static void invoke_reader(void* reader, const redisReply* reply) {
        (*static_cast<Read*>(reader))(reply);
    }

    static asio_connection* of(const redisAsyncContext* ac) noexcept { return static_cast<asio_connection*>(ac->data); }

    static void on_reply(redisAsyncContext* ac, void* reply, void* data) noexcept {
        auto* slot = static_cast<reply_slot*>(data);
        if (pending* p = slot->wait) {
            p->slot = nullptr;
            if (reply != nullptr) {
                try {
                    slot->read(slot->reader, static_cast<const redisReply*>(reply));
                    p->out.how = ended::done;
                } catch (...) {
                    p->out.error = "no memory to read the reply";
                }
            } else {
                // The context is being freed: closed by us, by the server, or broken.
                p->out.error = ac->c.errstr[0] ? ac->c.errstr : "connection closed";
            }
            p->answered = true;
            p->timer.cancel();
        }
        delete slot;
    }

    static void on_connect(const redisAsyncContext* ac, int status) noexcept {
        asio_connection* self = of(ac);
        if (self->ac_ != ac) return;
        if (status == REDIS_OK) {
            if (!self->script_) {
                self->phase_timer_.cancel();
                self->state_ = state::ready;
                self->notify(true, {}, false);
                return;
            }
            self->state_ = state::loading;
            self->arm_phase(self->reply_timeout_);
            return;
        }
        // hiredis frees the context after this returns.
        self->ac_ = nullptr;
        self->fail("connect to " + self->host_ + ":" + std::to_string(self->port_) + " failed: " +
                       (ac->c.errstr[0] ? ac->c.errstr : "unknown error"),
                   false);
    }

    static void on_disconnect(const redisAsyncContext* ac, int) noexcept {
        asio_connection* self = of(ac);
        if (self->ac_ != ac) return;
        self->ac_ = nullptr;  // hiredis frees it
        self->fail(ac->c.errstr[0] ? ac->c.errstr : "connection closed", false);
    }

    static void on_loaded(redisAsyncContext* ac, void* reply, void* data) noexcept {
        auto* self = static_cast<asio_connection*>(data);
        if (self->ac_ != ac || self->state_ == state::ready) return;
        const auto* r = static_cast<const redisReply*>(reply);
        if (r == nullptr) {  // the context is being freed by hiredis
            self->ac_ = nullptr;
            self->fail(ac->c.errstr[0] ? ac->c.errstr : "connection closed", false);
            return;
        }
        if (r->type != REDIS_REPLY_STRING || r->len != 40) {
            std::string error;
            try {
                error = "SCRIPT LOAD answered " +
                        (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string("no SHA1"));
            } catch (...) {
            }
            self->fail(std::move(error), false);
            self->close();  // in a callback: hiredis frees it once the callback returns
            return;
        }
        std::memcpy(self->sha_, r->str, 40);
        self->sha_[40] = '\0';
        self->phase_timer_.cancel();
        self->state_ = state::ready;
        self->notify(true, {}, false);
    }

    void arm_phase(std::chrono::milliseconds timeout) noexcept {
        phase_timer_.expires_after(timeout);
        try {
            phase_timer_.async_wait([self = weak_from_this(), generation = generation_](const std::error_code& ec) {
                auto c = self.lock();
                if (ec || !c || c->generation_ != generation) return;
                if (c->state_ == state::closed || c->state_ == state::ready) return;
                const auto was = c->state_;
                c->fail(was == state::resolving ? "resolving " + c->host_ + " took longer than connect_timeout"
                        : was == state::connecting
                            ? "connect to " + c->host_ + ":" + std::to_string(c->port_) + " failed: Connection timed out"
                            : std::string("no reply from Redis within the timeout"),
                        true);
                c->close();
            });
        } catch (...) {  // no memory: the waiters end at their own bounds
        }
    }

    bool failed_at_once(std::string why, std::string& error) {
        state_ = state::closed;
        error = std::move(why);
        return false;
    }

    // The opening (or the open connection) failed: closed, waiters told.
    void fail(std::string error, bool timed_out) noexcept {
        phase_timer_.cancel();
        state_ = state::closed;
        sha_[0] = '\0';
        try {
            last_open_error_ = error;
        } catch (...) {
        }
        notify(false, std::move(error), timed_out);
    }

    void notify(bool ok, std::string error, bool timed_out) noexcept {
        auto waiting = std::move(waiters_);
        waiters_.clear();
        for (waiter* w : waiting) {
            w->notified = true;
            w->out.how = ok ? ended::done : timed_out ? ended::timed_out : ended::failed;
            if (!ok) {
                try {
                    w->out.error = error;
                } catch (...) {
                }
            }
            w->timer.cancel();
        }
    }

    executor_type strand_;
    bool script_ = true;  // SCRIPT LOAD once connected
    std::string host_;
    int port_;
    std::chrono::milliseconds connect_timeout_;
    std::chrono::milliseconds reply_timeout_;
    ::asio::steady_timer phase_timer_;  // connect_timeout, then SCRIPT LOAD's reply_timeout
    ::asio::ip::tcp::resolver resolver_;
    bool numeric_ = false;  // host_ is an address: no resolution
    redisAsyncContext* ac_ = nullptr;
    state state_ = state::closed;
    std::uint64_t generation_ = 0;
    char sha_[41] = {};
    std::vector<waiter*> waiters_;
    std::string last_open_error_;
};

}  // namespace resil::redis::detail
