#include <resil/sse.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"

using namespace std::chrono_literals;
using namespace std::string_literals;
using namespace std::string_view_literals;
using resil::sse::error_code;
using resil_test::allocations;

namespace {

// An event as the tests keep it: owned copies of the views.
struct kept_event {
    std::string type;
    std::string data;
    std::string id;
    std::optional<std::chrono::milliseconds> retry;
    bool operator==(const kept_event&) const = default;
};

kept_event msg(std::string data, std::string id = {}, std::string type = "message",
               std::optional<std::chrono::milliseconds> retry = std::nullopt) {
    return {std::move(type), std::move(data), std::move(id), retry};
}

// What a reader did with one stream: its events, comments, error and where.
struct transcript {
    std::vector<kept_event> events;
    std::vector<std::string> comments;
    error_code error = error_code::none;
    std::uint64_t offset = 0;
    error_code finished = error_code::none;
    std::string last_id;
    std::optional<std::chrono::milliseconds> reconnection;
    bool operator==(const transcript&) const = default;
};

// Feeds `text` in the pieces `cuts` gives (offsets where a new chunk starts),
// each chunk copied to a buffer of its own size, so a read past a chunk's end
// is caught by ASan; then finishes the stream.
transcript read_stream(std::string_view text, const std::vector<std::size_t>& cuts,
                       resil::sse::reader_options options = {}) {
    resil::sse::reader r(options);
    transcript t;
    auto on_event = [&](const resil::sse::event& e) {
        t.events.push_back({std::string(e.type), std::string(e.data), std::string(e.id), e.retry});
    };
    auto on_comment = [&](std::string_view c) { t.comments.emplace_back(c); };
    std::size_t from = 0;
    auto feed_to = [&](std::size_t to) {
        const std::vector<char> chunk(text.begin() + static_cast<std::ptrdiff_t>(from),
                                      text.begin() + static_cast<std::ptrdiff_t>(to));
        t.error = r.feed(std::string_view(chunk.data(), chunk.size()), on_event, on_comment);
        from = to;
    };
    for (const std::size_t cut : cuts) feed_to(cut);
    feed_to(text.size());
    t.finished = r.finish();
    t.error = r.error();
    t.offset = r.error_offset();
    t.last_id = std::string(r.last_event_id());
    t.reconnection = r.reconnection_time();
    return t;
}

transcript read_whole(std::string_view text, resil::sse::reader_options options = {}) {
    return read_stream(text, {}, options);
}

transcript read_bytewise(std::string_view text, resil::sse::reader_options options = {}) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < text.size(); ++i) cuts.push_back(i);
    return read_stream(text, cuts, options);
}

std::vector<kept_event> events_of(std::string_view text, resil::sse::reader_options options = {}) {
    const auto whole = read_whole(text, options);
    // Every test stream gives the same result fed one byte at a time.
    CHECK(read_bytewise(text, options) == whole);
    return whole.events;
}

// A deterministic generator (splitmix64), so any failing input reproduces.
struct splitmix64 {
    std::uint64_t state;
    std::uint64_t operator()() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>((*this)() % n); }
};

}  // namespace

