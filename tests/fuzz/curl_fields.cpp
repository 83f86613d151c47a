// Fuzz harness: the header field store behind resil::curl's requests and
// responses (resil::curl::detail::field_store in resil/curl/fields.hpp).
//
// Input: lines separated by LF. "Name: value" adds a field; a line starting
// with SP or HTAB extends the last field's value (an obsolete folded line);
// "~" clears the store. Lines a caller would have refused (a name that is
// not a token, a value with a control character) are skipped, since the
// store's preconditions say its input is already validated.
//
// Properties, after every operation, against a plain vector of pairs:
// - size(), and every at(i) name and value;
// - line(i) is the NUL-terminated "Name: value" (or "Name;" for an empty
//   value), as libcurl is handed it;
// - find() of each name in upper and lower case gives the first field of
//   that name, whatever its case; a name never added gives nothing;
// - header_list iterates the same fields in the same order.
#include <resil/curl/fields.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"

namespace cd = resil::curl::detail;

namespace {

using model = std::vector<std::pair<std::string, std::string>>;

bool valid_value(std::string_view v) {
    for (const char c : v)
        if (cd::is_forbidden_in_value(c)) return false;
    return true;
}

std::string with_case(std::string_view s, bool upper) {
    std::string out(s);
    for (auto& c : out) {
        if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

std::optional<std::string_view> model_find(const model& m, std::string_view name) {
    for (const auto& [n, v] : m)
        if (cd::iequals(n, name)) return std::string_view(v);
    return std::nullopt;
}

void check(const cd::field_store& store, const model& m) {
    FUZZ_CHECK(store.size() == m.size());
    const resil::curl::header_list list(store);
    std::size_t i = 0;
    for (const auto field : list) {
        FUZZ_CHECK(i < m.size());
        FUZZ_CHECK(field.name == m[i].first);
        FUZZ_CHECK(field.value == m[i].second);
        const std::string expected = m[i].second.empty() ? m[i].first + ";" : m[i].first + ": " + m[i].second;
        FUZZ_CHECK(std::strlen(store.line(i)) == expected.size());
        FUZZ_CHECK(std::string_view(store.line(i)) == expected);
        for (const bool upper : {false, true}) {
            const auto name = with_case(m[i].first, upper);
            FUZZ_CHECK(store.find(name) == model_find(m, name));
            FUZZ_CHECK(list.find(name) == model_find(m, name));
        }
        ++i;
    }
    FUZZ_CHECK(i == m.size());
    FUZZ_CHECK(!store.find("x-never-added:").has_value());  // ':' is no tchar
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view rest = resil_fuzz::text_of(data, size);
    cd::field_store store;
    model m;
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        const auto line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        if (line == "~") {
            store.clear();
            m.clear();
        } else if (!line.empty() && cd::is_ows(line.front())) {
            const auto more = cd::trim_ows(line);
            if (!valid_value(more)) continue;
            store.extend_last(more);
            if (!m.empty() && !more.empty()) {
                auto& value = m.back().second;
                value = value.empty() ? std::string(more) : value + " " + std::string(more);
            }
        } else {
            const auto colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            const auto name = line.substr(0, colon);
            const auto value = cd::trim_ows(line.substr(colon + 1));
            if (!cd::is_token(name) || !valid_value(value)) continue;
            store.add(name, value);
            m.emplace_back(std::string(name), std::string(value));
        }
        check(store, m);
    }
    check(store, m);
    return 0;
}
