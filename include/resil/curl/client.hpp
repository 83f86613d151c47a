// resil/curl/client.hpp — real HTTP transfers under the context's deadline:
// the timeout triad mapped onto libcurl, cancellation through the stop token,
// idempotency keys and the deadline header added for you.
//
//   resil::curl::client http;                        // one per thread; keeps connections alive
//   auto pipe = resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{},
//                               resil::timeout_policy{{.connect = 20ms, .read = 100ms, .total = 150ms}});
//   auto out = pipe([&](resil::context& ctx) {
//       return http.perform(resil::curl::request::post(url, body), ctx);   // keyed, same key every attempt
//   });
//
// Per attempt, `perform`:
//  1. tells the context whether the operation is idempotent (the request's
//     method or explicit flag) and, for a non-idempotent request, takes the
//     context's idempotency key (made once per call) and sends it as
//     `Idempotency-Key: "<uuid>"`, so the retry policy may retry an ambiguous
//     failure — and the server can deduplicate it;
//  2. takes ctx.attempt_timeouts() (each already clamped to the deadline),
//     bounded by client_options::limits; with no time left (0 ms) or the stop
//     token already fired it returns at once, with no I/O;
//  3. drives the transfer through libcurl's multi interface: connect and total
//     are libcurl's CURLOPT_CONNECTTIMEOUT_MS and CURLOPT_TIMEOUT_MS; the
//     read-inactivity limit is resil's own timer (libcurl has none below a
//     second), checked every time curl_multi_poll wakes, which it does at that
//     limit at the latest; a stop request wakes it at once (curl_multi_wakeup);
//  4. returns a response saying what happened and whether the request may have
//     reached the server (resil/curl/response.hpp), which resil::curl::classify
//     judges (resil/curl/classification.hpp).
//
// Thread-safety: a client is NOT thread-safe. Use one per thread (e.g. a
// thread_local or one per worker); a concurrent second call on the same client
// throws std::logic_error instead of corrupting libcurl's state. Different
// clients may be used in parallel. The stop token may be fired from any thread.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "../clock.hpp"
#include "../context.hpp"
#include "../deadline.hpp"
#include "../idempotency_key.hpp"
#include "../timeouts.hpp"
#include "detail/handles.hpp"
#include "detail/text.hpp"
#include "request.hpp"
#include "response.hpp"

namespace resil::curl {

/// How the client sends the operation's idempotency key.
enum class key_header_format : std::uint8_t {
    quoted,    ///< `Idempotency-Key: "8e03978e-..."`, an RFC 9651 string, as the IETF draft specifies
    unquoted,  ///< `Idempotency-Key: 8e03978e-...`, as some providers document it
    none,      ///< never add the header (a caller may still add its own)
};

/// Options of a client; the defaults are the documented ones.
struct client_options {
    /// Upper bounds of every attempt, applied on top of the context's
    /// timeouts (the smaller wins), so a call without a timeout policy or a
    /// deadline still cannot hang: a server trickling a byte a minute is cut
    /// off by the total. Default: connect 10 s, read (silence) 60 s, total 5 min.
    resil::timeouts limits{std::chrono::seconds{10}, std::chrono::seconds{60}, std::chrono::minutes{5}};
    /// How to send the idempotency key of non-idempotent requests. Default quoted.
    key_header_format idempotency_key = key_header_format::quoted;
    /// Send what is left of the attempt's budget, min(deadline, total limit),
    /// in resil::timeout_header_name (grpc-timeout) so the next hop can stop
    /// when this one does. Default off: not every server should learn it.
    bool propagate_deadline = false;
    /// Bodies larger than this end the transfer (transport_status::body_too_large,
    /// permanent). Default 64 MiB; must be positive.
    std::size_t max_body_bytes = std::size_t{64} << 20;
    /// Header fields (and trailers) larger than this in total end the
    /// transfer (transport_status::headers_too_large, permanent), so a server
    /// sending endless fields cannot grow memory. Default 256 KiB; must be positive.
    std::size_t max_header_bytes = std::size_t{256} << 10;
    /// The millisecond pushback header read from responses; empty to ignore
    /// pushback. Default grpc-retry-pushback-ms.
    std::string pushback_header = std::string(default_pushback_header);
    /// The User-Agent sent; empty (the default) sends none, as libcurl does.
    /// A request's own User-Agent header wins. (libcurl formats this header
    /// anew for every transfer: about 1 µs each on a small server.)
    std::string user_agent{};
};

class client {
public:
    /// Creates the libcurl handles. Throws std::invalid_argument for invalid
    /// options, std::runtime_error when libcurl cannot be initialised.
    explicit client(client_options options = {}) : options_(std::move(options)) {
        if (auto why = options_.limits.invalid_reason())
            throw std::invalid_argument("resil::curl::client: limits: " + std::string(*why));
        if (options_.max_body_bytes == 0)
            throw std::invalid_argument("resil::curl::client: max_body_bytes must be positive");
        if (options_.max_header_bytes == 0)
            throw std::invalid_argument("resil::curl::client: max_header_bytes must be positive");
        if (!options_.pushback_header.empty() && !detail::is_token(options_.pushback_header))
            throw std::invalid_argument("resil::curl::client: pushback_header must be an HTTP token, got " +
                                        detail::quote_for_error(options_.pushback_header));
        for (const char c : options_.user_agent)
            if (detail::is_forbidden_in_value(c))
                throw std::invalid_argument("resil::curl::client: user_agent contains a control character");
        state_ = std::make_unique<detail::handles>();
        configure_once();
    }

