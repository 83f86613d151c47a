// resil/sse.hpp — a Server-Sent Events reader (text/event-stream, as the
// WHATWG HTML standard §9.2 "Parsing an event stream" and "Interpreting an
// event stream" define it), fed body bytes as they arrive, in any split.
//
//   resil::sse::reader sse;                                   // one per stream
//   auto on_event = [&](const resil::sse::event& e) { use(e.type, e.data); };
//   // in the transport's body callback, for every chunk:
//   if (sse.feed(chunk, on_event) != resil::sse::error_code::none) abort_transfer(sse.error_message());
//   // when the body ends:
//   sse.finish();                // an unterminated last event is discarded, as the standard says
//
// It knows nothing about the transport: the blocking curl client and an
// asynchronous one feed it the same way. A whole line lying in a chunk is
// parsed where it lies; only a line split across chunks and the data of an
// event not yet complete are copied, each into a buffer capped by its limit
// that keeps its capacity, so a warmed-up reader allocates nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "enum_name.hpp"
#include "detail/http_text.hpp"
#include "detail/platform.hpp"
#include "validation.hpp"

namespace resil::sse {

/// One dispatched event. The views point into the reader or into the chunk
/// being fed: valid during the callback only (copy what you keep).
struct event {
    /// The `event` field, or "message" when the event had none (or an empty one).
    std::string_view type;
    /// The `data` fields' values joined by '\n' (an event with no `data`
    /// field is never dispatched; `data:` alone gives an empty string).
    std::string_view data;
    /// The last event ID: the latest `id` field of this or an earlier event
    /// of the stream (what a reconnection sends as Last-Event-ID), or empty.
    std::string_view id;
    /// The reconnection time of the latest valid `retry` field read since
    /// the previous dispatched event, if any (reader::reconnection_time()
    /// keeps the latest one for the whole stream).
    std::optional<std::chrono::milliseconds> retry;
};

/// Why a reader stopped. Sticky: once set, feed() and finish() refuse input
/// and return it until reset().
enum class error_code : std::uint8_t {
    none,             ///< no error
    line_too_long,    ///< a line (without its line end) longer than reader_options::max_line_bytes
    event_too_large,  ///< an event's data longer than reader_options::max_event_bytes
    body_too_large,   ///< more bytes than reader_options::max_body_bytes in one stream
    invalid_utf8,     ///< a byte that cannot be UTF-8 here, or a stream ending inside a sequence
    interrupted,      ///< a callback threw, or called feed() / finish() on its own reader
};

/// "line_too_long", ...: the code's name.
[[nodiscard]] constexpr enum_name to_string(error_code code) noexcept {
    switch (code) {
        case error_code::none: return "none";
        case error_code::line_too_long: return "line_too_long";
        case error_code::event_too_large: return "event_too_large";
        case error_code::body_too_large: return "body_too_large";
        case error_code::invalid_utf8: return "invalid_utf8";
        case error_code::interrupted: return "interrupted";
    }
    return "unknown";
}

/// What a reader holds at most, and what it checks.
struct reader_options {
    /// The longest line accepted, line end excluded; a longer one is
    /// error_code::line_too_long. Bounds the buffer of a line split across
    /// chunks. Default 64 KiB; at least 1.
    std::size_t max_line_bytes = std::size_t{64} << 10;
    /// The most data one event may carry (its `data` values joined by '\n');
    /// more is error_code::event_too_large. Bounds the buffer of an event
    /// not yet complete. Default 1 MiB; at least 1.
    std::size_t max_event_bytes = std::size_t{1} << 20;
    /// The most bytes one stream (reset() or finish() to the next finish())
    /// may carry; more is error_code::body_too_large. Default: no limit, as
    /// an event stream may run for days (its memory is bounded by the two
    /// limits above anyway). At least 1.
    std::size_t max_body_bytes = std::numeric_limits<std::size_t>::max();
    /// Refuse bytes that are not UTF-8 (overlongs, surrogates, code points
    /// past U+10FFFF, stray continuation bytes, a sequence cut by the end of
    /// the stream) with error_code::invalid_utf8. Off, bytes are passed on
    /// as they came. Default on.
    bool validate_utf8 = true;