TEST_CASE("sse: the standard's examples") {
    // WHATWG HTML §9.2.1 and §9.2.6.
    CHECK(events_of("data: This is the first message.\n\n"
                    "data: This is the second message, it\n"
                    "data: has two lines.\n\n"
                    "data: This is the third message.\n\n") ==
          std::vector{msg("This is the first message."), msg("This is the second message, it\nhas two lines."),
                      msg("This is the third message.")});

    CHECK(events_of("event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n") ==
          std::vector{msg("73857293", "", "add"), msg("2153", "", "remove"), msg("113411", "", "add")});

    CHECK(events_of("data: YHOO\ndata: +2\ndata: 10\n\n") == std::vector{msg("YHOO\n+2\n10")});

    // The third event has no blank line after it: discarded at the end of the stream.
    const auto t = read_whole(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n");
    CHECK(t.events == std::vector{msg("first event", "1"), msg("second event", "")});
    CHECK(t.comments == std::vector{" test stream"s});
    CHECK(t.finished == error_code::none);

    // "data" alone appends an empty line: the first event's data is empty,
    // the second's a single newline; the last "data:" never completes.
    CHECK(events_of("data\n\ndata\ndata\n\ndata:") == std::vector{msg(""), msg("\n")});

    // One space after the colon is removed, only one.
    CHECK(events_of("data:test\n\ndata: test\n\ndata:  test\n\n") ==
          std::vector{msg("test"), msg("test"), msg(" test")});
}

TEST_CASE("sse: every line end, mixed, and split across chunks") {
    const auto expected = std::vector{msg("a\nb", "", "x"), msg("c")};
    for (const std::string_view eol : {"\n"sv, "\r"sv, "\r\n"sv}) {
        std::string text;
        for (const std::string_view line : {"event: x"sv, "data: a"sv, "data: b"sv, ""sv, "data: c"sv, ""sv}) {
            text += line;
            text += eol;
        }
        CAPTURE(text);
        CHECK(events_of(text) == expected);
    }
    CHECK(events_of("event: x\rdata: a\r\ndata: b\n\r\ndata: c\r\r") == expected);

    // A CR at the end of a chunk: the LF opening the next one belongs to it.
    CHECK(read_stream("data: a\r\n\r\n", {8}).events == std::vector{msg("a")});
    CHECK(read_stream("data: a\r\n\r\n", {8, 9, 10}).events == std::vector{msg("a")});
    // ...unless it is not an LF: then it starts the next line.
    CHECK(read_stream("data: a\r\r", {8}).events == std::vector{msg("a")});
    CHECK(read_stream("data: a\rdata: b\r\r", {8}).events == std::vector{msg("a\nb")});
    // Two CRs are two lines, never one CRLF.
    CHECK(events_of("data: a\r\rdata: b\n\n") == std::vector{msg("a"), msg("b")});
    // An LF after an empty chunk following the CR still pairs with it.
    resil::sse::reader r;
    std::vector<std::string> data;
    auto keep = [&](const resil::sse::event& e) { data.emplace_back(e.data); };
    CHECK(r.feed("data: a\r"sv, keep) == error_code::none);
    CHECK(r.feed(""sv, keep) == error_code::none);
    CHECK(r.feed("\n\n"sv, keep) == error_code::none);
    CHECK(data == std::vector{"a"s});
}

TEST_CASE("sse: a BOM is skipped at the start of a stream only") {
    const std::string bom = "\xEF\xBB\xBF";
    CHECK(events_of(bom + "data: x\n\n") == std::vector{msg("x")});
    // In any split (events_of also feeds byte by byte).
    CHECK(read_stream(bom + "data: x\n\n", {1}).events == std::vector{msg("x")});
    CHECK(read_stream(bom + "data: x\n\n", {2, 5}).events == std::vector{msg("x")});
    // A second BOM is text: here part of a field name nobody knows.
    CHECK(events_of(bom + bom + "data: x\n\n").empty());
    CHECK(events_of("data: " + bom + "x\n\n") == std::vector{msg(bom + "x")});
    // A stream that starts like a BOM but is not one: its bytes are text.
    resil::sse::reader_options raw;
    raw.validate_utf8 = false;
    CHECK(events_of("\xEF\xBB:c\n" "data: y\n\n", raw) == std::vector{msg("y")});
}

TEST_CASE("sse: bytes that start like a BOM and are not one are read as text") {
    resil::sse::reader_options raw;
    raw.validate_utf8 = false;
    // "\xEF\xBB" then "data: y": the first line's field name is "\xEF\xBBdata", unknown.
    CHECK(events_of("\xEF\xBB" "data: y\n\ndata: z\n\n", raw) == std::vector{msg("z")});
    // "\xEF" then ":c": a field named "\xEF" with value "c", not a comment.
    const auto t = read_bytewise("\xEF:c\n\n", raw);
    CHECK(t.comments.empty());
    CHECK(t.events.empty());
    // With UTF-8 checked, they are an invalid sequence, found where it breaks.
    const auto checked = read_whole("\xEF\xBB" "data: y\n\n");
    CHECK(checked.error == error_code::invalid_utf8);
    CHECK(checked.offset == 2);
    CHECK(read_bytewise("\xEF\xBB" "data: y\n\n") == checked);
    // A stream holding part of a BOM only ends inside a sequence.
    CHECK(read_whole("\xEF\xBB").finished == error_code::invalid_utf8);
    CHECK(read_whole("\xEF\xBB", raw).finished == error_code::none);
}

TEST_CASE("sse: fields") {
    SECTION("id holding NUL is ignored") {
        const auto t = read_whole("id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n"sv);
        CHECK(t.events == std::vector{msg("a", "1"), msg("b", "1")});
        CHECK(t.last_id == "1");
    }
    SECTION("the last event id persists across events, until an id field changes it") {
        CHECK(events_of("id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 8\ndata: d\n\n") ==
              std::vector{msg("a", "7"), msg("b", "7"), msg("c", ""), msg("d", "8")});
        // An id takes effect at the blank line even when the event has no data.
        const auto t = read_whole("id: 5\n\ndata: x\n\n");
        CHECK(t.events == std::vector{msg("x", "5")});
        CHECK(read_whole("id: 5\n\n").last_id == "5");
        // An event cut off by the end of the stream never sets it.
        CHECK(read_whole("id: 5\n\nid: 6\ndata: y\n").last_id == "5");
    }
    SECTION("retry: ASCII digits only") {
        CHECK(events_of("retry: 1500\ndata: x\n\ndata: y\n\n") == std::vector{msg("x", "", "message", 1500ms), msg("y")});
        for (const std::string_view bad : {"retry: 15a\n"sv, "retry: -1\n"sv, "retry: +1\n"sv, "retry:  15\n"sv,
                                           "retry:\n"sv, "retry\n"sv, "retry: 1.5\n"sv, "retry: 15 \n"sv}) {
            CAPTURE(bad);
            const auto t = read_whole(std::string(bad) + "data: x\n\n");
            CHECK(t.events == std::vector{msg("x")});
            CHECK(!t.reconnection);
        }
        CHECK(read_whole("retry:0\n").reconnection == 0ms);
        CHECK(read_whole("retry: 007\n").reconnection == 7ms);  // base ten, not octal
        // Kept for the stream even without an event; the latest valid one wins.
        const auto t = read_whole("retry: 3000\n\nretry: x\n\ndata: a\n\n");
        CHECK(t.reconnection == 3000ms);
        CHECK(t.events == std::vector{msg("a", "", "message", 3000ms)});  // read since the previous event
        // Too large for milliseconds: saturates.
        CHECK(read_whole("retry: 99999999999999999999999999\n").reconnection == std::chrono::milliseconds::max());
    }
    SECTION("a field without a colon has an empty value") {
        CHECK(events_of("event\ndata: x\n\n") == std::vector{msg("x")});
        CHECK(events_of("data\n\n") == std::vector{msg("")});
    }
    SECTION("values may hold colons; names are case-sensitive; unknown fields are ignored") {
        CHECK(events_of("data: a:b: c\n\n") == std::vector{msg("a:b: c")});
        CHECK(events_of("Data: x\n\nDATA: y\n\n").empty());
        CHECK(events_of("foo: bar\ndata: x\nbaz\n\n") == std::vector{msg("x")});
        CHECK(events_of("data : x\n\n").empty());  // the name is "data "
    }
    SECTION("an event without data is not dispatched; blank lines reset the type") {
        CHECK(events_of("event: x\n\n").empty());
        CHECK(events_of("event: a\n\ndata: x\n\n") == std::vector{msg("x")});
        CHECK(events_of("event: a\ndata: 1\n\ndata: 2\n\n") == std::vector{msg("1", "", "a"), msg("2")});
        CHECK(events_of("event:\ndata: x\n\n") == std::vector{msg("x")});
        CHECK(events_of("event: a\nevent: b\ndata: x\n\n") == std::vector{msg("x", "", "b")});
        CHECK(events_of("\n\n\n\n").empty());
    }
    SECTION("comments") {
        const auto t = read_whole(":\n: ping\n:x:y\ndata: a\n:inside\n\n");
        CHECK(t.comments == std::vector{""s, " ping"s, "x:y"s, "inside"s});
        CHECK(t.events == std::vector{msg("a")});
        // Without a comment callback they are skipped all the same.
        resil::sse::reader r;
        int n = 0;
        CHECK(r.feed(": ping\ndata: a\n\n"sv, [&](const resil::sse::event&) { ++n; }) == error_code::none);
        CHECK(n == 1);
    }
    SECTION("empty lines of data and long multi-line events") {
        CHECK(events_of("data:\ndata:\ndata: x\ndata:\n\n") == std::vector{msg("\n\nx\n")});
        std::string text;
        std::string expected;
        for (int i = 0; i < 1000; ++i) {
            // Appended piece by piece: g++ 12 -O3 misreads `"literal" + string`
            // as an overlapping copy (-Wrestrict, GCC bug 105329).
            text.append("data: line ").append(std::to_string(i)).append("\n");
            expected.append(i ? "\nline " : "line ").append(std::to_string(i));
        }
        CHECK(events_of(text + "\n") == std::vector{msg(expected)});
    }
}

TEST_CASE("sse: the end of the stream discards an unfinished event; the source's state carries over") {
    resil::sse::reader r;
    std::vector<kept_event> got;
    auto keep = [&](const resil::sse::event& e) {
        got.push_back({std::string(e.type), std::string(e.data), std::string(e.id), e.retry});
    };
    CHECK(r.feed("id: 1\nretry: 50\ndata: a\n\nid: 2\nevent: t\ndata: cut"sv, keep) == error_code::none);
    CHECK(r.bytes_read() == 49);
    CHECK(r.finish() == error_code::none);
    CHECK(got == std::vector{msg("a", "1", "message", 50ms)});
    CHECK(r.bytes_read() == 0);
    // The next stream (a reconnection): the id and retry stay; the cut event's
    // type, data and id are gone; a BOM may open it again.
    CHECK(r.last_event_id() == "1");
    CHECK(r.reconnection_time() == 50ms);
    CHECK(r.feed("\xEF\xBB\xBF" "data: b\n\n"sv, keep) == error_code::none);
    CHECK(got.back() == msg("b", "1"));
    // reset() forgets the source.
    r.reset();
    CHECK(r.last_event_id().empty());
    CHECK(!r.reconnection_time());
    CHECK(r.feed("data: c\n\n"sv, keep) == error_code::none);
    CHECK(got.back() == msg("c"));
}

TEST_CASE("sse: a reset reader given the last event ID back goes on with it") {
    resil::sse::reader r;
    std::vector<kept_event> got;
    auto keep = [&](const resil::sse::event& e) {
        got.push_back({std::string(e.type), std::string(e.data), std::string(e.id), e.retry});
    };
    CHECK(r.feed("id: 7\ndata: a\n\ndata: \xC3"sv, keep) == error_code::none);
    CHECK(r.finish() == error_code::invalid_utf8);  // cut inside a UTF-8 sequence
    r.reset();
    r.set_last_event_id("7");
    CHECK(r.last_event_id() == "7");
    CHECK(r.feed("data: b\n\n"sv, keep) == error_code::none);
    CHECK(got.back() == msg("b", "7"));
    // An event's own id still replaces it; an ID holding NUL is ignored.
    CHECK(r.feed("id: 8\ndata: c\n\n"sv, keep) == error_code::none);
    CHECK(r.last_event_id() == "8");
    r.set_last_event_id("a\0b"sv);
    CHECK(r.last_event_id() == "8");
    // An unfinished event's `id` is dropped at finish(), back to the one set.
    r.set_last_event_id("9");
    CHECK(r.feed("id: 10\ndata: cut"sv, keep) == error_code::none);
    CHECK(r.finish() == error_code::none);
    CHECK(r.last_event_id() == "9");
    CHECK(r.feed("data: d\n\n"sv, keep) == error_code::none);
    CHECK(got.back() == msg("d", "9"));
}

TEST_CASE("sse: limits stop the reader with an error, after the events before them") {
    resil::sse::reader_options o;
    o.max_line_bytes = 8;
    o.max_event_bytes = 5;
    SECTION("a line of exactly the limit passes; one byte more does not") {
        CHECK(events_of("data:123\n\n", o) == std::vector{msg("123")});
        CHECK(events_of(":2345678\n\n", o).empty());
        const auto t = read_whole("data: 1\n\n:23456789\ndata: 2\n\n", o);
        CHECK(t.events == std::vector{msg("1")});
        CHECK(t.error == error_code::line_too_long);
        CHECK(t.offset == 9);
        CHECK(read_bytewise("data: 1\n\n:23456789\ndata: 2\n\n", o) == t);
        CHECK(read_stream("data: 1\n\n:23456789\ndata: 2\n\n", {12}, o) == t);
        CHECK(t.finished == error_code::line_too_long);
    }
    SECTION("a line without an end is bounded too") {
        resil::sse::reader r(o);
        auto ignore = [](const resil::sse::event&) {};
        CHECK(r.feed(":1234"sv, ignore) == error_code::none);
        CHECK(r.feed("5678"sv, ignore) == error_code::line_too_long);
        CHECK(r.error_offset() == 0);
        // Sticky: later input is refused, whatever it is.
        CHECK(r.feed("\n\ndata: x\n\n"sv, ignore) == error_code::line_too_long);
        CHECK(r.finish() == error_code::line_too_long);
        CHECK(r.error_message() ==
              "event stream: the line starting at byte 0 is longer than `max_line_bytes` (8 bytes)");
        r.reset();
        CHECK(r.error() == error_code::none);
        CHECK(r.error_message().empty());
        CHECK(r.feed("data: x\n\n"sv, ignore) == error_code::none);
    }
    SECTION("an event's data") {
        o.max_line_bytes = 64;
        CHECK(events_of("data: 12345\n\n", o) == std::vector{msg("12345")});
        CHECK(events_of("data: 123\ndata: 4\n\n", o) == std::vector{msg("123\n4")});
        const auto t = read_whole("data: 1\n\ndata: 123\ndata: 45\n\n", o);
        CHECK(t.events == std::vector{msg("1")});
        CHECK(t.error == error_code::event_too_large);
        CHECK(t.offset == 19);
        CHECK(read_bytewise("data: 1\n\ndata: 123\ndata: 45\n\n", o) == t);
        CHECK(read_whole("data:123456\n\n", o).error == error_code::event_too_large);
        resil::sse::reader r(o);
        CHECK(r.feed("data:123456\n"sv, [](const resil::sse::event&) {}) == error_code::event_too_large);
        CHECK(r.error_message() == "event stream: the data of the event reaching the line at byte 0 is longer than "
                                   "`max_event_bytes` (5 bytes)");
    }
    SECTION("the stream's length") {
        resil::sse::reader_options b;
        b.max_body_bytes = 20;
        const auto t = read_whole("data: 1\n\ndata: 2\n\ndata: 3\n\n", b);  // the limit falls in "data: 3"
        CHECK(t.events == std::vector{msg("1"), msg("2")});
        CHECK(t.error == error_code::body_too_large);
        CHECK(t.offset == 20);
        CHECK(read_bytewise("data: 1\n\ndata: 2\n\ndata: 3\n\n", b) == t);
        CHECK(read_whole("data: 1\n\ndata: 2\n\n", b).error == error_code::none);  // 18 bytes
        resil::sse::reader r(b);
        CHECK(r.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n"sv, [](const resil::sse::event&) {}) ==
              error_code::body_too_large);
        CHECK(r.error_message() == "event stream: longer than `max_body_bytes` (20 bytes)");
    }
}

TEST_CASE("sse: invalid UTF-8 stops the reader where it is found") {
    const std::string_view valid[] = {
        "data: caf\xC3\xA9\n\n"sv,                // 2 bytes
        "data: \xE2\x82\xAC\n\n"sv,               // 3 bytes (€)
        "data: \xED\x9F\xBF\n\n"sv,               // U+D7FF, the last before the surrogates
        "data: \xEE\x80\x80\n\n"sv,               // U+E000, the first after them
        "data: \xF0\x9F\x98\x80\n\n"sv,           // 4 bytes
        "data: \xF4\x8F\xBF\xBF\n\n"sv,           // U+10FFFF
        "data: \xEF\xBF\xBF and \xEF\xBB\xBF\n\n"sv,  // U+FFFF, and a BOM inside the text
    };
    for (const auto text : valid) {
        CAPTURE(text);
        const auto t = read_whole(text);
        CHECK(t.error == error_code::none);
        REQUIRE(t.events.size() == 1);
        CHECK(t.events[0].data == text.substr(6, text.size() - 8));
        CHECK(read_bytewise(text) == t);
    }
    struct bad_case {
        std::string_view text;
        std::uint64_t offset;
    };
    const bad_case invalid[] = {
        {"data: a\n\ndata: \x80\n\n"sv, 15},            // a stray continuation byte
        {"data: a\n\ndata: \xC0\x80\n\n"sv, 15},        // overlong NUL
        {"data: a\n\ndata: \xC1\xBF\n\n"sv, 15},        // overlong 2-byte
        {"data: a\n\ndata: \xE0\x80\x80\n\n"sv, 16},    // overlong 3-byte
        {"data: a\n\ndata: \xF0\x80\x80\x80\n\n"sv, 16},  // overlong 4-byte
        {"data: a\n\ndata: \xED\xA0\x80\n\n"sv, 16},    // a surrogate (U+D800)
        {"data: a\n\ndata: \xED\xBF\xBF\n\n"sv, 16},    // a surrogate (U+DFFF)
        {"data: a\n\ndata: \xF4\x90\x80\x80\n\n"sv, 16},  // past U+10FFFF
        {"data: a\n\ndata: \xF5\x80\x80\x80\n\n"sv, 15},  // a lead byte no code point has
        {"data: a\n\ndata: \xFF\n\n"sv, 15},
        {"data: a\n\ndata: \xE2\x82\n\n"sv, 17},        // cut short by the line end
        {"data: a\n\n:\xC3(\n\n"sv, 11},                // in a comment too
        {"data: a\n\nx\xC3\n\n"sv, 11},                 // and in an unknown field
    };
    for (const auto& [text, offset] : invalid) {
        CAPTURE(text);
        const auto t = read_whole(text);
        CHECK(t.events == std::vector{msg("a")});
        CHECK(t.error == error_code::invalid_utf8);
        CHECK(t.offset == offset);
        CHECK(read_bytewise(text) == t);
        // Off, the bytes pass as they came.
        resil::sse::reader_options raw;
        raw.validate_utf8 = false;
        CHECK(read_whole(text, raw).error == error_code::none);
    }
    SECTION("a stream ending inside a sequence") {
        const auto t = read_whole("data: a\n\ndata: \xE2\x82"sv);
        CHECK(t.events == std::vector{msg("a")});
        CHECK(t.finished == error_code::invalid_utf8);
        resil::sse::reader r;
        auto ignore = [](const resil::sse::event&) {};
        CHECK(r.feed("data: \xE2\x82"sv, ignore) == error_code::none);  // not yet: the next chunk could complete it
        CHECK(r.feed("\xAC\n"sv, ignore) == error_code::none);
        CHECK(r.finish() == error_code::none);
        CHECK(r.feed("data: \xF0\x9F\x98"sv, ignore) == error_code::none);
        CHECK(r.finish() == error_code::invalid_utf8);
        CHECK(r.error_offset() == 9);
        CHECK(r.error_message() == "event stream: invalid UTF-8 at byte 9");
    }
    SECTION("a sequence split across chunks") {
        const std::string_view text = "data: \xF0\x9F\x98\x80\xE2\x82\xAC\n\n";
        for (std::size_t cut = 1; cut < text.size(); ++cut) {
            CAPTURE(cut);
            CHECK(read_stream(text, {cut}).events == std::vector{msg("\xF0\x9F\x98\x80\xE2\x82\xAC")});
        }
    }
}

TEST_CASE("sse: any split of a stream gives the same events, comments and errors") {
    // Pieces of streams, with small limits so that errors happen too; one
    // stream in four also draws bytes that are not UTF-8.
    const std::string_view pieces[] = {
        "data: ", "data: ", "data:", "data", "event: add", "event:", "id: 1", "id: 22", "id", "retry: 100",
        "retry: x", ":ping", ": keep-alive", "\n", "\n", "\n", "\n", "\n\n", "\n\n", "\r\n\r\n", "\r", "\r\n", "\r\n", "\r\n", "hello",
        "world", "a:b", " ", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xEF\xBB\xBF", "x\0y"sv, "0123456789", "foo: bar",
    };
    const std::string_view broken[] = {"\xC3", "\xA9", "\xED\xA0\x80", "\xF4\x90", "\xC0\x80"};
    resil::sse::reader_options small;
    small.max_line_bytes = 40;
    small.max_event_bytes = 80;
    resil::sse::reader_options lenient = small;
    lenient.validate_utf8 = false;
    resil::sse::reader_options bounded;
    bounded.max_body_bytes = 150;
    splitmix64 rng{2024};
    int with_events = 0;
    int with_errors = 0;
    for (int round = 0; round < 400; ++round) {
        std::string text;
        if (rng.below(4) == 0) text += "\xEF\xBB\xBF";
        const auto count = 5 + rng.below(60);
        const bool with_broken = rng.below(4) == 0;
        for (std::size_t i = 0; i < count; ++i) {
            if (with_broken && rng.below(10) == 0) text += broken[rng.below(std::size(broken))];
            else text += pieces[rng.below(std::size(pieces))];
        }
        for (const auto& options : {small, lenient, bounded}) {
            const auto whole = read_whole(text, options);
            with_events += whole.events.empty() ? 0 : 1;
            with_errors += whole.error == error_code::none ? 0 : 1;
            CAPTURE(round, text);
            CHECK(read_bytewise(text, options) == whole);
            for (int split = 0; split < 4; ++split) {
                std::vector<std::size_t> cuts;
                std::size_t at = 0;
                while (true) {
                    at += 1 + rng.below(12);
                    if (at >= text.size()) break;
                    cuts.push_back(at);
                }
                CHECK(read_stream(text, cuts, options) == whole);
            }
        }
    }
    // The corpus exercised both paths.
    CHECK(with_events > 300);
    CHECK(with_errors > 100);
}

TEST_CASE("sse: a warmed-up reader allocates nothing") {
    // Events as a model API streams them, with ids, types, comments, CRLF
    // line ends, multi-line data, and lines split across chunks.
    std::string stream;
    for (int i = 0; i < 200; ++i) {
        stream += ": ping\r\nid: " + std::to_string(i) + "\r\nevent: delta\r\n";
        stream += R"(data: {"choices":[{"delta":{"content":"token )" + std::to_string(i) + R"("}}]})" "\r\n";
        if (i % 3 == 0) stream += "data: second line of the event\r\n";
        stream += "\r\n";
    }
    resil::sse::reader r;
    std::size_t events = 0;
    std::size_t bytes = 0;
    auto on_event = [&](const resil::sse::event& e) {
        ++events;
        bytes += e.data.size() + e.id.size() + e.type.size();
    };
    std::size_t comments = 0;
    auto on_comment = [&](std::string_view) { ++comments; };
    auto feed_all = [&] {
        for (std::size_t at = 0; at < stream.size(); at += 97) {
            const std::string_view chunk = std::string_view(stream).substr(at, 97);
            REQUIRE(r.feed(chunk, on_event, on_comment) == error_code::none);
        }
        REQUIRE(r.finish() == error_code::none);
    };
    feed_all();  // warm-up: the buffers grow to what this stream needs
    const auto before = allocations.load();
    for (int i = 0; i < 5; ++i) feed_all();
    if constexpr (resil_test::counting_allocations) CHECK(allocations.load() == before);
    CHECK(events == 6 * 200);
    CHECK(comments == 6 * 200);
    CHECK(bytes > 6 * 200 * 50);
}

TEST_CASE("sse: a callback that throws or re-enters stops the reader") {
    resil::sse::reader r;
    int calls = 0;
    auto throwing = [&](const resil::sse::event&) {
        ++calls;
        throw std::runtime_error("consumer failed");
    };
    CHECK_THROWS_AS(r.feed("data: a\n\ndata: b\n\n"sv, throwing), std::runtime_error);
    CHECK(calls == 1);
    CHECK(r.error() == error_code::interrupted);
    CHECK(r.feed("data: c\n\n"sv, [](const resil::sse::event&) {}) == error_code::interrupted);
    CHECK(r.error_message() == "event stream: a callback threw or re-entered the reader; reset() it before reuse");

    resil::sse::reader s;
    error_code inner = error_code::none;
    std::vector<std::string> seen;
    auto reentering = [&](const resil::sse::event& e) {
        seen.emplace_back(e.data);
        inner = s.feed("data: nested\n\n"sv, [](const resil::sse::event&) {});
    };
    CHECK(s.feed("data: a\n\ndata: b\n\n"sv, reentering) == error_code::none);
    CHECK(inner == error_code::interrupted);
    CHECK(seen == std::vector{"a"s, "b"s});  // the refused call changed nothing
}

TEST_CASE("sse: a short literal fed whole") {
    // Compiles without warnings at g++ -O3: the reader's 64-byte ASCII check
    // is not inlined where the literal's size is known.
    resil::sse::reader r;
    int n = 0;
    CHECK(r.feed(std::string_view("data: x\n\n"), [&n](const resil::sse::event&) { ++n; }) == error_code::none);
    CHECK(n == 1);
}

TEST_CASE("sse: bytes as a span") {
    const std::string_view text = "data: x\n\n";
    resil::sse::reader r;
    std::string got;
    CHECK(r.feed(std::as_bytes(std::span(text.data(), text.size())),
                 [&](const resil::sse::event& e) { got = e.data; }) == error_code::none);
    CHECK(got == "x");
}

TEST_CASE("sse: options are validated in one place") {
    CHECK(!resil::sse::reader_options{}.validate());
    resil::sse::reader_options o;
    o.max_line_bytes = 0;
    REQUIRE(o.validate());
    CHECK(o.validate()->message() == "`max_line_bytes` must be at least 1, got 0");
    CHECK_THROWS_WITH(resil::sse::reader(o), "resil::sse::reader: `max_line_bytes` must be at least 1, got 0");
    o = {};
    o.max_event_bytes = 0;
    CHECK(o.validate()->message() == "`max_event_bytes` must be at least 1, got 0");
    o = {};
    o.max_body_bytes = 0;
    CHECK(o.validate()->message() == "`max_body_bytes` must be at least 1, got 0");
    CHECK(resil::sse::to_string(error_code::event_too_large) == "event_too_large");
}

TEST_CASE("sse: the documented usage") {
    // docs/sse.md, "Usage": chunks as a transport hands them.
    std::vector<std::string> tokens;
    resil::sse::reader sse({.max_line_bytes = 64 << 10, .max_event_bytes = 1 << 20});
    auto on_event = [&](const resil::sse::event& e) {
        if (e.data != "[DONE]") tokens.emplace_back(e.data);  // the views live for this call only
    };
    auto on_comment = [&](std::string_view) { /* a keep-alive: restart the idle timer */ };
    const std::vector<std::string_view> chunks_as_they_arrive = {"data: {\"a\":1}\n\nda"sv, "ta: {\"a\":2}\r\n\r"sv,
                                                                 "\n: ping\n\ndata: [DONE]\n\n"sv};
    auto read_all = [&] {
        for (std::string_view chunk : chunks_as_they_arrive) {
            if (sse.feed(chunk, on_event, on_comment) != resil::sse::error_code::none)
                throw std::runtime_error(sse.error_message());  // the position and the limit, in words
        }
        sse.finish();  // the end of the body: an event without its blank line is discarded
    };
    CHECK_NOTHROW(read_all());
    CHECK(sse.error() == resil::sse::error_code::none);
    CHECK(tokens == std::vector{R"({"a":1})"s, R"({"a":2})"s});
}
