// resil/curl/share.hpp — a cache of DNS answers and TLS sessions shared by
// the clients of one process (a libcurl share handle, CURLSH), so the
// per-thread clients that talk to one host resume one TLS session instead of
// each doing a full handshake, and resolve a name once.
//
//   auto cache = std::make_shared<resil::curl::shared_cache>();   // once per process (or per service)
//   thread_local resil::curl::client http({.shared = cache});      // each thread its own client
//
// What is shared, and why not connections: libcurl (7.88) documents that
// sharing its connection cache between concurrently running threads is not
// supported, and resil's clients are one per thread; each client keeps its
// own kept-alive connections (one handshake each), and every later
// connection of every client resumes a TLS session from the cache.
//
// Lifetime: a client keeps a std::shared_ptr to the cache in its libcurl
// state and drops it only after its easy handle is cleaned up, so the cache
// outlives every handle that uses it, whatever order the owners go in
// (libcurl refuses to free a share that a handle still uses).
//
// Thread-safety: libcurl calls the lock and unlock functions around every
// use of the shared data, from the threads of the clients; each kind of data
// (DNS, TLS sessions, libcurl's own share bookkeeping) has its own mutex,
// so a DNS lookup never waits for a TLS session store. The object is neither
// copyable nor movable: libcurl holds its address.
#pragma once

#include <curl/curl.h>

#include <array>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>

#include "../detail/platform.hpp"
#include "detail/handles.hpp"  // ensure_curl_initialised

namespace resil::curl {

/// What a shared_cache shares. Both on by default.
struct shared_cache_options {
    /// The DNS cache (CURL_LOCK_DATA_DNS): one lookup per name for every
    /// client, and the clients' resolve overrides (connection_options::resolve) seen by all.
    bool dns = true;
    /// TLS sessions (CURL_LOCK_DATA_SSL_SESSION): a new connection to a host
    /// any client already talked to resumes that session (an abbreviated
    /// handshake: no certificate exchange or verification).
    bool tls_sessions = true;
};

/// A cache of DNS answers and TLS sessions shared by the clients of one process
/// (a libcurl share handle), so that each thread's client resumes one TLS
/// session instead of a full handshake. Thread-safe (it locks for libcurl);
/// share it by std::shared_ptr through client_options::shared.
class shared_cache {
public:
    /// Creates the share handle. Throws std::runtime_error when libcurl
    /// cannot create it or refuses a setting.
    explicit shared_cache(shared_cache_options options = {}) : options_(options) {
        detail::ensure_curl_initialised();
        share_ = curl_share_init();
        if (!share_) fail("curl_share_init", CURLSHE_NOMEM);
        set(CURLSHOPT_LOCKFUNC, &lock, "CURLSHOPT_LOCKFUNC");
        set(CURLSHOPT_UNLOCKFUNC, &unlock, "CURLSHOPT_UNLOCKFUNC");
        set(CURLSHOPT_USERDATA, static_cast<void*>(this), "CURLSHOPT_USERDATA");
        if (options.dns) set(CURLSHOPT_SHARE, static_cast<long>(CURL_LOCK_DATA_DNS), "CURLSHOPT_SHARE (DNS)");
        if (options.tls_sessions)
            set(CURLSHOPT_SHARE, static_cast<long>(CURL_LOCK_DATA_SSL_SESSION), "CURLSHOPT_SHARE (SSL_SESSION)");
    }

    shared_cache(const shared_cache&) = delete;
    shared_cache& operator=(const shared_cache&) = delete;
    shared_cache(shared_cache&&) = delete;
    shared_cache& operator=(shared_cache&&) = delete;

    /// Every client using the cache is gone by now (each holds a
    /// std::shared_ptr to it), so libcurl frees the share.
    ~shared_cache() {
        if (share_) curl_share_cleanup(share_);
    }

    /// The options it was built with.
    [[nodiscard]] const shared_cache_options& options() const noexcept { return options_; }

    /// The libcurl share handle, e.g. to give raw easy handles the same
    /// cache (CURLOPT_SHARE); valid as long as this object.
    [[nodiscard]] CURLSH* native_handle() const noexcept { return share_; }

private:
    template <class Value>
    void set(CURLSHoption option, Value value, const char* name) {
        if (const CURLSHcode rc = curl_share_setopt(share_, option, value); rc != CURLSHE_OK) {
            curl_share_cleanup(share_);
            share_ = nullptr;
            fail(name, rc);
        }
    }

    [[noreturn]] RESIL_DETAIL_COLD static void fail(const char* what, CURLSHcode rc) {
        throw std::runtime_error(std::string("resil::curl::shared_cache: libcurl refused ") + what + ": " +
                                 curl_share_strerror(rc));
    }

    // One mutex per kind of data libcurl locks: a TLS session store never
    // waits for a DNS lookup. A kind this libcurl's header does not know,
    // which a newer libcurl could pass, takes the spare last slot rather than
    // going unlocked.
    std::mutex& mutex_for(curl_lock_data data) noexcept {
        const auto i = static_cast<std::size_t>(data);
        return mutexes_[i < mutexes_.size() ? i : mutexes_.size() - 1];
    }

    static void lock(CURL*, curl_lock_data data, curl_lock_access, void* self) noexcept {
        static_cast<shared_cache*>(self)->mutex_for(data).lock();
    }

    static void unlock(CURL*, curl_lock_data data, void* self) noexcept {
        static_cast<shared_cache*>(self)->mutex_for(data).unlock();
    }

    shared_cache_options options_;
    CURLSH* share_ = nullptr;
    std::array<std::mutex, static_cast<std::size_t>(CURL_LOCK_DATA_LAST) + 1> mutexes_{};
};

}  // namespace resil::curl