    client(client&&) noexcept = default;
    client& operator=(client&&) noexcept = default;
    ~client() = default;

    [[nodiscard]] const client_options& options() const noexcept { return options_; }

    /// One attempt of `req` under `ctx` (its deadline, timeouts, stop token
    /// and idempotency key); see the banner. Marks `ctx` idempotent when the
    /// request is, and makes its idempotency key when the request needs one.
    /// Throws std::invalid_argument when the context holds a negative timeout,
    /// std::logic_error when the client is already busy on another thread.
    /// Every transfer outcome, including failures, is a response.
    template <resil::clock Clock>
    response perform(const request& req, basic_context<Clock>& ctx) {
        auto& s = require_state();
        busy_guard guard(s.busy);

        // 1. Idempotency. The operation's key is sent with a non-idempotent
        //    request; whether this attempt may be repeated is judged from this
        //    request (not from earlier requests on the same context), and a key
        //    counts only when it was sent.
        const idempotency_key* key = nullptr;
        bool keyed = false;
        if (const auto own = req.header(idempotency_key::header_name)) {
            // The caller's own key is sent as is (the context holds it too when
            // it is a UUID). A blank one would pass for a key and let an
            // unsafe request be retried with nothing to deduplicate it.
            if (unquote(*own).empty())
                throw std::invalid_argument(
                    "resil::curl::client: the request's Idempotency-Key header is empty; give it a key or leave "
                    "the header out (the client then adds the operation's key)");
            keyed = true;
            if (auto parsed = parse_key(*own))
                if (!ctx.has_idempotency_key()) ctx.set_idempotency_key(*parsed);
        } else if (options_.idempotency_key != key_header_format::none &&
                   (!req.idempotent() || ctx.has_idempotency_key())) {
            key = &ctx.idempotency_key();
            keyed = true;
        }
        if (req.idempotent()) ctx.mark_idempotent();
        const bool repeatable = req.idempotent() || keyed;
        ctx.mark_repeatable(repeatable);

        // 2. Timeouts: the context's, clamped to the deadline, within our limits.
        //    The attempt ends at an absolute time counted from before the
        //    context clamped them, so it never ends after the deadline.
        const auto began = std::chrono::steady_clock::now();
        const resil::timeouts asked = ctx.attempt_timeouts();
        check_not_negative(asked);
        const resil::timeouts t{std::min(asked.connect, options_.limits.connect),
                                std::min(asked.read, options_.limits.read),
                                std::min(asked.total, options_.limits.total)};

        response r;
        r.set_request_traits(keyed, repeatable);
        if (ctx.stop_requested()) return not_started(std::move(r), transport_status::cancelled, CURLE_ABORTED_BY_CALLBACK);
        using std::chrono::milliseconds;
        if (t.connect <= milliseconds::zero() || t.read <= milliseconds::zero() || t.total <= milliseconds::zero())
            return not_started(std::move(r), transport_status::deadline_exceeded, CURLE_OPERATION_TIMEDOUT);

        // 3. The transfer.
        run(s, req, t, began, key, ctx.stop_token(), r);
        return r;
    }

