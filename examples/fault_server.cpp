// A misbehaving HTTP server for the http_client demo: scripted 503s, a 429
// with Retry-After, a POST that hangs once, a dependency that fails until it
// recovers. Serves on 127.0.0.1 until SIGINT or SIGTERM, printing every
// request it reads.
//
//   example_fault_server [--port N] [--port-file FILE]
//
// --port 0 (the default) takes an ephemeral port; --port-file writes the port
// there once the server listens, for scripts (scripts/demo.sh).
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>

#include "../tests/support/fault_server.hpp"

using namespace std::chrono_literals;
using resil_test::action;

int main(int argc, char** argv) {
    std::string port_file;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--port-file" && i + 1 < argc) {
            port_file = argv[++i];
        } else if (arg == "--port" && i + 1 < argc) {
            if (std::strcmp(argv[++i], "0") != 0) {
                std::fprintf(stderr, "example_fault_server: only --port 0 (ephemeral) is supported\n");
                return 2;
            }
        } else {
            std::fprintf(stderr, "usage: example_fault_server [--port 0] [--port-file FILE]\n");
            return 2;
        }
    }

    // Block the stop signals before any thread starts, so they all inherit
    // the mask and only sigwait below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    resil_test::fault_server server;
    // The catalog fails once, then answers.
    server.on("/catalog", {action::respond(503, "overloaded\n"), action::respond(200, "catalog: 42 items\n")});
    // The quota: 429 with Retry-After: 1, then fine, then 429 again for good.
    server.on("/quota", {action::respond(429, "slow down\n", {{"Retry-After", "1"}}), action::respond(200, "quota: ok\n"),
                         action::respond(429, "slow down\n", {{"Retry-After", "1"}})});
    // Orders and payments: the first POST hangs after the server read it
    // (the client cannot know whether it was charged), then it succeeds.
    server.on("/orders", {action::hang(), action::respond(201, "order created\n")});
    server.on("/payments", {action::hang(), action::respond(201, "payment created\n")});
    // Recommendations fail four times, then the dependency has recovered.
    server.on("/recommendations", {action::respond(503, "down\n"), action::respond(503, "down\n"),
                                   action::respond(503, "down\n"), action::respond(503, "down\n"),
                                   action::respond(200, "recommendations: 3 items\n")});

    std::mutex print;
    server.on_request([&print](const resil_test::recorded_request& r) {
        std::string line = "    [server] " + r.method + " " + r.target;
        if (auto key = r.header("Idempotency-Key")) line += "  Idempotency-Key: " + *key;
        if (auto budget = r.header("grpc-timeout")) line += "  grpc-timeout: " + *budget;
        std::lock_guard lock(print);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    });

    if (!port_file.empty()) {
        // Write then rename, so a reader never sees a half-written port.
        const std::string partial = port_file + ".tmp";
        std::ofstream(partial) << server.port() << "\n";
        std::rename(partial.c_str(), port_file.c_str());
    }
    std::printf("fault server listening on %s\n", server.url("").c_str());
    std::fflush(stdout);

    int received = 0;
    sigwait(&stop_signals, &received);
    server.stop();
    return 0;
}
