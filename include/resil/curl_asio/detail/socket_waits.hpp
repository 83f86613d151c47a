// resil/curl_asio/detail/socket_waits.hpp — how the asynchronous client
// waits for libcurl's sockets, chosen here once for the whole program (as
// Asio's detail/reactor.hpp chooses its reactor):
//  - epoll_socket_waits.hpp (Linux): the sockets in an epoll set of the
//    client's own, which the reactor watches as one descriptor;
//  - per_socket_waits.hpp (elsewhere, and with
//    RESIL_CURL_ASYNC_PER_SOCKET_WAITS, defined alike in every translation
//    unit): one Asio descriptor and reactor wait per socket.
// Both pass the same tests (tests/CMakeLists.txt builds the client's tests
// both ways on Linux).
//
// A backend is a class template over the multi handle's driver
// (asio_multi.hpp), a member of it, built with it and its executor. The
// driver calls, from libcurl's callbacks and its own state changes:
//   opened(s)                 its open-socket callback made `s`
//   on_socket(easy, s, what)  CURLMOPT_SOCKETFUNCTION
//   forget(s)                 its close-socket callback, before it closes `s`
//   watched(s)                whether a transfer of libcurl's uses `s` now
//   rewatch()                 after readiness put off inside libcurl
//   shutdown()                the client is going: every wait ends, no
//                             socket is closed (libcurl closes them)
// and a backend asks of the driver (its friend): closed_, put_off(
// deferred_sockets) (true inside libcurl: the readiness waits for
// run_deferred), act(s, CURL_CSELECT_*) (libcurl's socket action),
// left_idle(easy, s) (CURL_POLL_REMOVE of a kept-alive connection),
// end_in_flight(ec) (the reactor cannot wait any more), batch_scope and
// deliver_ready() (several ready sockets served as one wake-up),
// executor(), and shared_from_this() (a pending wait keeps the driver).
#pragma once

#if defined(__linux__) && !defined(RESIL_CURL_ASYNC_PER_SOCKET_WAITS)
#define RESIL_DETAIL_CURL_EVENT_SET 1
#include "epoll_socket_waits.hpp"
#else
#define RESIL_DETAIL_CURL_EVENT_SET 0
#include "per_socket_waits.hpp"
#endif

namespace resil::curl::detail {

#if RESIL_DETAIL_CURL_EVENT_SET
template <class Multi>
using socket_waits = epoll_socket_waits<Multi>;
#else
template <class Multi>
using socket_waits = per_socket_waits<Multi>;
#endif

}  // namespace resil::curl::detail