    /// The first invalid field, if any: every limit at least 1.
    [[nodiscard]] RESIL_DECL validation_result validate() const;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result reader_options::validate() const {
    if (auto bad = resil::detail::check_at_least("max_line_bytes", max_line_bytes, std::size_t{1})) return bad;
    if (auto bad = resil::detail::check_at_least("max_event_bytes", max_event_bytes, std::size_t{1})) return bad;
    if (auto bad = resil::detail::check_at_least("max_body_bytes", max_body_bytes, std::size_t{1})) return bad;
    return std::nullopt;
}
#endif

/// A callback for comment lines that does nothing: feed()'s default.
struct ignore_comments {
    /// Ignores the comment.
    constexpr void operator()(std::string_view) const noexcept {}
};

/// A push parser of one event stream at a time. Not thread-safe: one reader
/// per stream, fed by one thread at a time.
class reader {
public:
    /// Throws std::invalid_argument when `options` are invalid.
    explicit reader(reader_options options = {}) : options_(options) {
        throw_if_invalid("resil::sse::reader", options_.validate());
    }

    /// Reads the next bytes of the stream, calling on_event(const event&)
    /// for every event completed in them, and on_comment(std::string_view)
    /// with the text after the ':' of every comment line (a server's
    /// keep-alive ping: a reason to restart an idle timer). Returns the
    /// error that stopped the reader, if any: events completed before the
    /// offending byte were dispatched, nothing after it was read, and every
    /// later call returns the same error until reset(). The same bytes give
    /// the same calls and the same error however they are split.
    template <class OnEvent, class OnComment = ignore_comments>
    error_code feed(std::string_view bytes, OnEvent&& on_event, OnComment&& on_comment = OnComment{}) {
        if (error_ != error_code::none) return error_;
        const char* p = bytes.data();
        std::size_t n = bytes.size();
        // The stream limit first: what lies past it is never read.
        const auto room = options_.max_body_bytes - total_;  // total_ <= max_body_bytes always
        const bool over = n > room;
        if (over) n = static_cast<std::size_t>(room);
        std::size_t from = 0;
        if (!bom_done_) from = skip_bom(p, n);
        if (error_ == error_code::none && from < n) read(p + from, n - from, total_ + from, on_event, on_comment);
        total_ += n;
        if (over && error_ == error_code::none) fail(error_code::body_too_large, options_.max_body_bytes);
        return error_;
    }

    /// The same, for bytes as a transport hands them.
    template <class OnEvent, class OnComment = ignore_comments>
    error_code feed(std::span<const std::byte> bytes, OnEvent&& on_event, OnComment&& on_comment = OnComment{}) {
        return feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                    std::forward<OnEvent>(on_event), std::forward<OnComment>(on_comment));
    }

    /// Ends the stream: a last line or event without its terminating blank
    /// line is discarded (the standard's rule: a cut-off event is not
    /// dispatched). Returns error_code::invalid_utf8 when the stream ends
    /// inside a UTF-8 sequence (validate_utf8), or the reader's earlier
    /// error. The reader is then ready for the next stream of the same
    /// source (a reconnection): it keeps last_event_id() and
    /// reconnection_time(), and a BOM may open the new stream.
    error_code finish() {
        if (error_ != error_code::none) return error_;
        if (options_.validate_utf8 && (utf8_need_ != 0 || (!bom_done_ && bom_matched_ != 0))) {
            fail(error_code::invalid_utf8, total_);
            return error_;
        }
        begin_stream();
        id_buffer_.assign(last_id_);  // an `id` of the discarded event never took effect
        id_dirty_ = false;
        return error_code::none;
    }

    /// Forgets everything, error included: a new source. Buffers keep their
    /// capacity.
    void reset() noexcept {
        begin_stream();
        id_buffer_.clear();
        last_id_.clear();
        id_dirty_ = false;
        reconnection_.reset();
        error_ = error_code::none;
        error_offset_ = 0;
    }

