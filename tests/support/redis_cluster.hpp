// tests/support/redis_cluster.hpp — a real Redis Cluster for the Redis
// limiter's tests: 3 primaries and 3 replicas of Debian's redis-server on
// free loopback ports (cluster bus ports picked too), joined with
// `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`, and
// ready once every node says cluster_state:ok, agrees on the 3 shards and
// every replica has synced. A primary can be killed (a failover follows
// after cluster-node-timeout) and a slot migrated (ASK, then MOVED).
//
//   resil_test::redis_cluster cluster;                // ~2-5 s to start
//   options.cluster_nodes = cluster.seeds();          // "127.0.0.1:p1,..."
//   const int owner = cluster.owner_port(slot);
//   cluster.kill_port(owner);  ...  cluster.wait_promoted(slot, owner, 30s);
//
// Every node is stopped (and its directory removed) when the object goes.
// When redis-server or redis-cli is missing, construction throws.
#pragma once

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

struct redis_reply_deleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using redis_reply = std::unique_ptr<redisReply, redis_reply_deleter>;

/// One command to 127.0.0.1:`port` on a fresh connection (1 s timeouts);
/// null when the node cannot be reached or does not answer.
[[nodiscard]] inline redis_reply redis_ask(std::uint16_t port, const std::vector<std::string>& args) {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c) return {};
    if (c->err) {
        redisFree(c);
        return {};
    }
    redisSetTimeout(c, tv);
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    redisFree(c);
    return redis_reply{r};
}

/// A string, status or error reply's text; "" for anything else or none.
[[nodiscard]] inline std::string reply_text(const redis_reply& r) {
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_ERROR))
        return {};
    return std::string(r->str, r->len);
}

class redis_cluster {
public:
    static constexpr int nodes = 6;  // 3 primaries, each with one replica

    /// `node_timeout_ms`: cluster-node-timeout (how long before a silent
    /// primary is failed over).
    explicit redis_cluster(int node_timeout_ms = 1000) : dir_("resil-redis-cluster") {
        if (::access("/usr/bin/redis-server", X_OK) != 0 || ::access("/usr/bin/redis-cli", X_OK) != 0)
            throw std::runtime_error("redis-server and redis-cli are needed (apt-get install redis-server)");
        for (int i = 0; i < nodes; ++i) {
            node& n = nodes_[i];
            std::string error;
            bool started = false;
            for (int attempt = 0; attempt < 5 && !started; ++attempt) {
                n.port = refused_port();
                n.bus = refused_port();
                if (n.bus == n.port) continue;
                n.dir = dir_.path() + "/" + std::to_string(i);
                std::filesystem::create_directories(n.dir);
                const std::string log = n.dir + "/redis.log";
                started = n.child.start(
                    {"/usr/bin/redis-server", "--port", std::to_string(n.port), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no", "--dir", n.dir, "--logfile", log, "--daemonize", "no", "--cluster-enabled",
                     "yes", "--cluster-config-file", n.dir + "/nodes.conf", "--cluster-port", std::to_string(n.bus),
                     "--cluster-node-timeout", std::to_string(node_timeout_ms),
                     "--cluster-replica-validity-factor", "0"},
                    n.port, "", [&] { return read_text_file(log); }, error);
            }
            if (!started) throw std::runtime_error("redis-server (cluster node) did not start: " + error);
        }
        std::string cmd = "timeout 120 /usr/bin/redis-cli --cluster create";
        for (const auto& n : nodes_) cmd += " 127.0.0.1:" + std::to_string(n.port);
        const std::string out = dir_.path() + "/create.log";
        cmd += " --cluster-replicas 1 --cluster-yes > " + out + " 2>&1";
        if (std::system(cmd.c_str()) != 0)
            throw std::runtime_error("redis-cli --cluster create failed: " + read_text_file(out));
        wait_ready(std::chrono::seconds{60});
    }
    redis_cluster(const redis_cluster&) = delete;
    redis_cluster& operator=(const redis_cluster&) = delete;
    ~redis_cluster() {
        for (auto& n : nodes_) n.child.stop();
    }

