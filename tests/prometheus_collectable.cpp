// resil/prometheus.hpp: resil's metrics as a prometheus-cpp Collectable,
// scraped through prometheus::TextSerializer next to a service's own
// prometheus::Registry: the same families, values and labels as
// resil::prometheus_text, read from resil's atomics on each scrape.
#include <resil/events.hpp>
#include <resil/metrics.hpp>
#include <resil/outcome.hpp>
#include <resil/prometheus.hpp>

#include <prometheus/counter.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/checkout_metrics.hpp"
#include "support/prometheus_series.hpp"

using namespace std::chrono_literals;
using resil::reason;
using resil::verdict;
namespace events = resil::events;

namespace {

const prometheus::MetricFamily* find(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
    for (const auto& f : families)
        if (f.name == name) return &f;
    return nullptr;
}

const prometheus::ClientMetric* find(const prometheus::MetricFamily& f,
                                     const std::vector<prometheus::ClientMetric::Label>& labels) {
    for (const auto& m : f.metric)
        if (m.label == labels) return &m;
    return nullptr;
}

std::string serialize(const std::vector<prometheus::MetricFamily>& families) {
    std::ostringstream out;
    prometheus::TextSerializer{}.Serialize(out, families);
    return out.str();
}

}  // namespace

TEST_CASE("prometheus: a collectable reports every family of the parts each dependency has, from resil's counters") {
    resil::metrics inventory{"inventory"};
    resil::metrics payments{"payments"};
    payments.declare(resil::metrics::part::breaker);
    inventory(events::attempt_started{1});
    inventory(events::attempt_finished{1, verdict::retryable, 30ms});
    inventory(events::attempt_started{2});
    inventory(events::attempt_finished{2, verdict::success, 3s});
    inventory(events::retry_scheduled{1, 100ms, verdict::retryable, false});
    inventory(events::call_finished{reason::none, 2, false, false});
    payments(events::rejected{reason::circuit_open, 1s});
    payments(events::call_finished{reason::circuit_open, 0, true, false});
    payments(events::fallback_used{reason::circuit_open});
    payments(events::limit_changed{20, 18, resil::load_signal::overload, 1});
    payments(events::pace_changed{2.0, 5, resil::duration::zero(), 1});
    payments(events::endpoint_ejected{"a:80", 1, 30s, resil::time_point{}});

    const auto resil_metrics = resil::prometheus::make_collectable({inventory, payments});
    const auto families = resil_metrics->Collect();
    // The pipeline's 7, the retry's 4 (inventory), the adaptive limit's 2,
    // the pace's 1, the breaker's 3, ejections, returns and ejected (payments),
    // the histograms 2.
    CHECK(families.size() == 22);

    const auto* calls = find(families, "resil_calls_total");
    REQUIRE(calls);
    CHECK(calls->type == prometheus::MetricType::Counter);
    CHECK(calls->help == "Calls that ended.");
    REQUIRE(calls->metric.size() == 2);
    CHECK(find(*calls, {{"dependency", "inventory"}})->counter.value == 1.0);
    CHECK(find(*calls, {{"dependency", "payments"}})->counter.value == 1.0);
    CHECK(find(*find(families, "resil_retries_total"), {{"dependency", "inventory"}})->counter.value == 1.0);

    const auto* rejections = find(families, "resil_rejections_total");
    REQUIRE(rejections);
    // The reasons a policy refuses with, of the parts each has: inventory
    // (a retry) deadline_exceeded and cancelled; payments those two,
    // circuit_open, shed (an adaptive limit), rate_limited (a paced bucket)
    // and the balancer's two.
    CHECK(rejections->metric.size() == 2 + 7);
    CHECK(find(*rejections, {{"dependency", "payments"}, {"reason", "circuit_open"}})->counter.value == 1.0);
    CHECK(find(*rejections, {{"dependency", "inventory"}, {"reason", "circuit_open"}}) == nullptr);  // no breaker
    CHECK(find(*rejections, {{"dependency", "payments"}, {"reason", "none"}}) == nullptr);
    const auto* transitions = find(families, "resil_breaker_transitions_total");
    REQUIRE(transitions);
    CHECK(find(*transitions, {{"dependency", "payments"}, {"to", "half_open"}})->counter.value == 0.0);
    CHECK(find(*find(families, "resil_limit_decreases_total"), {{"dependency", "payments"}})->counter.value == 1.0);
    CHECK(find(*find(families, "resil_limit_increases_total"), {{"dependency", "payments"}})->counter.value == 0.0);
    CHECK(find(*find(families, "resil_pace_changes_total"), {{"dependency", "payments"}})->counter.value == 1.0);
    CHECK(find(*find(families, "resil_pace_changes_total"), {{"dependency", "inventory"}}) == nullptr);
    CHECK(find(*find(families, "resil_endpoint_ejections_total"), {{"dependency", "payments"}, {"endpoint", "a:80"}})
              ->counter.value == 1.0);
    CHECK(find(*find(families, "resil_endpoint_returns_total"), {{"dependency", "payments"}, {"endpoint", "a:80"}})
              ->counter.value == 0.0);
    CHECK(find(*find(families, "resil_endpoint_ejected"), {{"dependency", "payments"}, {"endpoint", "a:80"}})
              ->gauge.value == 1.0);
    CHECK(find(families, "resil_hedges_total") == nullptr);  // nobody hedges

    const auto* whole_calls = find(families, "resil_call_duration_seconds");
    REQUIRE(whole_calls);
    CHECK(whole_calls->type == prometheus::MetricType::Histogram);
    const auto* attempts = find(families, "resil_attempt_duration_seconds");
    REQUIRE(attempts);
    CHECK(attempts->type == prometheus::MetricType::Histogram);
    const auto& h = find(*attempts, {{"dependency", "inventory"}})->histogram;
    CHECK(h.sample_count == 2);
    CHECK(h.sample_sum == Approx(3.03));
    REQUIRE(h.bucket.size() == resil::latency_bucket_bounds.size() + 1);
    CHECK(h.bucket[5].upper_bound == Approx(0.05));
    CHECK(h.bucket[5].cumulative_count == 1);
    CHECK(h.bucket[11].upper_bound == Approx(5.0));
    CHECK(h.bucket[11].cumulative_count == 2);

    // Read on each scrape, never copied: a later event shows at once.
    inventory(events::call_finished{reason::none, 1, false, false});
    CHECK(find(*find(resil_metrics->Collect(), "resil_calls_total"), {{"dependency", "inventory"}})->counter.value ==
          2.0);
}

