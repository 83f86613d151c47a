// resil/curl/detail/connection_setup.hpp — the connection options
// (resil/curl/connections.hpp), the shared cache (share.hpp) and the raw
// handle hook applied to a new easy handle, each setopt checked; and per
// transfer, a request's own endpoint (request::connect_to), set only when
// the list libcurl reads changes.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../../detail/platform.hpp"
#include "../../validation.hpp"
#include "../connections.hpp"
#include "../options.hpp"
#include "../request.hpp"
#include "../share.hpp"
#include "connection_state.hpp"

namespace resil::curl::detail {

struct connection_setup {
    /// The longest "url-host:url-port:host:port" entry with hosts of up to
    /// 255 bytes (an endpoint's longest) and 5-digit ports.
    static constexpr std::size_t longest_pinned_line = 2 * (255 + 1 + 5) + 1;

    [[noreturn]] RESIL_DETAIL_COLD static void throw_refused(const char* option, CURLcode rc) {
        throw std::runtime_error(resil::detail::concat(
            {"resil::curl::client: libcurl refused ", option, ": ", curl_easy_strerror(rc)}));
    }

    [[noreturn]] RESIL_DETAIL_COLD static void throw_out_of_range(const char* option,
                                                                  std::chrono::seconds::rep seconds) {
        throw std::invalid_argument(resil::detail::concat({"resil::curl::client: ", option, " takes 0 to ",
                                                           std::to_string(LONG_MAX), " seconds, got ",
                                                           std::to_string(seconds)}));
    }

    // connection_options::validate keeps every duration within a year; this
    // guards the conversion on its own, for whatever reaches it.
    static long to_curl_seconds(std::chrono::seconds v, const char* option) {
        const auto n = v.count();
        if (n < 0 || static_cast<unsigned long long>(n) > static_cast<unsigned long long>(LONG_MAX))
            throw_out_of_range(option, n);
        return static_cast<long>(n);
    }

    template <class Value>
    static void set_checked(CURL* e, CURLoption option, Value value, const char* name) {
        if (const CURLcode rc = curl_easy_setopt(e, option, value); rc != CURLE_OK) throw_refused(name, rc);
    }

    // One libcurl list over `lines`, whose strings stay where they are.
    static curl_slist* link(const std::vector<std::string>& source, std::vector<std::string>& lines,
                            std::vector<curl_slist>& nodes) {
        lines = source;
        nodes.clear();
        nodes.reserve(lines.size());
        for (auto& line : lines) nodes.push_back({line.data(), nullptr});
        for (std::size_t i = 0; i + 1 < nodes.size(); ++i) nodes[i].next = &nodes[i + 1];
        return nodes.empty() ? nullptr : nodes.data();
    }

    /// Applies client_options::connections and shared to a new easy handle,
    /// then calls client_options::configure_handle with it. Throws
    /// std::runtime_error naming the option libcurl refused; the hook's own
    /// exceptions pass through.
    static void configure(CURL* e, connection_state& c, const client_options& options) {
        const connection_options& o = options.connections;
        if (curl_slist* list = link(o.resolve, c.resolve_lines, c.resolve_nodes))
            set_checked(e, CURLOPT_RESOLVE, list, "CURLOPT_RESOLVE");
        curl_slist* const connect_to = link(o.connect_to, c.connect_to_lines, c.connect_to_nodes);
        if (connect_to) set_checked(e, CURLOPT_CONNECT_TO, connect_to, "CURLOPT_CONNECT_TO");
        c.applied_connect_to = connect_to;
        c.connect_to_applied = true;
        c.pinned_line.reserve(longest_pinned_line);

        set_checked(e, CURLOPT_DNS_CACHE_TIMEOUT, to_curl_seconds(o.dns_cache_lifetime, "CURLOPT_DNS_CACHE_TIMEOUT"),
                    "CURLOPT_DNS_CACHE_TIMEOUT");
        set_checked(e, CURLOPT_MAXAGE_CONN, to_curl_seconds(o.max_connection_idle, "CURLOPT_MAXAGE_CONN"),
                    "CURLOPT_MAXAGE_CONN");
        if (o.max_connection_age) {
#if LIBCURL_VERSION_NUM >= 0x075000
            set_checked(e, CURLOPT_MAXLIFETIME_CONN, to_curl_seconds(*o.max_connection_age, "CURLOPT_MAXLIFETIME_CONN"),
                        "CURLOPT_MAXLIFETIME_CONN");
#else
            throw_refused("CURLOPT_MAXLIFETIME_CONN (libcurl 7.80 or newer)", CURLE_UNKNOWN_OPTION);
#endif
        }
        if (o.tcp_keepalive) {
            set_checked(e, CURLOPT_TCP_KEEPALIVE, 1L, "CURLOPT_TCP_KEEPALIVE");
            set_checked(e, CURLOPT_TCP_KEEPIDLE, to_curl_seconds(o.tcp_keepalive_idle, "CURLOPT_TCP_KEEPIDLE"),
                        "CURLOPT_TCP_KEEPIDLE");
            set_checked(e, CURLOPT_TCP_KEEPINTVL, to_curl_seconds(o.tcp_keepalive_interval, "CURLOPT_TCP_KEEPINTVL"),
                        "CURLOPT_TCP_KEEPINTVL");
        }
        if (options.shared) {
            // Held before libcurl knows the share: from then on the handle
            // may use it, and the hold ends only after the handle is gone.
            c.shared = options.shared;
            set_checked(e, CURLOPT_SHARE, c.shared->native_handle(), "CURLOPT_SHARE");
        }
        // Last, so that it sees (and may change) everything resil set.
        if (options.configure_handle) options.configure_handle(e);
    }

