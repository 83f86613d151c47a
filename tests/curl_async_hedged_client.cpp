// resil::curl::hedged_client, the blocking hedged mode, against Debian's
// nginx: threads each with their own client calling a replica where about
// 5 % of answers are slow (split_clients, echo_sleep, behind a logged proxy
// location that shows each copy and each early close as 499). These tests
// need nginx and libnginx-mod-http-echo; without them they fail, they do not
// skip. A stop request from another thread ends both copies at once.
#include <resil/curl.hpp>
#include <resil/curl_asio/async_hedged_client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "support/hedge_replica.hpp"
#include "support/nginx_server.hpp"
#include "support/timing.hpp"

using namespace std::chrono_literals;
using resil::curl::client_options;
using resil::curl::hedged_client;
using resil::curl::request;
using steady = std::chrono::steady_clock;
using resil_test::hedge_replica::access_log;
using resil_test::hedge_replica::http_extra;
using resil_test::hedge_replica::locations;
using resil_test::hedge_replica::slow_answer;

namespace {

// Statuses of the logged requests whose URI starts with `prefix`, once at
// least `expected` are logged (3 s at most).
std::vector<int> statuses(const resil_test::nginx_server& nginx, const std::string& prefix, std::size_t expected) {
    std::vector<int> found;
    for (const auto& l : access_log(nginx, prefix, expected)) found.push_back(l.status);
    return found;
}

struct counts {
    std::atomic<int>* started;
    std::atomic<int>* cancelled;
    void operator()(const resil::events::hedge_started&) const { ++*started; }
    void operator()(const resil::events::hedge_cancelled&) const { ++*cancelled; }
};

}  // namespace

TEST_CASE("curl hedged client: threads with blocking calls get the p99 of a hedged call; losers closed") {
    resil_test::nginx_server nginx{locations(), http_extra};
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = resil_test::slack / 2}};  // shared by the threads
    constexpr int threads = 2;
    constexpr int per_thread = 200;
    std::atomic<int> started{0};
    std::atomic<int> cancelled{0};
    std::mutex m;
    std::vector<steady::duration> took;
    std::vector<std::string> failures;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            hedged_client http;  // one per thread
            for (int i = 0; i < per_thread; ++i) {
                resil::context ctx;
                ctx.set_timeouts({.connect = 1000ms, .read = 2000ms, .total = 3000ms});
                const auto req = request::get(nginx.url("/replica?" + std::to_string(t * per_thread + i)));
                const auto t0 = steady::now();
                const auto r = http.perform(req, ctx, hedge, counts{&started, &cancelled});
                const std::lock_guard lock(m);
                took.push_back(steady::now() - t0);
                if (r.status() != 200) failures.push_back(std::to_string(r.status()) + " " + std::string(r.error_message()));
            }
        });
    }
    for (auto& th : pool) th.join();
    CHECK(failures.empty());
    std::sort(took.begin(), took.end());
    const auto p99 = took[took.size() * 99 / 100 - 1];
    const double p99_ms = std::chrono::duration<double, std::milli>(p99).count();
    INFO("p99 " << p99_ms << " ms; copies started " << started << ", cancelled " << cancelled);
    CHECK(p99 <= slow_answer / 2);  // without hedging, the p99 is a slow answer (5 % of them)
    constexpr int calls = threads * per_thread;
    const auto logged = statuses(nginx, "/replica", static_cast<std::size_t>(calls + started));
    CHECK(static_cast<double>(logged.size()) <= 1.10 * calls);
    std::map<int, int> by_status;
    for (int s : logged) ++by_status[s];
    CHECK(by_status[200] >= calls);
    CHECK(by_status[499] >= 1);  // a loser's transfer removed: the server saw the close
    CHECK(by_status[200] - calls + by_status[499] <= cancelled);
}

