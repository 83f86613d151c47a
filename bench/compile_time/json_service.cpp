// A service's translation unit that builds a dependency's pipeline from its
// JSON configuration (resil/json.hpp) and calls it over libcurl: what
// scripts/compile_time.sh times against baseline_curl_retry_loop.cpp.
#include <resil/curl.hpp>
#if defined(RESIL_SEPARATE_COMPILATION)
// A file of a separate-compilation program needs load_config alone: declared
// then without nlohmann/json.hpp, compiled once in separate_source.cpp.
#include <resil/json/load_config.hpp>
#else
#include <resil/json.hpp>
#endif
#include <resil/resil.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

using namespace std::chrono_literals;

class inventory_client {
public:
    explicit inventory_client(const std::string& config_file)
        : config_(resil::json::load_config(config_file)),
          budget_(config_.retry_budget.value_or(resil::retry_budget_options{})),
          breaker_(config_.circuit_breaker.value_or(resil::circuit_breaker_options{})) {}

    std::optional<std::string> item(const std::string& id) {
        auto retry = config_.retry.value_or(resil::retry_options{});
        retry.budget = &budget_;
        auto pipe = resil::pipeline(resil::deadline_policy{config_.deadline.value_or(250ms)},
                                    resil::retry_policy{retry}, std::ref(breaker_),
                                    resil::timeout_policy{config_.timeouts.value_or(resil::timeouts{})});
        auto out = pipe([&](resil::context& ctx) {
            return http_.perform(resil::curl::request::get("http://inventory.internal/items/" + id), ctx);
        });
        if (!out) return std::nullopt;
        return std::string(out->body());
    }

private:
    resil::json::pipeline_config config_;
    resil::retry_budget budget_;
    resil::circuit_breaker breaker_;
    resil::curl::client http_;
};

std::optional<std::string> lookup(const std::string& id) {
    static inventory_client client{"inventory.json"};
    return client.item(id);
}
