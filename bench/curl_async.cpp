// Many GETs in flight to a local nginx, side by side in one run:
//   baseline_raw_multi_64    one thread, a raw curl_multi loop (curl_multi_perform
//                            and curl_multi_poll) keeping 64 transfers in flight, the baseline
//   baseline_raw_multi_64_limits
//                            the same loop, each transfer given the libcurl
//                            limits the client sets for the calls below
//                            (CURLOPT_CONNECTTIMEOUT_MS, CURLOPT_TIMEOUT_MS):
//                            what libcurl spends on them
//   baseline_raw_multi_64_parsed_url
//                            the same loop, each handle given its URL parsed
//                            once (CURLOPT_CURLU), as the client does: libcurl
//                            parses a URL given as text again for every
//                            transfer, so this is what a raw loop gains by it
//   baseline_raw_socket_action_64
//                            one thread, the same transfers through libcurl's
//                            event-loop interface (curl_multi_socket_action on
//                            epoll readiness, its socket and timer callbacks),
//                            without Asio or resil: what that interface costs
//   baseline_raw_socket_action_64_client_work
//                            that loop given the URL parsed once, the client's
//                            limits, head and body kept, a callback before
//                            each send
//   baseline_raw_socket_action_64_same_work
//                            the goal's floor: that loop doing all of the
//                            client's libcurl work, its per-handle options and
//                            its curl_easy_getinfo reads too (raw_setup)
//   resil_async_64           one thread, resil::curl::async_client on an
//                            io_context keeping 64 calls in flight (each with a
//                            context and the timeout triad, responses recycled)
//   resil_blocking_8_threads 8 threads, each with its own resil::curl::client,
//                            one call after another
// An iteration is a batch of 512 GETs; the rate is GETs per second. Each
// kind runs in 5 interleaved rounds; the summary gives the medians over
// rounds and the ratios to the raw multi loop (goals: the async client at
// ≥ 0.95× the raw loop without limits, and ≥ 1.0× the 8 blocking threads
// with one thread). Then side_by_side measures the first ratio again, with
// the perform loop, the socket_action loop and the client alive together,
// taking turns of a few tens of milliseconds (see side_by_side), and
// side_by_side_parsed_url measures the client against raw loops that hand
// libcurl the URL parsed once, as the client does: the perform loop bare,
// the perform loop with the main per-transfer work the client asks of
// libcurl (its limits, the head and body kept, a callback before each
// send), and the socket_action loop with that work too.
//
// The benchmark starts nginx itself (tests/support/nginx_server.hpp) and skips
// with a message when nginx, libcurl or Asio is missing.
//
// RESIL_BENCH_PIN=1 pins this process (every client thread) to CPU 0 and
// nginx to CPU 1: each client setup gets one core, and nginx one of its own.
// Unpinned, the 8 blocking threads share both cores with nginx while the
// asynchronous client's one thread can use only one.
#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>

#if RESIL_BENCH_HAVE_CURL && RESIL_BENCH_HAVE_ASIO

#include <curl/curl.h>
#include <malloc.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <resil/curl.hpp>
#include <resil/curl_asio/async_client.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../tests/support/nginx_server.hpp"

#if RESIL_BENCH_HAVE_BEAST
#include "peers/beast_calls.hpp"
#endif

using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

std::unique_ptr<resil_test::nginx_server> nginx;
std::string url;
// What nginx answers there (its config in main(), where "\n" is nginx's escape).
constexpr std::string_view answer = "hello\n";
constexpr int rounds = 5;
constexpr int batch = 512;
constexpr int in_flight = 64;
constexpr int threads = 8;

// GETs per second of each kind's rounds, and the process's CPU time per GET
// (user + system, all its threads): on a machine other work keeps busy the
// rate follows the share of the cores each kind gets (8 threads get more
// than one), the CPU time per GET much less. By round: Google Benchmark
// calls a function a few times to size its run, and only the last call's
// figures, the ones it reports, are kept.
std::map<std::string, std::map<int, double>> rates;
std::map<std::string, std::map<int, double>> cpu_per_get;

double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// The batches of the benchmark's iterations, until one fails (false). Out
// of line, so that callgrind can count the steady state alone, without the
// setup's construction, its first batch (it connects) or its teardown:
// valgrind --tool=callgrind --toggle-collect='*timed_batches*' (under
// valgrind a batch outlasts the 0.3 s minimum: one iteration, 512 GETs).
template <class RunBatch, class Failed>
[[gnu::noinline]] bool timed_batches(benchmark::State& state, RunBatch& run_batch, const Failed& failed) {
    for (auto _ : state) {
        run_batch();
        if (failed()) return false;
    }
    return true;
}

// The timed part every kind shares: one batch outside the measurement (it
// connects), then a batch per iteration until one fails; req/s and
// allocations recorded for the side-by-side table.
template <class RunBatch, class Failed>
void time_batches(benchmark::State& state, const std::string& kind, int round, RunBatch run_batch,
                  const Failed& failed, const char* failure) {
    run_batch();
    const auto before = resil_bench::allocations.load();
    const double cpu0 = process_cpu_seconds();
    const auto t0 = steady::now();
    if (!timed_batches(state, run_batch, failed)) {
        state.SkipWithError(failure);
        rates[kind].erase(round);  // no figure from a failed run, nor an earlier call's
        cpu_per_get[kind].erase(round);
        return;
    }
    const auto elapsed = steady::now() - t0;
    const double gets = static_cast<double>(state.iterations()) * batch;
    const double rate = gets / std::chrono::duration<double>(elapsed).count();
    const double cpu_us = (process_cpu_seconds() - cpu0) * 1e6 / gets;
    state.counters["req/s"] = rate;
    state.counters["cpu_us/req"] = cpu_us;
    resil_bench::report_allocations(state, before);
    rates[kind][round] = rate;
    cpu_per_get[kind][round] = cpu_us;
}

double median(const std::string& kind, std::map<std::string, std::map<int, double>>& of = rates) {
    std::vector<double> v;
    for (const auto& [round, value] : of[kind]) v.push_back(value);
    return resil_bench::median(std::move(v));
}