    /// One attempt with no deadline and no retry: a fresh context, so only
    /// client_options::limits bound it. A non-idempotent request still gets a key.
    response perform(const request& req) {
        resil::context ctx;
        return perform(req, ctx);
    }

private:
    struct busy_guard {
        std::atomic<bool>& busy;
        explicit busy_guard(std::atomic<bool>& b) : busy(b) {
            if (busy.exchange(true, std::memory_order_acquire))
                throw std::logic_error(
                    "resil::curl::client: perform called while another call on this client is in progress; "
                    "use one client per thread");
        }
        busy_guard(const busy_guard&) = delete;
        busy_guard& operator=(const busy_guard&) = delete;
        ~busy_guard() { busy.store(false, std::memory_order_release); }
    };

    struct waker {
        CURLM* multi;
        void operator()() const noexcept { curl_multi_wakeup(multi); }
    };

    detail::handles& require_state() {
        if (!state_) throw std::logic_error("resil::curl::client: used after being moved from");
        return *state_;
    }

    static void check_not_negative(const resil::timeouts& t) {
        using std::chrono::milliseconds;
        const auto bad = [](const char* which, milliseconds v) {
            throw std::invalid_argument(std::string("resil::curl::client: the context's ") + which +
                                        " timeout is negative (" + std::to_string(v.count()) + " ms)");
        };
        if (t.connect < milliseconds::zero()) bad("connect", t.connect);
        if (t.read < milliseconds::zero()) bad("read", t.read);
        if (t.total < milliseconds::zero()) bad("total", t.total);
    }

    // A key field's value without its white space and RFC 9651 quotes.
    static std::string_view unquote(std::string_view value) noexcept {
        value = detail::trim_ows(value);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        return detail::trim_ows(value);
    }

    static std::optional<idempotency_key> parse_key(std::string_view value) noexcept {
        return idempotency_key::parse(unquote(value));
    }

    static response not_started(response r, transport_status why, CURLcode code) {
        r.transport_ = why;
        r.code_ = code;
        r.may_have_reached_ = false;
        return r;
    }

    // libcurl reads a timeout of 0 as "none": no_limit maps to it, and every
    // other value is at least 1 ms here.
    static long to_curl_ms(std::chrono::milliseconds v) noexcept {
        if (v == resil::timeouts::no_limit) return 0L;
        return static_cast<long>(std::min<std::chrono::milliseconds::rep>(v.count(), LONG_MAX));
    }