    /// Points CURLOPT_CONNECT_TO at the request's endpoint in front of the
    /// client-wide list, or at that list alone. The entry names the URL's own
    /// host and port, so a redirect to another host or port is not sent to
    /// the pinned replica (which, over HTTPS, could never present that
    /// host's certificate). It is written into a buffer reserved for the
    /// longest one, and the option is set only when the list's head changes:
    /// libcurl reads the entries when it connects.
    template <class Setter>
    static void request_options(connection_state& c, const request& req, Setter& set) {
        curl_slist* head = c.connect_to_nodes.empty() ? nullptr : c.connect_to_nodes.data();
        if (const auto& target = req.pinned_endpoint()) {
            write_pinned(c, req.url(), *target);
            c.pinned_node.next = head;
            head = &c.pinned_node;
        }
        if (c.connect_to_applied && head == c.applied_connect_to) return;
        set(CURLOPT_CONNECT_TO, head, "CURLOPT_CONNECT_TO");
        if (set.result != CURLE_OK) return;
        c.applied_connect_to = head;
        c.connect_to_applied = true;
    }

    /// The host and port a URL connects to, as libcurl matches a
    /// CURLOPT_CONNECT_TO entry against them: the host as written (an IPv6
    /// literal in brackets, without its zone; no trailing dot, which libcurl
    /// drops too), the port written in the URL or the scheme's (80, 443).
    struct url_authority {
        std::string_view host;
        std::string_view port;
    };
    [[nodiscard]] static constexpr url_authority authority_of(std::string_view url) noexcept {
        const auto scheme_end = url.find("://");
        const bool https = scheme_end == 5;  // request validated the scheme: http or https
        auto rest = scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
        rest = rest.substr(0, rest.find_first_of("/?#"));
        if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
        std::string_view host;
        std::string_view port;
        if (!rest.empty() && rest.front() == '[') {
            const auto close = rest.find(']');
            host = rest.substr(0, close == std::string_view::npos ? rest.size() : close + 1);
            rest.remove_prefix(host.size());
            if (const auto zone = host.find('%'); zone != std::string_view::npos && host.back() == ']') {
                // "[fe80::1%25eth0]": libcurl keeps the zone apart from the name it matches.
                host = host.substr(0, zone);  // the closing bracket is written back by write_pinned
            }
        } else {
            const auto colon = rest.find(':');
            host = rest.substr(0, colon);
            rest.remove_prefix(host.size());
            if (host.size() > 1 && host.back() == '.') host.remove_suffix(1);
        }
        if (!rest.empty() && rest.front() == ':') port = rest.substr(1);
        if (port.empty()) port = https ? "443" : "80";
        return {host, port};
    }

    /// What tells a request's connections apart as libcurl matches them
    /// (idle_connections.hpp): the URL's scheme, host (in any letter case)
    /// and port, and the request's own endpoint (request::connect_to); the
    /// client-wide options are the same for every request. A 64-bit FNV-1a
    /// hash.
    [[nodiscard]] static std::uint64_t origin_of(const request& req) noexcept {
        std::uint64_t h = 0xcbf29ce484222325u;
        const auto add = [&h](std::string_view text) noexcept {
            for (const char c : text) {
                h ^= static_cast<unsigned char>(ascii_lower(c));
                h *= 0x100000001b3u;
            }
            h ^= 0xffu;  // a separator no text byte is
            h *= 0x100000001b3u;
        };
        const std::string_view url = req.url();
        add(url.substr(0, url.find("://")));
        const auto authority = authority_of(url);
        add(authority.host);
        add(authority.port);
        if (const auto& target = req.pinned_endpoint()) {
            add(target->host);
            char port[6] = {};
            std::size_t n = 0;
            for (unsigned v = target->port; n == 0 || v != 0; v /= 10) port[n++] = static_cast<char>('0' + v % 10);
            add(std::string_view(port, n));
        }
        return h;
    }


private:
    static void write_pinned(connection_state& c, std::string_view url, const endpoint& target) {
        // Within the reserved capacity for any URL host up to 255 bytes: no
        // allocation, and the line stays at the same address; a longer one
        // grows the buffer once, which keeps it.
        const auto from = authority_of(url);
        c.pinned_line.assign(from.host);
        if (!from.host.empty() && from.host.front() == '[' && from.host.back() != ']') c.pinned_line.push_back(']');
        c.pinned_line.push_back(':');
        c.pinned_line.append(from.port);
        c.pinned_line.push_back(':');
        c.pinned_line.append(target.host);
        c.pinned_line.push_back(':');
        char digits[5];
        std::size_t n = 0;
        for (unsigned v = target.port; v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
        while (n != 0) c.pinned_line.push_back(digits[--n]);
        c.pinned_node.data = c.pinned_line.data();
    }
};

}  // namespace resil::curl::detail
