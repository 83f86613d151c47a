// The operator files (ops/): every metric name the Prometheus rules and the
// Grafana dashboard use is a family resil's text emits, and every input
// series of the rules' unit tests has the name and label names of a series
// resil writes. The text is a checkout service's (tests/support/
// checkout_metrics.hpp), which reaches every family, so a renamed family or
// label fails here. (promtool checks and tests the rules: ctest's ops.*.)
#include <resil/json/metrics.hpp>
#include <resil/metrics.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/checkout_metrics.hpp"
#include "support/prometheus_series.hpp"

#ifndef RESIL_SOURCE_DIR
#error "tests/CMakeLists.txt defines RESIL_SOURCE_DIR for this test"
#endif

namespace {

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::filesystem::path ops = std::filesystem::path(RESIL_SOURCE_DIR) / "ops";

// Metric names in an expression: resil_ then lower case and '_' (recording
// rules are resil:..., not matched), histogram suffixes folded.
std::set<std::string> names_in(const std::string& expr, const resil_test::series_shapes& known) {
    static const std::regex name(R"(\bresil_[a-z_]+)");
    std::set<std::string> out;
    for (std::sregex_iterator m(expr.begin(), expr.end(), name), end; m != end; ++m) {
        std::string n = m->str();
        for (std::string_view suffix : {"_bucket", "_sum", "_count"})
            if (n.ends_with(suffix) && known.count(n.substr(0, n.size() - suffix.size())))
                n = n.substr(0, n.size() - suffix.size());
        out.insert(n);
    }
    return out;
}

// Every string value under "expr", "query" and "definition" keys.
void expressions(const nlohmann::json& j, std::vector<std::string>& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            if ((it.key() == "expr" || it.key() == "query" || it.key() == "definition") && it.value().is_string())
                out.push_back(it.value().get<std::string>());
            expressions(it.value(), out);
        }
    } else if (j.is_array()) {
        for (const auto& v : j) expressions(v, out);
    }
}

}  // namespace

TEST_CASE("ops: the checkout text reaches every family resil may export") {
    const resil_test::checkout_metrics c;
    const auto shapes = resil_test::shapes_of_text(c.text());
    for (const auto name : resil::detail::family_names) {
        INFO(name);
        CHECK(shapes.count(std::string(name)) == 1);
    }
}

TEST_CASE("ops: the rules and the dashboard use only families resil exports") {
    const resil_test::checkout_metrics c;
    const auto shapes = resil_test::shapes_of_text(c.text());

    const auto rules = read(ops / "prometheus" / "resil.rules.yml");
    std::set<std::string> in_rules;
    // Lines of expressions only: comments may name things loosely.
    std::istringstream lines(rules);
    for (std::string line; std::getline(lines, line);)
        if (line.find('#') == std::string::npos || line.find('#') > line.find("resil_"))
            for (const auto& n : names_in(line, shapes)) in_rules.insert(n);
    for (const auto& n : in_rules) {
        INFO("rules use " << n);
        CHECK(shapes.count(n) == 1);
    }
    // The alerts the rules promise, by the families they read.
    for (const char* needed : {"resil_breaker_open", "resil_budget_refusals_total", "resil_fallbacks_total",
                               "resil_endpoint_ejected", "resil_quota_store_connected", "resil_quota_decisions_total"})
        CHECK(in_rules.count(needed) == 1);

    const auto dashboard = nlohmann::json::parse(read(ops / "grafana" / "resil-dashboard.json"));
    std::vector<std::string> exprs;
    expressions(dashboard, exprs);
    CHECK(exprs.size() >= 10);
    std::set<std::string> in_dashboard;
    for (const auto& e : exprs)
        for (const auto& n : names_in(e, shapes)) in_dashboard.insert(n);
    for (const auto& n : in_dashboard) {
        INFO("dashboard uses " << n);
        CHECK(shapes.count(n) == 1);
    }
    CHECK(in_dashboard.count("resil_endpoint_picks_total") == 1);
    CHECK(in_dashboard.count("resil_hedges_total") == 1);
    // Every panel has an id, a title and at least one query.
    for (const auto& panel : dashboard.at("panels")) {
        CHECK(panel.at("title").is_string());
        CHECK_FALSE(panel.at("targets").empty());
    }

    // The checker catches a name resil does not export.
    CHECK(shapes.count("resil_breaker_state") == 0);
    CHECK(names_in("rate(resil_attempt_duration_seconds_bucket[5m])", shapes) ==
          std::set<std::string>{"resil_attempt_duration_seconds"});
}

TEST_CASE("ops: the rules' test series have the names and labels resil writes") {
    const resil_test::checkout_metrics c;
    const auto shapes = resil_test::shapes_of_text(c.text());
    const auto tests = read(ops / "prometheus" / "tests" / "resil.rules.test.yml");
    static const std::regex series(R"(series:\s*'([a-z_]+)\{([^}]*)\}')");
    static const std::regex label(R"(([a-z_]+)=")");
    std::size_t seen = 0;
    for (std::sregex_iterator m(tests.begin(), tests.end(), series), end; m != end; ++m, ++seen) {
        const std::string name = (*m)[1];
        const std::string labels = (*m)[2];
        std::set<std::string> names;
        for (std::sregex_iterator l(labels.begin(), labels.end(), label), e2; l != e2; ++l) names.insert((*l)[1]);
        INFO(name << "{" << labels << "}");
        REQUIRE(shapes.count(name) == 1);
        CHECK(shapes.at(name).count(names) == 1);
    }
    CHECK(seen >= 15);
}

TEST_CASE("json: a metrics object's JSON covers the parts its Prometheus families have") {
    const resil_test::checkout_metrics c;
    const nlohmann::json inventory = resil::json::to_json(c.inventory);
    const nlohmann::json payments = resil::json::to_json(c.payments);
    const nlohmann::json pricing = resil::json::to_json(c.pricing);
    CHECK(inventory.at("breaker_state") == "closed");
    CHECK_FALSE(payments.contains("breaker_state"));  // a breaker per endpoint, none for the whole
    CHECK_FALSE(pricing.contains("breaker_state"));
    CHECK(payments.at("hedges") == nlohmann::json{{"started", 1}, {"won", 1}, {"cancelled", 1}, {"refused", 1}});
    CHECK_FALSE(inventory.contains("hedges"));
    CHECK(pricing.at("quota").at("decisions").at("local_fallback") == 10);
    CHECK(pricing.at("quota").at("connected") == false);
    CHECK_FALSE(payments.contains("quota"));
    CHECK_FALSE(pricing.contains("endpoints"));
    REQUIRE(inventory.at("endpoints").size() == 3);
    std::uint64_t picks = 0;
    for (const auto& e : inventory.at("endpoints")) {
        picks += e.at("picks").get<std::uint64_t>();
        CHECK(e.at("ejected") == (e.at("endpoint") == "http://inventory-2:8080"));
    }
    CHECK(picks == 9);
    const auto& primary = payments.at("endpoints").at(0);
    CHECK(primary.at("endpoint") == "https://payments-primary.example");
    CHECK(primary.at("breaker_state") == "open");
    CHECK(primary.at("breaker_opened") == 1);
}
