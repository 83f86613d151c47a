// A program using resil as any user's program does. Each consumer project
// (find_package, add_subdirectory, FetchContent) builds it, runs it and looks
// for its one line of output.
#include <resil/clock.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/version.hpp>

#if RESIL_CONSUMER_HAVE_CURL
#include <curl/curl.h>
#endif
#if RESIL_CONSUMER_HAVE_JSON
#include <nlohmann/json.hpp>
#endif
#if RESIL_CONSUMER_HAVE_FMT
#include <fmt/format.h>
#endif
#if RESIL_CONSUMER_HAVE_PROMETHEUS
#include <resil/prometheus.hpp>
#endif
#if RESIL_CONSUMER_HAVE_ASIO
#include <asio/version.hpp>
#endif
#if RESIL_CONSUMER_HAVE_REDIS
#include <hiredis/hiredis.h>
#endif
#if RESIL_CONSUMER_HAVE_DISCOVERY
#include <resil/discovery.hpp>
#endif

#include <chrono>
#include <iostream>
#include <string>

using namespace std::chrono_literals;

// Legal code that resil's own warning flags (-Wconversion -Wshadow -Werror)
// reject. It compiles here only because those flags stay on resil's own
// targets and never reach the users of resil::resil.
static int survives_only_without_resils_warnings(long wide) {
    int narrow = wide;
    {
        int narrow = 2;
        wide += narrow;
    }
    return narrow + static_cast<int>(wide - wide);
}

int main() {
    resil::testing::manual_clock clock;
    const auto start = clock.now();
    if (!clock.sleep_for(250ms, {})) return 1;
    const auto slept = std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - start);
    if (slept != 250ms || resil::version != RESIL_VERSION_MAJOR * 10000 + RESIL_VERSION_MINOR * 100 + RESIL_VERSION_PATCH)
        return 1;

    std::string line = "resil " + std::to_string(RESIL_VERSION_MAJOR) + "." + std::to_string(RESIL_VERSION_MINOR) +
                       "." + std::to_string(RESIL_VERSION_PATCH) + " via " RESIL_CONSUMER_HOW ": manual clock slept " +
                       std::to_string(slept.count()) + " ms";
#if RESIL_CONSUMER_HAVE_CURL
    line += "; resil::curl -> libcurl ";
    line += curl_version_info(CURLVERSION_NOW)->version;
#endif
#if RESIL_CONSUMER_HAVE_JSON
    line += "; resil::json -> " + nlohmann::json{{"max_attempts", 3}}.dump();
#endif
#if RESIL_CONSUMER_HAVE_FMT
    line += fmt::format("; resil::fmt -> fmt {}", FMT_VERSION);
#endif
#if RESIL_CONSUMER_HAVE_PROMETHEUS
    const resil::metrics dependency{"consumer"};
    const resil::prometheus::collectable collected{dependency};
    line += "; resil::prometheus -> prometheus-cpp, " + std::to_string(collected.Collect().size()) + " families";
#endif
#if RESIL_CONSUMER_HAVE_ASIO
    line += "; resil::asio -> Asio " + std::to_string(ASIO_VERSION);
#endif
#if RESIL_CONSUMER_HAVE_REDIS
    // Linked, not only found: a reader is made and freed by libhiredis.
    redisReader* reader = redisReaderCreate();
    if (reader == nullptr) return 1;
    redisReaderFree(reader);
    line += "; resil::redis -> hiredis " + std::to_string(HIREDIS_MAJOR) + "." + std::to_string(HIREDIS_MINOR);
#endif
#if RESIL_CONSUMER_HAVE_DISCOVERY
    // Linked, not only found: a source's resolver state is made by libresolv
    // (res_ninit); no lookup is made.
    resil::balancer lb{{{.address = "http://127.0.0.1:1"}}};
    const resil::dns_discovery source{{.name = "consumer.invalid", .nameserver = "127.0.0.1:53"}, lb};
    line += "; resil::discovery -> libresolv, " + std::to_string(source.metrics().lookups) + " lookups";
#endif
    std::cout << line << '\n';
    return survives_only_without_resils_warnings(7) == 7 ? 0 : 1;
}
