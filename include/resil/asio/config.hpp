// resil/asio/config.hpp — included by every resil/asio header before Asio.
//
// Asio 1.22 enables co_await on clang only for the Coroutines TS with libc++
// (<experimental/coroutine>). Clang in C++20 mode has standard coroutines,
// and with libstdc++ Asio uses them (ASIO_HAS_STD_COROUTINE) once co_await
// is declared available; g++ needs nothing. Include resil/asio headers
// before Asio's own, or define ASIO_HAS_CO_AWAIT=1 for the whole program.
#pragma once

#if defined(__clang__) && !defined(ASIO_HAS_CO_AWAIT) && !defined(ASIO_DISABLE_CO_AWAIT) && \
    defined(__cpp_impl_coroutine) && __has_include(<coroutine>)
#define ASIO_HAS_CO_AWAIT 1
#endif
