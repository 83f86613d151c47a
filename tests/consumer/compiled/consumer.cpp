// A program linked to resil::compiled: compiled with
// RESIL_SEPARATE_COMPILATION (from the target), it sees declarations only,
// and every resil function it calls out of line comes from the library.
#if !defined(RESIL_SEPARATE_COMPILATION)
#error "resil::compiled must pass RESIL_SEPARATE_COMPILATION on to its users"
#endif

#include <resil/circuit_breaker.hpp>
#include <resil/metrics.hpp>
#include <resil/retry.hpp>
#include <resil/version.hpp>

#if RESIL_CONSUMER_HAVE_CURL && RESIL_CONSUMER_HAVE_JSON
#include <resil/json/service_config.hpp>
#endif

#include <cstdio>
#include <iostream>
#include <string>

int main() {
    std::string line = std::string("resil via " RESIL_CONSUMER_HOW ":");

    // The core: an options type's validation, the breaker's steady-clock
    // instantiation and the Prometheus text are compiled in the library.
    if (!resil::retry_options{.max_attempts = 0}.validate()) return 1;
    resil::circuit_breaker breaker{resil::circuit_breaker_options{}};
    if (breaker.state() != resil::circuit_state::closed) return 1;
    resil::metrics inventory{"inventory"};
    const std::string text = resil::prometheus_text({inventory});
    if (text.find("resil_calls_total{dependency=\"inventory\"} 0") == std::string::npos) return 1;
    line += " breaker closed, metrics text " + std::to_string(text.size()) + " bytes";

#if RESIL_CONSUMER_HAVE_CURL && RESIL_CONSUMER_HAVE_JSON
    // A service file, read by the library's reader.
    const char* file = "consumer_service.json";
    if (std::FILE* f = std::fopen(file, "w")) {
        std::fputs(R"({"dependencies": {"pricing": {"endpoints": [{"address": "http://127.0.0.1:9"}]}}})", f);
        std::fclose(f);
    } else {
        return 1;
    }
    const auto service = resil::json::load_service_config(file);
    std::remove(file);
    const auto& pricing = resil::json::dependency_options_of(service, "pricing");
    if (pricing.name != "pricing" || pricing.endpoints.size() != 1) return 1;
    try {
        (void)resil::json::dependency_options_of(service, "pricng");
        return 1;
    } catch (const resil::json::config_error& e) {
        if (std::string(e.what()).find("did you mean \"pricing\"") == std::string::npos) return 1;
    }
    line += "; service file: dependency " + pricing.name;
#endif
    std::cout << line << '\n';
    return 0;
}