    /// Sets the last event ID as an event's `id` field would: for a reader
    /// reset() after a failed stream whose source goes on (the ID received
    /// before the failure is still where to resume). An ID holding NUL is
    /// ignored, as the `id` field's rule says.
    void set_last_event_id(std::string_view id) {
        if (id.find('\0') != std::string_view::npos) return;
        last_id_.assign(id);
        id_buffer_.assign(id);
        id_dirty_ = false;
    }

    /// The error that stopped the reader, or error_code::none.
    [[nodiscard]] error_code error() const noexcept { return error_; }

    /// Where in the stream (bytes from its start, a BOM included) the error
    /// was found: the start of the offending line (line_too_long,
    /// event_too_large), the first byte that cannot be UTF-8 there or the
    /// stream's length when it ends inside a sequence (invalid_utf8),
    /// max_body_bytes (body_too_large).
    [[nodiscard]] std::uint64_t error_offset() const noexcept { return error_offset_; }

    /// The error in words, naming the limit and the position; empty when none.
    [[nodiscard]] std::string error_message() const { return describe(error_, error_offset_, options_); }

    /// The last event ID of the stream (set by the `id` field of a complete
    /// event, kept across finish()): send it as Last-Event-ID when reconnecting.
    [[nodiscard]] std::string_view last_event_id() const noexcept { return last_id_; }

    /// The latest valid `retry` field of the source, if any (kept across
    /// finish()), whether or not its event carried data. Exactly what the
    /// server sent: clamp it to your own bounds before waiting it.
    [[nodiscard]] std::optional<std::chrono::milliseconds> reconnection_time() const noexcept {
        return reconnection_;
    }

    /// The bytes of the current stream read so far.
    [[nodiscard]] std::uint64_t bytes_read() const noexcept { return total_; }

    /// The options it was built with.
    [[nodiscard]] const reader_options& options() const noexcept { return options_; }

private:
    static constexpr char bom[3] = {'\xEF', '\xBB', '\xBF'};

    // Matches a BOM at the start of the stream, across chunks; returns how
    // many bytes of `p` it took. Bytes that started like a BOM but were not
    // one (EF, or EF BB) are text: the start of the first line, and of a
    // 3-byte UTF-8 sequence the next bytes must complete.
    std::size_t skip_bom(const char* p, std::size_t n) {
        std::size_t i = 0;
        while (bom_matched_ < 3 && i < n && p[i] == bom[bom_matched_]) {
            ++bom_matched_;
            ++i;
        }
        if (bom_matched_ == 3) {
            bom_done_ = true;
        } else if (i < n) {
            bom_done_ = true;
            if (bom_matched_ != 0) {
                if (bom_matched_ > options_.max_line_bytes) {
                    fail(error_code::line_too_long, 0);
                    return i;
                }
                line_start_ = 0;
                line_.assign(bom, bom_matched_);
                if (options_.validate_utf8) start_sequence(static_cast<std::uint8_t>(3 - bom_matched_), 0x80, 0xBF);
            }
        }
        return i;
    }

    // Reads `n` bytes starting at stream offset `at`: UTF-8 first, so that
    // nothing past an invalid byte is parsed, then the lines.
    template <class OnEvent, class OnComment>
    void read(const char* p, std::size_t n, std::uint64_t at, OnEvent& on_event, OnComment& on_comment) {
        std::size_t valid = n;
        if (options_.validate_utf8) valid = scan_utf8(reinterpret_cast<const unsigned char*>(p), n);
        read_lines(p, valid, at, on_event, on_comment);
        // A data value parsed in place must outlive the chunk it lies in.
        if (data_in_view_) {
            data_.assign(data_view_);
            data_in_view_ = false;
        }
        if (valid < n && error_ == error_code::none) fail(error_code::invalid_utf8, at + valid);
    }

