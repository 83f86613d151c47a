// resil/json/parse.hpp: nlohmann's parser with duplicate keys refused at
// their path, and every failure a config_error.
#include <resil/json/parse.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "catch.hpp"

namespace rj = resil::json;

namespace {

std::string error_of(const std::string& text) {
    try {
        (void)rj::parse(text);
    } catch (const rj::config_error& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST_CASE("json parse: gives the value, in either nlohmann flavour") {
    const auto j = rj::parse(R"({"b": [1, {"c": null}], "a": "x"})");
    CHECK(j["b"][1].contains("c"));
    CHECK(j["a"] == "x");
    const auto ordered = rj::parse<nlohmann::ordered_json>(R"({"b": 1, "a": 2})");
    CHECK(ordered.dump() == R"({"b":1,"a":2})");
}

TEST_CASE("json parse: a key given twice is refused at its path, through arrays too") {
    CHECK(error_of(R"({"a": [{"x": 1}, {"x": 1, "x": 2}]})") ==
          "a[1].x: key given twice in one object (the last would silently win)");
    CHECK(error_of(R"([[], [{"k k": 0, "k k": 0}]])") ==
          R"([1][0]["k k"]: key given twice in one object (the last would silently win))");
    // The same key in different objects is fine.
    CHECK(error_of(R"({"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]})") == "(accepted)");
}

TEST_CASE("json parse: malformed text names the line and column, without nlohmann's exception id") {
    CHECK(error_of("{\n  \"a\": 1,\n}") ==
          "parse error at line 3, column 1: syntax error while parsing object key - unexpected '}'; expected string literal");
    CHECK(error_of(R"({"a": [1, 2e999]})") == "a[1]: must be a number a double can hold (magnitude at most 1.8e308), got 2e999");
}