std::size_t discard(char*, std::size_t size, std::size_t count, void*) { return size * count; }

// What a raw loop's transfers carry besides their URL.
struct raw_setup {
    // The libcurl limits the client sets for {.connect = 1s, .total = 2s}:
    // its own end of the total, and libcurl's 1 ms later.
    bool limits = false;
    // The URL parsed once (CURLOPT_CURLU), as the client gives it.
    bool parsed_url = false;
    // The callbacks the client has libcurl call on every transfer: the
    // header lines and the body kept (each handle's own buffers, cleared
    // for its next GET), and one before each send (CURLOPT_PREREQFUNCTION).
    // What the client then does with them (the fields parsed, the send
    // judged) is its own cost, not libcurl's. Its options that cost nothing
    // per transfer (an error buffer, the protocols allowed, ...) are left out.
    bool client_callbacks = false;
    // With client_callbacks: everything else the client asks of libcurl
    // for a GET with default client_options, as a raw loop would write it,
    // so that what is left between the two is the client's own work. The
    // options it sets once per handle (an error buffer, the protocols
    // allowed, TLS verification, the HTTP version, redirects off, libcurl's
    // DNS cache and connection age, CONNECT headers suppressed, a quick
    // exit, a GET's method options) and its reads of each transfer
    // (curl_easy_getinfo): before each send the connections opened; at the
    // end the status, request size, connections opened, three timings, the
    // HTTP version and the connection's addresses (the client's idle
    // connection rule); and when libcurl lets go of a connection's socket
    // (CURL_POLL_REMOVE) the transfer's private pointer and those addresses.
    // The client sets no option per transfer in steady state (the same URL
    // and limits each time) and, for this request, no header list and no
    // user agent.
    bool client_options = false;
};

// The goal's floor: a raw loop doing the client's libcurl work, all of it.
constexpr raw_setup same_work{.limits = true, .parsed_url = true, .client_callbacks = true, .client_options = true};

// Nothing may escape into libcurl's C frames: no memory ends the transfer.
std::size_t keep(char* data, std::size_t size, std::size_t count, void* to) noexcept {
    try {
        static_cast<std::string*>(to)->append(data, size * count);
        return size * count;
    } catch (...) {
        return 0;
    }
}
int go_ahead(void*, char*, char*, int, int) { return CURL_PREREQFUNC_OK; }

// The reads the client makes of a transfer's connection (its idle
// connection rule): the local and the peer's port, the peer's address.
void read_connection(CURL* e) {
    long local_port = 0;
    long primary_port = 0;
    const char* primary_ip = nullptr;
    curl_easy_getinfo(e, CURLINFO_LOCAL_PORT, &local_port);
    curl_easy_getinfo(e, CURLINFO_PRIMARY_PORT, &primary_port);
    curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &primary_ip);
    benchmark::DoNotOptimize(local_port);
    benchmark::DoNotOptimize(primary_port);
    benchmark::DoNotOptimize(primary_ip);
}

// The raw baselines' 64 easy handles on one multi handle: a batch starts
// them all, and each finished transfer's handle starts the next GET until
// the batch's count is reached.
struct raw_transfers {
    CURLM* multi = curl_multi_init();
    std::vector<CURL*> easies;
    int started = 0;
    int done = 0;
    bool failed = false;

    // CURLU handles given with CURLOPT_CURLU; freed after the easy handles.
    std::vector<CURLU*> parsed_urls;
    // Per handle (CURLOPT_PRIVATE), with client_callbacks: what it keeps.
    struct kept {
        std::string head;
        std::string body;
        CURL* easy = nullptr;
        std::array<char, CURL_ERROR_SIZE> error{};
        long connects_at_send = 0;
    };
    bool keeps = false;
    bool reads = false;  // client_options: the client's reads of each transfer
    std::vector<kept> kept_by_handle;