TEST_CASE("prometheus: scraped with a service's own registry, the text is resil::prometheus_text's") {
    resil::metrics inventory{"inventory \"eu\""};
    inventory(events::attempt_finished{1, verdict::success, 12ms});
    inventory(events::rejected{reason::shed, std::nullopt});

    auto registry = std::make_shared<prometheus::Registry>();
    auto& requests = prometheus::BuildCounter().Name("service_requests_total").Help("Requests.").Register(*registry);
    requests.Add({{"path", "/"}}).Increment(3);
    const resil::prometheus::collectable resil_metrics{inventory};

    auto families = registry->Collect();
    for (auto& f : resil_metrics.Collect()) families.push_back(std::move(f));
    const auto text = serialize(families);
    INFO(text);
    CHECK(text.find("service_requests_total{path=\"/\"} 3") != std::string::npos);
    CHECK(text.find(R"(resil_rejections_total{dependency="inventory \"eu\"",reason="shed"} 1)") != std::string::npos);
    CHECK(text.find(R"(resil_attempt_duration_seconds_bucket{dependency="inventory \"eu\"",le="0.025"} 1)") !=
          std::string::npos);
    CHECK(text.find(R"(resil_attempt_duration_seconds_count{dependency="inventory \"eu\""} 1)") != std::string::npos);
    // Every HELP line of resil's own text writer is there, once.
    const auto own = resil::prometheus_text({inventory});
    for (std::size_t pos = 0; (pos = own.find("# HELP ", pos)) != std::string::npos; ++pos) {
        const auto line = own.substr(pos, own.find('\n', pos) - pos);
        INFO(line);
        const auto first = text.find(line + "\n");
        CHECK(first != std::string::npos);
        CHECK(text.find(line + "\n", first + 1) == std::string::npos);
    }
}

TEST_CASE("prometheus: two metrics objects with one name are refused") {
    resil::metrics a{"same"};
    resil::metrics b{"same"};
    CHECK_THROWS_AS(resil::prometheus::make_collectable({a, b}), std::invalid_argument);
}

TEST_CASE("prometheus: the collectable has the text's families and label sets, for every part") {
    const resil_test::checkout_metrics c;
    const auto from_text = resil_test::shapes_of_text(c.text());
    const auto families = resil::prometheus::make_collectable({c.inventory, c.payments, c.pricing})->Collect();
    resil_test::series_shapes from_collectable;
    for (const auto& f : families) {
        auto& shapes = from_collectable[f.name];
        for (const auto& m : f.metric) {
            std::set<std::string> labels;
            for (const auto& l : m.label) labels.insert(l.name);
            shapes.insert(labels);
        }
    }
    CHECK(from_collectable == from_text);
    // The scenario reaches the endpoint, hedge and quota families.
    CHECK(from_text.count("resil_endpoint_picks_total") == 1);
    CHECK(from_text.count("resil_hedges_total") == 1);
    CHECK(from_text.count("resil_quota_store_connected") == 1);
    CHECK(from_text.at("resil_breaker_open") ==
          std::set<std::set<std::string>>{{"dependency"}, {"dependency", "endpoint"}});
}
