// resil::http::load_client (resil/http/config_file.hpp): a client whose
// policies come from a JSON file, each section over the defaults given, as a
// service would configure a dependency; checked against a real server.
#include <resil/http/config_file.hpp>
#include <resil/json/error.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "support/fault_server.hpp"

using namespace std::chrono_literals;
using resil_test::action;

namespace {

// A configuration file in the temporary directory, removed when done.
struct config_file {
    std::filesystem::path path;
    explicit config_file(const std::string& text)
        : path(std::filesystem::temp_directory_path() /
               ("resil_http_client_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                ".json")) {
        std::ofstream(path) << text;
    }
    ~config_file() {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
    }
    config_file(const config_file&) = delete;
    config_file& operator=(const config_file&) = delete;
};

}  // namespace

TEST_CASE("http::load_client: the file's sections configure the client; absent ones keep the defaults") {
    resil_test::fault_server server;
    server.on("/items", {action::respond(503)});

    const config_file file{R"({
        "deadline": "2s",
        "timeouts": {"connect": "100ms", "read": "500ms", "total": "800ms"},
        "retry": {"max_attempts": 2, "backoff": {"kind": "full_jitter", "base": "1ms", "cap": "2ms"}}
    })"};
    resil::http::client_options defaults;
    defaults.circuit_breaker.enabled = false;
    defaults.retry_budget.min_per_second = 77;
    auto http = resil::http::load_client(file.path.string(), defaults);

    CHECK(http.options().deadline == 2s);
    CHECK(http.options().timeouts.read == 500ms);
    CHECK(http.options().retry.max_attempts == 2);
    CHECK(http.options().retry.backoff_base == 1ms);
    CHECK(http.options().retry.backoff_cap == 2ms);
    CHECK(http.options().retry_budget.min_per_second == 77);  // no retry_budget section
    CHECK_FALSE(http.options().circuit_breaker.enabled);      // no circuit_breaker section

    const auto out = http.get(server.url("/items"));
    CHECK_FALSE(out);
    CHECK(out.reason() == resil::reason::retries_exhausted);
    CHECK(out.attempts() == 2);
    CHECK(out.status() == 503);
    CHECK(server.requests("/items").size() == 2);
}

TEST_CASE("http::load_client: a circuit_breaker section turns the breaker on with its options") {
    resil_test::fault_server server;
    server.on("/down", {action::respond(500)});
    const config_file file{R"({
        "retry": {"max_attempts": 1},
        "circuit_breaker": {"failure_ratio": 0.5, "min_calls": 2, "open_for": "10s"}
    })"};
    resil::http::client_options defaults;
    defaults.circuit_breaker.enabled = false;
    auto http = resil::http::load_client(file.path.string(), defaults);
    CHECK(http.options().circuit_breaker.enabled);
    CHECK(http.options().circuit_breaker.min_calls == 2);
    CHECK(http.options().circuit_breaker.open_for == 10s);

    CHECK(http.get(server.url("/down")).attempts() == 1);
    CHECK(http.get(server.url("/down")).attempts() == 1);
    CHECK(http.get(server.url("/down")).reason() == resil::reason::circuit_open);
    CHECK(server.requests("/down").size() == 2);
}

TEST_CASE("http::load_client: errors name the file and the field; unsupported sections are refused") {
    SECTION("an invalid option") {
        const config_file file{R"({"retry": {"max_attempts": 0}})"};
        try {
            (void)resil::http::load_client(file.path.string());
            FAIL("no exception");
        } catch (const resil::json::config_error& e) {
            CHECK(std::string(e.what()).find("retry.max_attempts: must be in [1, 100], got 0") != std::string::npos);
            CHECK(std::string(e.what()).find(file.path.string()) != std::string::npos);
        }
    }
    SECTION("a missing file") {
        CHECK_THROWS_AS(resil::http::load_client("/nonexistent/resil_http_client.json"), resil::json::config_error);
    }
    SECTION("a section the client has no policy for") {
        const config_file file{R"({"token_bucket": {"rate": 10, "burst": 10}})"};
        try {
            (void)resil::http::load_client(file.path.string());
            FAIL("no exception");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find("token_bucket") != std::string::npos);
        }
    }
    SECTION("an invalid default") {
        const config_file file{R"({})"};
        resil::http::client_options defaults;
        defaults.retry.max_attempts = 0;
        CHECK_THROWS_WITH(resil::http::load_client(file.path.string(), defaults),
                          "resil::http::client: `retry.max_attempts` must be in [1, 100], got 0");
    }
}
