// resil/discovery/detail/dns_answer.hpp — the records of one DNS reply, read
// with libresolv's bounds-checked parser (ns_initparse, ns_parserr,
// ns_name_uncompress): any byte string is either records or an error, never
// a read outside the reply. Pure functions: the fuzz harness feeds them.
#pragma once

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netinet/in.h>
#include <resolv.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace resil::detail {

/// One address record: its text ("10.0.0.1", "fd00::1"), its family and TTL.
struct dns_address {
    std::string owner;  ///< the record's name, lower case, without the trailing dot
    std::string text;
    bool ipv6 = false;
    std::uint32_t ttl = 0;
};

/// One SRV record (RFC 2782).
struct dns_service {
    std::uint16_t priority = 0;
    std::uint16_t weight = 0;
    std::uint16_t port = 0;
    std::string target;  ///< lower case, without the trailing dot; empty for "." (no service)
    std::uint32_t ttl = 0;
};

/// What a reply holds: the A / AAAA and SRV records of its answer and
/// additional sections (other types skipped), or why it could not be read.
struct dns_reply {
    std::vector<dns_address> addresses;
    std::vector<dns_service> services;
    /// Empty when the reply was read; otherwise "malformed reply: ...".
    std::string error;
};

[[nodiscard]] inline std::string lower_name(const char* name) {
    std::string out(name);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    while (!out.empty() && out.back() == '.') out.pop_back();
    return out;
}

/// Reads a whole reply. Never reads outside `reply`; an inconsistent one
/// (a count past its end, a record of the wrong length, a name pointer
/// loop) is an error.
[[nodiscard]] inline dns_reply read_dns_reply(std::span<const unsigned char> reply) {
    dns_reply out;
    if (reply.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        out.error = "malformed reply: too long";
        return out;
    }
    ns_msg msg{};
    if (::ns_initparse(reply.data(), static_cast<int>(reply.size()), &msg) < 0) {
        out.error = "malformed reply: its header or sections do not fit";
        return out;
    }
    for (const auto section : {ns_s_an, ns_s_ar}) {
        const int count = ns_msg_count(msg, section);
        for (int i = 0; i < count; ++i) {
            ns_rr rr{};
            if (::ns_parserr(&msg, section, i, &rr) < 0) {
                out.error = "malformed reply: a record does not fit";
                return out;
            }
            if (ns_rr_class(rr) != ns_c_in) continue;
            const auto type = ns_rr_type(rr);
            const auto* data = ns_rr_rdata(rr);
            const auto length = static_cast<std::size_t>(ns_rr_rdlen(rr));
            if (type == ns_t_a || type == ns_t_aaaa) {
                const bool v6 = type == ns_t_aaaa;
                if (length != (v6 ? 16u : 4u)) {
                    out.error = v6 ? "malformed reply: an AAAA record is not 16 bytes" : "malformed reply: an A record is not 4 bytes";
                    return out;
                }
                char text[INET6_ADDRSTRLEN] = {};
                if (::inet_ntop(v6 ? AF_INET6 : AF_INET, data, text, sizeof text) == nullptr) {
                    out.error = "malformed reply: an address that cannot be written";
                    return out;
                }
                out.addresses.push_back({lower_name(ns_rr_name(rr)), text, v6, ns_rr_ttl(rr)});
            } else if (type == ns_t_srv && section == ns_s_an) {
                if (length < 7) {
                    out.error = "malformed reply: an SRV record shorter than 7 bytes";
                    return out;
                }
                dns_service s;
                s.priority = static_cast<std::uint16_t>(ns_get16(data));
                s.weight = static_cast<std::uint16_t>(ns_get16(data + 2));
                s.port = static_cast<std::uint16_t>(ns_get16(data + 4));
                char target[NS_MAXDNAME] = {};
                // The target may point back into the message (compression),
                // but must start and end within this record.
                const int used = ::ns_name_uncompress(ns_msg_base(msg), ns_msg_end(msg), data + 6, target, sizeof target);
                if (used < 0 || static_cast<std::size_t>(used) > length - 6) {
                    out.error = "malformed reply: an SRV target that is not a name";
                    return out;
                }
                s.target = lower_name(target);
                s.ttl = ns_rr_ttl(rr);
                out.services.push_back(std::move(s));
            }
        }
    }
    return out;
}

}  // namespace resil::detail
