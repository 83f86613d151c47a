// Fuzz harness: what resil::curl's client does with a server's reply, as
// libcurl hands it over (resil::curl::detail::capture in
// resil/curl/detail/capture.hpp): header lines into the response's fields,
// the final head apart from trailers, body chunks within the limit.
//
// Input: the first byte picks the limits and the method (bit 0: HEAD; bits
// 1-2: max_body_bytes of 16, 1,000, 70,000 or 2 MiB; bit 3: max_header_bytes
// of 200 or 64 KiB). The rest is segments separated by LF: "H<line>" is a
// header line (CRLF appended, as libcurl delivers them; "H" alone ends a
// head), "B<bytes>" a body chunk, "R<n>" a body chunk of n×1000 'r' bytes (to
// reach the limits in a few bytes of input). Body segments before the end of
// the final head are skipped: libcurl delivers the head first. Feeding stops
// when a callback says stop, as libcurl does.
//
// Properties:
// - the body never holds more than max_body_bytes, in size or capacity;
// - header bytes past max_header_bytes stop the transfer, and so does a
//   line holding CR or NUL;
// - every field kept has a token name and a value without CR, LF or NUL;
// - once the final head ended, the head's fields never change again
//   (trailers go to trailers(), whatever they say, "HTTP/..." included);
// - a final head with a body that announces a Content-Length over the limit
//   stops the transfer before any body byte;
// - the idle limit read from a Keep-Alive field is none (-1) or in
//   [0, longest_keep_alive_timeout] seconds, and none until a field of the
//   current head names one.
#include <resil/curl/detail/capture.hpp>
#include <resil/curl/response.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"

namespace cd = resil::curl::detail;
using resil::curl::header_list;
using resil::curl::response;
using resil::curl::transport_status;

namespace {

using fields = std::vector<std::pair<std::string, std::string>>;

fields snapshot(header_list list) {
    fields out;
    for (const auto f : list) out.emplace_back(f.name, f.value);
    return out;
}

void check_fields(header_list list) {
    for (const auto f : list) {
        FUZZ_CHECK(cd::is_token(f.name));
        for (const char c : f.value) FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0');
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    constexpr std::size_t body_limits[] = {16, 1'000, 70'000, std::size_t{2} << 20};
    const std::uint8_t config = data[0];
    const bool head = (config & 1u) != 0;

    response r = response::from_failure(transport_status::other_error, CURLE_OK, false);
    cd::transfer_state t;
    t.max_body = body_limits[(config >> 1) & 3u];
    t.max_header_bytes = (config & 8u) != 0 ? 200 : 64 * 1024;
    t.start(r, !head);

    fields final_head;
    bool body_started = false;
    std::string_view rest = resil_fuzz::text_of(data + 1, size - 1);
    bool going = true;
    while (going && !rest.empty()) {
        const auto end = rest.find('\n');
        const auto segment = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        if (segment.empty()) continue;
        const auto payload = segment.substr(1);
        const bool trailers_before = t.in_trailers;
        switch (segment.front()) {
            case 'H': {
                const std::string line = std::string(payload) + "\r\n";
                const auto before = t.header_bytes;
                going = cd::capture::header_line(t, line);
                FUZZ_CHECK(t.header_bytes == before + line.size());
                if (t.header_bytes > t.max_header_bytes) FUZZ_CHECK(!going && t.headers_too_large);
                auto inner = payload;  // the callback drops the line's own trailing CR and LF
                while (!inner.empty() && inner.back() == '\r') inner.remove_suffix(1);
                if (inner.find_first_of(std::string_view("\r\0", 2)) != std::string_view::npos) FUZZ_CHECK(!going);
                if (trailers_before) FUZZ_CHECK(snapshot(r.headers()) == final_head);
                if (!trailers_before && t.in_trailers) final_head = snapshot(r.headers());
                // An announced size over the limit never lets a body byte in.
                if (!going && t.too_large) FUZZ_CHECK(r.body().empty() && !body_started);
                break;
            }
            case 'B':
            case 'R': {
                if (!t.in_trailers) break;
                std::string chunk(payload);
                if (segment.front() == 'R') {
                    std::size_t n = 0;
                    for (const char c : payload.substr(0, 3))
                        if (c >= '0' && c <= '9') n = n * 10 + static_cast<std::size_t>(c - '0');
                    chunk.assign(n * 1000, 'r');
                }
                const auto before = r.body().size();
                going = cd::capture::body_bytes(t, chunk);
                body_started = body_started || !chunk.empty();
                if (going) FUZZ_CHECK(r.body().size() == before + chunk.size());
                else FUZZ_CHECK(t.too_large && before + chunk.size() > t.max_body && r.body().size() == before);
                break;
            }
            default: break;
        }
        FUZZ_CHECK(t.keep_alive_timeout >= -1 && t.keep_alive_timeout <= cd::longest_keep_alive_timeout);
        if (t.keep_alive_timeout >= 0 && !t.in_trailers) FUZZ_CHECK(r.header("keep-alive").has_value());
        FUZZ_CHECK(r.body().size() <= t.max_body);
        FUZZ_CHECK(r.body().capacity() <= std::max<std::size_t>(t.max_body, 30));
        check_fields(r.headers());
        check_fields(r.trailers());
    }
    return 0;
}
