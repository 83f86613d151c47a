// An nginx replica for the hedging tests: /replica answers at once, or after
// `slow_answer` for about 5 % of requests (split on nginx's request id);
// /always_slow always waits. Both are proxied locations that log: nginx's
// proxy notices a client that closes while the backend still works and logs
// 499 (echo_sleep alone would log 200). `access_log` reads the lines back.
#pragma once

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "nginx_server.hpp"
#include "timing.hpp"

namespace resil_test::hedge_replica {

using namespace std::chrono_literals;

// A slow answer: 200 ms; under a sanitizer, whose slowness would blur the
// line between fast and slow, three times that (the ratios asserted stay).
inline constexpr auto slow_answer = resil_test::slack == 50ms ? 200ms : 600ms;

inline constexpr const char* http_extra = R"(
    log_format calls '$request_uri $status $request_time $http_idempotency_key';
    split_clients "$request_id" $slow { 5% 1; * 0; }
)";

inline std::string locations() {
    static_assert(slow_answer < 1s && slow_answer.count() % 100 == 0);
    const auto sleep = "0." + std::to_string(slow_answer.count() / 100);  // echo_sleep takes "0.2", not "0.200000"
    return R"(
    location /replica { access_log access.log calls; proxy_pass http://127.0.0.1:$server_port/backend; }
    location /always_slow { access_log access.log calls; proxy_pass http://127.0.0.1:$server_port/sleep; }
    location /backend { if ($slow) { echo_sleep )" + sleep + R"(; echo "slow"; } echo "fast"; }
    location /sleep { echo_sleep )" + sleep + R"(; echo "slow"; }
)";
}

struct log_line {
    std::string uri;
    int status = 0;
    double seconds = 0;
    std::string key;
};

// The access log's lines for URIs starting with `prefix`, waiting up to 3 s
// for at least `expected` (nginx writes a line once a request is finalised).
inline std::vector<log_line> access_log(const nginx_server& nginx, const std::string& prefix, std::size_t expected) {
    const auto until = std::chrono::steady_clock::now() + 3s;
    std::vector<log_line> lines;
    for (;;) {
        lines.clear();
        std::ifstream in(nginx.directory() + "/access.log");
        std::string line;
        while (std::getline(in, line)) {
            char uri[256] = {};
            char key[128] = {};
            log_line l;
            if (std::sscanf(line.c_str(), "%255s %d %lf %127s", uri, &l.status, &l.seconds, key) < 3) continue;
            l.uri = uri;
            l.key = key;
            if (l.uri.rfind(prefix, 0) == 0) lines.push_back(l);
        }
        if (lines.size() >= expected || std::chrono::steady_clock::now() > until) return lines;
        std::this_thread::sleep_for(5ms);
    }
}

}  // namespace resil_test::hedge_replica
