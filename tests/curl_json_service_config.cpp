// resil/json/service_config.hpp and resil/json/dependency.hpp: a service
// file of named dependencies and a shared Redis, read strictly, with the
// file and the JSON path (list items included) in every error; the example
// service's file (examples/service.json) loads.
#include <resil/json/service_config.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <unistd.h>

#include "catch.hpp"

using namespace std::chrono_literals;
namespace rj = resil::json;

namespace {

std::string error_of(auto read) {
    try {
        read();
    } catch (const rj::config_error& e) {
        return e.what();
    }
    return "(accepted)";
}

std::string service_error(std::string_view text) {
    return error_of([&] { (void)rj::parse_service_config(text); });
}

// A file of its own, removed at the end of the test.
struct temp_file {
    std::filesystem::path path;
    explicit temp_file(std::string_view text, std::string_view name = "service.json")
        : path(std::filesystem::temp_directory_path() /
               ("resil_service_" + std::to_string(::getpid()) + "_" + std::string(name))) {
        std::ofstream(path, std::ios::binary) << text;
    }
    ~temp_file() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
    temp_file(const temp_file&) = delete;
    temp_file& operator=(const temp_file&) = delete;
};

constexpr std::string_view two_dependencies = R"({
  "redis": {"host": "10.0.0.5", "port": 6380, "key_prefix": "svc:", "on_failure": "fail_closed"},
  "dependencies": {
    "inventory": {"endpoints": [{"address": "http://inv-1:8080"}, {"address": "http://inv-2:8080", "weight": 2}]},
    "payments": {"endpoints": [{"address": "https://pay-a.internal", "idempotency_scope": "a"},
                               {"address": "https://pay-b.internal", "priority": 1, "idempotency_scope": "b"}],
                 "shared_quota": {"rate": 5, "burst": 10}}
  }
})";

}  // namespace

TEST_CASE("service file: dependencies by name, each named from its key, shared quotas over the shared Redis") {
    const auto service = rj::parse_service_config(two_dependencies);
    REQUIRE(service.dependencies.size() == 2);
    const auto& inventory = rj::dependency_options_of(service, "inventory");
    CHECK(inventory.name == "inventory");
    REQUIRE(inventory.endpoints.size() == 2);
    CHECK(inventory.endpoints[1] == resil::endpoint{.address = "http://inv-2:8080", .weight = 2});
    CHECK_FALSE(inventory.shared_quota);  // none asked for: no quota, whatever the Redis section
    CHECK(inventory.retry_budget);        // the documented defaults
    CHECK(inventory.deadline.budget == 10s);

    const auto& payments = rj::dependency_options_of(service, "payments");
    CHECK(payments.name == "payments");
    CHECK(payments.endpoints[1].idempotency_scope == "b");
    REQUIRE(payments.shared_quota);
    CHECK(payments.shared_quota->host == "10.0.0.5");  // from "redis"
    CHECK(payments.shared_quota->port == 6380);
    CHECK(payments.shared_quota->key_prefix == "svc:");
    CHECK(payments.shared_quota->on_failure == resil::redis::failure_policy::fail_closed);
    CHECK(payments.shared_quota->key == "payments");  // the dependency's name
    CHECK(payments.shared_quota->rate == 5);          // its own
    REQUIRE(service.redis);
    CHECK(service.redis->key.empty());

    // A dependency's own keys win over the shared section's.
    const auto own = rj::parse_service_config(R"({"redis": {"port": 6380}, "dependencies": {"p": {
        "endpoints": [{"address": "http://p:1"}], "shared_quota": {"port": 7000, "key": "pk"}}}})");
    CHECK(own.dependencies.at("p").shared_quota->port == 7000);
    CHECK(own.dependencies.at("p").shared_quota->key == "pk");
    // Without a "redis" section, a shared quota starts from the defaults.
    const auto alone = rj::parse_service_config(
        R"({"dependencies": {"p": {"endpoints": [{"address": "http://p:1"}], "shared_quota": {}}}})");
    CHECK_FALSE(alone.redis);
    CHECK(alone.dependencies.at("p").shared_quota->host == resil::redis::rate_limiter_options{}.host);
    CHECK(alone.dependencies.at("p").shared_quota->key == "p");
}

