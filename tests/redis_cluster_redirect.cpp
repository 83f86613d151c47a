// resil::redis::rate_limiter configured with one server (no cluster_nodes)
// that turns out to be a Redis Cluster node not owning the key's slot: MOVED
// and ASK are store failures with a message naming the redirect (only a
// limiter given cluster_nodes follows redirects: tests/redis_cluster.cpp),
// and the failure policy decides. A scripted fake node gives the redirects.
#include <resil/redis.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/fake_redis.hpp"

using namespace std::chrono_literals;
using resil::redis::decided_by;
using resil::redis::failure_policy;
using resil::redis::rate_limit_status;
using resil::redis::rate_limiter;
using resil::redis::rate_limiter_options;

namespace {

rate_limiter_options options_for(std::uint16_t port, failure_policy p) {
    rate_limiter_options o;
    o.rate = 100;
    o.burst = 10;
    o.port = port;
    o.key = "clustered";
    o.on_failure = p;
    // Generous: the scripted node answers at once, but a loaded machine may
    // not run it for a while, and a timeout would hide the redirect.
    o.connect_timeout = 2s;
    o.reply_timeout = 2s;
    o.connections = 1;
    return o;
}

// SCRIPT LOAD answers a SHA1 (it names no key, so any node runs it);
// EVALSHA, which names the key, answers `redirect`.
resil_test::fake_redis::responder node_answering(std::string redirect) {
    return [redirect](const std::vector<std::string>& cmd) -> std::string {
        if (!cmd.empty() && cmd[0] == "SCRIPT") return "$40\r\n" + std::string(40, 'a') + "\r\n";
        return "-" + redirect + "\r\n";
    };
}

}  // namespace

TEST_CASE("redis limiter: MOVED from a cluster node -> a store failure naming the redirect; fail closed rejects") {
    resil_test::fake_redis node(node_answering("MOVED 3999 127.0.0.1:7001"));
    rate_limiter limiter{options_for(node.port(), failure_policy::fail_closed)};
    const auto r = limiter.try_acquire();
    CHECK(r.status == rate_limit_status::unavailable);
    CHECK(r.source == decided_by::fallback);
    CHECK(limiter.last_error() ==
          "Redis Cluster redirected the key (MOVED 3999 127.0.0.1:7001): the limiter follows no redirect; "
          "give it the node that owns the key's slot");
    const auto m = limiter.metrics();
    CHECK(m.store_failures == 1);
    CHECK(m.error_replies == 1);
    CHECK(m.fail_closed_rejected == 1);
    CHECK(m.granted == 0);
    // The EVALSHA was sent once: a redirect is not retried or followed.
    int evalshas = 0;
    for (const auto& cmd : node.commands()) evalshas += cmd.at(0) == "EVALSHA" ? 1 : 0;
    CHECK(evalshas == 1);
}

TEST_CASE("redis limiter: ASK during a slot migration -> the same; fail open admits through the local bucket") {
    resil_test::fake_redis node(node_answering("ASK 3999 127.0.0.1:7002"));
    rate_limiter limiter{options_for(node.port(), failure_policy::fail_open)};
    const auto r = limiter.try_acquire();
    CHECK(r.status == rate_limit_status::granted);
    CHECK(r.source == decided_by::fallback);
    CHECK(limiter.last_error() ==
          "Redis Cluster redirected the key (ASK 3999 127.0.0.1:7002): the limiter follows no redirect; "
          "give it the node that owns the key's slot");
    const auto m = limiter.metrics();
    CHECK(m.store_failures == 1);
    CHECK(m.fail_open_admitted == 1);
}

TEST_CASE("redis limiter: an error reply that is not a redirect keeps Redis's own text") {
    resil_test::fake_redis node(node_answering("ERR something else"));
    rate_limiter limiter{options_for(node.port(), failure_policy::fail_closed)};
    CHECK(limiter.try_acquire().status == rate_limit_status::unavailable);
    CHECK(limiter.last_error() == "ERR something else");
}
