// Server-Sent Events: resil::sse::reader side by side with the reader people
// write by hand — a std::string buffer that chunks are appended to, lines
// cut off it with find('\n') and substr, and the event's data gathered in a
// std::string.
//
// Both read the same ~1 MB stream of a chat model's streamed completion
// (OpenAI-style `data: {"id":...,"choices":[{"delta":{"content":"..."}}]}`
// events, each followed by a blank line, a keep-alive comment now and then,
// a final `data: [DONE]`), handed over in chunks of 1 to 4 KiB as a socket
// would, the same chunks for both. One operation is the whole stream; the
// figure to read is bytes_per_second. Before timing, each benchmark checks
// that its reader found every event with the right data.
//
// Names follow bench/README.md: parse/resil[_variant] and parse/baseline_*.
#include "bench_support.hpp"

#include <resil/sse.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct bench_stream {
    std::string text;
    std::vector<std::string_view> chunks;
    std::size_t events = 0;
    std::size_t data_bytes = 0;  ///< the sum of every event's data size
};

const bench_stream& stream() {
    static const bench_stream s = [] {
        bench_stream out;
        const std::string_view words[] = {"The", " quick", " brown", " fox", " jumps", " over", " the", " lazy",
                                          " dog", ",", " and", " then", " some", " more", " tokens", "."};
        std::uint64_t x = 42;
        auto next = [&x] {  // xorshift64: the same stream on every run
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            return x;
        };
        std::size_t i = 0;
        while (out.text.size() < (std::size_t{1} << 20)) {
            std::string data = R"({"id":"chatcmpl-9x1Yc2b7","object":"chat.completion.chunk","created":1717171717,)"
                               R"("model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":")";
            data += words[next() % std::size(words)];
            data += R"("},"finish_reason":null}]})";
            out.text += "data: ";
            out.text += data;
            out.text += "\n\n";
            ++out.events;
            out.data_bytes += data.size();
            if (++i % 100 == 0) out.text += ": keep-alive\n\n";
        }
        out.text += "data: [DONE]\n\n";
        ++out.events;
        out.data_bytes += 6;
        for (std::size_t at = 0; at < out.text.size();) {
            const std::size_t size = 1024 + static_cast<std::size_t>(next() % 3073);
            out.chunks.push_back(std::string_view(out.text).substr(at, size));
            at += size;
        }
        return out;
    }();
    return s;
}

// The hand-written reader: what a user writes first, following the standard
// (CRLF, the space after the colon, multi-line data, the default type).
class string_lines_reader {
public:
    template <class OnEvent>
    void feed(std::string_view chunk, OnEvent&& on_event) {
        buffer_ += chunk;
        std::size_t end;
        while ((end = buffer_.find('\n')) != std::string::npos) {
            std::string line = buffer_.substr(0, end);
            buffer_.erase(0, end + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) {
                if (!data_.empty()) {
                    data_.pop_back();  // the last '\n'
                    on_event(type_.empty() ? std::string("message") : type_, data_, id_);
                }
                data_.clear();
                type_.clear();
                continue;
            }
            if (line[0] == ':') continue;
            const auto colon = line.find(':');
            const std::string field = line.substr(0, colon);
            std::string value = colon == std::string::npos ? std::string() : line.substr(colon + 1);
            if (!value.empty() && value[0] == ' ') value.erase(0, 1);
            if (field == "data") {
                data_ += value;
                data_ += '\n';
            } else if (field == "event") {
                type_ = value;
            } else if (field == "id") {
                id_ = value;
            }
        }
    }

private:
    std::string buffer_;
    std::string data_;
    std::string type_;
    std::string id_;
};

void resil_parse(benchmark::State& state, bool validate_utf8) {
    const auto& s = stream();
    resil::sse::reader_options options;
    options.validate_utf8 = validate_utf8;
    resil::sse::reader reader(options);
    std::size_t events = 0;
    std::size_t bytes = 0;
    auto on_event = [&](const resil::sse::event& e) {
        ++events;
        bytes += e.data.size();
    };
    auto read_all = [&] {
        for (const auto chunk : s.chunks) {
            if (reader.feed(chunk, on_event) != resil::sse::error_code::none) return false;
        }
        return reader.finish() == resil::sse::error_code::none;
    };
    if (!read_all() || events != s.events || bytes != s.data_bytes) {
        state.SkipWithError("resil::sse::reader misread the stream");
        return;
    }
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        benchmark::DoNotOptimize(read_all());
        benchmark::DoNotOptimize(bytes);
    }
    resil_bench::report_allocations(state, before);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(s.text.size()));
}

void resil_validated(benchmark::State& state) { resil_parse(state, true); }
void resil_no_utf8_check(benchmark::State& state) { resil_parse(state, false); }

void baseline_string_lines(benchmark::State& state) {
    const auto& s = stream();
    std::size_t events = 0;
    std::size_t bytes = 0;
    auto on_event = [&](const std::string&, const std::string& data, const std::string&) {
        ++events;
        bytes += data.size();
    };
    {
        string_lines_reader reader;
        for (const auto chunk : s.chunks) reader.feed(chunk, on_event);
    }
    if (events != s.events || bytes != s.data_bytes) {
        state.SkipWithError("the baseline misread the stream");
        return;
    }
    string_lines_reader reader;  // kept across streams, as resil's is: its buffers keep their capacity
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        for (const auto chunk : s.chunks) reader.feed(chunk, on_event);
        benchmark::DoNotOptimize(bytes);
    }
    resil_bench::report_allocations(state, before);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(s.text.size()));
}

}  // namespace

BENCHMARK(baseline_string_lines)->Name("parse/baseline_string_lines");
BENCHMARK(resil_validated)->Name("parse/resil");
BENCHMARK(resil_no_utf8_check)->Name("parse/resil_no_utf8_check");

BENCHMARK_MAIN();