TEST_CASE("service file: errors at their path, list items and depth included, with did you mean") {
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"},
        {"address": "http://b:1", "weight": 0}]}}})") ==
          "dependencies.payments.endpoints[1].weight: must be in [1, 10000], got 0");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"},
        {"address": "http://A:1/"}]}}})") ==
          R"(dependencies.payments.endpoints[1].address: must be unique, got "http://A:1/")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1", "wieght": 2}]}}})")
              .starts_with(R"(dependencies.payments.endpoints[0].wieght: unknown key; did you mean "weight"?)"));
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"tls": {"ca_fil": "/etc/ca.pem"}}}}})")
              .starts_with(R"(dependencies.payments.transport.tls.ca_fil: unknown key; did you mean "ca_file"?)"));
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"tls": {"ca_file": "/nonexistent/ca.pem"}}}}})") ==
          R"(dependencies.payments.transport.tls.ca_file: must be a readable file, got "/nonexistent/ca.pem")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"connections": {"resolve": ["ok.internal:443:10.0.0.1", "bad entry"]}}}}})") ==
          R"(dependencies.payments.transport.connections.resolve[1]: must be "host:port:address[,address...]", )"
          R"(got "bad entry")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"http_version": "http3"}}}})") ==
          R"(dependencies.payments.transport.http_version: must be one of "http1_1", "http2_tls", )"
          R"("http2_prior_knowledge", got "http3")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"connections": {"max_connection_age": "1.5s"}}}}})") ==
          R"(dependencies.payments.transport.connections.max_connection_age: must be a whole number of seconds, )"
          R"(got "1.5s")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "balancing": {"endpoint_breaker": {"open_fr": "5s"}}}}})")
              .starts_with(R"(dependencies.payments.balancing.endpoint_breaker.open_fr: unknown key; did you mean "open_for"?)"));
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "health_check": {"probe": {"interval": "1ms"}}}}})") ==
          R"(dependencies.payments.health_check.probe.interval: must be in [10ms, 1h], got "1ms")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "health_check": {"path": "healthz"}}}})") ==
          R"(dependencies.payments.health_check.path: must start with '/' and hold no space or control character, )"
          R"(got "healthz")");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "concurrency_limit": {}, "adaptive_limit": {}}}})")
              .starts_with("dependencies.payments.adaptive_limit: must be absent while concurrency_limit is given"));
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": [{"address": "http://a:1"}],
        "retry": {"max_attempts": 0}}}})") == "dependencies.payments.retry.max_attempts: must be in [1, 100], got 0");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": []}}})") ==
          "dependencies.payments.endpoints: must name at least one endpoint, got none");
    CHECK(service_error(R"({"dependencies": {"payments": {}}})") ==
          "dependencies.payments.endpoints: must name at least one endpoint, got none");
    CHECK(service_error(R"({"dependencies": {"payments": {"endpoints": {"address": "http://a:1"}}}})") ==
          "dependencies.payments.endpoints: must be an array of objects, got an object");
    CHECK(service_error(R"({"dependencies": {"Pay ments": {"endpoints": [{"address": "http://a:1"}]}}})") ==
          R"(dependencies["Pay ments"].name: must be 1 to 64 characters of [a-z0-9_-], got "Pay ments")");
    CHECK(service_error(R"({"dependencies": {"payments": {"name": "billing", "endpoints": [{"address": "http://a:1"}]}}})") ==
          R"(dependencies.payments.name: must be the dependency's key, "payments", or absent, got "billing")");
    CHECK(service_error(R"({"redis": {"port": 0}, "dependencies": {"p": {"endpoints": [{"address": "http://a:1"}]}}})") ==
          "redis.port: must be in [1, 65535], got 0");
    CHECK(service_error(R"({"redis": {"key": "x"}, "dependencies": {"p": {"endpoints": [{"address": "http://a:1"}]}}})")
              .starts_with("redis.key: must be absent"));
    CHECK(service_error(R"({"dependencies": {"p": {"endpoints": [{"address": "http://a:1"}],
        "shared_quota": {"rate": -1}}}})")
              .starts_with("dependencies.p.shared_quota.rate: must be"));
    CHECK(service_error(R"({"dependencis": {}})").starts_with(R"(dependencis: unknown key; did you mean "dependencies"?)"));
    CHECK(service_error(R"({})") == "dependencies: is required: an object of dependencies by name");
    CHECK(service_error(R"({"dependencies": {}})") == "dependencies: must name at least one dependency, got none");
    CHECK(service_error(R"({"dependencies": []})") == "dependencies: must be an object of dependencies by name, got an array");
    CHECK(service_error(R"([])") == "must be an object, got an array");
}

TEST_CASE("service file: an unknown dependency is refused with the names the file has") {
    const auto service = rj::parse_service_config(two_dependencies);
    CHECK(error_of([&] { (void)rj::dependency_options_of(service, "paymnts"); }) ==
          R"(dependencies: unknown dependency "paymnts"; did you mean "payments"? (expected one of: inventory, payments))");
    CHECK(error_of([&] { (void)rj::dependency_options_of(service, "search"); }) ==
          R"(dependencies: unknown dependency "search" (expected one of: inventory, payments))");
}

TEST_CASE("service file: loaded from a file, the file named in every error, and one call for one dependency") {
    const temp_file good(two_dependencies);
    const auto service = rj::load_service_config(good.path);
    CHECK(service.source == good.path.string());
    CHECK(rj::load_dependency_options(good.path, "payments").endpoints.size() == 2);
    CHECK(error_of([&] { (void)rj::load_dependency_options(good.path, "paymnts"); })
              .starts_with(good.path.string() + R"(: dependencies: unknown dependency "paymnts"; did you mean)"));

    const temp_file bad(R"({"dependencies": {"inventory": {"endpoints": [{"address": "http://a:1"},
        {"address": "ftp://b"}]}}})",
                        "bad.json");
    try {
        (void)rj::load_service_config(bad.path);
        FAIL("accepted");
    } catch (const rj::config_error& e) {
        CHECK(e.source() == bad.path.string());
        CHECK(e.path() == "dependencies.inventory.endpoints[1].address");
        CHECK(std::string(e.what()) == bad.path.string() +
                                           R"(: dependencies.inventory.endpoints[1].address: must be an http:// or )"
                                           R"(https:// URL or a host:port, got "ftp://b")");
    }
    const temp_file duplicate(R"({"dependencies": {"a": {"endpoints": [{"address": "http://a:1"}]},
        "a": {"endpoints": [{"address": "http://a:2"}]}}})",
                              "duplicate.json");
    CHECK(error_of([&] { (void)rj::load_service_config(duplicate.path); }) ==
          duplicate.path.string() + ": dependencies.a: key given twice in one object (the last would silently win)");
    CHECK(error_of([] { (void)rj::load_service_config("/nonexistent/service.json"); }) ==
          "/nonexistent/service.json: cannot open the file: it does not exist");
    CHECK(error_of([] { (void)rj::load_service_config("/tmp"); }) == "/tmp: cannot open the file: it is a directory");
}