    /// Every node as "127.0.0.1:port,..." (the limiter's cluster_nodes).
    [[nodiscard]] std::string seeds() const {
        // Appended piece by piece: g++ 12 -O3 sees a false overlap (-Wrestrict)
        // in `"," + std::string(...)` here.
        std::string s;
        for (const auto& n : nodes_) {
            if (!s.empty()) s.push_back(',');
            s.append("127.0.0.1:").append(std::to_string(n.port));
        }
        return s;
    }
    /// One node's address only, "127.0.0.1:port".
    [[nodiscard]] static std::string address(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

    [[nodiscard]] std::vector<std::uint16_t> ports() const {
        std::vector<std::uint16_t> p;
        for (const auto& n : nodes_) p.push_back(n.port);
        return p;
    }

    /// The primary serving `slot`, as a living primary says (CLUSTER
    /// SLOTS); 0 when none answers.
    [[nodiscard]] std::uint16_t owner_port(int slot) const {
        for (const auto& n : nodes_) {
            if (!n.child.running()) continue;
            auto r = redis_ask(n.port, {"CLUSTER", "SLOTS"});
            if (!r || r->type != REDIS_REPLY_ARRAY) continue;
            for (std::size_t i = 0; i < r->elements; ++i) {
                const redisReply* range = r->element[i];
                if (range->element[0]->integer <= slot && slot <= range->element[1]->integer)
                    return static_cast<std::uint16_t>(range->element[2]->element[1]->integer);
            }
        }
        return 0;
    }

    /// The primaries' ports.
    [[nodiscard]] std::vector<std::uint16_t> primaries() const {
        std::vector<std::uint16_t> out;
        for (const auto& n : nodes_)
            if (n.child.running()) {
                auto r = redis_ask(n.port, {"ROLE"});
                if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                    std::string(r->element[0]->str, r->element[0]->len) == "master")
                    out.push_back(n.port);
            }
        return out;
    }

    /// The node's id (CLUSTER MYID).
    [[nodiscard]] static std::string id_of(std::uint16_t port) { return reply_text(redis_ask(port, {"CLUSTER", "MYID"})); }

    /// SIGKILL the node on `port`, as a crash.
    void kill_port(std::uint16_t port) {
        for (auto& n : nodes_)
            if (n.port == port) n.child.stop();
    }

    /// Waits until a living node other than `old_owner` serves `slot` as a
    /// primary (every living node saying so); false after `bound`.
    [[nodiscard]] bool wait_promoted(int slot, std::uint16_t old_owner, std::chrono::milliseconds bound) const {
        const auto end = std::chrono::steady_clock::now() + bound;
        while (std::chrono::steady_clock::now() < end) {
            const auto owner = owner_port(slot);
            if (owner != 0 && owner != old_owner) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds{50});
        }
        return false;
    }

private:
    struct node {
        std::uint16_t port = 0;
        std::uint16_t bus = 0;
        std::string dir;
        child_server child;
    };

    // Every node: cluster_state:ok, 3 slot ranges each with its replica
    // (the replicas known to every node), and every replica's link up.
    void wait_ready(std::chrono::seconds bound) const {
        const auto end = std::chrono::steady_clock::now() + bound;
        std::string last;
        while (std::chrono::steady_clock::now() < end) {
            bool ok = true;
            for (const auto& n : nodes_) {
                const std::string info = reply_text(redis_ask(n.port, {"CLUSTER", "INFO"}));
                if (info.find("cluster_state:ok") == std::string::npos) {
                    ok = false;
                    last = "node " + std::to_string(n.port) + ": " + info.substr(0, 60);
                    break;
                }
                auto slots = redis_ask(n.port, {"CLUSTER", "SLOTS"});
                std::size_t covered = 0;
                bool replicas = slots && slots->type == REDIS_REPLY_ARRAY;
                for (std::size_t i = 0; replicas && i < slots->elements; ++i) {
                    covered += static_cast<std::size_t>(slots->element[i]->element[1]->integer -
                                                        slots->element[i]->element[0]->integer + 1);
                    replicas = slots->element[i]->elements >= 4;
                }
                if (!replicas || covered != 16384) {
                    ok = false;
                    last = "node " + std::to_string(n.port) + ": slots or replicas not known yet";
                    break;
                }
                const std::string repl = redis_text_info(n.port);
                if (repl.find("role:slave") != std::string::npos &&
                    repl.find("master_link_status:up") == std::string::npos) {
                    ok = false;
                    last = "replica " + std::to_string(n.port) + " not synced yet";
                    break;
                }
            }
            if (ok) return;
            std::this_thread::sleep_for(std::chrono::milliseconds{100});
        }
        throw std::runtime_error("the Redis Cluster was not ready within " + std::to_string(bound.count()) +
                                 " s: " + last);
    }

    static std::string redis_text_info(std::uint16_t port) {
        auto r = redis_ask(port, {"INFO", "replication"});
        return r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : std::string{};
    }

    temp_directory dir_;  // declared before the nodes: removed once they have stopped
    node nodes_[nodes];
};

}  // namespace resil_test
