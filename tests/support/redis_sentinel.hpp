// tests/support/redis_sentinel.hpp — a primary, its replica and 3 sentinels
// (quorum 2, down-after-milliseconds and failover-timeout small) of Debian's
// redis-server on free loopback ports, for the Redis limiter's tests. Ready
// once the replica has synced and every sentinel names the primary, knows
// the replica and the 2 other sentinels. The primary can be killed: the
// sentinels then promote the replica.
//
//   resil_test::redis_sentinel_group group;           // ~1-3 s to start
//   options.sentinels = group.sentinels();            // "127.0.0.1:s1,..."
//   options.sentinel_master = group.name();
//   group.kill_primary();
//
// Every process is stopped (and its directory removed) when the object goes.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "fault_server.hpp"
#include "redis_cluster.hpp"  // redis_ask, reply_text

namespace resil_test {

class redis_sentinel_group {
public:
    static constexpr int sentinel_count = 3;

    explicit redis_sentinel_group(int down_after_ms = 1000) : dir_("resil-redis-sentinel") {
        if (::access("/usr/bin/redis-server", X_OK) != 0)
            throw std::runtime_error("redis-server is needed (apt-get install redis-server)");
        start_data(primary_, "primary", {});
        start_data(replica_, "replica", {"--replicaof", "127.0.0.1", std::to_string(primary_.port)});
        for (int i = 0; i < sentinel_count; ++i) start_sentinel(sentinels_[i], i, down_after_ms);
        wait_ready(std::chrono::seconds{60});
    }
    redis_sentinel_group(const redis_sentinel_group&) = delete;
    redis_sentinel_group& operator=(const redis_sentinel_group&) = delete;
    ~redis_sentinel_group() {
        for (auto& s : sentinels_) s.child.stop();
        replica_.child.stop();
        primary_.child.stop();
    }

    [[nodiscard]] static std::string name() { return "resil-primary"; }
    [[nodiscard]] std::string sentinels() const {
        std::string s;
        for (const auto& n : sentinels_) {  // piece by piece: see redis_cluster::seeds()
            if (!s.empty()) s.push_back(',');
            s.append("127.0.0.1:").append(std::to_string(n.port));
        }
        return s;
    }
    [[nodiscard]] std::uint16_t primary_port() const noexcept { return primary_.port; }
    [[nodiscard]] std::uint16_t replica_port() const noexcept { return replica_.port; }

    /// SIGKILL the primary, as a crash.
    void kill_primary() { primary_.child.stop(); }

    /// The primary the first sentinel that answers names; 0 when none does.
    [[nodiscard]] std::uint16_t named_primary() const {
        for (const auto& s : sentinels_) {
            auto r = redis_ask(s.port, {"SENTINEL", "get-master-addr-by-name", name()});
            if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
                return static_cast<std::uint16_t>(std::stoi(std::string(r->element[1]->str, r->element[1]->len)));
        }
        return 0;
    }

private:
    struct process {
        std::uint16_t port = 0;
        std::string dir;
        child_server child;
    };

    void start_data(process& p, const std::string& label, std::vector<std::string> extra) {
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            p.port = refused_port();
            p.dir = dir_.path() + "/" + label;
            std::filesystem::create_directories(p.dir);
            const std::string log = p.dir + "/redis.log";
            std::vector<std::string> args{"/usr/bin/redis-server", "--port", std::to_string(p.port), "--bind",
                                          "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", p.dir,
                                          "--logfile", log, "--daemonize", "no"};
            args.insert(args.end(), extra.begin(), extra.end());
            if (p.child.start(args, p.port, "", [&] { return read_text_file(log); }, error)) return;
        }
        throw std::runtime_error("redis-server (" + label + ") did not start: " + error);
    }

    void start_sentinel(process& p, int i, int down_after_ms) {
        std::string error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            p.port = refused_port();
            p.dir = dir_.path() + "/sentinel" + std::to_string(i);
            std::filesystem::create_directories(p.dir);
            const std::string conf = p.dir + "/sentinel.conf";  // Sentinel rewrites it: writable
            const std::string log = p.dir + "/sentinel.log";
            {
                std::ofstream out(conf);
                out << "port " << p.port << "\nbind 127.0.0.1\ndaemonize no\ndir " << p.dir << "\nlogfile " << log
                    << "\nsentinel monitor " << name() << " 127.0.0.1 " << primary_.port << " 2\n"
                    << "sentinel down-after-milliseconds " << name() << " " << down_after_ms << "\n"
                    << "sentinel failover-timeout " << name() << " 10000\n";
            }
            if (p.child.start({"/usr/bin/redis-server", conf, "--sentinel"}, p.port, "",
                              [&] { return read_text_file(log); }, error))
                return;
        }
        throw std::runtime_error("redis sentinel did not start: " + error);
    }

    void wait_ready(std::chrono::seconds bound) const {
        const auto end = std::chrono::steady_clock::now() + bound;
        std::string last;
        while (std::chrono::steady_clock::now() < end) {
            bool ok = true;
            auto info = redis_ask(replica_.port, {"INFO", "replication"});
            const std::string repl = info && info->type == REDIS_REPLY_STRING ? std::string(info->str, info->len) : "";
            if (repl.find("master_link_status:up") == std::string::npos) {
                ok = false;
                last = "the replica has not synced";
            }
            for (const auto& s : sentinels_) {
                if (!ok) break;
                auto m = redis_ask(s.port, {"SENTINEL", "master", name()});
                std::string fields;
                bool flags_ok = false;
                int others = -1, replicas = -1;
                for (std::size_t i = 0; m && m->type == REDIS_REPLY_ARRAY && i + 1 < m->elements; i += 2) {
                    const std::string k(m->element[i]->str, m->element[i]->len);
                    const std::string v(m->element[i + 1]->str, m->element[i + 1]->len);
                    if (k == "flags") flags_ok = v == "master";
                    if (k == "num-other-sentinels") others = std::stoi(v);
                    if (k == "num-slaves") replicas = std::stoi(v);
                }
                if (!flags_ok || others != sentinel_count - 1 || replicas != 1) {
                    ok = false;
                    last = "sentinel " + std::to_string(s.port) + ": other sentinels " + std::to_string(others) +
                           ", replicas " + std::to_string(replicas);
                }
            }
            if (ok) return;
            std::this_thread::sleep_for(std::chrono::milliseconds{100});
        }
        throw std::runtime_error("the Sentinel group was not ready within " + std::to_string(bound.count()) + " s: " +
                                 last);
    }

    temp_directory dir_;  // declared before the processes: removed once they have stopped
    process primary_;
    process replica_;
    process sentinels_[sentinel_count];
};

}  // namespace resil_test