    void configure_once() {
        CURL* e = state_->easy;
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for DNS timeouts: threads stay safe
#if LIBCURL_VERSION_NUM >= 0x075700
        // Without it, ending a transfer during name resolution (a timeout, a
        // cancel) waits for the resolver thread: a hung DNS lookup would hold
        // the caller past every limit. The resolver thread is left to finish.
        curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
#endif
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &client::on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &state_->transfer);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &client::on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &state_->transfer);
#if LIBCURL_VERSION_NUM >= 0x075000
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &client::on_send);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, &state_->transfer);
#endif
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, state_->error.data());
        if (!options_.user_agent.empty()) curl_easy_setopt(e, CURLOPT_USERAGENT, options_.user_agent.c_str());
        state_->transfer.max_body = options_.max_body_bytes;
        state_->transfer.max_header_bytes = options_.max_header_bytes;
    }

    // libcurl calls these with each body chunk, each complete header line,
    // and before each time it sends the request (resil/curl/detail/capture.hpp).
    // Nothing may escape into C: a failure returns a short count, which
    // libcurl turns into CURLE_WRITE_ERROR.
    static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) noexcept {
        const std::size_t n = size * count;
        return detail::capture::body_bytes(*static_cast<detail::transfer_state*>(user), {data, n}) ? n : 0;
    }

    static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) noexcept {
        const std::size_t n = size * count;
        return detail::capture::header_line(*static_cast<detail::transfer_state*>(user), {data, n}) ? n : 0;
    }

    static int on_send(void* user, char*, char*, int, int) noexcept {
        return detail::capture::may_send(*static_cast<detail::transfer_state*>(user)) ? CURL_PREREQFUNC_OK
                                                                                       : CURL_PREREQFUNC_ABORT;
    }

    // Sets one option, unless an earlier one failed: the first failure is
    // kept and nothing is sent (libcurl keeps the old value of an option it
    // refuses, e.g. a URL over its 8 MB limit, and would send to that).
    struct option_setter {
        CURL* easy;
        CURLcode result = CURLE_OK;
        const char* failed = nullptr;

        template <class Value>
        void operator()(CURLoption option, Value value, const char* name) noexcept {
            if (result != CURLE_OK) return;
            result = curl_easy_setopt(easy, option, value);
            if (result != CURLE_OK) failed = name;
        }
    };

    static void set_method(detail::handles& s, const request& req, option_setter& set) {
        auto& a = s.applied;
        const std::string& m = req.method_;
        if (a.method_set && a.method == m && a.has_body == req.has_body_ &&
            (!req.has_body_ || (a.body == req.body_.data() && a.body_size == req.body_.size())))
            return;
        const auto custom = [&](std::string_view plain) { return m == plain ? nullptr : m.c_str(); };
        if (m == "HEAD" && !req.has_body_) {
            set(CURLOPT_NOBODY, 1L, "CURLOPT_NOBODY");
            set(CURLOPT_CUSTOMREQUEST, static_cast<const char*>(nullptr), "CURLOPT_CUSTOMREQUEST");
        } else if (req.has_body_) {
            set(CURLOPT_NOBODY, 0L, "CURLOPT_NOBODY");
            set(CURLOPT_POSTFIELDS, req.body_.data(), "CURLOPT_POSTFIELDS");
            set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body_.size()), "CURLOPT_POSTFIELDSIZE_LARGE");
            set(CURLOPT_CUSTOMREQUEST, custom("POST"), "CURLOPT_CUSTOMREQUEST");
        } else {
            // HTTPGET also clears NOBODY and UPLOAD; the body pointer of an
            // earlier request is dropped so nothing dangles.
            set(CURLOPT_POSTFIELDS, static_cast<const char*>(nullptr), "CURLOPT_POSTFIELDS");
            set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(-1), "CURLOPT_POSTFIELDSIZE_LARGE");
            set(CURLOPT_HTTPGET, 1L, "CURLOPT_HTTPGET");
            set(CURLOPT_CUSTOMREQUEST, custom("GET"), "CURLOPT_CUSTOMREQUEST");
        }
        if (set.result != CURLE_OK) return;
        a.method = m;
        a.has_body = req.has_body_;
        a.body = req.has_body_ ? req.body_.data() : nullptr;
        a.body_size = req.has_body_ ? req.body_.size() : 0;
        a.method_set = true;
    }

    static void set_url_and_timeouts(detail::handles& s, const request& req, const resil::timeouts& t,
                                     option_setter& set) {
        auto& a = s.applied;
        if (a.url != req.url_) {
            set(CURLOPT_URL, req.url_.c_str(), "CURLOPT_URL");
            if (set.result == CURLE_OK) a.url = req.url_;
        }
        if (const long connect = to_curl_ms(t.connect); connect != a.connect_ms) {
            set(CURLOPT_CONNECTTIMEOUT_MS, connect, "CURLOPT_CONNECTTIMEOUT_MS");
            if (set.result == CURLE_OK) a.connect_ms = connect;
        }
        if (const long total = to_curl_ms(t.total); total != a.total_ms) {
            set(CURLOPT_TIMEOUT_MS, total, "CURLOPT_TIMEOUT_MS");
            if (set.result == CURLE_OK) a.total_ms = total;
        }
        if (s.fresh_connection_next != a.fresh_connect) {
            set(CURLOPT_FRESH_CONNECT, s.fresh_connection_next ? 1L : 0L, "CURLOPT_FRESH_CONNECT");
            if (set.result == CURLE_OK) a.fresh_connect = s.fresh_connection_next;
        }
    }

    // Points libcurl's header list at the request's own lines and the
    // client's buffers: no copy, no allocation once the node vector has grown.
    void set_headers(detail::handles& s, const request& req, const resil::timeouts& t, const idempotency_key* key,
                     option_setter& set) const {
        auto& nodes = s.header_nodes;
        nodes.clear();
        const auto& fields = req.headers_;
        for (std::size_t i = 0; i < fields.size(); ++i) nodes.push_back({const_cast<char*>(fields.line(i)), nullptr});
        if (key) {
            constexpr std::string_view name = "Idempotency-Key: ";
            char* p = s.key_line.data();
            std::memcpy(p, name.data(), name.size());
            p += name.size();
            const bool quoted = options_.idempotency_key == key_header_format::quoted;
            if (quoted) *p++ = '"';
            p = key->format_to(p);
            if (quoted) *p++ = '"';
            *p = '\0';
            nodes.push_back({s.key_line.data(), nullptr});
        }
        if (options_.propagate_deadline && t.total != resil::timeouts::no_limit &&
            !fields.find(resil::timeout_header_name)) {
            const auto text = resil::encode_timeout_header(t.total);
            char* p = s.timeout_line.data();
            std::memcpy(p, resil::timeout_header_name.data(), resil::timeout_header_name.size());
            p += resil::timeout_header_name.size();
            *p++ = ':';
            *p++ = ' ';
            std::memcpy(p, text.data, text.size);
            p[text.size] = '\0';
            nodes.push_back({s.timeout_line.data(), nullptr});
        }
        // A body over 1 KiB would make libcurl send "Expect: 100-continue"
        // and wait up to a second for a server that may never answer it.
        static char no_expect[] = "Expect:";
        if (req.has_body_ && !fields.find("Expect")) nodes.push_back({no_expect, nullptr});
        for (std::size_t i = 0; i + 1 < nodes.size(); ++i) nodes[i].next = &nodes[i + 1];
        // libcurl reads the list during the transfer, not when it is set: the
        // same vector refilled needs no new setopt.
        curl_slist* const list = nodes.empty() ? nullptr : nodes.data();
        if (list != s.applied.headers) {
            set(CURLOPT_HTTPHEADER, list, "CURLOPT_HTTPHEADER");
            if (set.result == CURLE_OK) s.applied.headers = list;
        }
    }

    enum class aborted : std::uint8_t { no, read_timeout, total_limit, cancelled, multi_error };

    // The easy handle is in the multi handle exactly while one of these
    // lives, whatever throws in between.
    struct attached_transfer {
        CURLM* multi;
        CURL* easy;
        detail::transfer_state& transfer;
        attached_transfer(CURLM* m, CURL* e, detail::transfer_state& t) noexcept : multi(m), easy(e), transfer(t) {}
        attached_transfer(const attached_transfer&) = delete;
        attached_transfer& operator=(const attached_transfer&) = delete;
        ~attached_transfer() {
            curl_multi_remove_handle(multi, easy);
            transfer.out = nullptr;
        }
    };

    // Drives one transfer to its end and fills `r`. `began`: when the
    // attempt's limits were computed; the total limit counts from there.
    void run(detail::handles& s, const request& req, const resil::timeouts& t,
             std::chrono::steady_clock::time_point began, const idempotency_key* key, const std::stop_token& stop,
             response& r) const {
        using std::chrono::milliseconds;
        using steady = std::chrono::steady_clock;
        CURL* e = s.easy;
        CURLM* m = s.multi;
        s.error[0] = '\0';

        option_setter set{e};
        set_url_and_timeouts(s, req, t, set);
        set_method(s, req, set);
        set_headers(s, req, t, key, set);
        if (set.result != CURLE_OK) {
            // Nothing was sent. What libcurl holds is no longer known: every
            // option is set anew for the next request.
            s.applied.forget();
            r.transport_ = transport_status::invalid_request;
            r.code_ = set.result;
            r.may_have_reached_ = false;
            r.error_ = std::string("libcurl refused ") + set.failed + ": " + curl_easy_strerror(set.result);
            return;
        }
        s.fresh_connection_next = false;

        // Wakes curl_multi_poll when the stop token fires (from any thread).
        // With a token that can never fire, this registers nothing.
        const std::stop_callback<waker> on_stop(stop, waker{m});
        // A stop requested since the caller's check must not let the first
        // curl_multi_perform send the request.
        if (stop.stop_requested()) {
            r.transport_ = transport_status::cancelled;
            r.code_ = CURLE_ABORTED_BY_CALLBACK;
            return;
        }

        s.transfer.start(r, req.method_ != "HEAD");
        if (curl_multi_add_handle(m, e) != CURLM_OK) {
            s.transfer.out = nullptr;
            r.transport_ = transport_status::other_error;
            r.code_ = CURLE_FAILED_INIT;
            r.error_ = "curl_multi_add_handle failed";
            return;
        }
        const attached_transfer attached{m, e, s.transfer};

        aborted abort = aborted::no;
        const bool read_limited = t.read != resil::timeouts::no_limit;
        const bool total_limited = t.total != resil::timeouts::no_limit;
        const auto end = total_limited ? began + t.total : steady::time_point::max();
        const auto started = steady::now();
        auto last_activity = started;
        bool connected = false;
        std::size_t last_received = 0;
        curl_off_t last_uploaded = 0;
        for (;;) {
            int running = 0;
            if (curl_multi_perform(m, &running) != CURLM_OK) {
                abort = aborted::multi_error;
                break;
            }
            if (running == 0) break;
            if (stop.stop_requested()) {
                abort = aborted::cancelled;
                break;
            }
            int wait_ms = 1000;  // libcurl shortens it to its own next timeout
            const auto now = steady::now();
            if (total_limited) {
                // libcurl's own total timer counts from its start and fires a
                // millisecond or two late; this one is absolute. In the last
                // millisecond the loop polls without waiting, so the end is
                // not rounded up to the next millisecond.
                if (now >= end) {
                    abort = aborted::total_limit;
                    break;
                }
                const auto left = std::chrono::floor<milliseconds>(end - now).count();
                wait_ms = static_cast<int>(std::min<milliseconds::rep>(left, wait_ms));
            }
            if (read_limited) {
                // Inactivity counts from the connection on (connecting is the
                // connect limit's business); any byte in or out restarts it.
                curl_off_t uploaded = 0;
                curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &uploaded);
                if (!connected) {
                    curl_off_t pretransfer = 0;
                    long request_size = 0;
                    curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
                    curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
                    connected = pretransfer > 0 || request_size > 0 || s.transfer.received > 0;
                    if (connected) last_activity = now;
                } else if (s.transfer.received != last_received || uploaded != last_uploaded) {
                    last_activity = now;
                }
                last_received = s.transfer.received;
                last_uploaded = uploaded;
                if (connected) {
                    const auto silent = now - last_activity;
                    if (silent >= t.read) {
                        abort = aborted::read_timeout;
                        break;
                    }
                    // Round up: waking a little late is fine, early just loops.
                    const auto left = std::chrono::ceil<milliseconds>(t.read - silent).count();
                    wait_ms = std::min(wait_ms, static_cast<int>(std::clamp<milliseconds::rep>(left, 1, 1000)));
                }
            }
            if (curl_multi_poll(m, nullptr, 0, wait_ms, nullptr) != CURLM_OK) {
                abort = aborted::multi_error;
                break;
            }
        }
        const auto elapsed = steady::now() - started;

        CURLcode code = CURLE_OK;
        if (abort == aborted::no) {
            int queued = 0;
            while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == e) code = msg->data.result;
            }
        }
        finish(s, r, abort, code);
        r.timings_.total = std::chrono::duration_cast<duration>(elapsed);
    }

    // Reads what libcurl knows of the transfer into `r` and names its outcome.
    void finish(detail::handles& s, response& r, aborted abort, CURLcode code) const {
        CURL* e = s.easy;
        const auto& t = s.transfer;
        long status = 0;
        long request_size = 0;
        long new_connections = 0;
        curl_off_t pretransfer = 0;
        curl_off_t connect_us = 0;
        curl_off_t first_byte_us = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_size);
        curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &new_connections);
        curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
        curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connect_us);
        curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &first_byte_us);

        r.status_ = static_cast<int>(status);
        // Nothing of the request can have reached the server unless libcurl
        // counted request bytes, or the server already answered, or libcurl
        // had sent it once before it wanted to send it again.
        const bool sent = request_size > 0 || t.received > 0 || t.replay_refused;
        const bool connected = pretransfer > 0 || sent;
        r.may_have_reached_ = sent;
        r.timings_.connect = std::chrono::microseconds{connect_us};
        r.timings_.first_byte = std::chrono::microseconds{first_byte_us};
        r.timings_.reused_connection = new_connections == 0 && connected;

        const auto fail = [&](transport_status why, CURLcode c, std::string_view message) {
            r.transport_ = why;
            r.code_ = c;
            r.error_ = message;
        };
        switch (abort) {
            case aborted::read_timeout:
                fail(transport_status::read_timeout, CURLE_OPERATION_TIMEDOUT,
                     "no data received or sent for longer than the read timeout");
                break;
            case aborted::total_limit:
                fail(connected ? transport_status::total_timeout : transport_status::connect_timeout,
                     CURLE_OPERATION_TIMEDOUT, "the attempt's total time limit passed");
                break;
            case aborted::cancelled:
                fail(transport_status::cancelled, CURLE_ABORTED_BY_CALLBACK, "cancelled through the stop token");
                break;
            case aborted::multi_error:
                fail(transport_status::other_error, CURLE_FAILED_INIT, "libcurl's multi interface failed");
                break;
            case aborted::no:
                if (t.replay_refused) {
                    fail(transport_status::connection_lost, code,
                         "the reused connection closed before any answer; libcurl's own resend on a new "
                         "connection was refused, so that every send is the caller's decision");
                } else if (t.headers_too_large) {
                    fail(transport_status::headers_too_large, code, "the header fields exceed max_header_bytes");
                } else if (t.malformed) {
                    fail(transport_status::protocol_error, code, "a header line holds CR or NUL (RFC 9110 §5.5)");
                } else {
                    r.code_ = code;
                    r.transport_ = transport_of(code, connected, sent, t);
                    if (code != CURLE_OK) r.error_ = s.error[0] != '\0' ? s.error.data() : curl_easy_strerror(code);
                }
                break;
        }
        if (r.transport_ == transport_status::completed) detail::capture::settle_body(r);
        if (r.transport_ != transport_status::completed && !r.may_have_reached_) r.status_ = 0;
        // The server did not act on the request and wants another connection
        // (421), or dropped this one (408): the next attempt opens a new one.
        if (r.status_ == 421 || r.status_ == 408) s.fresh_connection_next = true;
        if (r.status_ != 0 && (r.status_ < 200 || r.status_ > 299))
            r.read_server_hints(options_.pushback_header, std::chrono::system_clock::now());
    }

    // `connected`: a connection existed; `sent`: a byte of the request may
    // have left (or an answer arrived).
    static transport_status transport_of(CURLcode code, bool connected, bool sent,
                                         const detail::transfer_state& t) noexcept {
        switch (code) {
            case CURLE_OK: return transport_status::completed;
            case CURLE_COULDNT_RESOLVE_PROXY:
            case CURLE_COULDNT_RESOLVE_HOST:
            case CURLE_COULDNT_CONNECT: return transport_status::connect_failed;
            case CURLE_OPERATION_TIMEDOUT:
                return connected ? transport_status::total_timeout : transport_status::connect_timeout;
            case CURLE_SSL_CONNECT_ERROR: return transport_status::tls_handshake_failed;
            case CURLE_PEER_FAILED_VERIFICATION:
            case CURLE_SSL_CERTPROBLEM:
            case CURLE_SSL_CIPHER:
            case CURLE_SSL_CACERT_BADFILE:
            case CURLE_SSL_ISSUER_ERROR:
            case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            case CURLE_SSL_INVALIDCERTSTATUS: return transport_status::tls_certificate_rejected;
            case CURLE_PARTIAL_FILE:
            case CURLE_GOT_NOTHING:
            case CURLE_SEND_ERROR:
            case CURLE_RECV_ERROR: return transport_status::connection_lost;
            case CURLE_WEIRD_SERVER_REPLY:
            case CURLE_HTTP2:
            case CURLE_HTTP2_STREAM:
            case CURLE_BAD_CONTENT_ENCODING:
            case CURLE_HTTP3: return transport_status::protocol_error;
            case CURLE_WRITE_ERROR:
                if (t.too_large) return transport_status::body_too_large;
                return transport_status::other_error;
            case CURLE_FILESIZE_EXCEEDED: return transport_status::body_too_large;
            case CURLE_UNSUPPORTED_PROTOCOL:
            case CURLE_BAD_FUNCTION_ARGUMENT:
                // The scheme and every option were checked before any I/O:
                // once the request went out, these are libcurl's words for a
                // reply that is not HTTP (a bad status line, HTTP/0.9, an
                // unknown version; a header or trailer line with no colon).
                return sent ? transport_status::protocol_error : transport_status::invalid_request;
            case CURLE_URL_MALFORMAT:
            case CURLE_TOO_MANY_REDIRECTS: return transport_status::invalid_request;
            default: return transport_status::other_error;
        }
    }

    client_options options_;
    std::unique_ptr<detail::handles> state_;
};

}  // namespace resil::curl
