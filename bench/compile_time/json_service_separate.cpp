// json_service.cpp as a file of a program built with
// RESIL_SEPARATE_COMPILATION: it includes resil/json/load_config.hpp, which
// then declares load_config without nlohmann/json.hpp (compiled once, in the
// program's one separate-compilation source: separate_source.cpp). What
// scripts/compile_time.sh times against baseline_curl_retry_loop.cpp.
#include <resil/curl.hpp>
#include <resil/json/load_config.hpp>
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
