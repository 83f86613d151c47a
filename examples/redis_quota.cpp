// One pod of a fleet sharing one quota through Redis. Run several at once
// (scripts/redis_quota_demo.sh starts a redis-server and four of them): each
// sends its requests spread over one second, and decides each twice — with
// the shared resil::redis::rate_limiter, and with a token_bucket of the same
// rate and burst in its own memory, which is what a limit per pod gives.
//
//   example_redis_quota --port 6379 --key demo --requests 75 --pod 1
//   pod 1: shared quota granted 38 of 75 (37 rejected, Retry-After 1 s); a local bucket would grant 75
//   pod 1: its last answer's fields: RateLimit-Policy: "demo";q=100;w=2  RateLimit: "demo";r=0;t=1
//
// The fields are what a service limiting its own clients sends with each
// answer (draft-ietf-httpapi-ratelimit-headers): r the permits left in the
// shared quota, t the seconds until the next one, q the burst and w the
// seconds an empty quota takes to fill.
// Summed over four pods, the shared quota grants about what one bucket of
// 50/s with a burst of 100 grants (149 of 300), the local buckets four times
// that limit: the N× pitfall.
#include <resil/redis.hpp>
#include <resil/token_bucket.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    int port = 6379, requests = 75, pod = 1;
    std::string key = "demo";
    double seconds = 1.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--port") port = std::atoi(argv[i + 1]);
        else if (flag == "--key") key = argv[i + 1];
        else if (flag == "--requests") requests = std::atoi(argv[i + 1]);
        else if (flag == "--pod") pod = std::atoi(argv[i + 1]);
        else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: %s [--port P] [--key K] [--requests N] [--pod I] [--seconds S]\n", argv[0]);
            return 2;
        }
    }
    if (requests < 1 || seconds <= 0) {
        std::fprintf(stderr, "--requests must be at least 1 and --seconds positive\n");
        return 2;
    }
    try {
        resil::redis::rate_limiter shared{{.rate = 50,
                                           .burst = 100,
                                           .port = port,
                                           .key = key,
                                           .on_failure = resil::redis::failure_policy::fail_open,
                                           .expected_pods = 4}};
        resil::token_bucket local{{.rate = 50, .burst = 100}};

        int granted = 0, rejected = 0, by_fallback = 0, local_granted = 0;
        long long longest_retry_after = 0;
        resil::redis::rate_limit_result last;
        const auto start = std::chrono::steady_clock::now();
        const auto spacing = std::chrono::duration<double>(seconds / requests);
        for (int i = 0; i < requests; ++i) {
            std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(spacing * i));
            const auto r = shared.try_acquire();
            last = r;
            if (r.source == resil::redis::decided_by::fallback) ++by_fallback;
            if (r) {
                ++granted;
            } else {
                ++rejected;
                if (r.retry_after.count() > longest_retry_after) longest_retry_after = r.retry_after.count();
            }
            if (local.try_acquire()) ++local_granted;
        }
        std::printf("pod %d: shared quota granted %d of %d (%d rejected, Retry-After up to %lld s)", pod, granted,
                    requests, rejected, longest_retry_after);
        if (by_fallback) std::printf(", %d decided locally: %s", by_fallback, shared.last_error().c_str());
        std::printf("; a local bucket would grant %d\n", local_granted);
        const auto& o = shared.options();
        const auto window_s = static_cast<long long>(std::ceil(static_cast<double>(o.burst) / o.rate));
        if (last.source != resil::redis::decided_by::none)
            std::printf("pod %d: its last answer's fields: RateLimit-Policy: \"%s\";q=%lld;w=%lld  "
                        "RateLimit: \"%s\";r=%lld;t=%lld\n",
                        pod, key.c_str(), static_cast<long long>(o.burst), window_s, key.c_str(),
                        static_cast<long long>(last.remaining),
                        static_cast<long long>(std::chrono::ceil<std::chrono::seconds>(last.reset).count()));
        // For the demo script to sum: granted, requests, local_granted.
        std::printf("TOTALS %d %d %d\n", granted, requests, local_granted);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pod %d: %s\n", pod, e.what());
        return 1;
    }
    return 0;
}
