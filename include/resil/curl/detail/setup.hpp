// resil/curl/detail/setup.hpp — the easy handle's set-up: the options set
// once per handle (callbacks, protocols, limits), and per transfer the URL,
// method, body, timeouts and header lines, each set only when it changed and
// each checked (an option libcurl refuses means nothing is sent).
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <string_view>

#include "../../deadline.hpp"
#include "../../idempotency_key.hpp"
#include "../../timeouts.hpp"
#include "../options.hpp"
#include "../request.hpp"
#include "capture.hpp"
#include "connection_setup.hpp"
#include "handles.hpp"
#include "redirect_setup.hpp"

namespace resil::curl::detail {

// CURLOPT_PROTOCOLS_STR came with 7.85; CURLOPT_PREREQFUNCTION (7.80) is how
// an unsafe request is kept from being sent twice.
static_assert(LIBCURL_VERSION_NUM >= 0x075500, "resil::curl needs libcurl 7.85 or newer");

struct setup {
    // libcurl reads a timeout of 0 as "none": no_limit maps to it, and every
    // other value is at least 1 ms here.
    static long to_curl_ms(std::chrono::milliseconds v) noexcept {
        if (v == resil::timeouts::no_limit) return 0L;
        return static_cast<long>(std::min<std::chrono::milliseconds::rep>(v.count(), LONG_MAX));
    }

    // The total limit is resil's own absolute end (blocking_transfer.hpp);
    // libcurl's timer is a backstop one millisecond later, because it counts
    // from its own start in whole milliseconds and may fire up to one early:
    // it must never end an attempt before resil's end, which may be the
    // deadline itself.
    static long backstop_ms(std::chrono::milliseconds v) noexcept {
        if (v == resil::timeouts::no_limit) return 0L;
        return static_cast<long>(std::min<std::chrono::milliseconds::rep>(v.count(), LONG_MAX - 1)) + 1L;
    }

