// tests/support/dnsmasq_server.hpp — Debian's dnsmasq as a child process on
// 127.0.0.1 and a free port, answering only from a hosts file of the test's
// (zone `test.`, unknown names NXDOMAIN), for the DNS discovery tests.
//
//   resil_test::dnsmasq_server dns{{"10.0.0.1 svc.test", "10.0.0.2 svc.test"}, 1};  // TTL 1 s
//   dns.nameserver();                        // "127.0.0.1:<port>"
//   dns.set_hosts({"10.0.0.3 svc.test"});    // rewrites the file, SIGHUP, waits until it is served
//   dns.stop();                              // the resolver down
#pragma once

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <resolv.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "fault_server.hpp"

namespace resil_test {

class dnsmasq_server {
public:
    static constexpr const char* binary = "/usr/sbin/dnsmasq";

    /// Serves `hosts` ("<ip> <name>" lines) with answers of TTL `ttl_seconds`;
    /// `extra` arguments are appended (e.g. "-W" SRV records). Throws when
    /// dnsmasq is missing or does not start (5 ports tried).
    explicit dnsmasq_server(std::vector<std::string> hosts, unsigned ttl_seconds = 1,
                            std::vector<std::string> extra = {})
        : dir_("resil-dnsmasq"), ttl_(ttl_seconds), extra_(std::move(extra)) {
        if (::access(binary, X_OK) != 0)
            throw std::runtime_error("dnsmasq is not installed: these tests need it (apt-get install dnsmasq-base)");
        // dnsmasq drops its privileges when run as root: the hosts file must
        // stay readable after that, for SIGHUP's re-read.
        ::chmod(dir_.path().c_str(), 0755);
        write_hosts(hosts);
        std::string last_error;
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = refused_port();
            if (start(last_error)) return;
        }
        throw std::runtime_error("dnsmasq did not start: " + last_error);
    }
    dnsmasq_server(const dnsmasq_server&) = delete;
    dnsmasq_server& operator=(const dnsmasq_server&) = delete;
    ~dnsmasq_server() { stop(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    /// "127.0.0.1:<port>", for dns_discovery_options::nameserver.
    [[nodiscard]] std::string nameserver() const { return "127.0.0.1:" + std::to_string(port_); }

    /// Rewrites the hosts file, sends SIGHUP and waits (up to 10 s) until
    /// `probe` (a name) answers with exactly the addresses `hosts` give it.
    void set_hosts(const std::vector<std::string>& hosts, const std::string& probe) {
        write_hosts(hosts);
        ::kill(child_.pid(), SIGHUP);
        std::vector<std::string> want;
        for (const auto& h : hosts)
            if (h.size() > probe.size() && h.compare(h.size() - probe.size(), probe.size(), probe) == 0 &&
                h[h.size() - probe.size() - 1] == ' ')
                want.push_back(h.substr(0, h.find(' ')));
        std::sort(want.begin(), want.end());
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds{10};
        while (std::chrono::steady_clock::now() < give_up) {
            if (addresses(probe) == want) return;
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        throw std::runtime_error("dnsmasq did not serve the new hosts file within 10 s");
    }

    /// The A records dnsmasq serves for `name` now, sorted (empty on NXDOMAIN or no answer).
    [[nodiscard]] std::vector<std::string> addresses(const std::string& name) const {
        struct __res_state st{};
        std::vector<std::string> out;
        if (::res_ninit(&st) != 0) return out;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port_);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        st.nsaddr_list[0] = a;
        st.nscount = 1;
        st.retrans = 1;
        st.retry = 1;
        unsigned char buf[4096];
        const int n = ::res_nquery(&st, name.c_str(), ns_c_in, ns_t_a, buf, sizeof buf);
        ns_msg msg{};
        if (n > 0 && ::ns_initparse(buf, n, &msg) == 0) {
            for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
                ns_rr rr{};
                if (::ns_parserr(&msg, ns_s_an, i, &rr) != 0 || ns_rr_type(rr) != ns_t_a || ns_rr_rdlen(rr) != 4) continue;
                char text[INET_ADDRSTRLEN] = {};
                ::inet_ntop(AF_INET, ns_rr_rdata(rr), text, sizeof text);
                out.emplace_back(text);
            }
        }
        ::res_nclose(&st);
        std::sort(out.begin(), out.end());
        return out;
    }

    /// Stops dnsmasq (the resolver down): queries then time out or are refused.
    void stop() noexcept { child_.stop(std::chrono::seconds{2}); }

private:
    void write_hosts(const std::vector<std::string>& hosts) {
        // Written aside and renamed: dnsmasq never reads half a file.
        const auto next = dir_.file("hosts.next");
        {
            std::ofstream out(next);
            for (const auto& h : hosts) out << h << '\n';
        }
        ::chmod(next.c_str(), 0644);
        std::rename(next.c_str(), dir_.file("hosts").c_str());
    }

    bool start(std::string& error) {
        std::vector<std::string> args{binary,
                                      "-C", "/dev/null",      // no /etc/dnsmasq.conf
                                      "-R", "-h",             // no resolv.conf, no /etc/hosts
                                      "-H", dir_.file("hosts"),
                                      "--local=/test/",       // unknown names: NXDOMAIN
                                      "-T", std::to_string(ttl_),
                                      "-k",                   // in the foreground, a child of ours
                                      "-p", std::to_string(port_),
                                      "--listen-address=127.0.0.1", "-z",
                                      "--log-facility=" + dir_.file("log"),
                                      "--pid-file="};
        for (const auto& e : extra_) args.push_back(e);
        const auto log = dir_.file("log");
        return child_.start(std::move(args), port_, dir_.file("stderr"),
                            [&] { return read_text_file(log) + read_text_file(dir_.file("stderr")); }, error);
    }

    temp_directory dir_;
    unsigned ttl_;
    std::vector<std::string> extra_;
    std::uint16_t port_ = 0;
    child_server child_;
};

}  // namespace resil_test
