// resil/discovery/detail/dns_resolver.hpp — one lookup of a discovery name
// through libresolv (res_nquery on a resolver state of its own, so the
// nameserver, timeout and attempts are this source's, not the process's),
// turned into a sorted list of endpoints and the smallest TTL.
#pragma once

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../balancer/endpoint.hpp"
#include "../options.hpp"
#include "dns_answer.hpp"

namespace resil::detail {

/// libresolv's resolver state (a struct whose name is also a function's).
using resolver_state = struct __res_state;

/// What one lookup found (dns_answer, resil/discovery/options.hpp).
using dns_result = dns_answer;

/// "http://10.0.0.1:80", "http://[fd00::1]:80" or "10.0.0.1:80".
[[nodiscard]] inline std::string endpoint_address(std::string_view scheme, const std::string& ip, bool v6,
                                                  std::uint32_t port) {
    std::string out;
    if (!scheme.empty()) {
        out.append(scheme);
        out.append("://");
    }
    if (v6) out.push_back('[');
    out.append(ip);
    if (v6) out.push_back(']');
    out.push_back(':');
    out.append(std::to_string(port));
    return out;
}

/// Looks up one options' name. Not thread-safe: one lookup at a time (the
/// discovery source serializes them).
class dns_resolver {
public:
    explicit dns_resolver(const dns_discovery_options& options) : options_(options), state_(std::make_unique<resolver_state>()) {
        if (::res_ninit(state_.get()) != 0) throw std::runtime_error("resil::dns_discovery: res_ninit failed");
        if (!options_.nameserver.empty()) {
            const auto colon = options_.nameserver.rfind(':');
            sockaddr_in server{};
            server.sin_family = AF_INET;
            server.sin_port = htons(static_cast<std::uint16_t>(std::stoul(options_.nameserver.substr(colon + 1))));
            if (::inet_pton(AF_INET, options_.nameserver.substr(0, colon).c_str(), &server.sin_addr) != 1)
                throw std::invalid_argument("resil::dns_discovery: `nameserver` must be an IPv4 address and port, got \"" +
                                            options_.nameserver + "\"");
            state_->nsaddr_list[0] = server;
            state_->nscount = 1;
        }
        state_->retrans = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(options_.query_timeout).count());
        state_->retry = static_cast<int>(options_.query_attempts);
        // Larger UDP answers (many pods) without falling back to TCP.
        state_->options |= RES_USE_EDNS0;
    }
    dns_resolver(const dns_resolver&) = delete;
    dns_resolver& operator=(const dns_resolver&) = delete;
    ~dns_resolver() { ::res_nclose(state_.get()); }

    /// One lookup: A / AAAA of the name, or its SRV records and their targets' addresses.
    [[nodiscard]] dns_result lookup() {
        return options_.records == dns_records::srv ? lookup_srv() : lookup_addresses();
    }

private:
    enum class answer : std::uint8_t { records, none, failed };

    struct addresses_of {
        std::vector<dns_address> found;
        std::string error;
        answer status = answer::none;
    };

    /// One query of `type`: its records, none (NXDOMAIN, no data), or a failure.
    answer query(const std::string& name, int type, dns_reply& reply, std::string& error) {
        const int n = ::res_nquery(state_.get(), name.c_str(), ns_c_in, type, buffer_.data(), static_cast<int>(buffer_.size()));
        if (n < 0) {
            switch (state_->res_h_errno) {
                case HOST_NOT_FOUND: error = "NXDOMAIN"; return answer::none;
                case NO_DATA: error = "no records"; return answer::none;
                case TRY_AGAIN: error = "no answer (timed out, refused or SERVFAIL)"; return answer::failed;
                default: error = "the query failed (NO_RECOVERY)"; return answer::failed;
            }
        }
        reply = read_dns_reply(std::span<const unsigned char>(buffer_.data(), std::min(static_cast<std::size_t>(n), buffer_.size())));
        if (!reply.error.empty()) {
            error = reply.error;
            return answer::failed;
        }
        return answer::records;
    }