    explicit raw_transfers(raw_setup setup = {})
        : keeps(setup.client_callbacks),
          reads(setup.client_callbacks && setup.client_options),
          kept_by_handle(keeps ? static_cast<std::size_t>(in_flight) : 0) {
        // Idle connections kept as the client keeps them (4 per transfer it
        // pools): libcurl's default counts only the handles in the multi at
        // that moment, so the end of each batch would close some, to be
        // opened again by the next.
        curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, long{4 * in_flight});
        for (int i = 0; i < in_flight; ++i) {
            CURL* e = curl_easy_init();
            curl_easy_setopt(e, CURLOPT_URL, url.c_str());
            if (setup.parsed_url) {
                CURLU* u = curl_url();
                if (u && curl_url_set(u, CURLUPART_URL, url.c_str(), CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK)
                    curl_easy_setopt(e, CURLOPT_CURLU, u);
                else
                    failed = true;
                if (u) parsed_urls.push_back(u);
            }
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &discard);
            if (setup.limits) {
                curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
                curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 2001L);
            }
            if (setup.client_callbacks) {
                auto& k = kept_by_handle[static_cast<std::size_t>(i)];
                curl_easy_setopt(e, CURLOPT_PRIVATE, &k);
                curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &keep);
                curl_easy_setopt(e, CURLOPT_HEADERDATA, &k.head);
                curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &keep);
                curl_easy_setopt(e, CURLOPT_WRITEDATA, &k.body);
                curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &go_ahead);
                k.easy = e;
                if (setup.client_options) set_client_options(e, k);
            }
            easies.push_back(e);
        }
    }
    // The client's options for a new handle (setup::configure and what it
    // calls, with default client_options), the values it gives them, and a
    // GET's method options, set once here as the client sets them once for
    // the handle's first GET.
    static void set_client_options(CURL* e, kept& k) {
        curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &count_connects);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, &k);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k.error.data());
        curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_2TLS});
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, 60L);
        curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, 118L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, static_cast<const char*>(nullptr));
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{-1});
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, static_cast<const char*>(nullptr));
    }
    // Before each send, as the client's (capture::may_send): the
    // connections opened so far.
    static int count_connects(void* user, char*, char*, int, int) {
        auto& k = *static_cast<kept*>(user);
        curl_easy_getinfo(k.easy, CURLINFO_NUM_CONNECTS, &k.connects_at_send);
        return CURL_PREREQFUNC_OK;
    }
    // At the end of a transfer, the client's reads besides the status
    // (transfer_result::read, read_http_version; the connection's
    // addresses, asio_multi::stamp_reused_idle).
    static void read_outcome(CURL* e) {
        long request_size = 0;
        long new_connections = 0;
        curl_off_t pretransfer = 0;
        curl_off_t connect_us = 0;
        curl_off_t first_byte_us = 0;
        long version = 0;
        curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &new_connections);
        curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
        curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connect_us);
        curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &first_byte_us);
        curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
        benchmark::DoNotOptimize(request_size + new_connections + pretransfer + connect_us + first_byte_us + version);
        read_connection(e);
    }
    raw_transfers(const raw_transfers&) = delete;
    raw_transfers& operator=(const raw_transfers&) = delete;
    ~raw_transfers() {
        for (CURL* e : easies) {
            curl_multi_remove_handle(multi, e);
            curl_easy_cleanup(e);
        }
        curl_multi_cleanup(multi);
        for (CURLU* u : parsed_urls) curl_url_cleanup(u);
    }

    void start_batch() {
        started = 0;
        done = 0;
        for (CURL* e : easies) {
            curl_multi_add_handle(multi, e);
            ++started;
        }
    }
    [[nodiscard]] bool batch_done() const { return done >= batch; }
    // Reads the finished transfers and starts the next ones on their handles.
    void collect() {
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL* e = msg->easy_handle;
            long status = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
            failed = failed || msg->data.result != CURLE_OK || status != 200;
            if (reads) read_outcome(e);
            curl_multi_remove_handle(multi, e);
            ++done;
            if (keeps) {
                void* k = nullptr;
                curl_easy_getinfo(e, CURLINFO_PRIVATE, &k);
                auto& what = *static_cast<kept*>(k);
                failed = failed || what.head.empty() || what.body != answer;
                what.head.clear();
                what.body.clear();
            }
            if (started < batch) {
                curl_multi_add_handle(multi, e);
                ++started;
            }
        }
    }
};

// One batch through the raw perform loop.
void run_perform_batch(raw_transfers& t) {
    t.start_batch();
    while (!t.batch_done()) {
        int running = 0;
        curl_multi_perform(t.multi, &running);
        t.collect();
        if (!t.batch_done()) curl_multi_poll(t.multi, nullptr, 0, 1000, nullptr);
    }
}

void raw_multi(benchmark::State& state, const std::string& kind, int round) {
    raw_transfers t({.limits = kind == "baseline_raw_multi_64_limits",
                     .parsed_url = kind == "baseline_raw_multi_64_parsed_url"});
    time_batches(state, kind, round, [&] { run_perform_batch(t); }, [&] { return t.failed; }, "raw multi: a request failed");
}

// The same transfers driven the way an event loop drives libcurl, without
// Asio or resil: curl_multi_socket_action on epoll readiness, libcurl's
// socket and timer callbacks feeding one epoll set and one timeout. It
// shows what libcurl's socket interface costs by itself, apart from the
// raw curl_multi_perform loop. The loop makes as few epoll_ctl calls as it
// can: a connection's socket (opened and closed through the loop's
// callbacks) that libcurl stops watching between two transfers
// (CURL_POLL_REMOVE) stays in the epoll set with its interest, so the next
// transfer's CURL_POLL_IN costs no system call; a readiness libcurl does not
// want (the server closed an idle connection) is silenced then. Sockets
// libcurl opens and closes by itself leave the set at CURL_POLL_REMOVE.
struct socket_loop {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    std::optional<steady::time_point> due;  // libcurl's timer, as an instant
    // Per descriptor number: the interest the epoll set holds (none: not in
    // it), the interest libcurl asked for last (0: not watched), and whether
    // the loop's own callbacks open and close it.
    static constexpr std::uint32_t none = ~0u;
    struct descriptor {
        std::uint32_t registered = none;
        std::uint32_t wanted = 0;
        bool ours = false;
    };
    std::vector<descriptor> descriptors;
    // The client's reads when libcurl lets go of a connection's socket
    // (raw_setup::client_options).
    bool reads_at_remove = false;
    socket_loop() = default;
    socket_loop(const socket_loop&) = delete;
    socket_loop& operator=(const socket_loop&) = delete;
    ~socket_loop() { close(epoll); }

    descriptor& at(curl_socket_t s) {
        const auto i = static_cast<std::size_t>(s);
        if (descriptors.size() <= i) descriptors.resize(i + 1);
        return descriptors[i];
    }
    void set_interest(curl_socket_t s, descriptor& d, std::uint32_t events) {
        if (d.registered == events) return;
        epoll_event ev{};
        ev.events = events;
        ev.data.fd = s;
        if (epoll_ctl(epoll, d.registered == none ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, s, &ev) == 0) d.registered = events;
    }
    static int on_socket(CURL* easy, curl_socket_t s, int what, void* user, void*) {
        auto& loop = *static_cast<socket_loop*>(user);
        auto& d = loop.at(s);
        if (what == CURL_POLL_REMOVE) {
            if (loop.reads_at_remove && easy) {
                void* p = nullptr;
                if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &p) == CURLE_OK && p) read_connection(easy);
            }
            d.wanted = 0;
            if (!d.ours) {  // may be closed without on_close
                epoll_ctl(loop.epoll, EPOLL_CTL_DEL, s, nullptr);
                d.registered = none;
            }
            return 0;
        }
        d.wanted = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
        loop.set_interest(s, d, d.wanted);
        return 0;
    }
    static curl_socket_t on_open(void* user, curlsocktype, curl_sockaddr* address) {
        const curl_socket_t s = socket(address->family, address->socktype, address->protocol);
        if (s != CURL_SOCKET_BAD) static_cast<socket_loop*>(user)->at(s) = {.ours = true};  // a reused number: not in the set
        return s;
    }
    // Closing a descriptor takes it out of the epoll set: forget it before
    // the number can be reused.
    static int on_close(void* user, curl_socket_t s) {
        static_cast<socket_loop*>(user)->at(s) = {};
        return close(s);
    }
    // Whether libcurl wants this readiness (every descriptor in the set has
    // its entry); silences a descriptor it does not watch.
    bool wants(curl_socket_t s) {
        auto& d = descriptors[static_cast<std::size_t>(s)];
        if (d.wanted != 0) return true;
        set_interest(s, d, 0);
        return false;
    }
    static int on_timer(CURLM*, long ms, void* user) {
        auto& due = static_cast<socket_loop*>(user)->due;
        if (ms < 0)
            due.reset();
        else
            due = steady::now() + std::chrono::milliseconds{ms};
        return 0;
    }
    // Milliseconds epoll may wait from `now`: until libcurl's timer is due
    // (rounded up; 0 when it is), 1 s without one.
    [[nodiscard]] int wait_ms(steady::time_point now) const {
        if (!due) return 1000;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*due - now).count();
        return static_cast<int>(std::clamp<long long>(left, 0, 1000));
    }
};

