// resil/redis/detail/asio_adapter.hpp — hiredis's asynchronous context
// driven by Asio, as hiredis's own adapters (adapters/libevent.h, libev.h,
// ...) drive it from other event loops; hiredis 0.14 ships none for Asio.
//
// hiredis says what it waits for through five hooks of
// redisAsyncContext::ev: addRead / delRead / addWrite / delWrite, and
// cleanup when it frees the context. Here a wanted direction is one
// async_wait() on an asio::posix::stream_descriptor over the context's
// socket, whose completion calls redisAsyncHandleRead / HandleWrite; a
// direction no longer wanted is just not watched again (a wait already
// started completes and is ignored: Asio cancels the waits of a descriptor
// only all at once). Asio's waits are level-triggered (a wait started on a
// socket that has data pending completes), so replies left in the socket
// after hiredis's one read of 16 KB are read on the next turn.
//
// One departure from those adapters: a command is written at once
// (write_held), not after a wait for the socket to be writable, which it
// almost always is; only what the socket does not take waits. That saves
// an epoll_ctl(), an epoll_wait() and a turn of the loop per command.
//
// Everything runs on the executor given to attach(), which must serialize
// (a strand): hiredis's contexts are not thread-safe. The descriptor does
// not own the socket: hiredis closes it, after cleanup has let go of it.
#pragma once

#include "../../asio/config.hpp"  // first: before any Asio header

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <system_error>

#include <asio/any_io_executor.hpp>
#include <asio/error.hpp>
#include <asio/posix/stream_descriptor.hpp>

namespace resil::redis::detail {

class asio_adapter : public std::enable_shared_from_this<asio_adapter> {
    struct private_tag {};

public:
    /// Watches `ac`'s socket on `ex` from now on; hiredis keeps the adapter
    /// (through `ac->ev.data`) until its cleanup hook. Throws what Asio
    /// throws, leaving `ac` unattached.
    static void attach(redisAsyncContext* ac, const ::asio::any_io_executor& ex) {
        auto a = std::make_shared<asio_adapter>(private_tag{}, ac, ex);
        a->self_ = a;
        ac->ev.data = a.get();
        ac->ev.addRead = add_read;
        ac->ev.delRead = del_read;
        ac->ev.addWrite = add_write;
        ac->ev.delWrite = del_write;
        ac->ev.cleanup = cleanup;
    }

    asio_adapter(private_tag, redisAsyncContext* ac, const ::asio::any_io_executor& ex)
        : ac_(ac), socket_(ex, ac->c.fd) {}

    /// Until write_held(): hiredis's wish to write is noted, not waited for.
    static void hold_writes(redisAsyncContext* ac) noexcept { of(ac->ev.data).holding_ = true; }

    /// Writes what hiredis buffered since hold_writes() now, when `ac` is
    /// connected (the rest, if the socket does not take it all, after a
    /// wait). Not from within hiredis's callbacks. May free `ac` (a write
    /// error disconnects it: its callbacks run first).
    static void write_held(redisAsyncContext* ac) noexcept {
        auto& a = of(ac->ev.data);
        a.holding_ = false;
        if (!a.want_write_) return;
        if (!(ac->c.flags & REDIS_CONNECTED)) return a.watch(false);
        const auto keep = a.shared_from_this();  // the adapter may be let go of meanwhile
        redisAsyncHandleWrite(ac);
    }
    asio_adapter(const asio_adapter&) = delete;
    asio_adapter& operator=(const asio_adapter&) = delete;

private:
    static asio_adapter& of(void* data) noexcept { return *static_cast<asio_adapter*>(data); }

    static void add_read(void* data) noexcept {
        auto& a = of(data);
        a.want_read_ = true;
        a.watch(true);
    }
    static void del_read(void* data) noexcept { of(data).want_read_ = false; }
    static void add_write(void* data) noexcept {
        auto& a = of(data);
        a.want_write_ = true;
        if (!a.holding_) a.watch(false);
    }
    static void del_write(void* data) noexcept { of(data).want_write_ = false; }

    // hiredis frees the context: let go of the socket (hiredis closes it),
    // which ends the waits in flight (operation_aborted), and of the adapter.
    static void cleanup(void* data) noexcept {
        auto& a = of(data);
        a.ac_ = nullptr;
        a.want_read_ = a.want_write_ = false;
        a.socket_.release();
        auto keep = std::move(a.self_);  // the waits in flight hold it until they end
    }

    // One wait per direction at a time. If it cannot be started (no memory),
    // the direction is not watched: the limiter's timers end what waits on it.
    void watch(bool read) noexcept {
        bool& waiting = read ? reading_ : writing_;
        if (waiting || ac_ == nullptr) return;
        try {
            socket_.async_wait(read ? ::asio::posix::stream_descriptor::wait_read
                                    : ::asio::posix::stream_descriptor::wait_write,
                               [self = shared_from_this(), read](const std::error_code& ec) { self->ready(read, ec); });
            waiting = true;
        } catch (...) {
        }
    }

    void ready(bool read, const std::error_code& ec) {
        (read ? reading_ : writing_) = false;
        if (ec == ::asio::error::operation_aborted || ac_ == nullptr) return;
        if (!(read ? want_read_ : want_write_)) return;
        // May free the context (cleanup runs) and call add_read / add_write.
        if (read)
            redisAsyncHandleRead(ac_);
        else
            redisAsyncHandleWrite(ac_);
    }

    redisAsyncContext* ac_;
    ::asio::posix::stream_descriptor socket_;
    std::shared_ptr<asio_adapter> self_;
    bool want_read_ = false;
    bool want_write_ = false;
    bool holding_ = false;  // a command is being queued: written at once after
    bool reading_ = false;
    bool writing_ = false;
};

}  // namespace resil::redis::detail
