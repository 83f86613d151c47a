// Fuzz harness: resil::sse::reader.
//
// Input: one byte choosing the options (UTF-8 checked or not, small or
// default limits, a stream limit or none), one byte seeding the split, then
// the stream. Properties, for every input:
// - fed whole, fed in the pieces the seed draws, and fed one byte at a time,
//   the reader makes the same calls (events, comments) and stops with the
//   same error at the same offset, and finish() answers the same;
// - no event carries more data than max_event_bytes, no comment, id or type
//   read from the stream is longer than max_line_bytes;
// - with UTF-8 checked, every view handed over is valid UTF-8 (checked here
//   by a decoder of its own);
// - an error's offset lies within the bytes fed (or at max_body_bytes);
// - when the reader reports no error, its events and comments are those of a
//   plain reading of the standard's algorithm over the whole input.
#include <resil/sse.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"

namespace {

struct seen_event {
    std::string type;
    std::string data;
    std::string id;
    std::optional<std::chrono::milliseconds> retry;
    bool operator==(const seen_event&) const = default;
};

struct transcript {
    std::vector<seen_event> events;
    std::vector<std::string> comments;
    resil::sse::error_code error = resil::sse::error_code::none;
    std::uint64_t offset = 0;
    resil::sse::error_code finished = resil::sse::error_code::none;
    std::string last_id;
    bool operator==(const transcript&) const = default;
};

// UTF-8 by the book (Unicode table 3-7), written apart from the reader's.
bool is_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            len = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07u;
        } else {
            return false;
        }
        if (i + len > s.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3Fu);
        }
        static constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

transcript read(std::string_view text, const std::vector<std::size_t>& cuts, const resil::sse::reader_options& o) {
    resil::sse::reader r(o);
    transcript t;
    auto on_event = [&](const resil::sse::event& e) {
        FUZZ_CHECK(e.data.size() <= o.max_event_bytes);
        // The type is read from the stream, or the default "message".
        FUZZ_CHECK(e.type == "message" || e.type.size() <= o.max_line_bytes);
        FUZZ_CHECK(e.id.size() <= o.max_line_bytes);
        FUZZ_CHECK(!e.type.empty());
        FUZZ_CHECK(e.id.find('\0') == std::string_view::npos);
        if (o.validate_utf8) FUZZ_CHECK(is_utf8(e.data) && is_utf8(e.type) && is_utf8(e.id));
        t.events.push_back({std::string(e.type), std::string(e.data), std::string(e.id), e.retry});
    };
    auto on_comment = [&](std::string_view c) {
        FUZZ_CHECK(c.size() < o.max_line_bytes);
        if (o.validate_utf8) FUZZ_CHECK(is_utf8(c));
        t.comments.emplace_back(c);
    };
    std::size_t from = 0;
    for (std::size_t k = 0; k <= cuts.size(); ++k) {
        const std::size_t to = k < cuts.size() ? cuts[k] : text.size();
        // Each chunk in a buffer of its own size: ASan sees a read past it.
        const std::string chunk(text.substr(from, to - from));
        const auto e = r.feed(std::string_view(chunk), on_event, on_comment);
        FUZZ_CHECK(e == r.error());
        from = to;
    }
    t.finished = r.finish();
    t.error = r.error();
    t.offset = r.error_offset();
    t.last_id = std::string(r.last_event_id());
    if (t.error != resil::sse::error_code::none) {
        FUZZ_CHECK(t.finished == t.error);
        if (t.error == resil::sse::error_code::body_too_large) FUZZ_CHECK(t.offset == o.max_body_bytes);
        else FUZZ_CHECK(t.offset <= text.size());
        FUZZ_CHECK(!r.error_message().empty());
    }
    return t;
}

// The standard's algorithm, read plainly over the whole stream (no limits).
transcript reference(std::string_view text) {
    transcript t;
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    std::string data;
    std::string type;
    std::string id_buffer;
    std::optional<std::chrono::milliseconds> retry;
    std::size_t i = 0;
    while (true) {
        const std::size_t eol = text.find_first_of("\r\n", i);
        if (eol == std::string_view::npos) break;  // an unterminated line is discarded
        const std::string_view line = text.substr(i, eol - i);
        i = eol + 1;
        if (text[eol] == '\r' && i < text.size() && text[i] == '\n') ++i;
        if (line.empty()) {
            t.last_id = id_buffer;
            if (!data.empty()) {
                data.pop_back();
                t.events.push_back({type.empty() ? "message" : type, data, t.last_id, retry});
                retry.reset();
            }
            data.clear();
            type.clear();
            continue;
        }
        if (line[0] == ':') {
            t.comments.emplace_back(line.substr(1));
            continue;
        }
        const std::size_t colon = line.find(':');
        const std::string_view name = line.substr(0, colon);
        std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
        if (name == "data") {
            data.append(value);
            data += '\n';
        } else if (name == "event") {
            type = value;
        } else if (name == "id") {
            if (value.find('\0') == std::string_view::npos) id_buffer = value;
        } else if (name == "retry" && !value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos) {
            std::int64_t ms = 0;
            for (const char c : value) {
                ms = ms > (INT64_MAX - 9) / 10 ? INT64_MAX : ms * 10 + (c - '0');
            }
            retry = std::chrono::milliseconds{ms};
        }
    }
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t choice = bytes[0];
    std::uint32_t seed = bytes[1] * 2654435761u + 1;
    const std::string_view text = resil_fuzz::text_of(bytes + 2, size - 2);

    resil::sse::reader_options o;
    o.validate_utf8 = (choice & 1) == 0;
    if (choice & 2) {
        o.max_line_bytes = 1 + (choice >> 4);          // 1..16
        o.max_event_bytes = 1 + 3 * (choice >> 4);     // 1..46
    }
    if (choice & 4) o.max_body_bytes = 1 + (static_cast<std::size_t>(choice) * 7) % 300;

    const transcript whole = read(text, {}, o);
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0;;) {
        seed = seed * 1103515245u + 12345u;
        at += 1 + (seed >> 16) % 16;
        if (at >= text.size()) break;
        cuts.push_back(at);
    }
    FUZZ_CHECK(read(text, cuts, o) == whole);
    cuts.clear();
    for (std::size_t at = 1; at < text.size(); ++at) cuts.push_back(at);
    FUZZ_CHECK(read(text, cuts, o) == whole);

    if (whole.error == resil::sse::error_code::none) {
        const transcript plain = reference(text);
        FUZZ_CHECK(plain.events == whole.events);
        FUZZ_CHECK(plain.comments == whole.comments);
        FUZZ_CHECK(plain.last_id == whole.last_id);
    }
    return 0;
}
