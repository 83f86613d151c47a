// resil::metrics for a service of three dependencies: series labelled by
// dependency and endpoint, only for the parts each has; the text passes
// promtool; endpoint series stay bounded.
#include <resil/balancer.hpp>
#include <resil/events.hpp>
#include <resil/metrics.hpp>

#include <unistd.h>  // getpid

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/checkout_metrics.hpp"
#include "support/prometheus_series.hpp"

#ifndef RESIL_PROMTOOL
#error "tests/CMakeLists.txt defines RESIL_PROMTOOL for this test"
#endif

using namespace std::chrono_literals;
namespace events = resil::events;
using part = resil::metrics::part;

namespace {

// The value of the one sample `series` (its whole text before the value), or -1.
double value_of(const std::string& text, const std::string& series) {
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
}

std::size_t lines_of(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("metrics: a checkout service's three dependencies, each with its own series only") {
    const resil_test::checkout_metrics c;
    const auto text = c.text();
    INFO(text);

    // Breakers: the dependency's (inventory), one per provider (payments), none (pricing).
    CHECK(value_of(text, R"(resil_breaker_open{dependency="inventory"})") == 0);
    CHECK(value_of(text, R"(resil_breaker_open{dependency="payments",endpoint="https://payments-primary.example"})") == 1);
    CHECK(value_of(text, R"(resil_breaker_open{dependency="payments",endpoint="https://payments-backup.example"})") == -1);  // told nothing yet
    CHECK(value_of(text, R"(resil_breaker_transitions_total{dependency="payments",endpoint="https://payments-primary.example",to="open"})") == 1);
    CHECK(value_of(text, R"(resil_breaker_open{dependency="payments"})") == -1);
    CHECK(text.find(R"(resil_breaker_transitions_total{dependency="pricing")") == std::string::npos);
    CHECK(text.find(R"(resil_breaker_open_seconds_total{dependency="pricing")") == std::string::npos);
    CHECK(value_of(text, R"(resil_rejections_total{dependency="payments",reason="circuit_open"})") == 1);
    CHECK(value_of(text, R"(resil_rejections_total{dependency="pricing",reason="circuit_open"})") == -1);

    // Endpoints: picks from the balancer, ejections from its hook.
    double picks = 0;
    for (const char* replica : {"inventory-0", "inventory-1", "inventory-2"}) {
        const auto v = value_of(text, std::string(R"(resil_endpoint_picks_total{dependency="inventory",endpoint="http://)") +
                                          replica + R"(:8080"})");
        CHECK(v >= 1);
        picks += v;
    }
    CHECK(picks == 9);
    CHECK(value_of(text, R"(resil_endpoint_ejections_total{dependency="inventory",endpoint="http://inventory-2:8080"})") == 1);
    CHECK(value_of(text, R"(resil_endpoint_ejected{dependency="inventory",endpoint="http://inventory-2:8080"})") == 1);
    CHECK(value_of(text, R"(resil_endpoint_ejected{dependency="inventory",endpoint="http://inventory-0:8080"})") == 0);
    CHECK(value_of(text, R"(resil_endpoint_picks_total{dependency="payments",endpoint="https://payments-primary.example"})") == 4);
    CHECK(text.find(R"(resil_endpoint_picks_total{dependency="pricing")") == std::string::npos);

    // Hedges (payments only) and the quota (pricing only).
    CHECK(value_of(text, R"(resil_hedges_total{dependency="payments",event="started"})") == 1);
    CHECK(value_of(text, R"(resil_hedges_total{dependency="payments",event="won"})") == 1);
    CHECK(value_of(text, R"(resil_hedges_total{dependency="payments",event="cancelled"})") == 1);
    CHECK(value_of(text, R"(resil_hedges_total{dependency="payments",event="refused"})") == 1);
    CHECK(text.find(R"(resil_hedges_total{dependency="inventory")") == std::string::npos);
    CHECK(value_of(text, R"(resil_quota_decisions_total{dependency="pricing",source="redis"})") == 120);
    CHECK(value_of(text, R"(resil_quota_decisions_total{dependency="pricing",source="lease"})") == 40);
    CHECK(value_of(text, R"(resil_quota_decisions_total{dependency="pricing",source="local_fallback"})") == 10);
    CHECK(value_of(text, R"(resil_quota_decisions_total{dependency="pricing",source="refused"})") == 0);
    CHECK(value_of(text, R"(resil_quota_store_connected{dependency="pricing"})") == 0);
    CHECK(value_of(text, R"(resil_quota_store_failures_total{dependency="pricing"})") == 1);
    CHECK(value_of(text, R"(resil_rejections_total{dependency="pricing",reason="quota_unavailable"})") == 0);
    CHECK(value_of(text, R"(resil_pace_changes_total{dependency="pricing"})") == 1);
    CHECK(value_of(text, R"(resil_pace_changes_total{dependency="inventory"})") == -1);

    // Every family written is one of the documented list.
    for (const auto& [family, shapes] : resil_test::shapes_of_text(text)) {
        INFO(family);
        CHECK(std::find(std::begin(resil::detail::family_names), std::end(resil::detail::family_names), family) !=
              std::end(resil::detail::family_names));
    }
    // A small honest text: 366 lines with every family for every dependency
    // before series followed the parts; the count is reported in docs/observability.md.
    std::printf("checkout text: %zu lines for 3 dependencies\n", lines_of(text));
    CHECK(lines_of(text) < 300);
}

TEST_CASE("metrics: the checkout service's text passes promtool check metrics") {
    const resil_test::checkout_metrics c;
    const auto path = std::filesystem::temp_directory_path() / ("resil_checkout_" + std::to_string(::getpid()) + ".prom");
    {
        std::ofstream out(path);
        out << c.text();
    }
    const std::string command = std::string(RESIL_PROMTOOL) + " check metrics < " + path.string() + " 2>&1";
    std::string output;
    FILE* p = ::popen(command.c_str(), "r");
    REQUIRE(p != nullptr);  // no promtool: the test fails, it does not skip (CI installs the prometheus package)
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) output += buf;
    const int status = ::pclose(p);
    std::filesystem::remove(path);
    INFO(output);
    CHECK(status == 0);
    CHECK(output.empty());  // not even a lint warning
}

TEST_CASE("metrics: a breaker per endpoint is counted per endpoint, apart from the dependency's") {
    resil::metrics m{"payments"};
    auto dependency = m.breaker_hook();
    auto per_endpoint = m.endpoint_breaker_hook();
    events::breaker_state_changed e{resil::circuit_state::closed, resil::circuit_state::open, 0.8, 5,
                                    resil::time_point{1s}, 1};
    e.endpoint = "https://a.example";
    per_endpoint(e);
    e.endpoint = "https://b.example";
    per_endpoint(e);
    e.from = resil::circuit_state::open;
    e.to = resil::circuit_state::half_open;
    e.at = resil::time_point{31s};
    e.generation = 2;
    per_endpoint(e);
    // A hook for the dependency's breaker told of an endpoint's change counts it for the endpoint.
    e.endpoint = "https://a.example";
    dependency(e);

    CHECK(m.snapshot().breaker_opened == 0);
    CHECK(m.breaker_state() == resil::circuit_state::closed);
    const auto eps = m.endpoints(resil::time_point{41s});
    REQUIRE(eps.size() == 2);
    CHECK(eps[0].address == "https://a.example");
    CHECK(eps[0].breaker == resil::circuit_state::half_open);
    CHECK(eps[0].breaker_opened == 1);
    CHECK(eps[0].breaker_half_opened == 1);
    CHECK(eps[0].time_open == 30s);
    CHECK(eps[1].breaker == resil::circuit_state::half_open);

    // Out of order (racing threads): the latest generation gives the state.
    e.endpoint = {};
    e.from = resil::circuit_state::open;
    e.to = resil::circuit_state::half_open;
    e.generation = 2;
    dependency(e);
    e.from = resil::circuit_state::closed;
    e.to = resil::circuit_state::open;
    e.generation = 1;
    dependency(e);
    CHECK(m.breaker_state() == resil::circuit_state::half_open);
    CHECK(m.snapshot().breaker_opened == 1);
}

TEST_CASE("metrics: a real balancer's endpoint breakers name their endpoint to the hook") {
    resil::metrics m{"payments"};
    std::vector<std::string> told;
    resil::circuit_breaker_options per_endpoint;
    per_endpoint.on_state_change = [&](const events::breaker_state_changed& e) {
        told.emplace_back(e.endpoint);
        m.endpoint_breaker_hook()(e);
    };
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}},
                       {.policy = resil::balancing_policy::round_robin, .endpoint_breaker = per_endpoint}};
    for (int i = 0; i < 2; ++i) {
        auto lease = lb.pick(resil::time_point{});
        if (lease.address() == "b:80") lease.breaker()->isolate();
        lease.record_and_end(resil::time_point{}, resil::endpoint_result::success);
    }
    CHECK(told == std::vector<std::string>{"b:80"});
    const auto text = resil::prometheus_text({m});
    CHECK(text.find(R"(resil_breaker_transitions_total{dependency="payments",endpoint="b:80",to="open"} 1)") !=
          std::string::npos);
    CHECK(text.find(R"(resil_breaker_transitions_total{dependency="payments",to="open"})") == std::string::npos);
}

TEST_CASE("metrics: endpoint series are bounded, and those of endpoints a watched balancer dropped go") {
    resil::metrics m{"many"};
    for (std::size_t i = 0; i < resil::metrics::max_endpoint_series + 50; ++i) {
        const auto address = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":80";
        m(events::endpoint_ejected{address, 1, 30s, {}});
    }
    auto eps = m.endpoints();
    REQUIRE(eps.size() == resil::metrics::max_endpoint_series + 1);
    CHECK(eps.back().address == "other");
    CHECK(eps.back().ejections == 50);
    CHECK(m.snapshot().endpoint_ejections == resil::metrics::max_endpoint_series + 50);

    resil::metrics w{"watched"};
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}}};
    w.watch_balancer(lb);
    w(events::endpoint_ejected{"b:80", 1, 30s, {}});
    (void)lb.pick(resil::time_point{});
    CHECK(w.endpoints().size() == 2);
    lb.replace({{.address = "a:80"}, {.address = "c:80"}});
    eps = w.endpoints();
    REQUIRE(eps.size() == 2);
    CHECK(eps[0].address == "a:80");
    CHECK(eps[1].address == "c:80");
    CHECK(eps[1].picks == 0u);
}

TEST_CASE("metrics: parts are learnt from events and declarations, never forgotten") {
    resil::metrics m{"d"};
    CHECK(m.parts() == part::none);
    const auto bare = resil::prometheus_text({m});
    CHECK(bare.find("resil_retries_total") == std::string::npos);
    CHECK(bare.find("resil_breaker") == std::string::npos);
    CHECK(bare.find("resil_hedges_total") == std::string::npos);
    CHECK(bare.find("resil_calls_total{dependency=\"d\"} 0") != std::string::npos);
    m(events::hedge_refused{1});
    m(events::retry_scheduled{1, 10ms, resil::verdict::retryable, false});
    m.declare(part::rate_limiting);
    CHECK(m.parts() == (part::hedging | part::retry | part::rate_limiting));
    const auto text = resil::prometheus_text({m});
    CHECK(text.find("resil_hedges_total{dependency=\"d\",event=\"refused\"} 1") != std::string::npos);
    CHECK(text.find("resil_retries_total{dependency=\"d\"} 1") != std::string::npos);
    CHECK(text.find("resil_rejections_total{dependency=\"d\",reason=\"rate_limited\"} 0") != std::string::npos);
    CHECK(text.find("reason=\"throttled\"") == std::string::npos);
    // A reason counted appears, whatever was declared: nothing is hidden.
    m(events::rejected{resil::reason::throttled, std::nullopt});
    CHECK(resil::prometheus_text({m}).find("resil_rejections_total{dependency=\"d\",reason=\"throttled\"} 1") !=
          std::string::npos);
}
