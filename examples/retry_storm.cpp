// Why retries need jitter: 1,000 clients fail at once, and each retries up to
// 3 times (base 100 ms) against a server taking 50 requests per 10 ms.
// Without jitter every client waits the same and they come back together, a
// wave the server refuses again and again. With full jitter (resil's default)
// the same clients spread out and nearly all get through on the first retry.
//
//   $ ./example_retry_storm
#include "retry_storm.hpp"

#include <cstdio>

int main() {
    std::puts("1,000 clients fail at t = 0; the server takes 50 per 10 ms; 3 retries, base 100 ms\n");
    for (bool jitter : {false, true}) {
        const auto r = retry_storm::simulate(jitter, 7);
        std::printf("%s jitter: %d served, %d give up, peak of %d in 10 ms, %d attempts\n",
                    jitter ? "with   " : "without", r.served, r.gave_up, r.peak, r.attempts);
    }
    std::puts("\nsame server, same clients: only the randomness in the wait changed.");
}
