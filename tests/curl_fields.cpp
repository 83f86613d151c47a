// resil/curl/fields.hpp: header fields in order, looked up in any letter case,
// each kept as the line libcurl is handed.
#include <resil/curl/fields.hpp>

#include <cstring>
#include <string>
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