TEST_CASE("curl hedged client: a POST without a key is sent once; a keyed one's copies carry one key") {
    resil_test::nginx_server nginx{locations(), http_extra};
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 20ms}};
    std::atomic<int> started{0};
    std::atomic<int> cancelled{0};
    SECTION("no key") {
        hedged_client http{client_options{.idempotency_key = resil::curl::key_header_format::none}};
        resil::context ctx;
        const auto r = http.perform(request::post(nginx.url("/always_slow?unkeyed"), "{}"), ctx, hedge,
                                    counts{&started, &cancelled});
        CHECK(r.status() == 200);
        CHECK(statuses(nginx, "/always_slow?unkeyed", 2).size() == 1);  // waits: a second would show
        CHECK(started == 0);
    }
    SECTION("the client's key") {
        hedged_client http;
        resil::context ctx;
        const auto r = http.perform(request::post(nginx.url("/always_slow?keyed"), "{}"), ctx, hedge,
                                    counts{&started, &cancelled});
        CHECK(r.status() == 200);
        CHECK(statuses(nginx, "/always_slow?keyed", 2).size() == 2);
        CHECK(started == 1);
        CHECK(cancelled == 1);
    }
    SECTION("a bad context throws before anything is sent, and the client stays usable") {
        hedged_client http;
        resil::context bad;
        bad.set_timeouts({.connect = -1ms});
        CHECK_THROWS_AS(http.perform(request::get(nginx.url("/replica?bad")), bad, hedge), std::invalid_argument);
        resil::context ctx;
        CHECK(http.perform(request::get(nginx.url("/replica?after")), ctx, hedge).status() == 200);
    }
    SECTION("a listener that calls perform again: its exception ends the call; the client stays usable") {
        hedged_client http;
        int reentered = 0;
        auto reenter = [&](const auto& e) {
            if constexpr (std::is_same_v<std::decay_t<decltype(e)>, resil::events::hedge_started>) {
                ++reentered;
                resil::context inner;
                (void)http.perform(request::get(nginx.url("/replica?inner")), inner, hedge);
            }
        };
        resil::context ctx;
        CHECK_THROWS_AS(http.perform(request::get(nginx.url("/always_slow?reentered")), ctx, hedge, reenter),
                        std::logic_error);
        CHECK(reentered == 1);
        resil::context again;
        CHECK(http.perform(request::get(nginx.url("/replica?again")), again, hedge).status() == 200);
        CHECK(statuses(nginx, "/always_slow?reentered", 1) == std::vector<int>{499});  // copy 0 cancelled
    }
}

TEST_CASE("curl hedged client: a stop request from another thread ends every copy at once") {
    resil_test::nginx_server nginx{locations(), http_extra};
    resil::hedge_policy hedge{{.max_hedges = 1, .delay = 10ms}};
    hedged_client http;
    std::stop_source stop;
    resil::call_options options;
    options.stop = stop.get_token();
    resil::context ctx{std::move(options)};
    std::atomic<int> started{0};
    std::atomic<int> cancelled{0};
    std::atomic<steady::time_point> stopped_at{steady::time_point::max()};
    std::thread stopper([&] {
        std::this_thread::sleep_for(60ms);  // both copies are in flight by then
        stopped_at = steady::now();
        stop.request_stop();
    });
    const auto t0 = steady::now();
    const auto r = http.perform(request::get(nginx.url("/always_slow?stopped")), ctx, hedge,
                                counts{&started, &cancelled});
    const auto ended = steady::now();
    const auto took = ended - t0;
    stopper.join();
    CHECK(r.transport() == resil::curl::transport_status::cancelled);
    CHECK(started == 1);
    CHECK(ended - stopped_at.load() < resil_test::slack);  // at once, counted from the stop
    CHECK(took < slow_answer);
    const auto logged = statuses(nginx, "/always_slow?stopped", 2);
    CHECK(logged == std::vector<int>{499, 499});  // the server saw both connections closed
}