    template <class OnEvent, class OnComment>
    void read_lines(const char* p, std::size_t n, std::uint64_t at, OnEvent& on_event, OnComment& on_comment) {
        const char* cur = p;
        const char* const end = p + n;
        if (skip_lf_ && cur != end) {  // the LF of a CRLF split across chunks
            if (*cur == '\n') ++cur;
            skip_lf_ = false;
        }
        // The next LF and CR at or after `cur` (`end`: none left). Most
        // streams have no CR at all: one memchr for CR per chunk then.
        const char* lf = find(cur, end, '\n');
        const char* cr = find(cur, end, '\r');
        while (cur != end) {
            // A blank line (every event ends with one) needs no search.
            if (*cur == '\n') lf = cur;
            else if (lf < cur) lf = find(cur, end, '\n');
            if (cr < cur) cr = find(cur, end, '\r');
            const char* eol = lf < cr ? lf : cr;
            const auto length = static_cast<std::size_t>(eol - cur);
            if (eol == end) {  // a line continued in the next chunk
                if (line_.empty()) line_start_ = at + static_cast<std::uint64_t>(cur - p);
                if (length > options_.max_line_bytes - line_.size()) return fail(error_code::line_too_long, line_start_);
                line_.append(cur, length);
                return;
            }
            if (line_.empty()) {
                if (length > options_.max_line_bytes)
                    return fail(error_code::line_too_long, at + static_cast<std::uint64_t>(cur - p));
                take_line(std::string_view(cur, length), true, at + static_cast<std::uint64_t>(cur - p), on_event,
                          on_comment);
            } else {
                if (length > options_.max_line_bytes - line_.size()) return fail(error_code::line_too_long, line_start_);
                line_.append(cur, length);
                take_line(std::string_view(line_), false, line_start_, on_event, on_comment);
                line_.clear();
            }
            if (error_ != error_code::none) return;
            cur = eol + 1;
            if (*eol == '\r') {
                if (cur == end) skip_lf_ = true;
                else if (*cur == '\n') ++cur;
            }
        }
    }

    static const char* find(const char* from, const char* end, char c) noexcept {
        const void* at = std::memchr(from, c, static_cast<std::size_t>(end - from));
        return at != nullptr ? static_cast<const char*>(at) : end;
    }

    // One line, its end removed. `in_place`: it lies in the caller's chunk,
    // which stays valid until read() returns.
    template <class OnEvent, class OnComment>
    void take_line(std::string_view line, bool in_place, std::uint64_t at, OnEvent& on_event, OnComment& on_comment) {
        if (line.empty()) return dispatch(on_event);
        if (line.front() == ':') {
            if constexpr (!std::is_same_v<std::remove_cvref_t<OnComment>, ignore_comments>) {
                guard running(*this);
                on_comment(line.substr(1));
                running.done();
            }
            return;
        }
        std::string_view name = line;
        std::string_view value;
        std::size_t colon = 4;  // most lines are "data:...": no search
        if (line.size() < 5 || std::memcmp(line.data(), "data:", 5) != 0) {
            const void* found = std::memchr(line.data(), ':', line.size());
            colon = found != nullptr ? static_cast<std::size_t>(static_cast<const char*>(found) - line.data())
                                     : line.size();
        }
        if (colon < line.size()) {
            name = line.substr(0, colon);
            value = line.substr(colon + 1);
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        }
        if (name == "data") {
            append_data(value, in_place, at);
        } else if (name == "event") {
            type_.assign(value);
        } else if (name == "id") {
            // An id holding NUL is ignored: it could not be sent back in a header.
            if (value.find('\0') == std::string_view::npos) {
                id_buffer_.assign(value);
                id_dirty_ = true;
            }
        } else if (name == "retry") {
            if (auto ms = parse_retry(value)) {
                reconnection_ = ms;
                event_retry_ = ms;
            }
        }
        // Any other field is ignored.
    }