    /// A and AAAA of `name` as options ask; a failure of either fails both,
    /// so that a set never loses one family to one lost query.
    addresses_of query_addresses(const std::string& name) {
        addresses_of out;
        for (const auto type : {ns_t_a, ns_t_aaaa}) {
            if (type == ns_t_a ? !options_.ipv4 : !options_.ipv6) continue;
            dns_reply reply;
            std::string error;
            const auto status = query(name, type, reply, error);
            if (status == answer::failed) {
                out.status = answer::failed;
                out.error = std::move(error);
                return out;
            }
            if (status == answer::none) {
                if (out.error.empty()) out.error = std::move(error);
                continue;
            }
            for (auto& a : reply.addresses)
                if (a.ipv6 == (type == ns_t_aaaa)) out.found.push_back(std::move(a));
        }
        if (!out.found.empty()) {
            out.status = answer::records;
            out.error.clear();
        } else if (out.error.empty()) {
            out.error = "no records";
        }
        return out;
    }

    static dns_result failed(std::string error) { return {dns_lookup_outcome::failed, {}, 0, std::move(error)}; }
    static dns_result empty(std::string error) { return {dns_lookup_outcome::empty, {}, 0, std::move(error)}; }

    /// The endpoints sorted by address, duplicates dropped; fails past endpoint::max_endpoints.
    static dns_result finish(std::vector<endpoint> endpoints, std::uint32_t ttl) {
        std::sort(endpoints.begin(), endpoints.end(), [](const endpoint& a, const endpoint& b) { return a.address < b.address; });
        endpoints.erase(std::unique(endpoints.begin(), endpoints.end(),
                                    [](const endpoint& a, const endpoint& b) { return a.address == b.address; }),
                        endpoints.end());
        if (endpoints.size() > endpoint::max_endpoints)
            return failed("more than " + std::to_string(endpoint::max_endpoints) + " endpoints");
        return {dns_lookup_outcome::resolved, std::move(endpoints), ttl, {}};
    }

    dns_result lookup_addresses() {
        auto a = query_addresses(options_.name);
        if (a.status == answer::failed) return failed(std::move(a.error));
        if (a.status == answer::none) return empty(std::move(a.error));
        std::vector<endpoint> out;
        std::uint32_t ttl = std::numeric_limits<std::uint32_t>::max();
        for (const auto& r : a.found) {
            out.push_back({.address = endpoint_address(options_.scheme, r.text, r.ipv6, options_.port),
                           .idempotency_scope = options_.idempotency_scope});
            ttl = std::min(ttl, r.ttl);
        }
        return finish(std::move(out), ttl);
    }

    dns_result lookup_srv() {
        dns_reply reply;
        std::string error;
        const auto status = query(options_.name, ns_t_srv, reply, error);
        if (status == answer::failed) return failed(std::move(error));
        std::vector<dns_service> services;
        for (auto& s : reply.services)
            if (!s.target.empty() && s.port != 0) services.push_back(std::move(s));
        if (status == answer::none || services.empty()) return empty(status == answer::none ? error : "no SRV targets");
        // Priority groups in SRV order: the lowest number is group 0 (RFC 2782: tried first).
        std::set<std::uint16_t> priorities;
        for (const auto& s : services) priorities.insert(s.priority);
        std::uint32_t ttl = std::numeric_limits<std::uint32_t>::max();
        std::vector<endpoint> out;
        std::map<std::string, addresses_of> targets;
        for (const auto& s : services) {
            auto it = targets.find(s.target);
            if (it == targets.end()) {
                // Addresses the additional section carries, else a query of their own.
                addresses_of known;
                for (const auto& a : reply.addresses)
                    if (a.owner == s.target && (a.ipv6 ? options_.ipv6 : options_.ipv4)) known.found.push_back(a);
                if (!known.found.empty()) known.status = answer::records;
                else known = query_addresses(s.target);
                if (known.status == answer::failed) return failed(s.target + ": " + known.error);
                it = targets.emplace(s.target, std::move(known)).first;
            }
            const auto rank = static_cast<std::uint32_t>(std::distance(priorities.begin(), priorities.find(s.priority)));
            ttl = std::min(ttl, s.ttl);
            for (const auto& a : it->second.found) {
                ttl = std::min(ttl, a.ttl);
                // RFC 2782's weight 0 ("no preference") as the smallest weight.
                out.push_back({.address = endpoint_address(options_.scheme, a.text, a.ipv6, s.port),
                               .weight = std::clamp<std::int32_t>(s.weight, 1, endpoint::max_weight),
                               .priority = std::min(rank, endpoint::max_priority),
                               .idempotency_scope = options_.idempotency_scope});
            }
        }
        if (out.empty()) return empty("no address for any SRV target");
        return finish(std::move(out), ttl);
    }

    dns_discovery_options options_;
    std::unique_ptr<resolver_state> state_;
    std::vector<unsigned char> buffer_ = std::vector<unsigned char>(65535);
};

}  // namespace resil::detail