    /// The options of a new easy handle that never change. `close_socket`
    /// (with `close_data`), when given, is the close-socket callback, set
    /// before the raw handle hook (client_options::configure_handle) runs.
    static void configure(easy_state& s, const client_options& options,
                          curl_closesocket_callback close_socket = nullptr, void* close_data = nullptr) {
        CURL* e = s.easy;
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for DNS timeouts: threads stay safe
#if LIBCURL_VERSION_NUM >= 0x075700
        // Without it, ending a transfer during name resolution (a timeout, a
        // cancel) waits for the resolver thread: a hung DNS lookup would hold
        // the caller past every limit. The resolver thread is left to finish.
        curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
#endif
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, redirect_setup::any_web_scheme);  // narrowed per request
        // Header lines are collected as they arrive rather than through
        // curl_easy_nextheader afterwards: limits, trailers and a too-large
        // Content-Length must be acted on before the body is read.
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &s.transfer);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &s.transfer);
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, &on_send);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, &s.transfer);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s.error.data());
        if (!options.user_agent.empty()) curl_easy_setopt(e, CURLOPT_USERAGENT, options.user_agent.c_str());
        // The key line's name part is written once: per request only the key.
        const std::string_view name = options.idempotency_key_header;
        s.key_line.assign(name.size() + 2 + 2 + 36 + 1, '\0');  // ": ", quotes, a UUID, NUL
        std::memcpy(s.key_line.data(), name.data(), name.size());
        s.key_line[name.size()] = ':';
        s.key_line[name.size() + 1] = ' ';
        s.transfer.max_body = options.max_body_bytes;
        s.transfer.max_header_bytes = options.max_header_bytes;
        s.transfer.easy = e;
        s.transfer.error_text = s.error.data();
        // A proxy's answer to CONNECT is not the server's response: its head
        // must not be taken for the final one (nor counted as an answer).
        curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
        apply_transport(e, options.tls, options.proxy, options.http_version, options.redirects);
        if (close_socket) {
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
            curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, close_data);
        }
        connection_setup::configure(e, s.connections, options);  // last: it ends with configure_handle
    }

    // libcurl calls these with each body chunk, each complete header line,
    // and before each time it sends the request (capture.hpp). Nothing may
    // escape into C: a failure returns a short count, which libcurl turns
    // into CURLE_WRITE_ERROR.
    static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) noexcept {
        const std::size_t n = size * count;
        return capture::body_bytes(*static_cast<transfer_state*>(user), {data, n}) ? n : 0;
    }

    static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) noexcept {
        const std::size_t n = size * count;
        return capture::header_line(*static_cast<transfer_state*>(user), {data, n}) ? n : 0;
    }

    static int on_send(void* user, char* primary_ip, char*, int primary_port, int local_port) noexcept {
        return capture::may_send(*static_cast<transfer_state*>(user), primary_ip, primary_port, local_port)
                   ? CURL_PREREQFUNC_OK
                   : CURL_PREREQFUNC_ABORT;
    }

    // Sets one option, unless an earlier one failed: the first failure is
    // kept and nothing is sent (libcurl may keep the old value of an option
    // it refuses, or drop it, as it drops a URL over its 8 MB limit).
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

    static void set_method(easy_state& s, const request& req, option_setter& set) {
        auto& a = s.applied;
        const std::string& m = req.method();
        if (a.method_set && a.method == m && a.has_body == req.has_body() &&
            (!req.has_body() || (a.body == req.body().data() && a.body_size == req.body().size())))
            return;
        const auto custom = [&](std::string_view plain) { return m == plain ? nullptr : m.c_str(); };
        if (m == "HEAD" && !req.has_body()) {
            set(CURLOPT_NOBODY, 1L, "CURLOPT_NOBODY");
            set(CURLOPT_CUSTOMREQUEST, static_cast<const char*>(nullptr), "CURLOPT_CUSTOMREQUEST");
        } else if (req.has_body()) {
            set(CURLOPT_NOBODY, 0L, "CURLOPT_NOBODY");
            set(CURLOPT_POSTFIELDS, req.body().data(), "CURLOPT_POSTFIELDS");
            set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body().size()), "CURLOPT_POSTFIELDSIZE_LARGE");
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
        a.has_body = req.has_body();
        a.body = req.has_body() ? req.body().data() : nullptr;
        a.body_size = req.has_body() ? req.body().size() : 0;
        a.method_set = true;
    }

    // libcurl 7.88 parses a URL given as text again for every transfer
    // (about a tenth of the CPU of a small GET, bench/README.md); given
    // parsed (CURLOPT_CURLU) it only copies it. Parsed here once per change,
    // with libcurl's own flags; the text goes too, for what libcurl reads
    // from it. As text alone: a URL the handle's options would parse
    // otherwise (credentials: CURLOPT_DISALLOW_USERNAME_IN_URL; "/.":
    // CURLOPT_PATH_AS_IS), one the parser refuses, or with no memory to
    // parse. The parsed URL is set first: libcurl 8.12 and later drop the
    // text when it is set.
    static void set_url(easy_state& s, const std::string& url, option_setter& set) noexcept {
        CURLU* parsed = nullptr;
        if (url.find("/.") == std::string::npos) {
            if (!s.parsed_url) s.parsed_url = curl_url();
            parsed = s.parsed_url;
            constexpr unsigned flags = CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME | CURLU_DISALLOW_USER;
            if (parsed && curl_url_set(parsed, CURLUPART_URL, url.c_str(), flags) != CURLUE_OK) parsed = nullptr;
        }
        set(CURLOPT_CURLU, parsed, "CURLOPT_CURLU");
        set(CURLOPT_URL, url.c_str(), "CURLOPT_URL");
        // libcurl drops the old text before it refuses a new one, and would
        // rebuild it from the parsed URL of an earlier request.
        if (set.result != CURLE_OK) curl_easy_setopt(s.easy, CURLOPT_CURLU, static_cast<CURLU*>(nullptr));
    }

    static void set_url_and_timeouts(easy_state& s, const request& req, const resil::timeouts& t,
                                     option_setter& set) {
        auto& a = s.applied;
        if (a.url != req.url()) {
            // Noted first: a copy that throws (no memory) then leaves libcurl
            // and the note alike. A refused option forgets the note
            // (request_options).
            a.url = req.url();
            set_url(s, a.url, set);
        }
        if (const long connect = to_curl_ms(t.connect); connect != a.connect_ms) {
            set(CURLOPT_CONNECTTIMEOUT_MS, connect, "CURLOPT_CONNECTTIMEOUT_MS");
            if (set.result == CURLE_OK) a.connect_ms = connect;
        }
        if (const long total = backstop_ms(t.total); total != a.total_ms) {
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
    static void set_headers(easy_state& s, const request& req, const resil::timeouts& t, const idempotency_key* key,
                            const client_options& options, option_setter& set) {
        auto& nodes = s.header_nodes;
        nodes.clear();
        const auto& fields = request_access::fields(req);
        for (std::size_t i = 0; i < fields.size(); ++i) nodes.push_back({const_cast<char*>(fields.line(i)), nullptr});
        if (key) {
            char* p = s.key_line.data() + options.idempotency_key_header.size() + 2;  // after "<name>: "
            const bool quoted = options.idempotency_key == key_header_format::quoted;
            if (quoted) *p++ = '"';
            p = key->format_to(p);
            if (quoted) *p++ = '"';
            *p = '\0';
            nodes.push_back({s.key_line.data(), nullptr});
        }
        if (options.propagate_deadline && t.total != resil::timeouts::no_limit &&
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
        if (req.has_body() && !fields.find("Expect")) nodes.push_back({no_expect, nullptr});
        for (std::size_t i = 0; i + 1 < nodes.size(); ++i) nodes[i].next = &nodes[i + 1];
        // libcurl reads the list during the transfer, not when it is set: the
        // same vector refilled needs no new setopt.
        curl_slist* const list = nodes.empty() ? nullptr : nodes.data();
        if (list != s.applied.headers) {
            set(CURLOPT_HTTPHEADER, list, "CURLOPT_HTTPHEADER");
            if (set.result == CURLE_OK) s.applied.headers = list;
        }
    }

    /// Sets everything one transfer of `req` needs; the first option libcurl
    /// refused is in the result (then nothing may be sent, and every option
    /// is set anew next time: what libcurl holds is no longer known).
    /// `repeatable`: the request is idempotent or keyed (redirect_setup).
    static option_setter request_options(easy_state& s, const request& req, const resil::timeouts& t,
                                         const idempotency_key* key, bool repeatable,
                                         const client_options& options) {
        option_setter set{s.easy};
        set_url_and_timeouts(s, req, t, set);
        set_method(s, req, set);
        set_headers(s, req, t, key, options, set);
        redirect_setup::request_options(s, req, repeatable, options, set);
        connection_setup::request_options(s.connections, req, set);
        if (set.result != CURLE_OK) s.applied.forget();
        return set;
    }
};

}  // namespace resil::curl::detail
