// resil/curl/detail/handles.hpp — the libcurl handles a client owns, the
// callbacks that fill a response, and process-wide initialisation.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../response.hpp"
#include "capture.hpp"
#include "connection_state.hpp"
#include "idle_connections.hpp"
#include "../../detail/platform.hpp"
#include "text.hpp"

namespace resil::curl::detail {

/// curl_global_init once per process, before the first handle. A function
/// static makes concurrent first uses from several threads safe. There is no
/// matching curl_global_cleanup: other code in the process may still use
/// libcurl when static destructors run.
[[noreturn]] RESIL_DETAIL_COLD inline void throw_curl_init_failed(CURLcode result) {
    throw std::runtime_error(std::string("resil::curl: curl_global_init failed: ") + curl_easy_strerror(result));
}

inline void ensure_curl_initialised() {
    static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (result != CURLE_OK) throw_curl_init_failed(result);
}

/// What the easy handle's per-request options were last set to: options that
/// did not change since the previous transfer are not set again (setting the
/// URL copies it; the method options allocate).
struct applied_options {
    std::string url;
    std::string method;
    const char* body = nullptr;
    std::size_t body_size = 0;
    bool has_body = false;
    bool method_set = false;
    long connect_ms = -1;
    long total_ms = -1;
    const curl_slist* headers = nullptr;
    bool fresh_connect = false;
    long follow_location = -1;                 ///< CURLOPT_FOLLOWLOCATION (detail/redirect_setup.hpp)
    const char* redirect_protocols = nullptr;  ///< CURLOPT_REDIR_PROTOCOLS_STR, a redirect_setup literal

    /// Forgets everything: after a failed setopt, libcurl's state is unknown.
    void forget() { *this = applied_options{}; }
};

/// One easy handle and the buffers reused by every transfer it runs, so that
/// a transfer allocates nothing of its own: what the transfer set-up
/// (setup.hpp), the callbacks (capture.hpp) and the reading of an ended
/// transfer (transfer_result.hpp) work on, whichever loop drives it (the
/// blocking client's own multi handle, or the asynchronous client's shared
/// one, resil/curl_asio/async_client.hpp). Never moved: libcurl keeps pointers
/// into it.
struct easy_state {
    CURL* easy = nullptr;
    transfer_state transfer{};
    applied_options applied{};
    std::vector<curl_slist> header_nodes;
    // "<key header>: \"<36>\"" (sized once for the client's header name) and
    // "grpc-timeout: <9>", NUL-terminated.
    std::string key_line;
    std::array<char, 48> timeout_line{};
    std::array<char, CURL_ERROR_SIZE> error{};
    /// The next transfer opens a new connection: the server asked for
    /// another one (421 Misdirected Request) or dropped this one (408), or
    /// the kept-alive ones are too long idle for a request that may not be
    /// repeated (idle_connections.hpp).
    bool fresh_connection_next = false;
    /// The transfer's origin, as idle_connections matches connections.
    std::uint64_t origin = 0;
    /// The connection options' lists and buffers, and the shared cache held.
    connection_state connections{};
    /// The request's URL parsed once (CURLOPT_CURLU, setup.hpp); null until
    /// the first one, or when there was no memory for it.
    CURLU* parsed_url = nullptr;

    easy_state() {
        ensure_curl_initialised();
        easy = curl_easy_init();
        if (!easy) throw_no_handles();
        header_nodes.reserve(16);
    }
    easy_state(const easy_state&) = delete;
    easy_state& operator=(const easy_state&) = delete;
    ~easy_state() { release_easy(); }

protected:
    [[noreturn]] RESIL_DETAIL_COLD static void throw_no_handles() {
        throw std::runtime_error("resil::curl::client: libcurl could not create its handles");
    }

    void release_easy() noexcept {
        if (easy) curl_easy_cleanup(easy);
        easy = nullptr;
        // After the easy handle, which points at it.
        if (parsed_url) curl_url_cleanup(parsed_url);
        parsed_url = nullptr;
    }
};

/// The easy and multi handles of one blocking client: its one easy handle
/// and the multi handle that drives it on the calling thread.
struct handles : easy_state {
    CURLM* multi = nullptr;
    std::atomic<bool> busy{false};
    /// The kept-alive connections of the multi handle, as left idle.
    idle_connections idle;
    /// Sockets libcurl closed so far (through the close-socket callback).
    std::uint64_t closed_sockets = 0;
    /// client_metrics::fresh_connections_for_idle; read from any thread.
    std::atomic<std::uint64_t> fresh_for_idle{0};
    /// The buffers of the response last given back (client::recycle), which
    /// the next response returned by value is built in.
    response spare = response_access::blank();

    handles() {
        multi = curl_multi_init();
        if (!multi) {
            release();
            throw_no_handles();
        }
    }
    handles(const handles&) = delete;
    handles& operator=(const handles&) = delete;
    ~handles() { release(); }

private:
    void release() noexcept {
        // The easy handle first: the connection cache belongs to the multi handle.
        release_easy();
        if (multi) curl_multi_cleanup(multi);
        multi = nullptr;
    }
};

}  // namespace resil::curl::detail
