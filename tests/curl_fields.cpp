// resil/curl/fields.hpp: header fields in order, looked up in any letter case,
// each kept as the line libcurl is handed.
#include <resil/curl/fields.hpp>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"

using resil::curl::header_list;
using resil::curl::detail::field_store;

TEST_CASE("curl fields: kept in order, found in any letter case, the first of a name wins") {
    field_store store;
    store.add("Content-Type", "application/json");
    store.add("X-Trace", "a");
    store.add("x-trace", "b");
    store.add("X-Empty", "");
    const header_list list(store);
    REQUIRE(list.size() == 4);
    CHECK(list[0].name == "Content-Type");
    CHECK(list.find("CONTENT-TYPE") == "application/json");
    CHECK(list.find("X-TRACE") == "a");
    CHECK(list.find("X-Empty") == "");
    CHECK_FALSE(list.find("Missing"));
    std::vector<std::string> names;
    for (const auto field : list) names.emplace_back(field.name);
    CHECK(names == std::vector<std::string>{"Content-Type", "X-Trace", "x-trace", "X-Empty"});
}

TEST_CASE("curl fields: each field is a ready line; an empty value is written the way libcurl sends it empty") {
    field_store store;
    store.add("Accept", "*/*");
    store.add("X-Empty", "");
    CHECK(std::strcmp(store.line(0), "Accept: */*") == 0);
    CHECK(std::strcmp(store.line(1), "X-Empty;") == 0);  // "Name:" would tell libcurl to remove the field
    store.extend_last("folded");
    CHECK(std::strcmp(store.line(1), "X-Empty: folded") == 0);
    CHECK(header_list(store).find("x-empty") == "folded");
    store.clear();
    CHECK(header_list(store).empty());
}

TEST_CASE("curl fields: the word-at-a-time CR/NUL scan agrees with a byte loop at every length and position") {
    using resil::curl::detail::holds_cr_or_nul;
    const auto by_bytes = [](std::string_view s) {
        for (const char c : s)
            if (c == '\r' || c == '\0') return true;
        return false;
    };
    // Bytes next to CR and NUL in value or in bits (0x8D, 0x80: the high bit
    // set, where a careless zero-byte test errs), and the two themselves.
    const char probes[] = {'\r', '\0', '\x0C', '\x0E', '\x01', '\x8D', '\x80', '\xFF', '\x2D', 'a'};
    std::size_t flagged = 0;
    for (std::size_t size = 0; size <= 40; ++size) {
        const std::string clean(size, 'x');
        CHECK_FALSE(holds_cr_or_nul(clean));
        for (std::size_t at = 0; at < size; ++at) {
            for (const char probe : probes) {
                std::string s = clean;
                s[at] = probe;
                CAPTURE(size, at, static_cast<int>(static_cast<unsigned char>(probe)));
                CHECK(holds_cr_or_nul(s) == by_bytes(s));
                if (by_bytes(s)) ++flagged;
                // Beside a byte with the high bit set, as in UTF-8 text.
                if (at + 1 < size) {
                    s[at + 1] = '\x81';
                    CHECK(holds_cr_or_nul(s) == by_bytes(s));
                }
            }
        }
    }
    CHECK(flagged == 2 * (40 * 41 / 2));  // every CR and NUL at every place was found
}

TEST_CASE("curl fields: a field name compared to a lower-case name in any letter case, by words") {
    using resil::curl::detail::iequals;
    using resil::curl::detail::is_tchar;
    using resil::curl::detail::token_iequals_lower;
    CHECK(token_iequals_lower("Content-Length", "content-length"));
    CHECK(token_iequals_lower("CONTENT-LENGTH", "content-length"));
    CHECK(token_iequals_lower("content-length", "content-length"));
    CHECK(token_iequals_lower("cOnTeNt-LeNgTh", "content-length"));
    CHECK_FALSE(token_iequals_lower("Content-Type", "content-length"));
    CHECK_FALSE(token_iequals_lower("Content-Lengths", "content-length"));
    CHECK(token_iequals_lower("Retry-After", "retry-after"));
    CHECK(token_iequals_lower("X-RateLimit-Reset", "x-ratelimit-reset"));  // 17 bytes: byte by byte
    CHECK(token_iequals_lower("Date", "date"));
    CHECK_FALSE(token_iequals_lower("Data", "date"));
    // Any single tchar in any place: a match exactly when iequals says so.
    const std::string_view lower = "content-length";
    std::size_t matches = 0;
    for (std::size_t at = 0; at < lower.size(); ++at) {
        for (int c = 0; c < 256; ++c) {
            if (!is_tchar(static_cast<char>(c))) continue;
            std::string name(lower);
            name[at] = static_cast<char>(c);
            CAPTURE(name);
            CHECK(token_iequals_lower(name, lower) == iequals(name, lower));
            if (iequals(name, lower)) ++matches;
        }
    }
    CHECK(matches == 13 * 2 + 1);  // each of the 13 letters in two cases, the '-' as itself
}

TEST_CASE("curl fields: a field added from views of the store's own fields is copied whole while the store grows") {
    field_store store;
    const std::string long_value(100, 'v');
    store.add("X-Original", long_value);
    for (int i = 0; i < 20; ++i) {  // enough to move the text more than once
        const header_list list(store);
        const auto first = list[0];  // views into the store
        store.add(first.name, first.value);
    }
    const header_list list(store);
    REQUIRE(list.size() == 21);
    for (const auto field : list) {
        CHECK(field.name == "X-Original");
        CHECK(field.value == long_value);
    }
}
