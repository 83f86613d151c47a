// resil/asio/detail/any_completion.hpp — a completion handler of signature
// void(std::exception_ptr, T) behind two function pointers, so that the
// code that runs an operation (a coroutine, a pipeline) is compiled once,
// whatever completion token its callers use: the initiation of a template
// over the token wraps its handler in one and hands it to non-template code.
// Asio 1.22 has no any_completion_handler (1.25 does).
//
// It keeps the handler's associations as the handler itself would have
// them: it runs on its associated executor (the fallback given when it has
// none), which stays busy until then; its associated cancellation slot is
// this object's (asio::cancellation_slot); the handler lives in memory of
// its associated allocator (Asio's per-thread recycling allocator when it
// has none), as does the function dispatched to its executor. That memory
// is the handler's own per-call allocation; it is freed before the upcall.
// A handler without an executor of its own (or with the fallback) runs in
// place: the caller runs on the fallback, so dispatch would run it there.
#pragma once

#include "../config.hpp"  // first: before any Asio header

#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/dispatch.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/recycling_allocator.hpp>

namespace resil::asio::detail {

/// A move-only handler of void(std::exception_ptr, T), T default-constructible
/// and movable, over any handler of that signature (see the banner).
template <class T>
class any_completion {
public:
    /// The wrapped handler's cancellation slot.
    using cancellation_slot_type = ::asio::cancellation_slot;

    /// Wraps `handler`; it runs on its associated executor, `fallback` when
    /// it has none. Invoke this object on `fallback` (as asio::co_spawn on
    /// that executor does for a handler without an executor of its own).
    template <class Handler>
        requires(!std::is_same_v<std::decay_t<Handler>, any_completion>)
    any_completion(Handler&& handler, const ::asio::any_io_executor& fallback)
        : impl_(typed<std::decay_t<Handler>>::make(std::forward<Handler>(handler), fallback)),
          slot_(typed<std::decay_t<Handler>>::slot(impl_)) {}

    any_completion(any_completion&& other) noexcept
        : impl_(std::exchange(other.impl_, nullptr)), slot_(other.slot_) {}
    any_completion& operator=(any_completion&&) = delete;
    any_completion(const any_completion&) = delete;
    any_completion& operator=(const any_completion&) = delete;
    ~any_completion() {
        if (impl_ != nullptr) impl_->destroy(impl_);
    }

    [[nodiscard]] cancellation_slot_type get_cancellation_slot() const noexcept { return slot_; }

    /// Runs the handler with `e` and `value`: here, when its executor is the
    /// fallback (this runs on it); otherwise dispatched to its executor.
    /// Once only.
    void operator()(std::exception_ptr e, T&& value) {
        base* p = std::exchange(impl_, nullptr);
        p->complete(p, std::move(e), std::move(value));
    }

private:
    struct base {
        void (*complete)(base*, std::exception_ptr&&, T&&);
        void (*destroy)(base*) noexcept;
    };

    template <class Handler>
    struct typed final : base {
        using executor_type = ::asio::associated_executor_t<Handler, ::asio::any_io_executor>;
        using handler_allocator = ::asio::associated_allocator_t<Handler, ::asio::recycling_allocator<void>>;
        using allocator_type = typename std::allocator_traits<handler_allocator>::template rebind_alloc<typed>;

        Handler handler;
        ::asio::executor_work_guard<executor_type> work;
        bool on_fallback;  // its executor is the fallback: run in place

        typed(Handler&& h, const ::asio::any_io_executor& fallback)
            : base{&typed::complete_it, &typed::destroy_it}, handler(std::move(h)),
              work(::asio::get_associated_executor(handler, fallback)), on_fallback(false) {
            if constexpr (std::is_same_v<executor_type, ::asio::any_io_executor>)
                on_fallback = ::asio::get_associated_executor(handler, fallback) == fallback;
        }

        static base* make(Handler&& h, const ::asio::any_io_executor& fallback) {
            allocator_type alloc(::asio::get_associated_allocator(h, ::asio::recycling_allocator<void>()));
            typed* p = std::allocator_traits<allocator_type>::allocate(alloc, 1);
            try {
                return ::new (static_cast<void*>(p)) typed(std::move(h), fallback);
            } catch (...) {
                std::allocator_traits<allocator_type>::deallocate(alloc, p, 1);
                throw;
            }
        }

        static ::asio::cancellation_slot slot(base* b) noexcept {
            auto s = ::asio::get_associated_cancellation_slot(static_cast<typed*>(b)->handler);
            if constexpr (std::is_convertible_v<decltype(s), ::asio::cancellation_slot>) {
                return s;
            } else {
                return {};  // a slot type of its own: not reachable through this one
            }
        }

        static void destroy_it(base* b) noexcept {
            auto* self = static_cast<typed*>(b);
            allocator_type alloc(::asio::get_associated_allocator(self->handler, ::asio::recycling_allocator<void>()));
            self->~typed();
            std::allocator_traits<allocator_type>::deallocate(alloc, self, 1);
        }

        // Memory is freed before the upcall, for the handler's next call to reuse.
        static void deliver(typed* self, std::exception_ptr&& e, T&& value) {
            Handler h(std::move(self->handler));
            destroy_it(self);
            std::move(h)(std::move(e), std::move(value));
        }

        // Owns the completion until it runs: an executor destroyed with it
        // still queued frees it (and the handler, e.g. a coroutine frame).
        struct dispatched {
            using allocator_type = handler_allocator;
            typed* self;
            allocator_type alloc;
            std::exception_ptr error;
            T value;
            dispatched(typed* p, allocator_type a, std::exception_ptr&& e, T&& v) noexcept
                : self(p), alloc(std::move(a)), error(std::move(e)), value(std::move(v)) {}
            dispatched(dispatched&& other) noexcept
                : self(std::exchange(other.self, nullptr)), alloc(other.alloc), error(std::move(other.error)),
                  value(std::move(other.value)) {}
            dispatched& operator=(dispatched&&) = delete;
            ~dispatched() {
                if (self != nullptr) destroy_it(self);
            }
            [[nodiscard]] allocator_type get_allocator() const noexcept { return alloc; }
            void operator()() { deliver(std::exchange(self, nullptr), std::move(error), std::move(value)); }
        };

        static void complete_it(base* b, std::exception_ptr&& e, T&& value) {
            auto* self = static_cast<typed*>(b);
            // Busy until the handler has run (or the dispatch has queued it, which keeps it busy).
            auto work_now = std::move(self->work);
            if (self->on_fallback) return deliver(self, std::move(e), std::move(value));
            handler_allocator a = ::asio::get_associated_allocator(self->handler, ::asio::recycling_allocator<void>());
            ::asio::dispatch(work_now.get_executor(), dispatched{self, std::move(a), std::move(e), std::move(value)});
        }
    };

    base* impl_;
    ::asio::cancellation_slot slot_;
};

}  // namespace resil::asio::detail