    void append_data(std::string_view value, bool in_place, std::uint64_t at) {
        const std::size_t max = options_.max_event_bytes;
        if (!has_data_) {
            if (value.size() > max) return fail(error_code::event_too_large, at);
            has_data_ = true;
            // The common event, one data line inside one chunk, is never copied.
            if (in_place) {
                data_view_ = value;
                data_in_view_ = true;
            } else {
                data_.assign(value);
            }
            return;
        }
        if (data_in_view_) {
            data_.assign(data_view_);
            data_in_view_ = false;
        }
        // data_.size() + 1 + value.size() > max, without overflow (data_.size() <= max).
        if (value.size() >= max - data_.size()) return fail(error_code::event_too_large, at);
        data_ += '\n';
        data_.append(value);
    }

    // "Only ASCII digits", at least one; a larger value than milliseconds
    // can hold saturates. Out of line: a rare field, kept out of the line
    // reader's code.
    RESIL_DETAIL_NOINLINE static std::optional<std::chrono::milliseconds> parse_retry(std::string_view value) noexcept {
        using rep = std::chrono::milliseconds::rep;
        const auto ms = resil::detail::parse_digits(value, std::numeric_limits<rep>::max());
        if (!ms) return std::nullopt;
        return std::chrono::milliseconds{*ms};
    }

    template <class OnEvent>
    void dispatch(OnEvent& on_event) {
        if (id_dirty_) {
            last_id_.assign(id_buffer_);
            id_dirty_ = false;
        }
        if (has_data_) {
            const event e{type_.empty() ? std::string_view("message") : std::string_view(type_),
                          data_in_view_ ? data_view_ : std::string_view(data_), std::string_view(last_id_),
                          event_retry_};
            guard running(*this);
            on_event(e);
            running.done();
            has_data_ = false;
            data_in_view_ = false;
            data_.clear();
            event_retry_.reset();
        }
        type_.clear();
    }

    // Marks the reader interrupted while a callback runs: if it throws, the
    // reader stays stopped; if it feeds this reader, that call is refused.
    struct guard {
        reader& self;
        explicit guard(reader& r) noexcept : self(r) { self.error_ = error_code::interrupted; }
        void done() noexcept { self.error_ = error_code::none; }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
        ~guard() = default;
    };

    // Incremental UTF-8 validation (Unicode 15, table 3-7); returns the
    // index of the first byte that cannot continue the stream as UTF-8, or n.
    // Never inlined: g++ 12 -O3, seeing a short literal fed, would warn that
    // the (unreachable) 64-byte loads read past it (-Warray-bounds); one
    // call per chunk costs nothing.
    [[gnu::noinline]] std::size_t scan_utf8(const unsigned char* s, std::size_t n) noexcept {
        std::size_t i = 0;
        while (i < n) {
            if (utf8_need_ == 0) {
                // ASCII, 64 bytes at a time: what nearly all event streams are.
                while (n - i >= 64 && !any_high_bit(s + i)) i += 64;
                while (i < n && s[i] < 0x80) ++i;
                if (i == n) break;
                const unsigned char c = s[i];
                if (c < 0xC2) return i;  // a continuation byte, or an overlong 2-byte lead
                if (c < 0xE0) {
                    start_sequence(1, 0x80, 0xBF);
                } else if (c < 0xF0) {
                    start_sequence(2, c == 0xE0 ? 0xA0 : 0x80, c == 0xED ? 0x9F : 0xBF);  // overlongs, surrogates
                } else if (c < 0xF5) {
                    start_sequence(3, c == 0xF0 ? 0x90 : 0x80, c == 0xF4 ? 0x8F : 0xBF);  // overlongs, > U+10FFFF
                } else {
                    return i;
                }
                ++i;
            } else {
                const unsigned char c = s[i];
                if (c < utf8_low_ || c > utf8_high_) return i;
                utf8_low_ = 0x80;
                utf8_high_ = 0xBF;
                --utf8_need_;
                ++i;
            }
        }
        return n;
    }