TEST_CASE("service file: written and read back, the same; secrets read but never written") {
    auto service = rj::parse_service_config(two_dependencies);
    auto& inventory = service.dependencies.at("inventory");
    inventory.transport.proxy = {.url = "http://proxy:3128", .username = "svc", .password = "hunter2"};
    const auto j = rj::write(service);
    INFO(j.dump(2));
    CHECK_FALSE(j["dependencies"]["inventory"].contains("name"));
    CHECK_FALSE(j["redis"].contains("key"));
    CHECK(j.dump().find("hunter2") == std::string::npos);
    CHECK_FALSE(j["dependencies"]["inventory"]["transport"]["proxy"].contains("password"));
    const auto back = rj::read_service_config(j);
    CHECK(rj::write(back) == j);
    CHECK(back.dependencies.at("payments").shared_quota->key == "payments");
    CHECK(back.dependencies.at("inventory").transport.proxy.password.empty());  // never written

    // Read, the secret is there.
    const auto with_secret = rj::parse_service_config(R"({"dependencies": {"p": {"endpoints": [{"address": "http://a:1"}],
        "transport": {"proxy": {"url": "http://proxy:3128", "username": "svc", "password": "hunter2"}}}}})");
    CHECK(with_secret.dependencies.at("p").transport.proxy.password == "hunter2");
}

TEST_CASE("service file: the example service's file loads") {
    const auto file = std::filesystem::path(__FILE__).parent_path().parent_path() / "examples" / "service.json";
    const auto service = rj::load_service_config(file);
    REQUIRE(service.dependencies.size() == 3);
    const auto& inventory = rj::dependency_options_of(service, "inventory");
    CHECK(inventory.endpoints.size() == 3);
    CHECK(inventory.health_check);
    CHECK(inventory.balancing.outlier.consecutive_failures == 3);
    CHECK(inventory.hedge);
    const auto& payments = rj::dependency_options_of(service, "payments");
    REQUIRE(payments.endpoints.size() == 2);
    CHECK(payments.endpoints[0].idempotency_scope != payments.endpoints[1].idempotency_scope);
    CHECK(payments.endpoints[1].priority == 1);
    CHECK(payments.balancing.endpoint_breaker);
    const auto& pricing = rj::dependency_options_of(service, "pricing");
    CHECK(pricing.pacing);
    REQUIRE(pricing.shared_quota);
    CHECK(pricing.shared_quota->key == "pricing-api");
    CHECK(pricing.shared_quota->key_prefix == "checkout:");  // from the shared "redis" section

    // docs/configuration.md shows the file as it is.
    const auto text_of = [](const std::filesystem::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const auto doc = text_of(file.parent_path().parent_path() / "docs" / "configuration.md");
    CHECK(doc.find(text_of(file)) != std::string::npos);
}
