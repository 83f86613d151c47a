// Loads a dependency's pipeline configuration from a JSON file, builds every
// policy it configures, and prints them — what a service does at start-up so
// operators can tune timeouts and thresholds without a rebuild.
//
//   example_json_config [config.json]       (default: examples/config.json)
//
// A bad file stops here with the JSON path and the reason, e.g.
//   examples/config.json: retry.max_attempts: must be >= 1, got 0
// rather than running with a silently defaulted setting.
#include <resil/json.hpp>

#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/metrics.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/token_bucket.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

using namespace std::chrono_literals;

namespace {

// The shared-state policies of one dependency, built from its configuration.
// Each stays empty when its section is absent; the pipeline below then uses
// the library's defaults (a service may as well leave the policy out).
struct dependency {
    resil::json::pipeline_config config;
    resil::metrics metrics;
    std::unique_ptr<resil::retry_budget> budget;
    std::unique_ptr<resil::circuit_breaker> breaker;
    std::unique_ptr<resil::token_bucket> bucket;
    std::unique_ptr<resil::concurrency_limit> limit;

    dependency(resil::json::pipeline_config c, std::string name) : config(std::move(c)), metrics(std::move(name)) {
        if (config.retry_budget) budget = std::make_unique<resil::retry_budget>(*config.retry_budget);
        auto breaker_options = config.circuit_breaker.value_or(resil::circuit_breaker_options{});
        breaker_options.on_state_change = metrics.breaker_hook();  // callbacks are code, not configuration
        breaker = std::make_unique<resil::circuit_breaker>(std::move(breaker_options));
        bucket = std::make_unique<resil::token_bucket>(config.token_bucket.value_or(resil::token_bucket_options{}));
        limit = std::make_unique<resil::concurrency_limit>(
            config.concurrency_limit.value_or(resil::concurrency_limit_options{}));
    }

    [[nodiscard]] resil::retry_options retry_options() const {
        auto o = config.retry.value_or(resil::retry_options{});
        o.budget = budget.get();
        return o;
    }
};

void print(const char* title, const nlohmann::ordered_json& j) { std::printf("%-18s %s\n", title, j.dump().c_str()); }

}  // namespace

int main(int argc, char** argv) {
    const char* file = argc > 1 ? argv[1] : "examples/config.json";
    std::optional<dependency> dep;
    try {
        dep.emplace(resil::json::load_config(file), "example");
    } catch (const resil::json::config_error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }

    // The pipeline, outermost first, from the configuration (defaults where a
    // section is absent).
    const auto pipe = resil::pipeline(
                          resil::deadline_policy{dep->config.deadline.value_or(250ms)},
                          resil::retry_policy{dep->retry_options()}, std::ref(*dep->breaker), std::ref(*dep->limit),
                          std::ref(*dep->bucket), resil::timeout_policy{dep->config.timeouts.value_or(resil::timeouts{})})
                          .with_listener(std::ref(dep->metrics));

    // What is in force, read back from the policies themselves (so resolved
    // values show, e.g. a probe_timeout of 0 as open_for).
    std::printf("configuration from %s:\n", file);
    print("deadline", resil::json::write(pipe.policy<0>().budget()));
    print("retry", resil::json::write(pipe.policy<1>().options()));
    if (dep->budget) print("retry_budget", resil::json::write(dep->budget->options()));
    print("circuit_breaker", resil::json::write(dep->breaker->options()));
    print("concurrency_limit", resil::json::write(dep->limit->options()));
    print("token_bucket", resil::json::write(dep->bucket->options()));
    print("timeouts", resil::json::write(pipe.policy<5>().timeouts()));

    // One call through it, to show the pipeline runs.
    const auto out = pipe([](resil::context& ctx) { return ctx.attempt_timeouts().total.count(); },
                          resil::always_success);
    std::printf("\none call: ok=%s, its total timeout %lld ms\n", out.ok() ? "true" : "false",
                static_cast<long long>(out.value()));
    std::printf("metrics: %s\n", resil::json::to_json(dep->metrics).dump().c_str());
    return 0;
}
