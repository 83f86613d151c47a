// resil/curl_asio/detail/async_completion.hpp — the completion handler of
// one call of the asynchronous client (asio_multi.hpp), behind a virtual
// call, in memory of the handler's associated allocator; posted to the
// handler's executor, or run in place at the end of a wake-up that served
// its call (asio_multi::deliver_ready).
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/associated_allocator.hpp>
#include <asio/associated_executor.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/recycling_allocator.hpp>

#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../../curl/response.hpp"

namespace resil::curl::detail {

/// A completion handler behind a virtual call: the client's state does not
/// depend on the handler's type. Allocated with the handler's associated
/// allocator (Asio's recycling allocator by default: a per-thread cache).
struct async_completion {
    /// The call's response (and, for a handler that takes it, what a
    /// stream's sink threw), filled before post(): a transfer fills it in
    /// place (asio_multi's async_transfer::out points here). It waits here,
    /// not in the posted function, where a capture would be moved with the
    /// function at each step of the post: moved out once as the memory is
    /// freed, then into the handler's argument.
    response result = response_access::blank();
    std::exception_ptr thrown;

    /// Posts the handler to its executor; this object is freed before the
    /// handler runs, or with the posted function if it never does (and when
    /// the post throws).
    virtual void post() = 0;
    /// Runs the handler here and now when its associated executor is
    /// `here`, the one running the caller (as when it has none of its own);
    /// posts it otherwise. Only where the client may be re-entered or destroyed
    /// (deliver_ready). What the handler throws goes through the caller.
    virtual void run_here_or_post(const ::asio::any_io_executor& here) = 0;

    void complete(response&& r) {
        result = std::move(r);
        post();
    }

protected:
    ~async_completion() = default;
};

/// The completion of a handler of type `Handler`, whose associated executor
/// (the client's, an `Executor`, when it has none of its own) is kept busy
/// until it runs. `WithError`: the handler takes (std::exception_ptr,
/// response), as a streamed call's does; otherwise (response).
template <class Handler, class Executor, bool WithError>
class async_completion_for final : public async_completion {
public:
    using allocator_type = typename std::allocator_traits<
        ::asio::associated_allocator_t<Handler, ::asio::recycling_allocator<void>>>::template rebind_alloc<async_completion_for>;

    static async_completion_for* make(Handler&& h, const Executor& fallback) {
        allocator_type alloc(::asio::get_associated_allocator(h, ::asio::recycling_allocator<void>()));
        auto* p = std::allocator_traits<allocator_type>::allocate(alloc, 1);
        try {
            return ::new (static_cast<void*>(p)) async_completion_for(std::move(h), fallback);
        } catch (...) {
            std::allocator_traits<allocator_type>::deallocate(alloc, p, 1);
            throw;
        }
    }

    Handler& handler() noexcept { return handler_; }

    void post() override {
        // The post keeps the executor busy until the handler runs.
        auto work = std::move(work_);
        const auto ex = ::asio::get_associated_executor(handler_, work.get_executor());
        ::asio::post(ex, posted{this});
    }

    void run_here_or_post(const ::asio::any_io_executor& here) override {
        if constexpr (std::is_same_v<handler_executor, ::asio::any_io_executor>) {
            if (::asio::get_associated_executor(handler_, here) == here) {
                const auto work = std::move(work_);  // the executor stays busy until the handler returns
                return deliver();
            }
        }
        post();
    }

private:
    using handler_executor = ::asio::associated_executor_t<Handler, Executor>;

    // Owns the completion until it runs: an executor destroyed with it
    // still queued frees it (and the handler, e.g. a coroutine frame).
    struct posted {
        async_completion_for* c;
        explicit posted(async_completion_for* p) noexcept : c(p) {}
        posted(posted&& other) noexcept : c(std::exchange(other.c, nullptr)) {}
        posted& operator=(posted&&) = delete;
        ~posted() {
            if (c) c->destroy();
        }
        void operator()() { std::exchange(c, nullptr)->deliver(); }
    };

    async_completion_for(Handler&& h, const Executor& fallback)
        : handler_(std::move(h)), work_(::asio::get_associated_executor(handler_, fallback)) {}

    // Memory is freed before the upcall, so that the handler's next call
    // can reuse it.
    void deliver() {
        Handler h(std::move(handler_));
        response r(std::move(result));
        std::exception_ptr e = std::move(thrown);
        destroy();
        if constexpr (WithError) {
            std::move(h)(std::move(e), std::move(r));
        } else {
            (void)e;
            std::move(h)(std::move(r));
        }
    }

    void destroy() noexcept {
        allocator_type alloc(::asio::get_associated_allocator(handler_, ::asio::recycling_allocator<void>()));
        this->~async_completion_for();
        std::allocator_traits<allocator_type>::deallocate(alloc, this, 1);
    }

    Handler handler_;
    ::asio::executor_work_guard<handler_executor> work_;
};

}  // namespace resil::curl::detail