    // Whether one of the 64 bytes at `s` is not ASCII. GCC and Clang get four
    // 16-byte loads ORed as a tree (SSE2 / NEON registers); elsewhere eight
    // word loads. A chain of eight dependent ORs would cost twice the time.
    static bool any_high_bit(const unsigned char* s) noexcept {
        constexpr std::uint64_t high = 0x8080808080808080ULL;
#if defined(__GNUC__) || defined(__clang__)
        using lanes = std::uint64_t __attribute__((vector_size(16)));
        lanes a;
        lanes b;
        lanes c;
        lanes d;
        std::memcpy(&a, s, 16);
        std::memcpy(&b, s + 16, 16);
        std::memcpy(&c, s + 32, 16);
        std::memcpy(&d, s + 48, 16);
        const lanes any = (a | b) | (c | d);
        return ((any[0] | any[1]) & high) != 0;
#else
        std::uint64_t w[8];
        std::memcpy(w, s, 64);
        return ((((w[0] | w[1]) | (w[2] | w[3])) | ((w[4] | w[5]) | (w[6] | w[7]))) & high) != 0;
#endif
    }

    void start_sequence(std::uint8_t need, std::uint8_t low, std::uint8_t high) noexcept {
        utf8_need_ = need;
        utf8_low_ = low;
        utf8_high_ = high;
    }

    void begin_stream() noexcept {
        line_.clear();
        data_.clear();
        data_view_ = {};
        type_.clear();
        event_retry_.reset();
        total_ = 0;
        line_start_ = 0;
        utf8_need_ = 0;
        utf8_low_ = 0x80;
        utf8_high_ = 0xBF;
        bom_matched_ = 0;
        bom_done_ = false;
        skip_lf_ = false;
        has_data_ = false;
        data_in_view_ = false;
    }

    void fail(error_code code, std::uint64_t at) noexcept {
        error_ = code;
        error_offset_ = at;
    }

    // Built by appending: g++ 12 -O3 misreads `"literal" + string` as an
    // overlapping copy (-Wrestrict, GCC bug 105329).
    [[nodiscard, gnu::noinline, gnu::cold]] static std::string describe(error_code code, std::uint64_t at,
                                                                       const reader_options& o) {
        std::string text;
        switch (code) {
            case error_code::none: return text;
            case error_code::line_too_long:
                text.append("event stream: the line starting at byte ").append(std::to_string(at));
                text.append(" is longer than `max_line_bytes` (").append(std::to_string(o.max_line_bytes));
                break;
            case error_code::event_too_large:
                text.append("event stream: the data of the event reaching the line at byte ").append(std::to_string(at));
                text.append(" is longer than `max_event_bytes` (").append(std::to_string(o.max_event_bytes));
                break;
            case error_code::body_too_large:
                text.append("event stream: longer than `max_body_bytes` (").append(std::to_string(o.max_body_bytes));
                break;
            case error_code::invalid_utf8:
                text.append("event stream: invalid UTF-8 at byte ").append(std::to_string(at));
                return text;
            case error_code::interrupted:
                text.append("event stream: a callback threw or re-entered the reader; reset() it before reuse");
                return text;
        }
        text.append(" bytes)");
        return text;
    }

    reader_options options_;
    std::string line_;       ///< a line split across chunks, so far
    std::string data_;       ///< the current event's data, once it must outlive its chunk
    std::string_view data_view_;  ///< the current event's data, while it lies in the chunk being read
    std::string type_;       ///< the event type buffer
    std::string id_buffer_;  ///< the last event ID buffer (the `id` fields read)
    std::string last_id_;    ///< the last event ID string (set at each blank line)
    std::optional<std::chrono::milliseconds> event_retry_;
    std::optional<std::chrono::milliseconds> reconnection_;
    std::uint64_t total_ = 0;
    std::uint64_t line_start_ = 0;
    std::uint64_t error_offset_ = 0;
    error_code error_ = error_code::none;
    std::uint8_t utf8_need_ = 0;  ///< continuation bytes the current sequence still needs
    std::uint8_t utf8_low_ = 0x80;
    std::uint8_t utf8_high_ = 0xBF;  ///< the range of the next continuation byte
    std::uint8_t bom_matched_ = 0;
    bool bom_done_ = false;
    bool skip_lf_ = false;  ///< the last line ended with CR at the end of a chunk
    bool has_data_ = false;
    bool data_in_view_ = false;
    bool id_dirty_ = false;
};

}  // namespace resil::sse