// The raw transfers on the socket loop: the handles' socket callbacks and
// the multi's timer feed `loop`.
struct socket_action_calls {
    socket_loop loop;  // outlives the transfers, whose cleanup reports their sockets' removal
    raw_transfers t;
    int running = 0;
    bool broken = loop.epoll < 0;

    explicit socket_action_calls(raw_setup setup = {}) : t(setup) {
        loop.reads_at_remove = setup.client_callbacks && setup.client_options;
        curl_multi_setopt(t.multi, CURLMOPT_SOCKETFUNCTION, &socket_loop::on_socket);
        curl_multi_setopt(t.multi, CURLMOPT_SOCKETDATA, &loop);
        curl_multi_setopt(t.multi, CURLMOPT_TIMERFUNCTION, &socket_loop::on_timer);
        curl_multi_setopt(t.multi, CURLMOPT_TIMERDATA, &loop);
        for (CURL* e : t.easies) {
            curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &socket_loop::on_open);
            curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &loop);
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &socket_loop::on_close);
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, &loop);
        }
    }
    [[nodiscard]] bool failed() const { return t.failed || broken; }

    void run_batch() {
        t.start_batch();
        epoll_event events[64];
        while (!t.batch_done() && !broken) {
            const int wait = loop.wait_ms(steady::now());  // one clock read per turn
            if (wait == 0 && loop.due) {
                loop.due.reset();
                curl_multi_socket_action(t.multi, CURL_SOCKET_TIMEOUT, 0, &running);
                t.collect();
                continue;
            }
            const int n = epoll_wait(loop.epoll, events, 64, wait);
            if (n < 0) {
                broken = errno != EINTR;
                continue;
            }
            for (int i = 0; i < n; ++i) {
                if (!loop.wants(events[i].data.fd)) continue;
                const int flags = ((events[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                                  ((events[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                                  ((events[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
                curl_multi_socket_action(t.multi, events[i].data.fd, flags, &running);
            }
            t.collect();
        }
    }
};

void raw_socket_action(benchmark::State& state, const std::string& kind, int round) {
    const bool work = kind.ends_with("_client_work");
    const bool same = kind.ends_with("_same_work");
    socket_action_calls calls(same   ? same_work
                              : work ? raw_setup{.limits = true, .parsed_url = true, .client_callbacks = true}
                                     : raw_setup{});
    if (calls.broken) {
        state.SkipWithError("raw socket_action: epoll_create1 failed");
        return;
    }
    time_batches(state, kind, round, [&] { calls.run_batch(); }, [&] { return calls.failed(); },
                 "raw socket_action: a request or epoll_wait failed");
}

// The asynchronous client keeping 64 calls in flight on one io_context.
struct async_calls {
    asio::io_context io;
    resil::curl::async_client http{io};
    resil::curl::request req = resil::curl::request::get(url);
    std::vector<resil::context> contexts = std::vector<resil::context>(in_flight);
    bool failed = false;
    int started = 0;
    int done = 0;
    // Each completion starts the next call on its context, as a server's
    // handlers would: 64 in flight until the batch is out.
    struct next_call {
        async_calls* calls;
        resil::context* ctx;
        void start() const {
            ++calls->started;
            *ctx = resil::context{};
            ctx->set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
            calls->http.async_perform(calls->req, *ctx, *this);
        }
        void operator()(resil::curl::response r) const {
            ++calls->done;
            calls->failed = calls->failed || !r.ok();
            calls->http.recycle(std::move(r));
            if (calls->started < batch) start();
        }
    };
    void run_batch() {
        started = 0;
        done = 0;
        for (auto& ctx : contexts) next_call{this, &ctx}.start();
        // The io_context stops whenever it runs out of work (between batches).
        while (done < batch) {
            if (io.stopped()) io.restart();
            io.run_one();
        }
    }
};

void resil_async(benchmark::State& state, const std::string& kind, int round) {
    async_calls calls;
    time_batches(state, kind, round, [&] { calls.run_batch(); }, [&] { return calls.failed; },
                 "resil async client: a request failed");
}

#if RESIL_BENCH_HAVE_BEAST
// The same GETs through Boost.Beast (peers/beast_calls.hpp), one thread.
struct beast_calls {
    resil_bench::beast_calls calls{nginx->port(), in_flight, batch, answer};
    bool failed = calls.failed();
    void run_batch() {
        calls.run_batch();
        failed = calls.failed();
    }
};

void beast_async(benchmark::State& state, const std::string& kind, int round) {
    beast_calls calls;
    time_batches(state, kind, round, [&] { calls.run_batch(); }, [&] { return calls.failed; },
                 "Boost.Beast: a request failed");
}
#endif

// The first goal's ratio with less drift between its sides: the perform
// loop, the bare socket_action loop and the asynchronous client kept side by
// side (each with its own connections), a turn of each in a row, in orders
// that change from turn to turn (take_turns). On a machine whose speed
// changes from one tenth of a second to the next (other guests, steal),
// turns a few tens of milliseconds apart see nearly the same machine, where
// the rounds above are 0.3 s apart. A turn is 4 batches: with one, each
// side starts from caches the others filled, which costs the side with more
// code (the client) several percent. Reported: medians over the turns of
// the rate ratios (equal work: the inverse ratio of their times) and of the
// CPU time per GET ratios.
struct turn_cost {
    double seconds = 0;
    double cpu_seconds = 0;
    turn_cost& operator+=(const turn_cost& other) {
        seconds += other.seconds;
        cpu_seconds += other.cpu_seconds;
        return *this;
    }
};
struct turn_ratios {
    std::vector<double> rate;
    std::vector<double> cpu;
    void add(const turn_cost& a, const turn_cost& b) {
        if (a.seconds > 0) rate.push_back(b.seconds / a.seconds);
        if (b.cpu_seconds > 0) cpu.push_back(a.cpu_seconds / b.cpu_seconds);
    }
};
constexpr int turn_batches = 4;
turn_ratios async_to_perform;
turn_ratios async_to_socket_action;
turn_ratios socket_action_to_perform;
// With the URL parsed once everywhere (side_by_side_parsed_url).
turn_ratios async_to_parsed_url;
turn_ratios async_to_parsed_url_callbacks;
turn_ratios async_to_parsed_socket_action_callbacks;
turn_ratios parsed_callbacks_to_parsed_url;
turn_ratios parsed_socket_action_callbacks_to_parsed_callbacks;
turn_ratios parsed_socket_action_callbacks_to_parsed_url;

// The orders of the sides' turns, one round after another, in cycles in
// which each side runs right after each other side equally often, the
// step from one round to the next included, and never right after itself
// (a side runs faster after some sides than after others: their code is
// still in the caches). Three sides: the rotations and the reversed
// rotations, each side also first equally often. Four: three rounds in
// which each ordered pair of sides is one right after the other once.
constexpr std::array<std::array<std::size_t, 3>, 6> orders3 = {
    {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}}};
constexpr std::array<std::array<std::size_t, 4>, 3> orders4 = {{{0, 1, 2, 3}, {0, 2, 1, 3}, {1, 0, 3, 2}}};

// One setup's turn: `turn_batches` batches, their wall and CPU time.
turn_cost timed_turn(const std::function<void()>& run_batch) {
    const double cpu0 = process_cpu_seconds();
    const auto t0 = steady::now();
    for (int batches = 0; batches < turn_batches; ++batches) run_batch();
    return {std::chrono::duration<double>(steady::now() - t0).count(), process_cpu_seconds() - cpu0};
}

// The sides take turns, one iteration a round of turns, until Google
// Benchmark has enough; `record` gets each round's costs. Stops at the
// first failed request (`failed`), with `record`'s figures to be forgotten
// by the caller.
template <std::size_t N, std::size_t K, class Failed, class Record>
bool take_turns(benchmark::State& state, const std::array<std::function<void()>, N>& sides,
                const std::array<std::array<std::size_t, N>, K>& orders, const Failed& failed, const Record& record) {
    // Each connects, in the cycle's last order: the first round's first
    // side then follows the side it follows in every later cycle.
    for (const std::size_t side : orders.back()) sides[side]();
    std::array<turn_cost, N> cost;
    std::size_t next = 0;
    for (auto _ : state) {
        for (const std::size_t side : orders[next]) cost[side] = timed_turn(sides[side]);
        next = (next + 1) % K;
        if (failed()) return false;
        record(cost);
    }
    return true;
}

void side_by_side(benchmark::State& state) {
    // Only the last call's turns are reported (Google Benchmark calls this a
    // few times to size its run; the last call is the one it reports).
    const auto all = {&async_to_perform, &async_to_socket_action, &socket_action_to_perform};
    for (auto* r : all) *r = {};
    raw_transfers perform;
    socket_action_calls socket_action;
    async_calls calls;
    if (socket_action.broken) {
        state.SkipWithError("side by side: epoll_create1 failed");
        return;
    }
    const std::array<std::function<void()>, 3> sides = {[&] { run_perform_batch(perform); },
                                                        [&] { socket_action.run_batch(); },
                                                        [&] { calls.run_batch(); }};
    const auto failed = [&] { return perform.failed || socket_action.failed() || calls.failed; };
    const bool ran = take_turns(state, sides, orders3, failed, [](const std::array<turn_cost, 3>& cost) {
        async_to_perform.add(cost[2], cost[0]);
        async_to_socket_action.add(cost[2], cost[1]);
        socket_action_to_perform.add(cost[1], cost[0]);
    });
    if (!ran) {
        for (auto* r : all) *r = {};
        state.SkipWithError("side by side: a request failed");
    }
}

// The client against raw loops that hand libcurl the URL parsed once, as
// the client does, side by side as above: the perform loop bare; the
// perform loop with the main per-transfer work the client asks of libcurl
// (its limits, the header lines and body kept, a callback before each
// send: raw_setup); and the socket_action loop with that work too. The ratios:
// the client against the bare loop (all it costs), against the loops that
// ask libcurl for the same work (through perform, then through libcurl's
// socket interface, as the client does: what is left is the client's own
// work per call), and what that work and that interface cost libcurl.
// Ratios are of each side's costs summed over a cycle of orders4, in which
// each side ran once right after each other one: turn by turn they depend
// on which side ran just before.
void side_by_side_parsed_url(benchmark::State& state) {
    const auto all = {&async_to_parsed_url, &async_to_parsed_url_callbacks, &async_to_parsed_socket_action_callbacks,
                      &parsed_callbacks_to_parsed_url, &parsed_socket_action_callbacks_to_parsed_callbacks,
                      &parsed_socket_action_callbacks_to_parsed_url};
    for (auto* r : all) *r = {};
    raw_transfers perform({.parsed_url = true});
    raw_transfers perform_callbacks({.limits = true, .parsed_url = true, .client_callbacks = true});
    socket_action_calls socket_action({.limits = true, .parsed_url = true, .client_callbacks = true});
    async_calls calls;
    if (socket_action.broken) {
        state.SkipWithError("side by side, parsed URL: epoll_create1 failed");
        return;
    }
    const std::array<std::function<void()>, 4> sides = {
        [&] { run_perform_batch(perform); }, [&] { run_perform_batch(perform_callbacks); },
        [&] { socket_action.run_batch(); }, [&] { calls.run_batch(); }};
    const auto failed = [&] {
        return perform.failed || perform_callbacks.failed || socket_action.failed() || calls.failed;
    };
    std::array<turn_cost, 4> sum{};
    std::size_t rounds_summed = 0;
    const auto record = [&](const std::array<turn_cost, 4>& cost) {
        for (std::size_t side = 0; side < sum.size(); ++side) sum[side] += cost[side];
        if (++rounds_summed < orders4.size()) return;
        async_to_parsed_url.add(sum[3], sum[0]);
        async_to_parsed_url_callbacks.add(sum[3], sum[1]);
        async_to_parsed_socket_action_callbacks.add(sum[3], sum[2]);
        parsed_callbacks_to_parsed_url.add(sum[1], sum[0]);
        parsed_socket_action_callbacks_to_parsed_callbacks.add(sum[2], sum[1]);
        parsed_socket_action_callbacks_to_parsed_url.add(sum[2], sum[0]);
        sum = {};
        rounds_summed = 0;
    };
    const bool ran = take_turns(state, sides, orders4, failed, record);
    if (!ran) {
        for (auto* r : all) *r = {};
        state.SkipWithError("side by side, parsed URL: a request failed");
    }
}

#if RESIL_BENCH_HAVE_BEAST
// The goal's ratio (the client against a raw socket_action loop doing the
// same libcurl work: the URL parsed once, the client's limits, head and body
// kept, a callback before each send) with Boost.Beast beside both, the
// three alive together in turns of 4 batches; each ratio of the two sides'
// costs summed over a cycle of orders3's six rounds, in which each side ran
// right after each other one equally often.
turn_ratios async_to_socket_action_work;
turn_ratios beast_to_socket_action_work;
turn_ratios async_to_beast;

void side_by_side_beast(benchmark::State& state) {
    const auto all = {&async_to_socket_action_work, &beast_to_socket_action_work, &async_to_beast};
    for (auto* r : all) *r = {};
    socket_action_calls socket_action(same_work);
    async_calls calls;
    beast_calls beast;
    if (socket_action.broken || beast.failed) {
        state.SkipWithError("side by side with Beast: epoll_create1 or a connection failed");
        return;
    }
    const std::array<std::function<void()>, 3> sides = {
        [&] { socket_action.run_batch(); }, [&] { calls.run_batch(); }, [&] { beast.run_batch(); }};
    const auto failed = [&] { return socket_action.failed() || calls.failed || beast.failed; };
    std::array<turn_cost, 3> sum{};
    std::size_t rounds_summed = 0;
    const auto record = [&](const std::array<turn_cost, 3>& cost) {
        for (std::size_t side = 0; side < sum.size(); ++side) sum[side] += cost[side];
        if (++rounds_summed < orders3.size()) return;
        async_to_socket_action_work.add(sum[1], sum[0]);
        beast_to_socket_action_work.add(sum[2], sum[0]);
        async_to_beast.add(sum[1], sum[2]);
        sum = {};
        rounds_summed = 0;
    };
    if (!take_turns(state, sides, orders3, failed, record)) {
        for (auto* r : all) *r = {};
        state.SkipWithError("side by side with Beast: a request failed");
    }
}
#endif

void resil_blocking_threads(benchmark::State& state, const std::string& kind, int round) {
    // Threads made once per run; each batch hands each thread its share.
    std::mutex m;
    std::condition_variable cv;
    int generation = 0;
    int finished = 0;
    bool stop = false;
    std::atomic<bool> failed{false};
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i)
        workers.emplace_back([&] {
            resil::curl::client http;
            const auto req = resil::curl::request::get(url);
            auto r = http.perform(req);
            int seen = 0;
            for (;;) {
                {
                    std::unique_lock lock(m);
                    cv.wait(lock, [&] { return stop || generation != seen; });
                    if (stop) return;
                    seen = generation;
                }
                for (int n = 0; n < batch / threads; ++n) {
                    resil::context ctx;
                    ctx.set_timeouts({.connect = 1s, .read = 1s, .total = 2s});
                    http.perform(req, ctx, r);
                    if (!r.ok()) failed = true;
                }
                {
                    std::lock_guard lock(m);
                    ++finished;
                }
                cv.notify_all();
            }
        });
    const auto run_batch = [&] {
        std::unique_lock lock(m);
        finished = 0;
        ++generation;
        cv.notify_all();
        cv.wait(lock, [&] { return finished == threads; });
    };
    time_batches(state, kind, round, run_batch, [&] { return bool(failed); }, "resil blocking clients: a request failed");
    {
        std::lock_guard lock(m);
        stop = true;
    }
    cv.notify_all();
    for (auto& w : workers) w.join();
}

// Memory per call in flight beyond libcurl's own: the heap in use
// (mallinfo2: every malloc of the process, libcurl's included) of a raw
// socket_action loop doing the client's libcurl work with its 64 transfers
// in flight, against the client's with 64 calls in flight; each from
// before it was built, after a first batch (connections made, buffers
// grown). What is left per call is the client's own: its pooled transfer
// (the easy handle's companion state, timer, response buffers and field
// index), the call's completion, a spare response.
void report_memory() {
    const auto heap = [] { return mallinfo2().uordblks; };
    const std::size_t raw_before = heap();
    std::size_t raw_in_flight = 0;
    {
        socket_action_calls raw(same_work);
        raw.run_batch();
        raw.t.start_batch();
        raw_in_flight = heap() - raw_before;
        raw.t.done = batch;  // the handles stay in the multi handle; freed with it
    }
    const std::size_t client_before = heap();
    std::size_t client_in_flight = 0;
    std::size_t client_idle = 0;
    {
        async_calls calls;
        calls.run_batch();
        client_idle = heap() - client_before;
        calls.started = 0;
        calls.done = 0;
        for (auto& ctx : calls.contexts) async_calls::next_call{&calls, &ctx}.start();
        client_in_flight = heap() - client_before;
        while (calls.done < batch) {
            if (calls.io.stopped()) calls.io.restart();
            calls.io.run_one();
        }
    }
    const auto per_call = [](std::size_t bytes) { return static_cast<double>(bytes) / in_flight; };
    std::printf("Heap in use per call, %d in flight (mallinfo2, libcurl's included): raw socket_action loop with the "
                "client's libcurl work %.0f B, resil_async_64 %.0f B (%.0f B idle between batches): %.0f B per call "
                "beyond the raw loop; sizeof: async_transfer %zu B, response %zu B\n",
                in_flight, per_call(raw_in_flight), per_call(client_in_flight), per_call(client_idle),
                per_call(client_in_flight) - per_call(raw_in_flight), sizeof(resil::curl::detail::async_transfer),
                sizeof(resil::curl::response));
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        nginx = std::make_unique<resil_test::nginx_server>(R"(location /ok { return 200 "hello\n"; })");
    } catch (const std::exception& e) {
        std::printf("bench_curl_async: skipped: %s\n", e.what());
        return 0;
    }
    url = nginx->url("/ok");
    // Pins the calling thread, before any other exists: the client threads
    // started later inherit it. nginx runs one single-threaded process.
    if (const char* pin = std::getenv("RESIL_BENCH_PIN"); pin && std::string_view(pin) == "1") {
        cpu_set_t client;
        cpu_set_t server;
        CPU_ZERO(&client);
        CPU_ZERO(&server);
        CPU_SET(0, &client);
        CPU_SET(1, &server);
        if (sched_setaffinity(0, sizeof client, &client) != 0 || sched_setaffinity(nginx->pid(), sizeof server, &server) != 0) {
            std::printf("bench_curl_async: RESIL_BENCH_PIN=1 needs CPUs 0 and 1\n");
            return 1;
        }
        std::printf("bench_curl_async: this process on CPU 0, nginx on CPU 1\n");
    }
    if (const char* memory = std::getenv("RESIL_BENCH_MEMORY"); !memory || std::string_view(memory) != "0")
        report_memory();
    for (int round = 1; round <= rounds; ++round) {
        const auto suffix = "/round:" + std::to_string(round);
        benchmark::RegisterBenchmark(("get64/baseline_raw_multi_64" + suffix).c_str(), raw_multi,
                                     std::string("baseline_raw_multi_64"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/baseline_raw_multi_64_limits" + suffix).c_str(), raw_multi,
                                     std::string("baseline_raw_multi_64_limits"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/baseline_raw_multi_64_parsed_url" + suffix).c_str(), raw_multi,
                                     std::string("baseline_raw_multi_64_parsed_url"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/baseline_raw_socket_action_64" + suffix).c_str(), raw_socket_action,
                                     std::string("baseline_raw_socket_action_64"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/baseline_raw_socket_action_64_client_work" + suffix).c_str(),
                                     raw_socket_action, std::string("baseline_raw_socket_action_64_client_work"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/baseline_raw_socket_action_64_same_work" + suffix).c_str(),
                                     raw_socket_action, std::string("baseline_raw_socket_action_64_same_work"), round)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("get64/resil_async_64" + suffix).c_str(), resil_async,
                                     std::string("resil_async_64"), round)
            ->UseRealTime()
            ->MinTime(0.3);
#if RESIL_BENCH_HAVE_BEAST
        benchmark::RegisterBenchmark(("get64/beast_64" + suffix).c_str(), beast_async, std::string("beast_64"), round)
            ->UseRealTime()
            ->MinTime(0.3);
#endif
        benchmark::RegisterBenchmark(("get64/resil_blocking_8_threads" + suffix).c_str(), resil_blocking_threads,
                                     std::string("resil_blocking_8_threads"), round)
            ->UseRealTime()
            ->MinTime(0.3);
    }
#if RESIL_BENCH_HAVE_BEAST
    benchmark::RegisterBenchmark("get64/side_by_side_beast", side_by_side_beast)->UseRealTime()->MinTime(12.0);
#endif
    benchmark::RegisterBenchmark("get64/side_by_side", side_by_side)->UseRealTime()->MinTime(6.0);
    benchmark::RegisterBenchmark("get64/side_by_side_parsed_url", side_by_side_parsed_url)->UseRealTime()->MinTime(12.0);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (!rates["baseline_raw_multi_64"].empty()) {
        const double raw = median("baseline_raw_multi_64");
        const double raw_limits = median("baseline_raw_multi_64_limits");
        const double raw_parsed = median("baseline_raw_multi_64_parsed_url");
        const double socket_action = median("baseline_raw_socket_action_64");
        const double async = median("resil_async_64");
        const double blocking = median("resil_blocking_8_threads");
        const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        std::printf("\nGETs to a local nginx, batches of %d; medians of %d interleaved rounds\n", batch, rounds);
        std::printf("  %-33s %9.0f req/s\n", "baseline_raw_multi_64", raw);
        std::printf("  %-33s %9.0f req/s  %.3fx raw multi\n", "baseline_raw_multi_64_limits", raw_limits,
                    ratio(raw_limits, raw));
        if (raw_parsed > 0)
            std::printf("  %-33s %9.0f req/s  %.3fx raw multi\n", "baseline_raw_multi_64_parsed_url", raw_parsed,
                        ratio(raw_parsed, raw));
        std::printf("  %-33s %9.0f req/s  %.3fx raw multi\n", "baseline_raw_socket_action_64", socket_action,
                    ratio(socket_action, raw));
        std::printf(
            "  %-33s %9.0f req/s  %.3fx raw multi, %.3fx raw multi with limits, %.3fx raw multi with a parsed URL, "
            "%.3fx raw socket_action, %.3fx 8 blocking threads\n",
            "resil_async_64", async, ratio(async, raw), ratio(async, raw_limits), ratio(async, raw_parsed),
            ratio(async, socket_action), ratio(async, blocking));
        std::printf("  %-33s %9.0f req/s  %.3fx raw multi\n", "resil_blocking_8_threads", blocking, ratio(blocking, raw));
        const double raw_cpu = median("baseline_raw_multi_64", cpu_per_get);
        const double raw_limits_cpu = median("baseline_raw_multi_64_limits", cpu_per_get);
        const double raw_parsed_cpu = median("baseline_raw_multi_64_parsed_url", cpu_per_get);
        const double socket_action_cpu = median("baseline_raw_socket_action_64", cpu_per_get);
        const double async_cpu = median("resil_async_64", cpu_per_get);
        const double blocking_cpu = median("resil_blocking_8_threads", cpu_per_get);
        std::printf("CPU time of this process per GET (user + system), medians:\n");
        std::printf("  %-33s %9.2f us\n", "baseline_raw_multi_64", raw_cpu);
        std::printf("  %-33s %9.2f us  %.3fx raw multi\n", "baseline_raw_multi_64_limits", raw_limits_cpu,
                    ratio(raw_limits_cpu, raw_cpu));
        if (raw_parsed_cpu > 0)
            std::printf("  %-33s %9.2f us  %.3fx raw multi\n", "baseline_raw_multi_64_parsed_url", raw_parsed_cpu,
                        ratio(raw_parsed_cpu, raw_cpu));
        std::printf("  %-33s %9.2f us  %.3fx raw multi\n", "baseline_raw_socket_action_64", socket_action_cpu,
                    ratio(socket_action_cpu, raw_cpu));
        std::printf(
            "  %-33s %9.2f us  %.3fx raw multi, %.3fx raw multi with limits, %.3fx raw multi with a parsed URL, "
            "%.3fx raw socket_action, %.3fx 8 blocking threads\n",
            "resil_async_64", async_cpu, ratio(async_cpu, raw_cpu), ratio(async_cpu, raw_limits_cpu),
            ratio(async_cpu, raw_parsed_cpu), ratio(async_cpu, socket_action_cpu), ratio(async_cpu, blocking_cpu));
        std::printf("  %-33s %9.2f us  %.3fx raw multi\n", "resil_blocking_8_threads", blocking_cpu,
                    ratio(blocking_cpu, raw_cpu));
    }
    // Lower quartile, median, upper quartile (zeros when empty).
    const auto quartiles = [](const std::vector<double>& v) {
        return std::array<double, 3>{resil_bench::quantile(v, 0.25), resil_bench::median(v),
                                     resil_bench::quantile(v, 0.75)};
    };
    const auto row = [&](const char* name, const turn_ratios& r) {
        const auto rate = quartiles(r.rate);
        const auto cpu = quartiles(r.cpu);
        std::printf("  %-50s req/s %.3fx [%.3f, %.3f]  CPU per GET %.3fx [%.3f, %.3f]\n", name, rate[1], rate[0],
                    rate[2], cpu[1], cpu[0], cpu[2]);
    };
    if (!async_to_perform.rate.empty()) {
        std::printf("Side by side, %d batches of each in turn (%zu turns): medians [quartiles]\n", turn_batches,
                    async_to_perform.rate.size());
        row("resil_async_64 / raw multi", async_to_perform);
        row("resil_async_64 / raw socket_action", async_to_socket_action);
        row("raw socket_action / raw multi", socket_action_to_perform);
    }
    if (!async_to_parsed_url.rate.empty()) {
        std::printf("Side by side with the URL parsed once everywhere, %d batches of each in turn, ratios of %zu rounds "
                    "of turns each (%zu):\n",
                    turn_batches, orders4.size(), async_to_parsed_url.rate.size());
        row("resil_async_64 / raw multi", async_to_parsed_url);
        row("resil_async_64 / raw multi, client's libcurl work", async_to_parsed_url_callbacks);
        row("resil_async_64 / raw socket_action, the same work", async_to_parsed_socket_action_callbacks);
        row("raw multi, client's libcurl work / raw multi", parsed_callbacks_to_parsed_url);
        row("raw socket_action / raw multi, both with that work", parsed_socket_action_callbacks_to_parsed_callbacks);
        row("raw socket_action with that work / raw multi", parsed_socket_action_callbacks_to_parsed_url);
    }
#if RESIL_BENCH_HAVE_BEAST
    if (!async_to_socket_action_work.rate.empty()) {
        std::printf("Side by side with Boost.Beast, the URL parsed once, %d batches of each in turn, ratios of %zu rounds "
                    "of turns each (%zu):\n",
                    turn_batches, orders3.size(), async_to_socket_action_work.rate.size());
        row("resil_async_64 / raw socket_action, client's libcurl work", async_to_socket_action_work);
        row("beast_64 / raw socket_action, client's libcurl work", beast_to_socket_action_work);
        row("resil_async_64 / beast_64", async_to_beast);
    }
    if (!cpu_per_get["beast_64"].empty())
        std::printf("Rounds: CPU per GET, medians: beast_64 %.2f us, baseline_raw_socket_action_64_client_work %.2f us, "
                    "baseline_raw_socket_action_64_same_work %.2f us, resil_async_64 %.2f us\n",
                    median("beast_64", cpu_per_get), median("baseline_raw_socket_action_64_client_work", cpu_per_get),
                    median("baseline_raw_socket_action_64_same_work", cpu_per_get), median("resil_async_64", cpu_per_get));
#endif
    nginx.reset();
    return 0;
}

#else  // no libcurl or Asio: nothing to compare

int main() {
    std::printf("bench_curl_async: skipped: libcurl or standalone Asio was not found at configure time\n");
    return 0;
}

#endif
